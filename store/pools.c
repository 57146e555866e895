/*
 * The store's warm pools: the containers ready for a claim, scored by
 * when they end, with the count of claims and of containers being made.
 *
 *   <p>:pool:<name>          zset    container -> expiry (ms)
 *   <p>:pool:<name>:claims   string  claims so far
 *   <p>:pool:<name>:filling  string  containers being made (EX 120)
 *
 * Never logs values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis.h>

#include "../common/util.h"
#include "store_int.h"

int store_pool_claim(struct store *st, const char *pool, int64_t min_expiry_ms, char *member,
		     size_t cap, struct sp_err *e)
{
	char key[300], claims[320], limit[32];
	const char *argv[] = { "2", key, claims, limit };
	redisReply *r;
	int got = 0;

	snprintf(key, sizeof(key), "%s:pool:%s", store_prefix(st), pool);
	snprintf(claims, sizeof(claims), "%s:pool:%s:claims", store_prefix(st), pool);
	snprintf(limit, sizeof(limit), "%lld", (long long)min_expiry_ms);
	/* a lost answer must not hand the same container out again: once only */
	r = store_eval(st, STORE_ONCE, &store_lua_pool_claim, 4, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_STRING && r->len < cap) {
		memcpy(member, r->str, r->len);
		member[r->len] = '\0';
		got = 1;
	}
	freeReplyObject(r);
	return got;
}

int store_pool_add(struct store *st, const char *pool, int64_t expiry_ms, const char *member,
		   struct sp_err *e)
{
	char key[300], score[32];
	const char *argv[] = { "ZADD", key, score, member };

	snprintf(key, sizeof(key), "%s:pool:%s", store_prefix(st), pool);
	snprintf(score, sizeof(score), "%lld", (long long)expiry_ms);
	return store_simple(st, STORE_ONCE, 4, argv, NULL, e);
}

int store_pool_fill_begin(struct store *st, const char *pool, int64_t min_expiry_ms, int size,
			  struct sp_err *e)
{
	char key[300], fill[320], limit[32], sz[16];
	const char *argv[] = { "2", key, fill, limit, sz };
	redisReply *r;
	int go;

	snprintf(key, sizeof(key), "%s:pool:%s", store_prefix(st), pool);
	snprintf(fill, sizeof(fill), "%s:pool:%s:filling", store_prefix(st), pool);
	snprintf(limit, sizeof(limit), "%lld", (long long)min_expiry_ms);
	snprintf(sz, sizeof(sz), "%d", size);
	r = store_eval(st, STORE_ONCE, &store_lua_pool_fill_begin, 5, argv, NULL, e);
	if (!r)
		return -1;
	go = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
	freeReplyObject(r);
	return go;
}

int store_pool_fill_end(struct store *st, const char *pool, struct sp_err *e)
{
	char fill[320];
	const char *argv[] = { "DECR", fill };

	snprintf(fill, sizeof(fill), "%s:pool:%s:filling", store_prefix(st), pool);
	return store_simple(st, STORE_ONCE, 2, argv, NULL, e);
}

int store_pool_size(struct store *st, const char *pool, int64_t min_expiry_ms, struct sp_err *e)
{
	char key[300], lo[32];
	const char *argv[] = { "ZCOUNT", key, lo, "+inf" };
	long long n = 0;

	snprintf(key, sizeof(key), "%s:pool:%s", store_prefix(st), pool);
	snprintf(lo, sizeof(lo), "%lld", (long long)min_expiry_ms);
	if (store_simple(st, STORE_ONCE, 4, argv, &n, e) < 0)
		return -1;
	return (int)n;
}

long long store_pool_claims(struct store *st, const char *pool, struct sp_err *e)
{
	char key[320];
	const char *argv[] = { "GET", key };
	redisReply *r;
	long long n = 0;

	snprintf(key, sizeof(key), "%s:pool:%s:claims", store_prefix(st), pool);
	r = store_cmd_kind(st, STORE_ONCE, 2, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_STRING)
		parse_ll(r->str, 0, 1LL << 62, &n);
	freeReplyObject(r);
	return n;
}
