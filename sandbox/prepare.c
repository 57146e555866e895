/*
 * The current server (ctx->cur, ctx->dk) made ready for sandboxes: Docker
 * negotiated (API version, runc check), both sandbox networks made, and on
 * the local server the deny rules for their bridges installed. Once per
 * worker and server; the networks again after a Docker call said one is
 * missing.
 * Reads and writes no record.
 */
#include "internal.h"

#include <string.h>

#include "../common/log.h"
#include "../docker/docker.h"

int sandbox_docker_ready(struct sandbox_ctx *ctx, struct sp_err *e)
{
	struct docker_version v;

	if (!ctx->dk || !ctx->cur)
		return sp_err_set(e, SP_UNAVAILABLE, "The sandbox's server cannot be reached");
	if (ctx->cur->docker_ready)
		return 0;
	if (docker_negotiate(ctx->dk, ctx->cfg->allow_old_runc, &v, e) < 0)
		return -1;
	ctx->cur->docker_ready = 1;
	return 0;
}

/* Makes both sandbox networks of the current server exist, once per worker
 * and server, and again after a Docker call said one is missing (see
 * sandbox_network_missing). On the local server it also installs the deny
 * rules for their bridges (firewall.c): where that fails, sandboxes are not
 * placed there unless allow_unfiltered_local is set. */
int sandbox_ensure_networks(struct sandbox_ctx *ctx, struct sp_err *e)
{
	static const char *const modes[2] = { "isolated", "internet" };
	char name[128], label[128], want[2][16], got[2][32];

	if (ctx->cur->networks_ready)
		return 0;
	config_network_label(ctx->cfg, label, sizeof(label));
	for (int i = 0; i < 2; i++) {
		config_network_name(ctx->cfg, modes[i], name, sizeof(name));
		firewall_bridge_name(ctx->cfg, modes[i], want[i], sizeof(want[i]));
		if (docker_network_ensure_ex(ctx->dk, name, i == 0, label, want[i], got[i],
					     sizeof(got[i]), e) < 0)
			return -1;
	}
	if (ctx->cur == &ctx->conns[0]) {
		const char *br[2] = { got[0], got[1] };
		struct sp_err fe;
		if (firewall_apply(ctx->cfg, br, 2, &fe) < 0) {
			if (!ctx->cfg->allow_unfiltered_local)
				return sp_err_set(
					e, SP_UNAVAILABLE,
					"The local server cannot drop sandbox traffic to the "
					"host and to deny_cidrs (%s); an operator may set "
					"allow_unfiltered_local = true to place sandboxes "
					"there anyway",
					fe.msg);
			log_warn("local server: sandbox traffic is not filtered (%s); "
				 "allow_unfiltered_local is set",
				 fe.msg);
		}
	}
	ctx->cur->networks_ready = 1;
	return 0;
}

int sandbox_network_missing(struct sandbox_ctx *ctx, const struct sp_err *e)
{
	if (e->code != SP_NOT_FOUND || !strstr(e->msg, "network") || !ctx->cur)
		return 0;
	log_warn("server %s: %s; making the sandbox networks again", ctx->cur->id, e->msg);
	ctx->cur->networks_ready = 0;
	return 1;
}

/* For the warm pools (pool.c): the same container as a cold create makes,
 * and the same checks, so a pooled sandbox keeps every promise of the
 * security model. */
int sandbox_prepare_server(struct sandbox_ctx *ctx, struct sp_err *e)
{
	return sandbox_docker_ready(ctx, e) < 0 || sandbox_ensure_networks(ctx, e) < 0 ? -1 : 0;
}
