/*
 * The network check of a remote Docker server. sandpit installs deny rules
 * on the local server only (firewall.c); on a remote one the operator must
 * provide them, so sandpit checks from the inside: a short-lived probe
 * container on each sandbox network of that server tries the bridge
 * gateway (the host) on the server's Docker port and probe_ports, and
 * 169.254.169.254:80, with busybox nc and a 1 s timeout each, all at once.
 * A target that answers, or refuses (a reset also comes from the host), is
 * reached; the check passes when every target timed out or was rejected.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"
#include "helper/proto.h"
#include "sh_programs.h"

#define METADATA "169.254.169.254:80"

static int collect(void *arg, int stream, const char *data, size_t len)
{
	struct buf *b = arg;

	if (stream == 1 && b->len + len < 64 * 1024)
		return buf_append(b, data, len) < 0 ? -1 : 0;
	return 0;
}

static const char *probe_image(const struct config *cfg)
{
	const struct template_conf *t;

	if (cfg->probe_image[0])
		return cfg->probe_image;
	t = config_template(cfg, "alpine");
	return t ? t->image : "alpine:3.19";
}

/* The gateway address of network name (the host's address on its bridge). */
static int network_gateway(struct docker_client *dk, const char *name, char *out, size_t cap,
			   struct sp_err *e)
{
	json_object *net = NULL, *ipam, *conf;
	int rc = -1;

	out[0] = '\0';
	if (docker_network_inspect(dk, name, &net, e) < 0)
		return -1;
	if (json_object_object_get_ex(net, "IPAM", &ipam) &&
	    json_object_object_get_ex(ipam, "Config", &conf) &&
	    json_object_is_type(conf, json_type_array))
		for (size_t i = 0; i < json_object_array_length(conf) && !out[0]; i++) {
			json_object *g, *c = json_object_array_get_idx(conf, i);
			const char *s;
			if (json_object_object_get_ex(c, "Gateway", &g) &&
			    (s = json_object_get_string(g)) && s[0] && !strchr(s, ':'))
				str_copy(out, cap, s);
		}
	if (out[0])
		rc = 0;
	else
		sp_err_set(e, SP_INTERNAL, "network %s has no IPv4 gateway", name);
	json_object_put(net);
	return rc;
}

static json_object *probe_body(const struct config *cfg, const char *image, const char *net)
{
	json_object *o = json_object_new_object(), *hc = json_object_new_object();
	json_object *cmd = json_object_new_array(), *labels = json_object_new_object();
	json_object *caps = json_object_new_array(), *sec = json_object_new_array();
	json_object *nc = json_object_new_object(), *ep = json_object_new_object();
	char lname[96];

	json_object_object_add(o, "Image", json_object_new_string(image));
	json_object_array_add(cmd, json_object_new_string(HC_SLEEP));
	json_object_array_add(cmd, json_object_new_string("30"));
	json_object_object_add(o, "Cmd", cmd);
	json_object_object_add(o, "User", json_object_new_string("65534:65534"));
	config_label(cfg, "probe", lname, sizeof(lname));
	json_object_object_add(labels, lname, json_object_new_string("true"));
	json_object_object_add(o, "Labels", labels);
	json_object_array_add(caps, json_object_new_string("ALL"));
	json_object_object_add(hc, "CapDrop", caps);
	json_object_array_add(sec, json_object_new_string("no-new-privileges"));
	json_object_object_add(hc, "SecurityOpt", sec);
	json_object_object_add(hc, "AutoRemove", json_object_new_boolean(1));
	json_object_object_add(hc, "Memory", json_object_new_int64(64LL << 20));
	json_object_object_add(hc, "PidsLimit", json_object_new_int64(64));
	json_object_object_add(hc, "NetworkMode", json_object_new_string(net));
	json_object_object_add(o, "HostConfig", hc);
	json_object_object_add(ep, net, json_object_new_object());
	json_object_object_add(nc, "EndpointsConfig", ep);
	json_object_object_add(o, "NetworkingConfig", nc);
	return o;
}

/* Probes from network net; appends the reached targets to detail. 1 when
 * nothing was reached, 0 when something was, -1 on error. */
static int probe_network(struct sandbox_ctx *ctx, const char *mode, const char *docker_port,
			 char *detail, size_t cap, struct sp_err *e)
{
	const struct config *cfg = ctx->cfg;
	char net[128], gw[64], cid[65] = "", exec_id[65], cname[96], rid[13];
	json_object *body = NULL, *ex = NULL, *cmd;
	struct buf out;
	int rc = -1, timed_out = 0, exit_code = -1, running = 0, ntargets = 0, lines = 0;

	buf_init(&out, 64 * 1024);
	config_network_name(cfg, mode, net, sizeof(net));
	if (network_gateway(ctx->dk, net, gw, sizeof(gw), e) < 0)
		goto done;
	crypto_random_id(rid, 12);
	snprintf(cname, sizeof(cname), "%s-probe-%s", cfg->label_prefix, rid);
	body = probe_body(cfg, probe_image(cfg), net);
	if (docker_container_create(ctx->dk, cname, body, cid, e) < 0 ||
	    docker_container_start(ctx->dk, cid, e) < 0)
		goto done;
	ex = json_object_new_object();
	cmd = json_object_new_array();
	json_object_array_add(cmd, json_object_new_string("sh"));
	json_object_array_add(cmd, json_object_new_string("-c"));
	json_object_array_add(cmd, json_object_new_string(sh_probe));
	json_object_array_add(cmd, json_object_new_string("probe"));
	{
		char list[sizeof(cfg->probe_ports) + 16], t[96];
		const char *p;
		snprintf(list, sizeof(list), "%s%s%s", docker_port ? docker_port : "",
			 docker_port && docker_port[0] ? "," : "", cfg->probe_ports);
		for (p = list; *p;) {
			size_t n = strcspn(p, ", \t");
			if (n > 0 && n < 8) {
				snprintf(t, sizeof(t), "%s:%.*s", gw, (int)n, p);
				json_object_array_add(cmd, json_object_new_string(t));
				ntargets++;
			}
			p += n;
			while (*p == ',' || *p == ' ' || *p == '\t')
				p++;
		}
	}
	json_object_array_add(cmd, json_object_new_string(METADATA));
	ntargets++;
	json_object_object_add(ex, "Cmd", cmd);
	json_object_object_add(ex, "AttachStdout", json_object_new_boolean(1));
	json_object_object_add(ex, "AttachStderr", json_object_new_boolean(1));
	if (docker_exec_create(ctx->dk, cid, ex, exec_id, e) < 0 ||
	    docker_exec_start(ctx->dk, exec_id, 20000, collect, NULL, &out, &timed_out, e) < 0)
		goto done;
	if (timed_out) {
		sp_err_set(e, SP_UNAVAILABLE, "the probe on %s did not end within 20 s", net);
		goto done;
	}
	docker_exec_inspect(ctx->dk, exec_id, &exit_code, &running, e);
	rc = 1;
	if (buf_append(&out, "", 1) < 0) {
		rc = sp_err_set(e, SP_INTERNAL, "out of memory");
		goto done;
	}
	for (char *line = out.data; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (strncmp(line, "open ", 5) == 0 || strncmp(line, "refused ", 8) == 0) {
			size_t k = strlen(detail);
			snprintf(detail + k, cap - k, "%s%s %s: %s", k ? "; " : "", mode,
				 strchr(line, ' ') + 1, line[0] == 'o' ? "answers" : "refused");
			rc = 0;
			lines++;
		} else if (strncmp(line, "filtered ", 9) == 0) {
			lines++;
		}
		line = nl ? nl + 1 : NULL;
	}
	if (lines != ntargets) {
		rc = sp_err_set(e, SP_INTERNAL,
				"the probe on %s gave %d of %d answers (does %s have sh and nc?)",
				net, lines, ntargets, probe_image(cfg));
	}
done:
	if (cid[0]) {
		struct sp_err ignore;
		docker_container_remove(ctx->dk, cid, 1, &ignore);
	}
	json_object_put(body);
	json_object_put(ex);
	buf_free(&out);
	return rc;
}

int sandbox_net_probe(struct sandbox_ctx *ctx, const char *docker_port, char *status, size_t scap,
		      char *detail, size_t dcap)
{
	struct sp_err e;
	int pass = 1;

	detail[0] = '\0';
	if (sandbox_prepare_server(ctx, &e) < 0) {
		str_copy(status, scap, "error");
		str_copy(detail, dcap, e.msg);
		return -1;
	}
	{
		json_object *img = NULL;
		const char *image = probe_image(ctx->cfg);
		if (docker_image_inspect(ctx->dk, image, &img, &e) < 0 &&
		    (e.code != SP_NOT_FOUND ||
		     docker_image_pull(ctx->dk, image, ctx->cfg->pull_timeout_s, &e) < 0)) {
			str_copy(status, scap, "error");
			snprintf(detail, dcap, "probe image %s: %s", image, e.msg);
			return -1;
		}
		json_object_put(img);
	}
	for (int i = 0; i < 2; i++) {
		int r = probe_network(ctx, i == 0 ? "isolated" : "internet", docker_port, detail,
				      dcap, &e);
		if (r < 0) {
			str_copy(status, scap, "error");
			str_copy(detail, dcap, e.msg);
			return -1;
		}
		if (r == 0)
			pass = 0;
	}
	str_copy(status, scap, pass ? "pass" : "fail");
	return 0;
}
