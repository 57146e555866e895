/*
 * Redis Sentinel discovery (see sentinel.h), following the Redis guidelines
 * for Sentinel clients: ask the sentinels in turn, prefer the last one that
 * answered, and trust an address only after ROLE on it says "master" (a
 * sentinel may still name a master that was just demoted or died). Each
 * step has a short timeout and the whole search ends at the caller's
 * deadline, so a worker never hangs on a failover. Never writes anything.
 */
#include "sentinel.h"

#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "../common/log.h"
#include "../common/util.h"

/* Per-step limits: connecting to a sentinel or to a candidate master, and
 * waiting for one answer. A healthy sentinel answers in well under these. */
#define SENTINEL_CONNECT_MS 250
#define SENTINEL_ANSWER_MS 500
#define SENTINEL_PAUSE_MS 150

static int parse_hostport(const char *s, size_t len, char *host, size_t cap, int *port)
{
	const char *colon = NULL, *hs = s, *he;
	char num[8];
	long long n;

	for (size_t i = len; i > 0; i--)
		if (s[i - 1] == ':') {
			colon = s + i - 1;
			break;
		}
	if (!colon)
		return -1;
	he = colon;
	if (len > 0 && s[0] == '[') {
		if (he - hs < 2 || he[-1] != ']')
			return -1;
		hs++;
		he--;
	}
	if (he == hs || (size_t)(he - hs) >= cap)
		return -1;
	for (const char *p = hs; p < he; p++)
		if (*p == '/' || *p == ',' || *p == ' ' || *p == '?')
			return -1;
	size_t plen = len - (size_t)(colon + 1 - s);
	if (plen == 0 || plen >= sizeof(num))
		return -1;
	memcpy(num, colon + 1, plen);
	num[plen] = '\0';
	if (parse_ll(num, 1, 65535, &n) < 0)
		return -1;
	memcpy(host, hs, (size_t)(he - hs));
	host[he - hs] = '\0';
	*port = (int)n;
	return 0;
}

int sentinel_parse(struct sentinel *sn, const char *list, size_t len, const char *name,
		   size_t namelen)
{
	const char *p = list, *end = list + len;

	memset(sn, 0, sizeof(*sn));
	if (namelen == 0 || namelen >= sizeof(sn->name))
		return -1;
	for (size_t i = 0; i < namelen; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return -1;
	}
	memcpy(sn->name, name, namelen);
	sn->name[namelen] = '\0';
	for (;;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *q = comma ? comma : end;
		while (p < q && *p == ' ')
			p++;
		size_t l = (size_t)(q - p);
		while (l > 0 && p[l - 1] == ' ')
			l--;
		if (sn->n == SENTINEL_MAX ||
		    parse_hostport(p, l, sn->host[sn->n], sizeof(sn->host[0]), &sn->port[sn->n]) <
			    0)
			return -1;
		sn->n++;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

int sentinel_addr_from_reply(const redisReply *r, char *host, size_t cap, int *port)
{
	char num[8];
	long long n;

	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
		return -1;
	if (r->element[0]->len == 0 || r->element[0]->len >= cap ||
	    memchr(r->element[0]->str, '\0', r->element[0]->len) || r->element[1]->len == 0 ||
	    r->element[1]->len >= sizeof(num))
		return -1;
	memcpy(num, r->element[1]->str, r->element[1]->len);
	num[r->element[1]->len] = '\0';
	if (parse_ll(num, 1, 65535, &n) < 0)
		return -1;
	memcpy(host, r->element[0]->str, r->element[0]->len);
	host[r->element[0]->len] = '\0';
	*port = (int)n;
	return 0;
}

int sentinel_role_is_master(const redisReply *r)
{
	const redisReply *k;

	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1)
		return -1;
	k = r->element[0];
	if (k->type != REDIS_REPLY_STRING && k->type != REDIS_REPLY_STATUS)
		return -1;
	if (k->len == 6 && memcmp(k->str, "master", 6) == 0)
		return 1;
	if ((k->len == 5 && memcmp(k->str, "slave", 5) == 0) ||
	    (k->len == 7 && memcmp(k->str, "replica", 7) == 0) ||
	    (k->len == 8 && memcmp(k->str, "sentinel", 8) == 0))
		return 0;
	return -1;
}

static struct timeval ms_tv(int64_t ms)
{
	struct timeval tv;

	if (ms < 1)
		ms = 1;
	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)((ms % 1000) * 1000);
	return tv;
}

static int64_t step(int64_t limit, int64_t deadline)
{
	int64_t left = deadline - mono_ms();
	return left < limit ? left : limit;
}

/* A connection to host:port within the step limits, or NULL (why in err). */
static redisContext *dial(const char *host, int port, int64_t deadline, char *err, size_t cap)
{
	redisContext *c;
	int64_t ms = step(SENTINEL_CONNECT_MS, deadline);

	if (ms <= 0) {
		snprintf(err, cap, "out of time");
		return NULL;
	}
	c = redisConnectWithTimeout(host, port, ms_tv(ms));
	if (!c || c->err) {
		snprintf(err, cap, "%s:%d: %s", host, port, c ? c->errstr : "out of memory");
		if (c)
			redisFree(c);
		return NULL;
	}
	ms = step(SENTINEL_ANSWER_MS, deadline);
	if (ms <= 0 || redisSetTimeout(c, ms_tv(ms)) != REDIS_OK) {
		snprintf(err, cap, "out of time");
		redisFree(c);
		return NULL;
	}
	return c;
}

/* Asks sentinel i for the master; on success host/port are filled. */
static int ask(struct sentinel *sn, int i, int64_t deadline, char *host, size_t cap, int *port,
	       char *err, size_t errcap)
{
	redisContext *c = dial(sn->host[i], sn->port[i], deadline, err, errcap);
	redisReply *r;
	int rc;

	if (!c)
		return -1;
	r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", sn->name);
	if (!r) {
		snprintf(err, errcap, "sentinel %s:%d: %s", sn->host[i], sn->port[i], c->errstr);
		redisFree(c);
		return -1;
	}
	rc = sentinel_addr_from_reply(r, host, cap, port);
	if (rc < 0)
		snprintf(err, errcap, "sentinel %s:%d knows no master named %s%s%s", sn->host[i],
			 sn->port[i], sn->name, r->type == REDIS_REPLY_ERROR ? ": " : "",
			 r->type == REDIS_REPLY_ERROR ? r->str : "");
	freeReplyObject(r);
	redisFree(c);
	return rc;
}

redisContext *sentinel_connect(struct sentinel *sn, int64_t deadline, struct sp_err *e)
{
	char host[256], err[512] = "no sentinel configured";
	int port, rounds = 0;

	while (mono_ms() < deadline) {
		for (int k = 0; k < sn->n && mono_ms() < deadline; k++) {
			int i = (sn->first + k) % sn->n, role;
			redisContext *m;
			redisReply *r;

			if (ask(sn, i, deadline, host, sizeof(host), &port, err, sizeof(err)) < 0)
				continue;
			m = dial(host, port, deadline, err, sizeof(err));
			if (!m)
				continue; /* a stale answer: the named master is gone */
			r = redisCommand(m, "ROLE");
			role = sentinel_role_is_master(r);
			if (role == 1) {
				char now[sizeof(sn->master)];
				freeReplyObject(r);
				snprintf(now, sizeof(now), "%s:%d", host, port);
				if (strcmp(now, sn->master) != 0)
					log_info("redis master of %s is %s (sentinel %s:%d)",
						 sn->name, now, sn->host[i], sn->port[i]);
				str_copy(sn->master, sizeof(sn->master), now);
				sn->first = i;
				return m;
			}
			snprintf(err, sizeof(err),
				 "%s:%d named by sentinel %s:%d is not a master (%s)", host, port,
				 sn->host[i], sn->port[i],
				 !r				? m->errstr
				 : r->type == REDIS_REPLY_ERROR ? r->str
				 : r->type == REDIS_REPLY_ARRAY && r->elements &&
						 r->element[0]->type == REDIS_REPLY_STRING
					 ? r->element[0]->str
					 : "no ROLE answer");
			if (r)
				freeReplyObject(r);
			redisFree(m);
		}
		rounds++;
		int64_t ms = step(SENTINEL_PAUSE_MS, deadline);
		if (ms > 0) {
			struct timespec ts = { 0, (long)ms * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	log_warn("redis master of %s not found after %d rounds of %d sentinels: %s", sn->name,
		 rounds, sn->n, err);
	sp_err_set(e, SP_UNAVAILABLE, "Redis is unavailable");
	return NULL;
}
