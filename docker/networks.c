/*
 * Network endpoints: inspect, and ensure, which makes the per-server bridge
 * networks exist with inter-container traffic off. It must never remove a
 * network that has containers attached: a misconfigured one in use is kept
 * with a warning instead.
 */
#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "docker_int.h"

#define ICC_OPT "com.docker.network.bridge.enable_icc"
#define BRIDGE_OPT "com.docker.network.bridge.name"

/* Missing or invalid name: SP_NOT_FOUND. */
int docker_network_inspect(struct docker_client *c, const char *name, json_object **out,
			   struct sp_err *e)
{
	return docker_inspect_call(c, "/networks/%s", name, "network", out, e);
}

/* Whether an inspected network is a bridge with ICC off and the wanted
 * Internal flag. */
static int network_fits(json_object *net, int internal)
{
	json_object *opts, *v;
	const char *driver = docker_json_str(net, "Driver");
	const char *icc;
	int is_internal = 0;

	if (json_object_object_get_ex(net, "Internal", &v))
		is_internal = json_object_get_boolean(v);
	if (!json_object_object_get_ex(net, "Options", &opts))
		opts = NULL;
	icc = docker_json_str(opts, ICC_OPT);
	return driver && strcmp(driver, "bridge") == 0 && icc && strcmp(icc, "false") == 0 &&
	       !is_internal == !internal;
}

static int network_in_use(json_object *net)
{
	json_object *v;

	return json_object_object_get_ex(net, "Containers", &v) &&
	       json_object_is_type(v, json_type_object) && json_object_object_length(v) > 0;
}

/* DELETE /networks/{id}; a network already gone is success. */
static int network_remove(struct docker_client *c, const char *id, struct sp_err *e)
{
	struct docker_req r;
	int rc = -1;

	docker_req_init(&r, "DELETE");
	if (docker_check_id(id, "network", e) < 0 || docker_req_path(&r, e, "/networks/%s", id) < 0)
		goto done;
	r.ok_status[0] = 404;
	rc = docker_call(c, &r, NULL, NULL, e);
done:
	docker_req_cleanup(&r);
	return rc;
}

/* POST /networks/create. CheckDuplicate makes a name clash a 409 on API
 * versions that would otherwise create a second network of the same name. */
static int network_create(struct docker_client *c, const char *name, int internal,
			  const char *label, const char *bridge, struct sp_err *e)
{
	json_object *body = json_object_new_object();
	json_object *opts = json_object_new_object();
	json_object *labels = json_object_new_object();
	struct docker_req r;
	int rc = -1;

	docker_req_init(&r, "POST");
	if (!body || !opts || !labels ||
	    json_object_object_add(body, "Name", json_object_new_string(name)) < 0 ||
	    json_object_object_add(body, "Driver", json_object_new_string("bridge")) < 0 ||
	    json_object_object_add(body, "Internal", json_object_new_boolean(internal)) < 0 ||
	    json_object_object_add(body, "CheckDuplicate", json_object_new_boolean(1)) < 0 ||
	    json_object_object_add(opts, ICC_OPT, json_object_new_string("false")) < 0 ||
	    (bridge && bridge[0] &&
	     json_object_object_add(opts, BRIDGE_OPT, json_object_new_string(bridge)) < 0) ||
	    (label && json_object_object_add(labels, label, json_object_new_string("true")) < 0)) {
		sp_err_set(e, SP_INTERNAL, "out of memory");
		goto done;
	}
	json_object_object_add(body, "Options", opts);
	opts = NULL;
	json_object_object_add(body, "Labels", labels);
	labels = NULL;
	if (docker_req_path(&r, e, "/networks/create") < 0)
		goto done;
	rc = docker_call(c, &r, body, NULL, e);
done:
	json_object_put(opts);
	json_object_put(labels);
	json_object_put(body);
	docker_req_cleanup(&r);
	return rc;
}

/* The ids of the networks named exactly name, as a new array *out (caller
 * puts it). Docker's name filter is a regex match; names are compared here. */
static int network_find(struct docker_client *c, const char *name, json_object **out,
			struct sp_err *e)
{
	json_object *list = NULL, *filters = NULL, *arr = NULL, *ids = json_object_new_array();
	struct docker_req r;
	char re[160];
	int rc = -1;

	*out = NULL;
	docker_req_init(&r, "GET");
	snprintf(re, sizeof(re), "^%s$", name);
	filters = json_object_new_object();
	arr = json_object_new_array();
	if (!ids || !filters || !arr ||
	    json_object_array_add(arr, json_object_new_string(re)) < 0 ||
	    json_object_object_add(filters, "name", arr) < 0) {
		json_object_put(arr);
		sp_err_set(e, SP_INTERNAL, "out of memory");
		goto done;
	}
	if (docker_req_path(&r, e, "/networks") < 0 ||
	    docker_req_query(&r, "filters",
			     json_object_to_json_string_ext(filters, JSON_C_TO_STRING_PLAIN),
			     e) < 0 ||
	    docker_call(c, &r, NULL, &list, e) < 0)
		goto done;
	if (!list || !json_object_is_type(list, json_type_array)) {
		sp_err_set(e, SP_INTERNAL, "Docker's network list is not an array");
		goto done;
	}
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *net = json_object_array_get_idx(list, i);
		const char *n = docker_json_str(net, "Name"), *id = docker_json_str(net, "Id");
		if (n && id && strcmp(n, name) == 0 && docker_valid_id(id))
			json_object_array_add(ids, json_object_new_string(id));
	}
	*out = ids;
	ids = NULL;
	rc = 0;
done:
	json_object_put(ids);
	json_object_put(list);
	json_object_put(filters);
	docker_req_cleanup(&r);
	return rc;
}

/* Removes network id unless containers are attached (then warns). A network
 * already gone, or one that cannot be removed, is logged and skipped. */
static void network_drop(struct docker_client *c, const char *name, const char *id)
{
	json_object *net = NULL;
	struct sp_err e;

	if (docker_network_inspect(c, id, &net, &e) < 0) {
		if (e.code != SP_NOT_FOUND)
			log_warn("docker: network %s (%s): %s", name, id, e.msg);
	} else if (network_in_use(net)) {
		log_warn("docker: network %s (%s) has containers attached; keeping it", name, id);
	} else if (network_remove(c, id, &e) < 0) {
		log_warn("docker: removing network %s (%s): %s", name, id, e.msg);
	}
	json_object_put(net);
}

/* Works in rounds until one fitting network of that name remains: no
 * network, create one; several (Docker 20.10's CheckDuplicate does not stop
 * two creates that race), keep the lowest Id, which every racer agrees on,
 * and drop the others; one that does not fit, drop it and create again,
 * unless containers use it (then keep it with a warning). Mapping: an
 * invalid name or label is SP_BAD_REQUEST; a create conflict (409) is not an
 * error; no settled network after the rounds is SP_INTERNAL; others as
 * docker_call. */
int docker_network_ensure(struct docker_client *c, const char *name, int internal,
			  const char *label, struct sp_err *e)
{
	return docker_network_ensure_ex(c, name, internal, label, NULL, NULL, 0, e);
}

/* The host interface of an inspected bridge network: its bridge.name
 * option, else Docker's default br-<first 12 of the id>. */
static void network_bridge(json_object *net, char *out, size_t cap)
{
	json_object *opts;
	const char *b = NULL, *id = docker_json_str(net, "Id");

	if (json_object_object_get_ex(net, "Options", &opts))
		b = docker_json_str(opts, BRIDGE_OPT);
	if (b && b[0])
		snprintf(out, cap, "%s", b);
	else
		snprintf(out, cap, "br-%.12s", id ? id : "");
}

int docker_network_ensure_ex(struct docker_client *c, const char *name, int internal,
			     const char *label, const char *bridge, char *out_bridge, size_t cap,
			     struct sp_err *e)
{
	json_object *ids = NULL, *net = NULL;
	struct sp_err own;
	int rc = -1;

	if (!e)
		e = &own;
	if (!docker_valid_id(name)) {
		sp_err_field(e, SP_BAD_REQUEST, "name", "invalid network name");
		goto done;
	}
	if (bridge && (strlen(bridge) > 15 || (bridge[0] && !docker_valid_id(bridge)))) {
		sp_err_field(e, SP_BAD_REQUEST, "bridge", "invalid bridge name");
		goto done;
	}
	if (label && (!label[0] || strpbrk(label, "\n\r\t"))) {
		sp_err_field(e, SP_BAD_REQUEST, "label", "invalid label");
		goto done;
	}
	for (int round = 0; round < 4; round++) {
		const char *win = NULL;
		size_t n;

		json_object_put(ids);
		json_object_put(net);
		net = NULL;
		if (network_find(c, name, &ids, e) < 0)
			goto done;
		n = json_object_array_length(ids);
		if (n == 0) {
			if (network_create(c, name, internal, label, bridge, e) < 0 &&
			    e->code != SP_CONFLICT)
				goto done;
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			const char *id = json_object_get_string(json_object_array_get_idx(ids, i));
			if (!win || strcmp(id, win) < 0)
				win = id;
		}
		for (size_t i = 0; i < n; i++) {
			const char *id = json_object_get_string(json_object_array_get_idx(ids, i));
			if (id != win)
				network_drop(c, name, id);
		}
		if (docker_network_inspect(c, win, &net, e) < 0) {
			if (e->code == SP_NOT_FOUND)
				continue;
			goto done;
		}
		if (network_fits(net, internal)) {
			if (out_bridge)
				network_bridge(net, out_bridge, cap);
			rc = 0;
			goto done;
		}
		if (network_in_use(net)) {
			log_warn("docker: network %s lacks %s=false or Internal=%d but has "
				 "containers attached; keeping it",
				 name, ICC_OPT, internal);
			if (out_bridge)
				network_bridge(net, out_bridge, cap);
			rc = 0;
			goto done;
		}
		log_warn("docker: network %s lacks %s=false or Internal=%d; recreating it", name,
			 ICC_OPT, internal);
		network_drop(c, name, win);
	}
	sp_err_set(e, SP_INTERNAL, "network %s did not settle (created and removed concurrently?)",
		   name);
done:
	json_object_put(ids);
	json_object_put(net);
	return rc;
}
