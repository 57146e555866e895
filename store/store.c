/*
 * Redis store over hiredis. See store.h. A connection found closed before a
 * command is sent is rebuilt silently. A command whose answer is lost (the
 * connection broke or timed out after it was sent) is ambiguous: it is sent
 * again once only when it is a read or an idempotent write (STORE_READ,
 * STORE_IDEM below), never when a second run would answer differently
 * (STORE_ONCE): that caller gets SP_UNAVAILABLE and the client may retry.
 * "LOADING" is waited out for up to 5 s. With Sentinel (sentinel:// url) the
 * master is found through sentinel.c, and a broken connection, READONLY,
 * MASTERDOWN or LOADING makes the worker look for it again, all within
 * STORE_FAILOVER_MS per command. Never logs record values (they may hold
 * sealed secrets).
 */
#include "store.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

#include <poll.h>

#include <hiredis.h>

#include "../common/log.h"
#include "../common/util.h"
#include "sentinel.h"
#include "store_int.h"

/* The longest a command spends finding a new master after a failover. */
#define STORE_FAILOVER_MS 3000

struct store {
	redisContext *rc;
	char host[256];
	int port;
	int db;
	char path[4096];
	char prefix[64];
	struct sentinel *sn; /* set for sentinel:// urls */
	int wait_replicas;   /* WAIT for this many replicas after each write (0: never) */
	int wait_ms;	     /* ... for at most this long */
};

const char *store_prefix(const struct store *st)
{
	return st->prefix;
}

void store_rec_free(struct store_rec *r)
{
	for (int i = 0; i < r->n; i++) {
		free(r->name[i]);
		free(r->value[i]);
	}
	free(r->name);
	free(r->value);
	free(r->vlen);
	r->name = r->value = NULL;
	r->vlen = NULL;
	r->n = 0;
}

const char *store_rec_get(const struct store_rec *r, const char *name)
{
	for (int i = 0; i < r->n; i++)
		if (strcmp(r->name[i], name) == 0)
			return r->value[i];
	return NULL;
}

/* Reads "wait=N&wait_ms=T" (the part after '?') into st. */
static int parse_query(struct store *st, const char *q)
{
	char buf[128], *save = NULL, *kv;
	long long n;

	if (str_copy(buf, sizeof(buf), q) < 0)
		return -1;
	st->wait_ms = 1000;
	for (kv = strtok_r(buf, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
		if (strncmp(kv, "wait=", 5) == 0 && parse_ll(kv + 5, 0, 16, &n) == 0)
			st->wait_replicas = (int)n;
		else if (strncmp(kv, "wait_ms=", 8) == 0 && parse_ll(kv + 8, 1, 10000, &n) == 0)
			st->wait_ms = (int)n;
		else
			return -1;
	}
	return 0;
}

/* "h:p,h:p/name[/db]" after sentinel:// (len bytes). */
static int parse_sentinel(struct store *st, const char *s, size_t len)
{
	const char *slash = memchr(s, '/', len), *name, *slash2;
	long long n;
	char num[8];

	if (!slash)
		return -1;
	name = slash + 1;
	slash2 = memchr(name, '/', len - (size_t)(name - s));
	st->sn = calloc(1, sizeof(*st->sn));
	if (!st->sn ||
	    sentinel_parse(st->sn, s, (size_t)(slash - s), name,
			   slash2 ? (size_t)(slash2 - name) : len - (size_t)(name - s)) < 0)
		return -1;
	if (slash2) {
		size_t dl = len - (size_t)(slash2 + 1 - s);
		if (dl == 0 || dl >= sizeof(num))
			return -1;
		memcpy(num, slash2 + 1, dl);
		num[dl] = '\0';
		if (parse_ll(num, 0, 1000, &n) < 0)
			return -1;
		st->db = (int)n;
	}
	return 0;
}

struct store *store_open(const char *url_in, const char *prefix, struct sp_err *e)
{
	struct store *st = calloc(1, sizeof(*st));
	char url[4096], *q;
	long long n;

	if (!st) {
		sp_err_set(e, SP_INTERNAL, "out of memory");
		return NULL;
	}
	str_copy(st->prefix, sizeof(st->prefix), prefix);
	if (str_copy(url, sizeof(url), url_in) < 0)
		goto bad;
	q = strchr(url, '?');
	if (q) {
		*q++ = '\0';
		if (parse_query(st, q) < 0)
			goto bad;
	}
	if (strncmp(url, "unix://", 7) == 0) {
		if (str_copy(st->path, sizeof(st->path), url + 7) < 0)
			goto bad;
	} else if (strncmp(url, "sentinel://", 11) == 0) {
		if (parse_sentinel(st, url + 11, strlen(url + 11)) < 0)
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
	free(st->sn);
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
	free(st->sn);
	free(st);
}

static void store_drop(struct store *st)
{
	if (st->rc)
		redisFree(st->rc);
	st->rc = NULL;
}

/* Connects (through Sentinel when configured, finding the master by
 * deadline) and selects the db. */
static int store_connect(struct store *st, int64_t deadline, struct sp_err *e)
{
	struct timeval tv = { 2, 0 };
	redisReply *r;

	store_drop(st);
	if (st->sn) {
		st->rc = sentinel_connect(st->sn, deadline, e);
		if (!st->rc)
			return -1;
	} else {
		st->rc = st->path[0] ? redisConnectUnixWithTimeout(st->path, tv)
				     : redisConnectWithTimeout(st->host, st->port, tv);
		if (!st->rc || st->rc->err) {
			log_error("redis connect: %s", st->rc ? st->rc->errstr : "oom");
			store_drop(st);
			return sp_err_set(e, SP_UNAVAILABLE, "Redis is unavailable");
		}
	}
	/* a WAIT may take wait_ms; the socket must outlast it */
	tv.tv_sec = 5 + st->wait_ms / 1000;
	redisSetTimeout(st->rc, tv);
	if (st->db) {
		r = redisCommand(st->rc, "SELECT %d", st->db);
		if (!r || r->type == REDIS_REPLY_ERROR) {
			if (r)
				freeReplyObject(r);
			store_drop(st);
			return sp_err_set(e, SP_UNAVAILABLE, "Redis SELECT failed");
		}
		freeReplyObject(r);
	}
	return 0;
}

/* An idle connection has nothing to read: if it has, the server closed it
 * (or sent something unasked), so it is dropped before a command is sent
 * on it, which keeps that command's outcome unambiguous. */
static int store_conn_ok(struct store *st)
{
	struct pollfd p = { st->rc->fd, POLLIN | POLLRDHUP, 0 };

	if (st->rc->err)
		return 0;
	return poll(&p, 1, 0) == 0;
}

/* Error answers that mean "not done here; the master is elsewhere or not
 * ready": the command did not run, so it may always go again elsewhere. */
static int not_master_error(const redisReply *r)
{
	return strncmp(r->str, "READONLY", 8) == 0 || strncmp(r->str, "MASTERDOWN", 10) == 0 ||
	       strncmp(r->str, "LOADING", 7) == 0 || strstr(r->str, "-READONLY") ||
	       strstr(r->str, "READONLY You can't write");
}

/* Sends the command and, for a write when wait_replicas is set, WAIT in the
 * same round trip. Returns the command's reply or NULL (connection lost);
 * *unconfirmed is set when the write ran but fewer replicas than asked
 * confirmed it in time (or the WAIT answer was lost). */
static redisReply *send_cmd(struct store *st, enum store_kind kind, int argc, const char **argv,
			    const size_t *lens, int *unconfirmed)
{
	redisReply *r = NULL, *w = NULL;

	*unconfirmed = 0;
	if (kind == STORE_READ || st->wait_replicas <= 0)
		return redisCommandArgv(st->rc, argc, argv, lens);
	if (redisAppendCommandArgv(st->rc, argc, argv, lens) != REDIS_OK ||
	    redisAppendCommand(st->rc, "WAIT %d %d", st->wait_replicas, st->wait_ms) != REDIS_OK ||
	    redisGetReply(st->rc, (void **)&r) != REDIS_OK)
		return NULL;
	if (redisGetReply(st->rc, (void **)&w) != REDIS_OK) {
		log_warn("redis WAIT after %s: %s", argv[0], st->rc->errstr);
		*unconfirmed = 1;
		store_drop(st);
		return r;
	}
	if (r->type != REDIS_REPLY_ERROR &&
	    (w->type != REDIS_REPLY_INTEGER || w->integer < st->wait_replicas)) {
		log_warn("redis %s: confirmed by %lld of %d replicas within %d ms", argv[0],
			 w->type == REDIS_REPLY_INTEGER ? w->integer : -1LL, st->wait_replicas,
			 st->wait_ms);
		*unconfirmed = 1;
	}
	freeReplyObject(w);
	return r;
}

static int script_load(struct store *st, const struct store_lua *prog, struct sp_err *e);

/* Runs one command of the given kind (see enum store_kind): a connection
 * found closed is rebuilt first; a lost answer is retried once for READ
 * and IDEM only; LOADING is waited out (plain url) or, like READONLY and
 * MASTERDOWN, sends the worker to Sentinel for the master (the command did
 * not run, so it goes again whatever its kind). prog, when not NULL, is
 * the Lua program the command (EVALSHA) runs: NOSCRIPT loads it and sends
 * the command once more (it did not run either). The caller frees the
 * reply. Returns NULL with e set (SP_UNAVAILABLE). */
static redisReply *run_cmd(struct store *st, enum store_kind kind, const struct store_lua *prog,
			   int argc, const char **argv, const size_t *lens, struct sp_err *e)
{
	int64_t start = mono_ms(), until = start + 5000, failover = start + STORE_FAILOVER_MS;
	int resent = 0, moved = 0, loaded = 0, unconfirmed;
	const char *what = prog ? prog->name : argv[0];
	redisReply *r;

	for (;;) {
		if (st->rc && !store_conn_ok(st)) {
			log_info("redis connection closed by the server; reconnecting");
			store_drop(st);
		}
		if (!st->rc && store_connect(st, failover, e) < 0)
			return NULL;
		r = send_cmd(st, kind, argc, argv, lens, &unconfirmed);
		if (!r) {
			log_warn("redis %s: %s", what, st->rc ? st->rc->errstr : "connection lost");
			store_drop(st);
			if (kind == STORE_ONCE || resent++ > 0) {
				/* it may or may not have run: never sent twice */
				sp_err_set(e, SP_UNAVAILABLE, "Redis is unavailable");
				return NULL;
			}
			continue;
		}
		if (r->type == REDIS_REPLY_ERROR && st->sn && not_master_error(r) && moved++ < 3 &&
		    mono_ms() < failover) {
			log_warn("redis %s at %s: %.60s; asking Sentinel for the master", what,
				 st->sn->master, r->str);
			freeReplyObject(r);
			store_drop(st);
			if (moved > 1) {
				struct timespec ts = { 0, 200 * 1000 * 1000 };
				nanosleep(&ts, NULL);
			}
			continue;
		}
		if (r->type == REDIS_REPLY_ERROR && !st->sn && strncmp(r->str, "LOADING", 7) == 0 &&
		    mono_ms() < until) {
			struct timespec ts = { 0, 100 * 1000 * 1000 };
			freeReplyObject(r);
			nanosleep(&ts, NULL);
			continue;
		}
		if (r->type == REDIS_REPLY_ERROR && prog && !loaded &&
		    strncmp(r->str, "NOSCRIPT", 8) == 0) {
			log_info("redis: Lua program %s not loaded there; loading it", prog->name);
			freeReplyObject(r);
			loaded = 1;
			if (script_load(st, prog, e) < 0)
				return NULL;
			continue;
		}
		if (r->type == REDIS_REPLY_ERROR) {
			log_error("redis %s: %s", what, r->str);
			if (not_master_error(r) || strncmp(r->str, "NOREPLICAS", 10) == 0)
				sp_err_set(e, SP_UNAVAILABLE, "Redis is unavailable");
			else
				sp_err_set(e, SP_UNAVAILABLE, "Redis error");
			freeReplyObject(r);
			return NULL;
		}
		if (unconfirmed) {
			/* applied on the master, not known to be on a replica: not acknowledged */
			freeReplyObject(r);
			if (kind != STORE_ONCE && resent++ == 0 && !st->rc)
				continue;
			sp_err_set(e, SP_UNAVAILABLE, "Redis is unavailable");
			return NULL;
		}
		return r;
	}
}

redisReply *store_cmd_kind(struct store *st, enum store_kind kind, int argc, const char **argv,
			   const size_t *lens, struct sp_err *e)
{
	return run_cmd(st, kind, NULL, argc, argv, lens, e);
}

/* SCRIPT LOAD of prog: Redis's script cache is the server's, so a program
 * is loaded once per server (and again after a restart, a failover or a
 * SCRIPT FLUSH), whichever connection meets it missing first. The digest
 * Redis answers must be the one computed at build time. */
static int script_load(struct store *st, const struct store_lua *prog, struct sp_err *e)
{
	const char *argv[] = { "SCRIPT", "LOAD", prog->text };
	redisReply *r = store_cmd_kind(st, STORE_READ, 3, argv, NULL, e);
	int ok;

	if (!r)
		return -1;
	ok = r->type == REDIS_REPLY_STRING && r->len == 40 && memcmp(r->str, prog->sha, 40) == 0;
	freeReplyObject(r);
	if (!ok) {
		log_error("redis SCRIPT LOAD %s: not the digest computed at build time",
			  prog->name);
		return sp_err_set(e, SP_INTERNAL, "Lua program %s: digest mismatch", prog->name);
	}
	return 0;
}

redisReply *store_eval(struct store *st, enum store_kind kind, const struct store_lua *prog,
		       int argc, const char **argv, const size_t *lens, struct sp_err *e)
{
	const char **full = calloc((size_t)argc + 2, sizeof(*full));
	size_t *flens = lens ? calloc((size_t)argc + 2, sizeof(*flens)) : NULL;
	redisReply *r = NULL;

	if (!full || (lens && !flens)) {
		sp_err_set(e, SP_INTERNAL, "out of memory");
		goto out;
	}
	full[0] = "EVALSHA";
	full[1] = prog->sha;
	memcpy(full + 2, argv, (size_t)argc * sizeof(*full));
	if (flens) {
		flens[0] = 7;
		flens[1] = strlen(prog->sha);
		memcpy(flens + 2, lens, (size_t)argc * sizeof(*flens));
	}
	r = run_cmd(st, kind, prog, argc + 2, full, flens, e);
out:
	free(full);
	free(flens);
	return r;
}

/* A command that is never sent twice after a lost answer: the safe default
 * for writes not marked STORE_IDEM. */
static redisReply *store_cmd(struct store *st, int argc, const char **argv, const size_t *lens,
			     struct sp_err *e)
{
	return store_cmd_kind(st, STORE_ONCE, argc, argv, lens, e);
}

int store_ping(struct store *st, struct sp_err *e)
{
	const char *argv[] = { "PING" };
	redisReply *r = store_cmd_kind(st, STORE_READ, 1, argv, NULL, e);

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

int store_rec_from_reply(const redisReply *r, struct store_rec *out)
{
	size_t pairs;

	memset(out, 0, sizeof(*out));
	if (r->type != REDIS_REPLY_ARRAY)
		return -1;
	pairs = r->elements / 2;
	if (pairs == 0)
		return 0;
	if (pairs > INT_MAX)
		return -1;
	out->name = calloc(pairs, sizeof(*out->name));
	out->value = calloc(pairs, sizeof(*out->value));
	out->vlen = calloc(pairs, sizeof(*out->vlen));
	if (!out->name || !out->value || !out->vlen) {
		store_rec_free(out);
		return -1;
	}
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
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
	if (out->n == 0)
		store_rec_free(out); /* an empty slot holds nothing: callers reuse it */
	return 0;
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
	key_idx(st, org, k2, sizeof(k2));
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
	key_idx(st, org, k2, sizeof(k2));
	r = store_eval(st, STORE_IDEM, &store_lua_sandbox_del, 4, argv, NULL, e);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
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

	key_idx(st, org, k2, sizeof(k2));
	snprintf(pfx, sizeof(pfx), "%s:{%s}:sb:", st->prefix, org);
	return store_index_records(st, k2, pfx, 1, recs, max, e);
}

int store_sandbox_ids(struct store *st, const char *org, char ***ids, int *n, struct sp_err *e)
{
	char k2[256];
	const char *argv[] = { "ZREVRANGE", k2, "0", "-1" };
	redisReply *r;

	key_idx(st, org, k2, sizeof(k2));
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

	key_idx(st, org, k2, sizeof(k2));
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
	key_idx(st, org, k2, sizeof(k2));
	snprintf(pfx, sizeof(pfx), "%s:{%s}:sb:", st->prefix, org);
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
	snprintf(k, sizeof(k), "%s:rate:{%s}", st->prefix, key_id);
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

	snprintf(k1, sizeof(k1), "%s:key:%s", st->prefix, hash);
	snprintf(k2, sizeof(k2), "%s:keyid:%s", st->prefix, key_id);
	snprintf(k3, sizeof(k3), "%s:orgs", st->prefix);
	snprintf(k4, sizeof(k4), "%s:{%s}:keys", st->prefix, org);
	snprintf(now, sizeof(now), "%lld", (long long)now_ms());
	/* createdAt is fixed above */
	r = store_eval(st, STORE_IDEM, &store_lua_key_put, 10, argv, NULL, e);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

int store_hgetall(struct store *st, const char *key, struct store_rec *out, enum sp_code missing,
		  const char *msg, struct sp_err *e)
{
	const char *argv[] = { "HGETALL", key };
	redisReply *r;
	int rc;

	memset(out, 0, sizeof(*out));
	r = store_cmd_kind(st, STORE_READ, 2, argv, NULL, e);
	if (!r)
		return -1;
	rc = store_rec_from_reply(r, out);
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
	return store_hgetall(st, k1, out, SP_UNAUTHORIZED, "Invalid API key", e);
}

int store_key_revoke(struct store *st, const char *key_id, struct sp_err *e)
{
	char k1[256], pfx[128], pfx2[128];
	const char *argv[] = { "1", k1, pfx, pfx2, key_id };
	redisReply *r;
	long long n;

	snprintf(k1, sizeof(k1), "%s:keyid:%s", st->prefix, key_id);
	snprintf(pfx, sizeof(pfx), "%s:key:", st->prefix);
	snprintf(pfx2, sizeof(pfx2), "%s:", st->prefix);
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

	snprintf(k1, sizeof(k1), "%s:{%s}:keys", st->prefix, org);
	snprintf(pfx, sizeof(pfx), "%s:keyid:", st->prefix);
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

	snprintf(k, sizeof(k), "%s:orgs", st->prefix);
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

	snprintf(k, sizeof(k), "%s:orgs", st->prefix);
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

	snprintf(k, sizeof(k), "%s:orgs", st->prefix);
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

/* A simple command with up to 6 arguments and an integer or status answer. */
static int simple_kind(struct store *st, enum store_kind kind, int argc, const char **argv,
		       long long *out, struct sp_err *e)
{
	redisReply *r = store_cmd_kind(st, kind, argc, argv, NULL, e);

	if (!r)
		return -1;
	if (out)
		*out = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
	freeReplyObject(r);
	return 0;
}

/* The same, never sent twice (STORE_ONCE). */
static int simple(struct store *st, int argc, const char **argv, long long *out, struct sp_err *e)
{
	return simple_kind(st, STORE_ONCE, argc, argv, out, e);
}

int store_role_put(struct store *st, const char *org, const char *name, const char *perms,
		   struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HSET", k, name, perms };

	snprintf(k, sizeof(k), "%s:{%s}:roles", st->prefix, org);
	return simple_kind(st, STORE_IDEM, 4, argv, NULL, e);
}

int store_role_get(struct store *st, const char *org, const char *name, char **perms,
		   struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HGET", k, name };
	redisReply *r;

	snprintf(k, sizeof(k), "%s:{%s}:roles", st->prefix, org);
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

	snprintf(k, sizeof(k), "%s:{%s}:roles", st->prefix, org);
	/* ONCE: run twice, a delete that applied answers "no such role" */
	if (simple(st, 3, argv, &n, e) < 0)
		return -1;
	return n ? 0 : sp_err_set(e, SP_NOT_FOUND, "No role %s in %s", name, org);
}

int store_role_list(struct store *st, const char *org, struct store_rec *out, struct sp_err *e)
{
	char k[256];

	snprintf(k, sizeof(k), "%s:{%s}:roles", st->prefix, org);
	return store_hgetall(st, k, out, SP_OK, NULL, e);
}

int store_quota_set(struct store *st, const char *org, int64_t sandboxes, int64_t cpu_milli,
		    int64_t memory_mb, int64_t max_lifetime_ms, struct sp_err *e)
{
	static const char *const names[] = { "sandboxes", "cpuMilli", "memoryMb", "maxLifetimeMs" };
	int64_t vals[] = { sandboxes, cpu_milli, memory_mb, max_lifetime_ms };
	char k[256], v[32];

	snprintf(k, sizeof(k), "%s:{%s}:quota", st->prefix, org);
	for (int i = 0; i < 4; i++) {
		const char *hset[] = { "HSET", k, names[i], v };
		const char *hdel[] = { "HDEL", k, names[i] };
		if (vals[i] < 0)
			continue;
		snprintf(v, sizeof(v), "%lld", (long long)vals[i]);
		if (simple_kind(st, STORE_IDEM, vals[i] ? 4 : 3, vals[i] ? hset : hdel, NULL, e) <
		    0)
			return -1;
	}
	return 0;
}

int store_quota_get(struct store *st, const char *org, struct store_rec *out, struct sp_err *e)
{
	char k[256];

	snprintf(k, sizeof(k), "%s:{%s}:quota", st->prefix, org);
	return store_hgetall(st, k, out, SP_OK, NULL, e);
}

int store_reserve(struct store *st, const char *org, const char *id, int64_t deadline_ms,
		  int64_t cpu_milli, int64_t memory_mb, char *msg, size_t msglen, struct sp_err *e)
{
	char k1[256], k2[256], now[32], c[32], m[32], d[32];
	const char *argv[] = { "2", k1, k2, now, id, c, m, d };
	redisReply *r;
	int rc = 0;

	snprintf(k1, sizeof(k1), "%s:{%s}:quota", st->prefix, org);
	snprintf(k2, sizeof(k2), "%s:{%s}:resv", st->prefix, org);
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

	snprintf(k, sizeof(k), "%s:{%s}:resv", st->prefix, org);
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

/* SET <prefix>:<space>:<id> value EX ttl_s (at least 1 s). */
static int string_set(struct store *st, const char *space, const char *id, const char *value,
		      int64_t ttl_s, struct sp_err *e)
{
	char k[256], ttl[32];
	const char *argv[] = { "SET", k, value, "EX", ttl };

	snprintf(k, sizeof(k), "%s:%s:%s", st->prefix, space, id);
	snprintf(ttl, sizeof(ttl), "%lld", (long long)(ttl_s > 0 ? ttl_s : 1));
	return simple_kind(st, STORE_IDEM, 5, argv, NULL, e);
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

	snprintf(k, sizeof(k), "%s:%s:%s", st->prefix, space, id);
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

	snprintf(k, sizeof(k), "%s:pv:%s", st->prefix, uid);
	return simple_kind(st, STORE_IDEM, 2, argv, NULL, e);
}

int store_install_id(struct store *st, const char *fresh, char *out, size_t cap, struct sp_err *e)
{
	char k[256];
	const char *set[] = { "SET", k, fresh, "NX" };
	const char *get[] = { "GET", k };
	redisReply *r;
	int rc = -1;

	snprintf(k, sizeof(k), "%s:install", st->prefix);
	if (simple_kind(st, STORE_IDEM, 4, set, NULL, e) < 0)
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

	snprintf(k, sizeof(k), "%s:lock:%s", st->prefix, name);
	snprintf(ttl, sizeof(ttl), "%lld", (long long)(ttl_ms > 0 ? ttl_ms : 1));
	r = store_cmd_kind(st, STORE_ONCE, 6, argv, NULL, e);
	if (!r)
		return -1;
	rc = r->type == REDIS_REPLY_STATUS ? 1 : 0;
	freeReplyObject(r);
	return rc;
}

int store_release(struct store *st, const char *org, const char *id, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HDEL", k, id };

	snprintf(k, sizeof(k), "%s:{%s}:resv", st->prefix, org);
	return simple_kind(st, STORE_IDEM, 3, argv, NULL, e); /* the count is ignored */
}

int store_server_put(struct store *st, const char *id, const char *json, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HSET", k, id, json };

	snprintf(k, sizeof(k), "%s:servers", st->prefix);
	return simple(st, 4, argv, NULL, e);
}

int store_server_get(struct store *st, const char *id, char **json, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HGET", k, id };
	redisReply *r;

	snprintf(k, sizeof(k), "%s:servers", st->prefix);
	*json = NULL;
	r = store_cmd(st, 3, argv, NULL, e);
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

	snprintf(k, sizeof(k), "%s:servers", st->prefix);
	if (simple(st, 3, argv, &n, e) < 0)
		return -1;
	return n ? 0 : sp_err_set(e, SP_NOT_FOUND, "Server %s not found", id);
}

int store_server_list(struct store *st, struct store_rec *out, struct sp_err *e)
{
	char k[256];

	snprintf(k, sizeof(k), "%s:servers", st->prefix);
	return store_hgetall(st, k, out, SP_OK, NULL, e);
}

/* KEYS: the candidates' reservation hashes. ARGV: now, id, cpu, mem,
 * deadline. Returns the index (1-based) of the chosen one. */
/* --- org-scoped JSON records (snapshots): <p>:{<org>}:<kind>, a hash of
 * id -> JSON text; no TTL (they last until deleted) --------------------- */

static void key_objs(const struct store *st, const char *org, const char *kind, char *out,
		     size_t cap)
{
	snprintf(out, cap, "%s:{%s}:%s", st->prefix, org, kind);
}

int store_obj_put(struct store *st, const char *org, const char *kind, const char *id,
		  const char *json, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "HSET", k, id, json };

	key_objs(st, org, kind, k, sizeof(k));
	return simple(st, 4, argv, NULL, e);
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

int store_unlock(struct store *st, const char *name, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "DEL", k };

	snprintf(k, sizeof(k), "%s:lock:%s", st->prefix, name);
	return simple(st, 2, argv, NULL, e);
}

int store_locked(struct store *st, const char *name, struct sp_err *e)
{
	char k[256];
	const char *argv[] = { "EXISTS", k };
	long long n = 0;

	snprintf(k, sizeof(k), "%s:lock:%s", st->prefix, name);
	if (simple_kind(st, STORE_READ, 2, argv, &n, e) < 0)
		return -1;
	return n > 0;
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
		snprintf(keys[i], sizeof(keys[i]), "%s:srv:%s:resv", st->prefix, candidates[i]);
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

	snprintf(k, sizeof(k), "%s:srv:%s:resv", st->prefix, server && *server ? server : "local");
	return simple(st, 3, argv, NULL, e);
}

int store_server_load(struct store *st, const char *server, int64_t *sandboxes, int64_t *cpu_milli,
		      int64_t *memory_mb, struct sp_err *e)
{
	struct store_rec rec = { 0 };
	char k[256];
	int64_t now = now_ms();

	*sandboxes = *cpu_milli = *memory_mb = 0;
	snprintf(k, sizeof(k), "%s:srv:%s:resv", st->prefix, server);
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

int store_pool_claim(struct store *st, const char *pool, int64_t min_expiry_ms, char *member,
		     size_t cap, struct sp_err *e)
{
	char key[300], claims[320], limit[32];
	const char *argv[] = { "2", key, claims, limit };
	redisReply *r;
	int got = 0;

	snprintf(key, sizeof(key), "%s:pool:%s", st->prefix, pool);
	snprintf(claims, sizeof(claims), "%s:pool:%s:claims", st->prefix, pool);
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

	snprintf(key, sizeof(key), "%s:pool:%s", st->prefix, pool);
	snprintf(score, sizeof(score), "%lld", (long long)expiry_ms);
	return simple(st, 4, argv, NULL, e);
}

int store_pool_fill_begin(struct store *st, const char *pool, int64_t min_expiry_ms, int size,
			  struct sp_err *e)
{
	char key[300], fill[320], limit[32], sz[16];
	const char *argv[] = { "2", key, fill, limit, sz };
	redisReply *r;
	int go;

	snprintf(key, sizeof(key), "%s:pool:%s", st->prefix, pool);
	snprintf(fill, sizeof(fill), "%s:pool:%s:filling", st->prefix, pool);
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

	snprintf(fill, sizeof(fill), "%s:pool:%s:filling", st->prefix, pool);
	return simple(st, 2, argv, NULL, e);
}

int store_pool_size(struct store *st, const char *pool, int64_t min_expiry_ms, struct sp_err *e)
{
	char key[300], lo[32];
	const char *argv[] = { "ZCOUNT", key, lo, "+inf" };
	long long n = 0;

	snprintf(key, sizeof(key), "%s:pool:%s", st->prefix, pool);
	snprintf(lo, sizeof(lo), "%lld", (long long)min_expiry_ms);
	if (simple(st, 4, argv, &n, e) < 0)
		return -1;
	return (int)n;
}

int store_sandbox_field(struct store *st, const char *org, const char *id, const char *field,
			struct buf *out, struct sp_err *e)
{
	char k1[256];
	const char *argv[] = { "HGET", k1, field };
	redisReply *r;
	int rc = 0;

	key_sb(st, org, id, k1, sizeof(k1));
	r = store_cmd(st, 3, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_STRING && buf_append(out, r->str, r->len) < 0)
		rc = sp_err_set(e, SP_INTERNAL, "record field too large");
	freeReplyObject(r);
	return rc;
}

long long store_pool_claims(struct store *st, const char *pool, struct sp_err *e)
{
	char key[320];
	const char *argv[] = { "GET", key };
	redisReply *r;
	long long n = 0;

	snprintf(key, sizeof(key), "%s:pool:%s:claims", st->prefix, pool);
	r = store_cmd(st, 2, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_STRING)
		parse_ll(r->str, 0, 1LL << 62, &n);
	freeReplyObject(r);
	return n;
}

/* --- the Idempotency-Key replay ledger (/v1) ------------------------------- */

static void key_idem(const struct store *st, const char *org, const char *op, const char *khash,
		     char *out, size_t cap)
{
	snprintf(out, cap, "%s:{%s}:idem:%s:%s", st->prefix, org, op, khash);
}

/* A reply element's string into out; "" when it is not a string. */
static void reply_str(const redisReply *r, char *out, size_t cap)
{
	str_copy(out, cap, r->type == REDIS_REPLY_STRING ? r->str : "");
}

int store_idem_begin(struct store *st, const char *org, const char *op, const char *khash,
		     const char *payload, int64_t lease_s, const struct store_idem_owner *mine,
		     struct store_idem_owner *seen, int *status, struct buf *body, struct sp_err *e)
{
	char k[512], lease[32], until[32];
	const char *argv[] = { "1", k, payload, lease, mine->rid, mine->owner, until };
	redisReply *r;
	int rc = -1;

	key_idem(st, org, op, khash, k, sizeof(k));
	snprintf(lease, sizeof(lease), "%lld", (long long)lease_s);
	snprintf(until, sizeof(until), "%lld", (long long)mine->until_ms);
	memset(seen, 0, sizeof(*seen));
	/* not sent twice: a second "new" is "pending" */
	r = store_eval(st, STORE_ONCE, &store_lua_idem_begin, 7, argv, NULL, e);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
	    r->element[0]->type == REDIS_REPLY_STRING) {
		const char *s = r->element[0]->str;
		if (strcmp(s, "new") == 0)
			rc = STORE_IDEM_NEW;
		else if (strcmp(s, "mismatch") == 0)
			rc = STORE_IDEM_MISMATCH;
		else if (strcmp(s, "pending") == 0) {
			char u[32];
			long long n = 0;
			rc = STORE_IDEM_PENDING;
			if (r->elements == 4) {
				reply_str(r->element[1], seen->rid, sizeof(seen->rid));
				reply_str(r->element[2], seen->owner, sizeof(seen->owner));
				reply_str(r->element[3], u, sizeof(u));
				if (parse_ll(u, 0, 1LL << 62, &n) == 0)
					seen->until_ms = n;
			}
		} else if (strcmp(s, "done") == 0 && r->elements == 3 &&
			   r->element[1]->type == REDIS_REPLY_STRING &&
			   r->element[2]->type == REDIS_REPLY_STRING) {
			long long n;
			if (parse_ll(r->element[1]->str, 100, 599, &n) == 0 &&
			    buf_append(body, r->element[2]->str, r->element[2]->len) == 0) {
				*status = (int)n;
				rc = STORE_IDEM_DONE;
			}
		}
	}
	freeReplyObject(r);
	if (rc < 0)
		return sp_err_set(e, SP_INTERNAL, "bad idempotency entry");
	return rc;
}

int store_idem_claim(struct store *st, const char *org, const char *op, const char *khash,
		     const char *seen_owner, const struct store_idem_owner *mine, struct sp_err *e)
{
	char k[512], until[32];
	const char *argv[] = { "1", k, seen_owner, mine->owner, until };
	redisReply *r;
	int rc;

	key_idem(st, org, op, khash, k, sizeof(k));
	snprintf(until, sizeof(until), "%lld", (long long)mine->until_ms);
	r = store_eval(st, STORE_ONCE, &store_lua_idem_claim, 5, argv, NULL, e);
	if (!r)
		return -1;
	rc = r->type == REDIS_REPLY_INTEGER && r->integer == 1 ? 0 : 1;
	freeReplyObject(r);
	return rc;
}

int store_idem_finish(struct store *st, const char *org, const char *op, const char *khash,
		      int status, const char *body, size_t len, int64_t ttl_s, struct sp_err *e)
{
	char k[512], ttl[32], sts[16];
	const char *argv[] = { "1", k, sts, body, ttl };
	size_t lens[5];
	redisReply *r;

	key_idem(st, org, op, khash, k, sizeof(k));
	snprintf(ttl, sizeof(ttl), "%lld", (long long)ttl_s);
	snprintf(sts, sizeof(sts), "%d", status);
	for (int i = 0; i < 5; i++)
		lens[i] = i == 3 ? len : strlen(argv[i]);
	r = store_eval(st, STORE_ONCE, &store_lua_idem_finish, 5, argv, lens, e);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

int store_idem_abort(struct store *st, const char *org, const char *op, const char *khash,
		     const char *owner, struct sp_err *e)
{
	char k[512];
	const char *argv[] = { "1", k, owner };
	redisReply *r;

	key_idem(st, org, op, khash, k, sizeof(k));
	r = store_eval(st, STORE_ONCE, &store_lua_idem_abort, 3, argv, NULL, e);
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}
