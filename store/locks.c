/*
 * The store's locks (SET NX PX: held until dropped or timed out) and the
 * installation id (the first one written stays).
 *
 *   <p>:lock:<name>  string  "1", PX its time
 *   <p>:install      string  the installation id
 *
 * Never logs values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis.h>

#include "../common/util.h"
#include "store_int.h"

int store_install_id(struct store *st, const char *fresh, char *out, size_t cap, struct sp_err *e)
{
	char k[256];
	const char *set[] = { "SET", k, fresh, "NX" };
	const char *get[] = { "GET", k };
	redisReply *r;
	int rc = -1;

	snprintf(k, sizeof(k), "%s:install", store_prefix(st));
	if (store_simple(st, STORE_IDEM, 4, set, NULL, e) < 0)
		return -1;
	r = store_cmd_kind(st, STORE_READ, 2, get, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_STRING && r->len > 0 && r->len < cap) {
		memcpy(out, r->str, r->len);
		out[r->len] = '\0';
		rc = 0;
	} else {
		sp_err_set(e, SP_INTERNAL, "no installation id in Redis");
	}
	freeReplyObject(r);
	return rc;
}

int store_lock(struct store *st, const char *name, int64_t ttl_ms, struct sp_err *e)
{
	char k[256], ttl[32];
	const char *argv[] = { "SET", k, "1", "NX", "PX", ttl };
	redisReply *r;
	int rc;

	snprintf(k, sizeof(k), "%s:lock:%s", store_prefix(st), name);
	snprintf(ttl, sizeof(ttl), "%lld", (long long)(ttl_ms > 0 ? ttl_ms : 1));
	r = store_cmd_kind(st, STORE_ONCE, 6, argv, NULL, e);
	if (!r)
		return -1;
	rc = r->type == REDIS_REPLY_STATUS ? 1 : 0;
	freeReplyObject(r);
	return rc;
}

int store_unlock(struct store *st, const char *name, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "DEL", k };

	snprintf(k, sizeof(k), "%s:lock:%s", store_prefix(st), name);
	return store_simple(st, STORE_ONCE, 2, argv, NULL, e);
}

int store_locked(struct store *st, const char *name, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "EXISTS", k };
	long long n = 0;

	snprintf(k, sizeof(k), "%s:lock:%s", store_prefix(st), name);
	if (store_simple(st, STORE_READ, 2, argv, &n, e) < 0)
		return -1;
	return n > 0;
}
