/*
 * The /v1 snapshots and images operations (issue 17): createSnapshot
 * (202 while the capture runs), listSnapshots, getSnapshot,
 * deleteSnapshot, restoreSnapshot; listImages, getImage, deleteImage over
 * the templates and the snapshots' images, and createImage and
 * getImagePullSpec declined (no registry). Renders the core's records as
 * the document's Snapshot, SnapshotSummary, Image and ImageSummary; an
 * ETag is a keyed hash of the rendering, as for sandboxes. A pageToken is
 * an offset (v1_conv.c).
 * Never touches Docker or Redis (the core does).
 */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/util.h"

#define PAGE_DEFAULT 50
#define PAGE_MAX 256

/* --- renderings ------------------------------------------------------------ */

static const char *snap_status(const struct sandbox_snapshot *s)
{
	return s->status == SB_SNAP_READY      ? "ready"
	       : s->status == SB_SNAP_CREATING ? "creating"
					       : "failed";
}

/* Snapshot (full) or SnapshotSummary. New object (without an etag). */
static json_object *snapshot_json(const struct sandbox_snapshot *s, int full)
{
	json_object *o = json_object_new_object();
	char name[64];

	snprintf(name, sizeof(name), "snapshots/%s", s->id);
	json_object_object_add(o, "uid", json_object_new_string(s->id));
	json_object_object_add(o, "name", json_object_new_string(name));
	if (s->display_name[0])
		json_object_object_add(o, "displayName", json_object_new_string(s->display_name));
	snprintf(name, sizeof(name), "sandboxes/%s", s->sandbox_id);
	json_object_object_add(o, "sandbox", json_object_new_string(name));
	json_object_object_add(o, "sandboxUid", json_object_new_string(s->sandbox_id));
	json_object_object_add(o, "status", json_object_new_string(snap_status(s)));
	if (s->status == SB_SNAP_READY)
		json_object_object_add(o, "totalSizeBytes", v1_int64_json(s->size_bytes));
	json_object_object_add(o, "createdAt", v1_time_json(s->created_at));
	json_object_object_add(o, "captureMode", json_object_new_string("disk"));
	if (!full)
		return o;
	if (s->description[0])
		json_object_object_add(o, "description", json_object_new_string(s->description));
	{
		json_object *res = json_object_new_object(), *plat = json_object_new_object();
		if (s->cpu >= 1 && s->cpu == (double)(int64_t)s->cpu)
			json_object_object_add(res, "cpus", json_object_new_int64((int64_t)s->cpu));
		json_object_object_add(res, "memoryMib", v1_int64_json(s->memory_mb));
		json_object_object_add(o, "resources", res);
		json_object_object_add(plat, "os", json_object_new_string("linux"));
		json_object_object_add(plat, "architecture",
				       json_object_new_string(v1_host_arch()));
		json_object_object_add(o, "platform", plat);
	}
	if (s->status == SB_SNAP_FAILED) {
		json_object *f = json_object_new_object();
		json_object_object_add(f, "code", json_object_new_string("internal"));
		json_object_object_add(f, "message",
				       json_object_new_string(s->error_message[0]
								      ? s->error_message
								      : "the capture failed"));
		json_object_object_add(f, "details", json_object_new_array());
		json_object_object_add(o, "failure", f);
	}
	return o;
}

static const char *image_status(const struct sandbox_image *im)
{
	switch (im->status) {
	case SB_IMAGE_COMPLETED:
		return "completed";
	case SB_IMAGE_PREPARING:
		return "preparing";
	case SB_IMAGE_WAITING:
		return "waitingForPush";
	default:
		return "failed";
	}
}

/* Image (full) or ImageSummary. New object (without an etag). */
static json_object *image_json(const struct sandbox_image *im, int full)
{
	json_object *o = json_object_new_object(), *plat;
	char name[96];

	snprintf(name, sizeof(name), "images/%s", im->id);
	json_object_object_add(o, "uid", json_object_new_string(im->id));
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(
		o, "displayName",
		json_object_new_string(im->display_name[0] ? im->display_name : im->id));
	json_object_object_add(o, "status", json_object_new_string(image_status(im)));
	json_object_object_add(
		o, "source",
		json_object_new_string(im->source == SB_IMAGE_FROM_SANDBOX ? "sandbox" : "image"));
	if (im->status == SB_IMAGE_COMPLETED || im->size_bytes > 0)
		json_object_object_add(o, "totalSizeBytes", v1_int64_json(im->size_bytes));
	if (im->created[0]) {
		json_object_object_add(o, "createdAt", json_object_new_string(im->created));
		json_object_object_add(o, "updatedAt", json_object_new_string(im->created));
	} else {
		/* a template whose image Docker does not have: no time of its own */
		int64_t t = im->created_ms > 0 ? im->created_ms : 0;
		json_object_object_add(o, "createdAt", v1_time_json(t));
		json_object_object_add(o, "updatedAt", v1_time_json(t));
	}
	json_object_object_add(o, "imageRef", json_object_new_string(im->ref));
	if (im->digest[0])
		json_object_object_add(o, "imageDigest", json_object_new_string(im->digest));
	if (im->source == SB_IMAGE_FROM_SANDBOX)
		json_object_object_add(o, "captureMode", json_object_new_string("disk"));
	if (im->os[0] || im->source == SB_IMAGE_FROM_SANDBOX) {
		plat = json_object_new_object();
		json_object_object_add(plat, "os",
				       json_object_new_string(im->os[0] ? im->os : "linux"));
		json_object_object_add(
			plat, "architecture",
			json_object_new_string(im->arch[0] ? im->arch : v1_host_arch()));
		json_object_object_add(o, "platform", plat);
	}
	if (!full)
		return o;
	if (im->description[0])
		json_object_object_add(o, "description", json_object_new_string(im->description));
	if (im->start_cmd[0])
		json_object_object_add(o, "startCmd", json_tokener_parse(im->start_cmd));
	if (im->ready_cmd[0])
		json_object_object_add(o, "readyCmd", json_tokener_parse(im->ready_cmd));
	if (im->status == SB_IMAGE_FAILED || im->status == SB_IMAGE_UNKNOWN) {
		json_object *f = json_object_new_object();
		json_object_object_add(f, "code",
				       json_object_new_string(im->status == SB_IMAGE_UNKNOWN
								      ? "unavailable"
								      : "notFound"));
		json_object_object_add(
			f, "message",
			json_object_new_string(im->failure[0] ? im->failure : "unknown"));
		json_object_object_add(f, "details", json_object_new_array());
		json_object_object_add(o, "failure", f);
	}
	return o;
}

/* --- lists: filter and page -------------------------------------------------- */

/* filter: name, display_name, uid (and status for images) */
enum { F_NAME, F_DISPLAY_NAME, F_UID, F_STATUS };
static const char *const snapshot_filter[] = { "name", "display_name", "uid", NULL },
			 *const image_filter[] = { "name", "display_name", "uid", "status", NULL };

/* The one-field key/value view of a rendering the filter compares. */
static int filt_match(const struct v1_filter *f, json_object *o)
{
	json_object *v;
	const char *name = json_object_object_get_ex(o, "name", &v) ? json_object_get_string(v)
								    : "",
		   *uid = json_object_object_get_ex(o, "uid", &v) ? json_object_get_string(v) : "",
		   *dn = json_object_object_get_ex(o, "displayName", &v) ? json_object_get_string(v)
									 : "",
		   *st = json_object_object_get_ex(o, "status", &v) ? json_object_get_string(v)
								    : "";

	return v1_filter_is(f, F_NAME, name) && v1_filter_is(f, F_UID, uid) &&
	       v1_filter_is(f, F_DISPLAY_NAME, dn) && v1_filter_is(f, F_STATUS, st);
}

/* orderBy: the default order only (newest first for snapshots, templates
 * then snapshots for images). */
static int order_check(json_object *in, const char *dflt, struct sp_err *e)
{
	const char *order = hin_str(in, "orderBy", NULL);

	if (!order || !*order || strcmp(order, dflt) == 0)
		return 0;
	if (strncmp(order, "created_at", 10) == 0 || strncmp(order, "name", 4) == 0)
		return sp_err_field(e, SP_UNIMPLEMENTED, "orderBy",
				    "orderBy: only the default order ('%s') is supported", dflt);
	return sp_err_field(e, SP_BAD_REQUEST, "orderBy",
			    "orderBy: expected a field (created_at, name) and an optional "
			    "direction (asc, desc)");
}

/* --- snapshots --------------------------------------------------------------- */

/* displayName of a snapshot: ^[^/]+$, not "." or "..". */
static int display_name_ok(const char *s, struct sp_err *e)
{
	if (!s || !*s || strchr(s, '/') || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return sp_err_field(e, SP_BAD_REQUEST, "displayName",
				    "displayName: 1 to 255 bytes without '/', not '.' or '..'");
	return 0;
}

static json_object *snapshot_full(struct handler_ctx *h, const struct sandbox_snapshot *s,
				  char *tag)
{
	json_object *o = snapshot_json(s, 1);

	v1_add_etag(h->cfg, "snapshot", o, tag);
	return o;
}

int v1_snapshots_create(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *mode = hin_str(in, "captureMode", NULL);
	struct sandbox_snapshot_req rq = { 0 };
	struct sandbox_snapshot s;

	rq.display_name = hin_str(in, "displayName", NULL);
	rq.description = hin_str(in, "description", NULL);
	rq.id = hin_str(in, ROUTE_IN_IDEM_RESOURCE, NULL);
	if (display_name_ok(rq.display_name, e) < 0)
		return -1;
	if (mode && strcmp(mode, "all") == 0)
		return sp_err_field(
			e, SP_PRECONDITION, "captureMode",
			"capture_memory_unsupported: captureMode all needs memory "
			"capture, and this backend's canCaptureMemory is false; use disk");
	if (sandbox_snapshot_create(h->sb, h->r->org, hin_str(in, "sandbox", NULL), &rq, &s, e) < 0)
		return -1;
	*out = snapshot_full(h, &s, NULL);
	if (s.status == SB_SNAP_CREATING)
		h->status = 202;
	return 0;
}

int v1_snapshots_get(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox_snapshot s;

	if (sandbox_snapshot_get(h->sb, h->r->org, hin_str(in, "snapshot", NULL), &s, e) < 0)
		return -1;
	*out = snapshot_full(h, &s, NULL);
	return 0;
}

int v1_snapshots_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *filter = hin_str(in, "filter", NULL), *sbx = hin_str(in, "sandbox", NULL);
	struct sandbox_snapshot *all = NULL;
	size_t n = 0;
	struct v1_filter f;
	size_t off;
	char scope[1200];
	json_object *arr;

	filter = filter ? filter : "";
	sbx = sbx ? sbx : "";
	snprintf(scope, sizeof(scope), "%s\n%s", filter, sbx);
	if (*sbx && (strncmp(sbx, "sandboxes/", 10) != 0 || !sbx[10] || strchr(sbx + 10, '/')))
		return sp_err_field(e, SP_BAD_REQUEST, "sandbox",
				    "sandbox: expected sandboxes/{sandbox}");
	if (v1_filter_parse(filter, snapshot_filter, &f, e) < 0 ||
	    order_check(in, "created_at desc", e) < 0 ||
	    v1_page_offset(h, in, "listSnapshots", scope, &off, e) < 0)
		return -1;
	if (sandbox_snapshot_list(h->sb, h->r->org, &all, &n, e) < 0)
		return -1;
	arr = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		json_object *o;
		if (*sbx && strcmp(all[i].sandbox_id, sbx + 10) != 0)
			continue;
		o = snapshot_json(&all[i], 0);
		if (filt_match(&f, o))
			json_object_array_add(arr, o);
		else
			json_object_put(o);
	}
	free(all);
	*out = v1_page_slice(h, in, "listSnapshots", scope, off, PAGE_DEFAULT, PAGE_MAX, arr,
			     "snapshots");
	return 0;
}

int v1_snapshots_delete(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *id = hin_str(in, "snapshot", NULL),
		   *want = hin_str(in, ROUTE_IN_IF_MATCH, NULL);
	struct sandbox_snapshot s;
	char tag[V1_ETAG_MAX];

	*out = NULL;
	if (sandbox_snapshot_get(h->sb, h->r->org, id, &s, e) < 0) {
		if (e->code != SP_NOT_FOUND)
			return -1;
		sp_err_clear(e); /* deleting an absent snapshot succeeds */
		return 0;
	}
	json_object_put(snapshot_full(h, &s, tag));
	if (v1_if_match(want, tag, "snapshot", e) < 0)
		return -1;
	if (sandbox_snapshot_delete(h->sb, h->r->org, id, e) < 0) {
		if (e->code != SP_NOT_FOUND)
			return -1;
		sp_err_clear(e);
	}
	return 0;
}

int v1_snapshots_restore(struct handler_ctx *h, json_object *in, json_object **out,
			 struct sp_err *e)
{
	struct sandbox sb;

	if (!route_has_perm(h->r->perms, "snapshotsRead"))
		return sp_err_set(e, SP_FORBIDDEN, "Your role lacks the snapshotsRead permission");
	if (sandbox_snapshot_restore(h->sb, h->r->org, hin_str(in, "snapshot", NULL),
				     hin_str(in, "displayName", NULL),
				     hin_str(in, ROUTE_IN_IDEM_RESOURCE, NULL),
				     hin_str(in, ROUTE_IN_IDEM_RESUME, NULL), &sb, e) < 0) {
		if (hin_str(in, ROUTE_IN_IDEM_RESOURCE, NULL) && e->code == SP_CONFLICT)
			return sp_err_field(e, SP_PRECONDITION, "Idempotency-Key",
					    "idempotency_in_progress: the first request with this "
					    "Idempotency-Key is still running; retry later");
		return -1;
	}
	*out = v1_render(h, &sb, e);
	return *out ? 0 : -1;
}

/* --- images -------------------------------------------------------------------- */

static json_object *image_full(struct handler_ctx *h, const struct sandbox_image *im, char *tag)
{
	json_object *o = image_json(im, 1);

	v1_add_etag(h->cfg, "image", o, tag);
	return o;
}

int v1_images_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *filter = hin_str(in, "filter", NULL);
	struct sandbox_image *all = NULL;
	size_t n = 0;
	struct v1_filter f;
	size_t off;
	json_object *arr;

	filter = filter ? filter : "";
	if (v1_filter_parse(filter, image_filter, &f, e) < 0 ||
	    order_check(in, "created_at desc", e) < 0 ||
	    v1_page_offset(h, in, "listImages", filter, &off, e) < 0)
		return -1;
	if (sandbox_images_list(h->sb, h->r->org, &all, &n, e) < 0)
		return -1;
	arr = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		json_object *o = image_json(&all[i], 0);
		if (filt_match(&f, o))
			json_object_array_add(arr, o);
		else
			json_object_put(o);
	}
	free(all);
	*out = v1_page_slice(h, in, "listImages", filter, off, PAGE_DEFAULT, PAGE_MAX, arr,
			     "images");
	return 0;
}

int v1_images_get(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox_image im;

	if (sandbox_image_get(h->sb, h->r->org, hin_str(in, "image", NULL), &im, e) < 0)
		return -1;
	*out = image_full(h, &im, NULL);
	return 0;
}

/* A snapshot's image goes with its snapshot (the same rules: never while
 * a sandbox uses it); a template is the operator's (403). */
int v1_images_delete(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *id = hin_str(in, "image", NULL), *want = hin_str(in, ROUTE_IN_IF_MATCH, NULL);
	struct sandbox_image im;
	char tag[V1_ETAG_MAX];

	*out = NULL;
	if (sandbox_image_get(h->sb, h->r->org, id, &im, e) < 0) {
		if (e->code != SP_NOT_FOUND)
			return -1;
		sp_err_clear(e);
		return 0;
	}
	json_object_put(image_full(h, &im, tag));
	if (v1_if_match(want, tag, "image", e) < 0)
		return -1;
	if (im.push_ref[0]) {
		/* the record goes; what was pushed stays the registry's */
		if (sandbox_reg_image_delete(h->sb, h->r->org, im.id + strlen(SB_REG_IMAGE_PREFIX),
					     e) < 0 &&
		    e->code != SP_NOT_FOUND)
			return -1;
		sp_err_clear(e);
		return 0;
	}
	if (im.source != SB_IMAGE_FROM_SANDBOX)
		return sp_err_set(e, SP_FORBIDDEN,
				  "images/%s is a template the operator configures; it cannot be "
				  "deleted through the API",
				  im.id);
	if (sandbox_snapshot_delete(h->sb, h->r->org, im.snapshot, e) < 0) {
		if (e->code != SP_NOT_FOUND)
			return -1;
		sp_err_clear(e);
	}
	return 0;
}

/* startCmd / readyCmd: an array of at most 64 strings, as JSON text of at
 * most cap - 1 bytes into out ("" when absent). */
static int cmd_field(json_object *in, const char *field, char *out, size_t cap, struct sp_err *e)
{
	json_object *v;
	const char *t;
	size_t n, len = 0;

	out[0] = '\0';
	if (!json_object_object_get_ex(in, field, &v) || !v)
		return 0;
	n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
	if (!json_object_is_type(v, json_type_array) || n > 64)
		goto bad;
	for (size_t i = 0; i < n; i++)
		if (!json_object_is_type(json_object_array_get_idx(v, i), json_type_string))
			goto bad;
	t = json_object_to_json_string_length(v, JSON_C_TO_STRING_PLAIN, &len);
	if (n == 0)
		return 0;
	if (len >= cap)
		goto bad;
	str_copy(out, cap, t);
	return 0;
bad:
	return sp_err_field(e, SP_BAD_REQUEST, field,
			    "%s: an array of at most 64 strings, %zu bytes as JSON at most", field,
			    cap - 1);
}

/* fromImage registers an image whose content the client pushes to its
 * pushTarget (202 waitingForPush; the registry's own credentials govern
 * the push: sandpit mints no registry tokens, so pushTarget has no
 * accessToken). Without a registry: 501. */
int v1_images_create(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	char start[2048], ready[2048];
	struct sandbox_image_reg rq = { 0 };
	struct sandbox_image im;
	json_object *fi, *pt;

	rq.display_name = hin_str(in, "displayName", NULL);
	rq.description = hin_str(in, "description", NULL);
	rq.id = hin_str(in, ROUTE_IN_IDEM_RESOURCE, NULL);
	if (display_name_ok(rq.display_name, e) < 0)
		return -1;
	if (!json_object_object_get_ex(in, "fromImage", &fi) || !fi ||
	    !json_object_is_type(fi, json_type_object))
		return sp_err_field(e, SP_BAD_REQUEST, "fromImage",
				    "fromImage: required (an object; the only way to create an "
				    "image)");
	if (cmd_field(in, "startCmd", start, sizeof(start), e) < 0 ||
	    cmd_field(in, "readyCmd", ready, sizeof(ready), e) < 0)
		return -1;
	rq.start_cmd = start[0] ? start : NULL;
	rq.ready_cmd = ready[0] ? ready : NULL;
	if (!sandbox_registry_configured(h->sb))
		return sp_err_set(e, SP_UNIMPLEMENTED,
				  "createImage needs a registry to receive pushed OCI content, and "
				  "none is configured on this server (image_registry); snapshots "
				  "(createSnapshot) make images from sandboxes");
	if (sandbox_image_register(h->sb, h->r->org, &rq, &im, e) < 0)
		return -1;
	*out = image_full(h, &im, NULL);
	if (im.status == SB_IMAGE_WAITING) {
		/* after the etag: pushTarget is in the create answer only, never a read */
		pt = json_object_new_object();
		json_object_object_add(pt, "imageRef", json_object_new_string(im.push_ref));
		json_object_object_add(*out, "pushTarget", pt);
		h->status = 202;
	}
	return 0;
}

/* The registry's reference of the image's content (pushed there first when
 * it is a snapshot's): manifestDigest and manifestMediaType, plus imageRef
 * (repo@digest, what `docker pull` takes; the document's ImagePullSpec is
 * open). No blob URLs or expiry: the registry's own credentials govern
 * pulls, sandpit hands out none. */
int v1_images_pull_spec(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox_pull_spec ps;

	if (sandbox_image_pull_spec(h->sb, h->r->org, hin_str(in, "image", NULL), &ps, e) < 0)
		return -1;
	*out = json_object_new_object();
	json_object_object_add(*out, "manifestDigest", json_object_new_string(ps.digest));
	if (ps.media_type[0])
		json_object_object_add(*out, "manifestMediaType",
				       json_object_new_string(ps.media_type));
	json_object_object_add(*out, "imageRef", json_object_new_string(ps.ref));
	return 0;
}
