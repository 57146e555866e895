/*
 * The store's Idempotency-Key replay ledger (/v1): an entry per org,
 * operation and key, pending while its request runs (with the owner that
 * runs it and until when), then done with the answer to replay
 * (store/lua/idem_*.lua).
 *
 *   <p>:{<org>}:idem:<op>:<key hash>  hash  state, payload, rid, owner,
 *                                           until, status, body
 *
 * Never logs values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis.h>

#include "../common/buf.h"
#include "../common/util.h"
#include "store_int.h"

static void key_idem(const struct store *st, const char *org, const char *op, const char *khash,
		     char *out, size_t cap)
{
	snprintf(out, cap, "%s:{%s}:idem:%s:%s", store_prefix(st), org, op, khash);
}

/* A reply element's string into out; "" when it is not a string. */
static void reply_str(const redisReply *r, char *out, size_t cap)
{
	str_copy(out, cap, r->type == REDIS_REPLY_STRING ? r->str : "");
}

int store_idem_begin(struct store *st, const char *org, const char *op, const char *khash,
		     const char *payload, int64_t lease_s, const struct store_idem_owner *mine,
		     struct store_idem_owner *seen, int *status, struct buf *body, struct sp_err *e)
{
	char k[512], lease[32], until[32];
	const char *argv[] = { "1", k, payload, lease, mine->rid, mine->owner, until };
	redisReply *r;
	int rc = -1;

	key_idem(st, org, op, khash, k, sizeof(k));
	snprintf(lease, sizeof(lease), "%lld", (long long)lease_s);
	snprintf(until, sizeof(until), "%lld", (long long)mine->until_ms);
	memset(seen, 0, sizeof(*seen));
	/* not sent twice: a second "new" is "pending" */
	r = store_eval(st, STORE_ONCE, &store_lua_idem_begin, 7, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
	    r->element[0]->type == REDIS_REPLY_STRING) {
		const char *s = r->element[0]->str;
		if (strcmp(s, "new") == 0)
			rc = STORE_IDEM_NEW;
		else if (strcmp(s, "mismatch") == 0)
			rc = STORE_IDEM_MISMATCH;
		else if (strcmp(s, "pending") == 0) {
			char u[32];
			long long n = 0;
			rc = STORE_IDEM_PENDING;
			if (r->elements == 4) {
				reply_str(r->element[1], seen->rid, sizeof(seen->rid));
				reply_str(r->element[2], seen->owner, sizeof(seen->owner));
				reply_str(r->element[3], u, sizeof(u));
				if (parse_ll(u, 0, 1LL << 62, &n) == 0)
					seen->until_ms = n;
			}
		} else if (strcmp(s, "done") == 0 && r->elements == 3 &&
			   r->element[1]->type == REDIS_REPLY_STRING &&
			   r->element[2]->type == REDIS_REPLY_STRING) {
			long long n;
			if (parse_ll(r->element[1]->str, 100, 599, &n) == 0 &&
			    buf_append(body, r->element[2]->str, r->element[2]->len) == 0) {
				*status = (int)n;
				rc = STORE_IDEM_DONE;
			}
		}
	}
	freeReplyObject(r);
	if (rc < 0)
		return sp_err_set(e, SP_INTERNAL, "bad idempotency entry");
	return rc;
}

int store_idem_claim(struct store *st, const char *org, const char *op, const char *khash,
		     const char *seen_owner, const struct store_idem_owner *mine, struct sp_err *e)
{
	char k[512], until[32];
	const char *argv[] = { "1", k, seen_owner, mine->owner, until };
	redisReply *r;
	int rc;

	key_idem(st, org, op, khash, k, sizeof(k));
	snprintf(until, sizeof(until), "%lld", (long long)mine->until_ms);
	r = store_eval(st, STORE_ONCE, &store_lua_idem_claim, 5, argv, NULL, e);
	if (!r)
		return -1;
	rc = r->type == REDIS_REPLY_INTEGER && r->integer == 1 ? 0 : 1;
	freeReplyObject(r);
	return rc;
}

int store_idem_finish(struct store *st, const char *org, const char *op, const char *khash,
		      int status, const char *body, size_t len, int64_t ttl_s, struct sp_err *e)
{
	char k[512], ttl[32], sts[16];
	const char *argv[] = { "1", k, sts, body, ttl };
	size_t lens[5];
	redisReply *r;

	key_idem(st, org, op, khash, k, sizeof(k));
	snprintf(ttl, sizeof(ttl), "%lld", (long long)ttl_s);
	snprintf(sts, sizeof(sts), "%d", status);
	for (int i = 0; i < 5; i++)
		lens[i] = i == 3 ? len : strlen(argv[i]);
	r = store_eval(st, STORE_ONCE, &store_lua_idem_finish, 5, argv, lens, e);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

int store_idem_abort(struct store *st, const char *org, const char *op, const char *khash,
		     const char *owner, struct sp_err *e)
{
	char k[512];
	const char *argv[] = { "1", k, owner };
	redisReply *r;

	key_idem(st, org, op, khash, k, sizeof(k));
	r = store_eval(st, STORE_ONCE, &store_lua_idem_abort, 3, argv, NULL, e);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}
