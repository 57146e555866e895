/*
 * The dashboard's sign-in sessions (handlers/session.c): one string per
 * session, keyed by the keyed hash of the session token (never the token),
 * holding the keyed hash of the API key it was made with and its CSRF
 * token, with the session's TTL. Revoking the key leaves the record, but
 * /_auth finds no key behind it then and drops it.
 *
 *   <p>:sess:<token hash>  string  "<key hash> <csrf token>", EX ttl
 *
 * Never logs values.
 */
#include <stdio.h>
#include <string.h>

#include <hiredis.h>

#include "../common/util.h"
#include "store_int.h"

static void key_sess(const struct store *st, const char *hash, char *out, size_t cap)
{
	snprintf(out, cap, "%s:sess:%s", store_prefix(st), hash);
}

int store_session_put(struct store *st, const char *hash, const char *key_hash, const char *csrf,
		      int64_t ttl_s, struct sp_err *e)
{
	char k[256], v[256], ttl[32];
	const char *argv[] = { "SET", k, v, "EX", ttl };
	redisReply *r;
	int n = snprintf(v, sizeof(v), "%s %s", key_hash, csrf);

	if (n < 0 || (size_t)n >= sizeof(v) || strchr(key_hash, ' '))
		return sp_err_set(e, SP_INTERNAL, "session value over %zu bytes", sizeof(v));
	key_sess(st, hash, k, sizeof(k));
	snprintf(ttl, sizeof(ttl), "%lld", (long long)(ttl_s > 0 ? ttl_s : 1));
	r = store_cmd_kind(st, STORE_IDEM, 5, argv, NULL, e);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

int store_session_get(struct store *st, const char *hash, char *key_hash, size_t kcap, char *csrf,
		      size_t ccap, int64_t *ttl_s, struct sp_err *e)
{
	char k[256];
	const char *get[] = { "GET", k }, *ttl[] = { "TTL", k };
	redisReply *r;
	const char *sp;
	int rc = 0;

	key_sess(st, hash, k, sizeof(k));
	key_hash[0] = csrf[0] = '\0';
	r = store_cmd_kind(st, STORE_READ, 2, get, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_STRING && (sp = memchr(r->str, ' ', r->len)) != NULL &&
	    (size_t)(sp - r->str) < kcap && r->len - (size_t)(sp - r->str) - 1 < ccap) {
		memcpy(key_hash, r->str, (size_t)(sp - r->str));
		key_hash[sp - r->str] = '\0';
		memcpy(csrf, sp + 1, r->len - (size_t)(sp - r->str) - 1);
		csrf[r->len - (size_t)(sp - r->str) - 1] = '\0';
		rc = 1;
	}
	freeReplyObject(r);
	if (rc != 1 || !ttl_s)
		return rc;
	r = store_cmd_kind(st, STORE_READ, 2, ttl, NULL, e);
	if (!r)
		return -1;
	*ttl_s = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
	freeReplyObject(r);
	return 1;
}

int store_session_del(struct store *st, const char *hash, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "DEL", k };
	redisReply *r;

	key_sess(st, hash, k, sizeof(k));
	r = store_cmd_kind(st, STORE_IDEM, 2, argv, NULL, e);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}
