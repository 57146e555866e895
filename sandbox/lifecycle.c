/*
 * Sandbox lifecycle: create, read with status catch-up, list, set timeout,
 * kill, remove. The container enforces its own lifetime (see sandbox/sh/main.sh):
 * nothing here has to run for a sandbox to die on time. A record is written
 * "creating" before any container exists, so a crash mid-create leaves a
 * row that reads "error" later and a labeled container that can be found.
 * Never returns envVars; never puts a caller value into a Docker URL
 * unescaped (docker/ escapes) or into ExecCreate's User or Privileged.
 */
#include "internal.h"

#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/buf.h"
#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"
#include "sh_programs.h"

#define STATE_DIR ".sandpit"
#define TEMPLATE_UID 1000
#define TEMPLATE_HOME "/home/user"
#define STATE_TMPFS_BYTES 65536

int sandbox_install_id(struct sandbox_ctx *ctx, struct sp_err *e)
{
	char fresh[SANDBOX_ID_LEN + 1];

	if (ctx->install_id[0])
		return 0;
	crypto_random_id(fresh, SANDBOX_ID_LEN);
	return store_install_id(ctx->st, fresh, ctx->install_id, sizeof(ctx->install_id), e);
}

void sandbox_keeper_user(const struct config *cfg, char *out, size_t cap)
{
	snprintf(out, cap, "%d:%d", cfg->keeper_uid, cfg->keeper_uid);
}

int sandbox_ctx_init(struct sandbox_ctx *ctx, const struct config *cfg, struct sp_err *e)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->cfg = cfg;
	ctx->st = store_open(cfg->redis_url, cfg->redis_prefix, e);
	if (!ctx->st)
		return -1;
	ctx->dk = docker_client_create(cfg->docker_host, cfg->docker_timeout_s, e);
	if (!ctx->dk) {
		store_close(ctx->st);
		ctx->st = NULL;
		return -1;
	}
	sandbox_docker_guard(cfg, ctx->dk);
	str_copy(ctx->conns[0].id, sizeof(ctx->conns[0].id), "local");
	ctx->conns[0].dk = ctx->dk;
	ctx->nconns = 1;
	ctx->cur = &ctx->conns[0];
	return 0;
}

void sandbox_ctx_cleanup(struct sandbox_ctx *ctx)
{
	sandbox_servers_cleanup(ctx);
	store_close(ctx->st);
	docker_client_free(ctx->conns[0].dk);
	ctx->st = NULL;
	ctx->dk = NULL;
	ctx->cur = NULL;
}

static int ensure_docker(struct sandbox_ctx *ctx, struct sp_err *e)
{
	struct docker_version v;

	if (!ctx->dk || !ctx->cur)
		return sp_err_set(e, SP_UNAVAILABLE, "The sandbox's server cannot be reached");
	if (ctx->cur->docker_ready)
		return 0;
	if (docker_negotiate(ctx->dk, ctx->cfg->allow_old_runc, &v, e) < 0)
		return -1;
	ctx->cur->docker_ready = 1;
	return 0;
}

static void network_name(const struct config *cfg, const char *mode, char *out, size_t cap)
{
	config_network_name(cfg, mode, out, cap);
}

/* Makes both sandbox networks of the current server exist, once per worker
 * and server, and again after a Docker call said one is missing (see
 * sandbox_network_missing). On the local server it also installs the deny
 * rules for their bridges (firewall.c): where that fails, sandboxes are not
 * placed there unless allow_unfiltered_local is set. */
static int ensure_networks(struct sandbox_ctx *ctx, struct sp_err *e)
{
	static const char *const modes[2] = { "isolated", "internet" };
	char name[128], label[128], want[2][16], got[2][32];

	if (ctx->cur->networks_ready)
		return 0;
	config_network_label(ctx->cfg, label, sizeof(label));
	for (int i = 0; i < 2; i++) {
		network_name(ctx->cfg, modes[i], name, sizeof(name));
		firewall_bridge_name(ctx->cfg, modes[i], want[i], sizeof(want[i]));
		if (docker_network_ensure_ex(ctx->dk, name, i == 0, label, want[i], got[i],
					     sizeof(got[i]), e) < 0)
			return -1;
	}
	if (ctx->cur == &ctx->conns[0]) {
		const char *br[2] = { got[0], got[1] };
		struct sp_err fe;
		if (firewall_apply(ctx->cfg, br, 2, &fe) < 0) {
			if (!ctx->cfg->allow_unfiltered_local)
				return sp_err_set(
					e, SP_UNAVAILABLE,
					"The local server cannot drop sandbox traffic to the "
					"host and to deny_cidrs (%s); an operator may set "
					"allow_unfiltered_local = true to place sandboxes "
					"there anyway",
					fe.msg);
			log_warn("local server: sandbox traffic is not filtered (%s); "
				 "allow_unfiltered_local is set",
				 fe.msg);
		}
	}
	ctx->cur->networks_ready = 1;
	return 0;
}

int sandbox_network_missing(struct sandbox_ctx *ctx, const struct sp_err *e)
{
	if (e->code != SP_NOT_FOUND || !strstr(e->msg, "network") || !ctx->cur)
		return 0;
	log_warn("server %s: %s; making the sandbox networks again", ctx->cur->id, e->msg);
	ctx->cur->networks_ready = 0;
	return 1;
}

/* The dockerd runtime a sandbox runs under: "" for Docker's default (runc),
 * else the configured gVisor runtime of its network mode. */
static const char *docker_runtime(const struct config *cfg, const struct sandbox *sb)
{
	if (strcmp(sb->runtime, "gvisor") != 0)
		return "";
	return strcmp(sb->network_mode, "internet") == 0 ? cfg->gvisor_runtime_internet
							 : cfg->gvisor_runtime_isolated;
}

/*
 * The cgroup pids limit Docker sets. Under gVisor it counts the host threads
 * of the sandbox's kernel, not the processes inside: runsc 20221219 on the
 * ptrace platform uses about 52 threads idle and about 8 more per process
 * inside (measured). A limit of pidsLimit processes then needs this much;
 * when it is hit, the sandbox's kernel cannot clone and the sandbox dies
 * (killed) instead of fork failing with EAGAIN as under runc.
 */
#define GVISOR_PIDS_BASE 64
#define GVISOR_PIDS_PER_PROCESS 8
static int64_t host_pids_limit(const struct config *cfg, const struct sandbox *sb)
{
	if (!docker_runtime(cfg, sb)[0])
		return sb->pids_limit;
	return sb->pids_limit * GVISOR_PIDS_PER_PROCESS + GVISOR_PIDS_BASE;
}

void sandbox_limits_json(const struct config *cfg, const struct sandbox *sb, json_object *o)
{
	json_object_object_add(o, "NanoCpus",
			       json_object_new_int64((int64_t)(sb->cpu * 1e9 + 0.5)));
	json_object_object_add(o, "Memory", json_object_new_int64(sb->memory_mb * 1024 * 1024));
	json_object_object_add(o, "MemorySwap", json_object_new_int64(sb->memory_mb * 1024 * 1024));
	json_object_object_add(o, "PidsLimit", json_object_new_int64(host_pids_limit(cfg, sb)));
}

/* Whether the daemon has runtime `name` registered. The list (GET /info) is
 * kept per worker and server; a name it lacks is asked again at most every
 * 10 s, so registering runsc later needs no restart of sandpit. */
static int runtime_registered(struct sandbox_ctx *ctx, const char *name, struct sp_err *e)
{
	struct server_conn *sc = ctx->cur;
	char want[80];

	snprintf(want, sizeof(want), "%s\n", name);
	for (int pass = 0; pass < 2; pass++) {
		const char *p = sc->runtimes;
		if (sc->runtimes_at) {
			/* names are whole lines */
			while ((p = strstr(p, want)) && p != sc->runtimes && p[-1] != '\n')
				p++;
			if (p)
				return 1;
		}
		if (pass == 1 || (sc->runtimes_at && mono_ms() - sc->runtimes_at < 10000))
			break;
		if (docker_runtimes(ctx->dk, sc->runtimes, sizeof(sc->runtimes), e) < 0)
			return -1;
		sc->runtimes_at = mono_ms();
	}
	return 0;
}

/* 0 when the sandbox's runtime can run on the current server; else -1 with
 * a 400 naming `runtime` (or why the daemon could not be asked). */
static int runtime_ok(struct sandbox_ctx *ctx, const struct sandbox *sb, struct sp_err *e)
{
	const char *name = docker_runtime(ctx->cfg, sb);
	int reg;

	if (!name[0])
		return 0;
	reg = runtime_registered(ctx, name, e);
	if (reg < 0)
		return -1;
	if (reg == 0)
		return sp_err_field(
			e, SP_BAD_REQUEST, "runtime",
			"runtime: gVisor is not available on this server: register runsc "
			"with dockerd (see README); runtime '%s' is missing",
			name);
	return 0;
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static int64_t ttl_for(const struct config *cfg, const struct sandbox *sb)
{
	int64_t left = (sb->deadline_at - now_ms()) / 1000;

	if (sb->status != SB_RUNNING && sb->status != SB_CREATING)
		left = 0;
	if (left < 0)
		left = 0;
	return left + cfg->retention_s + 1;
}

/* Writes the whole record (with the sealed env when given). */
static int save(struct sandbox_ctx *ctx, const struct sandbox *sb, const char *sealed_env,
		struct sp_err *e)
{
	char nums[SB_RECORD_FIELDS][32];
	const char *kv[2 * SB_RECORD_FIELDS + 2];
	int n = sandbox_to_kv(sb, nums, kv);

	if (sealed_env) {
		kv[n++] = "envVars";
		kv[n++] = sealed_env;
	}
	return store_sandbox_put(ctx->st, sb->org, sb->id, kv, n, ttl_for(ctx->cfg, sb),
				 sb->created_at, e);
}

/* Rewrites the record's fields if its status is still `expect`. Returns 0
 * when applied, 1 when someone else changed the status first. */
static int save_if(struct sandbox_ctx *ctx, const struct sandbox *sb, enum sandbox_status expect,
		   struct sp_err *e)
{
	char nums[SB_RECORD_FIELDS][32];
	const char *kv[2 * SB_RECORD_FIELDS];
	int n = sandbox_to_kv(sb, nums, kv);

	return store_sandbox_update(ctx->st, sb->org, sb->id, sandbox_status_name(expect), kv, n,
				    ttl_for(ctx->cfg, sb), e);
}

/* Moves a record from `from` to killed/error and saves it if nobody else
 * changed it meanwhile; on a lost race re-reads the winner's version. The
 * quota share is released only when gone says the container is really
 * gone (Docker said so); else the reaper releases it once it is. */
static void transition(struct sandbox_ctx *ctx, struct sandbox *sb, enum sandbox_status to,
		       int64_t at, const char *why, int gone)
{
	enum sandbox_status from = sb->status;
	struct sp_err e;
	struct store_rec r = { 0 };

	sb->status = to;
	if ((to == SB_KILLED || to == SB_ERROR) && gone) {
		store_release(ctx->st, sb->org, sb->id, &e);
		store_server_release(ctx->st, sb->server_id, sb->id, &e);
	}
	if (to == SB_KILLED)
		sb->killed_at = at;
	if (why)
		str_copy(sb->error_message, sizeof(sb->error_message), why);
	if (save_if(ctx, sb, from, &e) == 1 &&
	    store_sandbox_get(ctx->st, sb->org, sb->id, &r, &e) == 0) {
		sandbox_from_rec(&r, sb);
		store_rec_free(&r);
	}
}

void sandbox_mark_gone(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	if (sb->status == SB_RUNNING)
		transition(ctx, sb, SB_KILLED, now_ms(), NULL, 1);
}

/* Whether a container listed by Docker is running (or paused). */
static int listed_running(json_object *c)
{
	json_object *st;
	const char *s;

	if (!json_object_object_get_ex(c, "State", &st))
		return 1;
	s = json_object_get_string(st);
	return s && (strcmp(s, "running") == 0 || strcmp(s, "paused") == 0 ||
		     strcmp(s, "restarting") == 0);
}

int sandbox_end_containers(struct sandbox_ctx *ctx, const char *id, int grace_s, struct sp_err *e)
{
	char label[192];
	json_object *all = NULL;
	int rc = -1;

	snprintf(label, sizeof(label), "%s.sandboxId=%s", ctx->cfg->label_prefix, id);
	if (ensure_docker(ctx, e) < 0 || docker_container_list(ctx->dk, label, 1, &all, e) < 0)
		return -1;
	for (size_t i = 0; i < json_object_array_length(all); i++) {
		json_object *c = json_object_array_get_idx(all, i), *cid;
		const char *s;
		int r;
		if (!json_object_object_get_ex(c, "Id", &cid) || !(s = json_object_get_string(cid)))
			continue;
		if (!listed_running(c))
			r = docker_container_remove(ctx->dk, s, 1, e); /* created or exited */
		else if (grace_s > 0)
			r = docker_container_stop(ctx->dk, s, grace_s, e);
		else
			r = docker_container_kill(ctx->dk, s, "KILL", e);
		if (r < 0 && e->code != SP_NOT_FOUND && e->code != SP_CONFLICT)
			goto out;
	}
	/* a KILL is asynchronous: gone once Docker no longer lists it running */
	for (int pass = 0; pass < 30; pass++) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		int live = 0;
		json_object_put(all);
		all = NULL;
		if (docker_container_list(ctx->dk, label, 0, &all, e) < 0)
			goto out;
		for (size_t i = 0; i < json_object_array_length(all); i++)
			live += listed_running(json_object_array_get_idx(all, i));
		if (!live) {
			rc = 0;
			goto out;
		}
		nanosleep(&ts, NULL);
	}
	rc = 1;
out:
	json_object_put(all);
	if (rc >= 0)
		sp_err_clear(e);
	return rc;
}

/* Ends sb's containers on its own server; 1 when Docker says they are
 * gone, 0 when that is not known (yet). */
static int end_sandbox_containers(struct sandbox_ctx *ctx, const struct sandbox *sb, int grace_s)
{
	struct sp_err e;

	if (sandbox_select_server(ctx, sb->server_id, &e) < 0 || !ctx->dk)
		return 0;
	if (sandbox_end_containers(ctx, sb->id, grace_s, &e) != 0) {
		log_warn("sandbox %s: could not end its container: %s", sb->id, e.msg);
		return 0;
	}
	return 1;
}

/* When a creating record reads error: its own deadline, else createdAt
 * plus create_timeout_s (records older than creatingUntil). */
static int64_t creating_end(const struct config *cfg, const struct sandbox *sb)
{
	if (sb->creating_until > 0)
		return sb->creating_until;
	return sb->created_at + (int64_t)cfg->create_timeout_s * 1000;
}

void sandbox_transition(struct sandbox_ctx *ctx, struct sandbox *sb, enum sandbox_status to,
			const char *why, int gone)
{
	transition(ctx, sb, to, to == SB_KILLED ? now_ms() : 0, why, gone);
}

int sandbox_docker_ready(struct sandbox_ctx *ctx, struct sp_err *e)
{
	return ensure_docker(ctx, e);
}

int64_t sandbox_creating_end(const struct config *cfg, const struct sandbox *sb)
{
	return creating_end(cfg, sb);
}

/* Status catch-up by time. A creation past its time or a sandbox past its
 * expiry ends its container (by label, so one the record does not point
 * at yet is found too) before the record changes. Returns 1 if it changed. */
static int catch_up_time(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	int64_t now = now_ms();

	if (sb->status == SB_CREATING && now > creating_end(ctx->cfg, sb)) {
		char why[128];
		int gone = end_sandbox_containers(ctx, sb, 0);
		snprintf(why, sizeof(why), "Creation did not finish within %d s",
			 ctx->cfg->create_timeout_s);
		transition(ctx, sb, SB_ERROR, 0, why, gone);
		return 1;
	}
	if (sb->status == SB_RUNNING) {
		int64_t end = min64(sb->expires_at, sb->deadline_at);
		if (now >= end) {
			int gone = end_sandbox_containers(ctx, sb, 0);
			transition(ctx, sb, SB_KILLED, end, NULL, gone);
			return 1;
		}
	}
	return 0;
}

/* Asks Docker whether the container still runs; marks the row killed if
 * not. Docker being unreachable leaves the row as it is. */
/* Containers this worker saw running, and when: a read within
 * SEEN_RUNNING_MS of that trusts it, so a burst of reads of one sandbox
 * costs one Docker call (a container removed behind sandpit's back reads
 * killed at most that much later). */
#define SEEN_RUNNING_MS 1000
/* catch-up is optional: a server slower than this leaves the record as it is */
#define CATCH_UP_TIMEOUT_MS 3000
/* The process-wide caches of this file (seen_running, tool_cache,
 * owned_cache) are shared by sandpit-stream's threads: each is read and
 * written under cache_mu, held for the look-up or the store only, never
 * across a Docker or Redis call. (tinfo is sandpitd's only: not locked.) */
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char id[65];
	int64_t at;
} seen_running[64];

static int seen_slot(const char *cid)
{
	unsigned h = 0;

	for (const char *p = cid; *p && p < cid + 16; p++)
		h = h * 31 + (unsigned char)*p;
	return (int)(h % (sizeof(seen_running) / sizeof(seen_running[0])));
}

static void catch_up_container(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	json_object *info = NULL, *state, *running;
	struct sp_err e;
	int slot = seen_slot(sb->container_id), fresh;
	int64_t now = mono_ms();

	/* a server that is not answering: the record as it is (RELIABILITY L2) */
	if (sb->status != SB_RUNNING || !ctx->dk || docker_client_suspect(ctx->dk))
		return;
	pthread_mutex_lock(&cache_mu);
	fresh = strcmp(seen_running[slot].id, sb->container_id) == 0 &&
		now - seen_running[slot].at < SEEN_RUNNING_MS;
	pthread_mutex_unlock(&cache_mu);
	if (fresh)
		return;
	docker_client_next_timeout(ctx->dk, CATCH_UP_TIMEOUT_MS);
	if (docker_container_inspect(ctx->dk, sb->container_id, &info, &e) < 0) {
		if (e.code == SP_NOT_FOUND)
			sandbox_mark_gone(ctx, sb);
		return;
	}
	if (json_object_object_get_ex(info, "State", &state) &&
	    json_object_object_get_ex(state, "Running", &running) &&
	    !json_object_get_boolean(running)) {
		sandbox_mark_gone(ctx, sb);
	} else {
		pthread_mutex_lock(&cache_mu);
		str_copy(seen_running[slot].id, sizeof(seen_running[slot].id), sb->container_id);
		seen_running[slot].at = now;
		pthread_mutex_unlock(&cache_mu);
	}
	json_object_put(info);
}

static int load(struct sandbox_ctx *ctx, const char *org, const char *id, struct sandbox *sb,
		struct sp_err *e)
{
	struct store_rec r = { 0 };
	int rc;

	if (store_sandbox_get(ctx->st, org, id, &r, e) < 0)
		return -1;
	rc = sandbox_from_rec(&r, sb);
	store_rec_free(&r);
	if (rc < 0)
		return sp_err_set(e, SP_INTERNAL, "Sandbox record is damaged");
	/* the operation acts on the sandbox's own server; if that cannot be
	 * reached, reads still work and acting fails with 503 */
	sandbox_select_server(ctx, sb->server_id, &ctx->server_err);
	return 0;
}

int sandbox_get(struct sandbox_ctx *ctx, const char *org, const char *id, struct sandbox *out,
		struct sp_err *e)
{
	if (load(ctx, org, id, out, e) < 0)
		return -1;
	if (!catch_up_time(ctx, out))
		catch_up_container(ctx, out);
	return 0;
}

int sandbox_get_running(struct sandbox_ctx *ctx, const char *org, const char *id,
			struct sandbox *out, struct sp_err *e)
{
	if (load(ctx, org, id, out, e) < 0)
		return -1;
	catch_up_time(ctx, out);
	if (out->status != SB_RUNNING)
		return sp_err_set(e, SP_PRECONDITION, "Sandbox is %s",
				  sandbox_status_name(out->status));
	if (!ctx->dk) {
		*e = ctx->server_err;
		return -1;
	}
	return ensure_docker(ctx, e);
}

/* Maps a Docker "no such container" on a running sandbox to killed. */
static int container_gone(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	sandbox_mark_gone(ctx, sb);
	return sp_err_set(e, SP_PRECONDITION, "Sandbox is killed");
}

/* True when container id is among the running containers of a list answer. */
static int in_list(json_object *live, const char *id)
{
	for (size_t j = 0; live && j < json_object_array_length(live); j++) {
		json_object *cid;
		if (json_object_object_get_ex(json_object_array_get_idx(live, j), "Id", &cid) &&
		    strcmp(json_object_get_string(cid), id) == 0)
			return 1;
	}
	return 0;
}

/* Reads one record into *out with status catch-up: one container listing
 * per server (srv, asked once per page), skipped while the server is
 * suspect. 0 when the record reads as a sandbox. */
struct list_srv {
	char id[65];
	json_object *live; /* NULL: the server could not be asked */
};

static int list_item(struct sandbox_ctx *ctx, const struct store_rec *rec, struct list_srv *srv,
		     int *nsrv, int max_srv, const char *label, struct sandbox *out)
{
	struct sandbox *sb = out;
	int k;

	if (sandbox_from_rec(rec, sb) < 0)
		return -1;
	if (!catch_up_time(ctx, sb) && sb->status == SB_RUNNING) {
		for (k = 0; k < *nsrv && strcmp(srv[k].id, sb->server_id) != 0; k++)
			;
		if (k == *nsrv && *nsrv < max_srv) {
			struct sp_err de;
			str_copy(srv[k].id, sizeof(srv[k].id), sb->server_id);
			srv[k].live = NULL;
			if (sandbox_select_server(ctx, sb->server_id, &de) == 0 &&
			    !docker_client_suspect(ctx->dk) && ensure_docker(ctx, &de) == 0 &&
			    (docker_client_next_timeout(ctx->dk, CATCH_UP_TIMEOUT_MS),
			     docker_container_list(ctx->dk, label, 0, &srv[k].live, &de) < 0))
				srv[k].live = NULL;
			(*nsrv)++;
		}
		if (k < *nsrv && srv[k].live && !in_list(srv[k].live, sb->container_id))
			sandbox_mark_gone(ctx, sb);
	}
	return 0;
}

/* A cursor is "<index score>.<id>" of the last index entry of a page. */
static int cursor_parse(const char *c, int64_t *score, char *id, size_t cap, struct sp_err *e)
{
	const char *dot = strchr(c, '.');
	long long n;
	char num[24];
	size_t len;

	if (!dot || dot == c || (size_t)(dot - c) >= sizeof(num))
		goto bad;
	memcpy(num, c, (size_t)(dot - c));
	num[dot - c] = '\0';
	len = strlen(dot + 1);
	if (parse_ll(num, 0, LLONG_MAX, &n) < 0 || len == 0 || len >= cap)
		goto bad;
	for (size_t i = 0; i < len; i++) {
		char ch = dot[1 + i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9')))
			goto bad;
	}
	*score = n;
	memcpy(id, dot + 1, len + 1);
	return 0;
bad:
	return sp_err_field(e, SP_BAD_REQUEST, "cursor", "cursor: not a cursor from a list answer");
}

void sandbox_page_free(struct sandbox_page *p)
{
	free(p->items);
	p->items = NULL;
	p->n = 0;
}

int sandbox_list(struct sandbox_ctx *ctx, const char *org, const struct sandbox_page_req *pg,
		 struct sandbox_page *out, struct sp_err *e)
{
	enum { MAX_SRV = 16 };
	int limit =
		pg && pg->limit > 0 && pg->limit < SB_LIST_PAGE_MAX ? pg->limit : SB_LIST_PAGE_MAX;
	struct store_rec *recs = calloc((size_t)limit + 1, sizeof(*recs));
	char **ids = calloc((size_t)limit + 1, sizeof(*ids));
	int64_t *scores = calloc((size_t)limit + 1, sizeof(*scores)), after = 0;
	struct list_srv srv[MAX_SRV];
	char label[192], after_id[65];
	int nids = 0, got = 0, nsrv = 0, rc = -1, n;

	memset(out, 0, sizeof(*out));
	out->items = calloc((size_t)limit, sizeof(*out->items));
	if (!recs || !ids || !scores || !out->items) {
		sp_err_set(e, SP_INTERNAL, "out of memory");
		goto out;
	}
	if (pg && pg->cursor && *pg->cursor &&
	    cursor_parse(pg->cursor, &after, after_id, sizeof(after_id), e) < 0)
		goto out;
	/* one more than the page: whether another page follows */
	if (store_sandbox_ids_page(ctx->st, org, after,
				   pg && pg->cursor && *pg->cursor ? after_id : NULL, limit + 1,
				   ids, scores, &got, e) < 0)
		goto out;
	nids = got;
	if (nids > limit) {
		snprintf(out->next_cursor, sizeof(out->next_cursor), "%lld.%s",
			 (long long)scores[limit - 1], ids[limit - 1]);
		nids = limit;
	}
	/* by the sandbox label, not the org's: a container from a warm pool was
	 * made before its org was known */
	config_label(ctx->cfg, "sandbox=true", label, sizeof(label));
	n = nids ? store_sandbox_get_many(ctx->st, org, ids, nids, recs, e) : 0;
	if (n < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		if (list_item(ctx, &recs[i], srv, &nsrv, MAX_SRV, label, &out->items[out->n]) == 0)
			out->n++;
		store_rec_free(&recs[i]);
	}
	rc = 0;
out:
	if (rc < 0)
		sandbox_page_free(out);
	free(recs);
	if (ids)
		store_ids_free_items(ids, got);
	free(ids);
	free(scores);
	for (int k = 0; k < nsrv; k++)
		json_object_put(srv[k].live);
	return rc;
}

/* Parses a .env body into Docker's "K=V" list. Lines may be blank, start
 * with '#', or with "export "; values may be quoted with ' or ". */
static int parse_env_vars(const char *s, size_t len, json_object *env, struct sp_err *e)
{
	size_t i = 0;
	int lineno = 0;

	while (i < len) {
		size_t end = i, ks, ke, vs, ve;
		struct buf kv;
		lineno++;
		while (end < len && s[end] != '\n')
			end++;
		ks = i;
		ve = end;
		if (ve > ks && s[ve - 1] == '\r')
			ve--;
		while (ks < ve && isspace((unsigned char)s[ks]))
			ks++;
		i = end + 1;
		if (ks == ve || s[ks] == '#')
			continue;
		if (ve - ks > 7 && memcmp(s + ks, "export ", 7) == 0)
			ks += 7;
		ke = ks;
		while (ke < ve && s[ke] != '=')
			ke++;
		if (ke == ve)
			return sp_err_field(e, SP_BAD_REQUEST, "envVars",
					    "envVars: line %d is not KEY=value", lineno);
		vs = ke + 1;
		while (ke > ks && isspace((unsigned char)s[ke - 1]))
			ke--;
		if (ke == ks || !(isalpha((unsigned char)s[ks]) || s[ks] == '_'))
			return sp_err_field(e, SP_BAD_REQUEST, "envVars",
					    "envVars: line %d has an invalid name", lineno);
		for (size_t k = ks; k < ke; k++)
			if (!isalnum((unsigned char)s[k]) && s[k] != '_')
				return sp_err_field(e, SP_BAD_REQUEST, "envVars",
						    "envVars: line %d has an invalid name", lineno);
		if (ve - vs >= 2 && (s[vs] == '"' || s[vs] == '\'') && s[ve - 1] == s[vs]) {
			vs++;
			ve--;
		}
		if (memchr(s + vs, '\0', ve - vs))
			return sp_err_field(e, SP_BAD_REQUEST, "envVars",
					    "envVars: line %d holds a NUL byte", lineno);
		buf_init(&kv, 70000);
		if (buf_append(&kv, s + ks, ke - ks) < 0 || buf_append(&kv, "=", 1) < 0 ||
		    buf_append(&kv, s + vs, ve - vs) < 0) {
			buf_free(&kv);
			return sp_err_set(e, SP_INTERNAL, "out of memory");
		}
		json_object_array_add(env, json_object_new_string_len(kv.data, (int)kv.len));
		buf_wipe(&kv);
	}
	return 0;
}

/* HOME is the workdir (as in Dokploy: /home/user unless the create names
 * another), then the template's extra env ("K=V\n" lines, "~" = the home). */
static void template_env(const struct template_conf *t, const char *home, json_object *env)
{
	const char *p = t ? t->env : "";
	char line[1200];

	snprintf(line, sizeof(line), "HOME=%s", home);
	json_object_array_add(env, json_object_new_string(line));
	while (*p) {
		size_t n = strcspn(p, "\n");
		const char *tilde = memchr(p, '~', n);
		if (tilde)
			snprintf(line, sizeof(line), "%.*s%s%.*s", (int)(tilde - p), p, home,
				 (int)(n - (size_t)(tilde - p) - 1), tilde + 1);
		else
			snprintf(line, sizeof(line), "%.*s", (int)n, p);
		if (n)
			json_object_array_add(env, json_object_new_string(line));
		p += n;
		if (*p)
			p++;
	}
}

static json_object *str_array(const char *const *v)
{
	json_object *a = json_object_new_array();

	for (; *v; v++)
		json_object_array_add(a, json_object_new_string(*v));
	return a;
}

static json_object *container_body(const struct sandbox_ctx *ctx, const struct sandbox *sb,
				   json_object *env)
{
	const struct config *cfg = ctx->cfg;
	json_object *o = json_object_new_object(), *hc = json_object_new_object(),
		    *labels = json_object_new_object(), *cmd, *lc, *lcc, *nc, *ep;
	char deadline[32], remaining[32], expires[32], tsec[32], kuid[32], keeper[48], lname[160],
		net[128], opts[160];
	static const char *const capdrop[] = { "ALL", NULL };
	static const char *const secopt[] = { "no-new-privileges", NULL };

	snprintf(deadline, sizeof(deadline), "%lld", (long long)(sb->deadline_at / 1000));
	snprintf(remaining, sizeof(remaining), "%03lld", (long long)(sb->deadline_at % 1000));
	snprintf(expires, sizeof(expires), "%lld", (long long)((sb->expires_at + 999) / 1000));
	snprintf(tsec, sizeof(tsec), "%lld", (long long)((sb->timeout_ms + 999) / 1000));
	snprintf(kuid, sizeof(kuid), "%d", cfg->keeper_uid);
	sandbox_keeper_user(cfg, keeper, sizeof(keeper));
	json_object_object_add(o, "Image", json_object_new_string(sb->image));
	json_object_object_add(o, "Entrypoint", json_object_new_array());
	cmd = json_object_new_array();
	json_object_array_add(cmd, json_object_new_string("sh"));
	json_object_array_add(cmd, json_object_new_string("-c"));
	json_object_array_add(cmd, json_object_new_string(sh_main));
	json_object_array_add(cmd, json_object_new_string("sandpit"));
	json_object_array_add(cmd, json_object_new_string(deadline));
	json_object_array_add(cmd, json_object_new_string(remaining));
	json_object_array_add(cmd, json_object_new_string(expires));
	json_object_array_add(cmd, json_object_new_string(tsec));
	json_object_array_add(cmd, json_object_new_string(kuid));
	json_object_object_add(o, "Cmd", cmd);
	/* the keeper runs PID 1, the main sleep and the watcher; the sandbox
	 * user is named on every exec */
	json_object_object_add(o, "User", json_object_new_string(keeper));
	json_object_object_add(o, "WorkingDir", json_object_new_string(sb->workdir));
	json_object_object_add(o, "Env", json_object_get(env));
	json_object_object_add(o, "Hostname", json_object_new_string("sandbox"));
	config_label(cfg, "sandbox", lname, sizeof(lname));
	json_object_object_add(labels, lname, json_object_new_string("true"));
	config_label(cfg, "sandboxId", lname, sizeof(lname));
	json_object_object_add(labels, lname, json_object_new_string(sb->id));
	config_label(cfg, "organizationId", lname, sizeof(lname));
	json_object_object_add(labels, lname, json_object_new_string(sb->org));
	/* container_label: KEY=VALUE pairs, checked by config_load */
	for (const char *p = cfg->container_label + strspn(cfg->container_label, " \t"); *p;
	     p += strspn(p, " \t")) {
		size_t n = strcspn(p, " \t"), k = strcspn(p, "=");
		snprintf(lname, sizeof(lname), "%.*s", (int)k, p);
		json_object_object_add(labels, lname,
				       json_object_new_string_len(p + k + 1, (int)(n - k - 1)));
		p += n;
	}
	/* the installation that made it: the only one whose reaper touches it */
	snprintf(lname, sizeof(lname), "%s.install", cfg->label_prefix);
	json_object_object_add(labels, lname, json_object_new_string(ctx->install_id));
	/* the reaper ends a container past this even without a record */
	snprintf(lname, sizeof(lname), "%s.deadlineAt", cfg->label_prefix);
	snprintf(opts, sizeof(opts), "%lld", (long long)sb->deadline_at);
	json_object_object_add(labels, lname, json_object_new_string(opts));
	json_object_object_add(o, "Labels", labels);

	json_object_object_add(hc, "CapDrop", str_array(capdrop));
	json_object_object_add(hc, "SecurityOpt", str_array(secopt));
	json_object_object_add(hc, "Init", json_object_new_boolean(1));
	sandbox_limits_json(cfg, sb, hc);
	json_object_object_add(hc, "AutoRemove", json_object_new_boolean(1));
	json_object_object_add(hc, "Privileged", json_object_new_boolean(0));
	json_object_object_add(hc, "CgroupnsMode", json_object_new_string("private"));
	json_object_object_add(hc, "IpcMode", json_object_new_string("private"));
	/* the state folder: the keeper's alone (the expiry and the timeout);
	 * inside it a folder anyone may write, for the markers of commands */
	snprintf(opts, sizeof(opts), "rw,noexec,nosuid,nodev,size=%d,mode=0755,uid=%d,gid=%d",
		 STATE_TMPFS_BYTES, cfg->keeper_uid, cfg->keeper_uid);
	ep = json_object_new_object();
	json_object_object_add(ep, "/" STATE_DIR, json_object_new_string(opts));
	snprintf(opts, sizeof(opts), "rw,noexec,nosuid,nodev,size=%d,mode=1777", STATE_TMPFS_BYTES);
	json_object_object_add(ep, "/" STATE_DIR "/x", json_object_new_string(opts));
	json_object_object_add(hc, "Tmpfs", ep);
	if (docker_runtime(cfg, sb)[0])
		json_object_object_add(hc, "Runtime",
				       json_object_new_string(docker_runtime(cfg, sb)));
	ep = json_object_new_object();
	json_object_object_add(ep, "Name", json_object_new_string("no"));
	json_object_object_add(hc, "RestartPolicy", ep);
	lc = json_object_new_object();
	lcc = json_object_new_object();
	json_object_object_add(lc, "Type", json_object_new_string("json-file"));
	json_object_object_add(lcc, "max-size", json_object_new_string("10m"));
	json_object_object_add(lcc, "max-file", json_object_new_string("1"));
	json_object_object_add(lc, "Config", lcc);
	json_object_object_add(hc, "LogConfig", lc);
	/* the disk limit (disk.c): the workdir on its own filesystem, the
	 * image read-only, /tmp and /var/tmp bounded; or StorageOpt */
	sandbox_disk_hostconfig(cfg, sb, hc);
	network_name(cfg, sb->network_mode, net, sizeof(net));
	json_object_object_add(hc, "NetworkMode", json_object_new_string(net));
	json_object_object_add(o, "HostConfig", hc);
	nc = json_object_new_object();
	ep = json_object_new_object();
	json_object_object_add(ep, net, json_object_new_object());
	json_object_object_add(nc, "EndpointsConfig", ep);
	json_object_object_add(o, "NetworkingConfig", nc);
	return o;
}

/* Which of sh, sleep, date the image lacks, remembered per image id so the
 * look-up costs nothing after the first sandbox of an image. Under
 * cache_mu. */
static struct {
	char image_id[80];
	char missing[32];
} tool_cache[32];
static unsigned tool_cache_next;

static const char *image_path(json_object *img)
{
	json_object *cfg, *env;
	static _Thread_local char path[1024]; /* per thread: valid until its next call */

	str_copy(path, sizeof(path),
		 "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	if (json_object_object_get_ex(img, "Config", &cfg) &&
	    json_object_object_get_ex(cfg, "Env", &env) &&
	    json_object_is_type(env, json_type_array))
		for (size_t i = 0; i < json_object_array_length(env); i++) {
			const char *kv = json_object_get_string(json_object_array_get_idx(env, i));
			if (kv && strncmp(kv, "PATH=", 5) == 0)
				str_copy(path, sizeof(path), kv + 5);
		}
	return path;
}

/* Checks sh, sleep and date through archive stats on the created (not yet
 * started) container. Writes the names missing ("" when none) into out. */
static int find_missing_tools(struct sandbox_ctx *ctx, const char *cid, const char *image_id,
			      const char *path, char *out, size_t cap, struct sp_err *e)
{
	static const char *const tools[] = { "sh", "sleep", "date" };
	unsigned i;
	int hit = 0;

	pthread_mutex_lock(&cache_mu);
	for (i = 0; i < sizeof(tool_cache) / sizeof(tool_cache[0]) && !hit; i++)
		if (strcmp(tool_cache[i].image_id, image_id) == 0) {
			str_copy(out, cap, tool_cache[i].missing);
			hit = 1;
		}
	pthread_mutex_unlock(&cache_mu);
	if (hit)
		return 0;
	out[0] = '\0';
	for (i = 0; i < 3; i++) {
		const char *p = path;
		int found = 0;
		while (*p && !found) {
			size_t n = strcspn(p, ":");
			char full[1200];
			struct docker_stat st;
			struct sp_err se;
			snprintf(full, sizeof(full), "%.*s/%s", (int)n, p, tools[i]);
			if (n && full[0] == '/' &&
			    docker_archive_stat(ctx->dk, cid, full, &st, &se) == 0)
				found = 1;
			else if (n && full[0] == '/' && se.code != SP_NOT_FOUND)
				return sp_err_set(e, se.code, "%s", se.msg);
			p += n;
			if (*p)
				p++;
		}
		if (!found) {
			size_t k = strlen(out);
			snprintf(out + k, cap - k, "%s%s", k ? ", " : "", tools[i]);
		}
	}
	pthread_mutex_lock(&cache_mu);
	i = tool_cache_next++ % (sizeof(tool_cache) / sizeof(tool_cache[0]));
	str_copy(tool_cache[i].image_id, sizeof(tool_cache[i].image_id), image_id);
	str_copy(tool_cache[i].missing, sizeof(tool_cache[i].missing), out);
	pthread_mutex_unlock(&cache_mu);
	return 0;
}

/* The uid/gid that owns the workdir: the template user, a numeric image
 * user, or root with a world-writable sticky workdir for a named user. */
void sandbox_owner(const struct sandbox *sb, unsigned *uid, unsigned *gid, unsigned *mode)
{
	long long u = 0, g = 0;
	char tmp[64];
	char *colon;

	*uid = *gid = 0;
	*mode = 0755;
	str_copy(tmp, sizeof(tmp), sb->owner[0] ? sb->owner : sb->user);
	colon = strchr(tmp, ':');
	if (colon)
		*colon = '\0';
	if (!tmp[0] || strcmp(tmp, "root") == 0)
		return;
	if (parse_ll(tmp, 0, 0x7fffffff, &u) == 0) {
		*uid = (unsigned)u;
		*gid = (unsigned)u;
		if (colon && parse_ll(colon + 1, 0, 0x7fffffff, &g) == 0)
			*gid = (unsigned)g;
		return;
	}
	*mode = 01777; /* a user we could not resolve: let it use the folder */
}

/* Resolves the image's named user ("app" or "app:group") to numbers
 * through the container's /etc/passwd, before it starts, so files the API
 * creates belong to it. Leaves owner empty when it cannot. */
static void resolve_owner(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	struct buf tar, passwd;
	struct sp_err e;
	char name[64], *colon, *line;
	long long n;

	str_copy(sb->owner, sizeof(sb->owner), "");
	str_copy(name, sizeof(name), sb->user);
	colon = strchr(name, ':');
	if (colon)
		*colon = '\0';
	if (!name[0] || strcmp(name, "root") == 0) {
		str_copy(sb->owner, sizeof(sb->owner), "0:0");
		return;
	}
	if (parse_ll(name, 0, 0x7fffffff, &n) == 0 &&
	    (!colon || parse_ll(colon + 1, 0, 0x7fffffff, &n) == 0)) {
		snprintf(sb->owner, sizeof(sb->owner), "%s%s%s", name, colon ? ":" : "",
			 colon ? colon + 1 : "");
		return;
	}
	buf_init(&tar, 4 * 1024 * 1024);
	buf_init(&passwd, 4 * 1024 * 1024);
	if (docker_archive_get(ctx->dk, sb->container_id, "/etc/passwd", &tar, &e) < 0 ||
	    docker_tar_first_file(tar.data, tar.len, &passwd, &e) < 0 || !passwd.data)
		goto out;
	for (line = passwd.data; line && *line; line = colon) {
		char *f[4] = { 0 }, *p = line;
		int k = 0;
		colon = strchr(line, '\n');
		if (colon)
			*colon++ = '\0';
		/* name:x:uid:gid:... (fields may be empty) */
		while (k < 4 && p) {
			f[k++] = p;
			p = strchr(p, ':');
			if (p)
				*p++ = '\0';
		}
		if (k == 4 && strcmp(f[0], name) == 0 && parse_ll(f[2], 0, 0x7fffffff, &n) == 0 &&
		    parse_ll(f[3], 0, 0x7fffffff, &n) == 0) {
			snprintf(sb->owner, sizeof(sb->owner), "%s:%s", f[2], f[3]);
			break;
		}
	}
out:
	buf_free(&tar);
	buf_free(&passwd);
}

static int drop_output(void *arg, int stream, const char *data, size_t len)
{
	(void)arg;
	(void)stream;
	(void)data;
	(void)len;
	return 0;
}

/* Folders of the image already owned as the sandbox needs them, by image
 * id: an image is immutable, so one look per image and worker. Under
 * cache_mu. */
static struct {
	char key[160];
	int ok;
} owned_cache[32];
static unsigned owned_next;

/* 1 when path exists in the created container as a directory of uid:gid
 * with the owner's full access (or world-writable and sticky for mode
 * 01777); 0 when it has to be made. */
static int already_owned(struct sandbox_ctx *ctx, const struct sandbox *sb, const char *image_id,
			 const char *path, unsigned uid, unsigned gid, unsigned mode)
{
	struct docker_owner o;
	struct sp_err e;
	char key[160];
	unsigned i;
	int ok = -1;

	snprintf(key, sizeof(key), "%.80s %u:%u:%o %s", image_id, uid, gid, mode, path);
	pthread_mutex_lock(&cache_mu);
	for (i = 0; i < sizeof(owned_cache) / sizeof(owned_cache[0]) && ok < 0; i++)
		if (strcmp(owned_cache[i].key, key) == 0)
			ok = owned_cache[i].ok;
	pthread_mutex_unlock(&cache_mu);
	if (ok >= 0)
		return ok;
	if (docker_archive_owner(ctx->dk, sb->container_id, path, &o, &e) < 0) {
		if (e.code != SP_NOT_FOUND)
			return 0; /* not known: seed, and ask again next time */
		ok = 0;
	} else if (mode == 01777) {
		ok = o.type == '5' && (o.mode & 01777) == 01777;
	} else {
		ok = o.type == '5' && o.uid == uid && o.gid == gid && (o.mode & 0700) == 0700;
	}
	pthread_mutex_lock(&cache_mu);
	i = owned_next++ % (sizeof(owned_cache) / sizeof(owned_cache[0]));
	str_copy(owned_cache[i].key, sizeof(owned_cache[i].key), key);
	owned_cache[i].ok = ok;
	pthread_mutex_unlock(&cache_mu);
	return ok;
}

/* Makes the workdir (which is also HOME) the sandbox user's before the
 * container starts: one archive PUT, skipped when the image has it so. */
static int seed_files(struct sandbox_ctx *ctx, const struct sandbox *sb, const char *image_id,
		      struct sp_err *e)
{
	struct docker_tar_entry ents[1];
	struct buf tar;
	unsigned uid, gid, mode;
	size_t n = 0;
	int64_t t = now_ms() / 1000;
	int rc;

	sandbox_owner(sb, &uid, &gid, &mode);
	/* a loop disk's root is the workdir, made for the owner (disk.c); the
	 * image around it is read-only: nothing to seed */
	if (sb->disk.how == SB_DISK_LOOP && ctx->cfg->disk_readonly_rootfs)
		return 0;
	if (strcmp(sb->workdir, "/") != 0 && sb->disk.how != SB_DISK_LOOP &&
	    !already_owned(ctx, sb, image_id, sb->workdir, uid, gid, mode))
		ents[n++] =
			(struct docker_tar_entry){ sb->workdir + 1, 1, mode, uid, gid, NULL, 0, t };
	if (n == 0)
		return 0;
	buf_init(&tar, 64 * 1024);
	rc = docker_tar_build(ents, n, &tar, e);
	if (rc == 0)
		rc = docker_archive_put(ctx->dk, sb->container_id, "/", tar.data, tar.len, e);
	buf_free(&tar);
	return rc;
}

/* Names the request field behind Docker refusing a container (a limit the
 * host cannot give, such as more CPUs than it has). */
static void refused_field(struct sp_err *e)
{
	const char *field = NULL;

	if (e->code != SP_BAD_REQUEST)
		return;
	if (strstr(e->msg, "CPU") || strstr(e->msg, "cpu"))
		field = "cpu";
	else if (strstr(e->msg, "emory"))
		field = "memoryMb";
	else if (strstr(e->msg, "ids"))
		field = "pidsLimit";
	if (field) {
		char msg[sizeof(e->msg)];
		str_copy(msg, sizeof(msg), e->msg);
		sp_err_field(e, SP_BAD_REQUEST, field, "%s: %s", field, msg);
	}
}

/* 1 when sb's user (as named, or resolved to numbers) is the keeper uid. */
static int keeper_user(const struct config *cfg, const struct sandbox *sb)
{
	const char *const names[] = { sb->user, sb->owner };

	for (int i = 0; i < 2; i++) {
		char tmp[64], *colon;
		long long u;
		str_copy(tmp, sizeof(tmp), names[i]);
		colon = strchr(tmp, ':');
		if (colon)
			*colon = '\0';
		if (tmp[0] && parse_ll(tmp, 0, 0x7fffffff, &u) == 0 && u == cfg->keeper_uid)
			return 1;
	}
	return 0;
}

/* Ends a failed creation: removes the container if there is one (and
 * anything else with its label), releases the reservations once Docker
 * says it is gone and deletes the row: the caller is told why and gets no
 * sandbox, so no "error" row it never learned the id of stays in list and
 * /metrics (the log line keeps id and reason). The row is kept as "error"
 * only when the delete fails or the container could not be seen gone (the
 * reaper finishes it). Returns -1 with e unchanged. */
static int create_failed(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	struct sp_err ignore;
	int gone;

	if (sb->container_id[0])
		docker_container_remove(ctx->dk, sb->container_id, 1, &ignore);
	/* and anything else with its label (a create whose answer was lost) */
	gone = sandbox_end_containers(ctx, sb->id, 0, &ignore) == 0;
	sandbox_disk_abort(ctx, sb);
	sb->status = SB_ERROR;
	str_copy(sb->error_message, sizeof(sb->error_message), e->msg);
	if (!gone || store_sandbox_del(ctx->st, sb->org, sb->id, &ignore) < 0)
		save_if(ctx, sb, SB_CREATING, &ignore);
	if (gone) {
		store_release(ctx->st, sb->org, sb->id, &ignore);
		store_server_release(ctx->st, sb->server_id, sb->id, &ignore);
	}
	log_info("sandbox %s: creation failed: %s", sb->id, e->msg);
	return -1;
}

static void template_info_note(const char *image, json_object *img);

static int prepare_image(struct sandbox_ctx *ctx, struct sandbox *sb, json_object **img,
			 struct sp_err *e, int *pulled)
{
	if (docker_image_inspect(ctx->dk, sb->image, img, e) == 0) {
		if (sb->template_name[0] && !sb->server_id[0])
			template_info_note(sb->image, *img);
		return 0;
	}
	if (e->code != SP_NOT_FOUND)
		return -1;
	log_info("sandbox %s: pulling %s", sb->id, sb->image);
	*pulled = 1;
	if (sb->status == SB_CREATING && sb->org[0]) {
		/* a pull may take long: the record says how long it may stay creating */
		char u[32];
		const char *kv[] = { "creatingUntil", u };
		struct sp_err ignore;
		sb->creating_until =
			now_ms() +
			(int64_t)(ctx->cfg->pull_timeout_s + ctx->cfg->create_timeout_s) * 1000;
		snprintf(u, sizeof(u), "%lld", (long long)sb->creating_until);
		store_sandbox_update(ctx->st, sb->org, sb->id, "creating", kv, 2, 0, &ignore);
	}
	if (docker_image_pull(ctx->dk, sb->image, ctx->cfg->pull_timeout_s, e) < 0) {
		char msg[sizeof(e->msg)];
		str_copy(msg, sizeof(msg), e->msg);
		if (e->code == SP_UNAVAILABLE)
			return -1;
		/* the built-in template images are built, not pulled */
		return sp_err_field(e, SP_BAD_REQUEST, "image", "Image %s is not available: %s%s",
				    sb->image, msg,
				    strncmp(sb->image, "sandpit/", 8) == 0
					    ? " (a template image: build it with make images)"
					    : "");
	}
	return docker_image_inspect(ctx->dk, sb->image, img, e);
}

/* Catches every record of org up (list pages read and dropped). */
static void catch_up_org(struct sandbox_ctx *ctx, const char *org)
{
	struct sandbox_page_req pg = { SB_LIST_PAGE_MAX, NULL };
	struct sandbox_page page;
	char cursor[sizeof(page.next_cursor)] = "";
	struct sp_err e;

	do {
		pg.cursor = cursor;
		if (sandbox_list(ctx, org, &pg, &page, &e) < 0)
			return;
		str_copy(cursor, sizeof(cursor), page.next_cursor);
		sandbox_page_free(&page);
	} while (cursor[0]);
}

/* Reserves the sandbox's share of its org's quota. When the quota looks
 * full, sandboxes that died unobserved are caught up first (their share is
 * released) and the reservation is tried once more. 429 QUOTA_EXCEEDED
 * (no Retry-After) when still full. */
static int reserve(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	char msg[256];
	int rc;

	for (int attempt = 0; attempt < 2; attempt++) {
		rc = store_reserve(ctx->st, sb->org, sb->id, sb->deadline_at,
				   (int64_t)(sb->cpu * 1000 + 0.5), sb->memory_mb, msg, sizeof(msg),
				   e);
		if (rc < 0) {
			/* the answer was lost, perhaps after the write: undo it */
			struct sp_err ignore;
			store_release(ctx->st, sb->org, sb->id, &ignore);
			return -1;
		}
		if (rc == 0)
			return 0;
		if (attempt == 0)
			catch_up_org(ctx, sb->org);
	}
	return sp_err_set(e, SP_QUOTA, "%s", msg);
}

/* 1 for "/" or "/a/b": no empty, "." or ".." component, no trailing '/'
 * (the workdir becomes a tar entry and Docker's WorkingDir as it is). */
static int path_clean(const char *p)
{
	if (strcmp(p, "/") == 0)
		return 1;
	while (*p == '/') {
		size_t n = strcspn(p + 1, "/");
		if (n == 0 || (n == 1 && p[1] == '.') || (n == 2 && p[1] == '.' && p[2] == '.'))
			return 0;
		p += 1 + n;
	}
	return *p == '\0';
}

/* A create without a name gets Dokploy's: "sandbox-" and the time in ms in
 * base 36, so lists and dashboards have something to show. */
static void default_name(int64_t ms, char *out, size_t cap)
{
	char digits[16];
	size_t n = 0;
	uint64_t v = ms > 0 ? (uint64_t)ms : 0;

	do {
		digits[n++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
		v /= 36;
	} while (v && n < sizeof(digits));
	if (cap < n + 9)
		return;
	memcpy(out, "sandbox-", 8);
	for (size_t i = 0; i < n; i++)
		out[8 + i] = digits[n - 1 - i];
	out[8 + n] = '\0';
}

int sandbox_create(struct sandbox_ctx *ctx, const char *org, const struct sandbox_create_req *rq,
		   struct sandbox *out, struct sp_err *e)
{
	const struct template_conf *t = NULL;
	struct sandbox *sb = out;
	json_object *env = NULL, *img = NULL, *body = NULL, *v;
	struct buf sealed;
	char missing[32];
	int64_t now = now_ms();
	struct sandbox_timing tm = { 0 };
	int64_t t0 = mono_us(), t1;
	int rc = -1, retried = 0;

	buf_init(&sealed, 256 * 1024);
	memset(sb, 0, sizeof(*sb));
	if (!rq->template_name && !rq->image)
		return sp_err_field(e, SP_BAD_REQUEST, "template",
				    "Either template or image is required");
	if (rq->template_name && rq->image)
		return sp_err_field(e, SP_BAD_REQUEST, "image",
				    "Give either template or image, not both");
	if (rq->workdir && !path_clean(rq->workdir))
		return sp_err_field(e, SP_BAD_REQUEST, "workdir",
				    "workdir: must be a plain absolute path (no '//', '.', '..' or "
				    "trailing '/')");
	if (rq->template_name) {
		t = config_template(ctx->cfg, rq->template_name);
		if (!t)
			return sp_err_field(
				e, SP_BAD_REQUEST, "template",
				"template: unknown template '%s' (see sandbox.templates)",
				rq->template_name);
		str_copy(sb->template_name, sizeof(sb->template_name), t->name);
		str_copy(sb->image, sizeof(sb->image), t->image);
		str_copy(sb->user, sizeof(sb->user), "1000:1000");
		str_copy(sb->owner, sizeof(sb->owner), "1000:1000");
	} else {
		str_copy(sb->image, sizeof(sb->image), rq->image);
	}
	crypto_random_id(sb->id, SANDBOX_ID_LEN);
	sandbox_pool_claim(ctx, rq, sb); /* a warm container brings its own id */
	str_copy(sb->org, sizeof(sb->org), org);
	if (rq->name)
		str_copy(sb->name, sizeof(sb->name), rq->name);
	else
		default_name(now, sb->name, sizeof(sb->name));
	sb->status = SB_CREATING;
	sb->cpu = rq->cpu > 0 ? rq->cpu : SB_DEFAULT_CPU;
	sb->memory_mb = rq->memory_mb > 0 ? rq->memory_mb : SB_DEFAULT_MEMORY_MB;
	sb->pids_limit = rq->pids_limit > 0 ? rq->pids_limit : SB_DEFAULT_PIDS;
	sb->timeout_ms = rq->timeout_ms > 0 ? rq->timeout_ms : SB_DEFAULT_TIMEOUT_MS;
	sb->max_lifetime_ms = rq->max_lifetime_ms > 0 ? rq->max_lifetime_ms : SB_MAX_LIFETIME_MS;
	str_copy(sb->network_mode, sizeof(sb->network_mode),
		 rq->network_mode ? rq->network_mode : "isolated");
	str_copy(sb->workdir, sizeof(sb->workdir), rq->workdir ? rq->workdir : TEMPLATE_HOME);
	str_copy(sb->runtime, sizeof(sb->runtime),
		 rq->runtime ? rq->runtime : ctx->cfg->default_runtime);
	sb->created_at = now;
	sb->last_activity_at = now;
	sb->deadline_at = now + sb->max_lifetime_ms;
	sb->expires_at = min64(now + sb->timeout_ms, sb->deadline_at);
	/* what the main process writes into the container (whole seconds) */
	sb->container_expires_at = (sb->expires_at + 999) / 1000 * 1000;
	sb->creating_until = now + (int64_t)ctx->cfg->create_timeout_s * 1000;

	env = json_object_new_array();
	template_env(t, sb->workdir, env);
	if (rq->env_vars && parse_env_vars(rq->env_vars, rq->env_vars_len, env, e) < 0)
		goto out;
	if (rq->env_vars && rq->env_vars_len &&
	    crypto_seal(ctx->cfg->data_key, sb->id, rq->env_vars, rq->env_vars_len, &sealed) < 0) {
		sp_err_set(e, SP_INTERNAL, "Could not seal envVars");
		goto out;
	}
	if (sandbox_install_id(ctx, e) < 0 || reserve(ctx, sb, e) < 0)
		goto out;
	if (sandbox_place(ctx, org, sb, rq->server_id, e) < 0 ||
	    sandbox_select_server(ctx, sb->server_id, e) < 0 || ensure_docker(ctx, e) < 0 ||
	    ensure_networks(ctx, e) < 0 || runtime_ok(ctx, sb, e) < 0 ||
	    sandbox_disk_plan(ctx, sb, rq->disk_mb, e) < 0 ||
	    save(ctx, sb, sealed.len ? sealed.data : NULL, e) < 0) {
		struct sp_err ignore;
		store_release(ctx->st, sb->org, sb->id, &ignore);
		store_server_release(ctx->st, sb->server_id, sb->id, &ignore);
		goto out;
	}
	t1 = mono_us();
	tm.place_us = t1 - t0;
	if (sb->pooled) {
		/* its labels predate its org: the reaper finds the record through this */
		struct sp_err oe;
		store_owner_set(ctx->st, sb->id, sb->org, ttl_for(ctx->cfg, sb), &oe);
		if (sandbox_pool_activate(ctx, sb, e) == 0) {
			tm.pooled = 1;
			t0 = mono_us();
			tm.start_us = t0 - t1;
			goto running;
		}
		/* the warm container is gone or refused: make a cold one */
		log_warn("sandbox %s: warm container failed (%s); creating it cold", sb->id,
			 e->msg);
		{
			struct sp_err ignore;
			docker_container_remove(ctx->dk, sb->container_id, 1, &ignore);
		}
		sb->pooled = 0;
		sb->container_id[0] = '\0';
		sp_err_clear(e);
	}
	if (prepare_image(ctx, sb, &img, e, &tm.pulled) < 0) {
		create_failed(ctx, sb, e);
		goto out;
	}
	if (!t) {
		json_object *icfg, *user;
		if (json_object_object_get_ex(img, "Config", &icfg) &&
		    json_object_object_get_ex(icfg, "User", &user) && json_object_get_string(user))
			str_copy(sb->user, sizeof(sb->user), json_object_get_string(user));
		if (!sb->user[0])
			str_copy(sb->user, sizeof(sb->user), "root");
	}
	t0 = mono_us();
	tm.image_us = t0 - t1;
	if (sandbox_disk_prepare(ctx, sb, e) < 0) {
		create_failed(ctx, sb, e);
		goto out;
	}
	tm.disk_us = mono_us() - t0;
	body = container_body(ctx, sb, env);
retry : {
	char cname[128];
	config_container_name(ctx->cfg, sb->id, cname, sizeof(cname));
	if (docker_container_create(ctx->dk, cname, body, sb->container_id, e) < 0) {
		/* the network went away since this worker made sure of it
			 * (docker network prune): make it again, try once more */
		if (!retried && sandbox_network_missing(ctx, e)) {
			retried = 1;
			if (ensure_networks(ctx, e) == 0)
				goto retry;
		}
		refused_field(e);
		sandbox_disk_refused(sb, e);
		create_failed(ctx, sb, e);
		goto out;
	}
}
	if (!json_object_object_get_ex(img, "Id", &v) ||
	    find_missing_tools(ctx, sb->container_id, json_object_get_string(v), image_path(img),
			       missing, sizeof(missing), e) < 0) {
		if (e->code == SP_OK)
			sp_err_set(e, SP_INTERNAL, "Image has no id");
		create_failed(ctx, sb, e);
		goto out;
	}
	if (missing[0]) {
		sp_err_field(e, SP_BAD_REQUEST, rq->image ? "image" : "template",
			     "Image %s lacks %s: sandbox images must include sh, sleep and date",
			     sb->image, missing);
		create_failed(ctx, sb, e);
		goto out;
	}
	if (!t)
		resolve_owner(ctx, sb);
	if (!t && keeper_user(ctx->cfg, sb)) {
		sp_err_field(e, SP_BAD_REQUEST, "image",
			     "image: its user %s is the uid sandpit keeps the sandbox's lifetime "
			     "with (keeper_uid %d); use another user",
			     sb->user, ctx->cfg->keeper_uid);
		create_failed(ctx, sb, e);
		goto out;
	}
	if (sandbox_disk_owner(ctx, sb, e) < 0 ||
	    seed_files(ctx, sb, json_object_get_string(v), e) < 0) {
		create_failed(ctx, sb, e);
		goto out;
	}
	t1 = mono_us();
	tm.create_us = t1 - t0;
	if (docker_container_start(ctx->dk, sb->container_id, e) < 0) {
		if (!retried && sandbox_network_missing(ctx, e)) {
			struct sp_err ignore;
			retried = 1;
			docker_container_remove(ctx->dk, sb->container_id, 1, &ignore);
			sb->container_id[0] = '\0';
			if (ensure_networks(ctx, e) == 0)
				goto retry;
		}
		create_failed(ctx, sb, e);
		goto out;
	}
	sandbox_disk_started(ctx, sb);
	t0 = mono_us();
	tm.start_us = t0 - t1;
running:
	sb->status = SB_RUNNING;
	if (save_if(ctx, sb, SB_CREATING, e) != 0) {
		/* someone removed or changed the row meanwhile: do not leave the container */
		struct sp_err ignore;
		docker_container_stop(ctx->dk, sb->container_id, 0, &ignore);
		if (e->code == SP_OK)
			sp_err_set(e, SP_CONFLICT,
				   "Sandbox was removed while it was being created");
		goto out;
	}
	tm.ready_us = mono_us() - t0;
	if (rq->timing)
		*rq->timing = tm;
	log_info("sandbox %s created (org %s, image %s)", sb->id, org, sb->image);
	rc = 0;
out:
	if (rc < 0)
		sandbox_disk_abort(ctx, sb);
	buf_wipe(&sealed);
	json_object_put(env);
	json_object_put(img);
	json_object_put(body);
	return rc;
}

/* Writes the container's expiry (epoch s, rounded up) and, when
 * timeout_ms > 0, its timeout into /.sandpit, as the keeper: the only
 * writer there. Records what it wrote (containerExpiresAt). */
static int keeper_write(struct sandbox_ctx *ctx, struct sandbox *sb, int64_t expires_ms,
			int64_t timeout_ms, struct sp_err *e)
{
	json_object *body = json_object_new_object(), *cmd = json_object_new_array();
	char exp[32], tsec[32], keeper[48], eid[65], at[32];
	const char *kv[] = { "containerExpiresAt", at };
	int timed_out = 0, code = -1, running = 0, rc = -1;

	snprintf(exp, sizeof(exp), "%lld", (long long)((expires_ms + 999) / 1000));
	snprintf(tsec, sizeof(tsec), "%lld", (long long)((timeout_ms + 999) / 1000));
	if (timeout_ms <= 0)
		tsec[0] = '\0';
	sandbox_keeper_user(ctx->cfg, keeper, sizeof(keeper));
	json_object_array_add(cmd, json_object_new_string("sh"));
	json_object_array_add(cmd, json_object_new_string("-c"));
	json_object_array_add(cmd, json_object_new_string(sh_expiry));
	json_object_array_add(cmd, json_object_new_string("sandpit-keeper"));
	json_object_array_add(cmd, json_object_new_string(exp));
	json_object_array_add(cmd, json_object_new_string(tsec));
	json_object_object_add(body, "Cmd", cmd);
	json_object_object_add(body, "User", json_object_new_string(keeper));
	json_object_object_add(body, "WorkingDir", json_object_new_string("/"));
	json_object_object_add(body, "AttachStdout", json_object_new_boolean(1));
	json_object_object_add(body, "AttachStderr", json_object_new_boolean(1));
	if (docker_exec_create(ctx->dk, sb->container_id, body, eid, e) < 0 ||
	    docker_exec_start(ctx->dk, eid, 10000, drop_output, NULL, NULL, &timed_out, e) < 0 ||
	    docker_exec_inspect(ctx->dk, eid, &code, &running, e) < 0)
		goto out;
	if (timed_out || code != 0) {
		sp_err_set(e, SP_INTERNAL, "Could not write the sandbox's expiry (exit %d)", code);
		goto out;
	}
	sb->container_expires_at = (expires_ms + 999) / 1000 * 1000;
	snprintf(at, sizeof(at), "%lld", (long long)sb->container_expires_at);
	rc = store_sandbox_update(ctx->st, sb->org, sb->id, "running", kv, 2, 0, e) < 0 ? -1 : 0;
out:
	json_object_put(body);
	return rc;
}

int sandbox_set_timeout(struct sandbox_ctx *ctx, const char *org, const char *id,
			int64_t timeout_ms, struct sandbox *out, struct sp_err *e)
{
	int64_t now = now_ms();

	if (sandbox_get_running(ctx, org, id, out, e) < 0)
		return -1;
	if (ensure_docker(ctx, e) < 0)
		return -1;
	out->timeout_ms = timeout_ms;
	out->expires_at = min64(now + timeout_ms, out->deadline_at);
	if (keeper_write(ctx, out, out->expires_at, timeout_ms, e) < 0) {
		if (e->code == SP_NOT_FOUND || e->code == SP_CONFLICT)
			return container_gone(ctx, out, e);
		return -1;
	}
	{
		char t[32], x[32];
		const char *kv[] = { "timeoutMs", t, "expiresAt", x };
		int r;
		snprintf(t, sizeof(t), "%lld", (long long)out->timeout_ms);
		snprintf(x, sizeof(x), "%lld", (long long)out->expires_at);
		r = store_sandbox_update(ctx->st, org, id, "running", kv, 4, 0, e);
		if (r < 0)
			return -1;
		if (r == 1)
			return sp_err_set(e, SP_PRECONDITION, "Sandbox is killed");
	}
	return 0;
}

/* The container's expiry leads the record's by this much when sandpit
 * moves it, so a burst of short operations costs one write. */
#define EXPIRY_LEAD_MS 3000

/* Moves the container's expiry to cover the record's, if it does not yet
 * (short operations the watcher may not have seen). */
static void sync_expiry(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	struct sp_err e;
	int64_t target;

	if (sb->status != SB_RUNNING || sb->expires_at <= sb->container_expires_at || !ctx->dk)
		return;
	target = min64(sb->expires_at + EXPIRY_LEAD_MS, sb->deadline_at);
	if (keeper_write(ctx, sb, target, 0, &e) < 0)
		log_warn("sandbox %s: could not move its expiry: %s", sb->id, e.msg);
}

/* A sandbox being killed or removed needs no deferred expiry write: it
 * would only meet a container that is gone ("No such container"). */
static void drop_pending_expiry(struct sandbox_ctx *ctx, const char *id)
{
	if (strcmp(ctx->pending_id, id) == 0)
		ctx->pending_id[0] = '\0';
}

void sandbox_flush_expiry(struct sandbox_ctx *ctx)
{
	struct sandbox sb;
	struct sp_err e;

	if (!ctx->pending_id[0])
		return;
	if (load(ctx, ctx->pending_org, ctx->pending_id, &sb, &e) == 0 && ctx->dk) {
		/* a server that is not answering (RELIABILITY L2): later, from
		 * the idle loop, rather than a worker waiting on it now */
		if (sb.status == SB_RUNNING && docker_client_suspect(ctx->dk))
			return;
		if (ensure_docker(ctx, &e) == 0)
			sync_expiry(ctx, &sb);
	}
	ctx->pending_id[0] = '\0';
}

int sandbox_touch_record(struct sandbox_ctx *ctx, struct sandbox *sb, int64_t extra_ms,
			 struct sp_err *e)
{
	int64_t now = now_ms();
	int64_t expires = min64(now + sb->timeout_ms + extra_ms, sb->deadline_at);
	char a[32], x[32];
	const char *kv[] = { "lastActivityAt", a, "expiresAt", x };

	sb->last_activity_at = now;
	sb->expires_at = expires;
	snprintf(a, sizeof(a), "%lld", (long long)now);
	snprintf(x, sizeof(x), "%lld", (long long)expires);
	if (store_sandbox_update(ctx->st, sb->org, sb->id, "running", kv, 4, 0, e) < 0)
		return -1;
	/* while a command runs the watcher sees it; as it ends, the container's
	 * expiry must cover the record's: after the answer when the worker can
	 * wait (sandbox_idle), else now */
	if (extra_ms == 0 && sb->expires_at > sb->container_expires_at) {
		if (!ctx->defer_expiry) {
			sync_expiry(ctx, sb);
		} else {
			if (ctx->pending_id[0] && strcmp(ctx->pending_id, sb->id) != 0)
				sandbox_flush_expiry(ctx);
			str_copy(ctx->pending_org, sizeof(ctx->pending_org), sb->org);
			str_copy(ctx->pending_id, sizeof(ctx->pending_id), sb->id);
		}
	}
	return 0;
}

int sandbox_kill(struct sandbox_ctx *ctx, const char *org, const char *id, struct sandbox *out,
		 struct sp_err *e)
{
	int gone;

	if (load(ctx, org, id, out, e) < 0)
		return -1;
	catch_up_time(ctx, out);
	if (out->status == SB_CREATING)
		return sp_err_set(e, SP_PRECONDITION, "Sandbox is creating");
	drop_pending_expiry(ctx, id);
	if (!ctx->dk) {
		*e = ctx->server_err;
		return -1;
	}
	/* by label, whatever the record says: SIGTERM, 2 s grace, SIGKILL */
	gone = sandbox_end_containers(ctx, id, SB_KILL_GRACE_S, e);
	if (gone < 0)
		return -1;
	gone = gone == 0;
	if (out->status == SB_RUNNING) {
		transition(ctx, out, SB_KILLED, now_ms(), NULL, gone);
		log_info("sandbox %s killed", out->id);
	} else if (gone) {
		/* already killed: killing is idempotent; the share is released
		 * now that Docker says nothing runs */
		store_release(ctx->st, org, id, e);
		store_server_release(ctx->st, out->server_id, id, e);
		sp_err_clear(e);
	}
	if (out->status == SB_ERROR)
		return sp_err_set(e, SP_PRECONDITION, "Sandbox is error");
	return 0;
}

int sandbox_remove(struct sandbox_ctx *ctx, const char *org, const char *id, struct sp_err *e)
{
	struct sandbox sb;
	int gone;

	if (load(ctx, org, id, &sb, e) < 0)
		return -1;
	drop_pending_expiry(ctx, id);
	if (!ctx->dk) {
		*e = ctx->server_err;
		return -1;
	}
	/* by label, whatever the record says */
	gone = sandbox_end_containers(ctx, id, SB_KILL_GRACE_S, e);
	if (gone < 0)
		return -1;
	if (store_sandbox_del(ctx->st, org, id, e) < 0)
		return -1;
	if (gone == 0) { /* else the reaper releases it once Docker says so */
		store_release(ctx->st, org, id, e);
		store_server_release(ctx->st, sb.server_id, id, e);
	}
	if (!sb.server_id[0])
		sandbox_disk_release(ctx, id);
	sp_err_clear(e);
	log_info("sandbox %s removed", id);
	return 0;
}

/* What sandbox.templates tells of a template's image on the local Docker:
 * whether it is there and the version it really has: the sandpit.version
 * label images/build.sh probes into its images, else the *_VERSION variable
 * the upstream language images set (PYTHON_VERSION, NODE_VERSION, ...),
 * else the org.opencontainers.image.version label, else unknown (null).
 * Remembered per worker for TEMPLATE_INFO_TTL_MS, so sandbox.templates
 * costs no Docker call per request; a create of the image refreshes it from
 * the inspect it makes anyway. */
#define TEMPLATE_INFO_TTL_MS 30000

/* sandpitd's only (sandbox_templates_json): not locked, not for threads. */
static struct template_info {
	char image[256];
	char version[128];
	int present;
	int64_t at; /* mono ms */
} tinfo[CONFIG_MAX_TEMPLATES];
static unsigned tinfo_next;

static const char *img_label(json_object *img, const char *name)
{
	json_object *cfg, *labels, *v;

	if (json_object_object_get_ex(img, "Config", &cfg) &&
	    json_object_object_get_ex(cfg, "Labels", &labels) &&
	    json_object_is_type(labels, json_type_object) &&
	    json_object_object_get_ex(labels, name, &v) && json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

static void image_version(json_object *img, char *out, size_t cap)
{
	static const struct {
		const char *var, *lang;
	} vars[] = { { "PYTHON_VERSION=", "Python" }, { "NODE_VERSION=", "Node.js" },
		     { "BUN_VERSION=", "Bun" },	      { "DENO_VERSION=", "Deno" },
		     { "GOLANG_VERSION=", "Go" },     { "RUST_VERSION=", "Rust" },
		     { "RUBY_VERSION=", "Ruby" },     { "JAVA_VERSION=", "Java" },
		     { "PHP_VERSION=", "PHP" } };
	json_object *cfg, *env;
	const char *l = img_label(img, "sandpit.version");

	out[0] = '\0';
	if (l && *l) {
		str_copy(out, cap, l);
		return;
	}
	if (json_object_object_get_ex(img, "Config", &cfg) &&
	    json_object_object_get_ex(cfg, "Env", &env) &&
	    json_object_is_type(env, json_type_array))
		for (size_t i = 0; i < json_object_array_length(env); i++) {
			const char *kv = json_object_get_string(json_object_array_get_idx(env, i));
			for (size_t k = 0; kv && k < sizeof(vars) / sizeof(vars[0]); k++) {
				size_t n = strlen(vars[k].var);
				if (strncmp(kv, vars[k].var, n) == 0 && kv[n]) {
					snprintf(out, cap, "%s %s", vars[k].lang, kv + n);
					return;
				}
			}
		}
	l = img_label(img, "org.opencontainers.image.version");
	if (l && *l)
		str_copy(out, cap, l);
}

static struct template_info *tinfo_slot(const char *image)
{
	struct template_info *t;

	for (size_t i = 0; i < sizeof(tinfo) / sizeof(tinfo[0]); i++)
		if (tinfo[i].at && strcmp(tinfo[i].image, image) == 0)
			return &tinfo[i];
	t = &tinfo[tinfo_next++ % (sizeof(tinfo) / sizeof(tinfo[0]))];
	memset(t, 0, sizeof(*t));
	str_copy(t->image, sizeof(t->image), image);
	return t;
}

/* A local inspect answer (img NULL: the image is not there). */
static void template_info_note(const char *image, json_object *img)
{
	struct template_info *t = tinfo_slot(image);

	t->present = img != NULL;
	t->version[0] = '\0';
	if (img)
		image_version(img, t->version, sizeof(t->version));
	t->at = mono_ms();
	if (!t->at)
		t->at = 1;
}

/* *down: Docker failed an earlier template of the same answer (it is not
 * asked again). The inspect is optional: a server that is not answering
 * is not asked, and a call is bounded like a status catch-up
 * (RELIABILITY L2: templates never wait on Docker). */
static const struct template_info *template_info(struct sandbox_ctx *ctx, const char *image,
						 int64_t now, int *down)
{
	struct template_info *t = tinfo_slot(image);
	json_object *img = NULL;
	struct sp_err e;

	if (t->at && now - t->at < TEMPLATE_INFO_TTL_MS)
		return t;
	sp_err_clear(&e);
	if (!ctx || *down || sandbox_select_server(ctx, "", &e) < 0 || !ctx->dk ||
	    docker_client_suspect(ctx->dk)) {
		*down = 1;
		return t->at ? t : NULL; /* Docker unreachable: the last answer, if any */
	}
	docker_client_next_timeout(ctx->dk, CATCH_UP_TIMEOUT_MS);
	if (ensure_docker(ctx, &e) < 0) {
		*down = 1;
		return t->at ? t : NULL;
	}
	docker_client_next_timeout(ctx->dk, CATCH_UP_TIMEOUT_MS);
	if (docker_image_inspect(ctx->dk, image, &img, &e) == 0) {
		template_info_note(image, img);
	} else if (e.code == SP_NOT_FOUND || e.code == SP_BAD_REQUEST) {
		template_info_note(image, NULL);
	} else {
		*down = 1;
		return t->at ? t : NULL;
	}
	json_object_put(img);
	return tinfo_slot(image);
}

int sandbox_templates(struct sandbox_ctx *ctx, struct sandbox_template **out, size_t *nout,
		      struct sp_err *e)
{
	const struct config *cfg = ctx->cfg;
	int64_t now = mono_ms();
	int down = 0;

	*nout = 0;
	*out = calloc((size_t)cfg->ntemplates + 1, sizeof(**out));
	if (!*out)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	for (int i = 0; i < cfg->ntemplates; i++) {
		const struct template_conf *t = &cfg->templates[i];
		const struct template_info *ti = template_info(ctx, t->image, now, &down);
		struct sandbox_template *o = &(*out)[i];
		struct buf env;
		const char *p = t->env;
		str_copy(o->name, sizeof(o->name), t->name);
		str_copy(o->image, sizeof(o->image), t->image);
		str_copy(o->user, sizeof(o->user), "1000:1000");
		str_copy(o->workdir, sizeof(o->workdir), TEMPLATE_HOME);
		str_copy(o->description, sizeof(o->description),
			 t->description[0] ? t->description : t->image);
		str_copy(o->version, sizeof(o->version), ti ? ti->version : "");
		o->image_present = ti ? ti->present : -1;
		buf_init(&env, sizeof(o->env) - 1);
		while (*p) {
			size_t n = strcspn(p, "\n"), eq = strcspn(p, "=");
			if (eq < n) {
				char k[128], val[512], full[640];
				const char *tilde;
				snprintf(k, sizeof(k), "%.*s", (int)eq, p);
				snprintf(val, sizeof(val), "%.*s", (int)(n - eq - 1), p + eq + 1);
				tilde = strchr(val, '~');
				if (tilde)
					snprintf(full, sizeof(full), "%.*s%s%s", (int)(tilde - val),
						 val, TEMPLATE_HOME, tilde + 1);
				else
					str_copy(full, sizeof(full), val);
				if (buf_printf(&env, "%s=%s\n", k, full) < 0) {
					buf_free(&env);
					free(*out);
					*out = NULL;
					return sp_err_set(e, SP_INTERNAL,
							  "template %s: env over %zu bytes",
							  t->name, sizeof(o->env) - 1);
				}
			}
			p += n;
			if (*p)
				p++;
		}
		str_copy(o->env, sizeof(o->env), env.data ? env.data : "");
		buf_free(&env);
		(*nout)++;
	}
	return 0;
}

/* For the warm pools (pool.c): the same container as a cold create makes,
 * and the same checks, so a pooled sandbox keeps every promise of the
 * security model. */
int sandbox_prepare_server(struct sandbox_ctx *ctx, struct sp_err *e)
{
	return ensure_docker(ctx, e) < 0 || ensure_networks(ctx, e) < 0 ? -1 : 0;
}

json_object *sandbox_container_body(struct sandbox_ctx *ctx, struct sandbox *sb,
				    const struct template_conf *t, json_object **img,
				    struct sp_err *e)
{
	json_object *env, *body;
	int pulled = 0;

	if (sandbox_install_id(ctx, e) < 0)
		return NULL;
	env = json_object_new_array();
	template_env(t, sb->workdir, env);
	if (prepare_image(ctx, sb, img, e, &pulled) < 0) {
		json_object_put(env);
		return NULL;
	}
	body = container_body(ctx, sb, env);
	json_object_put(env);
	return body;
}

int sandbox_check_tools(struct sandbox_ctx *ctx, const struct sandbox *sb, json_object *img,
			char *missing, size_t cap, struct sp_err *e)
{
	json_object *v;

	if (!json_object_object_get_ex(img, "Id", &v))
		return sp_err_set(e, SP_INTERNAL, "Image has no id");
	return find_missing_tools(ctx, sb->container_id, json_object_get_string(v), image_path(img),
				  missing, cap, e);
}

int sandbox_seed_files(struct sandbox_ctx *ctx, const struct sandbox *sb, json_object *img,
		       struct sp_err *e)
{
	json_object *v;

	if (!json_object_object_get_ex(img, "Id", &v))
		return sp_err_set(e, SP_INTERNAL, "Image has no id");
	return seed_files(ctx, sb, json_object_get_string(v), e);
}

int sandbox_env_lines(const char *s, size_t len, json_object *env, struct sp_err *e)
{
	return parse_env_vars(s, len, env, e);
}
