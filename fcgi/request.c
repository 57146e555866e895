/*
 * FastCGI request helpers. See request.h. The app trusts only the SANDPIT_*
 * params that nginx sets; client headers (HTTP_*) are never identity.
 */
#include "request.h"

#include <errno.h>
#include <poll.h>
#include <sys/uio.h>
#include <stdio.h>
#include <sys/socket.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "face.h"

const char *req_param(const struct req *r, const char *name)
{
	const char *v = FCGX_GetParam(name, r->fx->envp);
	return v ? v : "";
}

void req_init(struct req *r, FCGX_Request *fx)
{
	const char *uri;
	size_t n;

	memset(r, 0, sizeof(*r));
	r->fx = fx;
	r->method = req_param(r, "REQUEST_METHOD");
	uri = req_param(r, "DOCUMENT_URI");
	if (!*uri)
		uri = req_param(r, "SCRIPT_NAME");
	n = strcspn(uri, "?");
	if (n >= sizeof(r->path))
		n = sizeof(r->path) - 1;
	memcpy(r->path, uri, n);
	r->path[n] = '\0';
	r->query = req_param(r, "QUERY_STRING");
	r->org = req_param(r, "SANDPIT_ORG");
	r->key_id = req_param(r, "SANDPIT_KEY_ID");
	r->role = req_param(r, "SANDPIT_ROLE");
	r->perms = req_param(r, "SANDPIT_PERMS");
	r->request_id = req_param(r, "SANDPIT_REQUEST_ID");
	buf_init(&r->body, 0);
}

void req_cleanup(struct req *r)
{
	buf_free(&r->body);
}

int req_read_body(struct req *r, size_t max, struct sp_err *e)
{
	const char *cl = req_param(r, "CONTENT_LENGTH");
	long long len = 0;
	char chunk[65536];
	int n;

	buf_init(&r->body, max);
	if (*cl && parse_ll(cl, 0, (long long)1 << 40, &len) < 0)
		return sp_err_set(e, SP_BAD_REQUEST, "Bad Content-Length");
	if ((unsigned long long)len > max)
		return sp_err_set(e, SP_TOO_LARGE, "Request body exceeds the %zu byte limit", max);
	while ((n = FCGX_GetStr(chunk, sizeof(chunk), r->fx->in)) > 0) {
		if (buf_append(&r->body, chunk, (size_t)n) < 0)
			return sp_err_set(e, SP_TOO_LARGE,
					  "Request body exceeds the %zu byte limit", max);
	}
	if (r->body.len == 0 && buf_append(&r->body, "", 0) < 0)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	return 0;
}

static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 201:
		return "Created";
	case 202:
		return "Accepted";
	case 204:
		return "No Content";
	case 304:
		return "Not Modified";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 409:
		return "Conflict";
	case 412:
		return "Precondition Failed";
	case 413:
		return "Payload Too Large";
	case 422:
		return "Unprocessable Content";
	case 415:
		return "Unsupported Media Type";
	case 428:
		return "Precondition Required";
	case 429:
		return "Too Many Requests";
	case 501:
		return "Not Implemented";
	case 503:
		return "Service Unavailable";
	default:
		return "Internal Server Error";
	}
}

static size_t last_answer_size;

size_t req_last_answer_size(void)
{
	return last_answer_size;
}

void req_send_json(struct req *r, int status, const char *headers, json_object *obj)
{
	size_t len = 0;
	const char *body =
		obj ? json_object_to_json_string_length(
			      obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len)
		    : "";

	struct buf head;

	r->status = status;
	last_answer_size = len;
	/* libfcgi's FCGX_FPrintF knows no %zu: format the head here, grown to
	 * fit the handler's headers (nginx's own cap on them is far lower) */
	buf_init(&head, REQ_HEAD_MAX);
	if (buf_printf(&head,
		       "Status: %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		       "Cache-Control: no-store\r\n%s\r\n",
		       status, reason(status), obj ? len + 1 : 0, headers ? headers : "") < 0) {
		static const char fail[] = "{\"message\":\"Answer headers over 64 KiB\","
					   "\"code\":\"INTERNAL_SERVER_ERROR\"}\n";
		char h500[256];
		int n = snprintf(h500, sizeof(h500),
				 "Status: 500 Internal Server Error\r\nContent-Type: "
				 "application/json\r\nContent-Length: %zu\r\n"
				 "Cache-Control: no-store\r\n\r\n",
				 sizeof(fail) - 1);
		log_error("answer headers over %d bytes; answered 500 instead of %d", REQ_HEAD_MAX,
			  status);
		buf_free(&head);
		r->status = 500;
		FCGX_PutStr(h500, n, r->fx->out);
		FCGX_PutStr(fail, (int)sizeof(fail) - 1, r->fx->out);
		return;
	}
	FCGX_PutStr(head.data, (int)head.len, r->fx->out);
	buf_free(&head);
	if (obj) {
		FCGX_PutStr(body, (int)len, r->fx->out);
		FCGX_PutChar('\n', r->fx->out);
	}
}

void req_stream_begin(struct req *r, int status)
{
	char head[sizeof(r->headers) + 256];
	int n;

	r->status = status;
	last_answer_size = 0;
	/* r->headers: what the handler added (exec: X-Accel-Buffering); head
	 * holds it whole at its largest */
	n = snprintf(head, sizeof(head),
		     "Status: %d %s\r\nContent-Type: application/json\r\n"
		     "Cache-Control: no-store\r\n%s\r\n",
		     status, reason(status), r->headers);
	FCGX_PutStr(head, n, r->fx->out);
}

int req_stream_write(struct req *r, const void *p, size_t n)
{
	const char *c = p;

	last_answer_size += n;
	while (n > 0) {
		int k = n > (1 << 30) ? 1 << 30 : (int)n;
		if (FCGX_PutStr(c, k, r->fx->out) != k)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	/* out now, not when libfcgi's 8 KiB buffer fills */
	if (FCGX_FFlush(r->fx->out) != 0)
		return -1;
	return FCGX_GetError(r->fx->out) != 0 ? -1 : 0;
}

int req_write_bulk(struct req *r, const void *p, size_t n)
{
	const char *c = p;

	if (FCGX_FFlush(r->fx->out) != 0 || FCGX_GetError(r->fx->out) != 0 || r->fx->ipcFd < 0)
		return -1;
	last_answer_size += n;
	while (n > 0) {
		/* 65528: a multiple of 8, so no padding is needed */
		size_t k = n > 65528 ? 65528 : n, done = 0;
		unsigned char h[8] = { 1,
				       6 /* FCGI_STDOUT */,
				       (unsigned char)(r->fx->requestId >> 8),
				       (unsigned char)r->fx->requestId,
				       (unsigned char)(k >> 8),
				       (unsigned char)k,
				       (unsigned char)((8 - k % 8) % 8),
				       0 };
		static const char pad[8];
		size_t padn = h[6], want = 8 + k + padn;
		while (done < want) {
			struct iovec v[3];
			int nv = 0;
			ssize_t w;
			size_t skip = done;
			if (skip < 8) {
				v[nv++] = (struct iovec){ h + skip, 8 - skip };
				skip = 0;
			} else {
				skip -= 8;
			}
			if (skip < k) {
				v[nv++] = (struct iovec){ (void *)(c + skip), k - skip };
				skip = 0;
			} else {
				skip -= k;
			}
			if (padn && skip < padn)
				v[nv++] = (struct iovec){ (void *)(pad + skip), padn - skip };
			w = writev(r->fx->ipcFd, v, nv);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return -1;
			done += (size_t)w;
		}
		c += k;
		n -= k;
	}
	return 0;
}

void req_stream_abort(struct req *r)
{
	r->status = 502;
	if (r->fx->ipcFd >= 0)
		shutdown(r->fx->ipcFd, SHUT_RDWR);
}

void req_send_error(struct req *r, const struct sp_err *e, json_object *issues)
{
	face_send_error(r, &face_dokploy, e, issues);
}

int req_client_gone(const struct req *r)
{
	struct pollfd p = { r->fx->ipcFd, POLLIN | POLLRDHUP, 0 };
	char c;

	if (FCGX_GetError(r->fx->out) != 0)
		return 1;
	if (r->fx->ipcFd < 0 || poll(&p, 1, 0) <= 0)
		return 0;
	if (p.revents & (POLLRDHUP | POLLHUP | POLLERR))
		return 1;
	/* readable with nothing to read is end of file; FastCGI records
	 * nginx may still send (such as an abort) count as gone too */
	return (p.revents & POLLIN) && recv(r->fx->ipcFd, &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
}
