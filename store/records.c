/*
 * The store's records: a sandbox's record (a hash, with the sandbox's
 * TTL) and its update rules (store/lua/sandbox_*.lua), the small string
 * records beside it, and the org-scoped JSON records (snapshots).
 *
 *   <p>:{<org>}:sb:<id>   hash    a sandbox's record (fields as the core
 *                                 writes them), EX its life
 *   <p>:owner:<id>        string  the org of a sandbox id, EX its life
 *   <p>:pv:<uid>          string  "<org> <sandbox>" of a published port
 *   <p>:fa:<cid>          string  a container's fast-path address
 *   <p>:{<org>}:<kind>    hash    id -> JSON (snapshots: "snaps"), no TTL
 *
 * The index of an org's sandboxes is indexes.c's. Never logs values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis.h>

#include "../common/buf.h"
#include "../common/util.h"
#include "store_int.h"

static void key_sb(const struct store *st, const char *org, const char *id, char *out, size_t cap)
{
	snprintf(out, cap, "%s:{%s}:sb:%s", store_prefix(st), org, id);
}

int store_sandbox_put(struct store *st, const char *org, const char *id, const char *const *kv,
		      int nkv, int64_t ttl_s, int64_t score, struct sp_err *e)
{
	char k1[256], k2[256], ttl[32], sc[32];
	const char *argv[6 + 2 * STORE_MAX_FIELDS];
	redisReply *r;
	int argc = 0;

	if (nkv > 2 * STORE_MAX_FIELDS || nkv % 2)
		return sp_err_set(e, SP_INTERNAL, "bad record: %d values, at most %d fields", nkv,
				  STORE_MAX_FIELDS);
	key_sb(st, org, id, k1, sizeof(k1));
	store_key_index(st, org, k2, sizeof(k2));
	snprintf(ttl, sizeof(ttl), "%lld", (long long)(ttl_s > 0 ? ttl_s : 1));
	snprintf(sc, sizeof(sc), "%lld", (long long)score);
	argv[argc++] = "2";
	argv[argc++] = k1;
	argv[argc++] = k2;
	argv[argc++] = ttl;
	argv[argc++] = sc;
	argv[argc++] = id;
	for (int i = 0; i < nkv; i++)
		argv[argc++] = kv[i];
	/* same record twice = once */
	r = store_eval(st, STORE_IDEM, &store_lua_sandbox_put, argc, argv, NULL, e);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

/* Runs a record update script (1 applied, 0 not, -1 no record) once:
 * run twice, a compare-and-set that applied answers "changed". 0
 * applied, 1 not (the expectation did not hold), -1 SP_NOT_FOUND or the
 * store's error. */
static int update_call(struct store *st, const struct store_lua *prog, int argc, const char **argv,
		       struct sp_err *e)
{
	redisReply *r = store_eval(st, STORE_ONCE, prog, argc, argv, NULL, e);
	int rc;

	if (!r)
		return -1;
	rc = r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
	freeReplyObject(r);
	if (rc == -1)
		return sp_err_set(e, SP_NOT_FOUND, "Sandbox not found");
	return rc == 1 ? 0 : 1;
}

int store_sandbox_update(struct store *st, const char *org, const char *id,
			 const char *expect_status, const char *const *kv, int nkv, int64_t ttl_s,
			 struct sp_err *e)
{
	char k1[256], ttl[32];
	const char *argv[4 + 2 * STORE_MAX_FIELDS];
	int argc = 0;

	if (nkv > 2 * STORE_MAX_FIELDS || nkv % 2)
		return sp_err_set(e, SP_INTERNAL, "bad record: %d values, at most %d fields", nkv,
				  STORE_MAX_FIELDS);
	key_sb(st, org, id, k1, sizeof(k1));
	snprintf(ttl, sizeof(ttl), "%lld", (long long)(ttl_s > 0 ? ttl_s : 0));
	argv[argc++] = "1";
	argv[argc++] = k1;
	argv[argc++] = expect_status ? expect_status : "";
	argv[argc++] = ttl;
	for (int i = 0; i < nkv; i++)
		argv[argc++] = kv[i];
	return update_call(st, &store_lua_sandbox_update, argc, argv, e);
}

int store_sandbox_update_if(struct store *st, const char *org, const char *id,
			    const char *const *expect, int nexpect, const char *const *kv, int nkv,
			    struct sp_err *e)
{
	char k1[256], n[16];
	const char *argv[3 + 4 * STORE_MAX_FIELDS];
	int argc = 0;

	if (nkv > 2 * STORE_MAX_FIELDS || nkv % 2 || nexpect > 2 * STORE_MAX_FIELDS || nexpect % 2)
		return sp_err_set(e, SP_INTERNAL,
				  "bad record: %d values, %d expected, at most %d "
				  "fields",
				  nkv, nexpect, STORE_MAX_FIELDS);
	key_sb(st, org, id, k1, sizeof(k1));
	snprintf(n, sizeof(n), "%d", nexpect / 2);
	argv[argc++] = "1";
	argv[argc++] = k1;
	argv[argc++] = n;
	for (int i = 0; i < nexpect; i++)
		argv[argc++] = expect[i];
	for (int i = 0; i < nkv; i++)
		argv[argc++] = kv[i];
	return update_call(st, &store_lua_sandbox_update_if, argc, argv, e);
}

int store_sandbox_get(struct store *st, const char *org, const char *id, struct store_rec *out,
		      struct sp_err *e)
{
	char k1[256];

	key_sb(st, org, id, k1, sizeof(k1));
	return store_hgetall(st, k1, out, SP_NOT_FOUND, "Sandbox not found", e);
}

int store_sandbox_del(struct store *st, const char *org, const char *id, struct sp_err *e)
{
	char k1[256], k2[256];
	const char *argv[] = { "2", k1, k2, id };
	redisReply *r;

	key_sb(st, org, id, k1, sizeof(k1));
	store_key_index(st, org, k2, sizeof(k2));
	r = store_eval(st, STORE_IDEM, &store_lua_sandbox_del, 4, argv, NULL, e);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

int store_sandbox_field(struct store *st, const char *org, const char *id, const char *field,
			struct buf *out, struct sp_err *e)
{
	char k1[256];
	const char *argv[] = { "HGET", k1, field };
	redisReply *r;
	int rc = 0;

	key_sb(st, org, id, k1, sizeof(k1));
	r = store_cmd_kind(st, STORE_ONCE, 3, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_STRING && buf_append(out, r->str, r->len) < 0)
		rc = sp_err_set(e, SP_INTERNAL, "record field too large");
	freeReplyObject(r);
	return rc;
}

/* SET <prefix>:<space>:<id> value EX ttl_s (at least 1 s). */
static int string_set(struct store *st, const char *space, const char *id, const char *value,
		      int64_t ttl_s, struct sp_err *e)
{
	char k[256], ttl[32];
	const char *argv[] = { "SET", k, value, "EX", ttl };

	snprintf(k, sizeof(k), "%s:%s:%s", store_prefix(st), space, id);
	snprintf(ttl, sizeof(ttl), "%lld", (long long)(ttl_s > 0 ? ttl_s : 1));
	return store_simple(st, STORE_IDEM, 5, argv, NULL, e);
}

/* GET <prefix>:<space>:<id> into out: 1, 0 when absent (or longer than
 * cap), -1 with e set. */
static int string_get(struct store *st, const char *space, const char *id, char *out, size_t cap,
		      struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "GET", k };
	redisReply *r;
	int rc = 0;

	snprintf(k, sizeof(k), "%s:%s:%s", store_prefix(st), space, id);
	out[0] = '\0';
	r = store_cmd_kind(st, STORE_READ, 2, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_STRING && r->len < cap) {
		memcpy(out, r->str, r->len);
		out[r->len] = '\0';
		rc = 1;
	}
	freeReplyObject(r);
	return rc;
}

int store_owner_set(struct store *st, const char *id, const char *org, int64_t ttl_s,
		    struct sp_err *e)
{
	return string_set(st, "owner", id, org, ttl_s, e);
}

int store_owner_get(struct store *st, const char *id, char *org, size_t cap, struct sp_err *e)
{
	return string_get(st, "owner", id, org, cap, e);
}

/* The preview index: <p>:pv:<uid> -> "<org> <sandbox>" of a published
 * port (sandbox/ports.c), with the record's TTL. */
int store_preview_set(struct store *st, const char *uid, const char *value, int64_t ttl_s,
		      struct sp_err *e)
{
	return string_set(st, "pv", uid, value, ttl_s, e);
}

int store_preview_get(struct store *st, const char *uid, char *out, size_t cap, struct sp_err *e)
{
	return string_get(st, "pv", uid, out, cap, e);
}

int store_fast_addr_set(struct store *st, const char *cid, const char *ip, int64_t ttl_s,
			struct sp_err *e)
{
	return string_set(st, "fa", cid, ip, ttl_s, e);
}

int store_fast_addr_get(struct store *st, const char *cid, char *out, size_t cap, struct sp_err *e)
{
	return string_get(st, "fa", cid, out, cap, e);
}

int store_preview_del(struct store *st, const char *uid, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "DEL", k };

	snprintf(k, sizeof(k), "%s:pv:%s", store_prefix(st), uid);
	return store_simple(st, STORE_IDEM, 2, argv, NULL, e);
}

/* --- org-scoped JSON records (snapshots): <p>:{<org>}:<kind>, a hash of
 * id -> JSON text; no TTL (they last until deleted) --------------------- */

static void key_objs(const struct store *st, const char *org, const char *kind, char *out,
		     size_t cap)
{
	snprintf(out, cap, "%s:{%s}:%s", store_prefix(st), org, kind);
}

int store_obj_put(struct store *st, const char *org, const char *kind, const char *id,
		  const char *json, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HSET", k, id, json };

	key_objs(st, org, kind, k, sizeof(k));
	return store_simple(st, STORE_ONCE, 4, argv, NULL, e);
}

int store_obj_cas(struct store *st, const char *org, const char *kind, const char *id,
		  const char *expect, const char *json, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "1", k, id, expect, json ? json : "" };
	redisReply *r;
	int rc;

	key_objs(st, org, kind, k, sizeof(k));
	r = store_eval(st, STORE_ONCE, &store_lua_obj_cas, 5, argv, NULL, e);
	if (!r)
		return -1;
	rc = r->type == REDIS_REPLY_INTEGER && r->integer == 0 ? 0 : 1;
	freeReplyObject(r);
	return rc;
}

int store_obj_get(struct store *st, const char *org, const char *kind, const char *id, char **json,
		  struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HGET", k, id };
	redisReply *r;

	key_objs(st, org, kind, k, sizeof(k));
	*json = NULL;
	r = store_cmd_kind(st, STORE_READ, 3, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_STRING)
		*json = strndup(r->str, r->len);
	freeReplyObject(r);
	if (!*json)
		return sp_err_set(e, SP_NOT_FOUND, "Not found");
	return 0;
}

int store_obj_list(struct store *st, const char *org, const char *kind, struct store_rec *out,
		   struct sp_err *e)
{
	char k[256];

	key_objs(st, org, kind, k, sizeof(k));
	return store_hgetall(st, k, out, SP_OK, NULL, e);
}
