/*
 * sandbox/base: what every other part of sandbox/ may call and what calls
 * nothing in sandbox/ itself: the forms of ids and generated names, the
 * installation's id, the locks that other parts look at, and who owns a
 * sandbox's files. No Docker here; the store and crypto only.
 * (tests/layers.sh holds every part to calling only the parts below it.)
 */
#ifndef SANDPIT_SANDBOX_BASE_H
#define SANDPIT_SANDBOX_BASE_H

#include <stddef.h>
#include <stdint.h>

#include "../sandbox.h"

/* id.c. This installation's id (ctx->install_id, read once per worker):
 * every container it makes carries it as the label <prefix>.install, and
 * the reaper only ever touches containers with its own, so installations
 * that share a dockerd leave each other's containers alone. -1 when Redis
 * cannot say. */
int sandbox_install_id(struct sandbox_ctx *ctx, struct sp_err *e);
/* id.c. The name of a sandbox created without one: "sandbox-" and ms in
 * base 36 (sandbox_time_name). */
void sandbox_default_name(int64_t ms, char *out, size_t cap);

/* lock.c. The locks of a sandbox that other parts look at. SB_LOCK_CAPTURE:
 * a snapshot's capture is under way (from its request to its end), and
 * may hold the sandbox's container paused; SB_LOCK_FREEZE: the capture's
 * pause itself, from just before the settle of the execs on their way
 * until the thaw, when no new exec may reach Docker. */
enum sb_lock { SB_LOCK_CAPTURE, SB_LOCK_FREEZE };
/* The lock's name in the store (store_lock) for the sandbox sandbox_id. */
void sandbox_lock_name(enum sb_lock kind, const char *sandbox_id, char *out, size_t cap);
/* 1 while someone holds the lock; 0 when nobody does or the store cannot
 * say. */
int sandbox_lock_held(struct sandbox_ctx *ctx, enum sb_lock kind, const char *sandbox_id);

/* owner.c. The uid/gid that owns files the API creates, and the mode of a
 * folder that user must be able to use: the template user, a numeric
 * image user ("1000" or "1000:1001"), or root with a world-writable sticky
 * folder (01777) for a named user not resolved to numbers (sb->owner,
 * which wins over sb->user when set). */
void sandbox_owner(const struct sandbox *sb, unsigned *uid, unsigned *gid, unsigned *dir_mode);

#endif
