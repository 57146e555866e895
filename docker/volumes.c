/*
 * Named volumes: create, inspect, remove (the /v1 managed volumes,
 * sandbox/volume.c). Names are docker_valid_id names, checked here before
 * they reach a URL; labels are the caller's (no sandbox rules here). It
 * never removes a volume Docker says is in use (no force).
 */
#include <string.h>

#include "docker_int.h"

int docker_volume_create(struct docker_client *c, const char *name, json_object *labels,
			 struct sp_err *e)
{
	json_object *body;
	struct docker_req r;
	int rc = -1;

	if (!docker_valid_id(name))
		return sp_err_set(e, SP_INTERNAL, "bad volume name");
	body = json_object_new_object();
	json_object_object_add(body, "Name", json_object_new_string(name));
	json_object_object_add(body, "Driver", json_object_new_string("local"));
	if (labels)
		json_object_object_add(body, "Labels", json_object_get(labels));
	docker_req_init(&r, "POST");
	if (docker_req_path(&r, e, "/volumes/create") == 0)
		rc = docker_call(c, &r, body, NULL, e);
	docker_req_cleanup(&r);
	json_object_put(body);
	return rc;
}

/* Missing or invalid name: SP_NOT_FOUND. */
int docker_volume_inspect(struct docker_client *c, const char *name, json_object **out,
			  struct sp_err *e)
{
	return docker_inspect_call(c, "/volumes/%s", name, "volume", out, e);
}

/* Never forced: in use is SP_CONFLICT, missing SP_NOT_FOUND. */
int docker_volume_remove(struct docker_client *c, const char *name, struct sp_err *e)
{
	struct docker_req r;
	int rc = -1;

	docker_req_init(&r, "DELETE");
	if (docker_check_id(name, "volume", e) < 0 ||
	    docker_req_path(&r, e, "/volumes/%s", name) < 0)
		goto done;
	rc = docker_call(c, &r, NULL, NULL, e);
done:
	docker_req_cleanup(&r);
	return rc;
}

int docker_volume_users(struct docker_client *c, const char *name, json_object **out,
			struct sp_err *e)
{
	struct docker_req r;
	json_object *filters, *arr;
	int rc = -1;

	*out = NULL;
	if (!docker_valid_id(name))
		return sp_err_set(e, SP_NOT_FOUND, "No such volume");
	filters = json_object_new_object();
	arr = json_object_new_array();
	json_object_array_add(arr, json_object_new_string(name));
	json_object_object_add(filters, "volume", arr);
	docker_req_init(&r, "GET");
	if (docker_req_path(&r, e, "/containers/json") < 0 ||
	    docker_req_query(&r, "all", "1", e) < 0 ||
	    docker_req_query(&r, "filters",
			     json_object_to_json_string_ext(filters, JSON_C_TO_STRING_PLAIN),
			     e) < 0)
		goto done;
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

int docker_volume_list(struct docker_client *c, const char *label, json_object **out,
		       struct sp_err *e)
{
	struct docker_req r;
	json_object *filters, *arr, *answer = NULL, *vols;
	int rc = -1;

	*out = NULL;
	for (const char *p = label; *p; p++)
		if ((unsigned char)*p < 0x20)
			return sp_err_field(e, SP_BAD_REQUEST, "label", "invalid label");
	filters = json_object_new_object();
	arr = json_object_new_array();
	json_object_array_add(arr, json_object_new_string(label));
	json_object_object_add(filters, "label", arr);
	docker_req_init(&r, "GET");
	if (docker_req_path(&r, e, "/volumes") < 0 ||
	    docker_req_query(&r, "filters",
			     json_object_to_json_string_ext(filters, JSON_C_TO_STRING_PLAIN),
			     e) < 0)
		goto done;
	rc = docker_call(c, &r, NULL, &answer, e);
	if (rc == 0) {
		if (answer && json_object_object_get_ex(answer, "Volumes", &vols) &&
		    json_object_is_type(vols, json_type_array))
			*out = json_object_get(vols);
		else if (answer && json_object_object_get_ex(answer, "Volumes", &vols) && !vols)
			*out = json_object_new_array(); /* Docker's null: none */
		else
			rc = sp_err_set(e, SP_INTERNAL, "Docker's volume list has no Volumes");
	}
done:
	json_object_put(answer);
	json_object_put(filters);
	docker_req_cleanup(&r);
	return rc;
}
