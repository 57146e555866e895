/*
 * Stop and start: a sandbox's container paused (its cgroup's freezer;
 * under gVisor the whole sandbox) and thawed again, its processes and
 * memory kept (/v1's stopMemoryOutcome "preserve"). While stopped its
 * inactivity expiry is disarmed (the record's expiresAt is its deadline,
 * /v1 shows no expiresAt) and only the deadline counts; the container
 * cannot end itself then (its keeper is frozen with it): the read that
 * finds it past the deadline (state.c) and the reaper end it. Before the
 * pause the container's expiry becomes its deadline, so that its watcher,
 * thawed by a start, never finds a stale one; after the start it is
 * re-armed: now + the timeout (resumeTimeout), never past the deadline.
 * An onTimeout-stop sandbox (/v1) is stopped here at its expiry
 * (sandbox_stop_expired, from a read or the reaper): its container's
 * expiry stays at its deadline, so its own watcher never ends it.
 *
 * A stop must never freeze a container while a `docker exec` into it is
 * being set up: runc's exec then waits for the frozen cgroup, and Docker
 * answers nothing about that container (not even an unpause) until the
 * cgroup is thawed by hand (seen on Docker 20.10.24, runc 1.1.5). So a
 * stop first makes the record `stopping` (no worker starts anything in it
 * from then on: sandbox_get_running refuses it), then waits until Docker
 * lists no exec of the container that is created but not yet running,
 * and only then pauses. A sandbox created in stop_mode discard is
 * stopped and started by discard.c instead. Never pauses a container its record does not
 * point at, and never claims a state Docker did not confirm.
 */
#include "internal.h"

#include <time.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"

/* How long a stop waits for execs that are being set up: at least the
 * first (a worker that read the record just before it turned stopping
 * makes its exec within it), at most the second (an exec created and
 * never started, by a worker that died, is left behind). */
#define STOP_SETTLE_MIN_MS 150
#define STOP_SETTLE_MAX_MS 5000

static int state_refusal(const struct sandbox *sb, struct sp_err *e)
{
	return sp_err_set(e, SP_PRECONDITION, "Sandbox is %s", sandbox_status_name(sb->status));
}

/* The sandbox's server, ready for a Docker call. */
static int server_ready(struct sandbox_ctx *ctx, struct sp_err *e)
{
	if (!ctx->dk) {
		*e = ctx->server_err;
		return -1;
	}
	return sandbox_docker_ready(ctx, e);
}

/* 1 while Docker lists an exec of container cid that does not run yet
 * (created, or being started), 0 when none, -1 when Docker cannot say.
 * Docker lists an exec there until it has ended. */
static int execs_pending(struct sandbox_ctx *ctx, const char *cid, struct sp_err *e)
{
	json_object *info = NULL, *ids;
	int pending = 0;

	if (docker_container_inspect(ctx->dk, cid, &info, e) < 0)
		return -1;
	if (json_object_object_get_ex(info, "ExecIDs", &ids) &&
	    json_object_is_type(ids, json_type_array))
		for (size_t i = 0; i < json_object_array_length(ids) && !pending; i++) {
			const char *eid = json_object_get_string(json_object_array_get_idx(ids, i));
			int code = -1, running = 0;
			struct sp_err ie;
			if (eid && docker_exec_inspect(ctx->dk, eid, &code, &running, &ie) == 0 &&
			    !running)
				pending = 1;
		}
	json_object_put(info);
	return pending;
}

/* Waits until no exec of sb's container is being set up (see above). */
int sandbox_settle_execs(struct sandbox_ctx *ctx, const struct sandbox *sb, struct sp_err *e)
{
	int64_t t0 = mono_ms();
	struct timespec ts = { 0, 30 * 1000 * 1000 };

	for (;;) {
		int64_t waited = mono_ms() - t0;
		if (waited >= STOP_SETTLE_MIN_MS) {
			int p = execs_pending(ctx, sb->container_id, e);
			if (p <= 0)
				return p;
			if (waited >= STOP_SETTLE_MAX_MS) {
				log_warn(
					"sandbox %s: an exec was created but not started for %d ms; "
					"pausing anyway",
					sb->id, STOP_SETTLE_MAX_MS);
				return 0;
			}
		}
		nanosleep(&ts, NULL);
	}
}

/* From stopping: the settle, the pause, and the record stopped. */
static int freeze(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	if (sandbox_settle_execs(ctx, sb, e) < 0)
		return -1;
	if (docker_container_pause(ctx->dk, sb->container_id, e) < 0) {
		if (e->code != SP_NOT_FOUND && e->code != SP_CONFLICT)
			return -1;
		/* paused already (an interrupted stop), or gone */
		if (!sandbox_container_paused(ctx, sb)) {
			sandbox_mark_gone(ctx, sb);
			return state_refusal(sb, e);
		}
		sp_err_clear(e);
	}
	/* disarmed while stopped: only the deadline counts */
	sb->expires_at = sb->deadline_at;
	sandbox_transition(ctx, sb, SB_STOPPED, NULL, 0);
	if (sb->status != SB_STOPPED) {
		/* started or killed meanwhile: what it is now stands */
		struct sp_err ignore;
		if (sb->status == SB_RUNNING)
			docker_container_unpause(ctx->dk, sb->container_id, &ignore);
		return state_refusal(sb, e);
	}
	log_info("sandbox %s stopped", sb->id);
	return 0;
}

/* A stop of the record read into out. */
static int stop_loaded(struct sandbox_ctx *ctx, struct sandbox *out, struct sp_err *e)
{
	if (out->status == SB_STOPPED)
		return 0;
	if (out->status != SB_RUNNING && out->status != SB_STOPPING)
		return state_refusal(out, e);
	if (server_ready(ctx, e) < 0)
		return -1;
	/* a snapshot's capture pauses and thaws it: a stop now would be undone */
	if (out->status == SB_RUNNING && sandbox_snapshot_capturing(ctx, out->id))
		return sp_err_set(e, SP_UNAVAILABLE,
				  "The sandbox is being captured for a snapshot; retry the stop in "
				  "a moment");
	if (out->status == SB_RUNNING) {
		sandbox_drop_pending_expiry(ctx, out->id);
		sandbox_transition(ctx, out, SB_STOPPING, NULL, 0);
		if (out->status == SB_STOPPED)
			return 0;
		if (out->status != SB_STOPPING)
			return state_refusal(out, e);
		/* the container's expiry becomes its deadline before it freezes
		 * (after the record turned stopping: nothing else starts in it
		 * meanwhile), so that its watcher, thawed by a start, does not
		 * find a stale one past */
		if (out->container_expires_at < out->deadline_at &&
		    sandbox_arm_expiry(ctx, out, out->deadline_at, e) < 0) {
			if (e->code == SP_NOT_FOUND) {
				sandbox_mark_gone(ctx, out);
				return state_refusal(out, e);
			}
			/* paused already (by hand) or not running: freeze says */
			if (e->code == SP_CONFLICT)
				return freeze(ctx, out, e);
			log_warn("sandbox %s: could not write its deadline as its expiry: %s",
				 out->id, e->msg);
			sandbox_transition(ctx, out, SB_RUNNING, NULL, 0);
			return -1;
		}
	}
	if (out->discard)
		return sandbox_discard_halt(ctx, out, e);
	return freeze(ctx, out, e);
}

int sandbox_stop(struct sandbox_ctx *ctx, const char *org, const char *id, struct sandbox *out,
		 struct sp_err *e)
{
	if (sandbox_get(ctx, org, id, out, e) < 0)
		return -1;
	return stop_loaded(ctx, out, e);
}

/* 1 while Docker lists a running exec of container cid (a command: the
 * activity the watcher counts), 0 when none, -1 when Docker cannot say. */
static int execs_running(struct sandbox_ctx *ctx, const char *cid, struct sp_err *e)
{
	json_object *info = NULL, *ids;
	int n = 0;

	if (docker_container_inspect(ctx->dk, cid, &info, e) < 0)
		return -1;
	if (json_object_object_get_ex(info, "ExecIDs", &ids) &&
	    json_object_is_type(ids, json_type_array))
		for (size_t i = 0; i < json_object_array_length(ids) && !n; i++) {
			const char *eid = json_object_get_string(json_object_array_get_idx(ids, i));
			int code = -1, running = 0;
			struct sp_err ie;
			if (eid && docker_exec_inspect(ctx->dk, eid, &code, &running, &ie) == 0 &&
			    running)
				n = 1;
		}
	json_object_put(info);
	return n;
}

int sandbox_stop_expired(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	struct sp_err e;
	int busy;

	if (sb->status != SB_RUNNING || !sb->timeout_stop || now_ms() < sb->expires_at ||
	    now_ms() >= sb->deadline_at || !ctx->dk || docker_client_suspect(ctx->dk) ||
	    sandbox_docker_ready(ctx, &e) < 0)
		return 0;
	busy = execs_running(ctx, sb->container_id, &e);
	if (busy < 0)
		return 0; /* Docker cannot say: the next read or sweep */
	if (busy) {
		/* a command runs: activity, the expiry moves from now */
		if (sandbox_touch_record(ctx, sb, 0, &e) < 0)
			log_warn("sandbox %s: could not move its expiry: %s", sb->id, e.msg);
		return 0;
	}
	if (stop_loaded(ctx, sb, &e) < 0) {
		log_warn("sandbox %s: past its expiry, but the stop failed: %s", sb->id, e.msg);
		return 0;
	}
	log_info("sandbox %s: inactive past its expiry, stopped (onTimeout stop)", sb->id);
	return 1;
}

int sandbox_start(struct sandbox_ctx *ctx, const char *org, const char *id, struct sandbox *out,
		  struct sp_err *e)
{
	if (sandbox_get(ctx, org, id, out, e) < 0)
		return -1;
	if (out->status == SB_RUNNING)
		return 0;
	if (out->status != SB_STOPPED && out->status != SB_STOPPING)
		return state_refusal(out, e);
	if (server_ready(ctx, e) < 0)
		return -1;
	if (out->discard)
		return sandbox_discard_start(ctx, out, e);
	if (docker_container_unpause(ctx->dk, out->container_id, e) < 0) {
		if (e->code != SP_NOT_FOUND && e->code != SP_CONFLICT)
			return -1;
		/* not paused: thawed already (a start at the same time), not
		 * yet paused (an interrupted stop), or gone */
		if (sandbox_get(ctx, org, id, out, e) < 0)
			return -1;
		if (out->status != SB_RUNNING && out->status != SB_STOPPING)
			return state_refusal(out, e);
		sp_err_clear(e);
	}
	if (out->status != SB_RUNNING) {
		sandbox_transition(ctx, out, SB_RUNNING, NULL, 0);
		if (out->status != SB_RUNNING)
			return state_refusal(out, e);
	}
	/* a start is activity: the expiry is re-armed from now (the
	 * container's own is its deadline since the stop; an onTimeout-stop
	 * sandbox's stays there) */
	if (sandbox_touch_record(ctx, out, 0, e) < 0)
		return -1;
	if (!out->timeout_stop) {
		struct sp_err ae;
		if (sandbox_arm_expiry(ctx, out, out->expires_at + SB_EXPIRY_LEAD_MS, &ae) < 0)
			log_warn("sandbox %s: could not re-arm its expiry: %s", out->id, ae.msg);
	}
	log_info("sandbox %s started", out->id);
	return 0;
}
