/*
 * The error that travels from wherever it happens to the one place that maps
 * it to an HTTP status and a JSON body. The codes are the core's own and
 * face-neutral: each API face maps them to its statuses and names in one
 * table (fcgi/face.c); the statuses below are the Dokploy face's. The
 * message is safe to show a caller (never a secret).
 */
#ifndef SANDPIT_ERR_H
#define SANDPIT_ERR_H

enum sp_code {
	SP_OK = 0,
	SP_BAD_REQUEST,		  /* 400 */
	SP_UNAUTHORIZED,	  /* 401 */
	SP_FORBIDDEN,		  /* 403 */
	SP_NOT_FOUND,		  /* 404 */
	SP_METHOD_NOT_ALLOWED,	  /* 405 */
	SP_TIMEOUT,		  /* 408 */
	SP_CONFLICT,		  /* 409 */
	SP_PRECONDITION,	  /* 412 */
	SP_TOO_LARGE,		  /* 413 */
	SP_UNPROCESSABLE,	  /* 422 */
	SP_TOO_MANY,		  /* 429, with Retry-After: waiting a moment helps */
	SP_QUOTA,		  /* 429 QUOTA_EXCEEDED, no Retry-After: the org must free some */
	SP_INTERNAL,		  /* 500 */
	SP_UNAVAILABLE,		  /* 503 */
	SP_PRECONDITION_REQUIRED, /* 428: a required If-Match is missing */
	SP_UNSUPPORTED_MEDIA,	  /* 415: a body kind the route does not take */
	SP_UNIMPLEMENTED,	  /* 501: a feature or field sandpit does not offer (yet) */
	SP_ETAG_MISMATCH,	  /* 412: If-Match is not the resource's current ETag;
				   * field holds the current ETag (the /v1 face's
				   * EtagMismatch detail) */
	SP_OUT_OF_RANGE,	  /* 400: a value past a limit of the resource (a renew
				   * beyond the hard deadline) */
	SP_CODE_COUNT		  /* not a code: the number of codes */
};

struct sp_err {
	enum sp_code code;
	char field[128]; /* the request field at fault, or "" */
	char msg[512];
};

/* Fills e (if not NULL) and returns -1, so callers can `return sp_err_set(...)`.
 * Safe from any thread (only e is written), as the rest of this file. */
int sp_err_set(struct sp_err *e, enum sp_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Like sp_err_set, naming the request field at fault. */
int sp_err_field(struct sp_err *e, enum sp_code code, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void sp_err_clear(struct sp_err *e);
/* A face-neutral name of the code for logs ("not_found"); what a caller
 * sees comes from the face (fcgi/face.h). */
const char *sp_code_name(enum sp_code code);

#endif
