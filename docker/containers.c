/*
 * Container endpoints: create, start, stop, kill, pause, unpause, remove,
 * inspect, list.
 * Thin: each builds one allow-listed request from validated ids and escaped
 * query values and maps the answer. It must never interpret sandbox rules;
 * the create body comes whole from the caller.
 */
#include <stdio.h>
#include <string.h>

#include "docker_int.h"

/* Mapping: an invalid name is SP_BAD_REQUEST (field "name"); a missing image
 * 404 SP_NOT_FOUND; a name in use 409 SP_CONFLICT; else SP_INTERNAL. */
int docker_container_create(struct docker_client *c, const char *name, json_object *body,
			    char id_out[65], struct sp_err *e)
{
	struct docker_req r;
	int rc = -1;

	docker_req_init(&r, "POST");
	if (!body || !json_object_is_type(body, json_type_object)) {
		sp_err_set(e, SP_INTERNAL, "container create needs a JSON object body");
		goto done;
	}
	if (name && !docker_valid_id(name)) {
		sp_err_field(e, SP_BAD_REQUEST, "name", "invalid container name");
		goto done;
	}
	if (docker_req_path(&r, e, "/containers/create") < 0 ||
	    (name && docker_req_query(&r, "name", name, e) < 0))
		goto done;
	rc = docker_create_call(c, &r, body, id_out, e);
done:
	docker_req_cleanup(&r);
	return rc;
}

/* A start of a running container (304) is success; missing: SP_NOT_FOUND. */
int docker_container_start(struct docker_client *c, const char *id, struct sp_err *e)
{
	struct docker_req r;
	int rc = -1;

	docker_req_init(&r, "POST");
	if (docker_check_id(id, "container", e) < 0 ||
	    docker_req_path(&r, e, "/containers/%s/start", id) < 0)
		goto done;
	r.ok_status[0] = 304;
	rc = docker_call(c, &r, NULL, NULL, e);
done:
	docker_req_cleanup(&r);
	return rc;
}

/* A stopped (304), missing (404) or invalid id is success. Docker waits up
 * to grace_s before it kills, so the request may take that much longer. */
int docker_container_stop(struct docker_client *c, const char *id, int grace_s, struct sp_err *e)
{
	struct docker_req r;
	char t[24];
	int rc = -1;

	docker_req_init(&r, "POST");
	if (!docker_valid_id(id)) {
		rc = 0;
		goto done;
	}
	if (grace_s < 0)
		grace_s = 0;
	snprintf(t, sizeof(t), "%d", grace_s);
	if (docker_req_path(&r, e, "/containers/%s/stop", id) < 0 ||
	    docker_req_query(&r, "t", t, e) < 0)
		goto done;
	r.ok_status[0] = 304;
	r.ok_status[1] = 404;
	r.timeout_ms = ((int64_t)grace_s + c->timeout_s) * 1000;
	rc = docker_call(c, &r, NULL, NULL, e);
done:
	docker_req_cleanup(&r);
	return rc;
}

/* signal: a name or number ("KILL", "SIGTERM", "9"), NULL for Docker's
 * default (SIGKILL); anything else is SP_BAD_REQUEST. A container that is
 * not running is 409 SP_CONFLICT, a missing one SP_NOT_FOUND. */
int docker_container_kill(struct docker_client *c, const char *id, const char *signal,
			  struct sp_err *e)
{
	struct docker_req r;
	int rc = -1;

	docker_req_init(&r, "POST");
	if (docker_check_id(id, "container", e) < 0 ||
	    docker_req_path(&r, e, "/containers/%s/kill", id) < 0)
		goto done;
	if (signal) {
		size_t n = strlen(signal);
		int ok = n > 0 && n <= 16;
		for (size_t i = 0; ok && i < n; i++)
			ok = (signal[i] >= 'A' && signal[i] <= 'Z') ||
			     (signal[i] >= '0' && signal[i] <= '9');
		if (!ok) {
			sp_err_field(e, SP_BAD_REQUEST, "signal", "invalid signal");
			goto done;
		}
		if (docker_req_query(&r, "signal", signal, e) < 0)
			goto done;
	}
	rc = docker_call(c, &r, NULL, NULL, e);
done:
	docker_req_cleanup(&r);
	return rc;
}

/* POST pause or unpause (op). Docker answers a pause of a paused or
 * stopped container 409 and an unpause of one that is not paused 500
 * ("is not paused"): both SP_CONFLICT here, with Docker's message. */
static int pause_call(struct docker_client *c, const char *id, const char *op, struct sp_err *e)
{
	struct docker_req r;
	int rc = -1;

	docker_req_init(&r, "POST");
	if (docker_check_id(id, "container", e) < 0 ||
	    docker_req_path(&r, e, "/containers/%s/%s", id, op) < 0)
		goto done;
	rc = docker_call(c, &r, NULL, NULL, e);
	if (rc < 0 && e && e->code == SP_INTERNAL && strstr(e->msg, "is not paused"))
		e->code = SP_CONFLICT;
done:
	docker_req_cleanup(&r);
	return rc;
}

int docker_container_pause(struct docker_client *c, const char *id, struct sp_err *e)
{
	return pause_call(c, id, "pause", e);
}

int docker_container_unpause(struct docker_client *c, const char *id, struct sp_err *e)
{
	return pause_call(c, id, "unpause", e);
}

/* DELETE with v=1 (anonymous volumes go too). Missing: SP_NOT_FOUND; a
 * running container without force, or a removal in progress: SP_CONFLICT. */
int docker_container_remove(struct docker_client *c, const char *id, int force, struct sp_err *e)
{
	struct docker_req r;
	int rc = -1;

	docker_req_init(&r, "DELETE");
	if (docker_check_id(id, "container", e) < 0 ||
	    docker_req_path(&r, e, "/containers/%s", id) < 0 ||
	    docker_req_query(&r, "v", "1", e) < 0 ||
	    docker_req_query(&r, "force", force ? "1" : "0", e) < 0)
		goto done;
	rc = docker_call(c, &r, NULL, NULL, e);
done:
	docker_req_cleanup(&r);
	return rc;
}

/* Missing or invalid id: SP_NOT_FOUND. */
int docker_container_inspect(struct docker_client *c, const char *id, json_object **out,
			     struct sp_err *e)
{
	return docker_inspect_call(c, "/containers/%s/json", id, "container", out, e);
}

/* filters={"label":[label]} goes through json-c and then the escaper. A
 * label with a control byte is SP_BAD_REQUEST. */
int docker_container_list(struct docker_client *c, const char *label, int all, json_object **out,
			  struct sp_err *e)
{
	struct docker_req r;
	json_object *filters = NULL, *arr = NULL;
	int rc = -1;

	*out = NULL;
	docker_req_init(&r, "GET");
	if (docker_req_path(&r, e, "/containers/json") < 0 ||
	    (all && docker_req_query(&r, "all", "1", e) < 0))
		goto done;
	if (label) {
		for (const char *p = label; *p; p++) {
			if ((unsigned char)*p < 0x20) {
				sp_err_field(e, SP_BAD_REQUEST, "label", "invalid label");
				goto done;
			}
		}
		filters = json_object_new_object();
		arr = json_object_new_array();
		if (!filters || !arr ||
		    json_object_array_add(arr, json_object_new_string(label)) < 0 ||
		    json_object_object_add(filters, "label", arr) < 0) {
			json_object_put(arr);
			sp_err_set(e, SP_INTERNAL, "out of memory");
			goto done;
		}
		if (docker_req_query(
			    &r, "filters",
			    json_object_to_json_string_ext(filters, JSON_C_TO_STRING_PLAIN), e) < 0)
			goto done;
	}
	rc = docker_call(c, &r, NULL, out, e);
	if (rc == 0 && (!*out || !json_object_is_type(*out, json_type_array))) {
		json_object_put(*out);
		*out = NULL;
		rc = sp_err_set(e, SP_INTERNAL, "Docker's container list is not an array");
	}
done:
	json_object_put(filters);
	docker_req_cleanup(&r);
	return rc;
}

/* POST /containers/{id}/update with a resources body (not consumed).
 * Missing: SP_NOT_FOUND. */
int docker_container_update(struct docker_client *c, const char *id, json_object *body,
			    struct sp_err *e)
{
	struct docker_req r;
	int rc = -1;

	docker_req_init(&r, "POST");
	if (docker_check_id(id, "container", e) < 0 ||
	    docker_req_path(&r, e, "/containers/%s/update", id) < 0)
		goto done;
	rc = docker_call(c, &r, body, NULL, e);
done:
	docker_req_cleanup(&r);
	return rc;
}
