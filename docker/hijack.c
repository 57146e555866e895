/*
 * Hijacked connections: a request Docker answers by taking the connection
 * over (exec start with stdin attached). libcurl only connects (and does
 * TLS) through CURLOPT_CONNECT_ONLY on a handle set up by
 * docker_transport_apply; the request, the 101 header block and the raw
 * stream then go through curl_easy_send / curl_easy_recv, with poll() on
 * the handle's socket for every wait. Docker drops whatever it read past
 * the request body when it hijacks, so not one input byte is sent before
 * the whole 101 header block has come. It must never send a request
 * docker_req_url refused, never copy the input (it is written from the
 * caller's memory in pieces), never hold more than one piece of output,
 * and never wait past the request's deadline.
 */
#include "docker_int.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/metrics.h"
#include "../common/pathtmpl.h"
#include "../common/util.h"

#define HIJACK_HEAD_MAX ((size_t)16 << 10) /* request line + headers, answer headers */
#define HIJACK_PIECE ((size_t)64 << 10)	   /* one send or recv */
#define HIJACK_TICK_MS 1000		   /* how often stop_fn is polled */

struct hijack {
	CURL *h;
	curl_socket_t fd;
	struct docker_req *r;
	int64_t deadline;  /* mono ms: the whole transfer */
	int64_t next_stop; /* mono ms: when stop_fn is polled next */
};

/* Waits until the socket is ready for events, until (mono ms) passes, or
 * until stop_fn is due, at most a tick. 1 ready, 0 not (yet), -1 poll
 * failed. */
static int hijack_wait(struct hijack *x, short events, int64_t until)
{
	struct pollfd p[2] = { { .fd = x->fd, .events = events },
			       { .fd = x->r->input ? x->r->input->wake_fd : -1,
				 .events = POLLIN } };
	int64_t now = mono_ms(), wait = until - now;
	int n;

	if (x->r->stop_fn && x->next_stop - now < wait)
		wait = x->next_stop - now;
	if (wait > HIJACK_TICK_MS)
		wait = HIJACK_TICK_MS;
	if (wait < 0)
		wait = 0;
	n = poll(p, p[1].fd >= 0 ? 2 : 1, (int)wait);
	if (n < 0)
		return errno == EINTR ? 0 : -1;
	if (p[1].fd >= 0 && (p[1].revents & POLLIN)) {
		uint64_t v;
		if (read(p[1].fd, &v, sizeof(v)) < 0)
			log_debug("hijack: wake fd: %s", strerror(errno));
	}
	return (p[0].revents & (events | POLLHUP | POLLERR)) != 0;
}

/* Whether the caller asked to stop; polls stop_fn at most once a tick. */
static int hijack_stopped(struct hijack *x)
{
	int64_t now = mono_ms();

	if (!x->r->stop_fn || now < x->next_stop)
		return 0;
	x->next_stop = now + HIJACK_TICK_MS;
	if (x->r->stop_fn(x->r->stop_arg)) {
		x->r->aborted = 1;
		return 1;
	}
	return 0;
}

/* Sends all n bytes (the request), waiting up to until. 0 sent, -1 the
 * connection failed, -2 time ran out. */
static int send_all(struct hijack *x, const char *p, size_t n, int64_t until)
{
	while (n > 0) {
		size_t k = 0;
		CURLcode rc = curl_easy_send(x->h, p, n, &k);

		if (rc == CURLE_OK) {
			p += k;
			n -= k;
			continue;
		}
		if (rc != CURLE_AGAIN)
			return -1;
		if (mono_ms() >= until)
			return -2;
		if (hijack_wait(x, POLLOUT, until) < 0)
			return -1;
	}
	return 0;
}

/* Receives into buf[*have..cap), waiting up to until. 1 bytes came, 0 the
 * peer closed, -1 the connection failed, -2 time ran out or the caller
 * stopped. */
static int recv_some(struct hijack *x, char *buf, size_t cap, size_t *have, int64_t until)
{
	for (;;) {
		size_t k = 0;
		CURLcode rc = curl_easy_recv(x->h, buf + *have, cap - *have, &k);

		if (rc == CURLE_OK) {
			*have += k;
			return k > 0;
		}
		if (rc != CURLE_AGAIN)
			return -1;
		if (mono_ms() >= until || hijack_stopped(x))
			return -2;
		if (hijack_wait(x, POLLIN, until) < 0)
			return -1;
	}
}

/* The value of header name (lower case, with the colon) in a header block,
 * or NULL; the value runs to the next CR. */
static const char *header_value(const char *head, const char *name)
{
	size_t k = strlen(name);

	for (const char *p = strstr(head, "\r\n"); p && p[2] != '\r'; p = strstr(p + 2, "\r\n")) {
		if (strncasecmp(p + 2, name, k) == 0) {
			p += 2 + k;
			while (*p == ' ' || *p == '\t')
				p++;
			return p;
		}
	}
	return NULL;
}

/* Reads the answer's header block into head (NUL-terminated); *head_len is
 * its length with the blank line, *have what was read (the stream may
 * follow). Sets r->status. 0, or -1 / -2 as recv_some (0 from recv_some,
 * an early close, is -1 here; so is a malformed or oversized block). */
static int read_head(struct hijack *x, char *head, size_t cap, size_t *have, size_t *head_len,
		     int64_t until)
{
	char *end;
	long long status;
	char code[4];

	for (;;) {
		int rc = recv_some(x, head, cap - 1, have, until);
		if (rc <= 0)
			return rc == 0 ? -1 : rc;
		head[*have] = '\0';
		/* the stream (binary) may follow in the same read */
		end = memmem(head, *have, "\r\n\r\n", 4);
		if (end)
			break;
		if (*have >= cap - 1)
			return -1;
	}
	*head_len = (size_t)(end - head) + 4;
	if (memchr(head, '\0', *head_len))
		return -1; /* not an HTTP header block */
	if (strncmp(head, "HTTP/1.", 7) != 0 || head[8] != ' ')
		return -1;
	memcpy(code, head + 9, 3);
	code[3] = '\0';
	if (parse_ll(code, 100, 599, &status) < 0)
		return -1;
	x->r->status = (long)status;
	x->r->headers_done = 1;
	docker_guard_answered(x->r);
	return 0;
}

/* A non-hijacking answer (an error): keeps up to DOCKER_ERRBODY_MAX bytes
 * of its body in r->err, reading to Content-Length or the peer's close. */
static void read_error_body(struct hijack *x, const char *head, size_t head_len, size_t have,
			    int64_t until)
{
	struct docker_req *r = x->r;
	const char *cl = header_value(head, "content-length:");
	long long want = -1;
	char piece[4096];

	if (cl) {
		char num[24];
		size_t n = strcspn(cl, "\r");
		if (n < sizeof(num)) {
			memcpy(num, cl, n);
			num[n] = '\0';
			if (parse_ll(num, 0, (long long)DOCKER_ERRBODY_MAX, &want) < 0)
				want = -1;
		}
	}
	/* The head of an error body is its message; a tail past
	 * DOCKER_ERRBODY_MAX may go (the status tells the error). */
	buf_append_head(&r->err, head + head_len, have - head_len);
	while (want < 0 || r->err.len < (size_t)want) {
		size_t k = 0;
		if (r->err.len >= r->err.max || recv_some(x, piece, sizeof(piece), &k, until) <= 0)
			break;
		buf_append_head(&r->err, piece, k);
	}
	if (want >= 0 && r->err.len > (size_t)want)
		r->err.len = (size_t)want;
}

/* Pumps the hijacked stream: writes the input while Docker takes it (in,
 * or pieces pulled from r->in_fn into pulled, HIJACK_PIECE bytes) and
 * hands output to the sink until Docker ends the stream, the sink,
 * in_fn or stop_fn aborts, or the deadline passes. A reset reads as the
 * end: the caller asks Docker how the process ended. */
static void pump_loop(struct hijack *x, const char *in, size_t in_len, char *piece, char *pulled)
{
	struct docker_req *r = x->r;
	size_t pulled_len = 0, pulled_off = 0;
	int in_open = in_len > 0 || r->in_fn || r->input;

	for (;;) {
		int more = 0, ready;
		short events = POLLIN;

		for (int k = 0;; k++) {
			size_t n = 0;
			CURLcode rc;
			if (k == 16) {
				more = 1; /* let the input and the clock have a turn */
				break;
			}
			rc = curl_easy_recv(x->h, piece, HIJACK_PIECE, &n);
			if (rc == CURLE_AGAIN)
				break;
			if (rc != CURLE_OK || n == 0)
				return;
			if (r->sink(r->sink_arg, piece, n) != 0) {
				r->aborted = 1;
				return;
			}
		}
		while (in_open && r->in_fn) {
			size_t n = 0;
			CURLcode rc;
			if (pulled_off == pulled_len) {
				long got = r->in_fn(r->in_arg, pulled, HIJACK_PIECE);
				if (got < 0) {
					r->aborted = 1;
					return;
				}
				if (got == 0) {
					/* the input is over: Docker closes the
					 * process's stdin once it has read all */
					shutdown(x->fd, SHUT_WR);
					in_open = 0;
					break;
				}
				pulled_len = (size_t)got;
				pulled_off = 0;
			}
			rc = curl_easy_send(x->h, pulled + pulled_off, pulled_len - pulled_off, &n);
			if (rc == CURLE_AGAIN)
				break;
			if (rc != CURLE_OK) {
				in_open = 0; /* the process stopped reading; its end decides */
				break;
			}
			pulled_off += n;
			r->in_sent += n;
			if (pulled_off == pulled_len) {
				more = 1; /* read what came meanwhile before pulling more */
				break;
			}
		}
		while (in_open && !r->in_fn && r->in_sent < in_len) {
			size_t n = 0, w = in_len - r->in_sent;
			CURLcode rc;
			if (w > HIJACK_PIECE)
				w = HIJACK_PIECE;
			rc = curl_easy_send(x->h, in + r->in_sent, w, &n);
			if (rc == CURLE_AGAIN)
				break;
			if (rc != CURLE_OK) {
				in_open = 0; /* the process stopped reading; its end decides */
				break;
			}
			r->in_sent += n;
		}
		if (in_open && (r->in_fn || r->in_sent < in_len))
			events |= POLLOUT;
		while (in_open && r->input) {
			const char *p = NULL;
			size_t n = 0, w = r->input->peek(r->input->arg, &p);
			CURLcode rc;
			if (w == 0)
				break;
			if (w > HIJACK_PIECE)
				w = HIJACK_PIECE;
			rc = curl_easy_send(x->h, p, w, &n);
			if (rc == CURLE_AGAIN) {
				events |= POLLOUT;
				break;
			}
			if (rc != CURLE_OK) {
				in_open = 0; /* the process stopped reading; its end decides */
				break;
			}
			r->input->consume(r->input->arg, n);
		}
		if (hijack_stopped(x))
			return;
		if (mono_ms() >= x->deadline) {
			r->timed_out = 1;
			return;
		}
		if (more)
			continue;
		ready = hijack_wait(x, events, x->deadline);
		if (ready < 0)
			return;
	}
}

/* pump_loop with its buffers: on the heap, so a thread's stack holds none
 * of them. */
static void pump(struct hijack *x, const char *in, size_t in_len)
{
	char *piece = malloc(HIJACK_PIECE), *pulled = x->r->in_fn ? malloc(HIJACK_PIECE) : NULL;

	if (!piece || (x->r->in_fn && !pulled))
		x->r->aborted = 1;
	else
		pump_loop(x, in, in_len, piece, pulled);
	free(piece);
	free(pulled);
}

int docker_hijack(struct docker_client *c, struct docker_req *r, const void *in, size_t in_len,
		  struct sp_err *e)
{
	char errbuf[CURL_ERROR_SIZE], series[96], label[80], head[HIJACK_HEAD_MAX];
	const char *tmpl = NULL, *host = strstr(c->base, "://");
	int64_t t0 = mono_us(), now = mono_ms(), timeout_ms, head_until;
	struct hijack x = { 0 };
	struct buf url, req;
	size_t have = 0, head_len = 0;
	CURLcode cc;
	int ret = -1, rc;

	timeout_ms = r->timeout_ms > 0 ? r->timeout_ms : (int64_t)c->timeout_s * 1000;
	x.r = r;
	x.deadline = now + timeout_ms;
	x.next_stop = now + HIJACK_TICK_MS;
	head_until = r->header_ms > 0 && now + r->header_ms < x.deadline ? now + r->header_ms
									 : x.deadline;
	r->in_sent = 0;
	buf_init(&url, DOCKER_URL_MAX);
	buf_init(&req, HIJACK_HEAD_MAX + r->body_len);
	if (strcmp(r->method, "POST") != 0 || !r->sink) {
		sp_err_set(e, SP_INTERNAL, "only a POST with a sink can hijack the connection");
		goto done;
	}
	if (docker_req_url(c, r, &url, &tmpl, e) < 0)
		goto done;
	if (buf_printf(&req,
		       "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		       "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n",
		       url.data + strlen(c->base), host ? host + 3 : "docker",
		       r->ctype ? r->ctype : "application/json", r->body_len) < 0 ||
	    buf_append(&req, r->body ? r->body : "", r->body_len) < 0) {
		sp_err_set(e, SP_INTERNAL, "Docker request is too long");
		goto done;
	}
	if (docker_guard_enter(c, r, head_until - now, e) < 0)
		goto done;
	x.h = curl_easy_init();
	if (!x.h) {
		sp_err_set(e, SP_INTERNAL, "curl_easy_init failed");
		goto done;
	}
	r->h = x.h;
	errbuf[0] = '\0';
	curl_easy_setopt(x.h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(x.h, CURLOPT_URL, url.data);
	docker_transport_apply(c, x.h);
	curl_easy_setopt(x.h, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(x.h, CURLOPT_TIMEOUT_MS,
			 (long)(head_until - now > 0 ? head_until - now : 1));
	cc = curl_easy_perform(x.h);
	if (cc == CURLE_OK)
		cc = curl_easy_getinfo(x.h, CURLINFO_ACTIVESOCKET, &x.fd);
	if (cc != CURLE_OK || x.fd == CURL_SOCKET_BAD) {
		if (cc == CURLE_OPERATION_TIMEDOUT)
			sp_err_set(e, SP_UNAVAILABLE, "%sDocker did not answer within %lld s",
				   c->label, (long long)((head_until - now + 999) / 1000));
		else
			sp_err_set(e, SP_UNAVAILABLE, "%sDocker is unreachable: %s", c->label,
				   errbuf[0] ? errbuf : curl_easy_strerror(cc));
		goto done;
	}

	rc = send_all(&x, req.data, req.len, head_until);
	if (rc == 0)
		rc = read_head(&x, head, sizeof(head), &have, &head_len, head_until);
	if (rc < 0) {
		if (r->aborted) {
			ret = 0; /* the caller went away before Docker answered */
		} else if (rc == -2) {
			r->header_timeout = 1;
			sp_err_set(e, SP_UNAVAILABLE, "%sDocker did not answer within %lld s",
				   c->label, (long long)((head_until - now + 999) / 1000));
		} else {
			sp_err_set(e, SP_UNAVAILABLE, "%sDocker is unreachable: %s", c->label,
				   r->headers_done ? "malformed answer"
						   : "the connection failed before the answer");
		}
		goto done;
	}
	if (r->status != 101 && r->status != 200) {
		read_error_body(&x, head, head_len, have, head_until);
		ret = 0;
		goto done;
	}
	/* what came after the header block is the stream's start */
	if (have > head_len && r->sink(r->sink_arg, head + head_len, have - head_len) != 0)
		r->aborted = 1;
	else
		pump(&x, in, in_len);
	if (r->timed_out && !r->timeout_is_result) {
		sp_err_set(e, SP_UNAVAILABLE, "%sDocker did not answer within %lld s", c->label,
			   (long long)((timeout_ms + 999) / 1000));
		goto done;
	}
	ret = 0;
done:
	docker_guard_leave(r);
	if (ret < 0 && e && e->code == SP_UNAVAILABLE)
		log_warn("docker: %s %s: %s", r->method, r->path, e->msg);
	if (x.h && tmpl) {
		pathtmpl_label(tmpl, label, sizeof(label));
		snprintf(series, sizeof(series), "%s %s", r->method, label);
		metrics_observe(METRICS_DOCKER, series, (int)r->status, mono_us() - t0);
	}
	if (x.h)
		curl_easy_cleanup(x.h);
	r->h = NULL;
	buf_free(&url);
	buf_free(&req);
	return ret;
}
