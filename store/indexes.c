/*
 * The store's indexes: an org's sandboxes in a sorted set scored by
 * creation, read as pages of ids or of records (store/lua/index_records,
 * sandbox_ids_page, sandbox_get_many); a read drops the members whose
 * record expired.
 *
 *   <p>:{<org>}:sbs  zset  sandbox id -> score (createdAt, ms)
 *
 * Never logs values.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis.h>

#include "../common/util.h"
#include "store_int.h"

void store_key_index(const struct store *st, const char *org, char *out, size_t cap)
{
	snprintf(out, cap, "%s:{%s}:sbs", store_prefix(st), org);
}

int store_index_records(struct store *st, const char *index, const char *prefix, int newest,
			struct store_rec *recs, int max, struct sp_err *e)
{
	char mx[16];
	const char *argv[] = { "1", index, mx, prefix, newest ? "1" : "0" };
	redisReply *r;
	int n = 0;

	snprintf(mx, sizeof(mx), "%d", max);
	/* drops only expired members */
	r = store_eval(st, STORE_READ, &store_lua_index_records, 5, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_ARRAY) {
		for (size_t i = 0; i < r->elements && n < max; i++)
			if (store_rec_from_reply(r->element[i], &recs[n]) == 0 && recs[n].n > 0)
				n++;
	}
	freeReplyObject(r);
	return n;
}

int store_sandbox_list(struct store *st, const char *org, struct store_rec *recs, int max,
		       struct sp_err *e)
{
	char k2[256], pfx[256];

	store_key_index(st, org, k2, sizeof(k2));
	snprintf(pfx, sizeof(pfx), "%s:{%s}:sb:", store_prefix(st), org);
	return store_index_records(st, k2, pfx, 1, recs, max, e);
}

int store_sandbox_ids(struct store *st, const char *org, char ***ids, int *n, struct sp_err *e)
{
	char k2[256];
	const char *argv[] = { "ZREVRANGE", k2, "0", "-1" };
	redisReply *r;

	store_key_index(st, org, k2, sizeof(k2));
	*ids = NULL;
	*n = 0;
	r = store_cmd_kind(st, STORE_READ, 4, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_ARRAY && r->elements) {
		*ids = calloc(r->elements, sizeof(char *));
		if (!*ids) {
			freeReplyObject(r);
			return sp_err_set(e, SP_INTERNAL, "out of memory");
		}
		for (size_t i = 0; i < r->elements; i++) {
			if (r->element[i]->type != REDIS_REPLY_STRING)
				continue;
			(*ids)[*n] = strndup(r->element[i]->str, r->element[i]->len);
			if (!(*ids)[*n]) {
				store_ids_free(*ids, *n);
				*ids = NULL;
				*n = 0;
				freeReplyObject(r);
				return sp_err_set(e, SP_INTERNAL, "out of memory");
			}
			(*n)++;
		}
	}
	freeReplyObject(r);
	return 0;
}

int store_sandbox_ids_page(struct store *st, const char *org, int64_t after_score,
			   const char *after_id, int max, char **ids, int64_t *scores, int *n,
			   struct sp_err *e)
{
	char k2[256], sc[32], mx[16];
	const char *argv[] = { "1", k2, sc, after_id ? after_id : "", mx };
	redisReply *r;

	store_key_index(st, org, k2, sizeof(k2));
	snprintf(sc, sizeof(sc), "%lld", (long long)after_score);
	snprintf(mx, sizeof(mx), "%d", max);
	*n = 0;
	r = store_eval(st, STORE_READ, &store_lua_sandbox_ids_page, 5, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_ARRAY) {
		for (size_t i = 0; i + 1 < r->elements && *n < max; i += 2) {
			redisReply *m = r->element[i], *v = r->element[i + 1];
			long long score = 0;
			double d;
			if (m->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
				continue;
			if (parse_ll(v->str, LLONG_MIN, LLONG_MAX, &score) < 0 &&
			    parse_double(v->str, &d) == 0)
				score = (long long)d;
			ids[*n] = strndup(m->str, m->len);
			if (!ids[*n]) {
				store_ids_free_items(ids, *n);
				*n = 0;
				freeReplyObject(r);
				return sp_err_set(e, SP_INTERNAL, "out of memory");
			}
			scores[*n] = score;
			(*n)++;
		}
	}
	freeReplyObject(r);
	return 0;
}

void store_ids_free_items(char **ids, int n)
{
	for (int i = 0; i < n; i++) {
		free(ids[i]);
		ids[i] = NULL;
	}
}

void store_ids_free(char **ids, int n)
{
	for (int i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
}

int store_sandbox_get_many(struct store *st, const char *org, char *const *ids, int n,
			   struct store_rec *recs, struct sp_err *e)
{
	char k2[256], pfx[256];
	const char **argv;
	redisReply *r;
	int got = 0;

	if (n <= 0)
		return 0;
	argv = calloc((size_t)n + 3, sizeof(*argv));
	if (!argv)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	store_key_index(st, org, k2, sizeof(k2));
	snprintf(pfx, sizeof(pfx), "%s:{%s}:sb:", store_prefix(st), org);
	argv[0] = "1";
	argv[1] = k2;
	argv[2] = pfx;
	for (int i = 0; i < n; i++)
		argv[3 + i] = ids[i];
	/* drops only expired members */
	r = store_eval(st, STORE_READ, &store_lua_sandbox_get_many, n + 3, argv, NULL, e);
	free(argv);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_ARRAY) {
		for (size_t i = 0; i < r->elements && got < n; i++)
			if (store_rec_from_reply(r->element[i], &recs[got]) == 0 && recs[got].n > 0)
				got++;
	}
	freeReplyObject(r);
	return got;
}
