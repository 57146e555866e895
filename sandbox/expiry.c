/*
 * The container's lifetime as the keeper writes it: the expiry (and the
 * timeout of sandbox_set_timeout) into /.sandpit through an exec as the
 * keeper uid, the only writer there (sandbox/sh/expiry.sh); activity moving
 * the record's expiresAt, and the container's expiry following it (now, or
 * deferred to after the answer and flushed from the idle loop).
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"
#include "run/run.h"
#include "sh_programs.h"

/* how long the keeper's write of the expiry may take */
#define KEEPER_WRITE_MS 10000

/* Writes the container's expiry (epoch s, rounded up) and, when
 * timeout_ms > 0, its timeout into /.sandpit, as the keeper: the only
 * writer there. Records what it wrote (containerExpiresAt). Docker's 404
 * and 409 come back as they are: the callers decide what they mean. */
static int keeper_write(struct sandbox_ctx *ctx, struct sandbox *sb, int64_t expires_ms,
			int64_t timeout_ms, struct sp_err *e)
{
	char exp[32], tsec[32], at[32];
	const char *args[] = { exp, tsec, NULL }, *argv[8];
	const char *kv[] = { "containerExpiresAt", at };
	struct sb_cmd cmd = { argv, NULL, "/", SB_AS_KEEPER, NULL, 0 };
	struct sb_run_io io = { .timeout_ms = KEEPER_WRITE_MS, .inspect = 1, .unmapped = 1 };
	struct sb_run_res res;

	snprintf(exp, sizeof(exp), "%lld", (long long)((expires_ms + 999) / 1000));
	snprintf(tsec, sizeof(tsec), "%lld", (long long)((timeout_ms + 999) / 1000));
	if (timeout_ms <= 0)
		tsec[0] = '\0';
	if (run_sh(argv, sizeof(argv) / sizeof(argv[0]), sh_expiry, "sandpit-keeper", args) < 0 ||
	    run_start(ctx, sb, &cmd, &io, &res, e) < 0)
		return -1;
	/* a container too busy to run a shell in time: nothing was lost,
	 * the old expiry holds; the caller may try again */
	if (res.timed_out)
		return sp_err_set(e, SP_UNAVAILABLE,
				  "The sandbox did not take its new expiry within %d s; retry",
				  KEEPER_WRITE_MS / 1000);
	if (res.code != 0)
		return sp_err_set(e, SP_INTERNAL, "Could not write the sandbox's expiry (exit %d)",
				  res.code);
	sb->container_expires_at = (expires_ms + 999) / 1000 * 1000;
	snprintf(at, sizeof(at), "%lld", (long long)sb->container_expires_at);
	return store_sandbox_update(ctx->st, sb->org, sb->id, "running", kv, 2, 0, e) < 0 ? -1 : 0;
}

int sandbox_set_timeout(struct sandbox_ctx *ctx, const char *org, const char *id,
			int64_t timeout_ms, struct sandbox *out, struct sp_err *e)
{
	int64_t now = now_ms();

	if (sandbox_get_running(ctx, org, id, out, e) < 0)
		return -1;
	if (sandbox_docker_ready(ctx, e) < 0)
		return -1;
	out->timeout_ms = timeout_ms;
	out->expires_at = min64(now + timeout_ms, out->deadline_at);
	/* an onTimeout-stop sandbox's container keeps its deadline: sandpit,
	 * not its watcher, acts at the expiry (pause.c) */
	if (keeper_write(ctx, out, out->timeout_stop ? out->deadline_at : out->expires_at,
			 timeout_ms, e) < 0) {
		if (e->code == SP_NOT_FOUND || e->code == SP_CONFLICT)
			return sandbox_container_gone(ctx, out, e);
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
		if (r == 1) { /* killed or stopped meanwhile: say which */
			struct sandbox now_sb;
			if (sandbox_load(ctx, org, id, &now_sb, e) < 0)
				return -1;
			return sp_err_set(e, SP_PRECONDITION, "Sandbox is %s",
					  sandbox_status_name(now_sb.status));
		}
	}
	return 0;
}

/* Moves the container's expiry to cover the record's, if it does not yet
 * (short operations the watcher may not have seen). */
void sandbox_sync_expiry(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	struct sp_err e;
	int64_t target;

	if (sb->status != SB_RUNNING || sb->expires_at <= sb->container_expires_at || !ctx->dk ||
	    sb->timeout_stop)
		return;
	target = min64(sb->expires_at + SB_EXPIRY_LEAD_MS, sb->deadline_at);
	if (keeper_write(ctx, sb, target, 0, &e) < 0)
		log_warn("sandbox %s: could not move its expiry: %s", sb->id, e.msg);
}

int sandbox_arm_expiry(struct sandbox_ctx *ctx, struct sandbox *sb, int64_t at_ms, struct sp_err *e)
{
	return keeper_write(ctx, sb, min64(at_ms, sb->deadline_at), 0, e);
}

/* A sandbox being killed or removed needs no deferred expiry write: it
 * would only meet a container that is gone ("No such container"). */
void sandbox_drop_pending_expiry(struct sandbox_ctx *ctx, const char *id)
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
	if (sandbox_load(ctx, ctx->pending_org, ctx->pending_id, &sb, &e) == 0 && ctx->dk) {
		/* a server that is not answering (RELIABILITY L2): later, from
		 * the idle loop, rather than a worker waiting on it now */
		if (sb.status == SB_RUNNING && docker_client_suspect(ctx->dk))
			return;
		if (sandbox_docker_ready(ctx, &e) == 0)
			sandbox_sync_expiry(ctx, &sb);
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
			sandbox_sync_expiry(ctx, sb);
		} else {
			if (ctx->pending_id[0] && strcmp(ctx->pending_id, sb->id) != 0)
				sandbox_flush_expiry(ctx);
			str_copy(ctx->pending_org, sizeof(ctx->pending_org), sb->org);
			str_copy(ctx->pending_id, sizeof(ctx->pending_id), sb->id);
		}
	}
	return 0;
}
