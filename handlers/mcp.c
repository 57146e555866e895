/*
 * POST /mcp: a Model Context Protocol server over the Streamable HTTP
 * transport (2025-06-18, 2025-03-26, 2024-11-05), stateless: JSON-RPC 2.0
 * in, one application/json answer out, 202 with no body when the message
 * needed no answer. No session ids, no SSE stream (GET /mcp is 405 through
 * the route table). The tools are the route table's procedures, named
 * after their operation ids, with schemas from openapi.c; tools/call runs
 * the same handlers_call as the REST API, with the caller's identity and
 * the tool's permission. A failing procedure is a tool result with isError,
 * never a JSON-RPC error; JSON-RPC errors are for malformed messages.
 */
#include "handlers.h"

#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "../store/store.h"

#define MCP_BODY_MAX (15u * 1024 * 1024)
#define MCP_JSON_DEPTH 32
#define MCP_BATCH_MAX 64

#define RPC_PARSE_ERROR -32700
#define RPC_INVALID_REQUEST -32600
#define RPC_METHOD_NOT_FOUND -32601
#define RPC_INVALID_PARAMS -32602
#define RPC_INTERNAL_ERROR -32603

/* Newest first: the answer to a version we do not speak. */
static const char *const protocol_versions[] = { "2025-06-18", "2025-03-26", "2024-11-05", NULL };

static const char instructions[] =
	"sandpit runs ephemeral, resource-limited Docker sandboxes. Create one with "
	"sandbox-create (template: alpine, python, ...; see sandbox-templates), run commands with "
	"sandbox-exec, move files with sandbox-writeFile / sandbox-readFile (encoding base64 for "
	"binary content), and end it with sandbox-kill or sandbox-remove. A sandbox also ends by "
	"itself after timeoutMs without activity.";

static int version_supported(const char *v)
{
	for (const char *const *p = protocol_versions; *p; p++)
		if (strcmp(*p, v) == 0)
			return 1;
	return 0;
}

/* A JSON-RPC error answer; id is borrowed (NULL = null). New object. */
static json_object *rpc_error(json_object *id, int code, const char *msg)
{
	json_object *o = json_object_new_object(), *err = json_object_new_object();

	json_object_object_add(err, "code", json_object_new_int(code));
	json_object_object_add(err, "message", json_object_new_string(msg));
	json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(o, "id", json_object_get(id));
	json_object_object_add(o, "error", err);
	return o;
}

/* A JSON-RPC result answer; id is borrowed, result is consumed. */
static json_object *rpc_result(json_object *id, json_object *result)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(o, "id", json_object_get(id));
	json_object_object_add(o, "result", result);
	return o;
}

/* The procedure behind a tool name, or NULL. */
static const struct route *tool_route(const char *name)
{
	for (const struct route *rt = handler_routes; rt->path; rt++)
		if ((rt->kind == ROUTE_QUERY || rt->kind == ROUTE_MUTATION) &&
		    route_face(rt) == &face_dokploy && strcmp(rt->op_id, name) == 0)
			return rt;
	return NULL;
}

/* structuredContent must be an object: an array answer is wrapped as
 * {"items": [...]}, any other answer that is not an object (remove's true)
 * as {"result": ...}, and so is its schema. NULL: not wrapped. */
static const char *output_wrap(const struct route *rt)
{
	json_object *s = openapi_component(rt->output, 0), *t;
	const char *w = NULL;

	if (s && json_object_object_get_ex(s, "type", &t) &&
	    strcmp(json_object_get_string(t), "object") != 0)
		w = strcmp(json_object_get_string(t), "array") == 0 ? "items" : "result";
	json_object_put(s);
	return w;
}

static json_object *output_schema(const struct route *rt)
{
	json_object *s = openapi_component(rt->output, 1), *w, *props, *req;
	const char *key = output_wrap(rt);

	if (!s || !key)
		return s;
	w = json_object_new_object();
	props = json_object_new_object();
	req = json_object_new_array();
	json_object_object_add(props, key, s);
	json_object_array_add(req, json_object_new_string(key));
	json_object_object_add(w, "type", json_object_new_string("object"));
	json_object_object_add(w, "properties", props);
	json_object_object_add(w, "required", req);
	json_object_object_add(w, "additionalProperties", json_object_new_boolean(0));
	return w;
}

static json_object *tool(const struct route *rt)
{
	json_object *t = json_object_new_object(), *ann = json_object_new_object(), *out;
	char desc[512];
	int ro = rt->kind == ROUTE_QUERY;

	snprintf(desc, sizeof(desc), "%s (%s /api%s). Needs the %s permission.", rt->summary,
		 rt->method, rt->path + (strncmp(rt->path, "/api/", 5) == 0 ? 4 : 0),
		 rt->perm ? rt->perm : "no");
	json_object_object_add(t, "name", json_object_new_string(rt->op_id));
	json_object_object_add(t, "title", json_object_new_string(rt->summary));
	json_object_object_add(t, "description", json_object_new_string(desc));
	json_object_object_add(t, "inputSchema", openapi_input_schema(rt));
	out = output_schema(rt);
	if (out)
		json_object_object_add(t, "outputSchema", out);
	json_object_object_add(ann, "title", json_object_new_string(rt->summary));
	json_object_object_add(ann, "readOnlyHint", json_object_new_boolean(ro));
	if (!ro)
		json_object_object_add(ann, "destructiveHint",
				       json_object_new_boolean(!!(rt->flags & RF_DESTRUCTIVE)));
	json_object_object_add(ann, "openWorldHint", json_object_new_boolean(0));
	json_object_object_add(t, "annotations", ann);
	return t;
}

static json_object *tools_list(void)
{
	json_object *res = json_object_new_object(), *arr = json_object_new_array();

	/* the Dokploy procedures (the /v1 operations are not tools) */
	for (const struct route *rt = handler_routes; rt->path; rt++)
		if ((rt->kind == ROUTE_QUERY || rt->kind == ROUTE_MUTATION) &&
		    route_face(rt) == &face_dokploy)
			json_object_array_add(arr, tool(rt));
	json_object_object_add(res, "tools", arr);
	return res;
}

static json_object *text_content(const char *s, size_t len)
{
	json_object *arr = json_object_new_array(), *c = json_object_new_object();

	json_object_object_add(c, "type", json_object_new_string("text"));
	json_object_object_add(c, "text", json_object_new_string_len(s, (int)len));
	json_object_array_add(arr, c);
	return arr;
}

/* tools/call: runs the tool's procedure. A procedure that fails gives a
 * result with isError and the API's message. Sets *code for a JSON-RPC
 * error (unknown tool, bad params) and returns NULL then. */
static json_object *tools_call(struct handler_ctx *h, json_object *params, int *code,
			       const char **msg)
{
	json_object *name, *args = NULL, *out = NULL, *issues = NULL, *res;
	const struct route *rt;
	struct handler_ctx tool = *h;
	struct sp_err e;

	tool.stream_ok = 0; /* the answer is built whole, inside the JSON-RPC one */
	sp_err_clear(&e);
	if (!params || !json_object_is_type(params, json_type_object) ||
	    !json_object_object_get_ex(params, "name", &name) ||
	    !json_object_is_type(name, json_type_string)) {
		*code = RPC_INVALID_PARAMS;
		*msg = "params.name (the tool) is required";
		return NULL;
	}
	rt = tool_route(json_object_get_string(name));
	if (!rt) {
		*code = RPC_INVALID_PARAMS;
		*msg = "Unknown tool";
		return NULL;
	}
	if (json_object_object_get_ex(params, "arguments", &args) && args &&
	    !json_object_is_type(args, json_type_object)) {
		*code = RPC_INVALID_PARAMS;
		*msg = "params.arguments must be an object";
		return NULL;
	}
	args = args ? json_object_get(args) : json_object_new_object();
	log_info("mcp tools/call %s", rt->op_id);
	res = json_object_new_object();
	if (handlers_call(&tool, rt, args, 0, &out, &issues, &e) < 0) {
		if (e.code == SP_OK)
			sp_err_set(&e, SP_INTERNAL, "Internal error");
		json_object_object_add(res, "content", text_content(e.msg, strlen(e.msg)));
		json_object_object_add(res, "isError", json_object_new_boolean(1));
	} else {
		size_t len = 0;
		const char *text = json_object_to_json_string_length(
			out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
		json_object_object_add(res, "content", text_content(text, len));
		if (!json_object_is_type(out, json_type_object)) {
			json_object *w = json_object_new_object();
			json_object_object_add(
				w, json_object_is_type(out, json_type_array) ? "items" : "result",
				json_object_get(out));
			json_object_object_add(res, "structuredContent", w);
		} else {
			json_object_object_add(res, "structuredContent", json_object_get(out));
		}
		json_object_object_add(res, "isError", json_object_new_boolean(0));
	}
	json_object_put(args);
	json_object_put(out);
	json_object_put(issues);
	return res;
}

static json_object *initialize(json_object *params, int *code, const char **msg)
{
	json_object *res, *caps, *info, *v;
	const char *want;

	if (!params || !json_object_object_get_ex(params, "protocolVersion", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		*code = RPC_INVALID_PARAMS;
		*msg = "params.protocolVersion is required";
		return NULL;
	}
	want = json_object_get_string(v);
	res = json_object_new_object();
	caps = json_object_new_object();
	info = json_object_new_object();
	json_object_object_add(
		res, "protocolVersion",
		json_object_new_string(version_supported(want) ? want : protocol_versions[0]));
	json_object_object_add(caps, "tools", json_object_new_object());
	json_object_object_add(res, "capabilities", caps);
	json_object_object_add(info, "name", json_object_new_string("sandpit"));
	json_object_object_add(info, "title", json_object_new_string("sandpit sandboxes"));
	json_object_object_add(info, "version", json_object_new_string(SANDPIT_API_VERSION));
	json_object_object_add(res, "serverInfo", info);
	json_object_object_add(res, "instructions", json_object_new_string(instructions));
	return res;
}

/* One JSON-RPC message. Returns its answer (new object), or NULL when it
 * needs none (a notification, or a client's response). *invalid is set
 * when the message is no JSON-RPC message at all. */
static json_object *handle_message(struct handler_ctx *h, json_object *m, int *invalid)
{
	json_object *jv, *method, *id = NULL, *params = NULL, *res = NULL;
	const char *name, *msg = "Invalid params";
	int has_id, code = 0;

	if (!json_object_is_type(m, json_type_object) ||
	    !json_object_object_get_ex(m, "jsonrpc", &jv) ||
	    !json_object_is_type(jv, json_type_string) ||
	    strcmp(json_object_get_string(jv), "2.0") != 0) {
		*invalid = 1;
		return rpc_error(NULL, RPC_INVALID_REQUEST,
				 "Invalid Request: not a JSON-RPC 2.0 message");
	}
	has_id = json_object_object_get_ex(m, "id", &id);
	if (!json_object_object_get_ex(m, "method", &method)) {
		/* a response to a request of ours: we send none, so ignore it */
		if (has_id && (json_object_object_get_ex(m, "result", NULL) ||
			       json_object_object_get_ex(m, "error", NULL)))
			return NULL;
		*invalid = 1;
		return rpc_error(NULL, RPC_INVALID_REQUEST, "Invalid Request: no method");
	}
	if (!json_object_is_type(method, json_type_string) ||
	    (has_id && !json_object_is_type(id, json_type_string) &&
	     !json_object_is_type(id, json_type_int))) {
		*invalid = 1;
		return rpc_error(NULL, RPC_INVALID_REQUEST,
				 "Invalid Request: method must be a string, id a string or number");
	}
	name = json_object_get_string(method);
	if (json_object_object_get_ex(m, "params", &params) && params &&
	    !json_object_is_type(params, json_type_object) &&
	    !json_object_is_type(params, json_type_array)) {
		if (!has_id)
			return NULL;
		return rpc_error(id, RPC_INVALID_REQUEST, "Invalid Request: bad params");
	}
	if (!has_id)
		return NULL; /* notifications/initialized, cancelled, ...: nothing to do */
	if (strcmp(name, "initialize") == 0)
		res = initialize(params, &code, &msg);
	else if (strcmp(name, "ping") == 0)
		res = json_object_new_object();
	else if (strcmp(name, "tools/list") == 0)
		res = tools_list();
	else if (strcmp(name, "tools/call") == 0)
		res = tools_call(h, params, &code, &msg);
	else
		return rpc_error(id, RPC_METHOD_NOT_FOUND, "Method not found");
	if (!res)
		return rpc_error(id, code, msg);
	return rpc_result(id, res);
}

static void send_accepted(struct req *r)
{
	static const char head[] = "Status: 202 Accepted\r\nContent-Length: 0\r\n"
				   "Cache-Control: no-store\r\n\r\n";

	r->status = 202;
	FCGX_PutStr(head, (int)sizeof(head) - 1, r->fx->out);
}

/* Answers a transport-level failure: status with a JSON-RPC error, id null. */
static int send_rpc_error(struct req *r, int status, int code, const char *msg)
{
	json_object *o = rpc_error(NULL, code, msg);

	req_send_json(r, status, NULL, o);
	json_object_put(o);
	return 0;
}

/* 1 when m is a tools/call that runs (a request: it has an id). */
static int is_tool_call(json_object *m)
{
	json_object *v;

	return json_object_is_type(m, json_type_object) &&
	       json_object_object_get_ex(m, "method", &v) &&
	       json_object_is_type(v, json_type_string) &&
	       strcmp(json_object_get_string(v), "tools/call") == 0 &&
	       json_object_object_get_ex(m, "id", NULL);
}

/* Each tool call counts against the key's rate, not each HTTP request:
 * nginx charged this request once; the key's tool calls are charged here,
 * all of a batch at once, against a bucket in Redis of the same rate and
 * burst (rate_per_min, rate_burst). A batch holding more calls than the key
 * may still spend runs none of them: 429 with Retry-After. Returns 0 to go
 * on, 1 when it answered. */
static int charge_calls(struct handler_ctx *h, json_object *msg)
{
	struct req *r = h->r;
	size_t calls = 0;
	int64_t retry_ms = 0;
	struct sp_err e;
	char hdr[64];
	int rc;

	if (json_object_is_type(msg, json_type_array)) {
		if (json_object_array_length(msg) > MCP_BATCH_MAX)
			return 0; /* refused whole as too large, uncharged */
		for (size_t i = 0; i < json_object_array_length(msg); i++)
			calls += (size_t)is_tool_call(json_object_array_get_idx(msg, i));
	} else {
		calls = (size_t)is_tool_call(msg);
	}
	if (calls == 0 || h->cfg->rate_per_min <= 0)
		return 0;
	sp_err_clear(&e);
	rc = store_rate_take(h->sb->st, r->key_id && *r->key_id ? r->key_id : "-", (int)calls,
			     h->cfg->rate_per_min, h->cfg->rate_burst, &retry_ms, &e);
	if (rc == 1)
		return 0;
	if (rc < 0) {
		send_rpc_error(r, 503, RPC_INTERNAL_ERROR, "Rate limit store unavailable; retry");
		return 1;
	}
	snprintf(hdr, sizeof(hdr), "Retry-After: %lld\r\n", (long long)(retry_ms + 999) / 1000);
	{
		json_object *o = rpc_error(NULL, RPC_INVALID_REQUEST,
					   "Too many tool calls for this API key (each call of a "
					   "batch counts); retry later");
		req_send_json(r, 429, hdr, o);
		json_object_put(o);
	}
	log_info("mcp: %zu tool calls refused by the key's rate", calls);
	return 1;
}

int h_mcp(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct req *r = h->r;
	const char *pv = req_param(r, "HTTP_MCP_PROTOCOL_VERSION");
	struct json_tokener *tok;
	json_object *msg, *answer = NULL;
	int invalid = 0;

	(void)in;
	(void)out;
	if (*pv && !version_supported(pv))
		return send_rpc_error(r, 400, RPC_INVALID_REQUEST,
				      "Unsupported MCP-Protocol-Version");
	if (req_read_body(r, MCP_BODY_MAX, e) < 0)
		return send_rpc_error(r, face_status(&face_dokploy, e->code), RPC_INVALID_REQUEST,
				      e->msg);
	tok = json_tokener_new_ex(MCP_JSON_DEPTH);
	if (!tok)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	msg = json_tokener_parse_ex(tok, r->body.data ? r->body.data : "", (int)r->body.len);
	if (!msg || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != r->body.len) {
		json_object_put(msg);
		json_tokener_free(tok);
		return send_rpc_error(r, 400, RPC_PARSE_ERROR, "Parse error");
	}
	json_tokener_free(tok);
	if (charge_calls(h, msg)) {
		json_object_put(msg);
		return 0;
	}
	if (json_object_is_type(msg, json_type_array)) {
		size_t n = json_object_array_length(msg);
		if (n == 0 || n > MCP_BATCH_MAX) {
			json_object_put(msg);
			return send_rpc_error(r, 400, RPC_INVALID_REQUEST,
					      n ? "Invalid Request: batch too large"
						: "Invalid Request: empty batch");
		}
		answer = json_object_new_array();
		for (size_t i = 0; i < n; i++) {
			json_object *a =
				handle_message(h, json_object_array_get_idx(msg, i), &invalid);
			if (a)
				json_object_array_add(answer, a);
		}
		invalid = 0; /* a batch answers each bad member in place */
		if (json_object_array_length(answer) == 0) {
			json_object_put(answer);
			answer = NULL;
		}
	} else {
		answer = handle_message(h, msg, &invalid);
	}
	if (answer)
		req_send_json(r, invalid ? 400 : 200, NULL, answer);
	else
		send_accepted(r);
	json_object_put(answer);
	json_object_put(msg);
	return 0;
}
