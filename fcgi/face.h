/*
 * An API face: how one API encodes its results and errors. The core's
 * error codes (common/err.h) are face-neutral; each face maps them, in one
 * table, to an HTTP status and the code name its callers see, and builds
 * its error body from them. A route names its face, or gets the face of
 * its path prefix (face_of_path). Two faces: the Dokploy procedures'
 * ({"message","code","issues"}, tRPC code names) and /v1's
 * ({"code","message","details"}, the Docker Sandboxes API's lowerCamel
 * codes, google.rpc.BadRequest and EtagMismatch details). nginx's own error answers follow the same split: each
 * face has its error pages (nginx/error_pages.conf) and the error_page
 * lines a location of that face includes (nginx/face-dokploy.conf).
 */
#ifndef SANDPIT_FACE_H
#define SANDPIT_FACE_H

#include <json-c/json.h>

#include "../common/err.h"
#include "request.h"

/* How a face shows one core code. */
struct face_code {
	int status;	  /* HTTP status */
	const char *name; /* the "code" callers see */
};

struct face {
	const char *name;	       /* "dokploy" */
	const char *prefix;	       /* paths under it default to this face; NULL: none */
	const struct face_code *codes; /* SP_CODE_COUNT entries, by enum sp_code */
	/* The error body for e; issues (field problems from route_validate,
	 * may be NULL) is not consumed. New object. */
	json_object *(*error_body)(const struct face *f, const struct sp_err *e,
				   json_object *issues);
};

extern const struct face face_dokploy;
/* /v1: {"code","message","details"} with lowerCamel codes (face.c). */
extern const struct face face_v1;

/* The face of a path: the first face whose prefix it has, else Dokploy. */
const struct face *face_of_path(const char *path);
int face_status(const struct face *f, enum sp_code code);
const char *face_code_name(const struct face *f, enum sp_code code);
/* Sends e in f's shape with f's status for its code (Retry-After: 1 on a
 * 503 and on SP_TOO_MANY). */
void face_send_error(struct req *r, const struct face *f, const struct sp_err *e,
		     json_object *issues);
/* Sends a success answer: status, extra headers (may be NULL) and out as
 * the JSON body (no body for 204 or when out is NULL). */
void face_send_result(struct req *r, const struct face *f, int status, const char *headers,
		      json_object *out);

#endif
