/*
 * The handlers: one file per API resource, each turning validated input
 * into a core call and the core's answer into JSON. The route table
 * (routes.c) lists them all; dispatch.c runs one request through it.
 * Handlers never call libcurl or hiredis directly.
 */
#ifndef SANDPIT_HANDLERS_H
#define SANDPIT_HANDLERS_H

#include <stddef.h>
#include <stdint.h>

#include "../common/perms.h"
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
	int status;    /* a handler's own success status (202: work in progress); 0 = the route's */
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
/* The Sandbox as getSandbox answers it: v1_sandbox_json with
 * core.endpoint and core.environment. NULL with e set. New object. */
/* A /v1 resource's strong ETag (v1_conv.c): the keyed hash over kind and
 * data (v1_etag_of), or over the rendering o as it is (v1_etag). */
#define V1_ETAG_MAX 27 /* a quoted 24 hex digits and the NUL */
void v1_etag_of(const struct config *cfg, const char *kind, const char *data, size_t len,
		char out[V1_ETAG_MAX]);
void v1_etag(const struct config *cfg, const char *kind, json_object *o, char out[V1_ETAG_MAX]);
/* If-Match (want, NULL when absent) against the current ETag: 0 when it
 * is, else a 412 etag_mismatch naming what, carrying current (the face's
 * EtagMismatch detail). */
int v1_if_match(const char *want, const char *current, const char *what, struct sp_err *e);
/* The renderings every /v1 resource shares (v1_conv.c): a time (RFC 3339
 * with milliseconds), an int64 (a decimal string, the document's format:
 * int64), "etag" added to o (v1_etag of o as it is; also into tag when
 * not NULL), and this host's OCI architecture (amd64, arm64, ...). */
json_object *v1_time_json(int64_t ms);
json_object *v1_int64_json(int64_t v);
void v1_add_etag(const struct config *cfg, const char *kind, json_object *o, char tag[V1_ETAG_MAX]);
const char *v1_host_arch(void);
/* A /v1 list's filter (v1_conv.c): comma-separated exact field=value
 * terms over the names in fields (NULL-terminated, at most
 * V1_FILTER_FIELDS), each at most once; spaces around a term and the
 * double quotes around a value are dropped. val[i] is fields[i]'s value,
 * NULL when not given. Anything else is a 400 naming filter. */
#define V1_FILTER_FIELDS 8
struct v1_filter {
	char text[2100];
	const char *val[V1_FILTER_FIELDS];
};
int v1_filter_parse(const char *s, const char *const *fields, struct v1_filter *f,
		    struct sp_err *e);
/* True when field i was not given or is v. */
int v1_filter_is(const struct v1_filter *f, int i, const char *v);
/* The pages of the /v1 lists (v1_conv.c). V1_PAGE_TOKEN_MAX: the longest
 * token, for a cursor of up to V1_PAGE_CURSOR_MAX bytes. */
#define V1_PAGE_CURSOR_MAX 96
#define V1_PAGE_TOKEN_MAX (2 * V1_PAGE_CURSOR_MAX + 33)
/* pageSize: dflt when absent or 0, at most max. */
size_t v1_page_size(json_object *in, size_t dflt, size_t max);
/* The nextPageToken of op's list whose next page starts at cursor; scope
 * is what the call asked for (filter, order, sandbox, path). out holds
 * V1_PAGE_TOKEN_MAX + 1. */
void v1_page_token(const struct handler_ctx *h, const char *op, const char *scope,
		   const char *cursor, char *out, size_t cap);
/* The cursor in in's pageToken ("" when none); a token op's list did not
 * give with this org and scope, or an edited one, is a 400 naming
 * pageToken. cursor holds V1_PAGE_CURSOR_MAX + 1. */
int v1_page_cursor(const struct handler_ctx *h, json_object *in, const char *op, const char *scope,
		   char *cursor, size_t cap, struct sp_err *e);
/* Offset paging over a whole list: the offset pageToken names (0 when
 * none); and the page of all (taken) from off under key, with its
 * nextPageToken, as a new object. */
int v1_page_offset(const struct handler_ctx *h, json_object *in, const char *op, const char *scope,
		   size_t *off, struct sp_err *e);
json_object *v1_page_slice(const struct handler_ctx *h, json_object *in, const char *op,
			   const char *scope, size_t off, size_t dflt, size_t max, json_object *all,
			   const char *key);
json_object *v1_render(struct handler_ctx *h, const struct sandbox *sb, struct sp_err *e);
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
/* A Duration (^-?\d+(\.\d{1,9})?s$) in ms, rounded up; -1 when it is not
 * one, -2 when it is a negative one. */
int64_t v1_duration_ms(const char *s);

/* handlers/v1_snapshots.c: snapshots and images (issue 17). */
int v1_snapshots_create(struct handler_ctx *h, json_object *in, json_object **out,
			struct sp_err *e);
int v1_snapshots_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_snapshots_get(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_snapshots_delete(struct handler_ctx *h, json_object *in, json_object **out,
			struct sp_err *e);
int v1_snapshots_restore(struct handler_ctx *h, json_object *in, json_object **out,
			 struct sp_err *e);
int v1_images_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_images_get(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_images_delete(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_images_create(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_images_pull_spec(struct handler_ctx *h, json_object *in, json_object **out,
			struct sp_err *e);
/* handlers/v1_volumes.c: the /v1 volume operations (sandbox/volume.c). */
int v1_volumes_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_volumes_create(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_volumes_get(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_volumes_delete(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);

/* handlers/v1_endpoint.c: the sandbox endpoint (the document's data plane,
 * served at <origin>/endpoints/<uid>) and its credentials. */
#define V1_EP_PREFIX "/endpoints/"
#define V1_EP_TTL_MIN_MS 1000
#define V1_EP_TTL_MAX_MS 300000 /* the document's defaultTtl = maxTtl = 300s */
#define V1_EP_TOKEN_MAX 512
#define V1_EP_ORIGIN_MAX 300 /* public_url (at most 200) or scheme://Host (Host at most 255) */
/* The endpoint permissions a credential can carry, as bits. */
#define V1_EP_EXEC 1u
#define V1_EP_FILES_READ 2u
#define V1_EP_FILES_WRITE 4u
/* What a credential says (its MAC covers these and the audience). */
struct v1_ep_claims {
	char org[65];
	char sandbox[65];
	unsigned perms; /* V1_EP_* */
	int64_t exp_ms; /* ms since the epoch */
};
enum v1_ep_check {
	V1_EP_OK,
	V1_EP_INVALID,	     /* not a credential, or not one this server made for this origin */
	V1_EP_OTHER_SANDBOX, /* a genuine credential for another sandbox's endpoint */
	V1_EP_EXPIRED,
};
/* The origin the endpoints' URIs are built on, into out: public_url, else
 * the request's own scheme and Host. -1 when neither gives one. */
int v1_endpoint_origin(const struct config *cfg, struct req *r, char *out, size_t cap);
/* A credential for c, bound to audience, into out (V1_EP_TOKEN_MAX). 0 or
 * -1 (a claim too long). */
int v1_endpoint_token_make(const unsigned char key[32], const struct v1_ep_claims *c,
			   const char *audience, char *out, size_t cap);
/* Checks token (len bytes) presented at the endpoint of sandbox on origin,
 * at now_ms; fills *c from it when genuine. Constant time in the MAC. */
enum v1_ep_check v1_endpoint_token_check(const unsigned char key[32], const char *token, size_t len,
					 const char *origin, const char *sandbox, int64_t now,
					 struct v1_ep_claims *c);
/* The comma-separated permission names of bits into out. */
void v1_endpoint_perms_list(unsigned bits, char *out, size_t cap);
/* The endpoint operations the route table serves (op ids), NULL-terminated
 * in caps (cap entries); how many. */
size_t v1_endpoint_capabilities(const struct route *table, const char **caps, size_t cap);
/* core.endpoint of sb on origin, or NULL while the table serves no endpoint
 * operation (the document wants at least one capability). New object. */
json_object *v1_endpoint_json(const struct route *table, const char *origin,
			      const struct sandbox *sb);
int v1_endpoint_credential_create(struct handler_ctx *h, json_object *in, json_object **out,
				  struct sp_err *e);
/* handlers/v1_ports.c: the /v1 ports and the preview URLs' auth_request
 * (v1_ports_auth, from handlers_auth). v1_ports_published: core.ports of
 * sb (new); h NULL gives the URLs without their origin (the ETag's). */
int v1_ports_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_ports_create(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_ports_get(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_ports_delete(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
json_object *v1_ports_published(struct handler_ctx *h, const struct sandbox *sb);
void v1_ports_auth(struct sandbox_ctx *sb, struct req *r);
/* A preview request's label "<number>-<uid>" (unchecked) and the path to
 * send on: from uri "/p/<label>/rest" (host_mode 0), or from host
 * "<label>.<domain>[:port]" with the whole uri (host_mode 1; domain is
 * preview_domain, "" refuses). rest always starts with '/' and holds no
 * byte <= ' ' nor DEL. 0, or -1 when the request names no preview. */
int v1_ports_preview_split(const char *domain, int host_mode, const char *uri, const char *host,
			   char *label, size_t cap, char *rest, size_t rcap);
/* An API key's identity by its keyed hash (auth.c's cache, then Redis):
 * SP_UNAUTHORIZED when unknown. */
struct auth_ident {
	char org[65], role[40], key_id[40];
	char perms[PERMS_LIST_MAX];
};
int handlers_auth_ident(struct sandbox_ctx *sb, const char *hash, struct auth_ident *out,
			struct sp_err *e);
/* handlers/session.c: the dashboard's /session (sign in, who, sign out),
 * and /_auth's cookie check: 1 with the session's key hash and the
 * session's own hash (for dropping it), 0 no session cookie, -1 with e
 * (SP_UNAUTHORIZED ended, SP_FORBIDDEN cross-site, else the store's). */
void handlers_session(struct sandbox_ctx *sb, struct req *r);
/* The session token in a Cookie header's __Host-sandpit (48 of [a-z0-9])
 * into tok (cap bytes, at least 49): 1 found, 0 none or malformed. */
int handlers_session_cookie(const char *cookie, char *tok, size_t cap);
/* handlers/session_admin.c: /session/keys, /session/roles, /session/quota
 * (the dashboard's organization pages; operator permission) */
void handlers_session_admin(struct sandbox_ctx *sb, struct req *r);
/* A /session request's JSON body (at most 4 KiB) into *in: NULL when it
 * is empty or not JSON (the caller names what it needs); -1 with e set
 * when it cannot be read. */
int handlers_session_body(struct req *r, json_object **in, struct sp_err *e);
int handlers_session_auth(struct sandbox_ctx *sb, struct req *r, const char *method,
			  char key_hash[65], char sess_hash[65], struct sp_err *e);
/* An API key's organization and permissions by its keyed hash (auth.c's
 * cache, then Redis): SP_UNAUTHORIZED when unknown. */
int handlers_auth_key(struct sandbox_ctx *sb, const char *hash, char *org, size_t org_cap,
		      char *perms, size_t perms_cap, struct sp_err *e);
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

/* handlers/v1_files.c: the sandbox endpoint's file operations (upload and
 * download are next). */
int v1_files_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_files_stat(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_files_read(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_files_write(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_files_mkdir(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_files_move(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_files_remove(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
/* handlers/v1_transfer.c: upload (multipart/form-data) and download
 * (multipart/mixed), streamed under transfer_max_mb. */
int v1_files_upload(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_files_download(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
/* The upload body's parser (exposed for tests): a multipart/form-data
 * stream with boundary, read through rd (FCGX_GetStr's contract: bytes
 * read, 0 at the end), at most cap content bytes and body_max bytes in
 * all. v1_mp_next is an sb_up_next_fn: one event a call; data points into
 * the parser's buffer until the next call. new allocates (NULL when the
 * boundary is empty or over 70 bytes); free releases. */
typedef int (*v1_mp_read_fn)(void *arg, char *buf, int cap);
struct v1_mp;
struct v1_mp *v1_mp_new(const char *boundary, int64_t cap, int64_t body_max, v1_mp_read_fn rd,
			void *rd_arg);
int v1_mp_next(void *mp, struct sb_up_event *ev, struct sp_err *e);
void v1_mp_free(struct v1_mp *m);
/* handlers/v1_processes.c: the sandbox endpoint's process operations. */
int v1_processes_exec(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_processes_create(struct handler_ctx *h, json_object *in, json_object **out,
			struct sp_err *e);
int v1_processes_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_processes_get(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_processes_read(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e);
int v1_processes_signal(struct handler_ctx *h, json_object *in, json_object **out,
			struct sp_err *e);

#endif
