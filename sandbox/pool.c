/*
 * Warm pools: started containers of a template kept ready, so a create
 * that fits one costs a claim instead of a container create and start.
 * A pooled container is made exactly like a cold one (spec.c: the
 * whole security model) with its sandbox id given in advance; only its main
 * process differs (sandbox/sh/pool.sh): it waits, with a pool expiry of
 * its own, for a USR1 that arms it. Arming writes the deadline and the first expiry into files
 * of the keeper's and signals the main process from a detached exec (as the
 * keeper, sandbox/sh/arm.sh),
 * which then sleeps until the deadline like any sandbox: the container ends
 * on time with nothing of sandpit running. Claims are atomic in Redis
 * (ZPOPMAX), so a container is never handed out twice, across workers and
 * hosts. A create that fails after its claim and before the arming puts
 * its container back (it is as the pool made it) or removes it at once.
 * Unused containers end at their pool expiry on their own; workers
 * refill pools between requests.
 * May call: spec.c, image.c, owner.c, disk.c, prepare.c, servers.c, ctx.c.
 * Never creates a record: create.c claims and arms.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"
#include "run/run.h"
#include "sh_programs.h"

#define POOL_MARGIN_MS 60000 /* never hand out a container this close to its pool expiry */

/* The margin for pool p: POOL_MARGIN_MS, or a quarter of a shorter ttl (a
 * ttl of 60 s or less would otherwise make every container too old at
 * birth: never handed out, and replaced over and over). */
static int64_t pool_margin_ms(const struct pool_conf *p)
{
	int64_t q = (int64_t)p->ttl_s * 1000 / 4;

	return q < POOL_MARGIN_MS ? q : POOL_MARGIN_MS;
}
#define POOL_CHECK_MS 1000 /* how often a worker looks at the pools */

/* The pool's name in the store: server, template, network mode, and a
 * digest of the pool script, so a container made by another version of
 * sandpit (with another script) is never handed out. */
static void pool_name(const struct pool_conf *p, const char *disk_limit, int disk_default_mb,
		      char *out, size_t cap)
{
	static char version[17]; /* sandpitd's pool only: not for threads */

	if (!version[0]) {
		unsigned char h[8];
		crypto_generichash(h, sizeof(h), (const unsigned char *)sh_pool, strlen(sh_pool),
				   NULL, 0);
		sodium_bin2hex(version, sizeof(version), h, sizeof(h));
	}
	/* and the disk its containers got, so a pooled sandbox's limit is the one the record says */
	snprintf(out, cap, "local:%s.%s.%s.d%d", p->template_name, p->network, version,
		 strcmp(disk_limit, "off") == 0 ? 0 : disk_default_mb);
}

static const struct pool_conf *pool_for(const struct config *cfg,
					const struct sandbox_create_req *rq)
{
	const char *net = rq->network_mode ? rq->network_mode : "isolated";
	const char *runtime = rq->runtime ? rq->runtime : cfg->default_runtime;

	if (!rq->template_name || rq->image || rq->workdir ||
	    (rq->disk_mb > 0 && rq->disk_mb != cfg->disk_default_mb) ||
	    (rq->server_id && *rq->server_id && strcmp(rq->server_id, "local") != 0) ||
	    (cfg->placement_pool[0] && !(rq->server_id && strcmp(rq->server_id, "local") == 0)) ||
	    strcmp(runtime, cfg->default_runtime) != 0)
		return NULL;
	for (int i = 0; i < cfg->npools; i++)
		if (strcmp(cfg->pools[i].template_name, rq->template_name) == 0 &&
		    strcmp(cfg->pools[i].network, net) == 0)
			return &cfg->pools[i];
	return NULL;
}

int sandbox_pool_claim(struct sandbox_ctx *ctx, const struct sandbox_create_req *rq,
		       struct sandbox *sb, struct sandbox_pool_claim *c)
{
	const struct pool_conf *p = pool_for(ctx->cfg, rq);
	char cid[80], id[40];
	long long until = 0;
	struct sp_err e;

	memset(c, 0, sizeof(*c));
	if (!p)
		return 0;
	pool_name(p, ctx->cfg->disk_limit, ctx->cfg->disk_default_mb, c->pool, sizeof(c->pool));
	ctx->pool_dirty = 1;
	c->margin_ms = pool_margin_ms(p);
	if (store_pool_claim(ctx->st, c->pool, now_ms() + c->margin_ms, c->member,
			     sizeof(c->member), &e) != 1) {
		c->member[0] = '\0';
		return 0;
	}
	/* "containerId sandboxId expiry" (fill_one) */
	if (sscanf(c->member, "%79s %39s %lld", cid, id, &until) < 2 ||
	    strlen(id) != SANDBOX_ID_LEN) {
		c->member[0] = '\0';
		return 0;
	}
	c->expires_at = until;
	str_copy(sb->container_id, sizeof(sb->container_id), cid);
	str_copy(sb->id, sizeof(sb->id), id);
	sb->pooled = 1;
	return 1;
}

void sandbox_pool_unclaim(struct sandbox_ctx *ctx, struct sandbox_pool_claim *c, int reusable)
{
	char cid[80];
	struct sp_err e;

	if (!c->member[0] || sscanf(c->member, "%79s", cid) != 1)
		return;
	/* as the pool made it: nothing of the create's reached it (its id's
	 * reservations are released, no record or owner names it) */
	if (reusable && c->expires_at - now_ms() > c->margin_ms &&
	    store_pool_add(ctx->st, c->pool, c->expires_at, c->member, &e) == 0) {
		log_info("pool %s: container %.12s back after a failed create", c->pool, cid);
	} else {
		/* warm containers are the local server's */
		log_info("pool %s: container %.12s removed after a failed create", c->pool, cid);
		if (sandbox_select_server(ctx, "", &e) < 0 || !ctx->dk ||
		    docker_container_remove(ctx->dk, cid, 1, &e) < 0)
			log_warn("pool %s: could not remove container %.12s: %s", c->pool, cid,
				 e.msg);
	}
	c->member[0] = '\0';
}

/* Arms warm container a->cid with a sandbox's lifetimes: its main
 * process (pool.sh, the keeper's) computes the defaults itself on a
 * signal; others are handed over by arm.sh as the keeper. */
static int pool_arm(struct sandbox_ctx *ctx, const struct sandbox_arm *a, struct sp_err *e)
{
	char dl[32], dlms[8], exp[32], tsec[32];
	const char *args[] = { dl, dlms, exp, tsec, NULL }, *argv[10];
	struct sb_cmd cmd = { .argv = argv, .who = SB_AS_KEEPER };
	struct sb_run_io io = { .detached = 1 };
	struct sb_run_res res;

	if (a->max_lifetime_ms == SB_MAX_LIFETIME_MS && a->timeout_ms == SB_DEFAULT_TIMEOUT_MS)
		return docker_container_kill(ctx->dk, a->cid, "USR1", e);
	/* the record's deadline itself (sandbox_deadline_aim): the container
	 * counts what is left when it wakes, so the arming's own time is not
	 * added to it */
	snprintf(dl, sizeof(dl), "%lld", (long long)(a->deadline_at / 1000));
	snprintf(dlms, sizeof(dlms), "%03lld", (long long)(a->deadline_at % 1000));
	snprintf(exp, sizeof(exp), "%lld", (long long)((a->expires_at + 999) / 1000));
	snprintf(tsec, sizeof(tsec), "%lld", (long long)((a->timeout_ms + 999) / 1000));
	run_sh(argv, 10, sh_arm, "sandpit-arm", args);
	return run_container(ctx, a->cid, &cmd, &io, &res, e);
}

int sandbox_pool_activate(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	struct sandbox_arm a = { .deadline_at = sandbox_deadline_aim(sb),
				 .expires_at = sb->expires_at,
				 .timeout_ms = sb->timeout_ms,
				 .max_lifetime_ms = sb->max_lifetime_ms };

	/* the request's limits, before anything of the caller's runs; the
	 * pool made its containers with the defaults */
	if (sb->cpu != SB_DEFAULT_CPU || sb->memory_mb != SB_DEFAULT_MEMORY_MB ||
	    sb->pids_limit != SB_DEFAULT_PIDS) {
		json_object *u = json_object_new_object();
		int rc;
		sandbox_limits_json(ctx->cfg, sb, u);
		rc = docker_container_update(ctx->dk, sb->container_id, u, e);
		json_object_put(u);
		if (rc < 0)
			return -1;
	}
	str_copy(a.org, sizeof(a.org), sb->org);
	str_copy(a.id, sizeof(a.id), sb->id);
	str_copy(a.cid, sizeof(a.cid), sb->container_id);
	if (!ctx->defer_expiry)
		return pool_arm(ctx, &a, e);
	/* After the answer (sandbox_idle), a Docker call it need not wait
	 * for. Until then the container keeps its pool lifetime: it still
	 * ends on its own, at the latest ttl after it was made. */
	sandbox_pool_arm_pending(ctx);
	ctx->arm_pending = a;
	return 0;
}

void sandbox_pool_arm_pending(struct sandbox_ctx *ctx)
{
	struct sandbox_arm a = ctx->arm_pending;
	struct sandbox gone;
	struct sp_err e, ignore;

	if (!a.id[0])
		return;
	ctx->arm_pending.id[0] = '\0';
	sp_err_clear(&e);
	/* warm containers are the local server's */
	if (sandbox_select_server(ctx, "", &e) == 0 && ctx->dk && pool_arm(ctx, &a, &e) == 0)
		return;
	/* gone meanwhile (killed, removed): nothing to arm */
	if (e.code == SP_NOT_FOUND || e.code == SP_CONFLICT)
		return;
	/* never a sandbox whose container keeps other lifetimes than its
	 * record's: it ends now */
	log_warn("sandbox %s: its warm container could not be armed (%s); killing it", a.id, e.msg);
	if (sandbox_kill(ctx, a.org, a.id, &gone, &ignore) < 0)
		log_warn("sandbox %s: kill after a failed arming: %s", a.id, ignore.msg);
}

/* The container body of a pooled sandbox: the same spec as a cold create
 * makes (spec.c), with the template's env, after its image is there
 * (*img: its inspect, new), so a pooled sandbox keeps every promise of the
 * security model. A new object; NULL on error. */
static json_object *pool_container_body(struct sandbox_ctx *ctx, struct sandbox *sb,
					const struct template_conf *t, json_object **img,
					struct sp_err *e)
{
	json_object *env, *body;
	int pulled = 0;

	if (sandbox_install_id(ctx, e) < 0)
		return NULL;
	env = json_object_new_array();
	sandbox_template_env(t, sb->workdir, env);
	if (sandbox_prepare_image(ctx, sb, "template", img, e, &pulled) < 0 ||
	    sandbox_helper_ensure(ctx, sb->image, e) < 0) {
		json_object_put(env);
		return NULL;
	}
	body = sandbox_container_spec(ctx, sb, env);
	json_object_put(env);
	return body;
}

/* Makes one pooled container of p and registers it. */
static int fill_one(struct sandbox_ctx *ctx, const struct pool_conf *p, const char *key,
		    struct sp_err *e)
{
	const struct template_conf *t = config_template(ctx->cfg, p->template_name);
	struct sandbox sb = { 0 };
	json_object *img = NULL, *body = NULL, *cmd, *labels;
	char missing[32] = "", cname[128], expiry[32], member[128], lname[128];
	int64_t until = now_ms() + (int64_t)p->ttl_s * 1000;
	int rc = -1;

	if (!t)
		return sp_err_set(e, SP_INTERNAL, "pool template %s is gone", p->template_name);
	crypto_random_id(sb.id, SANDBOX_ID_LEN);
	str_copy(sb.template_name, sizeof(sb.template_name), t->name);
	str_copy(sb.image, sizeof(sb.image), t->image);
	str_copy(sb.user, sizeof(sb.user), "1000:1000");
	str_copy(sb.owner, sizeof(sb.owner), "1000:1000");
	sb.cpu = SB_DEFAULT_CPU;
	sb.memory_mb = SB_DEFAULT_MEMORY_MB;
	sb.pids_limit = SB_DEFAULT_PIDS;
	str_copy(sb.network_mode, sizeof(sb.network_mode), p->network);
	str_copy(sb.workdir, sizeof(sb.workdir), "/home/user");
	str_copy(sb.runtime, sizeof(sb.runtime), ctx->cfg->default_runtime);
	sb.deadline_at = until;
	sb.expires_at = until;
	if (sandbox_select_server(ctx, "", e) < 0 || sandbox_prepare_server(ctx, e) < 0 ||
	    sandbox_disk_plan(ctx, &sb, -1, e) < 0 || sandbox_disk_prepare(ctx, &sb, e) < 0)
		return -1;
	body = pool_container_body(ctx, &sb, t, &img, e);
	if (!body)
		goto out;
	/* the pool's main process, and a label saying it waits in a pool */
	snprintf(expiry, sizeof(expiry), "%lld", (long long)(until / 1000));
	cmd = json_object_new_array();
	json_object_array_add(cmd, json_object_new_string("sh"));
	json_object_array_add(cmd, json_object_new_string("-c"));
	json_object_array_add(cmd, json_object_new_string(sh_pool));
	json_object_array_add(cmd, json_object_new_string("sandpit-pool"));
	json_object_array_add(cmd, json_object_new_string(expiry));
	snprintf(lname, sizeof(lname), "%d", SB_MAX_LIFETIME_MS / 1000);
	json_object_array_add(cmd, json_object_new_string(lname));
	snprintf(lname, sizeof(lname), "%d", SB_DEFAULT_TIMEOUT_MS / 1000);
	json_object_array_add(cmd, json_object_new_string(lname));
	snprintf(lname, sizeof(lname), "%d", ctx->cfg->keeper_uid);
	json_object_array_add(cmd, json_object_new_string(lname));
	json_object_object_add(body, "Cmd", cmd);
	if (json_object_object_get_ex(body, "Labels", &labels)) {
		config_label(ctx->cfg, "pool", lname, sizeof(lname));
		json_object_object_add(labels, lname, json_object_new_string(key));
	}
	config_container_name(ctx->cfg, sb.id, cname, sizeof(cname));
	if (docker_container_create(ctx->dk, cname, body, sb.container_id, e) < 0) {
		sandbox_network_missing(ctx, e); /* the next refill makes it again */
		goto out;
	}
	if (sandbox_check_tools(ctx, &sb, img, missing, sizeof(missing), e) < 0 || missing[0] ||
	    sandbox_disk_owner(ctx, &sb, e) < 0 || sandbox_seed_files(ctx, &sb, img, e) < 0 ||
	    docker_container_start(ctx->dk, sb.container_id, e) < 0) {
		struct sp_err ignore;
		if (missing[0])
			sp_err_set(e, SP_BAD_REQUEST, "image %s lacks %s", sb.image, missing);
		docker_container_remove(ctx->dk, sb.container_id, 1, &ignore);
		goto out;
	}
	sandbox_disk_started(ctx, &sb);
	/* the fast path's helper serves from the start (fastpath.c): a
	 * claim's first command needs no docker exec */
	sb.status = SB_RUNNING;
	if (sandbox_fast_possible(ctx, &sb) && sandbox_fast_start(ctx, &sb) == 0)
		sandbox_fast_prime(ctx, &sb);
	snprintf(member, sizeof(member), "%s %s %lld", sb.container_id, sb.id, (long long)until);
	if (store_pool_add(ctx->st, key, until, member, e) < 0)
		goto out;
	log_info("pool %s: container %.12s ready", key, sb.container_id);
	rc = 0;
out:
	sandbox_disk_abort(ctx, &sb);
	json_object_put(img);
	json_object_put(body);
	return rc;
}

/* Tops one pool up by at most one container. A short-lived counter of
 * fills in progress keeps workers from overfilling together. */
static void refill(struct sandbox_ctx *ctx, const struct pool_conf *p)
{
	char name[128];
	struct sp_err e;

	pool_name(p, ctx->cfg->disk_limit, ctx->cfg->disk_default_mb, name, sizeof(name));
	/* a local server that is not answering (RELIABILITY L2): no worker
	 * waits on it for a container nobody asked for yet */
	if (sandbox_select_server(ctx, "", &e) < 0 || !ctx->dk || docker_client_suspect(ctx->dk))
		return;
	if (store_pool_fill_begin(ctx->st, name, now_ms() + pool_margin_ms(p), p->size, &e) != 1)
		return;
	if (fill_one(ctx, p, name, &e) < 0)
		log_warn("pool %s: could not make a container: %s", name, e.msg);
	store_pool_fill_end(ctx->st, name, &e);
}

void sandbox_pool_maintain(struct sandbox_ctx *ctx)
{
	int64_t now = mono_ms();

	if (!ctx->cfg->npools || (!ctx->pool_dirty && now - ctx->pool_checked_at < POOL_CHECK_MS))
		return;
	ctx->pool_checked_at = now;
	ctx->pool_dirty = 0;
	for (int i = 0; i < ctx->cfg->npools; i++)
		refill(ctx, &ctx->cfg->pools[i]);
}

int sandbox_pool_stats(struct sandbox_ctx *ctx, int i, int *ready, long long *claims)
{
	char name[128];
	struct sp_err e;

	if (i < 0 || i >= ctx->cfg->npools)
		return -1;
	pool_name(&ctx->cfg->pools[i], ctx->cfg->disk_limit, ctx->cfg->disk_default_mb, name,
		  sizeof(name));
	*ready = store_pool_size(ctx->st, name, now_ms() + pool_margin_ms(&ctx->cfg->pools[i]), &e);
	*claims = store_pool_claims(ctx->st, name, &e);
	return *ready < 0 || *claims < 0 ? -1 : 0;
}
