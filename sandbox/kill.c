/*
 * sandbox_kill and sandbox_remove: the sandbox's containers ended by label
 * whatever the record says (SIGTERM, SB_KILL_GRACE_S, SIGKILL), then the
 * record killed or deleted and its shares released once Docker says the
 * containers are gone (else the reaper releases them).
 */
#include "internal.h"

#include <string.h>

#include "../common/log.h"
#include "../common/util.h"

/* Ends sandbox id's containers by label, whatever the record says
 * (SIGTERM, SB_KILL_GRACE_S of grace, SIGKILL), after dropping this
 * worker's deferred expiry write for it. What sandbox_end_containers
 * returns (0: none left), or -1 with e set. */
static int end_by_label(struct sandbox_ctx *ctx, const char *id, struct sp_err *e)
{
	sandbox_drop_pending_expiry(ctx, id);
	if (!ctx->dk) {
		*e = ctx->server_err;
		return -1;
	}
	return sandbox_end_containers(ctx, id, SB_KILL_GRACE_S, e);
}

int sandbox_kill(struct sandbox_ctx *ctx, const char *org, const char *id, struct sandbox *out,
		 struct sp_err *e)
{
	int gone;

	if (sandbox_load(ctx, org, id, out, e) < 0)
		return -1;
	sandbox_catch_up_time(ctx, out);
	if (out->status == SB_CREATING)
		return sp_err_set(e, SP_PRECONDITION, "Sandbox is creating");
	gone = end_by_label(ctx, id, e);
	if (gone < 0)
		return -1;
	gone = gone == 0;
	if (out->status == SB_RUNNING || out->status == SB_STOPPED || out->status == SB_STOPPING) {
		sandbox_transition(ctx, out, SB_KILLED, NULL, gone);
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

	if (sandbox_load(ctx, org, id, &sb, e) < 0)
		return -1;
	gone = end_by_label(ctx, id, e);
	if (gone < 0)
		return -1;
	if (store_sandbox_del(ctx->st, org, id, e) < 0)
		return -1;
	/* its volumes are free for the next sandbox (its record is gone: a
	 * claim would take them over anyway) */
	sandbox_volumes_release(ctx, &sb);
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
