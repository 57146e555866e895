/*
 * Redis store: one connection per worker (created after fork), rebuilt when
 * it breaks; LOADING answers are retried. Threads: every function is safe
 * from any thread on a struct store no other thread uses at the time (no
 * process-wide state here). Knows Redis and the key layout,
 * nothing of HTTP or Docker. Every key of an organization carries the org in
 * a hash tag ({org}) so Redis Cluster can keep them in one slot. Records are
 * hashes of string fields; multi-key changes are MULTI/EXEC or Lua.
 *
 *   <p>:{<org>}:sb:<id>   hash  a sandbox record (TTL = deadline + retention)
 *   <p>:{<org>}:sbs       zset  the org's sandbox ids, scored by createdAt
 *   <p>:{<org>}:keys      set   the org's key ids
 *   <p>:{<org>}:roles     hash  custom role name -> comma-separated permissions
 *   <p>:{<org>}:quota     hash  sandboxes, cpuMilli, memoryMb (absent or 0 = no limit)
 *   <p>:{<org>}:resv      hash  sandbox id -> "deadlineMs cpuMilli memoryMb" reserved
 *   <p>:key:<hash>        hash  an API key: org, role, keyId, createdAt
 *   <p>:keyid:<keyId>     hash  hash, org, role, createdAt (for listing and revocation)
 *   <p>:orgs              set   organization names
 *   <p>:pv:<uid>          string "<org> <sandbox>" of a published port (preview URLs)
 *   <p>:servers           hash  server id -> its record as JSON
 *   <p>:srv:<id>:resv     hash  sandbox id -> "deadlineMs cpuMilli memoryMb" on that server
 *   <p>:{<org>}:snaps     hash  snapshot id -> its record as JSON (sandbox/snapshot.c)
 *   <p>:pool:<pool>       zset  "containerId sandboxId expiryMs" of warm containers, scored by expiry
 *   <p>:pool:<pool>:filling  string  fills in progress (expires)
 *   <p>:pool:<pool>:claims   string  containers claimed so far
 */
#ifndef SANDPIT_STORE_H
#define SANDPIT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"
#include "../common/err.h"

struct store;

/* A record: parallel arrays of field names and values, owned by the
 * record and as long as the hash read (a read never drops a field). Start
 * one zeroed ({ 0 }); store_rec_free frees it and leaves it zeroed. */
struct store_rec {
	int n;
	char **name;
	char **value;
	size_t *vlen;
};
/* The most fields one write (put or update) may carry; past it the write
 * fails naming this limit. */
#define STORE_MAX_FIELDS 48
void store_rec_free(struct store_rec *r);
/* Value of a field, or NULL. */
const char *store_rec_get(const struct store_rec *r, const char *name);
struct redisReply;
/* Fills out (taken as empty: it is overwritten, not freed) from an
 * HGETALL-shaped reply, every field of it; allocates (store_rec_free).
 * -1 (out empty) when the reply is not an array or memory runs out. */
int store_rec_from_reply(const struct redisReply *r, struct store_rec *out);

/* Parses url (redis://host:port[/db] or unix:///path), does no I/O yet.
 * Allocates; free with store_close. */
struct store *store_open(const char *url, const char *prefix, struct sp_err *e);
void store_close(struct store *st);
/* PING, connecting if needed. */
int store_ping(struct store *st, struct sp_err *e);

/* Sandbox records. put writes the whole record, its TTL and its index
 * entry at once. update changes the given fields (and the TTL when ttl_s >
 * 0) only if the record exists and, when expect_status is not NULL, only if
 * its status field equals it: returns 0 when applied, 1 when the condition
 * did not hold, -1 on error. get: SP_NOT_FOUND when absent. del removes the
 * record and its index entry. */
int store_sandbox_put(struct store *st, const char *org, const char *id, const char *const *kv,
		      int nkv, int64_t ttl_s, int64_t score, struct sp_err *e);
int store_sandbox_update(struct store *st, const char *org, const char *id,
			 const char *expect_status, const char *const *kv, int nkv, int64_t ttl_s,
			 struct sp_err *e);
/* Sets the kv pairs of a record only when each of the expect pairs (field,
 * value; an absent field reads "") holds, atomically: 0 set, 1 not (a
 * field differed), -1 (404 when the record is gone). */
int store_sandbox_update_if(struct store *st, const char *org, const char *id,
			    const char *const *expect, int nexpect, const char *const *kv, int nkv,
			    struct sp_err *e);
int store_sandbox_get(struct store *st, const char *org, const char *id, struct store_rec *out,
		      struct sp_err *e);
int store_sandbox_del(struct store *st, const char *org, const char *id, struct sp_err *e);
/* One field of a record into out (capped); 0 when absent (out empty). */
int store_sandbox_field(struct store *st, const char *org, const char *id, const char *field,
			struct buf *out, struct sp_err *e);
/* Lists up to max records of org, newest first; recs is an array of max
 * records the caller frees with store_rec_free. Index members whose record
 * has expired are dropped. Returns the count, or -1. */
int store_sandbox_list(struct store *st, const char *org, struct store_rec *recs, int max,
		       struct sp_err *e);
/* Every sandbox id in org's index, newest first: *ids is a new array of *n
 * new strings, freed with store_ids_free. */
int store_sandbox_ids(struct store *st, const char *org, char ***ids, int *n, struct sp_err *e);
/* One page of org's index, newest first: up to max ids strictly after the
 * member (after_score, after_id) (after_id NULL: from the newest), into
 * the caller's arrays of max (ids freed with store_ids_free_items). A
 * member removed meanwhile still places the page by its score. */
int store_sandbox_ids_page(struct store *st, const char *org, int64_t after_score,
			   const char *after_id, int max, char **ids, int64_t *scores, int *n,
			   struct sp_err *e);
void store_ids_free_items(char **ids, int n);
void store_ids_free(char **ids, int n);
/* The records of ids[0..n) in that order, into recs (n records the caller
 * frees with store_rec_free), leaving out (and dropping from the index)
 * those whose record has expired. Returns how many, or -1. */
int store_sandbox_get_many(struct store *st, const char *org, char *const *ids, int n,
			   struct store_rec *recs, struct sp_err *e);

/* Charges n calls at once to key_id's rate (per_min calls a minute, bursts
 * of burst, as nginx's limit_req ... nodelay): 1 taken, 0 refused (nothing
 * taken; *retry_ms says when they would fit), -1 Redis failed. per_min 0
 * takes everything. */
int store_rate_take(struct store *st, const char *key_id, int n, int per_min, int burst,
		    int64_t *retry_ms, struct sp_err *e);

/* Dashboard sessions by the keyed hash of their token (store/session.c):
 * put keeps the key hash and CSRF token for ttl_s; get answers 1 found
 * (and its remaining TTL in *ttl_s when not NULL), 0 none, -1 Redis failed. */
int store_session_put(struct store *st, const char *hash, const char *key_hash, const char *csrf,
		      int64_t ttl_s, struct sp_err *e);
int store_session_get(struct store *st, const char *hash, char *key_hash, size_t kcap, char *csrf,
		      size_t ccap, int64_t *ttl_s, struct sp_err *e);
int store_session_del(struct store *st, const char *hash, struct sp_err *e);

/* API keys, by keyed hash. get: SP_UNAUTHORIZED when unknown. list: the
 * org's keys (keyId, role, createdAt; never the hash), up to max. */
int store_key_put(struct store *st, const char *hash, const char *org, const char *role,
		  const char *key_id, struct sp_err *e);
int store_key_get(struct store *st, const char *hash, struct store_rec *out, struct sp_err *e);
int store_key_revoke(struct store *st, const char *key_id, struct sp_err *e);
int store_key_list(struct store *st, const char *org, struct store_rec *recs, int max,
		   struct sp_err *e);

/* Organizations. exists: 1 or 0 (-1 on error). list: names into a new
 * JSON-free array of strings the caller frees with free() each and the array. */
int store_org_add(struct store *st, const char *org, struct sp_err *e);
int store_org_exists(struct store *st, const char *org, struct sp_err *e);
int store_org_list(struct store *st, char ***names, int *n, struct sp_err *e);

/* Custom roles of an org. get: SP_NOT_FOUND when absent; perms is a new
 * string the caller frees. list fills a record (name -> perms). */
int store_role_put(struct store *st, const char *org, const char *name, const char *perms,
		   struct sp_err *e);
int store_role_get(struct store *st, const char *org, const char *name, char **perms,
		   struct sp_err *e);
int store_role_del(struct store *st, const char *org, const char *name, struct sp_err *e);
int store_role_list(struct store *st, const char *org, struct store_rec *out, struct sp_err *e);

/* Quotas. set: values < 0 leave a limit unchanged, 0 removes it. get
 * fills a record (sandboxes, cpuMilli, memoryMb; maxLifetimeMs, the hard
 * deadline's limit for the org's sandboxes, not a quota). reserve: atomically adds
 * a reservation for id if the org's live reservations plus this one stay
 * within its quota (reservations past their deadline are dropped first):
 * 0 = reserved, 1 = over quota (msg says which limit), -1 = error.
 * release: drops id's reservation (idempotent). */
int store_quota_set(struct store *st, const char *org, int64_t sandboxes, int64_t cpu_milli,
		    int64_t memory_mb, int64_t max_lifetime_ms, struct sp_err *e);
int store_quota_get(struct store *st, const char *org, struct store_rec *out, struct sp_err *e);
int store_reserve(struct store *st, const char *org, const char *id, int64_t deadline_ms,
		  int64_t cpu_milli, int64_t memory_mb, char *msg, size_t msglen, struct sp_err *e);
int store_release(struct store *st, const char *org, const char *id, struct sp_err *e);
/* The org's reservations: *ids (new strings, in a new array: free each and
 * the array) and *made (new array: when each was made, epoch ms, 0 if not
 * known), *n of them. */
int store_reservations(struct store *st, const char *org, char ***ids, int64_t **made, int *n,
		       struct sp_err *e);
/* The org of a sandbox whose container's labels cannot say it (one from a
 * warm pool, made before its org was known). get: 1 found, 0 none. */
int store_owner_set(struct store *st, const char *id, const char *org, int64_t ttl_s,
		    struct sp_err *e);
int store_owner_get(struct store *st, const char *id, char *org, size_t cap, struct sp_err *e);
/* This installation's id (one per Redis and key prefix): made from fresh
 * the first time, the stored one after. */
/* The preview index of published ports: uid -> "<org> <sandbox>" (TTL
 * ttl_s). get: 1 found (into out), 0 absent. */
int store_preview_set(struct store *st, const char *uid, const char *value, int64_t ttl_s,
		      struct sp_err *e);
int store_preview_get(struct store *st, const char *uid, char *out, size_t cap, struct sp_err *e);
int store_preview_del(struct store *st, const char *uid, struct sp_err *e);
/* A container's fast-path address (sandbox/fastpath.c), shared by every
 * worker so only the first asks Docker: container id -> IPv4 text (TTL
 * ttl_s). get: 1 found (into out), 0 absent. A cache only: the fast path's
 * handshake proves which container answers there. */
int store_fast_addr_set(struct store *st, const char *cid, const char *ip, int64_t ttl_s,
			struct sp_err *e);
int store_fast_addr_get(struct store *st, const char *cid, char *out, size_t cap, struct sp_err *e);
int store_install_id(struct store *st, const char *fresh, char *out, size_t cap, struct sp_err *e);
/* A lock that expires by itself: 1 taken (for ttl_ms), 0 someone holds it. */
int store_lock(struct store *st, const char *name, int64_t ttl_ms, struct sp_err *e);

/* Docker servers: records are JSON texts the caller parses. get:
 * SP_NOT_FOUND when absent; *json is new (free). list fills a record
 * (id -> JSON). */
int store_server_put(struct store *st, const char *id, const char *json, struct sp_err *e);
int store_server_get(struct store *st, const char *id, char **json, struct sp_err *e);
int store_server_del(struct store *st, const char *id, struct sp_err *e);
int store_server_list(struct store *st, struct store_rec *out, struct sp_err *e);
/* Org-scoped JSON records of one kind ("snaps": snapshots), a hash
 * <p>:{<org>}:<kind> of id -> JSON text, kept until deleted. get:
 * SP_NOT_FOUND when absent, *json new (free). cas: sets id's text to json
 * (NULL or "": deletes it) only while it is still expect: 0 done, 1 it
 * differed (or is gone). list fills a record (id -> JSON). */
int store_obj_put(struct store *st, const char *org, const char *kind, const char *id,
		  const char *json, struct sp_err *e);
int store_obj_cas(struct store *st, const char *org, const char *kind, const char *id,
		  const char *expect, const char *json, struct sp_err *e);
int store_obj_get(struct store *st, const char *org, const char *kind, const char *id, char **json,
		  struct sp_err *e);
int store_obj_list(struct store *st, const char *org, const char *kind, struct store_rec *out,
		   struct sp_err *e);
/* store_lock's lock dropped at once; locked: 1 while someone holds it. */
int store_unlock(struct store *st, const char *name, struct sp_err *e);
int store_locked(struct store *st, const char *name, struct sp_err *e);
/* Placement: among the candidate server ids, picks the one with the fewest
 * live reservations (then the least reserved CPU, then memory) and
 * reserves sandbox id on it, atomically. Writes the chosen id into out.
 * server_reserve: reserves on one given server. server_release drops it. */
int store_place(struct store *st, const char *const *candidates, int n, const char *id,
		int64_t deadline_ms, int64_t cpu_milli, int64_t memory_mb, char *out, size_t cap,
		struct sp_err *e);
int store_server_release(struct store *st, const char *server, const char *id, struct sp_err *e);
/* The live reservation count and reserved CPU (milli) and memory of a server. */
int store_server_load(struct store *st, const char *server, int64_t *sandboxes, int64_t *cpu_milli,
		      int64_t *memory_mb, struct sp_err *e);

/* Warm pools. claim: atomically pops the freshest container whose pool
 * expiry is at least min_expiry_ms (older ones are dropped) into member:
 * 1 got one, 0 empty, -1 error. fill_begin: 1 when the pool (live
 * containers plus fills in progress) is below size, and counts a fill in
 * progress; fill_end uncounts it. size: live containers. */
int store_pool_claim(struct store *st, const char *pool, int64_t min_expiry_ms, char *member,
		     size_t cap, struct sp_err *e);
int store_pool_add(struct store *st, const char *pool, int64_t expiry_ms, const char *member,
		   struct sp_err *e);
int store_pool_fill_begin(struct store *st, const char *pool, int64_t min_expiry_ms, int size,
			  struct sp_err *e);
int store_pool_fill_end(struct store *st, const char *pool, struct sp_err *e);
int store_pool_size(struct store *st, const char *pool, int64_t min_expiry_ms, struct sp_err *e);
/* How many containers were ever claimed from the pool. */
long long store_pool_claims(struct store *st, const char *pool, struct sp_err *e);

/* The Idempotency-Key replay ledger (/v1, RELIABILITY I1, I2): one entry
 * per (org, operation, keyed hash of the key), holding the payload's hash,
 * while pending the resource id the first request chose before any effect
 * (rid, "" when the operation makes none), its owner (the worker's
 * process identity and a nonce, common/proc.h) and until when it holds
 * the key for sure, and once the first request finished its status and
 * answer body. begin: a new entry is made "pending" from *mine for lease_s
 * (STORE_IDEM_NEW); the same payload again answers STORE_IDEM_PENDING
 * (*seen: the entry's rid, owner, until) while the first runs and
 * STORE_IDEM_DONE with *status and body (appended) after; another payload
 * STORE_IDEM_MISMATCH. claim: a retry takes a pending entry over from the
 * owner it saw (0; 1 when the entry changed meanwhile: another took it,
 * or it finished). finish: stores the answer, kept ttl_s. abort: drops a
 * pending entry that owner still holds (the request failed: a retry runs
 * again). */
enum { STORE_IDEM_NEW, STORE_IDEM_PENDING, STORE_IDEM_DONE, STORE_IDEM_MISMATCH };
struct store_idem_owner {
	char rid[65];
	char owner[192];
	int64_t until_ms;
};
struct buf;
int store_idem_begin(struct store *st, const char *org, const char *op, const char *khash,
		     const char *payload, int64_t lease_s, const struct store_idem_owner *mine,
		     struct store_idem_owner *seen, int *status, struct buf *body,
		     struct sp_err *e);
int store_idem_claim(struct store *st, const char *org, const char *op, const char *khash,
		     const char *seen_owner, const struct store_idem_owner *mine, struct sp_err *e);
int store_idem_finish(struct store *st, const char *org, const char *op, const char *khash,
		      int status, const char *body, size_t len, int64_t ttl_s, struct sp_err *e);
int store_idem_abort(struct store *st, const char *org, const char *op, const char *khash,
		     const char *owner, struct sp_err *e);

/* /v1 managed volumes (store/volume.c; key layout there). put: makes
 * the record (kv pairs) and its index entry unless the record exists (1)
 * or the org has max already (2); 0 made. get: SP_NOT_FOUND "Volume not
 * found". list: up to max records, oldest first (recs: max zeroed
 * records, freed with store_rec_free); the count. claim: atomically makes
 * sid the holder of every ids[i] whose holder is sid or expect[i] ("" =
 * free): 0 all claimed (nothing changes otherwise), 1 ids[*bad] is absent,
 * 2 ids[*bad] is held by holder. release: frees those of ids that sid
 * holds. holder_cas: sets the holder to value if it is expect: 0 set, 1
 * not (seen: what it is), SP_NOT_FOUND. del: removes the record and its
 * index entry if its holder is holder (0), else 1. */
#define STORE_VOLUME_CLAIM_MAX 16
int store_volume_put(struct store *st, const char *org, const char *id, const char *const *kv,
		     int nkv, int64_t score, int max, struct sp_err *e);
int store_volume_get(struct store *st, const char *org, const char *id, struct store_rec *out,
		     struct sp_err *e);
int store_volume_list(struct store *st, const char *org, struct store_rec *recs, int max,
		      struct sp_err *e);
int store_volume_claim(struct store *st, const char *org, const char *sid, const char *const *ids,
		       const char *const *expect, int n, int *bad, char *holder, size_t cap,
		       struct sp_err *e);
int store_volume_release(struct store *st, const char *org, const char *sid, const char *const *ids,
			 int n, struct sp_err *e);
int store_volume_holder_cas(struct store *st, const char *org, const char *id, const char *expect,
			    const char *value, char *seen, size_t cap, struct sp_err *e);
int store_volume_del(struct store *st, const char *org, const char *id, const char *holder,
		     struct sp_err *e);

#endif
