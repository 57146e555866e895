/*
 * The locks of a sandbox that parts other than their holder look at: a
 * snapshot's capture (keep/) takes SB_LOCK_CAPTURE while it runs, and the
 * record's catch-up and the stop (box/, life/) read it so that its pause
 * is not taken for a stop; it takes SB_LOCK_FREEZE around the pause, and
 * the runner (run/) refuses a new exec meanwhile. Calls nothing in sandbox/.
 */
#include "base.h"

#include <stdio.h>

#include "../../store/store.h"

void sandbox_lock_name(enum sb_lock kind, const char *sandbox_id, char *out, size_t cap)
{
	switch (kind) {
	case SB_LOCK_CAPTURE:
		snprintf(out, cap, "snapcap:%s", sandbox_id);
		break;
	case SB_LOCK_FREEZE:
		snprintf(out, cap, "snapfrz:%s", sandbox_id);
		break;
	}
}

int sandbox_lock_held(struct sandbox_ctx *ctx, enum sb_lock kind, const char *sandbox_id)
{
	char name[64];
	struct sp_err e;

	sandbox_lock_name(kind, sandbox_id, name, sizeof(name));
	return store_locked(ctx->st, name, &e) == 1;
}

int sandbox_snapshot_capturing(struct sandbox_ctx *ctx, const char *sandbox_id)
{
	return sandbox_lock_held(ctx, SB_LOCK_CAPTURE, sandbox_id);
}
