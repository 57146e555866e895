/*
 * The declarative route table's types and the validator it drives. One
 * table (handlers/routes.c) says, for every operation: method, path,
 * handler, input fields with their types, bounds and defaults, the
 * permission it needs and whether it is a query or a mutation. Routing,
 * input validation, and later the OpenAPI document and the MCP tool list
 * are all derived from it, so they cannot drift apart. Knows HTTP and JSON,
 * nothing of sandboxes.
 */
#ifndef SANDPIT_ROUTE_H
#define SANDPIT_ROUTE_H

#include <json-c/json.h>

#include "../common/err.h"
#include "request.h"

/* Nesting levels a JSON body may have (the top object is level 1); a deeper
 * body is refused before any of it is validated. */
#define ROUTE_JSON_MAX_DEPTH 16
/* FT_ENVMAP bounds: one value, and keys plus values in all. A variable
 * becomes one KEY=value string of the process's environment, which Linux
 * caps at 128 KiB (MAX_ARG_STRLEN) and, with the arguments, at ARG_MAX. */
#define ROUTE_ENV_VALUE_MAX 65536
#define ROUTE_ENV_TOTAL_MAX (1024 * 1024)

enum field_type {
	FT_STRING, /* length min..max bytes */
	FT_INT,	   /* integer min..max */
	FT_NUMBER, /* number dmin..dmax */
	FT_BOOL,
	FT_ENUM,    /* one of choices */
	FT_ID,	    /* [A-Za-z0-9_-], length min..max */
	FT_ABSPATH, /* starts with '/', 1..4096 bytes, no NUL */
	FT_ENVMAP,  /* object: keys ^[A-Za-z_][A-Za-z0-9_]*$, values strings of at
		     * most ROUTE_ENV_VALUE_MAX bytes, ROUTE_ENV_TOTAL_MAX in all */
};

#define FF_REQUIRED 1u
#define FF_NULLABLE 2u /* null is accepted and means "not given" */
#define FF_TEXT 4u     /* FT_STRING for people: no control or bidi characters */

struct field_spec {
	const char *name;
	enum field_type type;
	unsigned flags;
	long long min, max;	    /* FT_INT value, FT_STRING/FT_ID length */
	double dmin, dmax;	    /* FT_NUMBER */
	const char *const *choices; /* FT_ENUM, NULL-terminated */
	const char *def;	    /* documented default, as JSON text, or NULL */
	const char *desc;
};

struct handler_ctx;
typedef int (*route_fn)(struct handler_ctx *h, json_object *in, json_object **out,
			struct sp_err *e);

/* QUERY and MUTATION are the API's procedures: they alone become OpenAPI
 * operations and MCP tools. PUBLIC needs no key; META needs a key but is
 * not a procedure (/openapi.json, /mcp). */
enum route_kind { ROUTE_QUERY, ROUTE_MUTATION, ROUTE_PUBLIC, ROUTE_META };

#define RF_DESTRUCTIVE 1u /* ends or deletes something (MCP destructiveHint) */

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
};

/* Finds the route for path; *method_ok says whether the method matches. */
const struct route *route_find(const struct route *table, const char *method, const char *path,
			       int *method_ok);
/* Builds the raw input object from the query string (GET) or the JSON body
 * (POST). *in is new on success. */
int route_parse_input(const struct route *rt, struct req *r, json_object **in, struct sp_err *e);
/* Checks in against rt's fields: unknown fields, types, bounds, character
 * sets. Query-string values are coerced from text. On failure returns -1,
 * sets e (naming the first field) and *issues (new array, caller puts). */
int route_validate(const struct route *rt, json_object *in, int from_query, struct sp_err *e,
		   json_object **issues);
/* True when the comma-separated perms list holds perm. */
int route_has_perm(const char *perms, const char *perm);

#endif
