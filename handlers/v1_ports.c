/*
 * The /v1 ports (createPort, listPorts, getPort, deletePort), core.ports
 * of a Sandbox, and /_auth_preview: nginx's auth_request for each request
 * to a preview URL, which answers the target "ip:port" (X-Sandpit-Target)
 * that nginx then proxies to (proxy_pass http://$target, no reload). A
 * preview URL is <origin>/p/<number>-<uid>/ (path-based), or
 * <scheme>://<number>-<uid>.<preview_domain>/ when the operator set
 * preview_domain (host-based; the path form is then refused, so no
 * preview shares sandpit's origin); <uid> is 32 random characters, the
 * unguessable part. With preview_require_key, a request also needs an API
 * key of the port's organization holding sandboxesRead (x-api-key; nginx
 * never passes it on). The target comes only from the port's record and
 * its container (sandbox/ports.c), never from the request. Never logs a
 * key.
 */
#include "handlers.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../common/crypto.h"
#include "../common/perms.h"
#include "../common/util.h"

#define PREVIEW_PATH "/p/"

/* The preview URL of p: 0, or -1 when no origin is known. */
static int preview_url(struct handler_ctx *h, const struct sandbox_port *p, char *out, size_t cap)
{
	char origin[V1_EP_ORIGIN_MAX];
	int n;

	if (v1_endpoint_origin(h->cfg, h->r, origin, sizeof(origin)) < 0)
		return -1;
	if (h->cfg->preview_domain[0]) {
		const char *sep = strstr(origin, "://");
		n = snprintf(out, cap, "%.*s://%d-%s.%s/", sep ? (int)(sep - origin) : 5,
			     sep ? origin : "https", p->number, p->uid, h->cfg->preview_domain);
	} else {
		n = snprintf(out, cap, "%s" PREVIEW_PATH "%d-%s/", origin, p->number, p->uid);
	}
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* A port's ETag: it never changes while the publication lives (a port is
 * immutable), so the keyed hash of its sandbox, number and uid. */
static void port_etag(const struct config *cfg, const char *sandbox, const struct sandbox_port *p,
		      char out[V1_ETAG_MAX])
{
	char in[200];
	int n = snprintf(in, sizeof(in), "%s\n%d\n%s", sandbox, p->number, p->uid);

	v1_etag_of(cfg, "port", in, n > 0 ? (size_t)n : 0, out);
}

static json_object *port_json(struct handler_ctx *h, const char *sandbox,
			      const struct sandbox_port *p)
{
	json_object *o = json_object_new_object();
	char name[SANDBOX_ID_LEN + 32], url[600], tag[V1_ETAG_MAX];

	snprintf(name, sizeof(name), "sandboxes/%s/ports/%d", sandbox, p->number);
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "number", json_object_new_int(p->number));
	json_object_object_add(o, "protocol", json_object_new_string("tcp"));
	if (preview_url(h, p, url, sizeof(url)) == 0)
		json_object_object_add(o, "url", json_object_new_string(url));
	port_etag(h->cfg, sandbox, p, tag);
	json_object_object_add(o, "etag", json_object_new_string(tag));
	json_object_object_add(o, "uid", json_object_new_string(p->uid));
	return o;
}

json_object *v1_ports_published(struct handler_ctx *h, const struct sandbox *sb)
{
	struct sandbox_port ports[SB_PORTS_MAX];
	json_object *arr = json_object_new_array();
	int n = sb->status == SB_KILLED || sb->status == SB_ERROR
			? 0
			: sandbox_ports_parse(sb, ports, SB_PORTS_MAX);

	for (int i = 0; i < n; i++) {
		json_object *o = json_object_new_object();
		char url[600];
		json_object_object_add(o, "sandboxPort", json_object_new_int(ports[i].number));
		json_object_object_add(o, "protocol", json_object_new_string("tcp"));
		/* the ETag's rendering has no request: the URL's stable part */
		if (!h || preview_url(h, &ports[i], url, sizeof(url)) < 0)
			snprintf(url, sizeof(url), PREVIEW_PATH "%d-%s/", ports[i].number,
				 ports[i].uid);
		json_object_object_add(o, "url", json_object_new_string(url));
		json_object_array_add(arr, o);
	}
	return arr;
}

/* The sandbox (404 when absent or another org's) and its port number
 * (NULL, 0 when not published). */
static int find_port(struct handler_ctx *h, json_object *in, struct sandbox *sb,
		     struct sandbox_port *out, struct sp_err *e)
{
	struct sandbox_port ports[SB_PORTS_MAX];
	int64_t number = hin_i64(in, "port", 0);
	int n;

	if (sandbox_get(h->sb, h->r->org, hin_str(in, "sandbox", NULL), sb, e) < 0)
		return -1;
	n = sb->status == SB_KILLED || sb->status == SB_ERROR
		    ? 0
		    : sandbox_ports_parse(sb, ports, SB_PORTS_MAX);
	for (int i = 0; i < n; i++)
		if (ports[i].number == number) {
			*out = ports[i];
			return 1;
		}
	return 0;
}

int v1_ports_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox sb;
	struct sandbox_port ports[SB_PORTS_MAX];
	json_object *arr;
	int n;

	if (sandbox_get(h->sb, h->r->org, hin_str(in, "sandbox", NULL), &sb, e) < 0)
		return -1;
	n = sb.status == SB_KILLED || sb.status == SB_ERROR
		    ? 0
		    : sandbox_ports_parse(&sb, ports, SB_PORTS_MAX);
	arr = json_object_new_array();
	for (int i = 0; i < n; i++)
		json_object_array_add(arr, port_json(h, sb.id, &ports[i]));
	*out = json_object_new_object();
	json_object_object_add(*out, "published", arr);
	return 0;
}

int v1_ports_create(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	json_object *port;
	struct sandbox_port p;
	const char *id = hin_str(in, "sandbox", NULL);

	if (!json_object_object_get_ex(in, "port", &port))
		return sp_err_field(e, SP_BAD_REQUEST, "port", "port: Required");
	if (sandbox_port_create(h->sb, h->r->org, id, (int)hin_i64(port, "number", 0), &p, e) < 0)
		return -1;
	*out = port_json(h, id, &p);
	return 0;
}

int v1_ports_get(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox sb;
	struct sandbox_port p;
	int rc = find_port(h, in, &sb, &p, e);

	if (rc < 0)
		return -1;
	if (rc == 0)
		return sp_err_set(e, SP_NOT_FOUND, "No publication exists for port %lld",
				  (long long)hin_i64(in, "port", 0));
	*out = port_json(h, sb.id, &p);
	return 0;
}

/* 204 whether or not it was published (the document); a published one
 * needs its current ETag. */
int v1_ports_delete(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *want = hin_str(in, ROUTE_IN_IF_MATCH, NULL);
	struct sandbox sb;
	struct sandbox_port p;
	char tag[V1_ETAG_MAX];
	int rc = find_port(h, in, &sb, &p, e);

	*out = NULL;
	if (rc <= 0)
		return rc;
	port_etag(h->cfg, sb.id, &p, tag);
	if (v1_if_match(want, tag, "port", e) < 0)
		return -1;
	return sandbox_port_delete(h->sb, h->r->org, sb.id, p.number, e) < 0 ? -1 : 0;
}

/* --- /_auth_preview ---------------------------------------------------------- */

static void answer(struct req *r, int status, const char *headers)
{
	r->status = status;
	FCGX_FPrintF(r->fx->out,
		     "Status: %d %s\r\nCache-Control: no-store\r\nContent-Length: 0\r\n%s\r\n",
		     status,
		     status == 200   ? "OK"
		     : status == 401 ? "Unauthorized"
		     : status == 403 ? "Forbidden"
				     : "Service Unavailable",
		     headers);
}

/* A refusal nginx turns into the caller's answer: 403 to nginx, with the
 * status and the message it answers (X-Sandpit-Deny, X-Sandpit-Error). */
static void deny(struct req *r, int status, const char *msg)
{
	char hdr[700];
	size_t n = strcspn(msg, "\r\n");

	snprintf(hdr, sizeof(hdr), "X-Sandpit-Deny: %d\r\nX-Sandpit-Error: %.*s\r\n", status,
		 (int)(n > 500 ? 500 : n), msg);
	answer(r, 403, hdr);
}

int v1_ports_preview_split(const char *domain, int host_mode, const char *uri, const char *host,
			   char *label, size_t cap, char *rest, size_t rcap)
{
	size_t n;

	if (host_mode) {
		const char *dot = strchr(host, '.');
		size_t hlen, dlen = strcspn(domain, ":");
		if (!domain[0] || !dot || dot == host)
			return -1;
		hlen = strcspn(dot + 1, ":");
		if (hlen != dlen || strncasecmp(dot + 1, domain, dlen) != 0 ||
		    (size_t)(dot - host) >= cap)
			return -1;
		memcpy(label, host, (size_t)(dot - host));
		label[dot - host] = '\0';
		for (char *c = label; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		if (uri[0] != '/')
			return -1;
	} else {
		if (strncmp(uri, PREVIEW_PATH, strlen(PREVIEW_PATH)) != 0)
			return -1;
		uri += strlen(PREVIEW_PATH);
		n = strcspn(uri, "/?");
		if (n == 0 || n >= cap)
			return -1;
		memcpy(label, uri, n);
		label[n] = '\0';
		uri += n;
	}
	/* what the sandbox's server gets: always an absolute path (never a
	 * host: the target is ours), nothing that ends or splits a header */
	for (const char *c = uri; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f)
			return -1;
	n = (size_t)snprintf(rest, rcap, "%s%s", uri[0] == '/' ? "" : "/", uri);
	return n >= rcap ? -1 : 0;
}

void v1_ports_auth(struct sandbox_ctx *sb, struct req *r)
{
	char label[80], rest[16400], target[80], org[65], hdr[16600];
	int host_mode = strcmp(req_param(r, "SANDPIT_AUTH_PREVIEW"), "host") == 0;
	struct sp_err e;

	sp_err_clear(&e);
	/* with preview_domain every preview lives on an origin of its own:
	 * the path form on sandpit's origin is not served (RELIABILITY T4) */
	if (!host_mode && sb->cfg->preview_domain[0]) {
		deny(r, 404,
		     "No published port here: previews are served at "
		     "<number>-<uid>.<preview_domain>, not under /p/");
		return;
	}
	if (v1_ports_preview_split(sb->cfg->preview_domain, host_mode,
				   req_param(r, "SANDPIT_AUTH_URI"), req_param(r, "HTTP_HOST"),
				   label, sizeof(label), rest, sizeof(rest)) < 0) {
		deny(r, 404, "No published port here");
		return;
	}
	if (sandbox_port_resolve(sb, label, target, sizeof(target), org, sizeof(org), &e) < 0) {
		deny(r, e.code == SP_NOT_FOUND ? 404 : e.code == SP_UNAVAILABLE ? 503 : 502, e.msg);
		return;
	}
	if (sb->cfg->preview_require_key) {
		const char *key = req_param(r, "HTTP_X_API_KEY");
		char hash[65], korg[65], perms[PERMS_LIST_MAX];
		int rc;
		if (!*key) {
			answer(r, 401,
			       "X-Sandpit-Error: This preview URL needs an API key of its "
			       "organization: send it in x-api-key\r\n");
			return;
		}
		crypto_key_hash(sb->cfg->data_key, key, strlen(key), hash);
		rc = handlers_auth_key(sb, hash, korg, sizeof(korg), perms, sizeof(perms), &e);
		if (rc < 0 && e.code != SP_UNAUTHORIZED) {
			answer(r, 503, "");
			return;
		}
		if (rc < 0 || strcmp(korg, org) != 0) {
			answer(r, 401, "X-Sandpit-Error: Invalid API key for this preview URL\r\n");
			return;
		}
		if (!route_has_perm(perms, "sandboxesRead")) {
			deny(r, 403, "This API key lacks the sandboxesRead permission");
			return;
		}
	}
	snprintf(hdr, sizeof(hdr), "X-Sandpit-Target: %s\r\nX-Sandpit-Path: %s\r\n", target, rest);
	answer(r, 200, hdr);
}
