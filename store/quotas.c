/*
 * The store's quotas: an org's limits and the reservations that count
 * against them, taken in one Lua program (store/lua/quota_reserve.lua)
 * so that parallel creates never exceed them.
 *
 *   <p>:{<org>}:quota  hash  sandboxes, cpuMilli, memoryMb, maxLifetimeMs
 *   <p>:{<org>}:resv   hash  sandbox id -> "deadline cpuMilli memoryMb made"
 *
 * Never logs values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis.h>

#include "../common/util.h"
#include "store_int.h"

int store_quota_set(struct store *st, const char *org, int64_t sandboxes, int64_t cpu_milli,
		    int64_t memory_mb, int64_t max_lifetime_ms, struct sp_err *e)
{
	static const char *const names[] = { "sandboxes", "cpuMilli", "memoryMb", "maxLifetimeMs" };
	int64_t vals[] = { sandboxes, cpu_milli, memory_mb, max_lifetime_ms };
	char k[256], v[32];

	snprintf(k, sizeof(k), "%s:{%s}:quota", store_prefix(st), org);
	for (int i = 0; i < 4; i++) {
		const char *hset[] = { "HSET", k, names[i], v };
		const char *hdel[] = { "HDEL", k, names[i] };
		if (vals[i] < 0)
			continue;
		snprintf(v, sizeof(v), "%lld", (long long)vals[i]);
		if (store_simple(st, STORE_IDEM, vals[i] ? 4 : 3, vals[i] ? hset : hdel, NULL, e) <
		    0)
			return -1;
	}
	return 0;
}

int store_quota_get(struct store *st, const char *org, struct store_rec *out, struct sp_err *e)
{
	char k[256];

	snprintf(k, sizeof(k), "%s:{%s}:quota", store_prefix(st), org);
	return store_hgetall(st, k, out, SP_OK, NULL, e);
}

int store_reserve(struct store *st, const char *org, const char *id, int64_t deadline_ms,
		  int64_t cpu_milli, int64_t memory_mb, char *msg, size_t msglen, struct sp_err *e)
{
	char k1[256], k2[256], now[32], c[32], m[32], d[32];
	const char *argv[] = { "2", k1, k2, now, id, c, m, d };
	redisReply *r;
	int rc = 0;

	snprintf(k1, sizeof(k1), "%s:{%s}:quota", store_prefix(st), org);
	snprintf(k2, sizeof(k2), "%s:{%s}:resv", store_prefix(st), org);
	snprintf(now, sizeof(now), "%lld", (long long)now_ms());
	snprintf(c, sizeof(c), "%lld", (long long)cpu_milli);
	snprintf(m, sizeof(m), "%lld", (long long)memory_mb);
	snprintf(d, sizeof(d), "%lld", (long long)deadline_ms);
	/* IDEM: a second run skips id's own reservation when counting */
	r = store_eval(st, STORE_IDEM, &store_lua_quota_reserve, 8, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 4 && r->element[0]->integer == 1) {
		const char *what = r->element[1]->str;
		long long used = r->element[2]->integer, lim = r->element[3]->integer;
		if (strcmp(what, "sandboxes") == 0)
			snprintf(msg, msglen,
				 "Quota exceeded: %lld of %lld running sandboxes in use", used,
				 lim);
		else if (strcmp(what, "cpuMilli") == 0)
			snprintf(msg, msglen, "Quota exceeded: %.1f of %.1f CPUs in use",
				 (double)used / 1000, (double)lim / 1000);
		else
			snprintf(msg, msglen, "Quota exceeded: %lld of %lld MiB of memory in use",
				 used, lim);
		rc = 1;
	}
	freeReplyObject(r);
	return rc;
}

int store_reservations(struct store *st, const char *org, char ***ids, int64_t **made, int *n,
		       struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HGETALL", k };
	redisReply *r;

	snprintf(k, sizeof(k), "%s:{%s}:resv", store_prefix(st), org);
	*ids = NULL;
	*made = NULL;
	*n = 0;
	r = store_cmd_kind(st, STORE_READ, 2, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2) {
		size_t cnt = r->elements / 2;
		*ids = calloc(cnt, sizeof(char *));
		*made = calloc(cnt, sizeof(int64_t));
		for (size_t i = 0; *ids && *made && i < cnt; i++) {
			redisReply *kr = r->element[2 * i], *vr = r->element[2 * i + 1];
			long long d, c, m, t = 0;
			char v[128];
			if (kr->type != REDIS_REPLY_STRING || vr->type != REDIS_REPLY_STRING)
				continue;
			snprintf(v, sizeof(v), "%.*s", (int)vr->len, vr->str);
			/* "deadline cpu memory [made]": older entries lack made (0) */
			if (sscanf(v, "%lld %lld %lld %lld", &d, &c, &m, &t) < 3)
				t = 0;
			(*made)[*n] = t;
			(*ids)[(*n)++] = strndup(kr->str, kr->len);
		}
	}
	freeReplyObject(r);
	return 0;
}

int store_release(struct store *st, const char *org, const char *id, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HDEL", k, id };

	snprintf(k, sizeof(k), "%s:{%s}:resv", store_prefix(st), org);
	return store_simple(st, STORE_IDEM, 3, argv, NULL, e); /* the count is ignored */
}
