/*
 * The /v1 managed volumes' records (sandbox/volume.c): one hash per
 * volume and an index per organization, both under the org's hash tag,
 * and the holder field that makes an attachment exclusive. Every change
 * of a holder is one Lua script, so a claim of several volumes is all or
 * nothing across every worker and host that shares the Redis.
 *
 *   <p>:{<org>}:vol:<id>  hash  volumeId, displayName, organizationId,
 *                               serverId, dockerName, createdAt, holder
 *   <p>:{<org>}:vols      zset  the org's volume ids, scored by createdAt
 *
 * holder: "" free, a sandbox id (attached), "!del:<ms>" (a delete runs).
 * The programs are store/lua/volume_*.lua.
 * Never logs values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis.h>

#include "../common/util.h"
#include "store_int.h"

static void key_vol(const struct store *st, const char *org, const char *id, char *out, size_t cap)
{
	snprintf(out, cap, "%s:{%s}:vol:%s", store_prefix(st), org, id);
}

static void key_vols(const struct store *st, const char *org, char *out, size_t cap)
{
	snprintf(out, cap, "%s:{%s}:vols", store_prefix(st), org);
}

int store_volume_put(struct store *st, const char *org, const char *id, const char *const *kv,
		     int nkv, int64_t score, int max, struct sp_err *e)
{
	char k1[256], k2[256], sc[32], mx[16];
	const char *argv[6 + STORE_MAX_FIELDS * 2];
	redisReply *r;
	int argc = 0, rc;

	if (nkv > STORE_MAX_FIELDS * 2)
		return sp_err_set(e, SP_INTERNAL, "a volume record over %d fields",
				  STORE_MAX_FIELDS);
	key_vol(st, org, id, k1, sizeof(k1));
	key_vols(st, org, k2, sizeof(k2));
	snprintf(sc, sizeof(sc), "%lld", (long long)score);
	snprintf(mx, sizeof(mx), "%d", max);
	argv[argc++] = "2";
	argv[argc++] = k1;
	argv[argc++] = k2;
	argv[argc++] = sc;
	argv[argc++] = id;
	argv[argc++] = mx;
	for (int i = 0; i < nkv; i++)
		argv[argc++] = kv[i];
	/* a second run after a lost answer reads "existed": the caller
	 * re-reads the record either way */
	r = store_eval(st, STORE_IDEM, &store_lua_volume_put, argc, argv, NULL, e);
	if (!r)
		return -1;
	rc = r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
	freeReplyObject(r);
	if (rc < 0)
		return sp_err_set(e, SP_INTERNAL, "bad answer to a volume put");
	return rc;
}

int store_volume_get(struct store *st, const char *org, const char *id, struct store_rec *out,
		     struct sp_err *e)
{
	char k1[256];

	key_vol(st, org, id, k1, sizeof(k1));
	return store_hgetall(st, k1, out, SP_NOT_FOUND, "Volume not found", e);
}

/* Oldest first. */
int store_volume_list(struct store *st, const char *org, struct store_rec *recs, int max,
		      struct sp_err *e)
{
	char k2[256], pfx[256];

	key_vols(st, org, k2, sizeof(k2));
	snprintf(pfx, sizeof(pfx), "%s:{%s}:vol:", store_prefix(st), org);
	return store_index_records(st, k2, pfx, 0, recs, max, e);
}

int store_volume_claim(struct store *st, const char *org, const char *sid, const char *const *ids,
		       const char *const *expect, int n, int *bad, char *holder, size_t cap,
		       struct sp_err *e)
{
	char keys[STORE_VOLUME_CLAIM_MAX][256], nk[16];
	const char *argv[2 + 2 * STORE_VOLUME_CLAIM_MAX];
	redisReply *r;
	int argc = 0, rc = -1;

	*bad = -1;
	holder[0] = '\0';
	if (n < 1 || n > STORE_VOLUME_CLAIM_MAX)
		return sp_err_set(e, SP_INTERNAL, "a claim of %d volumes", n);
	snprintf(nk, sizeof(nk), "%d", n);
	argv[argc++] = nk;
	for (int i = 0; i < n; i++) {
		key_vol(st, org, ids[i], keys[i], sizeof(keys[i]));
		argv[argc++] = keys[i];
	}
	argv[argc++] = sid;
	for (int i = 0; i < n; i++)
		argv[argc++] = expect[i];
	/* applied twice, it answers the same (the holder is sid by then) */
	r = store_eval(st, STORE_IDEM, &store_lua_volume_claim, argc, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
	    r->element[0]->type == REDIS_REPLY_INTEGER) {
		rc = (int)r->element[0]->integer;
		if (rc > 0 && r->elements >= 2 && r->element[1]->type == REDIS_REPLY_INTEGER)
			*bad = (int)r->element[1]->integer - 1;
		if (rc == 2 && r->elements >= 3 && r->element[2]->type == REDIS_REPLY_STRING)
			snprintf(holder, cap, "%.*s", (int)r->element[2]->len, r->element[2]->str);
	}
	freeReplyObject(r);
	if (rc < 0 || (rc > 0 && (*bad < 0 || *bad >= n)))
		return sp_err_set(e, SP_INTERNAL, "bad answer to a volume claim");
	return rc;
}

int store_volume_release(struct store *st, const char *org, const char *sid, const char *const *ids,
			 int n, struct sp_err *e)
{
	char keys[STORE_VOLUME_CLAIM_MAX][256], nk[16];
	const char *argv[2 + STORE_VOLUME_CLAIM_MAX];
	redisReply *r;
	int argc = 0;

	if (n < 1)
		return 0;
	if (n > STORE_VOLUME_CLAIM_MAX)
		return sp_err_set(e, SP_INTERNAL, "a release of %d volumes", n);
	snprintf(nk, sizeof(nk), "%d", n);
	argv[argc++] = nk;
	for (int i = 0; i < n; i++) {
		key_vol(st, org, ids[i], keys[i], sizeof(keys[i]));
		argv[argc++] = keys[i];
	}
	argv[argc++] = sid;
	r = store_eval(st, STORE_IDEM, &store_lua_volume_release, argc, argv, NULL, e);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

int store_volume_holder_cas(struct store *st, const char *org, const char *id, const char *expect,
			    const char *value, char *seen, size_t cap, struct sp_err *e)
{
	char k1[256];
	const char *argv[] = { "1", k1, expect, value };
	redisReply *r;
	int rc = -1;

	seen[0] = '\0';
	key_vol(st, org, id, k1, sizeof(k1));
	r = store_eval(st, STORE_ONCE, &store_lua_volume_holder_cas, 4, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
	    r->element[0]->type == REDIS_REPLY_INTEGER) {
		rc = (int)r->element[0]->integer;
		if (rc == 1 && r->elements >= 2 && r->element[1]->type == REDIS_REPLY_STRING)
			snprintf(seen, cap, "%.*s", (int)r->element[1]->len, r->element[1]->str);
	}
	freeReplyObject(r);
	if (rc == 2)
		return sp_err_set(e, SP_NOT_FOUND, "Volume not found");
	if (rc < 0)
		return sp_err_set(e, SP_INTERNAL, "bad answer to a volume holder change");
	return rc;
}

int store_volume_del(struct store *st, const char *org, const char *id, const char *holder,
		     struct sp_err *e)
{
	char k1[256], k2[256];
	const char *argv[] = { "2", k1, k2, holder, id };
	redisReply *r;
	int rc;

	key_vol(st, org, id, k1, sizeof(k1));
	key_vols(st, org, k2, sizeof(k2));
	r = store_eval(st, STORE_IDEM, &store_lua_volume_del, 5, argv, NULL, e);
	if (!r)
		return -1;
	rc = r->type == REDIS_REPLY_INTEGER ? (int)r->integer : 0;
	freeReplyObject(r);
	return rc;
}
