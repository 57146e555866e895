/*
 * The worker's context: sandbox_ctx_init/_cleanup (the store, the local
 * Docker client, the server connections). Never Docker on its own.
 */
#include "internal.h"

#include <string.h>

#include "../common/crypto.h"
#include "../common/util.h"
#include "../docker/docker.h"

int sandbox_ctx_init(struct sandbox_ctx *ctx, const struct config *cfg, struct sp_err *e)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->cfg = cfg;
	ctx->st = store_open(cfg->redis_url, cfg->redis_prefix, e);
	if (!ctx->st)
		return -1;
	ctx->dk = docker_client_create(cfg->docker_host, cfg->docker_timeout_s, e);
	if (!ctx->dk) {
		store_close(ctx->st);
		ctx->st = NULL;
		return -1;
	}
	sandbox_docker_guard(cfg, ctx->dk);
	str_copy(ctx->conns[0].id, sizeof(ctx->conns[0].id), "local");
	ctx->conns[0].dk = ctx->dk;
	ctx->nconns = 1;
	ctx->cur = &ctx->conns[0];
	return 0;
}

void sandbox_ctx_cleanup(struct sandbox_ctx *ctx)
{
	sandbox_servers_cleanup(ctx);
	store_close(ctx->st);
	docker_client_free(ctx->conns[0].dk);
	ctx->st = NULL;
	ctx->dk = NULL;
	ctx->cur = NULL;
}
