/* The API faces and their code tables. See face.h. */
#include "face.h"

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

/* Every face, the default (Dokploy) last. */
static const struct face *const faces[] = { &face_dokploy, NULL };

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
