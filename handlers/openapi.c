/*
 * GET /openapi.json: the OpenAPI 3.1 document, generated from the route
 * table at run time so it cannot drift from what the server checks. Input
 * schemas come from each route's field specs; answer schemas are the
 * components below, one per shape the handlers build (dk_sandbox_json,
 * exec, files, templates, remove) and the one error shape. mcp.c takes its
 * tool schemas from here too. When a handler's answer changes, change its
 * component here: tests/api/openapi.test.mjs validates real answers against
 * these schemas. Never lists a route that is not a procedure.
 */
#include "handlers.h"

#include <stdio.h>
#include <string.h>

#define OPENAPI_TITLE "sandpit"

/* The component schemas, as JSON text (JSON Schema 2020-12). Every object
 * is closed (additionalProperties false) so that a field added to a handler
 * but not here fails the schema tests. */
static const struct component {
	const char *name;
	const char *json;
} components[] = {
	{ "Sandbox",
	  "{\"type\":\"object\",\"description\":\"A sandbox record (envVars is never returned)\","
	  "\"additionalProperties\":false,"
	  "\"required\":[\"sandboxId\",\"name\",\"organizationId\",\"serverId\",\"image\","
	  "\"template\",\"containerId\",\"status\",\"cpu\",\"memoryMb\",\"pidsLimit\",\"diskMb\",\"timeoutMs\","
	  "\"maxLifetimeMs\",\"networkMode\",\"workdir\",\"user\",\"runtime\",\"createdAt\","
	  "\"expiresAt\",\"deadlineAt\",\"lastActivityAt\",\"killedAt\",\"errorMessage\"],"
	  "\"properties\":{"
	  "\"sandboxId\":{\"type\":\"string\"},"
	  "\"name\":{\"type\":[\"string\",\"null\"]},"
	  "\"organizationId\":{\"type\":\"string\"},"
	  "\"serverId\":{\"type\":[\"string\",\"null\"],\"description\":\"null: the local server\"},"
	  "\"image\":{\"type\":\"string\"},"
	  "\"template\":{\"type\":[\"string\",\"null\"]},"
	  "\"containerId\":{\"type\":[\"string\",\"null\"]},"
	  "\"status\":{\"type\":\"string\",\"enum\":[\"creating\",\"running\",\"killed\",\"error\",\"stopped\",\"stopping\"],"
	  "\"description\":\"stopped and stopping (sandpit extensions): paused through /v1 "
	  "stopSandbox, processes and memory kept; commands and files are refused with 412 until "
	  "it is started\"},"
	  "\"cpu\":{\"type\":\"number\"},"
	  "\"memoryMb\":{\"type\":\"integer\"},"
	  "\"pidsLimit\":{\"type\":\"integer\"},"
	  "\"diskMb\":{\"type\":\"integer\",\"description\":\"The disk limit in force in MiB "
	  "(workdir bytes and inodes); 0: the server cannot limit disk\"},"
	  "\"timeoutMs\":{\"type\":\"integer\",\"description\":\"Inactivity timeout in ms\"},"
	  "\"maxLifetimeMs\":{\"type\":\"integer\"},"
	  "\"networkMode\":{\"type\":\"string\",\"enum\":[\"isolated\",\"internet\"]},"
	  "\"workdir\":{\"type\":\"string\"},"
	  "\"user\":{\"type\":[\"string\",\"null\"],\"description\":\"uid:gid, or null for the "
	  "image's default user\"},"
	  "\"runtime\":{\"type\":\"string\"},"
	  "\"createdAt\":{\"type\":[\"string\",\"null\"],\"format\":\"date-time\"},"
	  "\"expiresAt\":{\"type\":[\"string\",\"null\"],\"format\":\"date-time\","
	  "\"description\":\"When the inactivity timeout ends it (never past deadlineAt)\"},"
	  "\"deadlineAt\":{\"type\":[\"string\",\"null\"],\"format\":\"date-time\","
	  "\"description\":\"Hard end of life\"},"
	  "\"lastActivityAt\":{\"type\":[\"string\",\"null\"],\"format\":\"date-time\"},"
	  "\"killedAt\":{\"type\":[\"string\",\"null\"],\"format\":\"date-time\"},"
	  "\"errorMessage\":{\"type\":[\"string\",\"null\"]},"
	  "\"createdByKey\":{\"type\":[\"string\",\"null\"],\"description\":\"The id of the "
	  "API key that created it (sandpit extension); null if unknown\"}}}" },
	{ "SandboxList", "{\"type\":\"array\",\"description\":\"The organization's sandboxes\","
			 "\"items\":{\"$ref\":\"#/components/schemas/Sandbox\"}}" },
	{ "Templates",
	  "{\"type\":\"array\",\"description\":\"The built-in templates\",\"items\":{"
	  "\"type\":\"object\",\"additionalProperties\":false,"
	  "\"required\":[\"name\",\"image\",\"user\",\"workdir\",\"description\",\"env\"],"
	  "\"properties\":{"
	  "\"name\":{\"type\":\"string\"},\"image\":{\"type\":\"string\"},"
	  "\"user\":{\"type\":\"string\"},\"workdir\":{\"type\":\"string\"},"
	  "\"description\":{\"type\":\"string\"},"
	  "\"version\":{\"type\":[\"string\",\"null\"],\"description\":\"The language "
	  "version the image really has (its sandpit.version label, or the upstream image's "
	  "*_VERSION variable); null when unknown or the image is not on the local Docker\"},"
	  "\"imagePresent\":{\"type\":[\"boolean\",\"null\"],\"description\":\"The image "
	  "is on the local Docker (false: a create pulls it); null when Docker cannot be "
	  "asked\"},"
	  "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}}}}" },
	{ "ExecResult",
	  "{\"type\":\"object\",\"additionalProperties\":false,"
	  "\"required\":[\"stdout\",\"stderr\",\"exitCode\",\"timedOut\",\"truncated\"],"
	  "\"properties\":{"
	  "\"stdout\":{\"type\":\"string\",\"description\":\"At most 1 MiB; invalid UTF-8 becomes "
	  "U+FFFD\"},"
	  "\"stderr\":{\"type\":\"string\",\"description\":\"At most 1 MiB\"},"
	  "\"exitCode\":{\"type\":\"integer\",\"description\":\"124 when timed out\"},"
	  "\"timedOut\":{\"type\":\"boolean\"},"
	  "\"truncated\":{\"type\":\"boolean\",\"description\":\"A stream was cut at 1 MiB\"}}}" },
	{ "WriteFileResult",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"path\",\"size\"],"
	  "\"properties\":{\"path\":{\"type\":\"string\"},"
	  "\"size\":{\"type\":\"integer\",\"description\":\"Bytes written\"}}}" },
	{ "ReadFileResult",
	  "{\"type\":\"object\",\"additionalProperties\":false,"
	  "\"required\":[\"path\",\"size\",\"encoding\",\"content\"],\"properties\":{"
	  "\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\",\"description\":\"Bytes\"},"
	  "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf8\",\"base64\"]},"
	  "\"content\":{\"type\":\"string\"}}}" },
	{ "ListFilesResult",
	  "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"path\",\"entries\"],"
	  "\"properties\":{\"path\":{\"type\":\"string\"},\"entries\":{\"type\":\"array\","
	  "\"description\":\"Directories first, then by name; size, mode and modifiedAt are null "
	  "where the image's find has no -printf (busybox)\",\"items\":{"
	  "\"type\":\"object\",\"additionalProperties\":false,"
	  "\"required\":[\"name\",\"type\",\"size\",\"mode\",\"modifiedAt\"],\"properties\":{"
	  "\"name\":{\"type\":\"string\"},"
	  "\"type\":{\"type\":\"string\",\"enum\":[\"file\",\"directory\",\"symlink\",\"other\"]},"
	  "\"size\":{\"type\":[\"integer\",\"null\"]},"
	  "\"mode\":{\"type\":[\"string\",\"null\"],\"description\":\"Octal, e.g. 644\"},"
	  "\"modifiedAt\":{\"type\":[\"string\",\"null\"],\"format\":\"date-time\"}}}}}}" },
	{ "RemoveResult",
	  "{\"type\":\"boolean\",\"const\":true,\"description\":\"true once the record is "
	  "deleted (as Dokploy answers)\"}" },
	{ "Error",
	  "{\"type\":\"object\",\"description\":\"Every error answer\","
	  "\"required\":[\"message\",\"code\"],\"additionalProperties\":false,\"properties\":{"
	  "\"message\":{\"type\":\"string\",\"description\":\"Safe to show a person\"},"
	  "\"code\":{\"type\":\"string\",\"description\":\"tRPC-style code: BAD_REQUEST, "
	  "UNAUTHORIZED, FORBIDDEN, NOT_FOUND, PRECONDITION_FAILED, PAYLOAD_TOO_LARGE, "
	  "UNPROCESSABLE_CONTENT, TOO_MANY_REQUESTS, QUOTA_EXCEEDED, INTERNAL_SERVER_ERROR, "
	  "SERVICE_UNAVAILABLE, "
	  "...\"},"
	  "\"issues\":{\"type\":\"array\",\"description\":\"Field-level problems\",\"items\":{"
	  "\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"path\",\"message\"],"
	  "\"properties\":{\"code\":{\"type\":\"string\"},"
	  "\"path\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
	  "\"message\":{\"type\":\"string\"}}}}}}" },
	{ NULL, NULL },
};

/* The error answers every procedure documents. */
static const struct {
	const char *status, *name, *desc;
} error_responses[] = {
	{ "400", "BadRequest", "Invalid input: issues names the fields" },
	{ "401", "Unauthorized", "Missing or invalid API key" },
	{ "403", "Forbidden",
	  "The key's role lacks the permission, or the sandbox is not the "
	  "organization's" },
	{ "404", "NotFound", "No such sandbox, file or directory" },
	{ "412", "PreconditionFailed",
	  "The sandbox is not running (\"Sandbox is killed\", \"Sandbox is stopped\")" },
	{ "413", "PayloadTooLarge", "A file or body over its limit" },
	{ "422", "UnprocessableContent", "The content cannot be returned as asked (not UTF-8)" },
	{ "429", "TooManyRequests",
	  "TOO_MANY_REQUESTS: over the key's request rate (Retry-After says when to "
	  "retry); QUOTA_EXCEEDED: the organization's sandbox, CPU or memory quota is "
	  "full (no Retry-After: kill or remove a sandbox first)" },
	{ "500", "InternalServerError", "An internal error" },
	{ "503", "ServiceUnavailable", "Redis, Docker or the auth service is unavailable" },
};

/* The texts are constants of this file: a typo shows as a missing schema,
 * which the unit and OpenAPI tests catch. New object or NULL. */
static json_object *parse_text(const char *text)
{
	return json_tokener_parse(text);
}

static json_object *find_component(const char *name)
{
	for (const struct component *c = components; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return parse_text(c->json);
	return NULL;
}

/* Replaces, in place, every {"$ref":"#/components/schemas/X"} below o with
 * a copy of X (inlined in turn). depth bounds a cycle. */
static void inline_refs(json_object *o, int depth)
{
	static const char prefix[] = "#/components/schemas/";

	if (depth > 8)
		return;
	if (json_object_is_type(o, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(o); i++)
			inline_refs(json_object_array_get_idx(o, i), depth);
		return;
	}
	if (!json_object_is_type(o, json_type_object))
		return;
	json_object_object_foreach(o, key, val)
	{
		json_object *ref;
		if (json_object_is_type(val, json_type_object) &&
		    json_object_object_get_ex(val, "$ref", &ref) &&
		    strncmp(json_object_get_string(ref), prefix, sizeof(prefix) - 1) == 0) {
			json_object *c =
				find_component(json_object_get_string(ref) + sizeof(prefix) - 1);
			if (c) {
				inline_refs(c, depth + 1);
				json_object_object_add(o, key, c);
			}
			continue;
		}
		inline_refs(val, depth);
	}
}

json_object *openapi_component(const char *name, int inline_all)
{
	json_object *c = find_component(name);

	if (c && inline_all)
		inline_refs(c, 0);
	return c;
}

/* The JSON Schema of one field, from its spec. New object. */
static json_object *field_schema(const struct field_spec *f)
{
	json_object *s = json_object_new_object();
	const char *type = "string";

	switch (f->type) {
	case FT_STRING:
		if (f->min > 0)
			json_object_object_add(s, "minLength", json_object_new_int64(f->min));
		if (f->max)
			json_object_object_add(s, "maxLength", json_object_new_int64(f->max));
		break;
	case FT_ID:
		json_object_object_add(s, "minLength",
				       json_object_new_int64(f->min > 0 ? f->min : 1));
		if (f->max)
			json_object_object_add(s, "maxLength", json_object_new_int64(f->max));
		json_object_object_add(s, "pattern", json_object_new_string("^[A-Za-z0-9_-]+$"));
		break;
	case FT_ABSPATH:
		json_object_object_add(s, "minLength", json_object_new_int(1));
		json_object_object_add(s, "maxLength", json_object_new_int(4096));
		json_object_object_add(s, "pattern", json_object_new_string("^/"));
		break;
	case FT_ENUM: {
		json_object *e = json_object_new_array();
		for (const char *const *c = f->choices; c && *c; c++)
			json_object_array_add(e, json_object_new_string(*c));
		if (f->flags & FF_NULLABLE)
			json_object_array_add(e, NULL);
		json_object_object_add(s, "enum", e);
		break;
	}
	case FT_INT:
		type = "integer";
		json_object_object_add(s, "minimum", json_object_new_int64(f->min));
		json_object_object_add(s, "maximum", json_object_new_int64(f->max));
		break;
	case FT_NUMBER:
		type = "number";
		json_object_object_add(s, "minimum", json_object_new_double(f->dmin));
		json_object_object_add(s, "maximum", json_object_new_double(f->dmax));
		break;
	case FT_BOOL:
		type = "boolean";
		break;
	case FT_ENVMAP: {
		json_object *names = json_object_new_object(), *vals = json_object_new_object();
		type = "object";
		json_object_object_add(names, "pattern",
				       json_object_new_string("^[A-Za-z_][A-Za-z0-9_]*$"));
		json_object_object_add(vals, "type", json_object_new_string("string"));
		json_object_object_add(s, "propertyNames", names);
		json_object_object_add(s, "additionalProperties", vals);
		json_object_object_add(s, "maxProperties", json_object_new_int(256));
		break;
	}
	case FT_PATHLIST: /* /v1 only, as FT_JSON */
	case FT_OBJECT:
	case FT_JSON: /* /v1 only: its document is the seed's, not this one */
		type = "object";
		break;
	}
	if (f->flags & FF_NULLABLE) {
		json_object *t = json_object_new_array();
		json_object_array_add(t, json_object_new_string(type));
		json_object_array_add(t, json_object_new_string("null"));
		json_object_object_add(s, "type", t);
	} else {
		json_object_object_add(s, "type", json_object_new_string(type));
	}
	if (f->def) {
		json_object *d = json_tokener_parse(f->def);
		if (d)
			json_object_object_add(s, "default", d);
	}
	if (f->desc) {
		char buf[512];
		const char *desc = f->desc;
		if (f->type == FT_ABSPATH) {
			snprintf(buf, sizeof(buf), "%s (absolute, at most 4096 bytes)", f->desc);
			desc = buf;
		}
		json_object_object_add(s, "description", json_object_new_string(desc));
	}
	return s;
}

json_object *openapi_input_schema(const struct route *rt)
{
	json_object *s = json_object_new_object(), *props = json_object_new_object(),
		    *req = json_object_new_array();

	json_object_object_add(s, "type", json_object_new_string("object"));
	for (const struct field_spec *f = rt->fields; f && f->name; f++) {
		json_object_object_add(props, f->name, field_schema(f));
		if (f->flags & FF_REQUIRED)
			json_object_array_add(req, json_object_new_string(f->name));
	}
	json_object_object_add(s, "properties", props);
	if (json_object_array_length(req))
		json_object_object_add(s, "required", req);
	else
		json_object_put(req);
	json_object_object_add(s, "additionalProperties", json_object_new_boolean(0));
	return s;
}

static json_object *ref(const char *kind, const char *name)
{
	char buf[160];
	json_object *o = json_object_new_object();

	snprintf(buf, sizeof(buf), "#/components/%s/%s", kind, name);
	json_object_object_add(o, "$ref", json_object_new_string(buf));
	return o;
}

static json_object *json_content(json_object *schema)
{
	json_object *c = json_object_new_object(), *mt = json_object_new_object();

	json_object_object_add(mt, "schema", schema);
	json_object_object_add(c, "application/json", mt);
	return c;
}

static json_object *operation(const struct route *rt)
{
	json_object *op = json_object_new_object(), *tags = json_object_new_array(),
		    *resp = json_object_new_object(), *ok = json_object_new_object();
	char desc[256];

	json_object_array_add(tags, json_object_new_string("sandbox"));
	json_object_object_add(op, "operationId", json_object_new_string(rt->op_id));
	json_object_object_add(op, "summary", json_object_new_string(rt->summary));
	snprintf(desc, sizeof(desc), "%s. Needs the %s permission.", rt->summary,
		 rt->perm ? rt->perm : "no");
	json_object_object_add(op, "description", json_object_new_string(desc));
	json_object_object_add(op, "tags", tags);
	if (rt->kind == ROUTE_QUERY) {
		json_object *params = json_object_new_array();
		for (const struct field_spec *f = rt->fields; f && f->name; f++) {
			json_object *p = json_object_new_object(), *s = field_schema(f), *d;
			json_object_object_add(p, "name", json_object_new_string(f->name));
			json_object_object_add(p, "in", json_object_new_string("query"));
			json_object_object_add(p, "required",
					       json_object_new_boolean(!!(f->flags & FF_REQUIRED)));
			if (json_object_object_get_ex(s, "description", &d))
				json_object_object_add(p, "description", json_object_get(d));
			json_object_object_add(p, "schema", s);
			json_object_array_add(params, p);
		}
		if (json_object_array_length(params))
			json_object_object_add(op, "parameters", params);
		else
			json_object_put(params);
	} else {
		json_object *body = json_object_new_object();
		json_object_object_add(body, "required", json_object_new_boolean(1));
		json_object_object_add(body, "content", json_content(openapi_input_schema(rt)));
		json_object_object_add(op, "requestBody", body);
	}
	json_object_object_add(ok, "description", json_object_new_string("OK"));
	json_object_object_add(ok, "content", json_content(ref("schemas", rt->output)));
	json_object_object_add(resp, "200", ok);
	for (size_t i = 0; i < sizeof(error_responses) / sizeof(error_responses[0]); i++)
		json_object_object_add(resp, error_responses[i].status,
				       ref("responses", error_responses[i].name));
	json_object_object_add(op, "responses", resp);
	return op;
}

json_object *openapi_document(void)
{
	json_object *doc = json_object_new_object(), *info = json_object_new_object(),
		    *servers = json_object_new_array(), *server = json_object_new_object(),
		    *paths = json_object_new_object(), *comp = json_object_new_object(),
		    *schemas = json_object_new_object(), *responses = json_object_new_object(),
		    *schemes = json_object_new_object(), *key = json_object_new_object(),
		    *security = json_object_new_array(), *sec = json_object_new_object(),
		    *tags = json_object_new_array(), *tag = json_object_new_object();

	json_object_object_add(doc, "openapi", json_object_new_string("3.1.0"));
	json_object_object_add(info, "title", json_object_new_string(OPENAPI_TITLE));
	json_object_object_add(info, "version", json_object_new_string(SANDPIT_API_VERSION));
	json_object_object_add(
		info, "description",
		json_object_new_string(
			"Ephemeral, resource-limited Docker sandboxes for AI agents: "
			"the Dokploy-compatible sandbox procedures. Queries are GET "
			"with query-string parameters, mutations POST with a JSON "
			"body. Generated from the server's route table."));
	json_object_object_add(doc, "info", info);
	json_object_object_add(server, "url", json_object_new_string("/api"));
	json_object_object_add(server, "description",
			       json_object_new_string("The procedures, on this server"));
	json_object_array_add(servers, server);
	json_object_object_add(doc, "servers", servers);
	json_object_object_add(tag, "name", json_object_new_string("sandbox"));
	json_object_object_add(tag, "description",
			       json_object_new_string("Sandboxes: lifecycle, commands, files"));
	json_object_array_add(tags, tag);
	json_object_object_add(doc, "tags", tags);
	json_object_object_add(sec, "apiKey", json_object_new_array());
	json_object_array_add(security, sec);
	json_object_object_add(doc, "security", security);

	for (const struct route *rt = handler_routes; rt->path; rt++) {
		json_object *item;
		char path[160];
		if ((rt->kind != ROUTE_QUERY && rt->kind != ROUTE_MUTATION) ||
		    route_face(rt) != &face_dokploy)
			continue; /* /v1's operations are the seed document's */
		item = json_object_new_object();
		/* the server url is /api */
		snprintf(path, sizeof(path), "%s",
			 strncmp(rt->path, "/api/", 5) == 0 ? rt->path + 4 : rt->path);
		json_object_object_add(item, rt->kind == ROUTE_QUERY ? "get" : "post",
				       operation(rt));
		json_object_object_add(paths, path, item);
	}
	json_object_object_add(doc, "paths", paths);

	for (const struct component *c = components; c->name; c++) {
		json_object *s = parse_text(c->json);
		if (s)
			json_object_object_add(schemas, c->name, s);
	}
	for (size_t i = 0; i < sizeof(error_responses) / sizeof(error_responses[0]); i++) {
		json_object *r = json_object_new_object();
		json_object_object_add(r, "description",
				       json_object_new_string(error_responses[i].desc));
		json_object_object_add(r, "content", json_content(ref("schemas", "Error")));
		json_object_object_add(responses, error_responses[i].name, r);
	}
	json_object_object_add(key, "type", json_object_new_string("apiKey"));
	json_object_object_add(key, "in", json_object_new_string("header"));
	json_object_object_add(key, "name", json_object_new_string("x-api-key"));
	json_object_object_add(key, "description",
			       json_object_new_string("An API key (sandpit keys create)"));
	json_object_object_add(schemes, "apiKey", key);
	json_object_object_add(comp, "schemas", schemas);
	json_object_object_add(comp, "responses", responses);
	json_object_object_add(comp, "securitySchemes", schemes);
	json_object_object_add(doc, "components", comp);
	return doc;
}

int h_openapi(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	(void)h;
	(void)in;
	*out = openapi_document();
	if (!*out)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	return 0;
}
