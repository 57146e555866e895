/*
 * One request through the route table: nginx's auth subrequests, routing,
 * the permission check (again, behind nginx's), input validation, the
 * handler, and the answer. Identity comes only from the SANDPIT_* params
 * nginx sets; a client-sent header never counts.
 */
#include "handlers.h"

#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "../common/metrics.h"
#include "../common/util.h"
#include "../store/store.h"

const char *hin_str(json_object *in, const char *name, size_t *len)
{
	json_object *v;

	if (!json_object_object_get_ex(in, name, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	if (len)
		*len = (size_t)json_object_get_string_len(v);
	return json_object_get_string(v);
}

int64_t hin_i64(json_object *in, const char *name, int64_t def)
{
	json_object *v;

	if (!json_object_object_get_ex(in, name, &v) || !v)
		return def;
	if (json_object_is_type(v, json_type_double))
		return (int64_t)json_object_get_double(v);
	return json_object_get_int64(v);
}

double hin_dbl(json_object *in, const char *name, double def)
{
	json_object *v;

	if (!json_object_object_get_ex(in, name, &v) || !v)
		return def;
	return json_object_get_double(v);
}

static int behaviours_before(struct handler_ctx *h, const struct route *rt, json_object *in,
			     struct sp_err *e);

int handlers_call(struct handler_ctx *h, const struct route *rt, json_object *in, int from_http,
		  json_object **out, json_object **issues, struct sp_err *e)
{
	struct req *r = h->r;

	*out = NULL;
	*issues = NULL;
	if (rt->kind != ROUTE_PUBLIC) {
		if (!r->org[0])
			return sp_err_set(e, SP_UNAUTHORIZED, "Missing or invalid API key");
		if (rt->perm && !route_has_perm(r->perms, rt->perm))
			return sp_err_set(e, SP_FORBIDDEN, "Your role lacks the %s permission",
					  rt->perm);
	}
	if (rt->fields && route_validate(rt, in, from_http, e, issues) < 0)
		return -1;
	/* the behaviours read the caller's HTTP headers: only when the
	 * request is the call itself (REST), never for an MCP tool call */
	if (in && h->stream_ok && behaviours_before(h, rt, in, e) < 0)
		return -1;
	return rt->fn(h, in, out, e);
}

/* The header value of a CGI param, or NULL when absent. */
static const char *header(const struct req *r, const char *param)
{
	return FCGX_GetParam(param, r->fx->envp);
}

/* An If-Match value: a quoted strong ETag, ^"[^"\x00-\x20\x7f]*"$. */
static int etag_ok(const char *v)
{
	size_t n = strlen(v);

	if (n < 2 || v[0] != '"' || v[n - 1] != '"')
		return 0;
	for (size_t i = 1; i + 1 < n; i++) {
		unsigned char ch = (unsigned char)v[i];
		if (ch == '"' || ch <= 0x20 || ch == 0x7f)
			return 0;
	}
	return 1;
}

/* The one place where the RF_* behaviours a route switches on run, before
 * its handler (after route_validate). The Dokploy procedures set none. */
static int behaviours_before(struct handler_ctx *h, const struct route *rt, json_object *in,
			     struct sp_err *e)
{
	if (rt->flags & (RF_IDEMPOTENCY | RF_IDEMPOTENCY_REQUIRED)) {
		const char *k = header(h->r, "HTTP_IDEMPOTENCY_KEY");
		size_t n = k ? strlen(k) : 0;
		if (!k && (rt->flags & RF_IDEMPOTENCY_REQUIRED))
			return sp_err_field(e, SP_BAD_REQUEST, "Idempotency-Key",
					    "Idempotency-Key: Required");
		if (k) {
			int ok = n >= 1 && n <= 255;
			for (size_t i = 0; ok && i < n; i++)
				ok = k[i] >= 0x20 && k[i] < 0x7f;
			if (!ok)
				return sp_err_field(e, SP_BAD_REQUEST, "Idempotency-Key",
						    "Idempotency-Key: 1 to 255 printable ASCII "
						    "characters");
			/* the replay ledger (/v1) looks (org, op, key) up here:
			 * the same payload answers the first result, another
			 * one is a 409 */
			json_object_object_add(in, ROUTE_IN_IDEMPOTENCY_KEY,
					       json_object_new_string(k));
		}
	}
	if (rt->flags & RF_IF_MATCH) {
		const char *v = header(h->r, "HTTP_IF_MATCH");
		if (!v || !*v)
			return sp_err_field(e, SP_PRECONDITION_REQUIRED, "If-Match",
					    "etag_required: send the resource's current ETag in "
					    "If-Match");
		if (!etag_ok(v))
			return sp_err_field(e, SP_BAD_REQUEST, "If-Match",
					    "If-Match: expected a quoted strong ETag");
		json_object_object_add(in, ROUTE_IN_IF_MATCH, json_object_new_string(v));
	}
	return 0;
}

/* The same place, after a handler succeeded: answer headers. */
static void behaviours_after(struct handler_ctx *h, const struct route *rt, json_object *out)
{
	json_object *v;

	if ((rt->flags & RF_ETAG) && out && json_object_object_get_ex(out, "etag", &v) &&
	    json_object_is_type(v, json_type_string) && etag_ok(json_object_get_string(v))) {
		size_t used = strlen(h->r->headers);
		snprintf(h->r->headers + used, sizeof(h->r->headers) - used, "ETag: %s\r\n",
			 json_object_get_string(v));
	}
	/* the replay ledger (/v1) stores the answer of an Idempotency-Key here */
}

void handlers_serve(struct sandbox_ctx *sb, struct req *r)
{
	struct handler_ctx h = { r, sb, sb->cfg, 1 };
	json_object *in = NULL, *out = NULL, *issues = NULL;
	const struct route *rt = NULL;
	const struct face *face = face_of_path(r->path);
	struct sp_err e;
	int method_ok;
	const char *op = "unrouted";
	int64_t t0 = mono_us();

	sp_err_clear(&e);
	log_set_request_id(r->request_id);
	if (strcmp(req_param(r, "SANDPIT_AUTH"), "1") == 0) {
		op = "auth";
		handlers_auth(sb, r);
		goto done;
	}
	rt = route_find(handler_routes, r->method, r->path, &method_ok);
	if (!rt) {
		sp_err_set(&e, SP_NOT_FOUND, "No procedure at %.200s", r->path);
		goto fail;
	}
	op = rt->op_id;
	face = route_face(rt);
	if (!method_ok) {
		sp_err_set(&e, SP_METHOD_NOT_ALLOWED, "%s needs %s", rt->path, rt->method);
		goto fail;
	}
	if (rt->fields && route_parse_input(rt, r, &in, &e) < 0)
		goto fail;
	/* a route that reads the request itself still gets its raw body read
	 * under its own limit */
	if (!rt->fields && route_body_kind(rt) == RB_RAW &&
	    req_read_body(r, route_body_max(rt), &e) < 0)
		goto fail;
	if (handlers_call(&h, rt, in, 1, &out, &issues, &e) < 0)
		goto fail;
	/* A route without fields may have answered itself (MCP's 202). */
	if (r->status)
		goto done;
	behaviours_after(&h, rt, out);
	face_send_result(r, face, route_status(rt), r->headers[0] ? r->headers : NULL, out);
	goto done;
fail:
	if (r->status) /* a streamed answer that was cut off (handlers/exec.c) */
		goto done;
	if (e.code == SP_OK)
		sp_err_set(&e, SP_INTERNAL, "Internal error");
	face_send_error(r, face, &e, issues);
done:
	t0 = mono_us() - t0;
	metrics_observe(METRICS_REQUEST, op, r->status, t0);
	log_info("%s %s %d %lldms", r->method, r->path, r->status, (long long)(t0 / 1000));
	json_object_put(in);
	json_object_put(out);
	json_object_put(issues);
	log_set_request_id(NULL);
}
