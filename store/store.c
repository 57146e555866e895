/*
 * Redis store over hiredis. See store.h. A broken connection is rebuilt once
 * per command and the command retried; "LOADING" is retried for up to 5 s.
 * Never logs record values (they may hold sealed secrets).
 */
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

#include <hiredis.h>

#include "../common/log.h"
#include "../common/util.h"

struct store {
	redisContext *rc;
	char host[256];
	int port;
	int db;
	char path[4096];
	char prefix[64];
};

void store_rec_free(struct store_rec *r)
{
	for (int i = 0; i < r->n; i++) {
		free(r->name[i]);
		free(r->value[i]);
	}
	r->n = 0;
}

const char *store_rec_get(const struct store_rec *r, const char *name)
{
	for (int i = 0; i < r->n; i++)
		if (strcmp(r->name[i], name) == 0)
			return r->value[i];
	return NULL;
}

struct store *store_open(const char *url, const char *prefix, struct sp_err *e)
{
	struct store *st = calloc(1, sizeof(*st));
	long long n;

	if (!st) {
		sp_err_set(e, SP_INTERNAL, "out of memory");
		return NULL;
	}
	str_copy(st->prefix, sizeof(st->prefix), prefix);
	if (strncmp(url, "unix://", 7) == 0) {
		if (str_copy(st->path, sizeof(st->path), url + 7) < 0)
			goto bad;
	} else if (strncmp(url, "redis://", 8) == 0) {
		const char *h = url + 8, *colon, *slash;
		char num[32];
		slash = strchr(h, '/');
		colon = strchr(h, ':');
		if (!colon || (slash && colon > slash) || (size_t)(colon - h) >= sizeof(st->host))
			goto bad;
		memcpy(st->host, h, (size_t)(colon - h));
		size_t plen = slash ? (size_t)(slash - colon - 1) : strlen(colon + 1);
		if (plen == 0 || plen >= sizeof(num))
			goto bad;
		memcpy(num, colon + 1, plen);
		num[plen] = '\0';
		if (parse_ll(num, 1, 65535, &n) < 0)
			goto bad;
		st->port = (int)n;
		if (slash && slash[1]) {
			if (parse_ll(slash + 1, 0, 1000, &n) < 0)
				goto bad;
			st->db = (int)n;
		}
	} else {
		goto bad;
	}
	return st;
bad:
	free(st);
	sp_err_set(e, SP_INTERNAL, "bad redis_url");
	return NULL;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	if (st->rc)
		redisFree(st->rc);
	free(st);
}

static int store_connect(struct store *st, struct sp_err *e)
{
	struct timeval tv = { 2, 0 };
	redisReply *r;

	if (st->rc)
		redisFree(st->rc);
	st->rc = st->path[0] ? redisConnectUnixWithTimeout(st->path, tv)
			     : redisConnectWithTimeout(st->host, st->port, tv);
	if (!st->rc || st->rc->err) {
		sp_err_set(e, SP_UNAVAILABLE, "Redis is unreachable: %s",
			   st->rc ? st->rc->errstr : "out of memory");
		log_error("redis connect: %s", st->rc ? st->rc->errstr : "oom");
		if (st->rc)
			redisFree(st->rc);
		st->rc = NULL;
		return -1;
	}
	tv.tv_sec = 5;
	redisSetTimeout(st->rc, tv);
	if (st->db) {
		r = redisCommand(st->rc, "SELECT %d", st->db);
		if (!r || r->type == REDIS_REPLY_ERROR) {
			if (r)
				freeReplyObject(r);
			redisFree(st->rc);
			st->rc = NULL;
			return sp_err_set(e, SP_UNAVAILABLE, "Redis SELECT failed");
		}
		freeReplyObject(r);
	}
	return 0;
}

/* Runs one command, reconnecting once on a broken connection and waiting
 * out LOADING. The caller frees the reply. Returns NULL with e set. */
static redisReply *store_cmd(struct store *st, int argc, const char **argv, const size_t *lens,
			     struct sp_err *e)
{
	redisReply *r = NULL;
	int64_t until = mono_ms() + 5000;
	int attempts = 0;

	for (;;) {
		if (!st->rc && store_connect(st, e) < 0)
			return NULL;
		r = redisCommandArgv(st->rc, argc, argv, lens);
		if (!r) {
			log_warn("redis %s: %s", argv[0], st->rc->errstr);
			redisFree(st->rc);
			st->rc = NULL;
			if (++attempts > 1) {
				sp_err_set(e, SP_UNAVAILABLE, "Redis is unreachable");
				return NULL;
			}
			continue;
		}
		if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "LOADING", 7) == 0 &&
		    mono_ms() < until) {
			struct timespec ts = { 0, 100 * 1000 * 1000 };
			freeReplyObject(r);
			nanosleep(&ts, NULL);
			continue;
		}
		if (r->type == REDIS_REPLY_ERROR) {
			log_error("redis %s: %s", argv[0], r->str);
			sp_err_set(e, SP_UNAVAILABLE, "Redis error");
			freeReplyObject(r);
			return NULL;
		}
		return r;
	}
}

int store_ping(struct store *st, struct sp_err *e)
{
	const char *argv[] = { "PING" };
	redisReply *r = store_cmd(st, 1, argv, NULL, e);

	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

static void key_sb(const struct store *st, const char *org, const char *id, char *out, size_t cap)
{
	snprintf(out, cap, "%s:{%s}:sb:%s", st->prefix, org, id);
}

static void key_idx(const struct store *st, const char *org, char *out, size_t cap)
{
	snprintf(out, cap, "%s:{%s}:sbs", st->prefix, org);
}

static int rec_from_reply(const redisReply *r, struct store_rec *out)
{
	out->n = 0;
	if (r->type != REDIS_REPLY_ARRAY)
		return -1;
	for (size_t i = 0; i + 1 < r->elements && out->n < STORE_MAX_FIELDS; i += 2) {
		const redisReply *k = r->element[i], *v = r->element[i + 1];
		if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
			continue;
		out->name[out->n] = strndup(k->str, k->len);
		out->value[out->n] = malloc(v->len + 1);
		if (!out->name[out->n] || !out->value[out->n]) {
			free(out->name[out->n]);
			free(out->value[out->n]);
			store_rec_free(out);
			return -1;
		}
		memcpy(out->value[out->n], v->str, v->len);
		out->value[out->n][v->len] = '\0';
		out->vlen[out->n] = v->len;
		out->n++;
	}
	return 0;
}

/* KEYS[1] record, KEYS[2] index; ARGV: ttl, score, id, k1, v1, ... */
static const char lua_put[] =
	"redis.call('DEL', KEYS[1]) "
	"redis.call('HSET', KEYS[1], unpack(ARGV, 4)) "
	"redis.call('EXPIRE', KEYS[1], ARGV[1]) "
	"redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3]) "
	"return 1";

int store_sandbox_put(struct store *st, const char *org, const char *id, const char *const *kv,
		      int nkv, int64_t ttl_s, int64_t score, struct sp_err *e)
{
	char k1[256], k2[256], ttl[32], sc[32];
	const char *argv[8 + 2 * STORE_MAX_FIELDS];
	redisReply *r;
	int argc = 0;

	if (nkv > 2 * STORE_MAX_FIELDS || nkv % 2)
		return sp_err_set(e, SP_INTERNAL, "bad record");
	key_sb(st, org, id, k1, sizeof(k1));
	key_idx(st, org, k2, sizeof(k2));
	snprintf(ttl, sizeof(ttl), "%lld", (long long)(ttl_s > 0 ? ttl_s : 1));
	snprintf(sc, sizeof(sc), "%lld", (long long)score);
	argv[argc++] = "EVAL";
	argv[argc++] = lua_put;
	argv[argc++] = "2";
	argv[argc++] = k1;
	argv[argc++] = k2;
	argv[argc++] = ttl;
	argv[argc++] = sc;
	argv[argc++] = id;
	for (int i = 0; i < nkv; i++)
		argv[argc++] = kv[i];
	r = store_cmd(st, argc, argv, NULL, e);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

/* KEYS[1] record; ARGV: expect ("" = any), ttl (0 = keep), k1, v1, ... */
static const char lua_update[] =
	"if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end "
	"if ARGV[1] ~= '' and redis.call('HGET', KEYS[1], 'status') ~= ARGV[1] then return 0 end "
	"if #ARGV > 2 then redis.call('HSET', KEYS[1], unpack(ARGV, 3)) end "
	"if tonumber(ARGV[2]) > 0 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end "
	"return 1";

int store_sandbox_update(struct store *st, const char *org, const char *id,
			 const char *expect_status, const char *const *kv, int nkv, int64_t ttl_s,
			 struct sp_err *e)
{
	char k1[256], ttl[32];
	const char *argv[8 + 2 * STORE_MAX_FIELDS];
	redisReply *r;
	int argc = 0, rc;

	if (nkv > 2 * STORE_MAX_FIELDS || nkv % 2)
		return sp_err_set(e, SP_INTERNAL, "bad record");
	key_sb(st, org, id, k1, sizeof(k1));
	snprintf(ttl, sizeof(ttl), "%lld", (long long)(ttl_s > 0 ? ttl_s : 0));
	argv[argc++] = "EVAL";
	argv[argc++] = lua_update;
	argv[argc++] = "1";
	argv[argc++] = k1;
	argv[argc++] = expect_status ? expect_status : "";
	argv[argc++] = ttl;
	for (int i = 0; i < nkv; i++)
		argv[argc++] = kv[i];
	r = store_cmd(st, argc, argv, NULL, e);
	if (!r)
		return -1;
	rc = r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
	freeReplyObject(r);
	if (rc == -1)
		return sp_err_set(e, SP_NOT_FOUND, "Sandbox not found");
	return rc == 1 ? 0 : 1;
}

int store_sandbox_get(struct store *st, const char *org, const char *id, struct store_rec *out,
		      struct sp_err *e)
{
	char k1[256];
	const char *argv[] = { "HGETALL", k1 };
	redisReply *r;
	int rc;

	key_sb(st, org, id, k1, sizeof(k1));
	r = store_cmd(st, 2, argv, NULL, e);
	if (!r)
		return -1;
	rc = rec_from_reply(r, out);
	freeReplyObject(r);
	if (rc < 0)
		return sp_err_set(e, SP_INTERNAL, "bad record");
	if (out->n == 0)
		return sp_err_set(e, SP_NOT_FOUND, "Sandbox not found");
	return 0;
}

int store_sandbox_del(struct store *st, const char *org, const char *id, struct sp_err *e)
{
	static const char lua_del[] = "redis.call('DEL', KEYS[1]) "
				      "redis.call('ZREM', KEYS[2], ARGV[1]) return 1";
	char k1[256], k2[256];
	const char *argv[] = { "EVAL", lua_del, "2", k1, k2, id };
	redisReply *r;

	key_sb(st, org, id, k1, sizeof(k1));
	key_idx(st, org, k2, sizeof(k2));
	r = store_cmd(st, 6, argv, NULL, e);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

/* Newest first; drops index members whose record expired. Returns a flat
 * array of HGETALL results in KEYS order. KEYS[1] index; ARGV[1] max;
 * ARGV[2] record key prefix. */
static const char lua_list[] =
	"local ids = redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1) "
	"local out = {} "
	"for _, id in ipairs(ids) do "
	"  local h = redis.call('HGETALL', ARGV[2] .. id) "
	"  if #h == 0 then redis.call('ZREM', KEYS[1], id) else out[#out + 1] = h end "
	"end return out";

int store_sandbox_list(struct store *st, const char *org, struct store_rec *recs, int max,
		       struct sp_err *e)
{
	char k2[256], pfx[256], mx[16];
	const char *argv[] = { "EVAL", lua_list, "1", k2, mx, pfx };
	redisReply *r;
	int n = 0;

	key_idx(st, org, k2, sizeof(k2));
	snprintf(pfx, sizeof(pfx), "%s:{%s}:sb:", st->prefix, org);
	snprintf(mx, sizeof(mx), "%d", max);
	r = store_cmd(st, 6, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_ARRAY) {
		for (size_t i = 0; i < r->elements && n < max; i++)
			if (rec_from_reply(r->element[i], &recs[n]) == 0 && recs[n].n > 0)
				n++;
	}
	freeReplyObject(r);
	return n;
}

int store_key_put(struct store *st, const char *hash, const char *org, const char *role,
		  const char *key_id, struct sp_err *e)
{
	static const char lua_key[] =
		"redis.call('HSET', KEYS[1], 'org', ARGV[1], 'role', ARGV[2], 'keyId', ARGV[3], "
		"'createdAt', ARGV[4]) "
		"redis.call('HSET', KEYS[2], 'hash', ARGV[5], 'org', ARGV[1], 'role', ARGV[2], "
		"'keyId', ARGV[3], 'createdAt', ARGV[4]) "
		"redis.call('SADD', KEYS[3], ARGV[1]) redis.call('SADD', KEYS[4], ARGV[3]) return 1";
	char k1[256], k2[256], k3[256], k4[256], now[32];
	const char *argv[] = { "EVAL", lua_key, "4", k1, k2, k3, k4, org, role, key_id, now, hash };
	redisReply *r;

	snprintf(k1, sizeof(k1), "%s:key:%s", st->prefix, hash);
	snprintf(k2, sizeof(k2), "%s:keyid:%s", st->prefix, key_id);
	snprintf(k3, sizeof(k3), "%s:orgs", st->prefix);
	snprintf(k4, sizeof(k4), "%s:{%s}:keys", st->prefix, org);
	snprintf(now, sizeof(now), "%lld", (long long)now_ms());
	r = store_cmd(st, 12, argv, NULL, e);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

/* HGETALL of one key into out; SP_NOT_FOUND (with msg) when empty. */
static int hgetall(struct store *st, const char *key, struct store_rec *out, enum sp_code missing,
		   const char *msg, struct sp_err *e)
{
	const char *argv[] = { "HGETALL", key };
	redisReply *r;
	int rc;

	out->n = 0;
	r = store_cmd(st, 2, argv, NULL, e);
	if (!r)
		return -1;
	rc = rec_from_reply(r, out);
	freeReplyObject(r);
	if (rc < 0)
		return sp_err_set(e, SP_INTERNAL, "bad record");
	if (out->n == 0 && msg)
		return sp_err_set(e, missing, "%s", msg);
	return 0;
}

int store_key_get(struct store *st, const char *hash, struct store_rec *out, struct sp_err *e)
{
	char k1[256];

	snprintf(k1, sizeof(k1), "%s:key:%s", st->prefix, hash);
	return hgetall(st, k1, out, SP_UNAUTHORIZED, "Invalid API key", e);
}

int store_key_revoke(struct store *st, const char *key_id, struct sp_err *e)
{
	static const char lua_rev[] =
		"local h = redis.call('HGET', KEYS[1], 'hash') if not h then return 0 end "
		"local org = redis.call('HGET', KEYS[1], 'org') "
		"redis.call('DEL', ARGV[1] .. h) redis.call('DEL', KEYS[1]) "
		"redis.call('SREM', ARGV[2] .. '{' .. org .. '}:keys', ARGV[3]) return 1";
	char k1[256], pfx[128], pfx2[128];
	const char *argv[] = { "EVAL", lua_rev, "1", k1, pfx, pfx2, key_id };
	redisReply *r;
	long long n;

	snprintf(k1, sizeof(k1), "%s:keyid:%s", st->prefix, key_id);
	snprintf(pfx, sizeof(pfx), "%s:key:", st->prefix);
	snprintf(pfx2, sizeof(pfx2), "%s:", st->prefix);
	r = store_cmd(st, 7, argv, NULL, e);
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
	static const char lua_list_keys[] =
		"local out = {} for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do "
		"local h = redis.call('HGETALL', ARGV[1] .. id) "
		"if #h > 0 then out[#out + 1] = h end end return out";
	char k1[256], pfx[128];
	const char *argv[] = { "EVAL", lua_list_keys, "1", k1, pfx };
	redisReply *r;
	int n = 0;

	snprintf(k1, sizeof(k1), "%s:{%s}:keys", st->prefix, org);
	snprintf(pfx, sizeof(pfx), "%s:keyid:", st->prefix);
	r = store_cmd(st, 5, argv, NULL, e);
	if (!r)
		return -1;
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements && n < max; i++) {
		if (rec_from_reply(r->element[i], &recs[n]) == 0 && recs[n].n > 0) {
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

	snprintf(k, sizeof(k), "%s:orgs", st->prefix);
	r = store_cmd(st, 3, argv, NULL, e);
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

	snprintf(k, sizeof(k), "%s:orgs", st->prefix);
	r = store_cmd(st, 3, argv, NULL, e);
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

	snprintf(k, sizeof(k), "%s:orgs", st->prefix);
	*names = NULL;
	*n = 0;
	r = store_cmd(st, 2, argv, NULL, e);
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

/* A simple command with up to 6 arguments and an integer or status answer. */
static int simple(struct store *st, int argc, const char **argv, long long *out, struct sp_err *e)
{
	redisReply *r = store_cmd(st, argc, argv, NULL, e);

	if (!r)
		return -1;
	if (out)
		*out = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
	freeReplyObject(r);
	return 0;
}

int store_role_put(struct store *st, const char *org, const char *name, const char *perms,
		   struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HSET", k, name, perms };

	snprintf(k, sizeof(k), "%s:{%s}:roles", st->prefix, org);
	return simple(st, 4, argv, NULL, e);
}

int store_role_get(struct store *st, const char *org, const char *name, char **perms,
		   struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HGET", k, name };
	redisReply *r;

	snprintf(k, sizeof(k), "%s:{%s}:roles", st->prefix, org);
	*perms = NULL;
	r = store_cmd(st, 3, argv, NULL, e);
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

	snprintf(k, sizeof(k), "%s:{%s}:roles", st->prefix, org);
	if (simple(st, 3, argv, &n, e) < 0)
		return -1;
	return n ? 0 : sp_err_set(e, SP_NOT_FOUND, "No role %s in %s", name, org);
}

int store_role_list(struct store *st, const char *org, struct store_rec *out, struct sp_err *e)
{
	char k[256];

	snprintf(k, sizeof(k), "%s:{%s}:roles", st->prefix, org);
	return hgetall(st, k, out, SP_OK, NULL, e);
}

int store_quota_set(struct store *st, const char *org, int64_t sandboxes, int64_t cpu_milli,
		    int64_t memory_mb, struct sp_err *e)
{
	static const char *const names[] = { "sandboxes", "cpuMilli", "memoryMb" };
	int64_t vals[] = { sandboxes, cpu_milli, memory_mb };
	char k[256], v[32];

	snprintf(k, sizeof(k), "%s:{%s}:quota", st->prefix, org);
	for (int i = 0; i < 3; i++) {
		const char *hset[] = { "HSET", k, names[i], v };
		const char *hdel[] = { "HDEL", k, names[i] };
		if (vals[i] < 0)
			continue;
		snprintf(v, sizeof(v), "%lld", (long long)vals[i]);
		if (simple(st, vals[i] ? 4 : 3, vals[i] ? hset : hdel, NULL, e) < 0)
			return -1;
	}
	return 0;
}

int store_quota_get(struct store *st, const char *org, struct store_rec *out, struct sp_err *e)
{
	char k[256];

	snprintf(k, sizeof(k), "%s:{%s}:quota", st->prefix, org);
	return hgetall(st, k, out, SP_OK, NULL, e);
}

/* KEYS[1] quota, KEYS[2] reservations; ARGV now, id, cpuMilli, memoryMb, deadline */
static const char lua_reserve[] =
	"local q = {} local raw = redis.call('HGETALL', KEYS[1]) "
	"for i = 1, #raw, 2 do q[raw[i]] = tonumber(raw[i + 1]) end "
	"local now = tonumber(ARGV[1]) local n, cpu, mem = 0, 0, 0 "
	"local r = redis.call('HGETALL', KEYS[2]) "
	"for i = 1, #r, 2 do "
	"  local d, c, m = string.match(r[i + 1], '(%d+) (%d+) (%d+)') "
	"  if r[i] ~= ARGV[2] then "
	"    if d == nil or tonumber(d) < now then redis.call('HDEL', KEYS[2], r[i]) "
	"    else n = n + 1 cpu = cpu + tonumber(c) mem = mem + tonumber(m) end "
	"  end "
	"end "
	"local c, m = tonumber(ARGV[3]), tonumber(ARGV[4]) "
	"if q.sandboxes and q.sandboxes > 0 and n + 1 > q.sandboxes then "
	"  return {1, 'sandboxes', n, q.sandboxes} end "
	"if q.cpuMilli and q.cpuMilli > 0 and cpu + c > q.cpuMilli then "
	"  return {1, 'cpuMilli', cpu, q.cpuMilli} end "
	"if q.memoryMb and q.memoryMb > 0 and mem + m > q.memoryMb then "
	"  return {1, 'memoryMb', mem, q.memoryMb} end "
	"redis.call('HSET', KEYS[2], ARGV[2], ARGV[5] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4]) "
	"return {0}";

int store_reserve(struct store *st, const char *org, const char *id, int64_t deadline_ms,
		  int64_t cpu_milli, int64_t memory_mb, char *msg, size_t msglen, struct sp_err *e)
{
	char k1[256], k2[256], now[32], c[32], m[32], d[32];
	const char *argv[] = { "EVAL", lua_reserve, "2", k1, k2, now, id, c, m, d };
	redisReply *r;
	int rc = 0;

	snprintf(k1, sizeof(k1), "%s:{%s}:quota", st->prefix, org);
	snprintf(k2, sizeof(k2), "%s:{%s}:resv", st->prefix, org);
	snprintf(now, sizeof(now), "%lld", (long long)now_ms());
	snprintf(c, sizeof(c), "%lld", (long long)cpu_milli);
	snprintf(m, sizeof(m), "%lld", (long long)memory_mb);
	snprintf(d, sizeof(d), "%lld", (long long)deadline_ms);
	r = store_cmd(st, 10, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 4 && r->element[0]->integer == 1) {
		const char *what = r->element[1]->str;
		long long used = r->element[2]->integer, lim = r->element[3]->integer;
		if (strcmp(what, "sandboxes") == 0)
			snprintf(msg, msglen, "Quota exceeded: %lld of %lld running sandboxes in use",
				 used, lim);
		else if (strcmp(what, "cpuMilli") == 0)
			snprintf(msg, msglen, "Quota exceeded: %.1f of %.1f CPUs in use",
				 (double)used / 1000, (double)lim / 1000);
		else
			snprintf(msg, msglen, "Quota exceeded: %lld of %lld MiB of memory in use", used,
				 lim);
		rc = 1;
	}
	freeReplyObject(r);
	return rc;
}

int store_release(struct store *st, const char *org, const char *id, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HDEL", k, id };

	snprintf(k, sizeof(k), "%s:{%s}:resv", st->prefix, org);
	return simple(st, 3, argv, NULL, e);
}
