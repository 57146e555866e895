/*
 * Stop and start: a sandbox's container paused (its cgroup's freezer;
 * under gVisor the whole sandbox) and thawed again, its processes and
 * memory kept (/v1's stopMemoryOutcome "preserve"). While stopped its
 * expiry and deadline still count, but the container cannot end itself
 * (its keeper is frozen with it): the read that finds it past them
 * (state.c) and the reaper end it. It never pauses a container its record
 * does not point at, and never claims a state Docker did not confirm.
 * May call: state.c, expiry.c, prepare.c.
 */
#include "internal.h"

#include "../common/log.h"
#include "../docker/docker.h"

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

int sandbox_stop(struct sandbox_ctx *ctx, const char *org, const char *id, struct sandbox *out,
		 struct sp_err *e)
{
	if (sandbox_get(ctx, org, id, out, e) < 0)
		return -1;
	if (out->status == SB_STOPPED)
		return 0;
	if (out->status != SB_RUNNING)
		return state_refusal(out, e);
	if (server_ready(ctx, e) < 0)
		return -1;
	/* the container's expiry must cover the record's before it freezes
	 * (a deferred write would meet a paused container), so that its
	 * watcher, thawed by a start, does not find it past */
	sandbox_drop_pending_expiry(ctx, id);
	sandbox_sync_expiry(ctx, out);
	if (docker_container_pause(ctx->dk, out->container_id, e) < 0) {
		if (e->code != SP_NOT_FOUND && e->code != SP_CONFLICT)
			return -1;
		/* paused already (a stop at the same time), or gone */
		sandbox_container_gone(ctx, out, e);
		if (out->status != SB_STOPPED)
			return -1;
		sp_err_clear(e);
		return 0;
	}
	sandbox_transition(ctx, out, SB_STOPPED, NULL, 0);
	if (out->status != SB_STOPPED)
		return state_refusal(out, e); /* killed meanwhile */
	log_info("sandbox %s stopped", out->id);
	return 0;
}

int sandbox_start(struct sandbox_ctx *ctx, const char *org, const char *id, struct sandbox *out,
		  struct sp_err *e)
{
	if (sandbox_get(ctx, org, id, out, e) < 0)
		return -1;
	if (out->status == SB_RUNNING)
		return 0;
	if (out->status != SB_STOPPED)
		return state_refusal(out, e);
	if (server_ready(ctx, e) < 0)
		return -1;
	if (docker_container_unpause(ctx->dk, out->container_id, e) < 0) {
		if (e->code != SP_NOT_FOUND && e->code != SP_CONFLICT)
			return -1;
		/* thawed already (a start at the same time), or gone: the
		 * read says which */
		if (sandbox_get(ctx, org, id, out, e) < 0)
			return -1;
		if (out->status != SB_RUNNING)
			return state_refusal(out, e);
	} else {
		sandbox_transition(ctx, out, SB_RUNNING, NULL, 0);
		if (out->status != SB_RUNNING)
			return state_refusal(out, e);
	}
	/* a start is activity: the expiry moves from now (the container's
	 * own, written before the stop, still covers the old one meanwhile) */
	if (sandbox_touch_record(ctx, out, 0, e) < 0)
		return -1;
	log_info("sandbox %s started", out->id);
	return 0;
}
