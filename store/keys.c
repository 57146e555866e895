/*
 * The store's API keys, organizations, roles and per-key rate limits.
 *
 *   <p>:key:<hash>       hash    org, role, keyId, createdAt (the key by its
 *                                keyed hash: what /_auth reads)
 *   <p>:keyid:<id>       hash    the same and its hash (the key by id)
 *   <p>:orgs             set     every organization
 *   <p>:{<org>}:keys     set     the org's key ids
 *   <p>:{<org>}:roles    hash    role name -> permissions
 *   <p>:rate:{<key id>}  string  the key's theoretical arrival time (GCRA)
 *
 * A key's hash never leaves the store. Never logs values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis.h>

#include "../common/util.h"
#include "store_int.h"

int store_rate_take(struct store *st, const char *key_id, int n, int per_min, int burst,
		    int64_t *retry_ms, struct sp_err *e)
{
	char k[256], now[32], iv[32], tau[32], cnt[16];
	const char *argv[] = { "1", k, now, iv, tau, cnt };
	redisReply *r;
	int rc = -1;

	*retry_ms = 0;
	if (per_min <= 0)
		return 1;
	snprintf(k, sizeof(k), "%s:rate:{%s}", store_prefix(st), key_id);
	snprintf(now, sizeof(now), "%lld", (long long)now_ms());
	snprintf(iv, sizeof(iv), "%.3f", 60000.0 / per_min);
	snprintf(tau, sizeof(tau), "%.3f", 60000.0 / per_min * burst);
	snprintf(cnt, sizeof(cnt), "%d", n);
	/* not sent twice: it counts */
	r = store_eval(st, STORE_ONCE, &store_lua_rate_take, 6, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    r->element[0]->type == REDIS_REPLY_INTEGER &&
	    r->element[1]->type == REDIS_REPLY_INTEGER) {
		rc = r->element[0]->integer == 1;
		*retry_ms = r->element[1]->integer;
	} else {
		sp_err_set(e, SP_INTERNAL, "bad rate answer");
	}
	freeReplyObject(r);
	return rc;
}

int store_key_put(struct store *st, const char *hash, const char *org, const char *role,
		  const char *key_id, struct sp_err *e)
{
	char k1[256], k2[256], k3[256], k4[256], now[32];
	const char *argv[] = { "4", k1, k2, k3, k4, org, role, key_id, now, hash };
	redisReply *r;

	snprintf(k1, sizeof(k1), "%s:key:%s", store_prefix(st), hash);
	snprintf(k2, sizeof(k2), "%s:keyid:%s", store_prefix(st), key_id);
	snprintf(k3, sizeof(k3), "%s:orgs", store_prefix(st));
	snprintf(k4, sizeof(k4), "%s:{%s}:keys", store_prefix(st), org);
	snprintf(now, sizeof(now), "%lld", (long long)now_ms());
	/* createdAt is fixed above */
	r = store_eval(st, STORE_IDEM, &store_lua_key_put, 10, argv, NULL, e);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

int store_key_get(struct store *st, const char *hash, struct store_rec *out, struct sp_err *e)
{
	char k1[256];

	snprintf(k1, sizeof(k1), "%s:key:%s", store_prefix(st), hash);
	return store_hgetall(st, k1, out, SP_UNAUTHORIZED, "Invalid API key", e);
}

int store_key_revoke(struct store *st, const char *key_id, struct sp_err *e)
{
	char k1[256], pfx[128], pfx2[128];
	const char *argv[] = { "1", k1, pfx, pfx2, key_id };
	redisReply *r;
	long long n;

	snprintf(k1, sizeof(k1), "%s:keyid:%s", store_prefix(st), key_id);
	snprintf(pfx, sizeof(pfx), "%s:key:", store_prefix(st));
	snprintf(pfx2, sizeof(pfx2), "%s:", store_prefix(st));
	/* ONCE: run twice, a revocation that applied answers "no such key" */
	r = store_eval(st, STORE_ONCE, &store_lua_key_revoke, 5, argv, NULL, e);
	if (!r)
		return -1;
	n = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
	freeReplyObject(r);
	if (n == 0)
		return sp_err_set(e, SP_NOT_FOUND, "No key with id %s", key_id);
	return 0;
}

int store_key_list(struct store *st, const char *org, struct store_rec *recs, int max,
		   struct sp_err *e)
{
	char k1[256], pfx[128];
	const char *argv[] = { "1", k1, pfx };
	redisReply *r;
	int n = 0;

	snprintf(k1, sizeof(k1), "%s:{%s}:keys", store_prefix(st), org);
	snprintf(pfx, sizeof(pfx), "%s:keyid:", store_prefix(st));
	r = store_eval(st, STORE_READ, &store_lua_key_list, 3, argv, NULL, e);
	if (!r)
		return -1;
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements && n < max; i++) {
		if (store_rec_from_reply(r->element[i], &recs[n]) == 0 && recs[n].n > 0) {
			/* the hash never leaves the store */
			for (int k = 0; k < recs[n].n; k++)
				if (strcmp(recs[n].name[k], "hash") == 0)
					recs[n].value[k][0] = '\0';
			n++;
		}
	}
	freeReplyObject(r);
	return n;
}

int store_org_add(struct store *st, const char *org, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "SADD", k, org };
	redisReply *r;

	snprintf(k, sizeof(k), "%s:orgs", store_prefix(st));
	r = store_cmd_kind(st, STORE_IDEM, 3, argv, NULL, e);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

int store_org_exists(struct store *st, const char *org, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "SISMEMBER", k, org };
	redisReply *r;
	int n;

	snprintf(k, sizeof(k), "%s:orgs", store_prefix(st));
	r = store_cmd_kind(st, STORE_READ, 3, argv, NULL, e);
	if (!r)
		return -1;
	n = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
	freeReplyObject(r);
	return n;
}

int store_org_list(struct store *st, char ***names, int *n, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "SMEMBERS", k };
	redisReply *r;

	snprintf(k, sizeof(k), "%s:orgs", store_prefix(st));
	*names = NULL;
	*n = 0;
	r = store_cmd_kind(st, STORE_READ, 2, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_ARRAY && r->elements) {
		*names = calloc(r->elements, sizeof(char *));
		for (size_t i = 0; *names && i < r->elements; i++)
			if (r->element[i]->type == REDIS_REPLY_STRING)
				(*names)[(*n)++] = strndup(r->element[i]->str, r->element[i]->len);
	}
	freeReplyObject(r);
	return 0;
}

int store_role_put(struct store *st, const char *org, const char *name, const char *perms,
		   struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HSET", k, name, perms };

	snprintf(k, sizeof(k), "%s:{%s}:roles", store_prefix(st), org);
	return store_simple(st, STORE_IDEM, 4, argv, NULL, e);
}

int store_role_get(struct store *st, const char *org, const char *name, char **perms,
		   struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HGET", k, name };
	redisReply *r;

	snprintf(k, sizeof(k), "%s:{%s}:roles", store_prefix(st), org);
	*perms = NULL;
	r = store_cmd_kind(st, STORE_READ, 3, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_STRING)
		*perms = strndup(r->str, r->len);
	freeReplyObject(r);
	if (!*perms)
		return sp_err_set(e, SP_NOT_FOUND, "No role %s", name);
	return 0;
}

int store_role_del(struct store *st, const char *org, const char *name, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HDEL", k, name };
	long long n = 0;

	snprintf(k, sizeof(k), "%s:{%s}:roles", store_prefix(st), org);
	/* ONCE: run twice, a delete that applied answers "no such role" */
	if (store_simple(st, STORE_ONCE, 3, argv, &n, e) < 0)
		return -1;
	return n ? 0 : sp_err_set(e, SP_NOT_FOUND, "No role %s in %s", name, org);
}

int store_role_list(struct store *st, const char *org, struct store_rec *out, struct sp_err *e)
{
	char k[256];

	snprintf(k, sizeof(k), "%s:{%s}:roles", store_prefix(st), org);
	return store_hgetall(st, k, out, SP_OK, NULL, e);
}
