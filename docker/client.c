/*
 * The Docker client's transport: one libcurl easy handle per client, talking
 * HTTP/1.1 over the daemon's unix socket and kept alive across requests;
 * version negotiation; escaping; the allow-list every request passes before
 * it is sent (RELIABILITY H6); and the mapping of transport failures and
 * Docker's answers to struct sp_err. It must never send a request whose
 * method + path is not in the allow-list, never put an unescaped caller
 * value into a URL, and never buffer an answer past a fixed cap.
 */
#include "docker_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/log.h"
#include "../common/metrics.h"
#include "../common/pathtmpl.h"
#include "../common/util.h"

/* The only requests this client may send, as common/pathtmpl.h templates.
 * {id}: a docker_valid_id segment; {name:ref}: one percent-escaped segment
 * (an image reference). */
static const struct {
	const char *method;
	const char *tmpl;
} allowed[] = {
	{ "GET", "/version" },
	{ "GET", "/info" },
	{ "GET", "/containers/json" },
	{ "POST", "/containers/create" },
	{ "GET", "/containers/{id}/json" },
	{ "POST", "/containers/{id}/start" },
	{ "POST", "/containers/{id}/stop" },
	{ "POST", "/containers/{id}/kill" },
	{ "POST", "/containers/{id}/pause" },
	{ "POST", "/containers/{id}/unpause" },
	{ "POST", "/containers/{id}/update" },
	{ "DELETE", "/containers/{id}" },
	{ "PUT", "/containers/{id}/archive" },
	{ "HEAD", "/containers/{id}/archive" },
	{ "GET", "/containers/{id}/archive" },
	{ "POST", "/containers/{id}/exec" },
	{ "POST", "/exec/{id}/start" },
	{ "GET", "/exec/{id}/json" },
	{ "POST", "/images/create" },
	{ "GET", "/images/{name:ref}/json" },
	{ "DELETE", "/images/{name:ref}" },
	{ "POST", "/images/{name:ref}/tag" },
	{ "POST", "/images/{name:ref}/push" },
	{ "GET", "/distribution/{name:ref}/json" },
	{ "POST", "/commit" },
	{ "GET", "/networks" },
	{ "POST", "/networks/create" },
	{ "GET", "/networks/{id}" },
	{ "DELETE", "/networks/{id}" },
	{ "GET", "/volumes" },
	{ "POST", "/volumes/create" },
	{ "GET", "/volumes/{id}" },
	{ "DELETE", "/volumes/{id}" },
};

static int is_alnum(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

static int is_unreserved(int ch)
{
	return is_alnum(ch) || ch == '.' || ch == '_' || ch == '~' || ch == '-';
}

int docker_escape(const char *s, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	if (!s || !out || cap == 0)
		return -1;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (is_unreserved(ch)) {
			if (o + 1 >= cap)
				return -1;
			out[o++] = (char)ch;
		} else {
			if (o + 3 >= cap)
				return -1;
			out[o++] = '%';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		}
	}
	out[o] = '\0';
	return 0;
}

int docker_valid_id(const char *s)
{
	return s && pathtmpl_id_ok(s, strnlen(s, 130));
}

/* The allow-list template that method + path matches, or NULL. */
static const char *path_template(const char *method, const char *path)
{
	size_t n;

	if (!method || !path || path[0] != '/')
		return NULL;
	n = strcspn(path, "?");
	/* an optional "/v<major>.<minor>" prefix */
	if (n > 2 && path[1] == 'v' && path[2] >= '0' && path[2] <= '9') {
		size_t i = 2, dots = 0;
		while (i < n && ((path[i] >= '0' && path[i] <= '9') || path[i] == '.')) {
			if (path[i] == '.')
				dots++;
			i++;
		}
		if (dots != 1 || path[i - 1] == '.' || i >= n || path[i] != '/')
			return NULL;
		path += i;
		n -= i;
	}
	for (size_t k = 0; k < sizeof(allowed) / sizeof(allowed[0]); k++) {
		if (strcmp(method, allowed[k].method) == 0 &&
		    pathtmpl_match(allowed[k].tmpl, path, n, NULL, NULL))
			return allowed[k].tmpl;
	}
	return NULL;
}

int docker_path_allowed(const char *method, const char *path)
{
	return path_template(method, path) != NULL;
}

/* A query built by docker_req_query holds only these bytes. */
static int query_ok(const char *q, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int ch = (unsigned char)q[i];
		if (!is_unreserved(ch) && ch != '%' && ch != '=' && ch != '&')
			return 0;
	}
	return 1;
}

/* Copies s into out for a log line, printable ASCII only. */
static void log_safe(const char *s, char *out, size_t cap)
{
	size_t o = 0;

	for (; s && *s && o + 1 < cap; s++) {
		int ch = (unsigned char)*s;
		out[o++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
	}
	out[o] = '\0';
}

/* Splits "user@host[:port]" (ssh) or "host:port" (tcp) into c. */
static int parse_endpoint(struct docker_client *c, const struct docker_endpoint *ep,
			  struct sp_err *e)
{
	const char *u = ep->url;

	if (!u)
		return sp_err_set(e, SP_BAD_REQUEST, "endpoint is required");
	if (strncmp(u, "unix://", 7) == 0) {
		c->transport = DT_UNIX;
		if (u[7] != '/')
			return sp_err_set(e, SP_BAD_REQUEST,
					  "unix:// needs an absolute socket path");
		if (str_copy(c->sock, sizeof(c->sock), u + 7) < 0)
			return sp_err_set(e, SP_BAD_REQUEST, "socket path is longer than %zu bytes",
					  sizeof(c->sock) - 1);
		str_copy(c->base, sizeof(c->base), "http://docker");
		return 0;
	}
	if (strncmp(u, "tcp://", 6) == 0) {
		const char *hp = u + 6, *colon = strrchr(hp, ':');
		long long port;
		int tls = ep->tls_cert && *ep->tls_cert;
		c->transport = DT_TCP;
		if (!colon || colon == hp || parse_ll(colon + 1, 1, 65535, &port) < 0 ||
		    strcspn(hp, "/?#@ ") < strlen(hp))
			return sp_err_set(e, SP_BAD_REQUEST, "tcp:// needs host:port");
		if (tls != (ep->tls_key && *ep->tls_key) || tls != (ep->tls_ca && *ep->tls_ca))
			return sp_err_set(
				e, SP_BAD_REQUEST,
				"TLS needs all three of the client certificate, key and CA");
		if (!tls)
			return sp_err_set(
				e, SP_BAD_REQUEST,
				"a tcp:// endpoint needs TLS (client certificate, key, CA)");
		snprintf(c->base, sizeof(c->base), "https://%s", hp);
		str_copy(c->tls_cert, sizeof(c->tls_cert), ep->tls_cert);
		str_copy(c->tls_key, sizeof(c->tls_key), ep->tls_key);
		str_copy(c->tls_ca, sizeof(c->tls_ca), ep->tls_ca);
		return 0;
	}
	if (strncmp(u, "ssh://", 6) == 0) {
		const char *d = u + 6, *colon = strrchr(d, ':');
		size_t n = colon ? (size_t)(colon - d) : strlen(d);
		long long port = 22;
		c->transport = DT_SSH;
		if (colon && parse_ll(colon + 1, 1, 65535, &port) < 0)
			return sp_err_set(e, SP_BAD_REQUEST, "ssh:// port must be 1..65535");
		if (n == 0 || n >= sizeof(c->ssh_dest) || !memchr(d, '@', n) || d[0] == '-' ||
		    strcspn(d, "/?# '\"\\;") < n)
			return sp_err_set(e, SP_BAD_REQUEST, "ssh:// needs user@host[:port]");
		memcpy(c->ssh_dest, d, n);
		c->ssh_dest[n] = '\0';
		snprintf(c->ssh_port, sizeof(c->ssh_port), "%lld", port);
		str_copy(c->ssh_key, sizeof(c->ssh_key), ep->ssh_key ? ep->ssh_key : "");
		str_copy(c->ssh_known_hosts, sizeof(c->ssh_known_hosts),
			 ep->ssh_known_hosts ? ep->ssh_known_hosts : "");
		str_copy(c->ssh_control_dir, sizeof(c->ssh_control_dir),
			 ep->ssh_control_dir ? ep->ssh_control_dir : "");
		str_copy(c->base, sizeof(c->base), "http://docker");
		return 0;
	}
	return sp_err_set(
		e, SP_BAD_REQUEST,
		"endpoint must be unix:///path, tcp://host:port or ssh://user@host[:port]");
}

int docker_endpoint_check(const struct docker_endpoint *ep, struct sp_err *e)
{
	struct docker_client *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	rc = parse_endpoint(c, ep, e);
	free(c);
	return rc;
}

struct docker_client *docker_client_create_ex(const struct docker_endpoint *ep, int timeout_s,
					      struct sp_err *e)
{
	struct docker_client *c = NULL;

	if (timeout_s <= 0) {
		sp_err_set(e, SP_INTERNAL, "docker timeout must be positive");
		goto fail;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		sp_err_set(e, SP_INTERNAL, "out of memory");
		goto fail;
	}
	if (parse_endpoint(c, ep, e) < 0)
		goto fail;
	c->pooled = ep->pooled;
	c->connect_timeout_ms = ep->connect_timeout_ms > 0 ? ep->connect_timeout_ms : 5000;
	c->timeout_s = timeout_s;
	snprintf(c->api, sizeof(c->api), "%d.%d", DOCKER_API_MIN_MAJOR, DOCKER_API_MIN_MINOR);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		sp_err_set(e, SP_INTERNAL, "curl_global_init failed");
		goto fail;
	}
	c->h = curl_easy_init();
	if (!c->h) {
		curl_global_cleanup();
		sp_err_set(e, SP_INTERNAL, "curl_easy_init failed");
		goto fail;
	}
	return c;
fail:
	free(c);
	return NULL;
}

struct docker_client *docker_client_create(const char *host, int timeout_s, struct sp_err *e)
{
	struct docker_endpoint ep = { 0 };

	ep.url = host;
	ep.pooled = 1;
	if (!host || strncmp(host, "unix://", 7) != 0) {
		sp_err_set(e, SP_INTERNAL, "docker_host must be unix:///path");
		return NULL;
	}
	return docker_client_create_ex(&ep, timeout_s, e);
}

void docker_client_set_label(struct docker_client *c, const char *label)
{
	if (label && *label)
		snprintf(c->label, sizeof(c->label), "%s: ", label);
	else
		c->label[0] = '\0';
}

void docker_client_next_timeout(struct docker_client *c, int ms)
{
	c->next_timeout_ms = ms > 0 ? ms : 0;
}

void docker_client_free(struct docker_client *c)
{
	if (!c)
		return;
	docker_transport_close(c);
	curl_easy_cleanup(c->h);
	curl_global_cleanup();
	free(c);
}

void docker_req_init(struct docker_req *r, const char *method)
{
	memset(r, 0, sizeof(*r));
	r->method = method;
	buf_init(&r->query, DOCKER_QUERY_MAX);
	buf_init(&r->resp, DOCKER_JSON_MAX);
	buf_init(&r->err, DOCKER_ERRBODY_MAX);
	r->out = &r->resp;
	r->guard_place = -1;
}

int docker_req_path(struct docker_req *r, struct sp_err *e, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(r->path, sizeof(r->path), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(r->path))
		return sp_err_set(e, SP_INTERNAL, "Docker request path is too long");
	return 0;
}

void docker_req_cleanup(struct docker_req *r)
{
	buf_free(&r->query);
	buf_free(&r->resp);
	buf_free(&r->err);
}

int docker_req_query(struct docker_req *r, const char *key, const char *val, struct sp_err *e)
{
	size_t cap = strlen(val) * 3 + 1;
	char *esc = malloc(cap);
	int rc = -1;

	if (!esc) {
		sp_err_set(e, SP_INTERNAL, "out of memory");
		goto done;
	}
	if (docker_escape(val, esc, cap) < 0 ||
	    buf_printf(&r->query, "%s%s=%s", r->query.len ? "&" : "", key, esc) < 0) {
		sp_err_set(e, SP_BAD_REQUEST, "query value for %s is too long", key);
		goto done;
	}
	rc = 0;
done:
	free(esc);
	return rc;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct docker_req *r = arg;
	size_t n = size * nmemb;

	curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &r->status);
	if (r->status < 200 || r->status > 299) {
		/* The head of an error body is its message; a tail past
		 * DOCKER_ERRBODY_MAX may go (the status tells the error). */
		buf_append_head(&r->err, p, n);
		return n;
	}
	if (r->sink) {
		if (r->sink(r->sink_arg, p, n) != 0) {
			r->aborted = 1;
			return 0;
		}
		return n;
	}
	if (buf_append(r->out, p, n) < 0) {
		r->too_big = 1;
		return 0;
	}
	return n;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *arg)
{
	static const char stat_name[] = "x-docker-container-path-stat:";
	struct docker_req *r = arg;
	size_t n = size * nmemb, k = sizeof(stat_name) - 1;

	docker_guard_answered(r); /* the server lives; first line only holds a place */
	if (n == 2 && p[0] == '\r' && p[1] == '\n')
		r->headers_done = 1;
	if (r->stat_hdr && n > k && strncasecmp(p, stat_name, k) == 0) {
		size_t s = k, end = n;
		while (s < end && (p[s] == ' ' || p[s] == '\t'))
			s++;
		while (end > s && (p[end - 1] == '\r' || p[end - 1] == '\n' || p[end - 1] == ' '))
			end--;
		if (end - s < r->stat_cap) {
			memcpy(r->stat_hdr, p + s, end - s);
			r->stat_hdr[end - s] = '\0';
		}
	}
	return n;
}

/* Aborts a transfer whose answer headers did not come within header_ms, or
 * whose caller asks to stop. */
static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct docker_req *r = arg;

	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	if (r->header_ms > 0 && !r->headers_done && mono_ms() > r->header_ms) {
		r->header_timeout = 1;
		return 1;
	}
	if (r->stop_fn && r->stop_fn(r->stop_arg)) {
		r->aborted = 1;
		return 1;
	}
	return 0;
}

int docker_req_url(struct docker_client *c, const struct docker_req *r, struct buf *url,
		   const char **tmpl, struct sp_err *e)
{
	char safe[160];

	if (r->unversioned ? buf_printf(url, "%s%s", c->base, r->path)
			   : buf_printf(url, "%s/v%s%s", c->base, c->api, r->path))
		return sp_err_set(e, SP_INTERNAL, "Docker request URL is too long");
	*tmpl = path_template(r->method, url->data + strlen(c->base));
	if (!*tmpl || !query_ok(r->query.data ? r->query.data : "", r->query.len)) {
		log_safe(url->data, safe, sizeof(safe));
		log_error("docker: refused %s %s: not in the allow-list", r->method, safe);
		return sp_err_set(e, SP_INTERNAL,
				  "refused to send a Docker request outside the allow-list");
	}
	if (r->query.len && buf_printf(url, "?%s", r->query.data) < 0)
		return sp_err_set(e, SP_INTERNAL, "Docker request URL is too long");
	return 0;
}

/* Builds r's URL and headers and sets every option of h for it (after a
 * reset, which keeps h's live connection). *hdrs is new (req_release
 * frees it); errbuf must outlive the transfer. */
static int req_prepare(struct docker_client *c, CURL *h, struct docker_req *r, int64_t timeout_ms,
		       char *errbuf, struct curl_slist **hdrs, struct buf *url, const char **tmpl,
		       struct sp_err *e)
{
	struct curl_slist *tmp;

	r->h = h;
	if (docker_req_url(c, r, url, tmpl, e) < 0)
		return -1;
	tmp = curl_slist_append(*hdrs, "Expect:");
	if (tmp)
		*hdrs = tmp;
	if (tmp && (r->body || r->ctype)) {
		char ct[128];
		snprintf(ct, sizeof(ct), "Content-Type: %s",
			 r->ctype ? r->ctype : "application/json");
		tmp = curl_slist_append(*hdrs, ct);
		if (tmp)
			*hdrs = tmp;
	}
	if (tmp && r->auth) {
		struct buf ah;
		buf_init(&ah, 8192);
		tmp = buf_printf(&ah, "X-Registry-Auth: %s", r->auth) == 0
			      ? curl_slist_append(*hdrs, ah.data)
			      : NULL;
		buf_wipe(&ah);
		if (tmp)
			*hdrs = tmp;
	}
	if (!tmp)
		return sp_err_set(e, SP_INTERNAL, "out of memory");

	/* reset keeps the live connection, drops every option of the last request */
	curl_easy_reset(h);
	errbuf[0] = '\0';
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_URL, url->data);
	docker_transport_apply(c, h);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	if (r->header_ms > 0 || r->stop_fn) {
		if (r->header_ms > 0)
			r->header_ms += mono_ms();
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, r);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	}
	if (strcmp(r->method, "GET") == 0) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else if (strcmp(r->method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (strcmp(r->method, "DELETE") == 0) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
	} else {
		/* POST and PUT carry a body, perhaps empty */
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->body ? (const char *)r->body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(r->body ? r->body_len : 0));
		if (strcmp(r->method, "PUT") == 0)
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
	}
	return 0;
}

/* Maps the end of r's transfer (rc) as docker_perform documents; returns 0
 * when an HTTP answer came (or the caller aborted), -1 with e set. */
static int req_result(struct docker_client *c, struct docker_req *r, CURLcode rc,
		      int64_t timeout_ms, const char *errbuf, struct sp_err *e)
{
	int ret = -1;

	if (rc == CURLE_OK ||
	    ((rc == CURLE_WRITE_ERROR || rc == CURLE_ABORTED_BY_CALLBACK) && r->aborted)) {
		ret = 0;
	} else if (rc == CURLE_WRITE_ERROR && r->too_big) {
		sp_err_set(e, SP_TOO_LARGE, "Docker's answer is larger than %zu bytes",
			   r->out->max);
	} else if (rc == CURLE_OPERATION_TIMEDOUT && r->timeout_is_result && r->headers_done) {
		r->timed_out = 1;
		ret = 0;
	} else if (rc == CURLE_OPERATION_TIMEDOUT || r->header_timeout) {
		int64_t ms = r->header_timeout ? (int64_t)c->timeout_s * 1000 : timeout_ms;
		sp_err_set(e, SP_UNAVAILABLE, "%sDocker did not answer within %lld s", c->label,
			   (long long)((ms + 999) / 1000));
	} else if (rc == CURLE_OUT_OF_MEMORY) {
		sp_err_set(e, SP_INTERNAL, "out of memory");
	} else {
		sp_err_set(e, SP_UNAVAILABLE, "%sDocker is unreachable: %s", c->label,
			   errbuf[0] ? errbuf : curl_easy_strerror(rc));
	}
	if (ret < 0 && e && e->code == SP_UNAVAILABLE)
		log_warn("docker: %s %s: %s", r->method, r->path, e->msg);
	return ret;
}

/* Unhooks h from this frame's buffers and frees what req_prepare made. */
static void req_release(CURL *h, const struct docker_req *r, struct curl_slist *hdrs,
			struct buf *url)
{
	struct curl_slist *tmp;

	/* the handle must not keep pointers into this frame */
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	for (tmp = r->auth ? hdrs : NULL; tmp; tmp = tmp->next)
		explicit_bzero(tmp->data, strlen(tmp->data));
	curl_slist_free_all(hdrs);
	buf_free(url);
}

static void req_metrics(const struct docker_req *r, const char *tmpl, int64_t t0)
{
	char series[96], label[80];

	pathtmpl_label(tmpl, label, sizeof(label));
	snprintf(series, sizeof(series), "%s %s", r->method, label);
	metrics_observe(METRICS_DOCKER, series, (int)r->status, mono_us() - t0);
}

int docker_perform(struct docker_client *c, CURL *h, struct docker_req *r, struct sp_err *e)
{
	char errbuf[CURL_ERROR_SIZE];
	const char *tmpl = NULL;
	int64_t t0;
	struct curl_slist *hdrs = NULL;
	struct buf url;
	int64_t timeout_ms = r->timeout_ms > 0	      ? r->timeout_ms
			     : c->next_timeout_ms > 0 ? c->next_timeout_ms
						      : (int64_t)c->timeout_s * 1000;
	CURLcode rc;
	int ret = -1;

	c->next_timeout_ms = 0;
	buf_init(&url, DOCKER_URL_MAX);
	if (!h)
		h = c->h;
	errbuf[0] = '\0';
	if (req_prepare(c, h, r, timeout_ms, errbuf, &hdrs, &url, &tmpl, e) < 0)
		goto done;
	if (!r->unguarded && docker_guard_enter(c, r, timeout_ms, e) < 0) {
		log_warn("docker: %s %s: %s", r->method, r->path, e ? e->msg : "");
		goto done;
	}
	t0 = mono_us();
	rc = curl_easy_perform(h);
	docker_guard_leave(r);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	req_metrics(r, tmpl, t0);
	ret = req_result(c, r, rc, timeout_ms, errbuf, e);
done:
	req_release(h, r, hdrs, &url);
	return ret;
}

/* --- a GET's answer piped into a PUT's body ------------------------------- */

#define PIPE_RING ((size_t)4 << 20) /* the bytes in flight between the two */
#define PIPE_TICK_MS 200

struct pipe_ring {
	char *data;
	size_t head, len; /* the unread bytes: data[head..head+len) modulo PIPE_RING */
	struct docker_req *src;
	CURL *hs;
	int src_paused, dst_paused, src_done, src_failed;
	int64_t moved, taken, limit; /* bytes in, bytes out, the most that may come in */
	int over_limit;
};

/* The GET's answer: into the ring, or a pause while it is full. */
static size_t pipe_write(char *p, size_t size, size_t nmemb, void *arg)
{
	struct pipe_ring *pr = arg;
	size_t n = size * nmemb, at, k;

	curl_easy_getinfo(pr->hs, CURLINFO_RESPONSE_CODE, &pr->src->status);
	if (pr->src->status < 200 || pr->src->status > 299) {
		buf_append_head(&pr->src->err, p, n);
		return n;
	}
	if (pr->limit > 0 && pr->moved + (int64_t)n > pr->limit) {
		pr->over_limit = 1;
		return 0;
	}
	if (n > PIPE_RING)
		return 0; /* never: libcurl hands at most CURL_MAX_WRITE_SIZE */
	if (n > PIPE_RING - pr->len) {
		pr->src_paused = 1;
		return CURL_WRITEFUNC_PAUSE;
	}
	at = (pr->head + pr->len) % PIPE_RING;
	k = n < PIPE_RING - at ? n : PIPE_RING - at;
	memcpy(pr->data + at, p, k);
	memcpy(pr->data, p + k, n - k);
	pr->len += n;
	pr->moved += (int64_t)n;
	return n;
}

/* The PUT's body: from the ring, a pause while it is empty, the end once
 * the GET is done, an abort when the GET failed. */
static size_t pipe_read(char *p, size_t size, size_t nmemb, void *arg)
{
	struct pipe_ring *pr = arg;
	size_t cap = size * nmemb, k;

	if (pr->src_failed)
		return CURL_READFUNC_ABORT;
	if (!pr->len) {
		if (pr->src_done)
			return 0;
		pr->dst_paused = 1;
		return CURL_READFUNC_PAUSE;
	}
	k = pr->len < cap ? pr->len : cap;
	if (k > PIPE_RING - pr->head)
		k = PIPE_RING - pr->head;
	memcpy(p, pr->data + pr->head, k);
	pr->head = (pr->head + k) % PIPE_RING;
	pr->len -= k;
	pr->taken += (int64_t)k;
	return k;
}

int docker_perform_pipe(struct docker_client *c, struct docker_req *src, struct docker_req *dst,
			int64_t total_ms, int64_t limit, struct sp_err *e)
{
	char errs[CURL_ERROR_SIZE], errd[CURL_ERROR_SIZE];
	const char *ts = NULL, *td = NULL;
	struct curl_slist *hs_hdrs = NULL, *hd_hdrs = NULL;
	struct buf us, ud;
	struct pipe_ring pr;
	CURL *hs = curl_easy_init(), *hd = curl_easy_init();
	CURLM *m = curl_multi_init();
	CURLcode rs = CURLE_OK, rd = CURLE_OK;
	int64_t stall_ms = (int64_t)c->timeout_s * 1000, t0 = mono_ms(), t0us = mono_us(),
		last_moved = -1, last_t = t0;
	int still = 1, dst_done = 0, stalled = 0, too_long = 0, ret = -1;

	c->next_timeout_ms = 0;
	memset(&pr, 0, sizeof(pr));
	buf_init(&us, DOCKER_URL_MAX);
	buf_init(&ud, DOCKER_URL_MAX);
	errs[0] = errd[0] = '\0';
	pr.data = malloc(PIPE_RING);
	pr.src = src;
	pr.hs = hs;
	pr.limit = limit;
	if (!hs || !hd || !m || !pr.data) {
		sp_err_set(e, SP_INTERNAL, "out of memory");
		goto done;
	}
	if (strcmp(src->method, "GET") != 0 || strcmp(dst->method, "PUT") != 0) {
		sp_err_set(e, SP_INTERNAL, "a pipe runs a GET into a PUT");
		goto done;
	}
	/* no total bound on either (a big copy takes its time): the pipe's
	 * own stall and total bounds below instead */
	if (req_prepare(c, hs, src, 0, errs, &hs_hdrs, &us, &ts, e) < 0 ||
	    req_prepare(c, hd, dst, 0, errd, &hd_hdrs, &ud, &td, e) < 0)
		goto done;
	curl_easy_setopt(hs, CURLOPT_WRITEFUNCTION, pipe_write);
	curl_easy_setopt(hs, CURLOPT_WRITEDATA, &pr);
	curl_easy_setopt(hd, CURLOPT_POSTFIELDS, NULL);
	curl_easy_setopt(hd, CURLOPT_UPLOAD, 1L); /* chunked: the length is unknown */
	curl_easy_setopt(hd, CURLOPT_READFUNCTION, pipe_read);
	curl_easy_setopt(hd, CURLOPT_READDATA, &pr);
	/* the PUT's answer comes only after its whole body: it holds no
	 * guard place (its silence is the copy, not a stuck daemon) */
	if (docker_guard_enter(c, src, stall_ms, e) < 0)
		goto done;
	if (curl_multi_add_handle(m, hs) != CURLM_OK || curl_multi_add_handle(m, hd) != CURLM_OK) {
		sp_err_set(e, SP_INTERNAL, "curl_multi_add_handle failed");
		goto done;
	}
	while (still) {
		CURLMsg *msg;
		int q;
		int64_t now;

		if (curl_multi_perform(m, &still) != CURLM_OK) {
			sp_err_set(e, SP_INTERNAL, "curl_multi_perform failed");
			goto done;
		}
		while ((msg = curl_multi_info_read(m, &q))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			if (msg->easy_handle == hs) {
				rs = msg->data.result;
				pr.src_done = 1;
				curl_easy_getinfo(hs, CURLINFO_RESPONSE_CODE, &src->status);
				if (rs != CURLE_OK || src->status < 200 || src->status > 299)
					pr.src_failed = 1;
			} else {
				rd = msg->data.result;
				dst_done = 1;
				curl_easy_getinfo(hd, CURLINFO_RESPONSE_CODE, &dst->status);
			}
		}
		if (dst_done && !pr.src_done) {
			src->aborted = 1; /* the PUT's answer tells (a refusal) */
			break;
		}
		if (pr.src_paused && !pr.src_failed && pr.len <= PIPE_RING / 2) {
			pr.src_paused = 0;
			curl_easy_pause(hs, CURLPAUSE_CONT);
		}
		if (pr.dst_paused && (pr.len || pr.src_done)) {
			pr.dst_paused = 0;
			curl_easy_pause(hd, CURLPAUSE_CONT);
		}
		if (!still)
			break;
		now = mono_ms();
		if (pr.moved + pr.taken != last_moved) { /* bytes came or went */
			last_moved = pr.moved + pr.taken;
			last_t = now;
		}
		if (now - last_t > stall_ms) {
			stalled = 1;
			break;
		}
		if (total_ms > 0 && now - t0 > total_ms) {
			too_long = 1;
			break;
		}
		curl_multi_poll(m, NULL, 0, PIPE_TICK_MS, NULL);
	}
	docker_guard_leave(src);
	req_metrics(src, ts, t0us);
	req_metrics(dst, td, t0us);
	if (pr.over_limit) {
		sp_err_set(e, SP_TOO_LARGE, "the copy is larger than %lld bytes", (long long)limit);
		goto done;
	}
	if (stalled || too_long) {
		sp_err_set(e, SP_UNAVAILABLE, "%sDocker %s %lld s", c->label,
			   stalled ? "moved no byte of the copy for"
				   : "did not finish the copy within",
			   (long long)((stalled ? stall_ms : total_ms) + 999) / 1000);
		log_warn("docker: GET %s into PUT %s: %s", src->path, dst->path, e->msg);
		goto done;
	}
	if (pr.src_done && req_result(c, src, rs, stall_ms, errs, e) < 0)
		goto done;
	if (!dst_done) {
		sp_err_set(e, SP_INTERNAL, "the copy ended without Docker's answer");
		goto done;
	}
	if (rd == CURLE_ABORTED_BY_CALLBACK && pr.src_failed) {
		ret = 0; /* the GET's answer tells */
		goto done;
	}
	ret = req_result(c, dst, rd, stall_ms, errd, e);
done:
	docker_guard_leave(src);
	if (m) {
		if (hs)
			curl_multi_remove_handle(m, hs);
		if (hd)
			curl_multi_remove_handle(m, hd);
		curl_multi_cleanup(m);
	}
	if (hs) {
		req_release(hs, src, hs_hdrs, &us);
		curl_easy_cleanup(hs);
	} else {
		buf_free(&us);
	}
	if (hd) {
		req_release(hd, dst, hd_hdrs, &ud);
		curl_easy_cleanup(hd);
	} else {
		buf_free(&ud);
	}
	src->h = dst->h = NULL;
	free(pr.data);
	return ret;
}

int docker_parse_json(const char *p, size_t len, json_object **out, struct sp_err *e)
{
	json_tokener *tok = json_tokener_new();
	json_object *o = NULL;
	int rc = -1;

	*out = NULL;
	if (!tok || len > INT32_MAX) {
		sp_err_set(e, SP_INTERNAL, "cannot parse Docker's answer");
		goto done;
	}
	o = json_tokener_parse_ex(tok, p, (int)len);
	if (!o || json_tokener_get_error(tok) != json_tokener_success) {
		sp_err_set(e, SP_INTERNAL, "Docker's answer is not JSON");
		goto done;
	}
	for (size_t i = json_tokener_get_parse_end(tok); i < len; i++) {
		if (p[i] != ' ' && p[i] != '\n' && p[i] != '\r' && p[i] != '\t') {
			sp_err_set(e, SP_INTERNAL, "Docker's answer has trailing bytes");
			goto done;
		}
	}
	*out = o;
	o = NULL;
	rc = 0;
done:
	json_object_put(o);
	if (tok)
		json_tokener_free(tok);
	return rc;
}

const char *docker_json_str(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int docker_status_err(const struct docker_req *r, struct sp_err *e)
{
	json_object *o = NULL;
	const char *m = NULL;
	char raw[256];
	enum sp_code code = r->status == 400   ? SP_BAD_REQUEST
			    : r->status == 404 ? SP_NOT_FOUND
			    : r->status == 409 ? SP_CONFLICT
					       : SP_INTERNAL;

	if (r->err.len && docker_parse_json(r->err.data, r->err.len, &o, NULL) == 0)
		m = docker_json_str(o, "message");
	if (!m && r->err.len) {
		log_safe(r->err.data, raw, sizeof(raw));
		m = raw;
	}
	if (m && *m)
		sp_err_set(e, code, "%s", m);
	else
		sp_err_set(e, code, "Docker answered %s %s with HTTP %ld", r->method, r->path,
			   r->status);
	if (code == SP_INTERNAL)
		log_warn("docker: %s %s -> %ld: %s", r->method, r->path, r->status,
			 e ? e->msg : "");
	json_object_put(o);
	return -1;
}

int docker_call(struct docker_client *c, struct docker_req *r, json_object *body, json_object **out,
		struct sp_err *e)
{
	const char *s = NULL;
	size_t slen = 0;

	if (out)
		*out = NULL;
	if (body) {
		s = json_object_to_json_string_length(body, JSON_C_TO_STRING_PLAIN, &slen);
		if (!s)
			return sp_err_set(e, SP_INTERNAL, "out of memory");
		r->body = s;
		r->body_len = slen;
		r->ctype = "application/json";
	}
	if (docker_perform(c, NULL, r, e) < 0)
		return -1;
	if ((r->status < 200 || r->status > 299) && r->status != r->ok_status[0] &&
	    r->status != r->ok_status[1])
		return docker_status_err(r, e);
	if (out && r->status >= 200 && r->status <= 299 && r->out->len)
		return docker_parse_json(r->out->data, r->out->len, out, e);
	return 0;
}

/* A 64-hex id as Docker returns it. */
static int full_id(const char *s)
{
	size_t n = 0;

	for (; s && s[n]; n++) {
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return 0;
	}
	return n == 64;
}

int docker_create_call(struct docker_client *c, struct docker_req *r, json_object *body,
		       char id_out[65], struct sp_err *e)
{
	json_object *ans = NULL;
	const char *id;
	int rc = -1;

	if (docker_call(c, r, body, &ans, e) < 0)
		goto done;
	id = docker_json_str(ans, "Id");
	if (!full_id(id)) {
		sp_err_set(e, SP_INTERNAL, "Docker's create answer has no usable Id");
		goto done;
	}
	memcpy(id_out, id, 65);
	rc = 0;
done:
	json_object_put(ans);
	return rc;
}

int docker_inspect_call(struct docker_client *c, const char *fmt, const char *id, const char *what,
			json_object **out, struct sp_err *e)
{
	struct docker_req r;
	int rc = -1;

	*out = NULL;
	docker_req_init(&r, "GET");
	if (docker_check_id(id, what, e) < 0)
		goto done;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	rc = docker_req_path(&r, e, fmt, id);
#pragma GCC diagnostic pop
	if (rc == 0)
		rc = docker_call(c, &r, NULL, out, e);
	if (rc == 0 && !*out)
		rc = sp_err_set(e, SP_INTERNAL, "Docker's %s inspect answer is empty", what);
done:
	docker_req_cleanup(&r);
	return rc;
}

int docker_check_id(const char *id, const char *what, struct sp_err *e)
{
	if (docker_valid_id(id))
		return 0;
	return sp_err_set(e, SP_NOT_FOUND, "No such %s", what);
}

int docker_check_path(const char *path, struct sp_err *e)
{
	size_t n;

	if (!path || path[0] != '/')
		return sp_err_field(e, SP_BAD_REQUEST, "path", "path must be absolute");
	n = strnlen(path, 4097);
	if (n > 4096)
		return sp_err_field(e, SP_BAD_REQUEST, "path", "path is longer than 4096 bytes");
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)path[i] < 0x20 || path[i] == 0x7f)
			return sp_err_field(e, SP_BAD_REQUEST, "path",
					    "path holds a control character");
	}
	return 0;
}

/* Parses "1.41" into major, minor. */
static int parse_api(const char *s, int *major, int *minor)
{
	char tmp[16];
	char *dot;
	long long a, b;

	if (!s || str_copy(tmp, sizeof(tmp), s) < 0)
		return -1;
	dot = strchr(tmp, '.');
	if (!dot)
		return -1;
	*dot = '\0';
	if (parse_ll(tmp, 0, 1000, &a) < 0 || parse_ll(dot + 1, 0, 1000, &b) < 0)
		return -1;
	*major = (int)a;
	*minor = (int)b;
	return 0;
}

/* Reads the leading "X.Y.Z" of a runc version into v[3]; -1 if absent. */
static int parse_semver(const char *s, long v[3])
{
	for (int i = 0; i < 3; i++) {
		if (*s < '0' || *s > '9')
			return -1;
		for (v[i] = 0; *s >= '0' && *s <= '9'; s++) {
			if (v[i] > 100000)
				return -1;
			v[i] = v[i] * 10 + (*s - '0');
		}
		if (i < 2 && *s++ != '.')
			return -1;
	}
	return 0;
}

/* Distro runc builds below 1.1.12 that carry the CVE-2024-21626 fix: the
 * Version, and the GitCommit prefix followed by a revision number >= min. */
static const struct {
	const char *version;
	const char *commit_prefix;
	long min_rev;
} patched_runc[] = {
	/* Debian 12: 1.1.5+ds1-1+deb12u1 backports the fix */
	{ "1.1.5+ds1", "1.1.5+ds1-1+deb12u", 1 },
};

int docker_runc_ok(const char *version, const char *commit)
{
	long sv[3];

	if (!version)
		return 0;
	if (parse_semver(version, sv) == 0 &&
	    (sv[0] > 1 || (sv[0] == 1 && (sv[1] > 1 || (sv[1] == 1 && sv[2] >= 12)))))
		return 1;
	for (size_t i = 0; commit && i < sizeof(patched_runc) / sizeof(patched_runc[0]); i++) {
		size_t k = strlen(patched_runc[i].commit_prefix);
		long long rev;
		if (strcmp(version, patched_runc[i].version) != 0 ||
		    strncmp(commit, patched_runc[i].commit_prefix, k) != 0)
			continue;
		if (parse_ll(commit + k, patched_runc[i].min_rev, 100000, &rev) == 0)
			return 1;
	}
	return 0;
}

/* Finds runc in /version's Components and checks it (RELIABILITY H3). */
static int check_runc(json_object *ver, int allow_old_runc, struct docker_version *v,
		      struct sp_err *e)
{
	json_object *comps, *details;
	const char *rv = NULL, *rc = "";

	if (json_object_object_get_ex(ver, "Components", &comps) &&
	    json_object_is_type(comps, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(comps); i++) {
			json_object *comp = json_object_array_get_idx(comps, i);
			const char *name = docker_json_str(comp, "Name");
			if (!name || strcmp(name, "runc") != 0)
				continue;
			rv = docker_json_str(comp, "Version");
			if (json_object_object_get_ex(comp, "Details", &details) &&
			    docker_json_str(details, "GitCommit"))
				rc = docker_json_str(details, "GitCommit");
			break;
		}
	}
	if (!rv) {
		log_warn("docker: the daemon does not report its runc version; cannot check "
			 "for CVE-2024-21626");
		return 0;
	}
	snprintf(v->runc, sizeof(v->runc), "%s", rv);
	snprintf(v->runc_commit, sizeof(v->runc_commit), "%s", rc);
	if (docker_runc_ok(rv, rc))
		return 0;
	if (allow_old_runc) {
		log_warn("docker: runc %s (%s) may be exposed to CVE-2024-21626; starting "
			 "anyway because allow_old_runc is set",
			 v->runc, v->runc_commit);
		return 0;
	}
	return sp_err_set(e, SP_UNAVAILABLE,
			  "runc %s (%s) is older than 1.1.12 and may be exposed to "
			  "CVE-2024-21626 (container escape): upgrade runc, or set "
			  "allow_old_runc = 1 in the configuration to start anyway",
			  v->runc, v->runc_commit);
}

int docker_negotiate(struct docker_client *c, int allow_old_runc, struct docker_version *v,
		     struct sp_err *e)
{
	struct docker_version scratch;
	struct docker_req r;
	json_object *ver = NULL;
	const char *api, *engine;
	int major, minor, rc = -1;

	if (!v)
		v = &scratch;
	memset(v, 0, sizeof(*v));
	docker_req_init(&r, "GET");
	if (docker_req_path(&r, e, "/version") < 0)
		goto done;
	r.unversioned = 1;
	if (docker_call(c, &r, NULL, &ver, e) < 0)
		goto done;
	v->answered = 1;
	api = docker_json_str(ver, "ApiVersion");
	engine = docker_json_str(ver, "Version");
	snprintf(v->engine, sizeof(v->engine), "%s", engine ? engine : "");
	if (parse_api(api, &major, &minor) < 0) {
		sp_err_set(e, SP_UNAVAILABLE, "Docker did not report a usable API version");
		goto done;
	}
	if (major < DOCKER_API_MIN_MAJOR ||
	    (major == DOCKER_API_MIN_MAJOR && minor < DOCKER_API_MIN_MINOR)) {
		sp_err_set(
			e, SP_UNAVAILABLE,
			"Docker API %d.%d is too old: sandpit needs %d.%d or newer (Docker 20.10+)",
			major, minor, DOCKER_API_MIN_MAJOR, DOCKER_API_MIN_MINOR);
		goto done;
	}
	if (major > DOCKER_API_MIN_MAJOR || minor > DOCKER_API_MAX_MINOR) {
		major = DOCKER_API_MIN_MAJOR;
		minor = DOCKER_API_MAX_MINOR;
	}
	if (check_runc(ver, allow_old_runc, v, e) < 0)
		goto done;
	snprintf(c->api, sizeof(c->api), "%d.%d", major, minor);
	snprintf(v->api_version, sizeof(v->api_version), "%s", c->api);
	rc = 0;
done:
	json_object_put(ver);
	docker_req_cleanup(&r);
	return rc;
}

int docker_runtimes(struct docker_client *c, char *out, size_t cap, struct sp_err *e)
{
	struct docker_req r;
	json_object *info = NULL, *rts;
	size_t n = 0;
	int rc = -1;

	if (cap == 0)
		return sp_err_set(e, SP_INTERNAL, "docker_runtimes: no room");
	out[0] = '\0';
	docker_req_init(&r, "GET");
	if (docker_req_path(&r, e, "/info") < 0 || docker_call(c, &r, NULL, &info, e) < 0)
		goto done;
	if (json_object_object_get_ex(info, "Runtimes", &rts) &&
	    json_object_is_type(rts, json_type_object)) {
		json_object_object_foreach(rts, name, v)
		{
			size_t len = strlen(name);
			(void)v;
			if (n + len + 2 > cap)
				break; /* a daemon with that many runtimes: the rest is not listed */
			memcpy(out + n, name, len);
			n += len;
			out[n++] = '\n';
			out[n] = '\0';
		}
	}
	rc = 0;
done:
	json_object_put(info);
	docker_req_cleanup(&r);
	return rc;
}

/* The first string of a DriverStatus pair named key, or "". */
static const char *driver_status(json_object *info, const char *key)
{
	json_object *ds;

	if (!json_object_object_get_ex(info, "DriverStatus", &ds) ||
	    !json_object_is_type(ds, json_type_array))
		return "";
	for (size_t i = 0; i < json_object_array_length(ds); i++) {
		json_object *kv = json_object_array_get_idx(ds, i);
		const char *k;
		if (!json_object_is_type(kv, json_type_array) || json_object_array_length(kv) != 2)
			continue;
		k = json_object_get_string(json_object_array_get_idx(kv, 0));
		if (k && strcmp(k, key) == 0) {
			const char *v = json_object_get_string(json_object_array_get_idx(kv, 1));
			return v ? v : "";
		}
	}
	return "";
}

int docker_storage(struct docker_client *c, struct docker_storage *out, struct sp_err *e)
{
	struct docker_req r;
	json_object *info = NULL, *v;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	docker_req_init(&r, "GET");
	if (docker_req_path(&r, e, "/info") < 0 || docker_call(c, &r, NULL, &info, e) < 0)
		goto done;
	if (json_object_object_get_ex(info, "Driver", &v) && json_object_get_string(v))
		str_copy(out->driver, sizeof(out->driver), json_object_get_string(v));
	if (json_object_object_get_ex(info, "DockerRootDir", &v) && json_object_get_string(v))
		str_copy(out->root_dir, sizeof(out->root_dir), json_object_get_string(v));
	str_copy(out->backing_fs, sizeof(out->backing_fs),
		 driver_status(info, "Backing Filesystem"));
	rc = 0;
done:
	json_object_put(info);
	docker_req_cleanup(&r);
	return rc;
}
