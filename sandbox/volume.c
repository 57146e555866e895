/*
 * Managed volumes (/v1 createVolume, listVolumes, getVolume, deleteVolume
 * and createSandbox's features.managedVolumes): a Docker named volume
 * (driver local, SB_VOLUME_DOCKER_PREFIX + its id) on the local server,
 * labelled with its id, organization and installation, and its record in
 * Redis (store/volume.c). A volume belongs to one organization (its keys
 * carry the org: another org's id is not found) and is attached to at
 * most one live sandbox, at that sandbox's creation only: the record's
 * holder, set for all of a create's volumes in one Lua step after the
 * sandbox's record exists ("creating"), so two creates anywhere can never
 * both hold one. The holder is freed when its sandbox is removed
 * (kill.c) or its creation fails (create.c); a holder that is no longer
 * live (record gone, failed, past its deadline or expiry, or a create
 * that never finished) is taken over by the next claim or delete, with a
 * compare-and-set on the holder it saw, so a worker that died mid-create
 * never leaks a volume. Deleting an attached volume is refused with the
 * document's deletion_content_lease_held. Where loop disks are possible
 * (the local server, disk.c) a volume made is a loop disk of
 * volume_size_mb instead of a Docker named volume (its record's sizeMb):
 * a write past it fails with ENOSPC; elsewhere (and a volume made before)
 * it is a named volume, and Docker's local driver has no size quota.
 * Never mounts a volume that Docker does not have under our labels (a
 * Docker that lost it would make an empty one of that name).
 */
#include "internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>

#include "../common/buf.h"
#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"

/* A delete's mark on a holder ("!del:<ms>") older than this is a delete
 * that died midway: the next claim or delete takes it over. */
#define DELETE_MARK_TTL_MS 60000
/* The never-started container that gives a volume's root to the sandbox
 * user mounts volume i at "/v<i>". */
#define SEED_PREFIX "sandpit-volseed-"

static void docker_name(const char *id, char *out, size_t cap)
{
	snprintf(out, cap, SB_VOLUME_DOCKER_PREFIX "%s", id);
}

static int vol_from_rec(const struct store_rec *r, struct sandbox_volume *v)
{
	const char *c = store_rec_get(r, "createdAt");
	long long n = 0;

	memset(v, 0, sizeof(*v));
	str_copy(v->id, sizeof(v->id),
		 store_rec_get(r, "volumeId") ? store_rec_get(r, "volumeId") : "");
	str_copy(v->display_name, sizeof(v->display_name),
		 store_rec_get(r, "displayName") ? store_rec_get(r, "displayName") : "");
	str_copy(v->server_id, sizeof(v->server_id),
		 store_rec_get(r, "serverId") ? store_rec_get(r, "serverId") : "local");
	str_copy(v->holder, sizeof(v->holder),
		 store_rec_get(r, "holder") ? store_rec_get(r, "holder") : "");
	if (c && parse_ll(c, 0, 1LL << 62, &n) == 0)
		v->created_at = n;
	c = store_rec_get(r, "sizeMb");
	if (c && parse_ll(c, 1, 1LL << 40, &n) == 0)
		v->size_mb = n;
	docker_name(v->id, v->docker_name, sizeof(v->docker_name));
	return sandbox_id_ok(v->id) ? 0 : -1;
}

/* A volume's server ("local" or "" = the local one) made current and
 * Docker ready there. */
static int server_docker(struct sandbox_ctx *ctx, const char *server, struct sp_err *e)
{
	if (sandbox_select_server(ctx, strcmp(server, "local") == 0 ? "" : server, e) < 0)
		return -1;
	if (!ctx->dk) {
		*e = ctx->server_err;
		return -1;
	}
	return sandbox_docker_ready(ctx, e);
}

static void label(const struct config *cfg, const char *what, char *out, size_t cap)
{
	snprintf(out, cap, "%s.%s", cfg->label_prefix, what);
}

int sandbox_volume_create(struct sandbox_ctx *ctx, const char *org, const char *id,
			  const char *display_name, struct sandbox_volume *out, struct sp_err *e)
{
	char vid[SANDBOX_ID_LEN + 1], dn[64], at[32], k[160], size[32];
	json_object *labels;
	const char *kv[14];
	struct sp_err ignore;
	int64_t size_mb = 0;
	int rc;

	if (id) {
		if (!sandbox_id_ok(id))
			return sp_err_set(e, SP_INTERNAL, "bad caller-chosen volume id");
		str_copy(vid, sizeof(vid), id);
	} else {
		crypto_random_id(vid, SANDBOX_ID_LEN);
	}
	if (sandbox_install_id(ctx, e) < 0 || server_docker(ctx, "local", e) < 0 ||
	    sandbox_disk_volume_plan(ctx, &size_mb, e) < 0)
		return -1;
	docker_name(vid, dn, sizeof(dn));
	if (size_mb) {
		/* a retry of a create that made it (the same caller-chosen id) */
		if (id && sandbox_volume_get(ctx, org, vid, out, &ignore) == 0)
			return 0;
		/* a loop disk of its own (disk.c): no Docker volume */
		if (sandbox_disk_volume_make(ctx, vid, org, size_mb, e) < 0)
			return -1;
		goto record;
	}
	labels = json_object_new_object();
	label(ctx->cfg, "volume", k, sizeof(k));
	json_object_object_add(labels, k, json_object_new_string("true"));
	label(ctx->cfg, "volumeId", k, sizeof(k));
	json_object_object_add(labels, k, json_object_new_string(vid));
	label(ctx->cfg, "organizationId", k, sizeof(k));
	json_object_object_add(labels, k, json_object_new_string(org));
	label(ctx->cfg, "install", k, sizeof(k));
	json_object_object_add(labels, k, json_object_new_string(ctx->install_id));
	rc = docker_volume_create(ctx->dk, dn, labels, e);
	json_object_put(labels);
	if (rc < 0)
		return -1;
record:
	snprintf(at, sizeof(at), "%lld", (long long)now_ms());
	snprintf(size, sizeof(size), "%lld", (long long)size_mb);
	kv[0] = "volumeId", kv[1] = vid;
	kv[2] = "displayName", kv[3] = display_name;
	kv[4] = "organizationId", kv[5] = org;
	kv[6] = "serverId", kv[7] = "local";
	kv[8] = "createdAt", kv[9] = at;
	kv[10] = "holder", kv[11] = "";
	kv[12] = "sizeMb", kv[13] = size;
	rc = store_volume_put(ctx->st, org, vid, kv, size_mb ? 14 : 12, (int64_t)now_ms(),
			      SB_VOLUMES_PER_ORG, e);
	if (size_mb && rc != 0 && rc != 1)
		/* its disk goes (a retry with the same id makes it again) */
		sandbox_disk_volume_remove(ctx, vid, &ignore);
	if (rc == 2 || (rc < 0 && !id)) {
		/* nothing points at it: it goes (a retry with the same id makes
		 * it again) */
		if (!size_mb)
			docker_volume_remove(ctx->dk, dn, &ignore);
		if (rc == 2)
			return sp_err_set(e, SP_QUOTA,
					  "volumes: at most %d per organization; delete some first",
					  SB_VOLUMES_PER_ORG);
	}
	if (rc < 0)
		return -1;
	if (sandbox_volume_get(ctx, org, vid, out, e) < 0)
		return -1;
	log_info("volume %s created (org %s)", vid, org);
	return 0;
}

int sandbox_volume_get(struct sandbox_ctx *ctx, const char *org, const char *id,
		       struct sandbox_volume *out, struct sp_err *e)
{
	struct store_rec r = { 0 };
	int rc;

	if (!sandbox_id_ok(id))
		return sp_err_set(e, SP_NOT_FOUND, "Volume not found");
	if (store_volume_get(ctx->st, org, id, &r, e) < 0)
		return -1;
	rc = vol_from_rec(&r, out);
	store_rec_free(&r);
	if (rc < 0)
		return sp_err_set(e, SP_NOT_FOUND, "Volume not found");
	return 0;
}

int sandbox_volume_list(struct sandbox_ctx *ctx, const char *org, struct sandbox_volume **out,
			size_t *n, struct sp_err *e)
{
	struct store_rec *recs = calloc(SB_VOLUMES_PER_ORG, sizeof(*recs));
	int got;

	*out = NULL;
	*n = 0;
	if (!recs)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	got = store_volume_list(ctx->st, org, recs, SB_VOLUMES_PER_ORG, e);
	if (got > 0)
		*out = calloc((size_t)got, sizeof(**out));
	for (int i = 0; i < got; i++) {
		if (*out && vol_from_rec(&recs[i], &(*out)[*n]) == 0)
			(*n)++;
		store_rec_free(&recs[i]);
	}
	free(recs);
	if (got < 0)
		return -1;
	if (got > 0 && !*out)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	return 0;
}

/* 1 when holder (a sandbox id of org) is a sandbox that may still use its
 * volumes: its record is there, not failed, within its deadline (and its
 * expiry, unless it stops at expiry), and a creation still within its
 * time. A record that time has ended is caught up first (sandbox_get:
 * its containers are ended, a slow create finds its record changed and
 * removes its own), so no container of it still mounts the volume when
 * another sandbox takes it; then back to server `back` (a volume's
 * sandboxes are all on its server). 0 when not live, -1 on error. */
static int holder_live(struct sandbox_ctx *ctx, const char *org, const char *holder,
		       const char *back, struct sp_err *e)
{
	struct store_rec r = { 0 };
	struct sandbox sb;
	struct sp_err ignore;
	int64_t now = now_ms();
	int rc, ended;

	if (!sandbox_id_ok(holder))
		return 0;
	if (store_sandbox_get(ctx->st, org, holder, &r, e) < 0) {
		if (e->code != SP_NOT_FOUND)
			return -1;
		sp_err_clear(e);
		return 0;
	}
	rc = sandbox_from_rec(&r, &sb);
	store_rec_free(&r);
	if (rc < 0 || sb.status == SB_KILLED || sb.status == SB_ERROR)
		return 0;
	ended = (sb.deadline_at > 0 && now > sb.deadline_at) ||
		(sb.status == SB_CREATING && now > sandbox_creating_end(ctx->cfg, &sb)) ||
		(sb.status == SB_RUNNING && !sb.timeout_stop && sb.expires_at > 0 &&
		 now > sb.expires_at);
	if (!ended)
		return 1;
	rc = sandbox_get(ctx, org, holder, &sb, e);
	sandbox_select_server(ctx, back, &ignore);
	if (rc < 0) {
		if (e->code != SP_NOT_FOUND)
			return -1;
		sp_err_clear(e);
		return 0;
	}
	return sb.status != SB_KILLED && sb.status != SB_ERROR;
}

/* A delete's mark, and whether one is stale. */
static int mark_stale(const char *holder)
{
	long long at = 0;

	if (strncmp(holder, "!del:", 5) != 0 || parse_ll(holder + 5, 0, 1LL << 62, &at) < 0)
		return 1;
	return now_ms() - at > DELETE_MARK_TTL_MS;
}

/* sb's attachments out of sb->volumes: ids[i] and targets[i] point into
 * *list (a new object: put it). The count, or -1. */
static int parse_attachments(const struct sandbox *sb, json_object **list, const char **ids,
			     const char **targets)
{
	int n = 0;

	*list = sb->volumes[0] ? json_tokener_parse(sb->volumes) : NULL;
	if (!*list)
		return 0;
	if (!json_object_is_type(*list, json_type_array) ||
	    json_object_array_length(*list) > SB_VOLUME_ATTACH_MAX)
		return -1;
	for (size_t i = 0; i < json_object_array_length(*list); i++) {
		json_object *a = json_object_array_get_idx(*list, i), *v, *t;
		if (!json_object_object_get_ex(a, "volume", &v) ||
		    !json_object_object_get_ex(a, "target", &t))
			return -1;
		ids[n] = json_object_get_string(v);
		targets[n] = json_object_get_string(t);
		n++;
	}
	return n;
}

int sandbox_volume_at(const struct sandbox *sb, const char *target, char *id, size_t cap)
{
	const char *ids[SB_VOLUME_ATTACH_MAX], *targets[SB_VOLUME_ATTACH_MAX];
	json_object *list;
	int n = parse_attachments(sb, &list, ids, targets), rc = -1;

	for (int i = 0; i < n && rc < 0 && target; i++)
		if (strcmp(targets[i], target) == 0 && sandbox_id_ok(ids[i]))
			rc = str_copy(id, cap, ids[i]);
	json_object_put(list);
	return rc;
}

/* --- a create's attachments ----------------------------------------------- */

/* 1 when path is p or below it. */
static int at_or_under(const char *path, const char *p)
{
	size_t n = strlen(p);

	return strncmp(path, p, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* 1 when t is at or below one of the folders of list (blanks or commas
 * between them). */
static int under_listed(const char *t, const char *list)
{
	for (const char *s = list; *s;) {
		size_t n = strcspn(s, ", \t");
		char dir[SB_VOLUME_TARGET_MAX + 1];
		if (n && n < sizeof(dir)) {
			memcpy(dir, s, n);
			dir[n] = '\0';
			if (at_or_under(t, dir))
				return 1;
		}
		s += n;
		while (*s == ',' || *s == ' ' || *s == '\t')
			s++;
	}
	return 0;
}

/* A target: absolute, normalized ("/a/b": no empty, "." or ".."
 * component, no trailing '/'), printable, none of the places that are the
 * kernel's, Docker's, sandpit's or the system's (programs, libraries,
 * configuration: nothing a later process, the keeper's included, could run
 * or read as the image's), and below the workdir or at or below one of
 * the operator's data folders (volume_dirs). The image's PATH is checked
 * once the image is known (sandbox_volumes_path_check). */
static int target_check(const struct config *cfg, const char *t, const char *workdir,
			const char *field, struct sp_err *e)
{
	static const char *const kernel[] = { "/proc", "/sys", "/dev", NULL };
	static const char *const own[] = { "/.sandpit", SANDBOX_HELPER_DIR, NULL };
	static const char *const system[] = { "/bin",	"/sbin",  "/usr",    "/lib",
					      "/lib32", "/lib64", "/libx32", "/etc",
					      "/boot",	"/root",  "/var",    "/opt",
					      "/run",	"/nix",	  "/tmp",    NULL };
	size_t len = strlen(t);

	if (t[0] != '/')
		return sp_err_field(e, SP_BAD_REQUEST, field, "%s: an absolute path is required",
				    field);
	if (len > SB_VOLUME_TARGET_MAX)
		return sp_err_field(e, SP_BAD_REQUEST, field, "%s: at most %d bytes", field,
				    SB_VOLUME_TARGET_MAX);
	for (const char *p = t; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return sp_err_field(e, SP_BAD_REQUEST, field,
					    "%s: control characters are not allowed", field);
	if (strcmp(t, "/") == 0)
		return sp_err_field(e, SP_BAD_REQUEST, field,
				    "%s: / is the sandbox's root; mount below it", field);
	for (const char *p = t; *p == '/';) {
		size_t n = strcspn(p + 1, "/");
		if (n == 0 || (n == 1 && p[1] == '.') || (n == 2 && p[1] == '.' && p[2] == '.'))
			return sp_err_field(e, SP_BAD_REQUEST, field,
					    "%s: must be normalized (no '//', '.', '..' or "
					    "trailing '/')",
					    field);
		p += 1 + n;
	}
	for (int i = 0; kernel[i]; i++)
		if (at_or_under(t, kernel[i]))
			return sp_err_field(
				e, SP_BAD_REQUEST, field,
				"%s: %s belongs to the kernel; a volume cannot go there", field,
				kernel[i]);
	for (int i = 0; own[i]; i++)
		if (at_or_under(t, own[i]))
			return sp_err_field(
				e, SP_BAD_REQUEST, field,
				"%s: %s is sandpit's own mount; a volume cannot go there", field,
				own[i]);
	for (int i = 0; system[i]; i++)
		if (at_or_under(t, system[i]))
			return sp_err_field(e, SP_BAD_REQUEST, field,
					    "%s: %s is a system folder (programs, libraries, "
					    "configuration); a volume cannot go at or below it",
					    field, system[i]);
	if (strcmp(t, workdir) == 0)
		return sp_err_field(e, SP_BAD_REQUEST, field,
				    "%s: %s is the sandbox's workdir (its own disk); mount below "
				    "it, for example %s/data",
				    field, t, strcmp(workdir, "/") == 0 ? "" : workdir);
	if (!(strcmp(workdir, "/") != 0 && at_or_under(t, workdir)) &&
	    !under_listed(t, cfg->volume_dirs))
		return sp_err_field(e, SP_BAD_REQUEST, field,
				    "%s: a volume goes below the workdir (%s/...) or at or below "
				    "one of the data folders %s (volume_dirs)",
				    field, workdir, cfg->volume_dirs);
	return 0;
}

int sandbox_volumes_path_check(const struct sandbox *sb, const char *path, struct sp_err *e)
{
	const char *ids[SB_VOLUME_ATTACH_MAX], *targets[SB_VOLUME_ATTACH_MAX];
	json_object *list = NULL;
	int n = parse_attachments(sb, &list, ids, targets), rc = 0;
	char field[96], dir[SB_VOLUME_TARGET_MAX + 1];

	for (int i = 0; i < n && rc == 0; i++)
		for (const char *p = path; *p && rc == 0;) {
			size_t k = strcspn(p, ":");
			if (k && k < sizeof(dir)) {
				memcpy(dir, p, k);
				dir[k] = '\0';
				while (k > 1 && dir[k - 1] == '/')
					dir[--k] = '\0';
				if (at_or_under(dir, targets[i]) || at_or_under(targets[i], dir)) {
					snprintf(field, sizeof(field),
						 "features.managedVolumes.attachments[%d].target",
						 i);
					rc = sp_err_field(
						e, SP_BAD_REQUEST, field,
						"%s: %s holds the image's PATH folder %s; "
						"a volume cannot go there",
						field, targets[i], dir);
				}
			}
			p += k;
			if (*p)
				p++;
		}
	json_object_put(list);
	return rc;
}

int sandbox_volumes_fill(const struct config *cfg, const struct sandbox_create_req *rq,
			 struct sandbox *sb, struct sp_err *e)
{
	json_object *list;
	const char *js;
	size_t len = 0;
	char field[96];

	sb->volumes[0] = '\0';
	if (!rq->nvolumes)
		return 0;
	if (rq->nvolumes > SB_VOLUME_ATTACH_MAX)
		return sp_err_field(e, SP_BAD_REQUEST, "features.managedVolumes.attachments",
				    "features.managedVolumes.attachments: at most %d",
				    SB_VOLUME_ATTACH_MAX);
	for (size_t i = 0; i < rq->nvolumes; i++) {
		const struct sandbox_volume_attach *a = &rq->volumes[i];
		snprintf(field, sizeof(field), "features.managedVolumes.attachments[%zu].volume",
			 i);
		if (!a->volume || !sandbox_id_ok(a->volume))
			return sp_err_field(e, SP_NOT_FOUND, field, "%s: no such volume", field);
		snprintf(field, sizeof(field), "features.managedVolumes.attachments[%zu].target",
			 i);
		if (!a->target || target_check(cfg, a->target, sb->workdir, field, e) < 0)
			return a->target ? -1
					 : sp_err_field(e, SP_BAD_REQUEST, field, "%s: Required",
							field);
		for (size_t j = 0; j < i; j++) {
			const struct sandbox_volume_attach *b = &rq->volumes[j];
			if (strcmp(a->volume, b->volume) == 0)
				return sp_err_field(
					e, SP_BAD_REQUEST, "features.managedVolumes.attachments",
					"features.managedVolumes.attachments: volumes/%s is given "
					"twice",
					a->volume);
			if (at_or_under(a->target, b->target) || at_or_under(b->target, a->target))
				return sp_err_field(e, SP_BAD_REQUEST, field,
						    "%s: %s overlaps the target %s of "
						    "attachments[%zu]",
						    field, a->target, b->target, j);
		}
	}
	list = json_object_new_array();
	for (size_t i = 0; i < rq->nvolumes; i++) {
		json_object *a = json_object_new_object();
		json_object_object_add(a, "volume", json_object_new_string(rq->volumes[i].volume));
		json_object_object_add(a, "target", json_object_new_string(rq->volumes[i].target));
		json_object_array_add(list, a);
	}
	js = json_object_to_json_string_length(list, JSON_C_TO_STRING_PLAIN, &len);
	if (len >= sizeof(sb->volumes)) {
		json_object_put(list);
		return sp_err_field(e, SP_BAD_REQUEST, "features.managedVolumes",
				    "features.managedVolumes: too long");
	}
	memcpy(sb->volumes, js, len + 1);
	json_object_put(list);
	return 0;
}

static const char *jstr(json_object *o, const char *k)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* One attachment's volume as Docker has it: there, and ours (its labels
 * name it, its org and this installation). 409 naming the field else. */
static int docker_has(struct sandbox_ctx *ctx, const struct sandbox *sb, const char *id, int i,
		      struct sp_err *e)
{
	char dn[64], field[96], k[160];
	json_object *v = NULL, *labels;
	const char *got;
	int ok;

	docker_name(id, dn, sizeof(dn));
	snprintf(field, sizeof(field), "features.managedVolumes.attachments[%d].volume", i);
	if (docker_volume_inspect(ctx->dk, dn, &v, e) < 0) {
		if (e->code != SP_NOT_FOUND)
			return -1;
		return sp_err_field(e, SP_PRECONDITION, field,
				    "volume_missing: volumes/%s: this Docker has no %s (it was "
				    "removed behind sandpit's back, or made by another host's "
				    "local Docker)",
				    id, dn);
	}
	ok = json_object_object_get_ex(v, "Labels", &labels);
	label(ctx->cfg, "volumeId", k, sizeof(k));
	got = ok ? jstr(labels, k) : NULL;
	ok = got && strcmp(got, id) == 0;
	label(ctx->cfg, "organizationId", k, sizeof(k));
	got = ok ? jstr(labels, k) : NULL;
	ok = got && strcmp(got, sb->org) == 0;
	json_object_put(v);
	if (!ok)
		return sp_err_field(e, SP_PRECONDITION, field,
				    "volume_missing: volumes/%s: Docker's %s is not this volume",
				    id, dn);
	return 0;
}

int sandbox_volumes_claim(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	const char *ids[SB_VOLUME_ATTACH_MAX], *targets[SB_VOLUME_ATTACH_MAX];
	const char *expect[SB_VOLUME_ATTACH_MAX];
	char seen[SB_VOLUME_ATTACH_MAX][64], holder[64], field[96];
	json_object *list;
	int n = parse_attachments(sb, &list, ids, targets), rc = -1, bad;

	if (n <= 0) {
		json_object_put(list);
		return n < 0 ? sp_err_set(e, SP_INTERNAL, "bad volumes in the record") : 0;
	}
	for (int i = 0; i < n; i++)
		expect[i] = "";
	/* each round either claims all, or learns one holder that is not
	 * live (then claims over it next round), or fails */
	for (int round = 0; round <= n + 1; round++) {
		int c = store_volume_claim(ctx->st, sb->org, sb->id, ids, expect, n, &bad, holder,
					   sizeof(holder), e);
		int live;
		if (c < 0)
			goto out;
		if (c == 0) {
			rc = 0;
			break;
		}
		snprintf(field, sizeof(field), "features.managedVolumes.attachments[%d].volume",
			 bad);
		if (c == 1) {
			sp_err_field(e, SP_NOT_FOUND, field, "%s: no such volume (volumes/%s)",
				     field, ids[bad]);
			goto out;
		}
		if (holder[0] == '!') {
			if (!mark_stale(holder)) {
				sp_err_field(e, SP_PRECONDITION, field,
					     "volume_deleting: volumes/%s is being deleted",
					     ids[bad]);
				goto out;
			}
		} else {
			live = holder_live(ctx, sb->org, holder, sb->server_id, e);
			if (live < 0)
				goto out;
			if (live) {
				sp_err_field(e, SP_PRECONDITION, field,
					     "volume_attached: volumes/%s is attached to "
					     "sandboxes/%s (exclusive); delete that sandbox first",
					     ids[bad], holder);
				goto out;
			}
		}
		str_copy(seen[bad], sizeof(seen[bad]), holder);
		expect[bad] = seen[bad];
	}
	if (rc < 0) {
		sp_err_set(e, SP_PRECONDITION, "volume_attached: the volumes are contended; retry");
		goto out;
	}
	rc = -1;
	for (int i = 0; i < n; i++) {
		struct sandbox_volume v;
		snprintf(field, sizeof(field), "features.managedVolumes.attachments[%d].volume", i);
		if (sandbox_volume_get(ctx, sb->org, ids[i], &v, e) < 0)
			goto out;
		if (strcmp(v.server_id, sb->server_id[0] ? sb->server_id : "local") != 0) {
			sp_err_field(e, SP_PRECONDITION, field,
				     "%s: volumes/%s is on server %s, the sandbox on %s", field,
				     ids[i], v.server_id,
				     sb->server_id[0] ? sb->server_id : "local");
			goto out;
		}
		str_copy(sb->disk.vols[i].id, sizeof(sb->disk.vols[i].id), ids[i]);
		sb->disk.vols[i].size_mb = v.size_mb;
		/* a loop disk's file is checked when it is attached (disk.c) */
		if (!v.size_mb && docker_has(ctx, sb, ids[i], i, e) < 0)
			goto out;
		/* the record shows it (effectiveFeatures: what is enforced) */
		if (v.size_mb)
			json_object_object_add(json_object_array_get_idx(list, (size_t)i), "sizeMb",
					       json_object_new_int64(v.size_mb));
	}
	{
		size_t len = 0;
		const char *js =
			json_object_to_json_string_length(list, JSON_C_TO_STRING_PLAIN, &len);
		if (len < sizeof(sb->volumes))
			memcpy(sb->volumes, js, len + 1);
	}
	rc = 0;
out:
	json_object_put(list);
	return rc;
}

void sandbox_volumes_release(struct sandbox_ctx *ctx, const struct sandbox *sb)
{
	const char *ids[SB_VOLUME_ATTACH_MAX], *targets[SB_VOLUME_ATTACH_MAX];
	json_object *list;
	int n = parse_attachments(sb, &list, ids, targets);
	struct sp_err e;

	/* a loop disk's device (a discard-mode sandbox's has no AUTOCLEAR):
	 * detached, or at its unmount when a container still mounts it */
	for (int i = 0; i < n; i++)
		if (!sb->server_id[0] && sandbox_id_ok(ids[i]))
			sandbox_disk_volume_detach(ctx->cfg, ids[i]);
	if (n > 0 && store_volume_release(ctx->st, sb->org, sb->id, ids, n, &e) < 0)
		log_warn("sandbox %s: its volumes stay held until taken over: %s", sb->id, e.msg);
	json_object_put(list);
}

int sandbox_volumes_own(struct sandbox_ctx *ctx, const struct sandbox *sb, struct sp_err *e)
{
	const char *ids[SB_VOLUME_ATTACH_MAX], *targets[SB_VOLUME_ATTACH_MAX];
	struct docker_tar_entry ents[SB_VOLUME_ATTACH_MAX];
	char dirs[SB_VOLUME_ATTACH_MAX][16], name[96], cid[65], k[160];
	json_object *list, *body, *hc, *mounts, *cmd, *labels;
	unsigned uid, gid, mode;
	size_t nent = 0;
	int n = parse_attachments(sb, &list, ids, targets), rc = -1;
	struct sp_err ignore;

	if (n <= 0) {
		json_object_put(list);
		return n < 0 ? sp_err_set(e, SP_INTERNAL, "bad volumes in the record") : 0;
	}
	for (rc = 0; rc < n && sb->disk.vols[rc].dev[0];)
		rc++;
	if (rc == n) { /* loop disks only: nothing for the seed container */
		json_object_put(list);
		return 0;
	}
	rc = -1;
	sandbox_owner(sb, &uid, &gid, &mode);
	body = json_object_new_object();
	hc = json_object_new_object();
	mounts = json_object_new_array();
	cmd = json_object_new_array();
	labels = json_object_new_object();
	json_object_object_add(body, "Image", json_object_new_string(sb->image));
	json_object_object_add(body, "Entrypoint", json_object_new_array());
	json_object_array_add(cmd, json_object_new_string("true"));
	json_object_object_add(body, "Cmd", cmd);
	label(ctx->cfg, "volumeSeed", k, sizeof(k));
	json_object_object_add(labels, k, json_object_new_string(sb->id));
	label(ctx->cfg, "install", k, sizeof(k));
	json_object_object_add(labels, k, json_object_new_string(ctx->install_id));
	json_object_object_add(body, "Labels", labels);
	for (int i = 0; i < n; i++) {
		json_object *m, *vo;
		char dn[64], tgt[20];
		/* a loop disk's root is given in disk.c (sandbox_disk_owner) */
		if (sb->disk.vols[i].dev[0])
			continue;
		m = json_object_new_object();
		vo = json_object_new_object();
		docker_name(ids[i], dn, sizeof(dn));
		snprintf(tgt, sizeof(tgt), "/v%d", i);
		json_object_object_add(m, "Type", json_object_new_string("volume"));
		json_object_object_add(m, "Source", json_object_new_string(dn));
		json_object_object_add(m, "Target", json_object_new_string(tgt));
		json_object_object_add(vo, "NoCopy", json_object_new_boolean(1));
		json_object_object_add(m, "VolumeOptions", vo);
		json_object_array_add(mounts, m);
	}
	json_object_object_add(hc, "Mounts", mounts);
	json_object_object_add(hc, "NetworkMode", json_object_new_string("none"));
	json_object_object_add(body, "HostConfig", hc);
	snprintf(name, sizeof(name), SEED_PREFIX "%s", sb->id);
	if (docker_container_create(ctx->dk, name, body, cid, e) < 0) {
		if (e->code != SP_CONFLICT)
			goto done;
		/* left by an attempt of this sandbox that died: made again */
		docker_container_remove(ctx->dk, name, 1, &ignore);
		sp_err_clear(e);
		if (docker_container_create(ctx->dk, name, body, cid, e) < 0)
			goto done;
	}
	for (int i = 0; i < n; i++) {
		struct docker_owner o;
		char path[20];
		if (sb->disk.vols[i].dev[0])
			continue;
		snprintf(path, sizeof(path), "/v%d", i);
		if (docker_archive_owner(ctx->dk, cid, path, &o, e) < 0)
			goto remove;
		if (o.uid == uid && o.gid == gid)
			continue;
		snprintf(dirs[nent], sizeof(dirs[nent]), "v%d", i);
		ents[nent] = (struct docker_tar_entry){ dirs[nent], 1,	  mode, uid,
							gid,	    NULL, 0,	now_ms() / 1000 };
		nent++;
	}
	if (nent) {
		struct buf tar;
		buf_init(&tar, 64 * 1024);
		rc = docker_tar_build(ents, nent, &tar, e);
		if (rc == 0)
			rc = docker_archive_put(ctx->dk, cid, "/", tar.data, tar.len, e);
		buf_free(&tar);
		if (rc < 0)
			goto remove;
	}
	rc = 0;
remove:
	docker_container_remove(ctx->dk, cid, 1, &ignore);
done:
	json_object_put(body);
	json_object_put(list);
	return rc;
}

/* --- delete ----------------------------------------------------------------- */

/* Removes v's Docker volume (already gone: success). Containers that
 * still mount it and no longer run (a removed sandbox's container that
 * Docker's AutoRemove has not taken yet, a discard-mode sandbox's exited
 * one, a seed container left by a create that died) are removed first,
 * if this installation made them; one that runs or is paused keeps it:
 * SP_PRECONDITION deletion_content_lease_held. Tries for up to
 * VOLUME_RM_WAIT_MS while Docker is still removing one. */
#define VOLUME_RM_WAIT_MS 5000
static int volume_remove(struct sandbox_ctx *ctx, const struct sandbox_volume *v, struct sp_err *e)
{
	int64_t until = mono_ms() + VOLUME_RM_WAIT_MS;
	char k[160];

	label(ctx->cfg, "install", k, sizeof(k));
	for (;;) {
		json_object *users = NULL;
		struct timespec ts = { 0, 200 * 1000 * 1000 };
		if (docker_volume_remove(ctx->dk, v->docker_name, e) == 0)
			return 0;
		if (e->code == SP_NOT_FOUND) {
			sp_err_clear(e);
			return 0;
		}
		if (e->code != SP_CONFLICT ||
		    docker_volume_users(ctx->dk, v->docker_name, &users, e) < 0)
			return -1;
		for (size_t i = 0; i < json_object_array_length(users); i++) {
			json_object *c = json_object_array_get_idx(users, i), *labels = NULL;
			const char *state = jstr(c, "State"), *cid = jstr(c, "Id"), *inst;
			struct sp_err ignore;
			json_object_object_get_ex(c, "Labels", &labels);
			inst = jstr(labels, k);
			if (state &&
			    (strcmp(state, "running") == 0 || strcmp(state, "paused") == 0 ||
			     strcmp(state, "restarting") == 0)) {
				json_object_put(users);
				return sp_err_set(
					e, SP_PRECONDITION,
					"deletion_content_lease_held: volumes/%s is mounted "
					"by a running container",
					v->id);
			}
			if (cid && inst && strcmp(inst, ctx->install_id) == 0)
				docker_container_remove(ctx->dk, cid, 1, &ignore);
		}
		json_object_put(users);
		if (mono_ms() > until)
			return sp_err_set(
				e, SP_PRECONDITION,
				"deletion_content_lease_held: volumes/%s is still mounted by "
				"a container that is being removed; retry shortly",
				v->id);
		nanosleep(&ts, NULL);
	}
}

int sandbox_volume_delete(struct sandbox_ctx *ctx, const char *org, const char *id,
			  struct sp_err *e)
{
	struct sandbox_volume v;
	char mark[40], seen[64];
	int rc;

	for (int round = 0;; round++) {
		if (sandbox_volume_get(ctx, org, id, &v, e) < 0) {
			if (e->code != SP_NOT_FOUND)
				return -1;
			sp_err_clear(e); /* absent: the document's success */
			return 0;
		}
		if (v.holder[0] == '!' ? !mark_stale(v.holder) : 0)
			return sp_err_set(
				e, SP_PRECONDITION,
				"deletion_content_lease_held: volumes/%s is being deleted "
				"by another request",
				id);
		if (v.holder[0] && v.holder[0] != '!') {
			int live = holder_live(ctx, org, v.holder,
					       strcmp(v.server_id, "local") == 0 ? "" : v.server_id,
					       e);
			if (live < 0)
				return -1;
			if (live)
				return sp_err_set(
					e, SP_PRECONDITION,
					"deletion_content_lease_held: volumes/%s is "
					"attached to sandboxes/%s; delete that sandbox first",
					id, v.holder);
		}
		snprintf(mark, sizeof(mark), "!del:%lld", (long long)now_ms());
		rc = store_volume_holder_cas(ctx->st, org, id, v.holder, mark, seen, sizeof(seen),
					     e);
		if (rc < 0) {
			if (e->code != SP_NOT_FOUND)
				return -1;
			sp_err_clear(e);
			return 0;
		}
		if (rc == 0)
			break;
		if (round >= 3)
			return sp_err_set(e, SP_PRECONDITION,
					  "deletion_content_lease_held: volumes/%s changed while "
					  "it was being deleted; retry",
					  id);
	}
	/* marked: no claim takes it now */
	if (sandbox_install_id(ctx, e) < 0 || server_docker(ctx, v.server_id, e) < 0)
		goto undo;
	/* a loop disk's file (disk.c), else the Docker volume */
	if ((v.size_mb ? sandbox_disk_volume_remove(ctx, id, e) : volume_remove(ctx, &v, e)) < 0)
		goto undo;
	if (store_volume_del(ctx->st, org, id, mark, e) < 0)
		return -1;
	log_info("volume %s deleted (org %s)", id, org);
	return 0;
undo : {
	struct sp_err ignore;
	store_volume_holder_cas(ctx->st, org, id, mark, "", seen, sizeof(seen), &ignore);
	return -1;
}
}

/* An RFC 3339 time as Docker writes it ("2026-12-01T19:48:53Z", or with
 * an offset and fractions), in ms since the epoch; 0 when it is not one. */
static int64_t rfc3339_ms(const char *t)
{
	struct tm tm;
	const char *p;
	int64_t s;

	memset(&tm, 0, sizeof(tm));
	if (!t || !(p = strptime(t, "%Y-%m-%dT%H:%M:%S", &tm)))
		return 0;
	s = (int64_t)timegm(&tm);
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	if (*p == 'Z')
		return s * 1000;
	if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
		int off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600 +
			  ((p[4] - '0') * 10 + (p[5] - '0')) * 60;
		return (s - (*p == '+' ? off : -off)) * 1000;
	}
	return 0;
}

/* Volume disks (disk.c) of this installation that no record names, older
 * than age ms: a createVolume whose worker died between its file and its
 * record. The file's SB_VOLUME_DISK_XATTR names the installation and the
 * org (another installation may share disk_dir). */
static void disks_sweep(struct sandbox_ctx *ctx, int64_t age)
{
	char dir[1100];
	DIR *d;
	struct dirent *de;
	int64_t now = now_ms();

	snprintf(dir, sizeof(dir), "%s/" SB_VOLUME_DISK_DIR, ctx->cfg->disk_dir);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char id[SANDBOX_ID_LEN + 1], path[1400], tag[200];
		const char *org;
		struct store_rec r = { 0 };
		struct stat st;
		struct sp_err e;
		ssize_t n;
		size_t il = strlen(ctx->install_id);
		if (strlen(de->d_name) != SANDBOX_ID_LEN + 4 ||
		    strcmp(de->d_name + SANDBOX_ID_LEN, ".img") != 0)
			continue;
		memcpy(id, de->d_name, SANDBOX_ID_LEN);
		id[SANDBOX_ID_LEN] = '\0';
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!sandbox_id_ok(id) || lstat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
		    now - (int64_t)st.st_mtime * 1000 < age)
			continue;
		n = getxattr(path, SB_VOLUME_DISK_XATTR, tag, sizeof(tag) - 1);
		if (n <= 0)
			continue;
		tag[n] = '\0';
		if (strncmp(tag, ctx->install_id, il) != 0 || tag[il] != ' ')
			continue;
		org = tag + il + 1;
		if (store_volume_get(ctx->st, org, id, &r, &e) == 0) {
			store_rec_free(&r);
			continue;
		}
		if (e.code != SP_NOT_FOUND)
			continue;
		if (sandbox_disk_volume_remove(ctx, id, &e) == 0)
			log_info("volume sweep: removed the disk of %s (no record names it)", id);
	}
	closedir(d);
}

void sandbox_volumes_sweep(struct sandbox_ctx *ctx)
{
	int64_t age = ((int64_t)ctx->cfg->create_timeout_s + 2 * ctx->cfg->docker_timeout_s) * 1000,
		now = now_ms();
	char lbl[200], kid[160], korg[160], kvol[160];
	json_object *vols = NULL;
	struct sp_err e;

	if (ctx->install_id[0])
		disks_sweep(ctx, age);
	/* optional work: never on a server that is slow to answer now */
	if (!ctx->install_id[0] || server_docker(ctx, "local", &e) < 0 ||
	    docker_client_suspect(ctx->dk))
		return;
	snprintf(lbl, sizeof(lbl), "%s.install=%s", ctx->cfg->label_prefix, ctx->install_id);
	if (docker_volume_list(ctx->dk, lbl, &vols, &e) < 0) {
		log_warn("volume sweep: %s", e.msg);
		return;
	}
	label(ctx->cfg, "volumeId", kid, sizeof(kid));
	label(ctx->cfg, "organizationId", korg, sizeof(korg));
	label(ctx->cfg, "volume", kvol, sizeof(kvol));
	for (size_t i = 0; i < json_object_array_length(vols); i++) {
		json_object *v = json_object_array_get_idx(vols, i), *labels = NULL;
		const char *name = jstr(v, "Name"), *id, *org, *mark;
		struct store_rec r = { 0 };
		char dn[64];
		int64_t made;
		json_object_object_get_ex(v, "Labels", &labels);
		id = jstr(labels, kid);
		org = jstr(labels, korg);
		mark = jstr(labels, kvol);
		if (!name || !id || !org || !mark || strcmp(mark, "true") != 0 ||
		    !sandbox_id_ok(id))
			continue;
		docker_name(id, dn, sizeof(dn));
		if (strcmp(name, dn) != 0)
			continue;
		/* a create still on its way to the record write: left to it */
		made = rfc3339_ms(jstr(v, "CreatedAt"));
		if (made <= 0 || now - made < age)
			continue;
		if (store_volume_get(ctx->st, org, id, &r, &e) == 0) {
			store_rec_free(&r);
			continue;
		}
		if (e.code != SP_NOT_FOUND)
			continue;
		if (docker_volume_remove(ctx->dk, dn, &e) == 0)
			log_info("volume sweep: removed %s (no record names it)", dn);
	}
	json_object_put(vols);
}
