/*
 * Snapshots (/v1, issue 17): a running sandbox's disk captured as a local
 * Docker image, and new sandboxes forked from it with the source's
 * configuration. A snapshot is an org's record (store_obj_*, kind
 * "snaps", JSON) that moves creating -> ready | failed. The create
 * writes it creating and leaves the capture to the same worker once the
 * answer is out (sandbox_snapshot_idle): the container paused (a
 * consistent cut of the image's layer and of the workdir's own disk),
 * `docker commit` of its layer, the workdir's files streamed while it is
 * paused (a loop-disk workdir is a volume, which a commit skips) into a
 * container of that commit through a fixed buffer (never held whole), the
 * source thawed, and that container committed again as <SNAP_REPO>:<id>.
 * The host's floor (disk_reserve_mb) is checked at the create and bounds
 * the copy (sandbox_disk_snapshot_room). While it is paused a
 * lock (snapcap:<sandbox>) says so, so that reads do not take the pause
 * for a stop (state.c). A restore is sandbox_create from that image on
 * the snapshot's server; Docker's copy-up fills the fork's new workdir
 * disk from the image. Must never: leave a source paused when a capture
 * fails, delete an image a container still uses (a lease), show one
 * org's snapshot to another.
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
#include "../store/store.h"

#define SNAP_KIND "snaps"
#define SNAPENV_KIND "snapenv"
#define SNAP_CAPTURE_MS (10 * 60 * 1000) /* a capture not done by then failed */

static const char *const snap_states[] = { "creating", "ready", "failed" };

/* --- the record as JSON -------------------------------------------------- */

static void put_s(json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(v));
}

static void put_i(json_object *o, const char *k, int64_t v)
{
	json_object_object_add(o, k, json_object_new_int64(v));
}

static void get_s(json_object *o, const char *k, char *out, size_t cap)
{
	json_object *v;

	out[0] = '\0';
	if (json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string))
		str_copy(out, cap, json_object_get_string(v));
}

static int64_t get_i(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : 0;
}

/* The record's text; new string (free). */
static char *snap_text(const struct sandbox_snapshot *s)
{
	json_object *o = json_object_new_object();
	char *t;

	put_s(o, "id", s->id);
	put_s(o, "displayName", s->display_name);
	put_s(o, "description", s->description);
	put_s(o, "sandbox", s->sandbox_id);
	put_s(o, "server", s->server_id);
	put_s(o, "status", snap_states[s->status]);
	put_s(o, "image", s->image);
	put_s(o, "imageId", s->image_id);
	put_i(o, "size", s->size_bytes);
	put_i(o, "createdAt", s->created_at);
	put_i(o, "until", s->until);
	put_s(o, "error", s->error_message);
	put_s(o, "template", s->template_name);
	put_s(o, "srcImage", s->src_image);
	put_s(o, "networkMode", s->network_mode);
	put_s(o, "workdir", s->workdir);
	put_s(o, "user", s->user);
	put_s(o, "runtime", s->runtime);
	json_object_object_add(o, "cpu", json_object_new_double(s->cpu));
	put_i(o, "memoryMb", s->memory_mb);
	put_i(o, "pidsLimit", s->pids_limit);
	put_i(o, "diskMb", s->disk_mb);
	put_i(o, "timeoutMs", s->timeout_ms);
	put_i(o, "maxLifetimeMs", s->max_lifetime_ms);
	put_i(o, "timeoutStop", s->timeout_stop);
	put_s(o, "labels", s->labels);
	t = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return t;
}

static int snap_parse(const char *text, struct sandbox_snapshot *s)
{
	json_object *o = json_tokener_parse(text), *v;
	char st[16];

	memset(s, 0, sizeof(*s));
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return -1;
	}
	get_s(o, "id", s->id, sizeof(s->id));
	get_s(o, "displayName", s->display_name, sizeof(s->display_name));
	get_s(o, "description", s->description, sizeof(s->description));
	get_s(o, "sandbox", s->sandbox_id, sizeof(s->sandbox_id));
	get_s(o, "server", s->server_id, sizeof(s->server_id));
	get_s(o, "status", st, sizeof(st));
	s->status = SB_SNAP_FAILED;
	for (int i = 0; i < 3; i++)
		if (strcmp(st, snap_states[i]) == 0)
			s->status = i;
	get_s(o, "image", s->image, sizeof(s->image));
	get_s(o, "imageId", s->image_id, sizeof(s->image_id));
	s->size_bytes = get_i(o, "size");
	s->created_at = get_i(o, "createdAt");
	s->until = get_i(o, "until");
	get_s(o, "error", s->error_message, sizeof(s->error_message));
	get_s(o, "template", s->template_name, sizeof(s->template_name));
	get_s(o, "srcImage", s->src_image, sizeof(s->src_image));
	get_s(o, "networkMode", s->network_mode, sizeof(s->network_mode));
	get_s(o, "workdir", s->workdir, sizeof(s->workdir));
	get_s(o, "user", s->user, sizeof(s->user));
	get_s(o, "runtime", s->runtime, sizeof(s->runtime));
	s->cpu = json_object_object_get_ex(o, "cpu", &v) ? json_object_get_double(v) : 0;
	s->memory_mb = get_i(o, "memoryMb");
	s->pids_limit = get_i(o, "pidsLimit");
	s->disk_mb = get_i(o, "diskMb");
	s->timeout_ms = get_i(o, "timeoutMs");
	s->max_lifetime_ms = get_i(o, "maxLifetimeMs");
	s->timeout_stop = (int)get_i(o, "timeoutStop");
	get_s(o, "labels", s->labels, sizeof(s->labels));
	json_object_put(o);
	return s->id[0] ? 0 : -1;
}

/* Reads a record, with its text in *text (new; NULL when not wanted). */
static int snap_load(struct sandbox_ctx *ctx, const char *org, const char *id,
		     struct sandbox_snapshot *s, char **text, struct sp_err *e)
{
	char *t = NULL;

	if (!sandbox_id_ok(id))
		return sp_err_set(e, SP_NOT_FOUND, "Snapshot not found");
	if (store_obj_get(ctx->st, org, SNAP_KIND, id, &t, e) < 0) {
		if (e->code == SP_NOT_FOUND)
			sp_err_set(e, SP_NOT_FOUND, "Snapshot not found");
		return -1;
	}
	if (snap_parse(t, s) < 0) {
		free(t);
		return sp_err_set(e, SP_INTERNAL, "Snapshot record is damaged");
	}
	str_copy(s->org, sizeof(s->org), org);
	if (text)
		*text = t;
	else
		free(t);
	return 0;
}

/* Replaces the record seen as old with s; 1 when it changed meanwhile. */
static int snap_swap(struct sandbox_ctx *ctx, const char *old, const struct sandbox_snapshot *s,
		     struct sp_err *e)
{
	char *t = snap_text(s);
	int rc;

	if (!t)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	rc = store_obj_cas(ctx->st, s->org, SNAP_KIND, s->id, old, t, e);
	free(t);
	return rc;
}

/* --- create -------------------------------------------------------------- */

/* --- the source's environment --------------------------------------------- */

/* The source's envVars and environment stay secret: its image is committed
 * without their values (commit_env), and they are kept beside the
 * snapshot's record, sealed as the source's record holds them (bound to
 * its id), for a restore to give them back. */
static int snapenv_save(struct sandbox_ctx *ctx, const struct sandbox *sb, const char *snap_id,
			struct sp_err *e)
{
	struct buf vars, env;
	json_object *o = NULL;
	int rc = -1;

	buf_init(&vars, 1 << 20);
	buf_init(&env, 1 << 20);
	if (store_sandbox_field(ctx->st, sb->org, sb->id, "envVars", &vars, e) < 0 ||
	    (sb->has_environment &&
	     store_sandbox_field(ctx->st, sb->org, sb->id, "environment", &env, e) < 0))
		goto out;
	rc = 0;
	if (!vars.len && !env.len)
		goto out;
	o = json_object_new_object();
	json_object_object_add(
		o, "envVars", json_object_new_string_len(vars.len ? vars.data : "", (int)vars.len));
	json_object_object_add(o, "environment",
			       json_object_new_string_len(env.len ? env.data : "", (int)env.len));
	rc = store_obj_put(ctx->st, sb->org, SNAPENV_KIND, snap_id,
			   json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), e);
out:
	json_object_put(o);
	buf_free(&vars);
	buf_free(&env);
	return rc;
}

static void snapenv_delete(struct sandbox_ctx *ctx, const char *org, const char *snap_id)
{
	char *old = NULL;
	struct sp_err e;

	if (store_obj_get(ctx->st, org, SNAPENV_KIND, snap_id, &old, &e) == 0 &&
	    store_obj_cas(ctx->st, org, SNAPENV_KIND, snap_id, old, NULL, &e) < 0)
		log_warn("snapshot %s: its environment record stays: %s", snap_id, e.msg);
	free(old);
}

/* The source's envVars (KEY=value lines) into vars and environment (a
 * JSON object's text) into env, opened; both empty when it had none. */
static int snapenv_open(struct sandbox_ctx *ctx, const struct sandbox_snapshot *s, struct buf *vars,
			struct buf *env, struct sp_err *e)
{
	char *t = NULL, ad[SANDBOX_ID_LEN + 16];
	json_object *o = NULL, *v;
	int rc = -1;

	if (store_obj_get(ctx->st, s->org, SNAPENV_KIND, s->id, &t, e) < 0) {
		if (e->code != SP_NOT_FOUND)
			return -1;
		sp_err_clear(e);
		return 0;
	}
	o = json_tokener_parse(t);
	free(t);
	if (!o || !json_object_is_type(o, json_type_object)) {
		sp_err_set(e, SP_INTERNAL, "The snapshot's environment record is damaged");
		goto out;
	}
	snprintf(ad, sizeof(ad), "%s/environment", s->sandbox_id);
	if ((json_object_object_get_ex(o, "envVars", &v) && json_object_get_string_len(v) &&
	     crypto_open(ctx->cfg->data_key, s->sandbox_id, json_object_get_string(v),
			 (size_t)json_object_get_string_len(v), vars) < 0) ||
	    (json_object_object_get_ex(o, "environment", &v) && json_object_get_string_len(v) &&
	     crypto_open(ctx->cfg->data_key, ad, json_object_get_string(v),
			 (size_t)json_object_get_string_len(v), env) < 0)) {
		sp_err_set(e, SP_INTERNAL, "The snapshot's environment cannot be opened");
		goto out;
	}
	rc = 0;
out:
	json_object_put(o);
	return rc;
}

/* The key of a KEY=value entry: its length. */
static size_t env_key_len(const char *kv)
{
	const char *eq = strchr(kv, '=');

	return eq ? (size_t)(eq - kv) : strlen(kv);
}

static const char *env_find(json_object *arr, const char *key, size_t klen)
{
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
		const char *kv = json_object_get_string(json_object_array_get_idx(arr, i));
		if (kv && env_key_len(kv) == klen && strncmp(kv, key, klen) == 0)
			return kv;
	}
	return NULL;
}

static json_object *config_env(json_object *inspect)
{
	json_object *c, *env;

	return json_object_object_get_ex(inspect, "Config", &c) &&
			       json_object_object_get_ex(c, "Env", &env) &&
			       json_object_is_type(env, json_type_array)
		       ? env
		       : NULL;
}

/* The Env a commit of sb gives its image: the container's, with each
 * variable of its envVars and environment (secret) back at the source
 * image's value, or empty where that has none. Docker merges the
 * container's Env into a commit's by key, so every key is named. New
 * array into cfg's Env. */
static int commit_env(struct sandbox_ctx *ctx, const struct sandbox_snapshot *s,
		      const struct sandbox *sb, json_object *cfg, struct sp_err *e)
{
	struct buf vars, env;
	json_object *secret = json_object_new_array(), *ct = NULL, *src = NULL, *out, *eo = NULL;
	int rc = -1;

	buf_init(&vars, 1 << 20);
	buf_init(&env, 1 << 20);
	if (snapenv_open(ctx, s, &vars, &env, e) < 0 ||
	    (vars.len && sandbox_env_lines(vars.data, vars.len, secret, e) < 0))
		goto out;
	if (env.len && (eo = json_tokener_parse(env.data)) &&
	    json_object_is_type(eo, json_type_object)) {
		json_object_object_foreach(eo, k, val)
		{
			(void)val;
			json_object_array_add(secret, json_object_new_string(k));
		}
	}
	rc = 0;
	if (!json_object_array_length(secret))
		goto out;
	rc = -1;
	if (docker_container_inspect(ctx->dk, sb->container_id, &ct, e) < 0)
		goto out;
	if (docker_image_inspect(ctx->dk, s->src_image, &src, e) < 0)
		sp_err_clear(e); /* no source image left: empty values */
	out = json_object_new_array();
	for (size_t i = 0; config_env(ct) && i < json_object_array_length(config_env(ct)); i++) {
		const char *kv =
			json_object_get_string(json_object_array_get_idx(config_env(ct), i));
		size_t kl = kv ? env_key_len(kv) : 0;
		const char *base;
		if (!kv || !kl)
			continue;
		if (!env_find(secret, kv, kl)) {
			json_object_array_add(out, json_object_new_string(kv));
		} else if ((base = env_find(config_env(src), kv, kl))) {
			json_object_array_add(out, json_object_new_string(base));
		} else {
			struct buf k;
			buf_init(&k, kl + 2);
			if (buf_append(&k, kv, kl) == 0 && buf_puts(&k, "=") == 0)
				json_object_array_add(
					out, json_object_new_string_len(k.data, (int)k.len));
			buf_free(&k);
		}
	}
	json_object_object_add(cfg, "Env", out);
	rc = 0;
out:
	json_object_put(eo);
	json_object_put(ct);
	json_object_put(src);
	json_object_put(secret);
	buf_wipe(&vars);
	buf_wipe(&env);
	return rc;
}

static int workdir_is_volume(struct sandbox_ctx *ctx, const struct sandbox *sb, char *src,
			     size_t cap, struct sp_err *e);

/* A new snapshot record of sb (org's) as rq asks: status creating, what a
 * restore needs of its source. */
static void snap_from(struct sandbox_snapshot *out, const struct sandbox_snapshot_req *rq,
		      const char *org, const struct sandbox *sb)
{
	if (rq->id && sandbox_id_ok(rq->id))
		str_copy(out->id, sizeof(out->id), rq->id);
	else
		crypto_random_id(out->id, SANDBOX_ID_LEN);
	str_copy(out->org, sizeof(out->org), org);
	str_copy(out->display_name, sizeof(out->display_name), rq->display_name);
	if (rq->description)
		str_copy(out->description, sizeof(out->description), rq->description);
	str_copy(out->sandbox_id, sizeof(out->sandbox_id), sb->id);
	str_copy(out->server_id, sizeof(out->server_id), sb->server_id);
	out->status = SB_SNAP_CREATING;
	snprintf(out->image, sizeof(out->image), "%s:%s", SB_SNAP_REPO, out->id);
	out->created_at = now_ms();
	out->until = out->created_at + SNAP_CAPTURE_MS;
	str_copy(out->template_name, sizeof(out->template_name), sb->template_name);
	str_copy(out->src_image, sizeof(out->src_image), sb->image);
	str_copy(out->network_mode, sizeof(out->network_mode), sb->network_mode);
	str_copy(out->workdir, sizeof(out->workdir), sb->workdir);
	str_copy(out->user, sizeof(out->user), sb->user);
	str_copy(out->runtime, sizeof(out->runtime), sb->runtime);
	out->cpu = sb->cpu;
	out->memory_mb = sb->memory_mb;
	out->pids_limit = sb->pids_limit;
	out->disk_mb = sb->disk_mb;
	out->timeout_ms = sb->timeout_ms;
	out->max_lifetime_ms = sb->max_lifetime_ms;
	out->timeout_stop = sb->timeout_stop;
	str_copy(out->labels, sizeof(out->labels), sb->labels);
}

int sandbox_snapshot_create(struct sandbox_ctx *ctx, const char *org, const char *sandbox_id,
			    const struct sandbox_snapshot_req *rq, struct sandbox_snapshot *out,
			    struct sp_err *e)
{
	struct sandbox sb;
	char *t, lname[64];
	int rc;

	memset(out, 0, sizeof(*out));
	/* a retry under an Idempotency-Key whose first request wrote the
	 * record and died before its answer: that snapshot, as it is */
	if (rq->id && sandbox_id_ok(rq->id) && snap_load(ctx, org, rq->id, out, NULL, e) == 0) {
		if (strcmp(out->sandbox_id, sandbox_id) == 0)
			return 0;
		return sp_err_set(e, SP_INTERNAL, "snapshot id taken by another sandbox's");
	}
	sp_err_clear(e);
	memset(out, 0, sizeof(*out));
	if (sandbox_get(ctx, org, sandbox_id, &sb, e) < 0)
		return -1;
	if (sb.status != SB_RUNNING)
		return sp_err_set(e, SP_PRECONDITION,
				  "snapshot_source_not_running: the sandbox is %s; only a running "
				  "sandbox can be snapshotted%s",
				  sandbox_status_name(sb.status),
				  sb.status == SB_STOPPED ? " (start it first)" : "");
	if (!ctx->dk) {
		*e = ctx->server_err;
		return -1;
	}
	{
		char wd_src[4096];
		int vol = workdir_is_volume(ctx, &sb, wd_src, sizeof(wd_src), e);
		if (vol < 0 || sandbox_disk_snapshot_room(ctx, wd_src, NULL, e) < 0)
			return -1;
	}
	{
		struct store_rec all = { 0 };
		int n;
		if (store_obj_list(ctx->st, org, SNAP_KIND, &all, e) < 0)
			return -1;
		n = all.n;
		store_rec_free(&all);
		if (n >= SB_SNAP_MAX_PER_ORG)
			return sp_err_set(
				e, SP_QUOTA,
				"The organization has %d snapshots, the most it may keep; "
				"delete some first",
				n);
	}
	sandbox_lock_name(SB_LOCK_CAPTURE, sb.id, lname, sizeof(lname));
	rc = store_lock(ctx->st, lname, SNAP_CAPTURE_MS, e);
	if (rc < 0)
		return -1;
	if (rc == 0)
		return sp_err_set(e, SP_PRECONDITION,
				  "snapshot_in_progress: another snapshot of this sandbox is being "
				  "captured; wait until it is ready");
	snap_from(out, rq, org, &sb);
	t = snap_text(out);
	if (!t || store_obj_put(ctx->st, org, SNAP_KIND, out->id, t, e) < 0) {
		struct sp_err ignore;
		free(t);
		store_unlock(ctx->st, lname, &ignore);
		return e->code ? -1 : sp_err_set(e, SP_INTERNAL, "out of memory");
	}
	if (snapenv_save(ctx, &sb, out->id, e) < 0) {
		struct sp_err ignore;
		store_obj_cas(ctx->st, org, SNAP_KIND, out->id, t, NULL, &ignore);
		store_unlock(ctx->st, lname, &ignore);
		free(t);
		return -1;
	}
	free(t);
	/* the capture runs once the answer is out (sandbox_snapshot_idle);
	 * without a worker loop (a unit test, sandpit-stream) it runs now */
	if (ctx->snap_pending_id[0])
		sandbox_snapshot_idle(ctx);
	str_copy(ctx->snap_pending_org, sizeof(ctx->snap_pending_org), org);
	str_copy(ctx->snap_pending_id, sizeof(ctx->snap_pending_id), out->id);
	if (!ctx->defer_expiry)
		sandbox_snapshot_idle(ctx);
	log_info("snapshot %s of sandbox %s accepted (org %s)", out->id, sb.id, org);
	return 0;
}

/* --- the capture ------------------------------------------------------------ */

/* 1 when sb's container has a volume at its workdir (a loop disk); src
 * (cap bytes) gets the volume's folder on the Docker host, "" when none. */
static int workdir_is_volume(struct sandbox_ctx *ctx, const struct sandbox *sb, char *src,
			     size_t cap, struct sp_err *e)
{
	json_object *info = NULL, *mounts, *m, *v;
	int found = 0;

	src[0] = '\0';
	if (docker_container_inspect(ctx->dk, sb->container_id, &info, e) < 0)
		return -1;
	if (json_object_object_get_ex(info, "Mounts", &mounts) &&
	    json_object_is_type(mounts, json_type_array))
		for (size_t i = 0; i < json_object_array_length(mounts) && !found; i++) {
			m = json_object_array_get_idx(mounts, i);
			found = json_object_object_get_ex(m, "Destination", &v) &&
				strcmp(json_object_get_string(v), sb->workdir) == 0;
			if (found && json_object_object_get_ex(m, "Source", &v) &&
			    json_object_is_type(v, json_type_string))
				str_copy(src, cap, json_object_get_string(v));
		}
	json_object_put(info);
	return found;
}

/* The Config a commit gives its image: the sandbox's user (the container's
 * is the keeper), and labels over the container's (Docker merges them):
 * the image is no sandbox (sandbox, sandboxId, install and deadlineAt
 * emptied, so that neither the reaper nor a sandbox's end takes a
 * container of it for one), it names its snapshot, org and installation.
 * New object. */
static json_object *commit_config(struct sandbox_ctx *ctx, const struct sandbox_snapshot *s)
{
	json_object *o = json_object_new_object(), *labels = json_object_new_object();
	char lname[160];

	json_object_object_add(o, "User", json_object_new_string(sandbox_run_user(s->user)));
	json_object_object_add(o, "WorkingDir", json_object_new_string(s->workdir));
	static const char *const emptied[] = { "sandbox", "sandboxId", NULL };

	for (int i = 0; emptied[i]; i++) {
		config_label(ctx->cfg, emptied[i], lname, sizeof(lname));
		json_object_object_add(labels, lname, json_object_new_string(""));
	}
	snprintf(lname, sizeof(lname), "%s.install", ctx->cfg->label_prefix);
	json_object_object_add(labels, lname, json_object_new_string(""));
	snprintf(lname, sizeof(lname), "%s.deadlineAt", ctx->cfg->label_prefix);
	json_object_object_add(labels, lname, json_object_new_string(""));
	config_label(ctx->cfg, "snapshotId", lname, sizeof(lname));
	json_object_object_add(labels, lname, json_object_new_string(s->id));
	config_label(ctx->cfg, "organizationId", lname, sizeof(lname));
	json_object_object_add(labels, lname, json_object_new_string(s->org));
	snprintf(lname, sizeof(lname), "%s.snapshotInstall", ctx->cfg->label_prefix);
	json_object_object_add(labels, lname, json_object_new_string(ctx->install_id));
	json_object_object_add(o, "Labels", labels);
	return o;
}

/* A stopped container of image mid (cid, 65 bytes) to take the workdir's
 * files at parent (PATH_MAX bytes): the folder that holds s->workdir. */
static int workdir_target(struct sandbox_ctx *ctx, const struct sandbox_snapshot *s,
			  const char *mid, char *cid, char *parent, struct sp_err *e)
{
	json_object *body = json_object_new_object(), *cmd = json_object_new_array(),
		    *hc = json_object_new_object(), *labels = json_object_new_object();
	char lname[160];
	const char *slash;
	int rc;

	str_copy(parent, 4097, s->workdir);
	slash = strrchr(parent, '/');
	if (slash == parent)
		parent[1] = '\0';
	else if (slash)
		parent[slash - parent] = '\0';
	json_object_array_add(cmd, json_object_new_string("true"));
	json_object_object_add(body, "Image", json_object_new_string(mid));
	json_object_object_add(body, "Entrypoint", json_object_new_array());
	json_object_object_add(body, "Cmd", cmd);
	json_object_object_add(hc, "NetworkMode", json_object_new_string("none"));
	json_object_object_add(body, "HostConfig", hc);
	config_label(ctx->cfg, "snapshotId", lname, sizeof(lname));
	json_object_object_add(labels, lname, json_object_new_string(s->id));
	json_object_object_add(body, "Labels", labels);
	rc = docker_container_create(ctx->dk, NULL, body, cid, e);
	json_object_put(body);
	return rc;
}

/* What is left of the capture's time for its next step, at least 1 s. */
static int64_t capture_left(const struct sandbox_snapshot *s)
{
	int64_t left = s->until - now_ms();

	return left > 1000 ? left : 1000;
}

/* Captures s's source. A loop-disk workdir (a volume, which a commit
 * skips) streams from the paused source into a container of the first
 * commit (docker_archive_copy: a fixed buffer, never the tar whole), which
 * is committed again as s->image. e gets the reason of a failure. */
static int capture(struct sandbox_ctx *ctx, struct sandbox_snapshot *s, struct sp_err *e)
{
	struct sandbox sb;
	json_object *cfg = NULL, *img = NULL, *v;
	char mid[80] = "", image_id[80] = "", cid[65] = "", parent[4097], wd_src[4096];
	char frz[64] = ""; /* the freeze lock's name while it is held */
	struct sp_err ignore;
	int vol, paused = 0, rc = -1;
	int64_t limit = 0;

	if (sandbox_get_running(ctx, s->org, s->sandbox_id, &sb, e) < 0)
		return -1;
	if (sandbox_install_id(ctx, e) < 0)
		return -1;
	vol = workdir_is_volume(ctx, &sb, wd_src, sizeof(wd_src), e);
	if (vol < 0)
		return -1;
	/* the floor again (the create checked it): what the copy may bring */
	if (sandbox_disk_snapshot_room(ctx, wd_src, &limit, e) < 0)
		return -1;
	cfg = commit_config(ctx, s);
	if (commit_env(ctx, s, &sb, cfg, e) < 0)
		goto out;
	/* new commands are refused from the freeze lock on (run_start); one
	 * already on its way to Docker is let through first (the settle) */
	sandbox_lock_name(SB_LOCK_FREEZE, sb.id, frz, sizeof(frz));
	if (store_lock(ctx->st, frz, capture_left(s), e) < 0) {
		frz[0] = '\0';
		goto out;
	}
	if (sandbox_settle_execs(ctx, &sb, e) < 0)
		goto out;
	if (docker_container_pause(ctx->dk, sb.container_id, e) < 0) {
		if (e->code == SP_CONFLICT)
			sp_err_set(e, SP_PRECONDITION,
				   "the sandbox was stopped before its capture began");
		goto out;
	}
	paused = 1;
	if (docker_image_commit(ctx->dk, sb.container_id, vol ? NULL : SB_SNAP_REPO,
				vol ? NULL : s->id, cfg, vol ? mid : image_id, e) < 0)
		goto out;
	/* the copy may take what is left of the capture's time */
	if (vol && (workdir_target(ctx, s, mid, cid, parent, e) < 0 ||
		    docker_archive_copy(ctx->dk, sb.container_id, sb.workdir, cid, parent,
					capture_left(s), limit, e) < 0)) {
		if (e->code == SP_TOO_LARGE)
			sp_err_set(e, SP_QUOTA,
				   "the workdir's files passed %lld MiB, what the host's disk "
				   "holds above disk_reserve_mb (%d) for a capture",
				   (long long)(limit >> 20), ctx->cfg->disk_reserve_mb);
		goto out;
	}
	if (docker_container_unpause(ctx->dk, sb.container_id, e) < 0)
		log_warn("snapshot %s: unpause of %s failed: %s", s->id, sb.id, e->msg);
	paused = 0;
	store_unlock(ctx->st, frz, &ignore);
	frz[0] = '\0';
	sp_err_clear(e);
	if (vol && docker_image_commit(ctx->dk, cid, SB_SNAP_REPO, s->id, cfg, image_id, e) < 0)
		goto out;
	if (docker_image_inspect(ctx->dk, s->image, &img, e) < 0)
		goto out;
	s->size_bytes = json_object_object_get_ex(img, "Size", &v) ? json_object_get_int64(v) : 0;
	str_copy(s->image_id, sizeof(s->image_id), image_id);
	rc = 0;
out:
	if (paused && docker_container_unpause(ctx->dk, sb.container_id, &ignore) < 0)
		log_warn("snapshot %s: unpause of %s failed: %s", s->id, sb.id, ignore.msg);
	if (frz[0])
		store_unlock(ctx->st, frz, &ignore);
	if (cid[0])
		docker_container_remove(ctx->dk, cid, 1, &ignore);
	if (rc < 0) {
		/* what the capture made: the untagged layer goes with the
		 * image, or alone */
		docker_image_remove(ctx->dk, s->image, &ignore);
		if (mid[0])
			docker_image_remove(ctx->dk, mid, &ignore);
	}
	json_object_put(img);
	json_object_put(cfg);
	return rc;
}

void sandbox_snapshot_idle(struct sandbox_ctx *ctx)
{
	struct sandbox_snapshot s;
	char org[65], id[SANDBOX_ID_LEN + 1], *old = NULL, lname[64];
	struct sp_err e, ignore;
	int64_t t0 = mono_ms();

	if (!ctx->snap_pending_id[0])
		return;
	str_copy(org, sizeof(org), ctx->snap_pending_org);
	str_copy(id, sizeof(id), ctx->snap_pending_id);
	ctx->snap_pending_id[0] = '\0';
	sp_err_clear(&e);
	if (snap_load(ctx, org, id, &s, &old, &e) < 0 || s.status != SB_SNAP_CREATING) {
		free(old);
		return;
	}
	sandbox_lock_name(SB_LOCK_CAPTURE, s.sandbox_id, lname, sizeof(lname));
	if (capture(ctx, &s, &e) == 0) {
		s.status = SB_SNAP_READY;
		log_info("snapshot %s of sandbox %s ready: %lld bytes in %lld ms", s.id,
			 s.sandbox_id, (long long)s.size_bytes, (long long)(mono_ms() - t0));
	} else {
		s.status = SB_SNAP_FAILED;
		str_copy(s.error_message, sizeof(s.error_message), e.msg);
		log_warn("snapshot %s of sandbox %s failed: %s", s.id, s.sandbox_id, e.msg);
	}
	store_unlock(ctx->st, lname, &ignore);
	if (snap_swap(ctx, old, &s, &ignore) != 0 && s.status == SB_SNAP_READY)
		docker_image_remove(ctx->dk, s.image, &ignore); /* the record went */
	free(old);
}

/* --- read, list, delete ------------------------------------------------------ */

/* A capture whose worker ended before it finished reads failed; its
 * source is thawed when it is still paused and its record says running. */
static void snap_catch_up(struct sandbox_ctx *ctx, struct sandbox_snapshot *s, const char *old)
{
	struct sp_err e;
	struct sandbox sb;

	if (s->status != SB_SNAP_CREATING || now_ms() <= s->until)
		return;
	s->status = SB_SNAP_FAILED;
	str_copy(s->error_message, sizeof(s->error_message),
		 "the capture was interrupted (its worker ended); take a new snapshot");
	if (snap_swap(ctx, old, s, &e) != 0)
		return;
	if (sandbox_load(ctx, s->org, s->sandbox_id, &sb, &e) == 0 && sb.status == SB_RUNNING &&
	    ctx->dk)
		docker_container_unpause(ctx->dk, sb.container_id, &e);
}

int sandbox_snapshot_get(struct sandbox_ctx *ctx, const char *org, const char *id,
			 struct sandbox_snapshot *out, struct sp_err *e)
{
	char *old = NULL;

	if (snap_load(ctx, org, id, out, &old, e) < 0)
		return -1;
	snap_catch_up(ctx, out, old);
	free(old);
	return 0;
}

static int by_created_desc(const void *a, const void *b)
{
	const struct sandbox_snapshot *x = a, *y = b;

	if (x->created_at != y->created_at)
		return x->created_at < y->created_at ? 1 : -1;
	return strcmp(y->id, x->id);
}

int sandbox_snapshot_list(struct sandbox_ctx *ctx, const char *org, struct sandbox_snapshot **out,
			  size_t *n, struct sp_err *e)
{
	struct store_rec r = { 0 };
	size_t k = 0;

	*out = NULL;
	*n = 0;
	if (store_obj_list(ctx->st, org, SNAP_KIND, &r, e) < 0)
		return -1;
	if (r.n > 0) {
		*out = calloc((size_t)r.n, sizeof(**out));
		if (!*out) {
			store_rec_free(&r);
			return sp_err_set(e, SP_INTERNAL, "out of memory");
		}
	}
	for (int i = 0; i < r.n; i++) {
		if (snap_parse(r.value[i], &(*out)[k]) < 0)
			continue;
		str_copy((*out)[k].org, sizeof((*out)[k].org), org);
		snap_catch_up(ctx, &(*out)[k], r.value[i]);
		k++;
	}
	store_rec_free(&r);
	if (k > 1) /* *out is NULL when there are none: no qsort of NULL */
		qsort(*out, k, sizeof(**out), by_created_desc);
	*n = k;
	return 0;
}

int sandbox_snapshot_delete(struct sandbox_ctx *ctx, const char *org, const char *id,
			    struct sp_err *e)
{
	struct sandbox_snapshot s;
	char *old = NULL;
	int rc = -1;

	if (snap_load(ctx, org, id, &s, &old, e) < 0)
		return -1;
	snap_catch_up(ctx, &s, old);
	if (s.status == SB_SNAP_CREATING) {
		sp_err_set(e, SP_PRECONDITION,
			   "deletion_preparation_incomplete: the snapshot is still being "
			   "captured; delete it once it is ready or failed");
		goto out;
	}
	if (sandbox_select_server(ctx, s.server_id, e) < 0 || sandbox_docker_ready(ctx, e) < 0)
		goto out;
	if (docker_image_remove(ctx->dk, s.image, e) < 0) {
		if (e->code == SP_CONFLICT) {
			sp_err_set(e, SP_PRECONDITION,
				   "deletion_content_lease_held: a sandbox restored from this "
				   "snapshot still uses its image; delete those sandboxes first");
			goto out;
		}
		if (e->code != SP_NOT_FOUND)
			goto out;
		sp_err_clear(e);
	}
	/* the record goes (a change meanwhile: it is gone or failed anyway) */
	if (store_obj_cas(ctx->st, org, SNAP_KIND, id, old, NULL, e) < 0)
		goto out;
	snapenv_delete(ctx, org, id);
	log_info("snapshot %s deleted (org %s)", id, org);
	rc = 0;
out:
	free(old);
	return rc;
}

/* --- restore -------------------------------------------------------------- */

int sandbox_snapshot_restore(struct sandbox_ctx *ctx, const char *org, const char *id,
			     const char *name, const char *sandbox_rid, const char *resume,
			     struct sandbox *out, struct sp_err *e)
{
	struct sandbox_snapshot s;
	struct sandbox_create_req rq;
	struct sandbox_env_var *vars = NULL;
	struct buf env_vars, env;
	json_object *img = NULL, *eo = NULL;
	int rc = -1;

	if (sandbox_snapshot_get(ctx, org, id, &s, e) < 0)
		return -1;
	if (s.status != SB_SNAP_READY)
		return sp_err_set(
			e, SP_PRECONDITION,
			"snapshot_not_ready: the snapshot is %s; a restore needs it ready",
			snap_states[s.status]);
	/* the image is local to its server: never a pull */
	if (sandbox_select_server(ctx, s.server_id, e) < 0 || sandbox_docker_ready(ctx, e) < 0)
		return -1;
	if (docker_image_inspect(ctx->dk, s.image, &img, e) < 0) {
		if (e->code == SP_NOT_FOUND)
			sp_err_set(e, SP_PRECONDITION,
				   "snapshot_content_missing: the snapshot's image is gone from "
				   "its server");
		return -1;
	}
	json_object_put(img);
	memset(&rq, 0, sizeof(rq));
	/* the source's envVars and environment: the image holds no values of
	 * theirs (commit_env) */
	buf_init(&env_vars, 1 << 20);
	buf_init(&env, 1 << 20);
	if (snapenv_open(ctx, &s, &env_vars, &env, e) < 0)
		goto out;
	if (env_vars.len) {
		rq.env_vars = env_vars.data;
		rq.env_vars_len = env_vars.len;
	}
	/* sandpit's own sealed object: at most what a create takes */
	if (env.len && (eo = json_tokener_parse(env.data)) &&
	    sandbox_env_of_json(eo, "environment", SB_ENV_MAX_VARS, &vars, &rq.nenv, e) < 0)
		goto out;
	rq.env = vars;
	rq.id = sandbox_rid;
	rq.image = s.image;
	rq.name = name && *name ? name : NULL;
	rq.server_id = s.server_id[0] ? s.server_id : NULL;
	rq.cpu = s.cpu;
	rq.memory_mb = s.memory_mb;
	rq.pids_limit = s.pids_limit;
	rq.disk_mb = s.disk_mb;
	rq.timeout_ms = s.timeout_ms;
	rq.max_lifetime_ms = s.max_lifetime_ms;
	rq.network_mode = s.network_mode[0] ? s.network_mode : NULL;
	rq.workdir = s.workdir[0] ? s.workdir : NULL;
	rq.runtime = s.runtime[0] ? s.runtime : NULL;
	rq.timeout_stop = s.timeout_stop;
	rq.labels = s.labels[0] ? s.labels : NULL;
	rq.timeout_field = "features.timeouts.timeout";
	rc = sandbox_rid && resume
		     ? sandbox_create_resume(ctx, org, &rq, strcmp(resume, "gone") == 0, out, e)
		     : sandbox_create(ctx, org, &rq, out, e);
out:
	free(vars);
	json_object_put(eo);
	buf_wipe(&env_vars);
	buf_wipe(&env);
	return rc;
}

/* --- images ------------------------------------------------------------------ */

/* Docker's inspect of an image into im (size, digest, created, platform). */
static void image_facts(json_object *img, struct sandbox_image *im)
{
	json_object *v;

	im->size_bytes = json_object_object_get_ex(img, "Size", &v) ? json_object_get_int64(v) : 0;
	if (json_object_object_get_ex(img, "Id", &v))
		str_copy(im->digest, sizeof(im->digest), json_object_get_string(v));
	if (json_object_object_get_ex(img, "Created", &v))
		str_copy(im->created, sizeof(im->created), json_object_get_string(v));
	if (json_object_object_get_ex(img, "Os", &v))
		str_copy(im->os, sizeof(im->os), json_object_get_string(v));
	if (json_object_object_get_ex(img, "Architecture", &v))
		str_copy(im->arch, sizeof(im->arch), json_object_get_string(v));
}

static void template_image(struct sandbox_ctx *ctx, const struct template_conf *t,
			   struct sandbox_image *im)
{
	json_object *img = NULL;
	struct sp_err e;

	memset(im, 0, sizeof(*im));
	str_copy(im->id, sizeof(im->id), t->name);
	str_copy(im->ref, sizeof(im->ref), t->image);
	str_copy(im->description, sizeof(im->description), t->description);
	im->source = SB_IMAGE_FROM_IMAGE;
	if (sandbox_select_server(ctx, "", &e) < 0 || sandbox_docker_ready(ctx, &e) < 0) {
		im->status = SB_IMAGE_UNKNOWN;
		str_copy(im->failure, sizeof(im->failure), e.msg);
		return;
	}
	if (docker_image_inspect(ctx->dk, t->image, &img, &e) < 0) {
		im->status = e.code == SP_NOT_FOUND ? SB_IMAGE_FAILED : SB_IMAGE_UNKNOWN;
		str_copy(im->failure, sizeof(im->failure),
			 e.code == SP_NOT_FOUND ? "the template's image is not on the server"
						: e.msg);
		return;
	}
	im->status = SB_IMAGE_COMPLETED;
	image_facts(img, im);
	json_object_put(img);
}

static void snapshot_image(const struct sandbox_snapshot *s, struct sandbox_image *im)
{
	memset(im, 0, sizeof(*im));
	snprintf(im->id, sizeof(im->id), "%s%s", SB_SNAP_IMAGE_PREFIX, s->id);
	str_copy(im->ref, sizeof(im->ref), s->image);
	str_copy(im->digest, sizeof(im->digest), s->image_id);
	str_copy(im->snapshot, sizeof(im->snapshot), s->id);
	str_copy(im->description, sizeof(im->description), s->display_name);
	im->source = SB_IMAGE_FROM_SANDBOX;
	im->size_bytes = s->size_bytes;
	im->created_ms = s->created_at;
	im->status = s->status == SB_SNAP_READY	     ? SB_IMAGE_COMPLETED
		     : s->status == SB_SNAP_CREATING ? SB_IMAGE_PREPARING
						     : SB_IMAGE_FAILED;
	if (s->status == SB_SNAP_FAILED)
		str_copy(im->failure, sizeof(im->failure), s->error_message);
}

int sandbox_images_list(struct sandbox_ctx *ctx, const char *org, struct sandbox_image **out,
			size_t *n, struct sp_err *e)
{
	struct sandbox_snapshot *snaps = NULL;
	struct sandbox_image *regs = NULL;
	size_t ns = 0, nr = 0, k = 0, nt = (size_t)ctx->cfg->ntemplates;

	*out = NULL;
	*n = 0;
	if (sandbox_snapshot_list(ctx, org, &snaps, &ns, e) < 0)
		return -1;
	if (sandbox_registry_configured(ctx) &&
	    sandbox_reg_image_list(ctx, org, &regs, &nr, e) < 0) {
		free(snaps);
		return -1;
	}
	*out = calloc(nt + ns + nr + 1, sizeof(**out));
	if (!*out) {
		free(snaps);
		free(regs);
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	}
	for (size_t i = 0; i < nt; i++)
		template_image(ctx, &ctx->cfg->templates[i], &(*out)[k++]);
	for (size_t i = 0; i < ns; i++)
		snapshot_image(&snaps[i], &(*out)[k++]);
	for (size_t i = 0; i < nr; i++)
		(*out)[k++] = regs[i];
	free(snaps);
	free(regs);
	*n = k;
	return 0;
}

int sandbox_image_get(struct sandbox_ctx *ctx, const char *org, const char *id,
		      struct sandbox_image *out, struct sp_err *e)
{
	const struct template_conf *t = config_template(ctx->cfg, id);
	struct sandbox_snapshot s;

	if (t) {
		template_image(ctx, t, out);
		return 0;
	}
	if (strncmp(id, SB_REG_IMAGE_PREFIX, strlen(SB_REG_IMAGE_PREFIX)) == 0 &&
	    sandbox_registry_configured(ctx))
		return sandbox_reg_image_get(ctx, org, id + strlen(SB_REG_IMAGE_PREFIX), out, e);
	if (strncmp(id, SB_SNAP_IMAGE_PREFIX, strlen(SB_SNAP_IMAGE_PREFIX)) != 0 ||
	    sandbox_snapshot_get(ctx, org, id + strlen(SB_SNAP_IMAGE_PREFIX), &s, e) < 0)
		return sp_err_set(e, SP_NOT_FOUND, "Image not found");
	snapshot_image(&s, out);
	return 0;
}
