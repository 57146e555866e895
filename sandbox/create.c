/*
 * sandbox_create: the request checked and filled in with defaults, the
 * envVars parsed and sealed, the quota and the server's share reserved,
 * the record written "creating" before any container exists (a crash
 * mid-create leaves a row that reads "error" later and a labelled
 * container the reaper finds), then a warm container armed or a cold one
 * made, checked, seeded and started, and the record "running". A failed
 * creation leaves nothing (create_failed). The container enforces its own
 * lifetime (sandbox/sh/main.sh): nothing here has to run for a sandbox to
 * die on time. Never returns envVars; never puts a caller value into a
 * Docker URL unescaped (docker/ escapes) or into ExecCreate's User or
 * Privileged. A caller-chosen id (an Idempotency-Key's, RELIABILITY I2)
 * is never a warm container's, and a create that finds that id's disk or
 * container name taken leaves them to the request that holds them.
 * Managed volumes (volume.c) are claimed once the record is "creating",
 * before anything else of the container, and freed when it fails.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"

/* Names the request field behind Docker refusing a container (a limit the
 * host cannot give, such as more CPUs than it has). */
static void refused_field(struct sp_err *e)
{
	const char *field = NULL;

	if (e->code != SP_BAD_REQUEST)
		return;
	if (strstr(e->msg, "CPU") || strstr(e->msg, "cpu"))
		field = "cpu";
	else if (strstr(e->msg, "emory"))
		field = "memoryMb";
	else if (strstr(e->msg, "ids"))
		field = "pidsLimit";
	if (field) {
		char msg[sizeof(e->msg)];
		str_copy(msg, sizeof(msg), e->msg);
		sp_err_field(e, SP_BAD_REQUEST, field, "%s: %s", field, msg);
	}
}

/* 1 when sb's user (as named, or resolved to numbers) is the keeper uid. */
static int keeper_user(const struct config *cfg, const struct sandbox *sb)
{
	const char *const names[] = { sb->user, sb->owner };

	for (int i = 0; i < 2; i++) {
		char tmp[64], *colon;
		long long u;
		str_copy(tmp, sizeof(tmp), names[i]);
		colon = strchr(tmp, ':');
		if (colon)
			*colon = '\0';
		if (tmp[0] && parse_ll(tmp, 0, 0x7fffffff, &u) == 0 && u == cfg->keeper_uid)
			return 1;
	}
	return 0;
}

/* Ends a failed creation: removes the container if there is one (and
 * anything else with its label), releases the reservations once Docker
 * says it is gone and deletes the row: the caller is told why and gets no
 * sandbox, so no "error" row it never learned the id of stays in list and
 * /metrics (the log line keeps id and reason). The row is kept as "error"
 * only when the delete fails or the container could not be seen gone (the
 * reaper finishes it). Returns -1 with e unchanged. */
static int create_failed(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	struct sp_err ignore;
	int gone;

	if (sb->container_id[0])
		docker_container_remove(ctx->dk, sb->container_id, 1, &ignore);
	/* and anything else with its label (a create whose answer was lost) */
	gone = sandbox_end_containers(ctx, sb->id, 0, &ignore) == 0;
	sandbox_disk_abort(ctx, sb);
	sandbox_volumes_release(ctx, sb);
	sb->status = SB_ERROR;
	str_copy(sb->error_message, sizeof(sb->error_message), e->msg);
	if (!gone || store_sandbox_del(ctx->st, sb->org, sb->id, &ignore) < 0)
		sandbox_save_if(ctx, sb, SB_CREATING, &ignore);
	if (gone) {
		store_release(ctx->st, sb->org, sb->id, &ignore);
		store_server_release(ctx->st, sb->server_id, sb->id, &ignore);
	}
	log_info("sandbox %s: creation failed: %s", sb->id, e->msg);
	return -1;
}

/* Reserves the sandbox's share of its org's quota. When the quota looks
 * full, sandboxes that died unobserved are caught up first (their share is
 * released) and the reservation is tried once more. 429 QUOTA_EXCEEDED
 * (no Retry-After) when still full. */
static int reserve(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	char msg[256];
	int rc;

	for (int attempt = 0; attempt < 2; attempt++) {
		rc = store_reserve(ctx->st, sb->org, sb->id, sb->deadline_at,
				   (int64_t)(sb->cpu * 1000 + 0.5), sb->memory_mb, msg, sizeof(msg),
				   e);
		if (rc < 0) {
			/* the answer was lost, perhaps after the write: undo it */
			struct sp_err ignore;
			store_release(ctx->st, sb->org, sb->id, &ignore);
			return -1;
		}
		if (rc == 0)
			return 0;
		if (attempt == 0)
			sandbox_catch_up_org(ctx, sb->org);
	}
	return sp_err_set(e, SP_QUOTA, "%s", msg);
}

/* 1 for "/" or "/a/b": no empty, "." or ".." component, no trailing '/'
 * (the workdir becomes a tar entry and Docker's WorkingDir as it is). */
static int path_clean(const char *p)
{
	if (strcmp(p, "/") == 0)
		return 1;
	while (*p == '/') {
		size_t n = strcspn(p + 1, "/");
		if (n == 0 || (n == 1 && p[1] == '.') || (n == 2 && p[1] == '.' && p[2] == '.'))
			return 0;
		p += 1 + n;
	}
	return *p == '\0';
}

/* The request checked, and sb filled from it with the defaults: its id
 * (or a warm container's), name, limits, lifetimes and times; *t the
 * template (NULL for an image). 400 naming the field for a bad request. */
/* The hard deadline's limit: the organization's (its quota's
 * maxLifetimeMs) or the server's, the smaller; SB_MAX_LIFETIME_MS when
 * neither sets one. *who says whose. A server of "" has none. */
static int lifetime_limit(struct sandbox_ctx *ctx, const char *org, const char *server,
			  int64_t *limit, const char **who, struct sp_err *e)
{
	struct store_rec q = { 0 };
	const char *v;
	long long n;

	*limit = SB_MAX_LIFETIME_MS;
	*who = "the installation's";
	if (store_quota_get(ctx->st, org, &q, e) < 0)
		return -1;
	v = store_rec_get(&q, "maxLifetimeMs");
	if (v && parse_ll(v, 1, SB_MAX_LIFETIME_MS, &n) == 0 && n < *limit) {
		*limit = n;
		*who = "this organization's";
	}
	store_rec_free(&q);
	if (server && *server && strcmp(server, "local") != 0) {
		char *json = NULL;
		struct sandbox_server s;
		if (store_server_get(ctx->st, server, &json, e) < 0)
			return -1;
		n = server_from_json(json, &s, e);
		free(json);
		if (n < 0)
			return -1;
		if (s.max_lifetime_ms > 0 && s.max_lifetime_ms < *limit) {
			*limit = s.max_lifetime_ms;
			*who = "its server's";
		}
	}
	return 0;
}

/* sb's lifetime within limit: a longer maxLifetimeMs is a 400 naming it, a
 * longer /v1 timeout an outOfRange naming the limit; a default lifetime
 * is the limit. Sets the lifetime fields from now when they change. */
static int lifetime_fit(const struct sandbox_create_req *rq, struct sandbox *sb, int64_t limit,
			const char *who, int64_t now, struct sp_err *e)
{
	if (rq->max_lifetime_ms > limit)
		return sp_err_field(e, SP_BAD_REQUEST, "maxLifetimeMs",
				    "maxLifetimeMs: at most %lld (%s hard deadline)",
				    (long long)limit, who);
	if (rq->timeout_field && rq->timeout_ms > limit)
		return sp_err_field(
			e, SP_OUT_OF_RANGE, rq->timeout_field,
			"%s: beyond the hard deadline (%llds after creation: %s maximum "
			"lifetime)",
			rq->timeout_field, (long long)(limit / 1000), who);
	if (rq->max_lifetime_ms <= 0 && sb->max_lifetime_ms != limit) {
		sb->max_lifetime_ms = limit;
		sb->deadline_at = now + limit;
		sb->expires_at = min64(now + sb->timeout_ms, sb->deadline_at);
		sb->container_expires_at =
			((sb->timeout_stop ? sb->deadline_at : sb->expires_at) + 999) / 1000 * 1000;
	}
	return 0;
}

static int create_fill(struct sandbox_ctx *ctx, const char *org,
		       const struct sandbox_create_req *rq, struct sandbox *sb,
		       const struct template_conf **t, struct sandbox_pool_claim *claim,
		       struct sp_err *e)
{
	int64_t now = now_ms(), limit;
	const char *who;

	if (!rq->template_name && !rq->image)
		return sp_err_field(e, SP_BAD_REQUEST, "template",
				    "Either template or image is required");
	if (rq->template_name && rq->image)
		return sp_err_field(e, SP_BAD_REQUEST, "image",
				    "Give either template or image, not both");
	if (rq->workdir && !path_clean(rq->workdir))
		return sp_err_field(e, SP_BAD_REQUEST, "workdir",
				    "workdir: must be a plain absolute path (no '//', '.', '..' or "
				    "trailing '/')");
	if (rq->template_name) {
		*t = config_template(ctx->cfg, rq->template_name);
		if (!*t)
			return sp_err_field(
				e, SP_BAD_REQUEST, "template",
				"template: unknown template '%s' (see sandbox.templates)",
				rq->template_name);
		str_copy(sb->template_name, sizeof(sb->template_name), (*t)->name);
		str_copy(sb->image, sizeof(sb->image), (*t)->image);
		str_copy(sb->user, sizeof(sb->user), "1000:1000");
		str_copy(sb->owner, sizeof(sb->owner), "1000:1000");
	} else {
		/* the image rules before any effect (sandbox_prepare_image checks
		 * them again, and the labels, on the inspect) */
		if (sandbox_image_admit(ctx, org, rq->image,
					rq->image_field ? rq->image_field : "image", e) < 0)
			return -1;
		str_copy(sb->image, sizeof(sb->image), rq->image);
	}
	if (rq->nenv && sandbox_env_check(rq->env, rq->nenv, "environment", e) < 0)
		return -1;
	/* the organization's limit, before any effect (the server's, once
	 * placed, can only lower it: create_admit) */
	if (lifetime_limit(ctx, org, NULL, &limit, &who, e) < 0 ||
	    lifetime_fit(rq, sb, limit, who, now, e) < 0)
		return -1;
	if (rq->labels && str_copy(sb->labels, sizeof(sb->labels), rq->labels) < 0)
		return sp_err_field(e, SP_BAD_REQUEST, "labels", "labels: at most %d bytes as JSON",
				    SB_LABELS_MAX);
	if (rq->id) {
		/* chosen by the caller before any effect (an Idempotency-Key's
		 * ledger entry holds it): never a warm container, which brings
		 * its own */
		if (!sandbox_id_ok(rq->id))
			return sp_err_set(e, SP_INTERNAL, "bad caller-chosen sandbox id");
		str_copy(sb->id, sizeof(sb->id), rq->id);
	} else if (rq->nenv || rq->timeout_stop || rq->nvolumes) {
		/* a warm container started before its environment (or its
		 * expiry kept at the deadline, onTimeout stop, or its volumes)
		 * was known */
		crypto_random_id(sb->id, SANDBOX_ID_LEN);
	} else {
		crypto_random_id(sb->id, SANDBOX_ID_LEN);
		/* a warm container brings its own id; it has AutoRemove, so a
		 * discard-mode sandbox is always made cold */
		if (strcmp(ctx->cfg->stop_mode, "discard") != 0)
			sandbox_pool_claim(ctx, rq, sb, claim);
	}
	sb->discard = strcmp(ctx->cfg->stop_mode, "discard") == 0;
	str_copy(sb->org, sizeof(sb->org), org);
	if (rq->name)
		str_copy(sb->name, sizeof(sb->name), rq->name);
	else
		sandbox_default_name(now, sb->name, sizeof(sb->name));
	if (rq->created_by)
		str_copy(sb->created_by, sizeof(sb->created_by), rq->created_by);
	sb->status = SB_CREATING;
	sb->cpu = rq->cpu > 0 ? rq->cpu : SB_DEFAULT_CPU;
	sb->memory_mb = rq->memory_mb > 0 ? rq->memory_mb : SB_DEFAULT_MEMORY_MB;
	sb->pids_limit = rq->pids_limit > 0 ? rq->pids_limit : SB_DEFAULT_PIDS;
	sb->timeout_ms = rq->timeout_ms > 0 ? rq->timeout_ms : SB_DEFAULT_TIMEOUT_MS;
	sb->max_lifetime_ms = rq->max_lifetime_ms > 0 ? rq->max_lifetime_ms : limit;
	str_copy(sb->network_mode, sizeof(sb->network_mode),
		 rq->network_mode ? rq->network_mode : "isolated");
	str_copy(sb->workdir, sizeof(sb->workdir), rq->workdir ? rq->workdir : TEMPLATE_HOME);
	if (sandbox_volumes_fill(ctx->cfg, rq, sb, e) < 0)
		return -1;
	str_copy(sb->runtime, sizeof(sb->runtime),
		 rq->runtime ? rq->runtime : ctx->cfg->default_runtime);
	sb->created_at = now;
	sb->last_activity_at = now;
	sb->deadline_at = now + sb->max_lifetime_ms;
	sb->expires_at = min64(now + sb->timeout_ms, sb->deadline_at);
	/* what the main process writes into the container (whole seconds):
	 * an onTimeout-stop sandbox's is its deadline (sandpit stops it at
	 * expiry, its watcher must not end it) */
	sb->timeout_stop = rq->timeout_stop;
	sb->container_expires_at =
		((sb->timeout_stop ? sb->deadline_at : sb->expires_at) + 999) / 1000 * 1000;
	sb->creating_until = now + (int64_t)ctx->cfg->create_timeout_s * 1000;
	return 0;
}

/* The container's env into env (the template's, then envVars, then the
 * environment), the envVars sealed for the record into sealed, and the
 * environment (a JSON object's text) sealed into sealed_env. */
static int create_env(struct sandbox_ctx *ctx, const struct sandbox_create_req *rq,
		      const struct template_conf *t, const struct sandbox *sb, json_object *env,
		      struct buf *sealed, struct buf *sealed_env, struct sp_err *e)
{
	json_object *o;
	const char *js;
	size_t len = 0;
	char ad[SANDBOX_ID_LEN + 16];
	int rc = 0;

	sandbox_template_env(t, sb->workdir, env);
	if (rq->env_vars && sandbox_env_lines(rq->env_vars, rq->env_vars_len, env, e) < 0)
		return -1;
	if (rq->env_vars && rq->env_vars_len &&
	    crypto_seal(ctx->cfg->data_key, sb->id, rq->env_vars, rq->env_vars_len, sealed) < 0)
		return sp_err_set(e, SP_INTERNAL, "Could not seal envVars");
	if (!rq->nenv)
		return 0;
	o = json_object_new_object();
	for (size_t i = 0; i < rq->nenv && rc == 0; i++) {
		struct buf kv;
		buf_init(&kv, SB_ENV_VAR_MAX);
		if (buf_printf(&kv, "%s=", rq->env[i].key) < 0 ||
		    buf_append(&kv, rq->env[i].value, rq->env[i].value_len) < 0)
			rc = sp_err_field(e, SP_BAD_REQUEST, "environment",
					  "environment: too long");
		else
			json_object_array_add(env,
					      json_object_new_string_len(kv.data, (int)kv.len));
		buf_wipe(&kv);
		json_object_object_add(
			o, rq->env[i].key,
			json_object_new_string_len(rq->env[i].value, (int)rq->env[i].value_len));
	}
	/* another associated text than envVars': neither opens as the other */
	snprintf(ad, sizeof(ad), "%s/environment", sb->id);
	js = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
	if (rc == 0 && crypto_seal(ctx->cfg->data_key, ad, js, len, sealed_env) < 0)
		rc = sp_err_set(e, SP_INTERNAL, "Could not seal environment");
	json_object_put(o);
	return rc;
}

/* The placed server's limit on sb's lifetime (it only lowers it: the
 * reservations made with the longer deadline then outlast it, harmless). */
static int place_lifetime(struct sandbox_ctx *ctx, const char *org,
			  const struct sandbox_create_req *rq, struct sandbox *sb, struct sp_err *e)
{
	int64_t limit;
	const char *who;

	if (lifetime_limit(ctx, org, sb->server_id, &limit, &who, e) < 0)
		return -1;
	if (limit >= sb->max_lifetime_ms)
		return 0;
	return lifetime_fit(rq, sb, limit, who, sb->created_at, e);
}

/* The sandbox admitted: its quota share reserved, its server chosen (its
 * share there reserved) and made ready, its runtime and disk possible
 * there, and the record written "creating". On failure the shares are
 * released; *saved says whether the record was written. */
static int create_admit(struct sandbox_ctx *ctx, const char *org,
			const struct sandbox_create_req *rq, struct sandbox *sb,
			const struct buf *sealed, const struct buf *sealed_env, int *saved,
			struct sp_err *e)
{
	struct sp_err ignore;
	const char *kv[] = { "environment", sealed_env->data };

	if (sandbox_install_id(ctx, e) < 0 || reserve(ctx, sb, e) < 0)
		return -1;
	if (sandbox_place(ctx, org, sb, rq->server_id, e) == 0 &&
	    (!sb->server_id[0] || place_lifetime(ctx, org, rq, sb, e) == 0) &&
	    sandbox_select_server(ctx, sb->server_id, e) == 0 &&
	    sandbox_docker_ready(ctx, e) == 0 && sandbox_ensure_networks(ctx, e) == 0 &&
	    sandbox_runtime_ok(ctx, sb, e) == 0 &&
	    sandbox_disk_plan(ctx, sb, rq->disk_mb, e) == 0 &&
	    sandbox_save(ctx, sb, sealed->len ? sealed->data : NULL, e) == 0 && (*saved = 1) &&
	    (!sealed_env->len ||
	     store_sandbox_update(ctx->st, org, sb->id, "", kv, 2, 0, e) == 0)) {
		sb->has_environment = sealed_env->len > 0;
		return 0;
	}
	store_release(ctx->st, sb->org, sb->id, &ignore);
	store_server_release(ctx->st, sb->server_id, sb->id, &ignore);
	return -1;
}

/* Arms sb's warm container. -1 when it is gone or refused: it is removed,
 * sb is no longer pooled, e is clear, and the caller makes a cold one. */
static int create_warm(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	struct sp_err oe, ignore;

	/* its labels predate its org: the reaper finds the record through this */
	store_owner_set(ctx->st, sb->id, sb->org, sandbox_record_ttl(ctx->cfg, sb), &oe);
	if (sandbox_pool_activate(ctx, sb, e) == 0)
		return 0;
	log_warn("sandbox %s: warm container failed (%s); creating it cold", sb->id, e->msg);
	docker_container_remove(ctx->dk, sb->container_id, 1, &ignore);
	sb->pooled = 0;
	sb->container_id[0] = '\0';
	sp_err_clear(e);
	return -1;
}

/* Docker's create of sb's container from body, once more after making the
 * networks again when one went away since this worker made sure of it
 * (docker network prune; *retried: that once is used). On failure e names
 * the request field behind a refusal. */
static int container_create(struct sandbox_ctx *ctx, struct sandbox *sb, json_object *body,
			    int *retried, struct sp_err *e)
{
	char cname[128];

	config_container_name(ctx->cfg, sb->id, cname, sizeof(cname));
	while (docker_container_create(ctx->dk, cname, body, sb->container_id, e) < 0) {
		if (*retried || !sandbox_network_missing(ctx, e) ||
		    (*retried = 1, sandbox_ensure_networks(ctx, e) < 0)) {
			refused_field(e);
			sandbox_disk_refused(sb, e);
			return -1;
		}
	}
	return 0;
}

/* The created container checked and made ready to start: sh in its
 * image, its owner resolved (an image's user), that user not
 * the keeper, the disk and the workdir given to the owner. */
static int container_check(struct sandbox_ctx *ctx, const struct sandbox_create_req *rq,
			   const struct template_conf *t, struct sandbox *sb, json_object *img,
			   struct sp_err *e)
{
	char missing[32];

	if (sandbox_check_tools(ctx, sb, img, missing, sizeof(missing), e) < 0)
		return -1;
	if (missing[0])
		return sp_err_field(
			e, SP_BAD_REQUEST,
			rq->image ? (rq->image_field ? rq->image_field : "image") : "template",
			"Image %s lacks %s: sandbox images must include sh", sb->image, missing);
	if (!t)
		sandbox_resolve_owner(ctx, sb);
	if (!t && keeper_user(ctx->cfg, sb))
		return sp_err_field(e, SP_BAD_REQUEST, "image",
				    "image: its user %s is the uid sandpit keeps the sandbox's "
				    "lifetime with (keeper_uid %d); use another user",
				    sb->user, ctx->cfg->keeper_uid);
	if (sandbox_disk_owner(ctx, sb, e) < 0 || sandbox_seed_files(ctx, sb, img, e) < 0)
		return -1;
	return 0;
}

/* The time since *mark, in µs; *mark becomes now. */
static int64_t lap(int64_t *mark)
{
	int64_t now = mono_us(), d = now - *mark;

	*mark = now;
	return d;
}

/* A cold container for sb: its image (pulled if need be; its user for an
 * image sandbox), its disk, then the container made, checked and started,
 * once more when its network went away before the start. On failure the
 * creation is ended (create_failed). Timings into tm from *mark. */
static int create_cold(struct sandbox_ctx *ctx, const struct sandbox_create_req *rq,
		       const struct template_conf *t, struct sandbox *sb, json_object *env,
		       struct sandbox_timing *tm, int64_t *mark, struct sp_err *e)
{
	json_object *img = NULL, *body = NULL, *icfg, *user;
	struct sp_err ignore;
	int rc = -1, retried = 0;

	/* the volumes first: exclusive, held from now (the record exists) */
	if (sandbox_volumes_claim(ctx, sb, e) < 0 ||
	    sandbox_prepare_image(
		    ctx, sb, rq->image ? (rq->image_field ? rq->image_field : "image") : "template",
		    &img, e, &tm->pulled) < 0 ||
	    sandbox_helper_ensure(ctx, sb->image, e) < 0)
		goto out;
	if (!t) {
		if (json_object_object_get_ex(img, "Config", &icfg) &&
		    json_object_object_get_ex(icfg, "User", &user) && json_object_get_string(user))
			str_copy(sb->user, sizeof(sb->user), json_object_get_string(user));
		if (!sb->user[0])
			str_copy(sb->user, sizeof(sb->user), "root");
	}
	/* no volume on a folder of the image's PATH */
	if (sb->volumes[0] && sandbox_volumes_path_check(sb, sandbox_image_path(img), e) < 0)
		goto out;
	tm->image_us = lap(mark);
	if (sandbox_disk_prepare(ctx, sb, e) < 0)
		goto taken;
	tm->disk_us = mono_us() - *mark;
	body = sandbox_container_spec(ctx, sb, env);
	for (;;) {
		int64_t made;
		if (container_create(ctx, sb, body, &retried, e) < 0)
			goto taken;
		if (container_check(ctx, rq, t, sb, img, e) < 0 ||
		    sandbox_volumes_own(ctx, sb, e) < 0)
			goto out;
		made = mono_us();
		tm->create_us = made - *mark;
		if (docker_container_start(ctx->dk, sb->container_id, e) == 0) {
			sandbox_disk_started(ctx, sb);
			*mark = made;
			tm->start_us = lap(mark);
			rc = 0;
			goto out;
		}
		if (retried || !sandbox_network_missing(ctx, e))
			goto out;
		retried = 1;
		docker_container_remove(ctx->dk, sb->container_id, 1, &ignore);
		sb->container_id[0] = '\0';
		if (sandbox_ensure_networks(ctx, e) < 0)
			goto out;
	}
taken:
	/* a caller-chosen id whose disk or container name is in use: another
	 * request creates this sandbox (a retry that took over from a first
	 * it thought gone, or that first): everything is left to it */
	if (rq->id && e->code == SP_CONFLICT) {
		sp_err_set(e, SP_CONFLICT, "Sandbox %s is being created by another request",
			   sb->id);
		goto keep;
	}
out:
	if (rc < 0)
		create_failed(ctx, sb, e);
keep:
	json_object_put(img);
	json_object_put(body);
	return rc;
}

/* The record from creating to running. When someone removed or changed it
 * meanwhile, the container is not left behind (409 unless e says more). */
static int create_running(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	struct sp_err ignore;

	sb->status = SB_RUNNING;
	if (sandbox_save_if(ctx, sb, SB_CREATING, e) == 0)
		return 0;
	docker_container_stop(ctx->dk, sb->container_id, 0, &ignore);
	if (e->code == SP_OK)
		sp_err_set(e, SP_CONFLICT, "Sandbox was removed while it was being created");
	return -1;
}

int sandbox_create(struct sandbox_ctx *ctx, const char *org, const struct sandbox_create_req *rq,
		   struct sandbox *out, struct sp_err *e)
{
	const struct template_conf *t = NULL;
	struct sandbox *sb = out;
	json_object *env = NULL;
	struct buf sealed, sealed_env;
	struct sandbox_timing tm = { 0 };
	struct sandbox_pool_claim claim = { 0 };
	int64_t mark = mono_us();
	int rc = -1, saved = 0;

	buf_init(&sealed, 256 * 1024);
	buf_init(&sealed_env, 2 * SB_ENV_TOTAL_MAX);
	memset(sb, 0, sizeof(*sb));
	if (create_fill(ctx, org, rq, sb, &t, &claim, e) < 0)
		goto out;
	env = json_object_new_array();
	if (create_env(ctx, rq, t, sb, env, &sealed, &sealed_env, e) < 0 ||
	    create_admit(ctx, org, rq, sb, &sealed, &sealed_env, &saved, e) < 0)
		goto out;
	tm.place_us = lap(&mark);
	/* from here the claimed container is the sandbox's, or removed */
	claim.member[0] = '\0';
	if (sb->pooled && create_warm(ctx, sb, e) == 0) {
		tm.pooled = 1;
		tm.start_us = lap(&mark);
	} else if (create_cold(ctx, rq, t, sb, env, &tm, &mark, e) < 0) {
		goto out;
	}
	if (create_running(ctx, sb, e) < 0)
		goto out;
	tm.ready_us = mono_us() - mark;
	if (rq->timing)
		*rq->timing = tm;
	log_info("sandbox %s created (org %s, image %s)", sb->id, org, sb->image);
	rc = 0;
out:
	if (rc < 0)
		sandbox_disk_abort(ctx, sb);
	/* a claimed warm container the create failed before using: back to
	 * its pool, or removed when a record names its id */
	sandbox_pool_unclaim(ctx, &claim, !saved);
	buf_wipe(&sealed);
	buf_wipe(&sealed_env);
	json_object_put(env);
	return rc;
}
