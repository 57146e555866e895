/*
 * GET /v1/openapi.json: the /v1 operations sandpit implements, as the
 * seed document (docker-sandboxes-api.v1.yaml) states them: their paths,
 * operation ids, parameters, responses and every schema they reach. The
 * document is handlers/v1_openapi.json (written from the seed by
 * tests/api/spec/served.mjs), embedded at build time; an operation the
 * route table has no /v1 route for is dropped when it is served, so the
 * answer never claims more than the table routes. Never hand-edited.
 */
#include "handlers.h"

#include <string.h>
#include <strings.h>

/* The file's bytes and a NUL, in .rodata (the assembler's .incbin; make
 * runs the compiler from the repo root, and rebuilds this object when the
 * file changes). */
__asm__(".section .rodata\n"
	".global v1_openapi_json\n"
	".hidden v1_openapi_json\n"
	".type v1_openapi_json, @object\n"
	".balign 16\n"
	"v1_openapi_json:\n"
	".incbin \"handlers/v1_openapi.json\"\n"
	".byte 0\n"
	".size v1_openapi_json, . - v1_openapi_json\n"
	".previous\n");
extern const char v1_openapi_json[];

/* True when the route table has op_id as a /v1 route with this method (a
 * management one, or one of the sandbox endpoint's). */
static int routed(const char *method, const char *op_id)
{
	static const char ep[] = V1_EP_PREFIX "{sandbox}/v1/";

	for (const struct route *rt = handler_routes; rt->path; rt++)
		if (rt->op_id && strcmp(rt->op_id, op_id) == 0 &&
		    strcasecmp(rt->method, method) == 0 &&
		    (strncmp(rt->path, "/v1/", 4) == 0 ||
		     strncmp(rt->path, ep, sizeof(ep) - 1) == 0))
			return 1;
	return 0;
}

/* The document with only the routed operations; built once per worker
 * (the table and the file do not change while it runs). */
static json_object *served(void)
{
	static json_object *doc;
	json_object *paths, *empty;

	if (doc)
		return doc;
	doc = json_tokener_parse(v1_openapi_json);
	if (!doc || !json_object_object_get_ex(doc, "paths", &paths)) {
		json_object_put(doc);
		doc = NULL;
		return NULL;
	}
	empty = json_object_new_array();
	json_object_object_foreach(paths, p, item)
	{
		json_object *gone = json_object_new_array();
		json_object_object_foreach(item, m, op)
		{
			json_object *id;
			if (!json_object_object_get_ex(op, "operationId", &id) ||
			    !routed(m, json_object_get_string(id)))
				json_object_array_add(gone, json_object_new_string(m));
		}
		for (size_t i = 0; i < json_object_array_length(gone); i++)
			json_object_object_del(
				item, json_object_get_string(json_object_array_get_idx(gone, i)));
		json_object_put(gone);
		if (json_object_object_length(item) == 0)
			json_object_array_add(empty, json_object_new_string(p));
	}
	for (size_t i = 0; i < json_object_array_length(empty); i++)
		json_object_object_del(paths,
				       json_object_get_string(json_object_array_get_idx(empty, i)));
	json_object_put(empty);
	return doc;
}

int h_v1_openapi(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	json_object *doc = served();

	(void)h;
	(void)in;
	if (!doc)
		return sp_err_set(e, SP_INTERNAL, "the embedded /v1 document does not parse");
	*out = json_object_get(doc);
	return 0;
}
