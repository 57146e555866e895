/* The API faces and their code tables. See face.h. */
#include "face.h"

#include <stdio.h>
#include <string.h>

#include "../common/log.h"

/* The Dokploy procedures' statuses and tRPC code names. */
static const struct face_code dokploy_codes[SP_CODE_COUNT] = {
	[SP_OK] = { 200, "OK" },
	[SP_BAD_REQUEST] = { 400, "BAD_REQUEST" },
	[SP_UNAUTHORIZED] = { 401, "UNAUTHORIZED" },
	[SP_FORBIDDEN] = { 403, "FORBIDDEN" },
	[SP_NOT_FOUND] = { 404, "NOT_FOUND" },
	[SP_METHOD_NOT_ALLOWED] = { 405, "METHOD_NOT_SUPPORTED" },
	[SP_TIMEOUT] = { 408, "TIMEOUT" },
	[SP_CONFLICT] = { 409, "CONFLICT" },
	[SP_PRECONDITION] = { 412, "PRECONDITION_FAILED" },
	[SP_TOO_LARGE] = { 413, "PAYLOAD_TOO_LARGE" },
	[SP_UNPROCESSABLE] = { 422, "UNPROCESSABLE_CONTENT" },
	[SP_TOO_MANY] = { 429, "TOO_MANY_REQUESTS" },
	[SP_QUOTA] = { 429, "QUOTA_EXCEEDED" },
	[SP_INTERNAL] = { 500, "INTERNAL_SERVER_ERROR" },
	[SP_UNAVAILABLE] = { 503, "SERVICE_UNAVAILABLE" },
	[SP_PRECONDITION_REQUIRED] = { 428, "PRECONDITION_REQUIRED" },
	[SP_UNSUPPORTED_MEDIA] = { 415, "UNSUPPORTED_MEDIA_TYPE" },
	[SP_UNIMPLEMENTED] = { 501, "NOT_IMPLEMENTED" },
	[SP_ETAG_MISMATCH] = { 412, "PRECONDITION_FAILED" },
	[SP_OUT_OF_RANGE] = { 400, "BAD_REQUEST" },
};

/* {"message","code","issues"}: issues from the validator, or one naming
 * e->field. */
static json_object *dokploy_error(const struct face *f, const struct sp_err *e, json_object *issues)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "message", json_object_new_string(e->msg[0] ? e->msg : "Error"));
	json_object_object_add(o, "code", json_object_new_string(face_code_name(f, e->code)));
	if (issues) {
		json_object_object_add(o, "issues", json_object_get(issues));
	} else if (e->field[0]) {
		json_object *arr = json_object_new_array(), *it = json_object_new_object(),
			    *p = json_object_new_array();
		json_object_array_add(p, json_object_new_string(e->field));
		json_object_object_add(it, "path", p);
		json_object_object_add(it, "message", json_object_new_string(e->msg));
		json_object_array_add(arr, it);
		json_object_object_add(o, "issues", arr);
	}
	return o;
}

const struct face face_dokploy = { "dokploy", "/api/", dokploy_codes, dokploy_error };

/* The /v1 face: the Docker Sandboxes API's lowerCamel ErrorCode names and
 * the statuses its document pins (404 notFound, 409 failedPrecondition or
 * alreadyExists, 412/428 failedPrecondition, 501 unimplemented) or leaves
 * to `default` (400 invalidArgument, 401 unauthenticated, 403
 * permissionDenied, 429 resourceExhausted, 5xx). The core's "Sandbox is
 * killed" (SP_PRECONDITION) is a state refusal here: 409, not the Dokploy
 * face's 412, which /v1 keeps for a stale If-Match. */
static const struct face_code v1_codes[SP_CODE_COUNT] = {
	[SP_OK] = { 200, "ok" },
	[SP_BAD_REQUEST] = { 400, "invalidArgument" },
	[SP_UNAUTHORIZED] = { 401, "unauthenticated" },
	[SP_FORBIDDEN] = { 403, "permissionDenied" },
	[SP_NOT_FOUND] = { 404, "notFound" },
	[SP_METHOD_NOT_ALLOWED] = { 405, "unimplemented" },
	[SP_TIMEOUT] = { 408, "deadlineExceeded" },
	[SP_CONFLICT] = { 409, "alreadyExists" },
	[SP_PRECONDITION] = { 409, "failedPrecondition" },
	[SP_TOO_LARGE] = { 413, "resourceExhausted" },
	[SP_UNPROCESSABLE] = { 400, "invalidArgument" },
	[SP_TOO_MANY] = { 429, "resourceExhausted" },
	[SP_QUOTA] = { 429, "resourceExhausted" },
	[SP_INTERNAL] = { 500, "internal" },
	[SP_UNAVAILABLE] = { 503, "unavailable" },
	[SP_PRECONDITION_REQUIRED] = { 428, "failedPrecondition" },
	[SP_UNSUPPORTED_MEDIA] = { 415, "invalidArgument" },
	[SP_UNIMPLEMENTED] = { 501, "unimplemented" },
	[SP_ETAG_MISMATCH] = { 412, "failedPrecondition" },
	[SP_OUT_OF_RANGE] = { 400, "outOfRange" },
};

/* A google.rpc.BadRequest field violation. */
static json_object *violation(const char *field, const char *desc)
{
	json_object *v = json_object_new_object();

	json_object_object_add(v, "field", json_object_new_string(field));
	json_object_object_add(v, "description", json_object_new_string(desc));
	return v;
}

/* {"code","message","details"}: a 400 carries a BadRequest detail whose
 * field violations are the validator's issues (their path joined with
 * '.') or the one field e names; a 412 the EtagMismatch detail with the
 * current ETag (e->field). */
static json_object *v1_error(const struct face *f, const struct sp_err *e, json_object *issues)
{
	json_object *o = json_object_new_object(), *details = json_object_new_array();
	int status = face_status(f, e->code);

	json_object_object_add(o, "code", json_object_new_string(face_code_name(f, e->code)));
	json_object_object_add(o, "message", json_object_new_string(e->msg[0] ? e->msg : "Error"));
	if (status == 400 && (issues || e->field[0])) {
		json_object *br = json_object_new_object(), *fv = json_object_new_array();
		json_object_object_add(
			br, "@type",
			json_object_new_string("type.googleapis.com/google.rpc.BadRequest"));
		for (size_t i = 0; issues && i < json_object_array_length(issues); i++) {
			json_object *it = json_object_array_get_idx(issues, i), *path, *msg;
			char field[256] = "";
			size_t used = 0;
			if (!json_object_object_get_ex(it, "path", &path) ||
			    !json_object_is_type(path, json_type_array))
				continue;
			for (size_t k = 0;
			     k < json_object_array_length(path) && used < sizeof(field); k++) {
				int n = snprintf(
					field + used, sizeof(field) - used, "%s%s", k ? "." : "",
					json_object_get_string(json_object_array_get_idx(path, k)));
				if (n < 0)
					break;
				used += (size_t)n;
			}
			json_object_object_get_ex(it, "message", &msg);
			json_object_array_add(
				fv, violation(field, msg ? json_object_get_string(msg) : e->msg));
		}
		if (json_object_array_length(fv) == 0)
			json_object_array_add(fv, violation(e->field, e->msg));
		json_object_object_add(br, "fieldViolations", fv);
		json_object_array_add(details, br);
	} else if (e->code == SP_ETAG_MISMATCH && e->field[0]) {
		json_object *em = json_object_new_object();
		json_object_object_add(
			em, "@type",
			json_object_new_string(
				"type.googleapis.com/docker.sandboxes.v1.EtagMismatch"));
		json_object_object_add(em, "currentEtag", json_object_new_string(e->field));
		json_object_array_add(details, em);
	}
	json_object_object_add(o, "details", details);
	return o;
}

const struct face face_v1 = { "v1", "/v1/", v1_codes, v1_error };

/* Every face, the default (Dokploy) last. */
static const struct face *const faces[] = { &face_v1, &face_dokploy, NULL };

const struct face *face_of_path(const char *path)
{
	for (int i = 0; faces[i]; i++)
		if (faces[i]->prefix &&
		    strncmp(path, faces[i]->prefix, strlen(faces[i]->prefix)) == 0)
			return faces[i];
	return &face_dokploy;
}

int face_status(const struct face *f, enum sp_code code)
{
	if ((unsigned)code >= SP_CODE_COUNT || !f->codes[code].status)
		return 500;
	return f->codes[code].status;
}

const char *face_code_name(const struct face *f, enum sp_code code)
{
	if ((unsigned)code >= SP_CODE_COUNT || !f->codes[code].name)
		return f->codes[SP_INTERNAL].name;
	return f->codes[code].name;
}

void face_send_error(struct req *r, const struct face *f, const struct sp_err *e,
		     json_object *issues)
{
	json_object *o = f->error_body(f, e, issues);
	int status = face_status(f, e->code);

	if (status >= 500)
		log_warn("answer %d: %s", status, e->msg);
	/* a busy or briefly unavailable service: tell the client when to retry
	 * (not for a full quota: a second later it is as full) */
	req_send_json(r, status,
		      status == 503 || e->code == SP_TOO_MANY ? "Retry-After: 1\r\n" : NULL, o);
	json_object_put(o);
}

void face_send_result(struct req *r, const struct face *f, int status, const char *headers,
		      json_object *out)
{
	(void)f; /* the Dokploy face sends the handler's answer as it is */
	req_send_json(r, status, headers, status == 204 ? NULL : out);
}
