/*
 * Private to store/: what its families (records.c, indexes.c, keys.c,
 * quotas.c, servers.c, pools.c, idem.c, locks.c, session.c, volume.c)
 * need of the connection (store.c): the one command runner with its retry
 * rules, the runner of the Lua programs (the files of store/lua, embedded
 * as lua_programs.h), the key prefix; and the few helpers two families
 * share. Nothing outside store/ includes this.
 */
#ifndef SANDPIT_STORE_INT_H
#define SANDPIT_STORE_INT_H

#include <stddef.h>

#include "lua_programs.h"
#include "store.h"

struct redisReply;

/* What a command may do after its answer was lost. */
enum store_kind {
	STORE_READ, /* reads (a script may also drop expired index members): sent again */
	STORE_IDEM, /* a write that leaves the same state and gives the same answer when
		       applied twice (HSET of given values, SADD, whole-record put): sent again */
	STORE_ONCE, /* a write whose second run would answer differently (a status
		       compare-and-set, a delete that reports whether it found something):
		       never sent again after an ambiguous failure */
};

/* Runs one command of the given kind (store.c explains the retries). The
 * caller frees the reply; NULL with e set (SP_UNAVAILABLE). */
struct redisReply *store_cmd_kind(struct store *st, enum store_kind kind, int argc,
				  const char **argv, const size_t *lens, struct sp_err *e);
/* Runs a Lua program of store/lua/ as store_cmd_kind runs a command, by
 * EVALSHA: argv is EVALSHA's arguments after the digest (the number of
 * keys, the keys, the arguments), lens their lengths or NULL. A server
 * that does not have the program (NOSCRIPT: restarted, failed over, SCRIPT
 * FLUSH) is given it (SCRIPT LOAD) and asked once more, whatever the
 * kind: the program did not run (once per connection: a failover may
 * meet another server without it). The caller frees the reply; NULL with
 * e set. */
struct redisReply *store_eval(struct store *st, enum store_kind kind, const struct store_lua *prog,
			      int argc, const char **argv, const size_t *lens, struct sp_err *e);
/* A command whose answer is an integer (into out when not NULL; 0 for
 * any other answer) or a status. 0, -1 with e set. */
int store_simple(struct store *st, enum store_kind kind, int argc, const char **argv,
		 long long *out, struct sp_err *e);
/* HGETALL of one key into out; when it is empty and msg is not NULL, an
 * error of code missing with msg. */
int store_hgetall(struct store *st, const char *key, struct store_rec *out, enum sp_code missing,
		  const char *msg, struct sp_err *e);
/* The records (at most max) a sorted-set index names, newest first or
 * oldest first, each at prefix + member; members whose record expired
 * are dropped from the index. The count, -1 with e set. */
int store_index_records(struct store *st, const char *index, const char *prefix, int newest,
			struct store_rec *recs, int max, struct sp_err *e);
/* The key of an org's sandbox index (indexes.c). */
void store_key_index(const struct store *st, const char *org, char *out, size_t cap);
/* The key prefix ("sandpit"). */
const char *store_prefix(const struct store *st);

#endif
