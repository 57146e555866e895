/*
 * What the core offers the /v1 face beyond the Dokploy procedures: a
 * rename under a compare-and-set, so that of two concurrent renames made
 * from one observed version exactly one applies. Face-neutral like the
 * rest of the core (no JSON, no ETags: the face derives its ETag from the
 * record and passes the values it saw); a create's environment opened
 * from the record for the caller (the document calls it non-secret
 * metadata and shows it back; Redis holds it sealed). Never touches
 * Docker.
 */
#include "sandbox.h"

#include <stdio.h>

#include "../common/buf.h"
#include "../common/crypto.h"
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

int sandbox_environment(struct sandbox_ctx *ctx, const struct sandbox *sb, struct buf *out,
			struct sp_err *e)
{
	struct buf sealed;
	char ad[SANDBOX_ID_LEN + 16];
	int rc = -1;

	if (!sb->has_environment)
		return 0;
	buf_init(&sealed, 2 * SB_ENV_TOTAL_MAX);
	if (store_sandbox_field(ctx->st, sb->org, sb->id, "environment", &sealed, e) < 0)
		goto out;
	snprintf(ad, sizeof(ad), "%s/environment", sb->id);
	if (sealed.len && crypto_open(ctx->cfg->data_key, ad, sealed.data, sealed.len, out) < 0) {
		sp_err_set(e, SP_INTERNAL, "The sandbox's environment cannot be opened");
		goto out;
	}
	rc = 0;
out:
	buf_free(&sealed);
	return rc;
}
