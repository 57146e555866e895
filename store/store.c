/*
 * Redis store over hiredis, its connection: see store.h; the families of
 * records are the files beside this one (store_int.h lists them), the Lua
 * programs store/lua. A connection found closed before a
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
	unsigned long conn;  /* counts the connections made (a Lua program loaded on one) */
};

const char *store_prefix(const struct store *st)
{
	return st->prefix;
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
	st->conn++;
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
 * the command once more (it did not run either), once per connection (a
 * failover may meet a server without it again). The caller frees the
 * reply. Returns NULL with e set (SP_UNAVAILABLE). */
static redisReply *run_cmd(struct store *st, enum store_kind kind, const struct store_lua *prog,
			   int argc, const char **argv, const size_t *lens, struct sp_err *e)
{
	int64_t start = mono_ms(), until = start + 5000, failover = start + STORE_FAILOVER_MS;
	int resent = 0, moved = 0, loads = 0, unconfirmed;
	unsigned long loaded = 0; /* the connection prog was loaded on */
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
		if (r->type == REDIS_REPLY_ERROR && prog && loaded != st->conn && loads++ < 3 &&
		    strncmp(r->str, "NOSCRIPT", 8) == 0) {
			/* once per server: a failover may find another without it */
			log_info("redis: Lua program %s not loaded there; loading it", prog->name);
			freeReplyObject(r);
			loaded = st->conn;
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

/* --- answers into records (struct store_rec), for every family ------- */

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

int store_ping(struct store *st, struct sp_err *e)
{
	const char *argv[] = { "PING" };
	redisReply *r = store_cmd_kind(st, STORE_READ, 1, argv, NULL, e);

	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

int store_simple(struct store *st, enum store_kind kind, int argc, const char **argv,
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
