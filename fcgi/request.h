/*
 * One FastCGI request as the handlers see it: the method, path and query,
 * the identity nginx set (never a client header), the body read under a cap,
 * and helpers that write a JSON answer or the one JSON error shape. Knows
 * HTTP and FastCGI only.
 */
#ifndef SANDPIT_REQUEST_H
#define SANDPIT_REQUEST_H

#include <fcgiapp.h>
#include <json-c/json.h>

#include "../common/buf.h"
#include "../common/err.h"

struct req {
	FCGX_Request *fx;
	const char *method; /* REQUEST_METHOD */
	char path[4096];    /* DOCUMENT_URI (or SCRIPT_NAME), without the query */
	const char *query;  /* QUERY_STRING, "" if none */
	/* identity, from params nginx sets itself after auth_request */
	const char *org;	/* SANDPIT_ORG, "" when the route is public */
	const char *key_id;	/* SANDPIT_KEY_ID */
	const char *role;	/* SANDPIT_ROLE */
	const char *perms;	/* SANDPIT_PERMS, comma separated */
	const char *request_id; /* SANDPIT_REQUEST_ID */
	struct buf body;
	int status;	   /* status of the answer sent, 0 until sent */
	char headers[512]; /* extra answer headers a handler adds ("Name: v\r\n" lines) */
};

/* Fills r from the accepted FastCGI request. Allocates nothing yet. */
void req_init(struct req *r, FCGX_Request *fx);
/* Frees the body; r may be reused. */
void req_cleanup(struct req *r);
/* A FastCGI param, or "" when absent. */
const char *req_param(const struct req *r, const char *name);
/* Reads the body into r->body, refusing more than max bytes with
 * SP_TOO_LARGE as soon as CONTENT_LENGTH (or the bytes read) says so. */
int req_read_body(struct req *r, size_t max, struct sp_err *e);
/* The largest answer head req_send_json writes: extra headers past it
 * make the answer a 500 that says so (logged), never an answer cut short. */
#define REQ_HEAD_MAX (64 * 1024)
/* Writes a status line, extra headers ("Name: value\r\n" lines or NULL) and
 * a JSON body. Does not consume obj. */
void req_send_json(struct req *r, int status, const char *headers, json_object *obj);
/* Writes e in the default (Dokploy) face's shape, {"message","code",
 * "issues"} (face_send_error with &face_dokploy); issues may be NULL (not
 * consumed). */
void req_send_error(struct req *r, const struct sp_err *e, json_object *issues);
/* An answer sent while it is being made: begin writes the status and JSON
 * headers without a Content-Length (nginx sends it chunked), write appends
 * body bytes (-1 once the client is gone), abort ends it broken (the
 * connection to nginx is shut, so the client sees an incomplete answer
 * instead of a wrong one) and records 502 as its status for logs and
 * metrics. */
void req_stream_begin(struct req *r, int status);
/* Appends n body bytes (after the head went out through the stream) as
 * FastCGI records of up to 64 KiB written straight to the connection,
 * instead of libfcgi's 8 KiB ones: for bulk bytes (readFile, download).
 * Flushes the stream first, so the two never interleave. -1 once the
 * client is gone. */
int req_write_bulk(struct req *r, const void *p, size_t n);
int req_stream_write(struct req *r, const void *p, size_t n);
void req_stream_abort(struct req *r);
/* The size of the last JSON answer this process sent (for heap trimming). */
size_t req_last_answer_size(void);
/* True when the client has gone away (the FastCGI stream errored). */
int req_client_gone(const struct req *r);

#endif
