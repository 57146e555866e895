/*
 * The store's Docker servers and the placement of sandboxes on them
 * (store/lua/server_place.lua: the least loaded, by live reservations).
 *
 *   <p>:servers         hash  server id -> JSON
 *   <p>:srv:<id>:resv   hash  sandbox id -> "deadline cpuMilli memoryMb"
 *
 * Never logs values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis.h>

#include "../common/util.h"
#include "store_int.h"

int store_server_put(struct store *st, const char *id, const char *json, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HSET", k, id, json };

	snprintf(k, sizeof(k), "%s:servers", store_prefix(st));
	return store_simple(st, STORE_ONCE, 4, argv, NULL, e);
}

int store_server_get(struct store *st, const char *id, char **json, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HGET", k, id };
	redisReply *r;

	snprintf(k, sizeof(k), "%s:servers", store_prefix(st));
	*json = NULL;
	r = store_cmd_kind(st, STORE_ONCE, 3, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_STRING)
		*json = strndup(r->str, r->len);
	freeReplyObject(r);
	if (!*json)
		return sp_err_set(e, SP_NOT_FOUND, "Server %s not found", id);
	return 0;
}

int store_server_del(struct store *st, const char *id, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HDEL", k, id };
	long long n = 0;

	snprintf(k, sizeof(k), "%s:servers", store_prefix(st));
	if (store_simple(st, STORE_ONCE, 3, argv, &n, e) < 0)
		return -1;
	return n ? 0 : sp_err_set(e, SP_NOT_FOUND, "Server %s not found", id);
}

int store_server_list(struct store *st, struct store_rec *out, struct sp_err *e)
{
	char k[256];

	snprintf(k, sizeof(k), "%s:servers", store_prefix(st));
	return store_hgetall(st, k, out, SP_OK, NULL, e);
}

int store_place(struct store *st, const char *const *candidates, int n, const char *id,
		int64_t deadline_ms, int64_t cpu_milli, int64_t memory_mb, char *out, size_t cap,
		struct sp_err *e)
{
	enum { MAXC = 64 };
	char keys[MAXC][256], nbuf[16], now[32], c[32], m[32], d[32];
	const char *argv[6 + MAXC];
	redisReply *r;
	int argc = 0;
	long long pick;

	if (n < 1 || n > MAXC)
		return sp_err_set(e, SP_INTERNAL, "placement needs 1..%d servers", MAXC);
	snprintf(nbuf, sizeof(nbuf), "%d", n);
	snprintf(now, sizeof(now), "%lld", (long long)now_ms());
	snprintf(c, sizeof(c), "%lld", (long long)cpu_milli);
	snprintf(m, sizeof(m), "%lld", (long long)memory_mb);
	snprintf(d, sizeof(d), "%lld", (long long)deadline_ms);
	argv[argc++] = nbuf;
	for (int i = 0; i < n; i++) {
		snprintf(keys[i], sizeof(keys[i]), "%s:srv:%s:resv", store_prefix(st),
			 candidates[i]);
		argv[argc++] = keys[i];
	}
	argv[argc++] = now;
	argv[argc++] = id;
	argv[argc++] = c;
	argv[argc++] = m;
	argv[argc++] = d;
	r = store_eval(st, STORE_ONCE, &store_lua_server_place, argc, argv, NULL, e);
	if (!r)
		return -1;
	pick = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
	freeReplyObject(r);
	if (pick < 1 || pick > n)
		return sp_err_set(e, SP_INTERNAL, "placement failed");
	str_copy(out, cap, candidates[pick - 1]);
	return 0;
}

int store_server_release(struct store *st, const char *server, const char *id, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HDEL", k, id };

	snprintf(k, sizeof(k), "%s:srv:%s:resv", store_prefix(st),
		 server && *server ? server : "local");
	return store_simple(st, STORE_ONCE, 3, argv, NULL, e);
}

int store_server_load(struct store *st, const char *server, int64_t *sandboxes, int64_t *cpu_milli,
		      int64_t *memory_mb, struct sp_err *e)
{
	struct store_rec rec = { 0 };
	char k[256];
	int64_t now = now_ms();

	*sandboxes = *cpu_milli = *memory_mb = 0;
	snprintf(k, sizeof(k), "%s:srv:%s:resv", store_prefix(st), server);
	if (store_hgetall(st, k, &rec, SP_OK, NULL, e) < 0)
		return -1;
	for (int i = 0; i < rec.n; i++) {
		long long d = 0, c = 0, m = 0;
		if (sscanf(rec.value[i], "%lld %lld %lld", &d, &c, &m) == 3 && d >= now) {
			(*sandboxes)++;
			*cpu_milli += c;
			*memory_mb += m;
		}
	}
	store_rec_free(&rec);
	return 0;
}
