/*
 * The handlers: one file per API resource, each turning validated input
 * into a core call and the core's answer into JSON. The route table
 * (routes.c) lists them all; dispatch.c runs one request through it.
 * Handlers never call libcurl or hiredis directly.
 */
#ifndef SANDPIT_HANDLERS_H
#define SANDPIT_HANDLERS_H

#include <stdint.h>

#include "../fcgi/request.h"
#include "../fcgi/route.h"
#include "../sandbox/sandbox.h"

struct handler_ctx {
	struct req *r;
	struct sandbox_ctx *sb;
	const struct config *cfg;
};

extern const struct route handler_routes[];

/* Serves one accepted request: auth subrequests, routing, validation,
 * permission check, the handler, and the answer. */
void handlers_serve(struct sandbox_ctx *sb, struct req *r);

/* Permissions a built-in role grants, comma separated ("" for none). */
const char *handlers_role_perms(const char *role);

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
/* handlers/health.c */
int h_health(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);

#endif
