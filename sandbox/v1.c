/*
 * What the core offers the /v1 face beyond the Dokploy procedures: a
 * rename under a compare-and-set, so that of two concurrent renames made
 * from one observed version exactly one applies. Face-neutral like the
 * rest of the core (no JSON, no ETags: the face derives its ETag from the
 * record and passes the values it saw). Never touches Docker.
 */
#include "sandbox.h"

#include "../store/store.h"

int sandbox_rename(struct sandbox_ctx *ctx, const char *org, const char *id, const char *seen_name,
		   const char *name, struct sandbox *out, struct sp_err *e)
{
	const char *expect[] = { "name", seen_name };
	const char *kv[] = { "name", name };
	int r = store_sandbox_update_if(ctx->st, org, id, expect, 2, kv, 2, e);

	if (r < 0)
		return -1;
	if (r == 1)
		return sp_err_set(e, SP_ETAG_MISMATCH, "the sandbox changed meanwhile");
	return sandbox_get(ctx, org, id, out, e);
}
