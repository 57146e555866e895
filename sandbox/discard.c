/*
 * Stop and start in the operator's `discard` mode (stop_mode = discard,
 * fixed per sandbox at its creation: the record's stopMode): a stop is a
 * `docker stop` (every process ends, memory is discarded, the container
 * and its disk stay: such containers have no AutoRemove, spec.c), a start
 * a `docker start` (the main process runs again from its Cmd: main.sh's
 * deadline is absolute, and an expiry already past at its start counts
 * from then). /v1 advertises it as stopMemoryOutcome "discard". A loop
 * disk (disk.c) of such a sandbox is attached without AUTOCLEAR, so that
 * its device and data outlive the unmount at a stop; it is detached when
 * the container is removed (state.c, sandbox_end_containers); a start
 * first checks that the device is still backed by the sandbox's file
 * (after a host restart it may be none, or another sandbox's). The
 * container of a sandbox that ended is removed by the reaper.
 * Never claims a state Docker did not confirm.
 */
#include "internal.h"

#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"

/* How long a discard stop gives the sandbox's processes after SIGTERM. */
#define DISCARD_STOP_GRACE_S 2

static int refusal(const struct sandbox *sb, struct sp_err *e)
{
	return sp_err_set(e, SP_PRECONDITION, "Sandbox is %s", sandbox_status_name(sb->status));
}

int sandbox_discard_halt(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	if (docker_container_stop(ctx->dk, sb->container_id, DISCARD_STOP_GRACE_S, e) < 0) {
		if (e->code != SP_NOT_FOUND)
			return -1;
		sandbox_mark_gone(ctx, sb);
		return refusal(sb, e);
	}
	sandbox_transition(ctx, sb, SB_STOPPED, NULL, 0);
	if (sb->status != SB_STOPPED) {
		/* started or killed meanwhile: what it is now stands */
		struct sp_err ignore;
		if (sb->status == SB_RUNNING)
			docker_container_start(ctx->dk, sb->container_id, &ignore);
		return refusal(sb, e);
	}
	log_info("sandbox %s stopped (discard)", sb->id);
	return 0;
}

/* 0 when every loop disk the container mounts is still this sandbox's
 * (its device backed by its file), -1 with e set when one is not: after a
 * host restart the device is detached, or another sandbox's. */
static int disk_still_ours(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	json_object *info = NULL, *hc, *mounts;
	int ok = 1;

	if (docker_container_inspect(ctx->dk, sb->container_id, &info, e) < 0)
		return -1;
	if (json_object_object_get_ex(info, "HostConfig", &hc) &&
	    json_object_object_get_ex(hc, "Mounts", &mounts) &&
	    json_object_is_type(mounts, json_type_array))
		for (size_t i = 0; i < json_object_array_length(mounts); i++) {
			json_object *m = json_object_array_get_idx(mounts, i), *vo, *dc, *o, *dev,
				    *t;
			char vid[SANDBOX_ID_LEN + 1];
			/* the workdir's disk, or a managed volume's (volume.c) */
			int vol = json_object_object_get_ex(m, "Target", &t) &&
				  sandbox_volume_at(sb, json_object_get_string(t), vid,
						    sizeof(vid)) == 0;
			if (json_object_object_get_ex(m, "VolumeOptions", &vo) &&
			    json_object_object_get_ex(vo, "DriverConfig", &dc) &&
			    json_object_object_get_ex(dc, "Options", &o) &&
			    json_object_object_get_ex(o, "device", &dev) &&
			    !sandbox_disk_backs(ctx->cfg, json_object_get_string(dev), sb->id,
						vol ? vid : NULL))
				ok = 0;
		}
	json_object_put(info);
	if (ok)
		return 0;
	log_warn("sandbox %s: its loop disk is no longer attached; it is ended", sb->id);
	sandbox_mark_gone(ctx, sb);
	return sp_err_set(e, SP_PRECONDITION,
			  "Sandbox is killed: its disk did not survive (a host restart?)");
}

int sandbox_discard_start(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	if (disk_still_ours(ctx, sb, e) < 0) {
		if (e->code == SP_NOT_FOUND) {
			sandbox_mark_gone(ctx, sb);
			return refusal(sb, e);
		}
		return -1;
	}
	if (docker_container_start(ctx->dk, sb->container_id, e) < 0) {
		if (e->code != SP_NOT_FOUND)
			return -1;
		sandbox_mark_gone(ctx, sb);
		return refusal(sb, e);
	}
	if (sb->status != SB_RUNNING) {
		sandbox_transition(ctx, sb, SB_RUNNING, NULL, 0);
		if (sb->status != SB_RUNNING)
			return refusal(sb, e);
	}
	/* the container's /.sandpit is a fresh tmpfs: its expiry is what
	 * main.sh wrote from its arguments; the start's expiry is written
	 * into it (the watcher reads it within 5 s) */
	sb->container_expires_at = 0;
	if (sandbox_touch_record(ctx, sb, 0, e) < 0)
		return -1;
	log_info("sandbox %s started (discard)", sb->id);
	return 0;
}
