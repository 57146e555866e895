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

int handlers_call(struct handler_ctx *h, const struct route *rt, json_object *in, int from_query,
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
	if (rt->fields && route_validate(rt, in, from_query, e, issues) < 0)
		return -1;
	return rt->fn(h, in, out, e);
}

void handlers_serve(struct sandbox_ctx *sb, struct req *r)
{
	struct handler_ctx h = { r, sb, sb->cfg, 1 };
	json_object *in = NULL, *out = NULL, *issues = NULL;
	const struct route *rt;
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
	if (!method_ok) {
		sp_err_set(&e, SP_METHOD_NOT_ALLOWED, "%s needs %s", rt->path, rt->method);
		goto fail;
	}
	if (rt->fields && route_parse_input(rt, r, &in, &e) < 0)
		goto fail;
	if (handlers_call(&h, rt, in, strcmp(rt->method, "GET") == 0, &out, &issues, &e) < 0)
		goto fail;
	/* A route without fields may have answered itself (MCP's 202). */
	if (r->status)
		goto done;
	req_send_json(r, 200, r->headers[0] ? r->headers : NULL, out);
	goto done;
fail:
	if (r->status) /* a streamed answer that was cut off (handlers/exec.c) */
		goto done;
	if (e.code == SP_OK)
		sp_err_set(&e, SP_INTERNAL, "Internal error");
	req_send_error(r, &e, issues);
done:
	t0 = mono_us() - t0;
	metrics_observe(METRICS_REQUEST, op, r->status, t0);
	log_info("%s %s %d %lldms", r->method, r->path, r->status, (long long)(t0 / 1000));
	json_object_put(in);
	json_object_put(out);
	json_object_put(issues);
	log_set_request_id(NULL);
}
