/*
 * A sandbox's image: which references a caller may name, inspected on the
 * current server, pulled when it is missing and a pull is allowed (the
 * record's creatingUntil moved for the pull), and checked for the sh
 * sandpit's programs need (remembered per image id; sleep and the clock
 * are the read-only helper's, never the image's: sh/main.sh).
 * A reference names a template's image, an image the operator allows
 * (image_allow), or one of the caller's organization's snapshots or
 * registered images; never an image ID, a prefix of one or a sha256: ID,
 * and never an image that carries sandpit's snapshot labels of another
 * organization or installation, however it was named (checked on the
 * inspect). Every create (both faces, a restore, the warm pool) goes
 * through sandbox_prepare_image. Must never hand dockerd a pull of a name
 * that none of those rules allowed.
 */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"

/* What a reference names (sandbox_image_admit). */
enum { IMG_TEMPLATE, IMG_ALLOWED, IMG_SNAPSHOT, IMG_REGISTERED };

/* tool_cache is shared by sandpit-stream's threads: read and written under
 * tool_mu, held for the look-up or the store only, never across a Docker
 * call. */
static pthread_mutex_t tool_mu = PTHREAD_MUTEX_INITIALIZER;

/* Whether the image lacks sh (the one program of the image's that sandpit
 * runs; the keeper's sleep and clock are the helper's), remembered per image id so the
 * look-up costs nothing after the first sandbox of an image. Under
 * tool_mu. */
static struct {
	char image_id[80];
	char missing[32];
} tool_cache[32];
static unsigned tool_cache_next;

const char *sandbox_image_path(json_object *img)
{
	json_object *cfg, *env;
	static _Thread_local char path[1024]; /* per thread: valid until its next call */

	str_copy(path, sizeof(path),
		 "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	if (json_object_object_get_ex(img, "Config", &cfg) &&
	    json_object_object_get_ex(cfg, "Env", &env) &&
	    json_object_is_type(env, json_type_array))
		for (size_t i = 0; i < json_object_array_length(env); i++) {
			const char *kv = json_object_get_string(json_object_array_get_idx(env, i));
			if (kv && strncmp(kv, "PATH=", 5) == 0)
				str_copy(path, sizeof(path), kv + 5);
		}
	return path;
}

/* Checks sh through archive stats on the created (not yet
 * started) container. Writes the names missing ("" when none) into out. */
static int find_missing_tools(struct sandbox_ctx *ctx, const char *cid, const char *image_id,
			      const char *path, char *out, size_t cap, struct sp_err *e)
{
	static const char *const tools[] = { "sh" };
	unsigned i;
	int hit = 0;

	pthread_mutex_lock(&tool_mu);
	for (i = 0; i < sizeof(tool_cache) / sizeof(tool_cache[0]) && !hit; i++)
		if (strcmp(tool_cache[i].image_id, image_id) == 0) {
			str_copy(out, cap, tool_cache[i].missing);
			hit = 1;
		}
	pthread_mutex_unlock(&tool_mu);
	if (hit)
		return 0;
	out[0] = '\0';
	for (i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		const char *p = path;
		int found = 0;
		while (*p && !found) {
			size_t n = strcspn(p, ":");
			char full[1200];
			struct docker_stat st;
			struct sp_err se;
			snprintf(full, sizeof(full), "%.*s/%s", (int)n, p, tools[i]);
			if (n && full[0] == '/' &&
			    docker_archive_stat(ctx->dk, cid, full, &st, &se) == 0)
				found = 1;
			else if (n && full[0] == '/' && se.code != SP_NOT_FOUND)
				return sp_err_set(e, se.code, "%s", se.msg);
			p += n;
			if (*p)
				p++;
		}
		if (!found) {
			size_t k = strlen(out);
			snprintf(out + k, cap - k, "%s%s", k ? ", " : "", tools[i]);
		}
	}
	pthread_mutex_lock(&tool_mu);
	i = tool_cache_next++ % (sizeof(tool_cache) / sizeof(tool_cache[0]));
	str_copy(tool_cache[i].image_id, sizeof(tool_cache[i].image_id), image_id);
	str_copy(tool_cache[i].missing, sizeof(tool_cache[i].missing), out);
	pthread_mutex_unlock(&tool_mu);
	return 0;
}

int sandbox_check_tools(struct sandbox_ctx *ctx, const struct sandbox *sb, json_object *img,
			char *missing, size_t cap, struct sp_err *e)
{
	json_object *v;

	if (!json_object_object_get_ex(img, "Id", &v))
		return sp_err_set(e, SP_INTERNAL, "Image has no id");
	return find_missing_tools(ctx, sb->container_id, json_object_get_string(v),
				  sandbox_image_path(img), missing, cap, e);
}

/* --- which references a caller may name ---------------------------------- */

/* 1 when ref names a tag or a digest (a ':' after its last '/', or '@'). */
static int has_tag(const char *ref, size_t n)
{
	const char *slash = NULL;

	for (size_t i = 0; i < n; i++) {
		if (ref[i] == '@')
			return 1;
		if (ref[i] == '/')
			slash = ref + i;
	}
	return memchr(slash ? slash : ref, ':', n - (size_t)(slash ? slash - ref : 0)) != NULL;
}

/* 1 when a (n bytes) and b name the same image: equal, or one is the
 * other without its ":latest". */
static int same_ref(const char *a, size_t n, const char *b)
{
	size_t m = strlen(b);

	if (n == m)
		return strncmp(a, b, n) == 0;
	if (n + 7 == m && !has_tag(a, n))
		return strncmp(a, b, n) == 0 && strcmp(b + n, ":latest") == 0;
	if (m + 7 == n && !has_tag(b, m))
		return strncmp(a, b, m) == 0 && strncmp(a + m, ":latest", 7) == 0;
	return 0;
}

/* 1 when the image_allow pattern p (n bytes, no ORG=) allows ref: a
 * prefix* its prefix, a repository alone any of its tags and digests, a
 * repository:tag or @digest that image. */
static int pattern_allows(const char *p, size_t n, const char *ref)
{
	if (p[n - 1] == '*')
		return strncmp(ref, p, n - 1) == 0;
	if (has_tag(p, n))
		return same_ref(p, n, ref);
	return strncmp(ref, p, n) == 0 &&
	       (ref[n] == '\0' || ref[n] == '@' || (ref[n] == ':' && !strchr(ref + n, '/')));
}

/* 1 when the operator's image_allow allows ref for org. */
static int allow_listed(const struct config *cfg, const char *org, const char *ref)
{
	for (const char *s = cfg->image_allow; *s;) {
		size_t n = strcspn(s, ", \t");
		const char *eq = memchr(s, '=', n);
		if (n &&
		    (!eq ||
		     ((size_t)(eq - s) == strlen(org) && strncmp(s, org, strlen(org)) == 0)) &&
		    pattern_allows(eq ? eq + 1 : s, eq ? n - (size_t)(eq + 1 - s) : n, ref))
			return 1;
		s += n;
		while (*s == ',' || *s == ' ' || *s == '\t')
			s++;
	}
	return 0;
}

/* The rules on the reference's name alone (nothing asked of Docker):
 * *kind what it names. A 400 naming field for one a caller may not use. */
static int image_admit(struct sandbox_ctx *ctx, const char *org, const char *ref, const char *field,
		       int *kind, struct sp_err *e)
{
	size_t n = strlen(ref), snap = strlen(SB_SNAP_REPO);
	int r;

	if (n == 0)
		return sp_err_field(e, SP_BAD_REQUEST, field, "%s: Required", field);
	if (strncasecmp(ref, "sha256:", 7) == 0)
		return sp_err_field(e, SP_BAD_REQUEST, field,
				    "%s: an image ID (sha256:...) is not accepted; name the image "
				    "by repository[:tag] or repository@sha256:<digest>",
				    field);
	if (n <= 64 && strspn(ref, "0123456789abcdefABCDEF") == n)
		return sp_err_field(e, SP_BAD_REQUEST, field,
				    "%s: %s reads as an image ID or a prefix of one, which is not "
				    "accepted; name the image by repository[:tag]",
				    field, ref);
	for (int i = 0; i < ctx->cfg->ntemplates; i++)
		if (same_ref(ref, n, ctx->cfg->templates[i].image)) {
			*kind = IMG_TEMPLATE;
			return 0;
		}
	if (strncmp(ref, SB_SNAP_REPO, snap) == 0 && (ref[snap] == ':' || ref[snap] == '@')) {
		/* the organization's own snapshot, by its tag only: its record
		 * here, then its labels on the inspect */
		struct sandbox_snapshot s;
		if (ref[snap] == ':' && sandbox_id_ok(ref + snap + 1) &&
		    sandbox_snapshot_get(ctx, org, ref + snap + 1, &s, e) == 0) {
			*kind = IMG_SNAPSHOT;
			return 0;
		}
		if (e->code != SP_OK && e->code != SP_NOT_FOUND)
			return -1;
		return sp_err_field(e, SP_BAD_REQUEST, field,
				    "%s: %s is not a snapshot of this organization", field, ref);
	}
	r = sandbox_reg_image_ref(ctx, org, ref, e);
	if (r < 0)
		return -1;
	if (r == 1) {
		*kind = IMG_REGISTERED;
		return 0;
	}
	if (r == 2)
		return sp_err_field(e, SP_BAD_REQUEST, field,
				    "%s: %s is not a registered image of this organization", field,
				    ref);
	if (allow_listed(ctx->cfg, org, ref)) {
		*kind = IMG_ALLOWED;
		return 0;
	}
	return sp_err_field(e, SP_BAD_REQUEST, field,
			    "%s: %s is not an image this organization may use: name a template's "
			    "image, an image the operator allows (image_allow), or one of the "
			    "organization's snapshots",
			    field, ref);
}

int sandbox_image_admit(struct sandbox_ctx *ctx, const char *org, const char *ref,
			const char *field, struct sp_err *e)
{
	int kind;

	return image_admit(ctx, org, ref, field, &kind, e);
}

/* 1 when key ends with suffix after a '.'; *prefix_len the part before. */
static int label_is(const char *key, const char *suffix, size_t *prefix_len)
{
	size_t k = strlen(key), s = strlen(suffix);

	if (k <= s + 1 || key[k - s - 1] != '.' || strcmp(key + k - s, suffix) != 0)
		return 0;
	*prefix_len = k - s - 1;
	return 1;
}

/* The inspected image's labels: one that carries a sandpit snapshot's
 * marks (snapshotId, snapshotInstall, organizationId, under any label
 * prefix) is allowed only when they are this installation's prefix, org
 * and installation. A 400 naming field otherwise. */
static int labels_check(struct sandbox_ctx *ctx, const char *org, json_object *img,
			const char *field, const char *ref, struct sp_err *e)
{
	static const char *const marks[] = { "snapshotId", "snapshotInstall", "organizationId",
					     NULL };
	json_object *cfg, *labels;
	const char *lorg = NULL, *linst = NULL;
	int marked = 0, foreign = 0;
	size_t pl = strlen(ctx->cfg->label_prefix), kl;

	if (!json_object_object_get_ex(img, "Config", &cfg) ||
	    !json_object_object_get_ex(cfg, "Labels", &labels) ||
	    !json_object_is_type(labels, json_type_object))
		return 0;
	json_object_object_foreach(labels, k, v)
	{
		const char *val = json_object_get_string(v);
		for (int i = 0; marks[i]; i++)
			if (val && *val && label_is(k, marks[i], &kl)) {
				marked = 1;
				if (kl != pl || strncmp(k, ctx->cfg->label_prefix, pl) != 0)
					foreign = 1;
				else if (i == 1)
					linst = val;
				else if (i == 2)
					lorg = val;
			}
	}
	if (!marked)
		return 0;
	if (sandbox_install_id(ctx, e) < 0)
		return -1;
	if (foreign || !lorg || !linst || strcmp(lorg, org) != 0 ||
	    strcmp(linst, ctx->install_id) != 0)
		return sp_err_field(e, SP_BAD_REQUEST, field,
				    "%s: %s is a snapshot of another organization or installation",
				    field, ref);
	return 0;
}

int sandbox_prepare_image(struct sandbox_ctx *ctx, struct sandbox *sb, const char *field,
			  json_object **img, struct sp_err *e, int *pulled)
{
	int kind = IMG_TEMPLATE;
	char msg[sizeof(e->msg)];

	/* a template's own image is the operator's; anything else a caller
	 * named passes the rules first */
	if (!sb->template_name[0] && image_admit(ctx, sb->org, sb->image, field, &kind, e) < 0)
		return -1;
	if (docker_image_inspect(ctx->dk, sb->image, img, e) == 0) {
		if (sb->template_name[0] && !sb->server_id[0])
			sandbox_template_info_note(sb->image, *img);
		goto check;
	}
	if (e->code != SP_NOT_FOUND)
		return -1;
	/* pulls: a template's image (the operator named it), an organization's
	 * registered image (from the operator's registry), an allowed one
	 * only where the operator enabled pulls; never a snapshot */
	if (kind == IMG_SNAPSHOT)
		return sp_err_field(e, SP_BAD_REQUEST, field,
				    "%s: the snapshot's image %s is not on this server", field,
				    sb->image);
	if (kind == IMG_ALLOWED && !ctx->cfg->image_pull)
		return sp_err_field(e, SP_BAD_REQUEST, field,
				    "%s: Image %s is not on this server, and pulls are off "
				    "(image_pull)",
				    field, sb->image);
	log_info("sandbox %s: pulling %s", sb->id, sb->image);
	*pulled = 1;
	if (sb->status == SB_CREATING && sb->org[0]) {
		/* a pull may take long: the record says how long it may stay creating */
		char u[32];
		const char *kv[] = { "creatingUntil", u };
		struct sp_err ignore;
		sb->creating_until =
			now_ms() +
			(int64_t)(ctx->cfg->pull_timeout_s + ctx->cfg->create_timeout_s) * 1000;
		snprintf(u, sizeof(u), "%lld", (long long)sb->creating_until);
		store_sandbox_update(ctx->st, sb->org, sb->id, "creating", kv, 2, 0, &ignore);
	}
	if (docker_image_pull(ctx->dk, sb->image, ctx->cfg->pull_timeout_s, e) < 0) {
		str_copy(msg, sizeof(msg), e->msg);
		if (e->code == SP_UNAVAILABLE)
			return -1;
		/* the built-in template images are built, not pulled */
		return sp_err_field(e, SP_BAD_REQUEST, field, "Image %s is not available: %s%s",
				    sb->image, msg,
				    strncmp(sb->image, "sandpit/", 8) == 0
					    ? " (a template image: build it with make images)"
					    : "");
	}
	if (docker_image_inspect(ctx->dk, sb->image, img, e) < 0)
		return -1;
check:
	if (labels_check(ctx, sb->org, *img, field, sb->image, e) < 0) {
		json_object_put(*img);
		*img = NULL;
		return -1;
	}
	return 0;
}
