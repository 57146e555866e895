/*
 * Registry transfer (/v1 createImage and getImagePullSpec, issue 17),
 * only where the operator named a registry (image_registry, with an
 * optional image_registry_auth_file). Every org's content lives under
 * <image_registry>/<org key>/<image id>, the org key a keyed hash of the
 * org id, the image id sandpit's random one: one org can neither collide
 * with nor guess another's repository. createImage (fromImage) registers
 * a record (kind "pushimgs") whose content the client pushes to its
 * pushTarget; a read asks the registry (through the daemon's
 * /distribution) whether it is there. getImagePullSpec of a snapshot's
 * image tags it and pushes it through the Engine API with the operator's
 * credential in X-Registry-Auth, reading errors out of the progress
 * stream. Must never: log or return the credential, name a repository
 * outside the org's, let an org read another's record.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"
#include "../store/store.h"

#define REG_KIND "pushimgs"
#define REG_MAX_PER_ORG 256 /* registered images an organization may keep (429 beyond) */
#define ORG_KEY_HEX 24
#define REG_LOCK_PREFIX "regpush:"
#define REG_LOCK_WAIT_MS 30000 /* a pull spec waits this long for another's push */

int sandbox_registry_configured(const struct sandbox_ctx *ctx)
{
	return ctx->cfg->image_registry[0] != '\0';
}

static int need_registry(const struct sandbox_ctx *ctx, const char *op, struct sp_err *e)
{
	if (sandbox_registry_configured(ctx))
		return 0;
	return sp_err_set(e, SP_UNIMPLEMENTED,
			  "%s needs a registry, and none is configured on this server "
			  "(image_registry); images stay local to their Docker host",
			  op);
}

/* <image_registry>/<org key>/<image id> into out. */
static void repo_name(const struct sandbox_ctx *ctx, const char *org, const char *image_id,
		      char *out, size_t cap)
{
	char hex[65], in[160]; /* an org id is at most 64 bytes */

	snprintf(in, sizeof(in), "sandpit registry org\n%s", org);
	crypto_key_hash(ctx->cfg->data_key, in, strlen(in), hex);
	snprintf(out, cap, "%s/%.*s/%s", ctx->cfg->image_registry, ORG_KEY_HEX, hex, image_id);
}

/* A registry failure the daemon reported (anything but "not there"), as
 * a retryable 503 naming the registry. */
static int registry_down(const struct sandbox_ctx *ctx, struct sp_err *e)
{
	char msg[sizeof(e->msg)];

	/* Docker itself unreachable stays as it is; Docker silent while it asks
	 * the registry is the registry's */
	if (e->code == SP_UNAVAILABLE && !strstr(e->msg, "did not answer"))
		return -1;
	str_copy(msg, sizeof(msg), e->msg);
	return sp_err_set(e, SP_UNAVAILABLE, "The image registry %s is unavailable: %s",
			  ctx->cfg->image_registry, msg);
}

/* --- registered images (createImage fromImage) ----------------------------- */

static void get_s(json_object *o, const char *k, char *out, size_t cap)
{
	json_object *v;

	out[0] = '\0';
	if (json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string))
		str_copy(out, cap, json_object_get_string(v));
}

/* The record text into im (status waiting: the caller asks the registry). */
static int reg_parse(const struct sandbox_ctx *ctx, const char *org, const char *text,
		     struct sandbox_image *im)
{
	json_object *o = json_tokener_parse(text), *v;
	char id[SANDBOX_ID_LEN + 1];

	memset(im, 0, sizeof(*im));
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return -1;
	}
	get_s(o, "id", id, sizeof(id));
	snprintf(im->id, sizeof(im->id), "%s%s", SB_REG_IMAGE_PREFIX, id);
	get_s(o, "displayName", im->display_name, sizeof(im->display_name));
	get_s(o, "description", im->description, sizeof(im->description));
	get_s(o, "startCmd", im->start_cmd, sizeof(im->start_cmd));
	get_s(o, "readyCmd", im->ready_cmd, sizeof(im->ready_cmd));
	get_s(o, "digest", im->digest, sizeof(im->digest));
	im->created_ms =
		json_object_object_get_ex(o, "createdAt", &v) ? json_object_get_int64(v) : 0;
	json_object_put(o);
	im->source = SB_IMAGE_FROM_IMAGE;
	im->status = SB_IMAGE_WAITING;
	repo_name(ctx, org, im->id, im->push_ref, sizeof(im->push_ref) - 8);
	str_copy(im->ref, sizeof(im->ref), im->push_ref);
	strncat(im->push_ref, ":latest", 8);
	return sandbox_id_ok(id) ? 0 : -1;
}

/* Asks the registry whether im's content is there: completed with its
 * digest and im->ref = repo@digest, else waiting. The digest seen is kept
 * in the record (text: as read), so that a registry that cannot be asked
 * leaves a pushed image completed with what it had; one never pushed
 * stays waiting, with the reason in failure. */
static void reg_status(struct sandbox_ctx *ctx, const char *org, const char *text,
		       struct sandbox_image *im, struct sp_err *down)
{
	char digest[80], mt[128];
	struct sp_err e;

	sp_err_clear(&e);
	if (down && down->code != SP_OK)
		e = *down; /* a list asks an unreachable registry once, not once per image */
	if (e.code != SP_OK || sandbox_select_server(ctx, "", &e) < 0 ||
	    sandbox_docker_ready(ctx, &e) < 0 ||
	    docker_distribution_inspect(ctx->dk, im->push_ref, ctx->cfg->registry_auth, digest, mt,
					sizeof(mt), &e) < 0) {
		if (down && e.code != SP_NOT_FOUND)
			*down = e;
		if (e.code != SP_NOT_FOUND && !im->digest[0])
			str_copy(im->failure, sizeof(im->failure), e.msg);
		if (e.code == SP_NOT_FOUND)
			im->digest[0] = '\0'; /* gone from the registry (or never there) */
		else if (im->digest[0])
			goto completed;
		return;
	}
	if (strcmp(digest, im->digest) != 0 && text) {
		json_object *o = json_tokener_parse(text);
		struct sp_err ignore;
		if (o && json_object_is_type(o, json_type_object)) {
			json_object_object_add(o, "digest", json_object_new_string(digest));
			/* a lost race means another reader wrote it first */
			(void)store_obj_cas(
				ctx->st, org, REG_KIND, im->id + strlen(SB_REG_IMAGE_PREFIX), text,
				json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), &ignore);
		}
		json_object_put(o);
	}
	str_copy(im->digest, sizeof(im->digest), digest);
completed:
	im->status = SB_IMAGE_COMPLETED;
	snprintf(im->ref + strlen(im->ref), sizeof(im->ref) - strlen(im->ref), "@%s", im->digest);
}

int sandbox_reg_image_get(struct sandbox_ctx *ctx, const char *org, const char *id,
			  struct sandbox_image *out, struct sp_err *e)
{
	char *t = NULL;
	int rc;

	if (!sandbox_id_ok(id))
		return sp_err_set(e, SP_NOT_FOUND, "Image not found");
	if (store_obj_get(ctx->st, org, REG_KIND, id, &t, e) < 0) {
		if (e->code == SP_NOT_FOUND)
			sp_err_set(e, SP_NOT_FOUND, "Image not found");
		return -1;
	}
	rc = reg_parse(ctx, org, t, out);
	if (rc == 0)
		reg_status(ctx, org, t, out, NULL);
	free(t);
	return rc < 0 ? sp_err_set(e, SP_INTERNAL, "Image record is damaged") : 0;
}

int sandbox_reg_image_list(struct sandbox_ctx *ctx, const char *org, struct sandbox_image **out,
			   size_t *n, struct sp_err *e)
{
	struct store_rec r = { 0 };
	struct sp_err down;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	sp_err_clear(&down);
	if (store_obj_list(ctx->st, org, REG_KIND, &r, e) < 0)
		return -1;
	if (r.n > 0 && !(*out = calloc((size_t)r.n, sizeof(**out)))) {
		store_rec_free(&r);
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	}
	for (int i = 0; i < r.n; i++)
		if (reg_parse(ctx, org, r.value[i], &(*out)[k]) == 0)
			reg_status(ctx, org, r.value[i], &(*out)[k++], &down);
	store_rec_free(&r);
	*n = k;
	return 0;
}

int sandbox_reg_image_delete(struct sandbox_ctx *ctx, const char *org, const char *id,
			     struct sp_err *e)
{
	char *t = NULL;
	int rc;

	if (!sandbox_id_ok(id))
		return sp_err_set(e, SP_NOT_FOUND, "Image not found");
	if (store_obj_get(ctx->st, org, REG_KIND, id, &t, e) < 0)
		return -1;
	rc = store_obj_cas(ctx->st, org, REG_KIND, id, t, NULL, e);
	free(t);
	return rc < 0 ? -1 : 0;
}

int sandbox_image_register(struct sandbox_ctx *ctx, const char *org,
			   const struct sandbox_image_reg *rq, struct sandbox_image *out,
			   struct sp_err *e)
{
	char id[SANDBOX_ID_LEN + 1];
	struct store_rec all = { 0 };
	json_object *o;
	char *t;
	int rc, n;

	if (need_registry(ctx, "createImage", e) < 0)
		return -1;
	if (rq->id && sandbox_id_ok(rq->id)) {
		/* an Idempotency-Key's retry whose first request is gone: its
		 * record, when it got that far */
		t = NULL;
		if (store_obj_get(ctx->st, org, REG_KIND, rq->id, &t, e) == 0) {
			rc = reg_parse(ctx, org, t, out);
			if (rc == 0)
				reg_status(ctx, org, t, out, NULL);
			free(t);
			return rc < 0 ? sp_err_set(e, SP_INTERNAL, "Image record is damaged") : 0;
		}
		if (e->code != SP_NOT_FOUND)
			return -1;
		sp_err_clear(e);
	}
	if (store_obj_list(ctx->st, org, REG_KIND, &all, e) < 0)
		return -1;
	n = all.n;
	store_rec_free(&all);
	if (n >= REG_MAX_PER_ORG)
		return sp_err_set(e, SP_QUOTA,
				  "The organization has %d registered images, the most it may "
				  "keep; delete some first",
				  n);
	if (rq->id && sandbox_id_ok(rq->id))
		str_copy(id, sizeof(id), rq->id);
	else
		crypto_random_id(id, SANDBOX_ID_LEN);
	o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(id));
	json_object_object_add(o, "displayName", json_object_new_string(rq->display_name));
	json_object_object_add(o, "description",
			       json_object_new_string(rq->description ? rq->description : ""));
	json_object_object_add(o, "startCmd",
			       json_object_new_string(rq->start_cmd ? rq->start_cmd : ""));
	json_object_object_add(o, "readyCmd",
			       json_object_new_string(rq->ready_cmd ? rq->ready_cmd : ""));
	json_object_object_add(o, "createdAt", json_object_new_int64(now_ms()));
	t = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	if (!t)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	rc = store_obj_put(ctx->st, org, REG_KIND, id, t, e);
	if (rc == 0 && reg_parse(ctx, org, t, out) < 0)
		rc = sp_err_set(e, SP_INTERNAL, "Image record is damaged");
	free(t);
	return rc;
}

/* --- a create's reference to a registered image ------------------------ */

int sandbox_reg_image_ref(struct sandbox_ctx *ctx, const char *org, const char *ref,
			  struct sp_err *e)
{
	char own[300], id[SANDBOX_ID_LEN + 1], *t = NULL;
	size_t rl = strlen(ctx->cfg->image_registry), ol, n;
	const char *rest;

	if (!rl || strncmp(ref, ctx->cfg->image_registry, rl) != 0 || ref[rl] != '/')
		return 0;
	/* <image_registry>/<this org's key>/img-<id>[:latest | @sha256:<64 hex>] */
	repo_name(ctx, org, "", own, sizeof(own));
	ol = strlen(own);
	if (strncmp(ref, own, ol) != 0 ||
	    strncmp(ref + ol, SB_REG_IMAGE_PREFIX, strlen(SB_REG_IMAGE_PREFIX)) != 0)
		return 2;
	rest = ref + ol + strlen(SB_REG_IMAGE_PREFIX);
	n = strspn(rest, "abcdefghijklmnopqrstuvwxyz0123456789");
	if (n != SANDBOX_ID_LEN)
		return 2;
	memcpy(id, rest, n);
	id[n] = '\0';
	rest += n;
	if (*rest && strcmp(rest, ":latest") != 0 &&
	    !(strncmp(rest, "@sha256:", 8) == 0 && strlen(rest + 8) == 64 &&
	      strspn(rest + 8, "0123456789abcdef") == 64))
		return 2;
	if (store_obj_get(ctx->st, org, REG_KIND, id, &t, e) < 0) {
		if (e->code != SP_NOT_FOUND)
			return -1;
		sp_err_clear(e);
		return 2;
	}
	free(t);
	return 1;
}

/* --- pull specs ------------------------------------------------------------ */

/* A snapshot's image pushed to its repository from the snapshot's server. */
static int push_snapshot(struct sandbox_ctx *ctx, const char *org, const struct sandbox_image *im,
			 struct sandbox_pull_spec *out, struct sp_err *e)
{
	struct sandbox_snapshot s;
	struct sp_err ignore;
	char repo[300], lock[96];
	int rc;

	if (sandbox_snapshot_get(ctx, org, im->snapshot, &s, e) < 0)
		return -1;
	if (s.status != SB_SNAP_READY)
		return sp_err_set(e, SP_PRECONDITION,
				  "image_not_ready: images/%s is %s; ask again once it is ready",
				  im->id,
				  s.status == SB_SNAP_CREATING ? "still being captured" : "failed");
	if (sandbox_select_server(ctx, s.server_id, e) < 0 || sandbox_docker_ready(ctx, e) < 0)
		return -1;
	repo_name(ctx, org, im->id, repo, sizeof(repo) - 8);
	/* one push of an image at a time (another's untag would pull the tag
	 * from under this one's push): wait for the one under way */
	snprintf(lock, sizeof(lock), "%s%s", REG_LOCK_PREFIX, im->id);
	for (int64_t until = now_ms() + REG_LOCK_WAIT_MS;;) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		int got = store_lock(ctx->st, lock, (int64_t)ctx->cfg->pull_timeout_s * 1000, e);
		if (got < 0)
			return -1;
		if (got == 1)
			break;
		if (now_ms() > until)
			return sp_err_set(e, SP_UNAVAILABLE,
					  "another push of images/%s is under way; ask again",
					  im->id);
		nanosleep(&ts, NULL);
	}
	rc = docker_image_tag(ctx->dk, s.image, repo, "latest", e);
	if (rc == 0)
		rc = docker_image_push(ctx->dk, repo, "latest", ctx->cfg->registry_auth,
				       ctx->cfg->pull_timeout_s, out->digest, e);
	else if (e->code == SP_NOT_FOUND)
		sp_err_set(e, SP_PRECONDITION,
			   "image_not_ready: the snapshot's image is gone from its server");
	/* the registry's tag goes again at once: a second local tag would let
	 * deleteSnapshot's rmi merely untag, past its lease check */
	strncat(repo, ":latest", 8);
	if (docker_image_remove(ctx->dk, repo, &ignore) < 0 && ignore.code != SP_NOT_FOUND)
		log_warn("registry: untag %s: %s", repo, ignore.msg);
	repo[strlen(repo) - 7] = '\0';
	if (store_unlock(ctx->st, lock, &ignore) < 0)
		log_warn("registry: unlock %s: %s", lock, ignore.msg);
	if (rc < 0)
		return e->code == SP_PRECONDITION ? -1 : registry_down(ctx, e);
	snprintf(out->ref, sizeof(out->ref), "%s@%s", repo, out->digest);
	return 0;
}

int sandbox_image_pull_spec(struct sandbox_ctx *ctx, const char *org, const char *id,
			    struct sandbox_pull_spec *out, struct sp_err *e)
{
	struct sandbox_image im;
	char digest[80];

	memset(out, 0, sizeof(*out));
	/* an image the caller cannot see is a 404 before any word on support */
	if (sandbox_image_get(ctx, org, id, &im, e) < 0 ||
	    need_registry(ctx, "getImagePullSpec", e) < 0)
		return -1;
	if (im.source == SB_IMAGE_FROM_SANDBOX) {
		if (push_snapshot(ctx, org, &im, out, e) < 0)
			return -1;
	} else if (im.push_ref[0]) {
		if (im.status != SB_IMAGE_COMPLETED)
			return im.failure[0]
				       ? sp_err_set(e, SP_UNAVAILABLE,
						    "The image registry %s is unavailable: %s",
						    ctx->cfg->image_registry, im.failure)
				       : sp_err_set(e, SP_PRECONDITION,
						    "image_not_pushed: nothing has been pushed to "
						    "%s yet (createImage's pushTarget)",
						    im.push_ref);
		str_copy(out->ref, sizeof(out->ref), im.ref);
		str_copy(out->digest, sizeof(out->digest), im.digest);
	} else {
		return sp_err_set(e, SP_PRECONDITION,
				  "image_is_template: images/%s is a template the operator "
				  "configures (%s); sandpit transfers only the organization's "
				  "own images (snapshots' and pushed ones)",
				  im.id, im.ref);
	}
	/* the manifest's media type, as the registry holds it */
	if (docker_distribution_inspect(ctx->dk, out->ref, ctx->cfg->registry_auth, digest,
					out->media_type, sizeof(out->media_type), e) < 0)
		return registry_down(ctx, e);
	return 0;
}
