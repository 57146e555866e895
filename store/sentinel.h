/*
 * Redis Sentinel discovery, internal to store/: which server is the master
 * of a named group right now. Asks each sentinel in turn (short timeouts,
 * the one that answered last goes first), connects to the address it names
 * and keeps the connection only if ROLE says "master"; a replica or an
 * unreachable address is a stale answer and the next sentinel is asked.
 * Never blocks past the caller's deadline. Knows nothing of records.
 */
#ifndef SANDPIT_STORE_SENTINEL_H
#define SANDPIT_STORE_SENTINEL_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis.h>

#include "../common/err.h"

#define SENTINEL_MAX 8

struct sentinel {
	int n;
	int first; /* index of the sentinel that answered last: asked first */
	char host[SENTINEL_MAX][256];
	int port[SENTINEL_MAX];
	char name[128];
	char master[256]; /* the master last found, "host:port" (for logs) */
};

/* Parses "host:port,host:port,..." (len bytes; an IPv6 host in [brackets])
 * and the master name into sn. Returns 0, or -1 on a bad list or name. */
int sentinel_parse(struct sentinel *sn, const char *list, size_t len, const char *name,
		   size_t namelen);

/* Finds the current master and connects to it; tries until deadline
 * (mono_ms). Returns a new connection (the caller frees it with redisFree),
 * or NULL with e set to SP_UNAVAILABLE. */
redisContext *sentinel_connect(struct sentinel *sn, int64_t deadline, struct sp_err *e);

/* The answer to SENTINEL get-master-addr-by-name: 0 and host/port filled
 * when it is [host, port], -1 otherwise (nil: the name is unknown). */
int sentinel_addr_from_reply(const redisReply *r, char *host, size_t cap, int *port);

/* The answer to ROLE: 1 when it is a master's, 0 for a replica's or a
 * sentinel's, -1 when it is not a ROLE answer at all. */
int sentinel_role_is_master(const redisReply *r);

#endif
