/*
 * The declarative route table's types and the validator it drives. One
 * table (handlers/routes.c) says, for every operation: method, path
 * template (common/pathtmpl.h: /v1/sandboxes/{sandbox}/ports/{port:int}),
 * handler, input fields with where each comes from (path, query, body,
 * header) and their types, bounds and defaults, the body kind and its
 * limit, the success status, the face that encodes its answers
 * (fcgi/face.h), the permission it needs, whether it is a query or a
 * mutation, and behaviour flags. Routing, /_auth, input validation, the
 * OpenAPI document, the MCP tool list and sandpit-stream's exec messages
 * are all derived from it, so they cannot drift apart. Knows HTTP and
 * JSON, nothing of sandboxes.
 */
#ifndef SANDPIT_ROUTE_H
#define SANDPIT_ROUTE_H

#include <json-c/json.h>

#include "../common/err.h"
#include "../common/pathtmpl.h"
#include "request.h"

/* Nesting levels a JSON body may have (the top object is level 1); a deeper
 * body is refused before any of it is validated. */
#define ROUTE_JSON_MAX_DEPTH 16

enum field_type {
	FT_STRING, /* length min..max bytes */
	FT_INT,	   /* integer min..max */
	FT_NUMBER, /* number dmin..dmax */
	FT_BOOL,
	FT_ENUM,     /* one of choices */
	FT_ID,	     /* [A-Za-z0-9_-], length min..max */
	FT_ABSPATH,  /* starts with '/', 1..4096 bytes, no NUL */
	FT_ENVMAP,   /* object: keys ^[A-Za-z_][A-Za-z0-9_]*$, values strings without
		     * NUL; sizes are the core's (SB_ENV_* in sandbox/sandbox.h) */
	FT_OBJECT,   /* object whose members are the fields `sub` (nested checks,
		     * unknown members refused, "parent.member" in messages) */
	FT_JSON,     /* any JSON value: the handler decides (a /v1 field sandpit
		     * refuses unless empty) */
	FT_PATHLIST, /* an array of min..max FT_ABSPATH strings, UTF-8; from a
		      * query, the key repeated (paths=/a&paths=/b) */
};

#define FF_REQUIRED 1u
#define FF_NULLABLE 2u /* null is accepted and means "not given" */
#define FF_TEXT 4u     /* FT_STRING for people: no control or bidi characters */
#define FF_INT64_TEXT \
	8u /* FT_INT also taken as a string of digits ("512"), as /v1
			  * takes 64-bit integers; coerced to a number */

/* Where a field's value comes from. Every value lands in the handler's `in`
 * object under the field's name, after route_validate, whatever its source,
 * so a handler reads a path capture like a body field. Values from text
 * (query, path, header) are coerced to the field's type. A body may not
 * name a field of another source (it is an unknown key). */
enum field_source {
	FS_INPUT = 0, /* the route's input: the query string of a route without a
		       * body, else the JSON body (the Dokploy procedures) */
	FS_PATH,      /* the path capture named `from` (or the field's name) */
	FS_QUERY,     /* the query key named `from` (or the field's name) */
	FS_BODY,      /* a member of the JSON body */
	FS_HEADER,    /* the request header named `from` ("If-Match") */
};

struct field_spec {
	const char *name;
	enum field_type type;
	unsigned flags;
	long long min, max;	    /* FT_INT value, FT_STRING/FT_ID length */
	double dmin, dmax;	    /* FT_NUMBER */
	const char *const *choices; /* FT_ENUM, NULL-terminated */
	const char *def;	    /* documented default, as JSON text, or NULL */
	const char *desc;
	enum field_source source;     /* FS_INPUT unless set */
	const char *from;	      /* the capture, query key or header; NULL = name */
	const struct field_spec *sub; /* FT_OBJECT: its members, NULL-name terminated */
};

struct handler_ctx;
typedef int (*route_fn)(struct handler_ctx *h, json_object *in, json_object **out,
			struct sp_err *e);

/* QUERY and MUTATION are the API's procedures: they alone become OpenAPI
 * operations and MCP tools. PUBLIC needs no key; META needs a key but is
 * not a procedure (/openapi.json, /mcp). */
enum route_kind { ROUTE_QUERY, ROUTE_MUTATION, ROUTE_PUBLIC, ROUTE_META };

#define RF_DESTRUCTIVE 1u /* ends or deletes something (MCP destructiveHint) */
/* Behaviours switched on per route, all in one place (handlers/dispatch.c,
 * route_behaviours_before/after); the Dokploy procedures use none.
 * RF_IDEMPOTENCY: an Idempotency-Key header is accepted (1..255 printable
 *   ASCII, else 400) and delivered as in.idempotencyKey; the replay ledger
 *   (same key + payload = the first answer) hooks in at the same place.
 * RF_IDEMPOTENCY_REQUIRED: the same, and a request without one is a 400.
 * RF_IF_MATCH: If-Match is required (428 SP_PRECONDITION_REQUIRED when
 *   missing, 400 when not a quoted strong ETag) and delivered as in.ifMatch;
 *   the core compares it with the resource's (412 SP_PRECONDITION).
 * RF_ETAG: the answer's "etag" member is also sent as the ETag header.
 * RF_IDEMPOTENCY_RESOURCE: with RF_IDEMPOTENCY, the operation makes a
 *   resource: the ledger chooses its id before the handler runs, keeps it
 *   in the pending entry and delivers it as in.idempotencyResource; a
 *   retry that finds the first request's worker gone (or its time passed)
 *   runs the handler again with the same id and in.idempotencyResume
 *   ("gone" or "late"), and the handler finishes or redoes the work. */
#define RF_IDEMPOTENCY 2u
#define RF_IDEMPOTENCY_REQUIRED 4u
#define RF_IF_MATCH 8u
#define RF_ETAG 16u
#define RF_IDEMPOTENCY_RESOURCE 32u
/* RF_LONG: the request may hold its worker long (an exec, a file's
 * content, a transfer, an output wait): counted against the
 * organization's fair share of the workers (org_long_requests; beyond it
 * 429 SP_TOO_MANY, RELIABILITY T2). */
#define RF_LONG 64u

/* The names the behaviours deliver their header values under in `in`. */
#define ROUTE_IN_IDEMPOTENCY_KEY "idempotencyKey"
#define ROUTE_IN_IF_MATCH "ifMatch"
#define ROUTE_IN_IDEM_RESOURCE "idempotencyResource"
#define ROUTE_IN_IDEM_RESUME "idempotencyResume"

/* What a route's request body is. RB_AUTO: none for GET, HEAD and DELETE,
 * JSON otherwise (today's procedures). RB_RAW: the bytes are read whole
 * (under the limit) and left in h->r->body for the handler, in is built
 * from the other sources. RB_MULTIPART: the body is left unread for the
 * handler to stream (its limit is the handler's; in is built from the
 * other sources). RB_STREAM: the same for a raw body the handler streams
 * (its limit is still body_max, which the handler enforces). RB_NONE: a
 * body is not read (ignored, as on GET). */
enum route_body { RB_AUTO = 0, RB_NONE, RB_JSON, RB_RAW, RB_MULTIPART, RB_STREAM };

/* The default body limit, and the most any route may declare: nginx's
 * client_max_body_size (nginx/sandpit.conf.tmpl, 15m) refuses more before
 * sandpitd sees it; a route that needs more needs a location that allows
 * more. */
#define ROUTE_BODY_MAX (15u * 1024 * 1024)

struct face;

struct route {
	const char *method;
	const char *path;
	route_fn fn;
	const struct field_spec *fields; /* terminated by a NULL name; NULL = the handler
					  * reads the request itself (in is NULL) */
	const char *perm;		 /* "sandbox:read" etc., NULL = none */
	enum route_kind kind;
	const char *op_id; /* "sandbox-create" */
	const char *summary;
	const char *output; /* component schema of the answer ("Sandbox") */
	unsigned flags;	    /* RF_* */
	enum route_body body;
	size_t body_max;	 /* bytes; 0 = ROUTE_BODY_MAX */
	int status;		 /* the success status; 0 = 200 */
	const struct face *face; /* NULL = by path prefix (face_of_path) */
};

/* A route's effective body kind (RB_AUTO resolved), limit and status. */
enum route_body route_body_kind(const struct route *rt);
size_t route_body_max(const struct route *rt);
int route_status(const struct route *rt);
/* The face that encodes rt's answers: rt->face, else its path's. */
const struct face *route_face(const struct route *rt);

/* Finds the route for method + path (the part before '?'), through
 * pathtmpl_match; HEAD finds a GET route. When only the path matches,
 * returns that route with *method_ok 0; NULL when nothing matches. */
const struct route *route_find(const struct route *table, const char *method, const char *path,
			       int *method_ok);
/* The same, with the path's captures (caps holds PATHTMPL_MAX_CAPS). */
const struct route *route_match(const struct route *table, const char *method, const char *path,
				int *method_ok, struct pathtmpl_cap *caps, int *ncaps);

/* What /_auth decides for method + uri (raw, a query is ignored) and the
 * caller's comma-separated permissions: ROUTE_ALLOW; ROUTE_DENY_UNKNOWN
 * (no route has the path: 404) or ROUTE_DENY_METHOD (405), never passed
 * on; ROUTE_DENY_PERM (403), the route's permission in *rt. */
enum route_auth { ROUTE_ALLOW, ROUTE_DENY_UNKNOWN, ROUTE_DENY_METHOD, ROUTE_DENY_PERM };
enum route_auth route_authorize(const struct route *table, const char *method, const char *uri,
				const char *perms, const struct route **rt);

/* Builds the raw input object of a request to rt: the route's input (query
 * string or JSON body, see FS_INPUT), then the path captures of r->path,
 * the query keys and the headers its fields name. Reads the body under
 * route_body_max (413 beyond); an RB_RAW body stays in r->body. *in is new
 * on success. */
int route_parse_input(const struct route *rt, struct req *r, json_object **in, struct sp_err *e);
/* Checks in against rt's fields: unknown fields, types, bounds, character
 * sets. With from_http, values that came as text (query, path, header, and
 * the input of a route whose input is the query string) are coerced to
 * their field's type; JSON callers (MCP, sandpit-stream) pass 0. On
 * failure returns -1, sets e (naming the first field) and *issues (new
 * array, caller puts). */
int route_validate(const struct route *rt, json_object *in, int from_http, struct sp_err *e,
		   json_object **issues);
/* Checks a table: valid templates, a path field per capture and a capture
 * per path field, body limits within ROUTE_BODY_MAX, success statuses
 * 2xx. 0 fine; -1 with e naming the route. sandpitd checks its table at
 * start. */
int route_table_check(const struct route *table, struct sp_err *e);
/* True when the comma-separated perms list holds perm. */
int route_has_perm(const char *perms, const char *perm);

#endif
