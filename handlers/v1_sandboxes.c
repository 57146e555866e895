/*
 * The /v1 sandboxes operations, the management plane of the Docker
 * Sandboxes API (../shared/seeds/docker-sandboxes-api.v1.yaml): list,
 * create, get, update (rename), delete, stop, start, on the same core and the same
 * records as the Dokploy procedures, so a sandbox made on one face is read,
 * renamed and deleted on the other. Renders struct sandbox as the
 * document's Sandbox; its strong ETag is a keyed hash of that rendering,
 * so it changes with every visible change (a status catch-up included)
 * and with nothing else. A pageToken is the core's cursor under a MAC
 * bound to the organization, the filter and the order. Fields sandpit
 * cannot honour are refused, never ignored. Never touches Docker or Redis
 * (the core does).
 */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/util.h"

#define V1_PAGE_DEFAULT 50

/* The document's SandboxStatus of a record. killed and error are both
 * "failed" (with a failure saying which): the container is gone and
 * cannot be started again. */
static const char *v1_status(const struct sandbox *sb)
{
	switch (sb->status) {
	case SB_CREATING:
		return "creating";
	case SB_RUNNING:
		return "running";
	case SB_STOPPED:
		return "stopped";
	case SB_STOPPING:
		return "stopping";
	default:
		return "failed";
	}
}

/* effectiveFeatures.managedVolumes of a sandbox with volumes: each
 * attachment as admitted (exclusive), and what this host cannot promise
 * for them (a sandpit member beside the document's: responses are open):
 * a Docker named volume has no size quota (a loop disk's, sizeMb, has). */
static void managed_volumes_json(const struct sandbox *sb, json_object *ef)
{
	json_object *list = sb->volumes[0] ? json_tokener_parse(sb->volumes) : NULL, *mv, *arr, *ne,
		    *q;
	int unsized = 0;

	if (!list || !json_object_is_type(list, json_type_array) ||
	    json_object_array_length(list) < 1) {
		json_object_put(list);
		return;
	}
	mv = json_object_new_object();
	arr = json_object_new_array();
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *a = json_object_array_get_idx(list, i), *v, *t, *one;
		char name[64];
		if (!json_object_object_get_ex(a, "volume", &v) ||
		    !json_object_object_get_ex(a, "target", &t))
			continue;
		one = json_object_new_object();
		snprintf(name, sizeof(name), "volumes/%s", json_object_get_string(v));
		json_object_object_add(one, "volume", json_object_new_string(name));
		json_object_object_add(one, "volumeUid", json_object_get(v));
		json_object_object_add(one, "target", json_object_get(t));
		json_object_object_add(one, "mode", json_object_new_string("exclusive"));
		json_object_array_add(arr, one);
		if (!json_object_object_get_ex(a, "sizeMb", &v))
			unsized = 1;
	}
	json_object_object_add(mv, "attachments", arr);
	/* a volume with a loop disk has a size (sizeMb in the record, from
	 * the create's claim); a Docker named volume has none */
	if (unsized) {
		ne = json_object_new_array();
		q = json_object_new_object();
		json_object_object_add(q, "limit", json_object_new_string("sizeQuota"));
		json_object_object_add(
			q, "reason",
			json_object_new_string("a volume made where sandpit cannot make loop "
					       "disks is a Docker local named volume with no size "
					       "quota: writes to it are bounded only by the free "
					       "space of the Docker disk, not by diskMb"));
		json_object_array_add(ne, q);
		json_object_object_add(mv, "notEnforced", ne);
	}
	json_object_object_add(ef, "managedVolumes", mv);
	json_object_put(list);
}

/* The Sandbox without its etag. New object. */
static json_object *sandbox_body(const struct sandbox *sb)
{
	json_object *o = json_object_new_object(), *core = json_object_new_object(),
		    *res = json_object_new_object(), *ef = json_object_new_object(),
		    *lc = json_object_new_object(), *ret = json_object_new_object();
	char name[SANDBOX_ID_LEN + 16];

	snprintf(name, sizeof(name), "sandboxes/%s", sb->id);
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "uid", json_object_new_string(sb->id));
	if (sb->name[0])
		json_object_object_add(o, "displayName", json_object_new_string(sb->name));

	json_object_object_add(core, "agent", json_object_new_string(""));
	json_object_object_add(core, "status", json_object_new_string(v1_status(sb)));
	/* cpus is an integer: a fractional CPU count (Dokploy's cpu 0.5) has
	 * no /v1 form and is left out */
	if (sb->cpu >= 1 && sb->cpu == (double)(int64_t)sb->cpu)
		json_object_object_add(res, "cpus", json_object_new_int64((int64_t)sb->cpu));
	json_object_object_add(res, "memoryMib", v1_int64_json(sb->memory_mb));
	json_object_object_add(core, "resources", res);
	/* the URLs without their origin: the ETag follows the ports, not the Host */
	json_object_object_add(core, "ports", v1_ports_published(NULL, sb));
	if (sb->labels[0]) {
		json_object *l = json_tokener_parse(sb->labels);
		if (l && json_object_is_type(l, json_type_object))
			json_object_object_add(core, "labels", l);
		else
			json_object_put(l);
	}
	json_object_object_add(core, "createdAt", v1_time_json(sb->created_at));
	if (sb->template_name[0]) {
		char img[64];
		snprintf(img, sizeof(img), "images/%s", sb->template_name);
		json_object_object_add(core, "image", json_object_new_string(img));
	} else {
		json_object_object_add(core, "imageRef", json_object_new_string(sb->image));
	}
	json_object_object_add(o, "core", core);

	/* always emitted: the only advertisement of the stop guarantee and of
	 * output retention. The decided stop is a pause (memory kept); a
	 * durable process keeps its last 4 MiB of output (SB_PROC_RETENTION) */
	json_object_object_add(lc, "stopMemoryOutcome",
			       json_object_new_string(sb->discard ? "discard" : "preserve"));
	json_object_object_add(lc, "canCaptureMemory", json_object_new_boolean(0));
	json_object_object_add(ef, "lifecycle", lc);
	json_object_object_add(ret, "minBytes", v1_int64_json(SB_PROC_RETENTION));
	json_object_object_add(ef, "outputRetention", ret);
	/* what is in force: at expiry the container is ended and removed (the
	 * record stays, failed), or with onTimeout stop paused (it reads
	 * stopped); activity moves the expiry (sandpit's timeout is an
	 * inactivity timeout), never past the hard deadline. It is disarmed
	 * while stopped (no expiresAt: only the deadline counts), and a start
	 * re-arms it for the interval (resumeTimeout) */
	if (sb->timeout_ms > 0) {
		json_object *to = json_object_new_object();
		char d[32];
		snprintf(d, sizeof(d), "%llds", (long long)(sb->timeout_ms / 1000));
		json_object_object_add(
			to, "onTimeout",
			json_object_new_string(sb->timeout_stop ? "stop" : "delete"));
		json_object_object_add(to, "autoResume", json_object_new_boolean(0));
		json_object_object_add(to, "initialTimeout", json_object_new_string(d));
		json_object_object_add(to, "resumeTimeout", json_object_new_string(d));
		if (sb->status == SB_RUNNING && sb->expires_at > 0)
			json_object_object_add(to, "expiresAt", v1_time_json(sb->expires_at));
		json_object_object_add(ef, "timeouts", to);
	}
	managed_volumes_json(sb, ef);
	json_object_object_add(o, "effectiveFeatures", ef);

	if (sb->status == SB_KILLED || sb->status == SB_ERROR) {
		json_object *f = json_object_new_object();
		json_object_object_add(
			f, "code",
			json_object_new_string(sb->status == SB_KILLED ? "aborted" : "internal"));
		json_object_object_add(
			f, "message",
			json_object_new_string(
				sb->status == SB_KILLED
					? (sb->error_message[0] ? sb->error_message
								: "the sandbox was killed")
					: (sb->error_message[0] ? sb->error_message
								: "the sandbox failed")));
		json_object_object_add(f, "details", json_object_new_array());
		json_object_object_add(o, "failure", f);
	}
	return o;
}

json_object *v1_sandbox_json(const struct config *cfg, const struct sandbox *sb, char *etag,
			     size_t cap)
{
	json_object *o = sandbox_body(sb), *core;
	char tag[V1_ETAG_MAX];

	v1_etag(cfg, "sandbox", o, tag);
	json_object_object_get_ex(o, "core", &core);
	json_object_object_add(core, "etag", json_object_new_string(tag));
	if (etag)
		str_copy(etag, cap, tag);
	return o;
}

/* v1_sandbox_json with core.environment, the create's environment as
 * given (the document: non-secret metadata; Redis holds it sealed). It is
 * left out of the ETag: it never changes after the create. NULL with e
 * set when the record's environment cannot be read. */
json_object *v1_render(struct handler_ctx *h, const struct sandbox *sb, struct sp_err *e)
{
	json_object *o = v1_sandbox_json(h->cfg, sb, NULL, 0), *core, *env, *ep;
	struct buf plain;
	char origin[V1_EP_ORIGIN_MAX];

	/* core.endpoint: the endpoint's operations (v1_endpoint.c), while the
	 * sandbox can serve them; out of the ETag (it follows the Host) */
	if (sb->status != SB_KILLED && sb->status != SB_ERROR &&
	    v1_endpoint_origin(h->cfg, h->r, origin, sizeof(origin)) == 0 &&
	    (ep = v1_endpoint_json(handler_routes, origin, sb)) &&
	    json_object_object_get_ex(o, "core", &core))
		json_object_object_add(core, "endpoint", ep);
	/* core.ports with their full URLs (handlers/v1_ports.c) */
	if (json_object_object_get_ex(o, "core", &core))
		json_object_object_add(core, "ports", v1_ports_published(h, sb));
	if (!sb->has_environment)
		return o;
	buf_init(&plain, SB_ENV_TOTAL_MAX + 65536);
	if (sandbox_environment(h->sb, sb, &plain, e) < 0) {
		buf_wipe(&plain);
		json_object_put(o);
		return NULL;
	}
	env = plain.len ? json_tokener_parse(plain.data) : NULL;
	buf_wipe(&plain);
	if (env && json_object_is_type(env, json_type_object) &&
	    json_object_object_get_ex(o, "core", &core))
		json_object_object_add(core, "environment", env);
	else
		json_object_put(env);
	return o;
}

int v1_sandboxes_get(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox sb;

	if (sandbox_get(h->sb, h->r->org, hin_str(in, "sandbox", NULL), &sb, e) < 0)
		return -1;
	*out = v1_render(h, &sb, e);
	return *out ? 0 : -1;
}

/* --- list ------------------------------------------------------------------ */

/* filter: the document's portable fields (snake_case) */
enum { F_NAME, F_DISPLAY_NAME, F_UID, F_STATUS, F_AGENT };
static const char *const filter_fields[] = {
	"name", "display_name", "uid", "status", "agent", NULL
};

static int filter_match(const struct v1_filter *f, const struct sandbox *sb)
{
	char name[SANDBOX_ID_LEN + 16];

	snprintf(name, sizeof(name), "sandboxes/%s", sb->id);
	return v1_filter_is(f, F_NAME, name) && v1_filter_is(f, F_UID, sb->id) &&
	       v1_filter_is(f, F_DISPLAY_NAME, sb->name) &&
	       v1_filter_is(f, F_STATUS, v1_status(sb)) && v1_filter_is(f, F_AGENT, "");
}

int v1_sandboxes_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *filter = hin_str(in, "filter", NULL), *order = hin_str(in, "orderBy", NULL);
	struct sandbox_page_req pg = { 0, NULL };
	struct sandbox_page page = { 0 };
	struct v1_filter f;
	char cursor[V1_PAGE_CURSOR_MAX + 1], next[V1_PAGE_TOKEN_MAX + 1] = "", scope[1200];
	json_object *o, *arr;

	filter = filter ? filter : "";
	order = order ? order : "";
	if (v1_filter_parse(filter, filter_fields, &f, e) < 0)
		return -1;
	/* the core lists newest first and nothing else */
	if (order[0] && strcmp(order, "created_at desc") != 0) {
		if (strcmp(order, "created_at") == 0 || strcmp(order, "created_at asc") == 0 ||
		    strncmp(order, "name", 4) == 0)
			return sp_err_field(e, SP_UNIMPLEMENTED, "orderBy",
					    "orderBy: only 'created_at desc' (newest first, the "
					    "default) is supported");
		return sp_err_field(e, SP_BAD_REQUEST, "orderBy",
				    "orderBy: expected a field (created_at, name) and an optional "
				    "direction (asc, desc)");
	}
	snprintf(scope, sizeof(scope), "%s\n%s", filter, order);
	if (v1_page_cursor(h, in, "listSandboxes", scope, cursor, sizeof(cursor), e) < 0)
		return -1;
	arr = json_object_new_array();
	if ((f.val[F_UID] || f.val[F_NAME]) && !cursor[0]) {
		/* one sandbox at most: read it instead of paging */
		struct sandbox sb;
		const char *id = f.val[F_UID] ? f.val[F_UID] : f.val[F_NAME];
		if (!f.val[F_UID] && strncmp(id, "sandboxes/", 10) == 0)
			id += 10;
		if (sandbox_get(h->sb, h->r->org, id, &sb, e) == 0) {
			json_object *one = filter_match(&f, &sb) ? v1_render(h, &sb, e) : NULL;
			if (one)
				json_object_array_add(arr, one);
			else if (e->code != SP_OK) {
				json_object_put(arr);
				return -1;
			}
		} else if (e->code != SP_NOT_FOUND && e->code != SP_BAD_REQUEST) {
			json_object_put(arr);
			return -1;
		}
		sp_err_clear(e);
	} else {
		pg.limit = (int)v1_page_size(in, V1_PAGE_DEFAULT, SB_LIST_PAGE_MAX);
		pg.cursor = cursor;
		if (sandbox_list(h->sb, h->r->org, &pg, &page, e) < 0) {
			json_object_put(arr);
			if (e->code == SP_BAD_REQUEST) /* a cursor the core refuses */
				return sp_err_field(e, SP_BAD_REQUEST, "pageToken",
						    "pageToken: no longer valid");
			return -1;
		}
		for (size_t i = 0; i < page.n; i++) {
			json_object *one = filter_match(&f, &page.items[i])
						   ? v1_render(h, &page.items[i], e)
						   : NULL;
			if (one) {
				json_object_array_add(arr, one);
			} else if (e->code != SP_OK) {
				sandbox_page_free(&page);
				json_object_put(arr);
				return -1;
			}
		}
		if (page.next_cursor[0])
			v1_page_token(h, "listSandboxes", scope, page.next_cursor, next,
				      sizeof(next));
		sandbox_page_free(&page);
	}
	o = json_object_new_object();
	json_object_object_add(o, "sandboxes", arr);
	json_object_object_add(o, "nextPageToken", json_object_new_string(next));
	*out = o;
	return 0;
}

/* --- create ---------------------------------------------------------------- */

/* True when a refused field was given a value other than empty. */
static int given(json_object *in, const char *name)
{
	json_object *v;

	if (!json_object_object_get_ex(in, name, &v) || !v)
		return 0;
	if (json_object_is_type(v, json_type_array))
		return json_object_array_length(v) > 0;
	if (json_object_is_type(v, json_type_object))
		return json_object_object_length(v) > 0;
	if (json_object_is_type(v, json_type_string))
		return json_object_get_string_len(v) > 0;
	return 1;
}

/* The fields sandpit cannot honour on plain Docker, refused before
 * anything happens (the document: "fail explicitly"). */
static int refuse_unsupported(struct handler_ctx *h, json_object *in, struct sp_err *e)
{
	static const struct {
		const char *field, *why;
	} unsupported[] = {
		{ "kits", "kits are not supported by this backend" },
		{ "networkPolicies", "inline network policies are not supported yet" },
		{ "policyIds", "governance policies are not supported yet" },
		{ "startupExecution", "startupExecution is not supported yet" },
		{ NULL, NULL },
	};
	json_object *plat, *v;
	const char *agent = hin_str(in, "agent", NULL), *pull = hin_str(in, "pullPolicy", NULL);

	/* the conditional permission comes first: a caller without it learns
	 * nothing of what this server supports */
	if (json_object_object_get_ex(in, "mcp", NULL)) {
		if (!route_has_perm(h->r->perms, "mcpWrite"))
			return sp_err_set(e, SP_FORBIDDEN,
					  "Your role lacks the mcpWrite permission");
		return sp_err_field(e, SP_UNIMPLEMENTED, "mcp",
				    "mcp: MCP gateways are not supported");
	}
	if (agent && *agent)
		return sp_err_field(e, SP_BAD_REQUEST, "agent",
				    "agent: unknown agent profile (this backend has none)");
	if (pull && strcmp(pull, "always") == 0)
		return sp_err_field(e, SP_UNIMPLEMENTED, "pullPolicy",
				    "pullPolicy: always needs a registry; images here are local");
	for (int i = 0; unsupported[i].field; i++)
		if (given(in, unsupported[i].field))
			return sp_err_field(e, SP_UNIMPLEMENTED, unsupported[i].field, "%s: %s",
					    unsupported[i].field, unsupported[i].why);
	if (json_object_object_get_ex(in, "platform", &plat) && plat) {
		const char *os = json_object_object_get_ex(plat, "os", &v)
					 ? json_object_get_string(v)
					 : NULL;
		const char *arch = json_object_object_get_ex(plat, "architecture", &v)
					   ? json_object_get_string(v)
					   : NULL;
		if (!os || !arch)
			return sp_err_field(
				e, SP_BAD_REQUEST, "platform",
				"platform: an explicit platform needs os and architecture");
		if (strcmp(os, "linux") != 0 || strcmp(arch, v1_host_arch()) != 0)
			return sp_err_field(e, SP_UNIMPLEMENTED, "platform",
					    "platform: only linux/%s runs here", v1_host_arch());
	}
	return 0;
}

/* features.managedVolumes: {attachments: [{volume "volumes/<id>",
 * target, mode unspecified|exclusive}]}, closed objects, 1 to
 * SB_VOLUME_ATTACH_MAX of them, into att (pointing into v); the core
 * checks the targets and claims the volumes. They live on the local
 * server: the sandbox is placed there. */
static int managed_volumes(json_object *v, struct sandbox_create_req *rq,
			   struct sandbox_volume_attach *att, struct sp_err *e)
{
	json_object *list = NULL;
	char field[96];
	size_t n;

	if (!json_object_is_type(v, json_type_object))
		return sp_err_field(e, SP_BAD_REQUEST, "features.managedVolumes",
				    "features.managedVolumes: expected an object");
	json_object_object_foreach(v, k, val)
	{
		if (strcmp(k, "attachments") != 0)
			return sp_err_field(e, SP_BAD_REQUEST, "features.managedVolumes",
					    "features.managedVolumes: unknown field '%.40s' "
					    "(attachments)",
					    k);
		list = val;
	}
	if (!list || !json_object_is_type(list, json_type_array) ||
	    (n = json_object_array_length(list)) < 1)
		return sp_err_field(e, SP_BAD_REQUEST, "features.managedVolumes.attachments",
				    "features.managedVolumes.attachments: 1 to %d attachments "
				    "required",
				    SB_VOLUME_ATTACH_MAX);
	if (n > SB_VOLUME_ATTACH_MAX)
		return sp_err_field(e, SP_BAD_REQUEST, "features.managedVolumes.attachments",
				    "features.managedVolumes.attachments: at most %d",
				    SB_VOLUME_ATTACH_MAX);
	for (size_t i = 0; i < n; i++) {
		json_object *a = json_object_array_get_idx(list, i), *vol = NULL, *tgt = NULL,
			    *mode = NULL;
		snprintf(field, sizeof(field), "features.managedVolumes.attachments[%zu]", i);
		if (!a || !json_object_is_type(a, json_type_object))
			return sp_err_field(e, SP_BAD_REQUEST, field, "%s: expected an object",
					    field);
		json_object_object_foreach(a, ak, av)
		{
			if (strcmp(ak, "volume") == 0)
				vol = av;
			else if (strcmp(ak, "target") == 0)
				tgt = av;
			else if (strcmp(ak, "mode") == 0)
				mode = av;
			else
				return sp_err_field(e, SP_BAD_REQUEST, field,
						    "%s: unknown field '%.40s' (volume, target, "
						    "mode)",
						    field, ak);
		}
		if (!vol || !json_object_is_type(vol, json_type_string) ||
		    strncmp(json_object_get_string(vol), "volumes/", 8) != 0 ||
		    !json_object_get_string(vol)[8] || strchr(json_object_get_string(vol) + 8, '/'))
			return sp_err_field(e, SP_BAD_REQUEST, field,
					    "%s.volume: volumes/<id> is required", field);
		if (!tgt || !json_object_is_type(tgt, json_type_string) ||
		    !json_object_get_string_len(tgt))
			return sp_err_field(e, SP_BAD_REQUEST, field,
					    "%s.target: an absolute path is required", field);
		if (mode && (!json_object_is_type(mode, json_type_string) ||
			     (strcmp(json_object_get_string(mode), "unspecified") != 0 &&
			      strcmp(json_object_get_string(mode), "exclusive") != 0)))
			return sp_err_field(e, SP_BAD_REQUEST, field,
					    "%s.mode: unspecified or exclusive (one sandbox at a "
					    "time, read-write)",
					    field);
		if (memchr(json_object_get_string(tgt), '\0',
			   (size_t)json_object_get_string_len(tgt)))
			return sp_err_field(e, SP_BAD_REQUEST, field, "%s.target: no NUL", field);
		att[i].volume = json_object_get_string(vol) + 8;
		att[i].target = json_object_get_string(tgt);
	}
	rq->volumes = att;
	rq->nvolumes = n;
	rq->server_id = "local";
	return 0;
}

/* features: timeouts (the sandbox's TTL: timeout becomes the core's
 * inactivity timeout, at least 10 s and within the hard deadline;
 * onTimeout delete, or stop (paused at expiry); no autoResume) and
 * managedVolumes. storedSecrets is a 501; unknown fields a 400. */
static int features_parse(json_object *in, struct sandbox_create_req *rq,
			  struct sandbox_volume_attach *att, struct sp_err *e)
{
	json_object *f, *to = NULL, *v;

	if (!json_object_object_get_ex(in, "features", &f) || !f)
		return 0;
	if (!json_object_is_type(f, json_type_object))
		return sp_err_field(e, SP_BAD_REQUEST, "features", "features: expected an object");
	json_object_object_foreach(f, k, val)
	{
		if (strcmp(k, "timeouts") == 0) {
			to = val;
		} else if (strcmp(k, "managedVolumes") == 0) {
			if (val && managed_volumes(val, rq, att, e) < 0)
				return -1;
		} else if (strcmp(k, "storedSecrets") == 0) {
			if (val)
				return sp_err_field(e, SP_UNIMPLEMENTED, "features",
						    "features: %s is not supported yet", k);
		} else {
			return sp_err_field(e, SP_BAD_REQUEST, "features",
					    "features: unknown field '%.40s' (managedVolumes, "
					    "timeouts, storedSecrets)",
					    k);
		}
	}
	if (!to)
		return 0;
	if (!json_object_is_type(to, json_type_object))
		return sp_err_field(e, SP_BAD_REQUEST, "features.timeouts",
				    "features.timeouts: expected an object");
	json_object_object_foreach(to, tk, tv)
	{
		(void)tv;
		if (strcmp(tk, "timeout") != 0 && strcmp(tk, "onTimeout") != 0 &&
		    strcmp(tk, "autoResume") != 0)
			return sp_err_field(e, SP_BAD_REQUEST, "features.timeouts",
					    "features.timeouts: unknown field '%.40s' (timeout, "
					    "onTimeout, autoResume)",
					    tk);
	}
	if (json_object_object_get_ex(to, "onTimeout", &v) && v) {
		const char *a =
			json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
		if (strcmp(a, "keep") == 0 || strcmp(a, "restart") == 0)
			return sp_err_field(
				e, SP_UNIMPLEMENTED, "features.timeouts.onTimeout",
				"features.timeouts.onTimeout: only delete and stop are "
				"supported (at expiry the container is ended or paused)");
		if (strcmp(a, "stop") == 0)
			rq->timeout_stop = 1;
		else if (strcmp(a, "delete") != 0)
			return sp_err_field(e, SP_BAD_REQUEST, "features.timeouts.onTimeout",
					    "features.timeouts.onTimeout: expected delete, stop, "
					    "keep or restart");
	}
	if (json_object_object_get_ex(to, "autoResume", &v) && v) {
		if (!json_object_is_type(v, json_type_boolean))
			return sp_err_field(e, SP_BAD_REQUEST, "features.timeouts.autoResume",
					    "features.timeouts.autoResume: expected a boolean");
		if (json_object_get_boolean(v))
			return sp_err_field(e, SP_UNIMPLEMENTED, "features.timeouts.autoResume",
					    "features.timeouts.autoResume: no endpoint wakes a "
					    "stopped sandbox (startSandbox does)");
	}
	if (json_object_object_get_ex(to, "timeout", &v) && v) {
		int64_t ms = json_object_is_type(v, json_type_string)
				     ? v1_duration_ms(json_object_get_string(v))
				     : -1;
		if (ms == -1)
			return sp_err_field(e, SP_BAD_REQUEST, "features.timeouts.timeout",
					    "features.timeouts.timeout: expected a Duration such "
					    "as 300s");
		if (ms == -2 || ms < SB_MIN_TIMEOUT_MS)
			return sp_err_field(e, SP_OUT_OF_RANGE, "features.timeouts.timeout",
					    "features.timeouts.timeout: at least %ds",
					    SB_MIN_TIMEOUT_MS / 1000);
		if (ms > SB_MAX_LIFETIME_MS)
			return sp_err_field(e, SP_OUT_OF_RANGE, "features.timeouts.timeout",
					    "features.timeouts.timeout: beyond the hard deadline "
					    "(%ds after creation)",
					    SB_MAX_LIFETIME_MS / 1000);
		rq->timeout_ms = ms;
	}
	return 0;
}

/* environment: an object of strings, as the core's variables (their
 * names, sizes and count are the core's exec rules, sandbox_env_check).
 * *v is allocated (and points into in). */
static int environment_list(json_object *in, struct sandbox_env_var **v, size_t *n,
			    struct sp_err *e)
{
	json_object *env = NULL;

	json_object_object_get_ex(in, "environment", &env);
	return sandbox_env_of_json(env, "environment", -1, v, n, e);
}

/* labels: an object of at most SB_LABELS_COUNT_MAX string values; a key 1
 * to 128 bytes without control characters, a value at most 1024 bytes
 * without NUL, and all of it at most SB_LABELS_MAX bytes as JSON (its
 * text into out, "" for none). */
static int labels_text(json_object *in, char *out, size_t cap, struct sp_err *e)
{
	json_object *l;
	const char *js;
	size_t len = 0;

	out[0] = '\0';
	if (!json_object_object_get_ex(in, "labels", &l) || !l)
		return 0;
	if (!json_object_is_type(l, json_type_object))
		return sp_err_field(e, SP_BAD_REQUEST, "labels",
				    "labels: expected an object of strings");
	if (json_object_object_length(l) > SB_LABELS_COUNT_MAX)
		return sp_err_field(e, SP_BAD_REQUEST, "labels", "labels: at most %d",
				    SB_LABELS_COUNT_MAX);
	if (json_object_object_length(l) == 0)
		return 0;
	json_object_object_foreach(l, k, val)
	{
		size_t kl = strlen(k);
		int ok = kl >= 1 && kl <= 128;
		for (size_t i = 0; ok && i < kl; i++)
			ok = (unsigned char)k[i] >= 0x20 && k[i] != 0x7f;
		if (!ok)
			return sp_err_field(e, SP_BAD_REQUEST, "labels",
					    "labels: a key is 1 to 128 bytes without control "
					    "characters");
		if (!json_object_is_type(val, json_type_string))
			return sp_err_field(e, SP_BAD_REQUEST, "labels",
					    "labels.%.64s: expected a string", k);
		if (json_object_get_string_len(val) > 1024 ||
		    memchr(json_object_get_string(val), '\0',
			   (size_t)json_object_get_string_len(val)))
			return sp_err_field(e, SP_BAD_REQUEST, "labels",
					    "labels.%.64s: at most 1024 bytes, no NUL", k);
	}
	js = json_object_to_json_string_length(l, JSON_C_TO_STRING_PLAIN, &len);
	if (len >= cap)
		return sp_err_field(e, SP_BAD_REQUEST, "labels",
				    "labels: at most %d bytes in all as JSON", SB_LABELS_MAX);
	memcpy(out, js, len + 1);
	return 0;
}

/* The core's create under the Idempotency-Key's resource id (the ledger
 * chose it before any effect, RELIABILITY I2): a first request creates
 * with it; a retry that took over from a first one whose worker is gone
 * (or whose time passed) resumes it, and while that first one is still
 * under way it is the ledger's 409 idempotency_in_progress. */
static int v1_create_call(struct handler_ctx *h, json_object *in, struct sandbox_create_req *rq,
			  struct sandbox *sb, struct sp_err *e)
{
	const char *resume = hin_str(in, ROUTE_IN_IDEM_RESUME, NULL);
	int rc;

	rq->id = hin_str(in, ROUTE_IN_IDEM_RESOURCE, NULL);
	if (rq->id && resume)
		rc = sandbox_create_resume(h->sb, h->r->org, rq, strcmp(resume, "gone") == 0, sb,
					   e);
	else
		rc = sandbox_create(h->sb, h->r->org, rq, sb, e);
	if (rc < 0 && rq->id && e->code == SP_CONFLICT)
		return sp_err_field(e, SP_PRECONDITION, "Idempotency-Key",
				    "idempotency_in_progress: the first request with this "
				    "Idempotency-Key is still running; retry later");
	return rc;
}

int v1_sandboxes_create(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox_create_req rq = { 0 };
	struct sandbox sb;
	const char *img = hin_str(in, "image", NULL), *ref = hin_str(in, "imageRef", NULL),
		   *dn = hin_str(in, "displayName", NULL),
		   *prefix = hin_str(in, "displayNamePrefix", NULL);
	char name[65], labels[SB_LABELS_MAX + 1];
	json_object *res;
	struct sandbox_env_var *vars = NULL;
	struct sandbox_volume_attach att[SB_VOLUME_ATTACH_MAX];
	int rc;

	if (refuse_unsupported(h, in, e) < 0 || labels_text(in, labels, sizeof(labels), e) < 0)
		return -1;
	if (img && ref)
		return sp_err_field(e, SP_BAD_REQUEST, "image",
				    "image: give image or imageRef, not both");
	if (dn && prefix)
		return sp_err_field(
			e, SP_BAD_REQUEST, "displayNamePrefix",
			"displayNamePrefix: give displayName or displayNamePrefix, not both");
	rq.cpu = rq.memory_mb = -1;
	rq.pids_limit = rq.disk_mb = rq.timeout_ms = rq.max_lifetime_ms = -1;
	rq.timeout_field = "features.timeouts.timeout"; /* beyond the deadline: outOfRange */
	if (img) {
		/* a managed image is a template: images/<template> */
		if (strncmp(img, "images/", 7) != 0 || !config_template(h->cfg, img + 7))
			return sp_err_field(e, SP_NOT_FOUND, "image",
					    "image: no such image (images/<template>, see "
					    "/api/sandbox.templates)");
		rq.template_name = img + 7;
	} else if (ref) {
		rq.image = ref;
		rq.image_field = "imageRef";
	} else {
		if (h->cfg->ntemplates < 1)
			return sp_err_field(e, SP_BAD_REQUEST, "imageRef",
					    "imageRef: required (no template is configured)");
		rq.template_name = h->cfg->templates[0].name;
	}
	if (prefix) {
		/* a generated label: the prefix and the time in base 36 */
		sandbox_time_name(prefix, now_ms(), name, sizeof(name));
		rq.name = name;
	} else if (dn && *dn) {
		rq.name = dn;
	}
	rq.created_by = h->r->key_id;
	if (json_object_object_get_ex(in, "resources", &res) && res) {
		rq.cpu = hin_dbl(res, "cpus", -1);
		rq.memory_mb = hin_i64(res, "memoryMib", -1);
	}
	if (features_parse(in, &rq, att, e) < 0)
		return -1;
	if (labels[0])
		rq.labels = labels;
	if (environment_list(in, &vars, &rq.nenv, e) < 0) {
		free(vars);
		return -1;
	}
	rq.env = vars;
	rc = v1_create_call(h, in, &rq, &sb, e);
	free(vars);
	if (rc < 0)
		return -1;
	*out = v1_render(h, &sb, e);
	return *out ? 0 : -1;
}

/* --- update, delete -------------------------------------------------------- */

int v1_sandboxes_update(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *id = hin_str(in, "sandbox", NULL), *want = hin_str(in, ROUTE_IN_IF_MATCH, NULL);
	struct sandbox sb;
	char tag[V1_ETAG_MAX];
	json_object *cur;

	if (sandbox_get(h->sb, h->r->org, id, &sb, e) < 0)
		return -1;
	cur = v1_sandbox_json(h->cfg, &sb, tag, sizeof(tag));
	json_object_put(cur);
	if (v1_if_match(want, tag, "sandbox", e) < 0)
		return -1;
	if (sandbox_rename(h->sb, h->r->org, id, sb.name, hin_str(in, "displayName", NULL), &sb,
			   e) < 0) {
		if (e->code != SP_ETAG_MISMATCH || sandbox_get(h->sb, h->r->org, id, &sb, e) < 0)
			return -1;
		json_object_put(v1_sandbox_json(h->cfg, &sb, tag, sizeof(tag)));
		return v1_if_match(NULL, tag, "sandbox", e);
	}
	*out = v1_render(h, &sb, e);
	return *out ? 0 : -1;
}

/* Ends the container and the record: 204. An absent sandbox is a 204 too
 * (the document: "an empty message when absent"). */
int v1_sandboxes_delete(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *id = hin_str(in, "sandbox", NULL), *want = hin_str(in, ROUTE_IN_IF_MATCH, NULL);
	struct sandbox sb;
	char tag[V1_ETAG_MAX];

	*out = NULL;
	if (sandbox_get(h->sb, h->r->org, id, &sb, e) < 0) {
		if (e->code != SP_NOT_FOUND)
			return -1;
		sp_err_clear(e);
		return 0;
	}
	json_object_put(v1_sandbox_json(h->cfg, &sb, tag, sizeof(tag)));
	if (v1_if_match(want, tag, "sandbox", e) < 0)
		return -1;
	if (sandbox_remove(h->sb, h->r->org, id, e) < 0) {
		if (e->code != SP_NOT_FOUND)
			return -1;
		sp_err_clear(e);
	}
	return 0;
}

/* --- stop, start ------------------------------------------------------------ */

/* stop pauses the container (processes and memory kept), start resumes
 * it; both need the current ETag. Stopping a stopped sandbox or starting
 * a running one answers 200 with it unchanged (the document names no
 * error for them); a sandbox that is creating or failed is a 409 naming
 * its state. Always synchronous: 200, never 202. */
static int lifecycle(struct handler_ctx *h, json_object *in, json_object **out, int start,
		     struct sp_err *e)
{
	const char *id = hin_str(in, "sandbox", NULL), *want = hin_str(in, ROUTE_IN_IF_MATCH, NULL);
	struct sandbox sb;
	char tag[V1_ETAG_MAX];

	if (sandbox_get(h->sb, h->r->org, id, &sb, e) < 0)
		return -1;
	json_object_put(v1_sandbox_json(h->cfg, &sb, tag, sizeof(tag)));
	if (v1_if_match(want, tag, "sandbox", e) < 0)
		return -1;
	if ((start ? sandbox_start : sandbox_stop)(h->sb, h->r->org, id, &sb, e) < 0) {
		if (e->code == SP_PRECONDITION)
			sp_err_set(e, SP_PRECONDITION,
				   "sandbox_%s: the sandbox is %s (%s), it cannot be %s",
				   v1_status(&sb), v1_status(&sb), sandbox_status_name(sb.status),
				   start ? "started" : "stopped");
		return -1;
	}
	*out = v1_sandbox_json(h->cfg, &sb, NULL, 0);
	return 0;
}

int v1_sandboxes_stop(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	return lifecycle(h, in, out, 0, e);
}

int v1_sandboxes_start(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	return lifecycle(h, in, out, 1, e);
}

/* --- renewSandboxTimeout ----------------------------------------------------- */

int64_t v1_duration_ms(const char *s)
{
	int64_t whole = 0, frac_ms = 0;
	int digits = 0, fd = 0, neg = 0;
	size_t n = strlen(s);

	if (n < 2 || s[n - 1] != 's')
		return -1;
	if (*s == '-') {
		neg = 1;
		s++;
	}
	for (; *s >= '0' && *s <= '9'; s++, digits++)
		if (digits >= 12 || (whole = whole * 10 + (*s - '0')) < 0)
			return -1;
	if (!digits)
		return -1;
	if (*s == '.') {
		int round_up = 0;
		for (s++; *s >= '0' && *s <= '9'; s++, fd++) {
			if (fd < 3)
				frac_ms = frac_ms * 10 + (*s - '0');
			else if (*s != '0')
				round_up = 1;
		}
		if (fd < 1 || fd > 9)
			return -1;
		for (int i = fd; i < 3; i++)
			frac_ms *= 10;
		frac_ms += round_up;
	}
	if (strcmp(s, "s") != 0 || neg)
		return neg && strcmp(s, "s") == 0 ? -2 : -1;
	return whole * 1000 + frac_ms;
}

/* The TTL restarts at acceptance: the expiry becomes now + timeout, and
 * the interval the container's watcher keeps becomes timeout. Past the
 * hard deadline (maxLifetime) is outOfRange naming it. */
int v1_sandboxes_renew(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *id = hin_str(in, "sandbox", NULL), *t = hin_str(in, "timeout", NULL);
	int64_t ms = v1_duration_ms(t ? t : ""), now = now_ms();
	struct sandbox sb;
	char iso[40];

	if (ms == -1)
		return sp_err_field(e, SP_BAD_REQUEST, "timeout",
				    "timeout: expected a Duration such as 300s or 1.5s");
	if (ms == -2 || ms < SB_MIN_TIMEOUT_MS)
		return sp_err_field(e, SP_OUT_OF_RANGE, "timeout", "timeout: at least %ds",
				    SB_MIN_TIMEOUT_MS / 1000);
	if (sandbox_get_running(h->sb, h->r->org, id, &sb, e) < 0)
		return -1;
	if (now + ms > sb.deadline_at) {
		iso8601_ms(sb.deadline_at, iso, sizeof(iso));
		return sp_err_field(
			e, SP_OUT_OF_RANGE, "timeout",
			"timeout: beyond the sandbox's hard deadline %s (its maxLifetime, "
			"%llds after creation); at most %llds from now",
			iso, (long long)(sb.max_lifetime_ms / 1000),
			(long long)((sb.deadline_at - now) / 1000));
	}
	if (sandbox_set_timeout(h->sb, h->r->org, id, ms, &sb, e) < 0)
		return -1;
	*out = v1_render(h, &sb, e);
	return *out ? 0 : -1;
}
