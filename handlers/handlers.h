/*
 * The handlers: one file per API resource, each turning validated input
 * into a core call and the core's answer into JSON. The route table
 * (routes.c) lists them all; dispatch.c runs one request through it.
 * Handlers never call libcurl or hiredis directly.
 */
#ifndef SANDPIT_HANDLERS_H
#define SANDPIT_HANDLERS_H

#include <stdint.h>

#include "../fcgi/face.h"
#include "../fcgi/request.h"
#include "../fcgi/route.h"
#include "../sandbox/sandbox.h"

/* The API's version, in the OpenAPI document and MCP's serverInfo. */
#define SANDPIT_API_VERSION "0.1.0"

struct handler_ctx {
	struct req *r;
	struct sandbox_ctx *sb;
	const struct config *cfg;
	int stream_ok; /* a handler may answer r itself while it works (not via MCP) */
};

extern const struct route handler_routes[];

/* The Dokploy face's renderings (dokploy.c). New JSON values. */
json_object *dk_sandbox_json(const struct sandbox *sb); /* the record; never envVars */
json_object *dk_templates_json(const struct sandbox_template *t, size_t n);
json_object *dk_file_list_json(const struct sandbox_file_list *l);

/* Serves one accepted request: auth subrequests, routing, validation,
 * permission check, the handler, and the answer. */
void handlers_serve(struct sandbox_ctx *sb, struct req *r);

/* The auth_request subrequest (handlers/auth.c): API key -> org, role,
 * permissions, checked against the permission of the route being called. */
void handlers_auth(struct sandbox_ctx *sb, struct req *r);

/* Runs one procedure for the caller in h->r: the identity and permission
 * check, route_validate on in (values that came as text are coerced when
 * from_http), the route's RF_* behaviours (REST only: h->stream_ok), then
 * the handler. Both the REST dispatch and MCP's tools/call go through here.
 * in may be changed (nulls dropped, values coerced); *out is new on
 * success; on a validation failure *issues is new (caller puts). */
int handlers_call(struct handler_ctx *h, const struct route *rt, json_object *in, int from_http,
		  json_object **out, json_object **issues, struct sp_err *e);

/* Validated-input accessors: NULL / def when the field is absent. */
const char *hin_str(json_object *in, const char *name, size_t *len);
int64_t hin_i64(json_object *in, const char *name, int64_t def);
double hin_dbl(json_object *in, const char *name, double def);

/* The procedures (handlers/sandbox.c) */
int h_sandbox_create(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int h_sandbox_one(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int h_sandbox_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int h_sandbox_templates(struct handler_ctx *h, json_object *in, json_object **out,
			struct sp_err *e);
int h_sandbox_kill(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int h_sandbox_remove(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int h_sandbox_set_timeout(struct handler_ctx *h, json_object *in, json_object **out,
			  struct sp_err *e);
/* handlers/exec.c, handlers/files.c */
int h_sandbox_exec(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int h_sandbox_write_file(struct handler_ctx *h, json_object *in, json_object **out,
			 struct sp_err *e);
int h_sandbox_read_file(struct handler_ctx *h, json_object *in, json_object **out,
			struct sp_err *e);
int h_sandbox_list_files(struct handler_ctx *h, json_object *in, json_object **out,
			 struct sp_err *e);
/* handlers/v1_sandboxes.c: the /v1 sandboxes operations (the Docker
 * Sandboxes API). v1_sandbox_json renders a record as its Sandbox, with
 * core.etag; etag (may be NULL) gets the ETag too. New object. */
json_object *v1_sandbox_json(const struct config *cfg, const struct sandbox *sb, char *etag,
			     size_t cap);
int v1_sandboxes_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_sandboxes_create(struct handler_ctx *h, json_object *in, json_object **out,
			struct sp_err *e);
int v1_sandboxes_get(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_sandboxes_update(struct handler_ctx *h, json_object *in, json_object **out,
			struct sp_err *e);
int v1_sandboxes_delete(struct handler_ctx *h, json_object *in, json_object **out,
			struct sp_err *e);
int v1_sandboxes_renew(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_sandboxes_stop(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_sandboxes_start(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
/* handlers/v1_openapi.c: GET /v1/openapi.json, the seed's operations that
 * the table routes. */
int h_v1_openapi(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
/* handlers/health.c */
int h_health(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
/* handlers/metrics.c: Prometheus text; answers the request itself. */
int h_metrics(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);

/* handlers/openapi.c: the OpenAPI 3.1 document and the schemas it holds,
 * all generated from handler_routes. */
int h_openapi(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
/* The whole document; new object. */
json_object *openapi_document(void);
/* The input schema of a procedure (type object, properties, required,
 * additionalProperties false); new object. */
json_object *openapi_input_schema(const struct route *rt);
/* A component schema by name ("Sandbox"); with inline_refs, every $ref to
 * another component is replaced by a copy of it (MCP needs self-contained
 * schemas). New object, or NULL for an unknown name. */
json_object *openapi_component(const char *name, int inline_refs);

/* handlers/mcp.c: the MCP server (Streamable HTTP, JSON answers), its
 * tools generated from handler_routes. Answers the request itself. */
int h_mcp(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);

#endif
