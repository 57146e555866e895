/*
 * A sandbox's record state: saving a record (whole, or only if its status
 * is still the one read), moving it to killed or error (its quota share
 * released once Docker says the container is gone), ending its containers
 * by label, and reading it with status catch-up (by time: creation past
 * its time, expiry or deadline passed; by Docker: the container gone).
 * Never makes a container.
 */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"

int64_t sandbox_record_ttl(const struct config *cfg, const struct sandbox *sb)
{
	int64_t left = (sb->deadline_at - now_ms()) / 1000;

	if (sb->status != SB_RUNNING && sb->status != SB_CREATING && sb->status != SB_STOPPED &&
	    sb->status != SB_STOPPING)
		left = 0;
	if (left < 0)
		left = 0;
	return left + cfg->retention_s + 1;
}

/* Writes the whole record (with the sealed env when given). */
int sandbox_save(struct sandbox_ctx *ctx, const struct sandbox *sb, const char *sealed_env,
		 struct sp_err *e)
{
	char nums[SB_RECORD_FIELDS][32];
	const char *kv[2 * SB_RECORD_FIELDS + 2];
	int n = sandbox_to_kv(sb, nums, kv);

	if (sealed_env) {
		kv[n++] = "envVars";
		kv[n++] = sealed_env;
	}
	return store_sandbox_put(ctx->st, sb->org, sb->id, kv, n, sandbox_record_ttl(ctx->cfg, sb),
				 sb->created_at, e);
}

/* Rewrites the record's fields if its status is still `expect`. Returns 0
 * when applied, 1 when someone else changed the status first. */
int sandbox_save_if(struct sandbox_ctx *ctx, const struct sandbox *sb, enum sandbox_status expect,
		    struct sp_err *e)
{
	char nums[SB_RECORD_FIELDS][32];
	const char *kv[2 * SB_RECORD_FIELDS];
	int n = sandbox_to_kv(sb, nums, kv);

	return store_sandbox_update(ctx->st, sb->org, sb->id, sandbox_status_name(expect), kv, n,
				    sandbox_record_ttl(ctx->cfg, sb), e);
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
	if (sandbox_save_if(ctx, sb, from, &e) == 1 &&
	    store_sandbox_get(ctx->st, sb->org, sb->id, &r, &e) == 0) {
		sandbox_from_rec(&r, sb);
		store_rec_free(&r);
	}
}

static int end_sandbox_containers(struct sandbox_ctx *ctx, const struct sandbox *sb, int grace_s);

void sandbox_mark_gone(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	/* a discard-mode container that ended stays until removed: its share
	 * is released once it is */
	if (sb->status == SB_RUNNING || sb->status == SB_STOPPED || sb->status == SB_STOPPING)
		transition(ctx, sb, SB_KILLED, now_ms(), NULL,
			   sb->discard ? end_sandbox_containers(ctx, sb, 0) : 1);
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

/* Whether a listed container was made in stop_mode discard (no AutoRemove). */
static int listed_discard(const struct config *cfg, json_object *c)
{
	json_object *labels, *v;
	char k[160];

	snprintf(k, sizeof(k), "%s.stopMode", cfg->label_prefix);
	return json_object_object_get_ex(c, "Labels", &labels) &&
	       json_object_object_get_ex(labels, k, &v) &&
	       strcmp(json_object_get_string(v), "discard") == 0;
}

static int listed_paused(json_object *c)
{
	json_object *st;
	const char *s;

	return json_object_object_get_ex(c, "State", &st) && (s = json_object_get_string(st)) &&
	       strcmp(s, "paused") == 0;
}

int sandbox_end_containers(struct sandbox_ctx *ctx, const char *id, int grace_s, struct sp_err *e)
{
	char label[192];
	json_object *all = NULL;
	int rc = -1, discard = 0;

	snprintf(label, sizeof(label), "%s.sandboxId=%s", ctx->cfg->label_prefix, id);
	if (sandbox_docker_ready(ctx, e) < 0 ||
	    docker_container_list(ctx->dk, label, 1, &all, e) < 0)
		return -1;
	for (size_t i = 0; i < json_object_array_length(all); i++) {
		json_object *c = json_object_array_get_idx(all, i), *cid;
		const char *s;
		int r;
		if (!json_object_object_get_ex(c, "Id", &cid) || !(s = json_object_get_string(cid)))
			continue;
		/* a paused container (a stopped sandbox) is thawed first: Docker
		 * ends a paused runc container at once, but a paused gVisor one
		 * only after waiting 10 s for the signal to land */
		if (listed_paused(c) && docker_container_unpause(ctx->dk, s, e) < 0 &&
		    e->code != SP_NOT_FOUND && e->code != SP_CONFLICT)
			goto out;
		if (!listed_running(c))
			r = docker_container_remove(ctx->dk, s, 1, e); /* created or exited */
		else if (grace_s > 0)
			r = docker_container_stop(ctx->dk, s, grace_s, e);
		else
			r = docker_container_kill(ctx->dk, s, "KILL", e);
		/* without AutoRemove an ended container stays: removed here */
		if (listed_discard(ctx->cfg, c)) {
			discard = 1;
			if (listed_running(c) && r == 0)
				r = docker_container_remove(ctx->dk, s, 1, e);
		}
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
			/* its loop disk has no AUTOCLEAR (discard.c) */
			if (discard)
				sandbox_disk_release(ctx, id);
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
int64_t sandbox_creating_end(const struct config *cfg, const struct sandbox *sb)
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

/* Status catch-up by time. A creation past its time or a sandbox past its
 * expiry ends its container (by label, so one the record does not point
 * at yet is found too) before the record changes. Returns 1 if it changed. */
int sandbox_catch_up_time(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	int64_t now = now_ms();

	if (sb->status == SB_CREATING && now > sandbox_creating_end(ctx->cfg, sb)) {
		char why[128];
		int gone = end_sandbox_containers(ctx, sb, 0);
		snprintf(why, sizeof(why), "Creation did not finish within %d s",
			 ctx->cfg->create_timeout_s);
		transition(ctx, sb, SB_ERROR, 0, why, gone);
		return 1;
	}
	/* a stopped sandbox cannot end itself (its keeper is frozen); its
	 * expiry is disarmed: only the deadline counts. An onTimeout-stop
	 * sandbox is stopped at its expiry, not ended (sandbox_get) */
	if (sb->status == SB_RUNNING || sb->status == SB_STOPPED || sb->status == SB_STOPPING) {
		int64_t end = sb->status != SB_RUNNING || sb->timeout_stop
				      ? sb->deadline_at
				      : min64(sb->expires_at, sb->deadline_at);
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
/* seen_running is shared by sandpit-stream's threads: read and written
 * under seen_mu, held for the look-up or the store only, never across a
 * Docker or Redis call. */
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
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

/* Docker's word on a record that is running or stopped: gone (no such
 * container, or not running) reads killed; a container paused or thawed
 * behind the record's back (a stop or start that died between Docker and
 * Redis, or one made by hand) moves the record to match. A running
 * record seen running within SEEN_RUNNING_MS is trusted. */
static void catch_up_container(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	json_object *info = NULL, *state, *v;
	struct sp_err e;
	int slot = seen_slot(sb->container_id), fresh, paused, running;
	int64_t now = mono_ms();

	/* a server that is not answering: the record as it is (RELIABILITY L2) */
	if ((sb->status != SB_RUNNING && sb->status != SB_STOPPED) || !ctx->dk ||
	    docker_client_suspect(ctx->dk))
		return;
	pthread_mutex_lock(&seen_mu);
	fresh = strcmp(seen_running[slot].id, sb->container_id) == 0 &&
		now - seen_running[slot].at < SEEN_RUNNING_MS;
	pthread_mutex_unlock(&seen_mu);
	if (fresh && sb->status == SB_RUNNING)
		return;
	docker_client_next_timeout(ctx->dk, CATCH_UP_TIMEOUT_MS);
	if (docker_container_inspect(ctx->dk, sb->container_id, &info, &e) < 0) {
		if (e.code == SP_NOT_FOUND)
			sandbox_mark_gone(ctx, sb);
		return;
	}
	if (!json_object_object_get_ex(info, "State", &state) ||
	    !json_object_object_get_ex(state, "Running", &v)) {
		json_object_put(info);
		return;
	}
	running = json_object_get_boolean(v);
	paused = json_object_object_get_ex(state, "Paused", &v) && json_object_get_boolean(v);
	if (!running) {
		/* a discard-mode stop leaves the container exited */
		if (!(sb->discard && sb->status == SB_STOPPED))
			sandbox_mark_gone(ctx, sb);
	} else if (paused != (sb->status == SB_STOPPED) &&
		   !(paused && sandbox_snapshot_capturing(ctx, sb->id))) {
		/* stopped: the expiry disarmed; thawed: re-armed from now (a
		 * snapshot's capture pausing a running one is neither) */
		sb->expires_at = paused ? sb->deadline_at
					: min64(now_ms() + sb->timeout_ms, sb->deadline_at);
		transition(ctx, sb, paused ? SB_STOPPED : SB_RUNNING, 0, NULL, 0);
	} else if (!paused) {
		pthread_mutex_lock(&seen_mu);
		str_copy(seen_running[slot].id, sizeof(seen_running[slot].id), sb->container_id);
		seen_running[slot].at = now;
		pthread_mutex_unlock(&seen_mu);
	}
	json_object_put(info);
}

int sandbox_load(struct sandbox_ctx *ctx, const char *org, const char *id, struct sandbox *sb,
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
	if (sandbox_load(ctx, org, id, out, e) < 0)
		return -1;
	if (!sandbox_catch_up_time(ctx, out) && !sandbox_stop_expired(ctx, out))
		catch_up_container(ctx, out);
	return 0;
}

int sandbox_get_running(struct sandbox_ctx *ctx, const char *org, const char *id,
			struct sandbox *out, struct sp_err *e)
{
	if (sandbox_load(ctx, org, id, out, e) < 0)
		return -1;
	if (!sandbox_catch_up_time(ctx, out))
		sandbox_stop_expired(ctx, out);
	if (out->status != SB_RUNNING)
		return sp_err_set(e, SP_PRECONDITION, "Sandbox is %s",
				  sandbox_status_name(out->status));
	if (!ctx->dk) {
		*e = ctx->server_err;
		return -1;
	}
	return sandbox_docker_ready(ctx, e);
}

int sandbox_container_paused(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	json_object *info = NULL, *state, *v;
	int paused = 0;
	struct sp_err e;

	if (!ctx->dk || docker_container_inspect(ctx->dk, sb->container_id, &info, &e) < 0)
		return 0;
	paused = json_object_object_get_ex(info, "State", &state) &&
		 json_object_object_get_ex(state, "Paused", &v) && json_object_get_boolean(v);
	json_object_put(info);
	if (paused && sb->status == SB_RUNNING && !sandbox_snapshot_capturing(ctx, sb->id))
		transition(ctx, sb, SB_STOPPED, 0, NULL, 0);
	return paused;
}

int sandbox_container_running(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	json_object *info = NULL, *state, *v;
	int running;
	struct sp_err e;

	if (!ctx->dk)
		return -1;
	if (docker_container_inspect(ctx->dk, sb->container_id, &info, &e) < 0)
		return e.code == SP_NOT_FOUND ? 0 : -1;
	running = json_object_object_get_ex(info, "State", &state) &&
		  json_object_object_get_ex(state, "Running", &v) && json_object_get_boolean(v);
	json_object_put(info);
	return running;
}
