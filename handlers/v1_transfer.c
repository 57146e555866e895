/*
 * The streamed file transfers of the sandbox endpoint (issue 16):
 * upload (POST <endpoint>/v1/files/upload, multipart/form-data) and
 * download (GET <endpoint>/v1/files/download?paths=..., multipart/mixed),
 * exactly as the document's x-sbx-framing states them. Both stream: the
 * request body is parsed as it is read from nginx (never buffered whole)
 * and handed to the core piece by piece; a download's parts are written
 * as the helper's frames come. Memory per request is one read buffer and
 * one metadata part, whatever the files' sizes. Every part, header and
 * FileHeader is checked here, at the edge, before the core sees it; the
 * streamed cap (transfer_max_mb) bounds a request's content bytes.
 */
#include "handlers.h"

#include <ctype.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/crypto.h"
#include "../common/utf8.h"
#include "../common/util.h"
#include "../fcgi/face.h"

#define MP_BUF (256 * 1024)    /* the read buffer */
#define MP_HEAD_MAX 8192       /* a part's header block */
#define MP_META_MAX 65536      /* a metadata part */
#define MP_BOUNDARY_MAX 70     /* RFC 2046 */
#define MP_OVERHEAD (64 << 20) /* body bytes beyond the content a request may carry */

enum mp_phase { MP_PREAMBLE, MP_AFTER_DELIM, MP_HEADERS, MP_CONTENT, MP_DONE };

struct v1_mp {
	v1_mp_read_fn rd;
	void *rd_arg;
	char *buf;
	size_t len, off;
	int eof;
	int64_t read, body_max, cap, content;
	char delim[MP_BOUNDARY_MAX + 5]; /* CRLF "--" boundary */
	size_t dlen;
	enum mp_phase phase;
	long long item; /* the item under way (index from 0) */
	int want_content;
	char path[4097];
	char meta[MP_META_MAX + 1];
};

/* Reads more of the body into the buffer (moving what is left first).
 * -1 with e over the body's bound. */
static int mp_fill(struct v1_mp *m, struct sp_err *e)
{
	int n;

	if (m->off) {
		memmove(m->buf, m->buf + m->off, m->len - m->off);
		m->len -= m->off;
		m->off = 0;
	}
	if (m->eof || m->len == MP_BUF)
		return 0;
	n = m->rd(m->rd_arg, m->buf + m->len, (int)(MP_BUF - m->len));
	if (n <= 0) {
		m->eof = 1;
		return 0;
	}
	m->len += (size_t)n;
	m->read += n;
	if (m->read > m->body_max)
		return sp_err_field(e, SP_TOO_LARGE, "content",
				    "content: the body is over the streamed cap of %lld bytes "
				    "(transfer_max_mb) and its framing",
				    (long long)m->cap);
	return 0;
}

/* A malformed occurrence: invalidArgument naming field[item] (and its
 * member when why starts with "path:" or "mode:"), the item's index and
 * path in the message. */
static int mp_bad(struct v1_mp *m, struct sp_err *e, const char *field, const char *why)
{
	char f[64];
	const char *member = strncmp(why, "path:", 5) == 0   ? ".path"
			     : strncmp(why, "mode:", 5) == 0 ? ".mode"
							     : "";

	if (m->item >= 0 && strcmp(field, "body") != 0)
		snprintf(f, sizeof(f), "%s[%lld]%s", field, m->item, member);
	else
		snprintf(f, sizeof(f), "%s", field);
	if (m->path[0] && m->item >= 0)
		return sp_err_field(e, SP_BAD_REQUEST, f, "%s: item %lld (%s): %s", f, m->item,
				    m->path, why);
	if (m->item >= 0)
		return sp_err_field(e, SP_BAD_REQUEST, f, "%s: item %lld: %s", f, m->item, why);
	return sp_err_field(e, SP_BAD_REQUEST, f, "%s: %s", f, why);
}

/* The value of parameter name in a header's ;-separated list (quoted or
 * not) into out; 0, -1 when absent or too long. */
static int header_param(const char *v, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name);

	for (const char *p = strchr(v, ';'); p; p = strchr(p + 1, ';')) {
		const char *q = p + 1;
		size_t o = 0;
		while (*q == ' ' || *q == '\t')
			q++;
		if (strncasecmp(q, name, nl) != 0 || q[nl] != '=')
			continue;
		q += nl + 1;
		if (*q == '"') {
			for (q++; *q && *q != '"'; q++) {
				if (*q == '\\' && q[1])
					q++;
				if (o + 1 >= cap)
					return -1;
				out[o++] = *q;
			}
			if (*q != '"')
				return -1;
		} else {
			for (; *q && *q != ';' && *q != ' ' && *q != '\t'; q++) {
				if (o + 1 >= cap)
					return -1;
				out[o++] = *q;
			}
		}
		out[o] = '\0';
		return 0;
	}
	return -1;
}

/* The media type of a Content-Type value is t (case aside, parameters
 * allowed). */
static int media_is(const char *v, const char *t)
{
	size_t n = strlen(t);

	while (*v == ' ' || *v == '\t')
		v++;
	return strncasecmp(v, t, n) == 0 && (v[n] == '\0' || v[n] == ';' || v[n] == ' ');
}

/* One part's header block [p, p+n): its name (metadata or content) and
 * the document's rules for each. */
static int mp_headers(struct v1_mp *m, const char *p, size_t n, struct sp_err *e)
{
	char line[MP_HEAD_MAX + 1], name[32] = "";
	int have_type = 0, type_ok = 0, have_disp = 0;
	const char *end = p + n, *part = m->want_content ? "content" : "metadata";

	while (p < end) {
		const char *nl = memmem(p, (size_t)(end - p), "\r\n", 2);
		size_t k = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *colon, *val;
		memcpy(line, p, k);
		line[k] = '\0';
		p += k + 2;
		if (k == 0)
			continue;
		if (memchr(line, '\0', k))
			return mp_bad(m, e, part, "a header holds NUL");
		colon = strchr(line, ':');
		if (!colon)
			return mp_bad(m, e, part, "a header line without a colon");
		*colon = '\0';
		for (val = colon + 1; *val == ' ' || *val == '\t'; val++)
			;
		if (strcasecmp(line, "Content-Transfer-Encoding") == 0)
			return mp_bad(m, e, part, "Content-Transfer-Encoding is refused");
		if (strcasecmp(line, "Content-Disposition") == 0) {
			have_disp = 1;
			if (!media_is(val, "form-data") ||
			    header_param(val, "name", name, sizeof(name)) < 0)
				return mp_bad(m, e, part,
					      "Content-Disposition must be form-data with a name");
		} else if (strcasecmp(line, "Content-Type") == 0) {
			have_type = 1;
			type_ok = m->want_content ? media_is(val, "application/octet-stream")
						  : media_is(val, "application/json");
		}
	}
	if (!have_disp)
		return mp_bad(m, e, part, "Content-Disposition is required");
	if (strcmp(name, "metadata") != 0 && strcmp(name, "content") != 0)
		return mp_bad(m, e, part, "a part must be named metadata or content");
	if (!m->want_content && strcmp(name, "metadata") != 0)
		return mp_bad(m, e, "content",
			      "a content part without its metadata part before it (the first "
			      "frame, and the first after each file, is metadata)");
	if (m->want_content && strcmp(name, "content") != 0)
		return mp_bad(m, e, "metadata", "a metadata part where the content part is due");
	if (!have_type || !type_ok)
		return mp_bad(m, e, name,
			      m->want_content ? "the content part must be application/octet-stream"
					      : "the metadata part must be application/json");
	return 0;
}

/* The metadata part's FileHeader into ev (path in m->path). */
static int mp_meta(struct v1_mp *m, size_t n, struct sb_up_event *ev, struct sp_err *e)
{
	json_tokener *tok = json_tokener_new_ex(4);
	json_object *o = NULL, *v;
	const char *path;
	size_t plen;
	int64_t mode = 0;
	int rc = -1;

	m->path[0] = '\0';
	if (!tok)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	if (utf8_valid(m->meta, n))
		o = json_tokener_parse_ex(tok, m->meta, (int)n);
	if (!o || json_tokener_get_parse_end(tok) != n ||
	    !json_object_is_type(o, json_type_object)) {
		mp_bad(m, e, "metadata", "not a FileHeader JSON object");
		goto done;
	}
	json_object_object_foreach(o, key, val)
	{
		(void)val;
		if (strcmp(key, "path") != 0 && strcmp(key, "mode") != 0) {
			char why[160];
			snprintf(why, sizeof(why), "unknown member '%.64s' of FileHeader", key);
			mp_bad(m, e, "metadata", why);
			goto done;
		}
	}
	if (!json_object_object_get_ex(o, "path", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		mp_bad(m, e, "metadata", "path: a string is required");
		goto done;
	}
	path = json_object_get_string(v);
	plen = (size_t)json_object_get_string_len(v);
	if (plen == 0 || path[0] != '/' || plen > 4096 || memchr(path, '\0', plen)) {
		mp_bad(m, e, "metadata", "path: absolute, at most 4096 bytes, without NUL");
		goto done;
	}
	memcpy(m->path, path, plen + 1);
	if (json_object_object_get_ex(o, "mode", &v) && v) {
		if (!json_object_is_type(v, json_type_int) ||
		    (mode = json_object_get_int64(v)) < 0 || mode > 0xffffffffLL) {
			mp_bad(m, e, "metadata",
			       "mode: an integer from 0 (mode & 0777 is applied)");
			goto done;
		}
	}
	ev->kind = SB_UP_FILE;
	ev->path = m->path;
	ev->mode = (unsigned)(mode & 0777);
	rc = 0;
done:
	json_object_put(o);
	json_tokener_free(tok);
	return rc;
}

/* Finds the delimiter in the buffer from off; its offset or -1. */
static long mp_find(struct v1_mp *m)
{
	const char *d = memmem(m->buf + m->off, m->len - m->off, m->delim, m->dlen);

	return d ? (long)(d - m->buf) : -1;
}

struct v1_mp *v1_mp_new(const char *boundary, int64_t cap, int64_t body_max, v1_mp_read_fn rd,
			void *rd_arg)
{
	struct v1_mp *m;

	if (strlen(boundary) > MP_BOUNDARY_MAX || !boundary[0])
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m || !(m->buf = malloc(MP_BUF))) {
		free(m);
		return NULL;
	}
	m->rd = rd;
	m->rd_arg = rd_arg;
	m->cap = cap;
	m->body_max = body_max;
	m->item = -1;
	m->dlen = (size_t)snprintf(m->delim, sizeof(m->delim), "\r\n--%s", boundary);
	/* the first delimiter may open the body without its CRLF */
	memcpy(m->buf, "\r\n", 2);
	m->len = 2;
	return m;
}

void v1_mp_free(struct v1_mp *m)
{
	if (m) {
		free(m->buf);
		free(m);
	}
}

int v1_mp_next(void *arg, struct sb_up_event *ev, struct sp_err *e)
{
	struct v1_mp *m = arg;

	for (;;) {
		long at;
		switch (m->phase) {
		case MP_PREAMBLE:
			at = mp_find(m);
			if (at >= 0) {
				m->off = (size_t)at + m->dlen;
				m->phase = MP_AFTER_DELIM;
				continue;
			}
			if (m->eof)
				return mp_bad(m, e, "body", "no multipart delimiter in the body");
			if (m->len - m->off >= m->dlen)
				m->off = m->len - (m->dlen - 1);
			if (mp_fill(m, e) < 0)
				return -1;
			continue;
		case MP_AFTER_DELIM: {
			size_t k = m->off;
			while (k < m->len && (m->buf[k] == ' ' || m->buf[k] == '\t'))
				k++;
			if (m->len - m->off < 2 || (k + 2 > m->len && !m->eof)) {
				if (m->eof)
					return mp_bad(
						m, e, "body",
						"the body ended before the closing delimiter");
				if (mp_fill(m, e) < 0)
					return -1;
				continue;
			}
			if (m->buf[m->off] == '-' && m->buf[m->off + 1] == '-') {
				if (m->want_content)
					return mp_bad(m, e, "content",
						      "the body closed before the content part");
				m->phase = MP_DONE;
				ev->kind = SB_UP_END;
				return 0;
			}
			if (k + 2 > m->len || m->buf[k] != '\r' || m->buf[k + 1] != '\n')
				return mp_bad(m, e, "body", "a malformed multipart delimiter");
			m->off = k + 2;
			m->phase = MP_HEADERS;
			if (!m->want_content) {
				m->item++;
				m->path[0] = '\0';
			}
			continue;
		}
		case MP_HEADERS: {
			const char *hend;
			size_t hlen;
			/* an empty header block is the blank line alone */
			if (m->len - m->off >= 2 && memcmp(m->buf + m->off, "\r\n", 2) == 0) {
				hend = m->buf + m->off;
				hlen = 0;
			} else {
				hend = memmem(m->buf + m->off, m->len - m->off, "\r\n\r\n", 4);
				hlen = hend ? (size_t)(hend - (m->buf + m->off)) : 0;
				if (hend)
					hend += 2;
			}
			if (!hend) {
				if (m->len - m->off > MP_HEAD_MAX)
					return mp_bad(m, e, "part", "a header block over 8 KiB");
				if (m->eof)
					return mp_bad(m, e, "body",
						      "the body ended inside a part's headers");
				if (mp_fill(m, e) < 0)
					return -1;
				continue;
			}
			if (hlen > MP_HEAD_MAX)
				return mp_bad(m, e, "part", "a header block over 8 KiB");
			if (mp_headers(m, m->buf + m->off, hlen, e) < 0)
				return -1;
			m->off = (size_t)(hend - m->buf) + 2;
			if (m->want_content) {
				m->phase = MP_CONTENT;
				continue;
			}
			/* the metadata part, whole */
			for (;;) {
				at = mp_find(m);
				if (at >= 0 && (size_t)at - m->off <= MP_META_MAX)
					break;
				if (m->len - m->off > MP_META_MAX)
					return mp_bad(m, e, "metadata", "over 64 KiB");
				if (m->eof)
					return mp_bad(m, e, "body",
						      "the body ended inside a metadata part");
				if (mp_fill(m, e) < 0)
					return -1;
			}
			memcpy(m->meta, m->buf + m->off, (size_t)at - m->off);
			m->meta[(size_t)at - m->off] = '\0';
			if (mp_meta(m, (size_t)at - m->off, ev, e) < 0)
				return -1;
			m->off = (size_t)at + m->dlen;
			m->phase = MP_AFTER_DELIM;
			m->want_content = 1;
			return 0;
		}
		case MP_CONTENT: {
			size_t safe;
			at = mp_find(m);
			if (at == (long)m->off) {
				m->off += m->dlen;
				m->phase = MP_AFTER_DELIM;
				m->want_content = 0;
				ev->kind = SB_UP_COMMIT;
				return 0;
			}
			if (at > 0)
				safe = (size_t)at - m->off;
			else
				safe = m->len - m->off >= m->dlen ? m->len - m->off - (m->dlen - 1)
								  : 0;
			if (safe) {
				m->content += (int64_t)safe;
				if (m->content > m->cap)
					return sp_err_field(e, SP_TOO_LARGE, "content",
							    "content: item %lld (%s) is over the "
							    "streamed cap of %lld bytes "
							    "(transfer_max_mb)",
							    m->item, m->path, (long long)m->cap);
				ev->kind = SB_UP_DATA;
				ev->data = m->buf + m->off;
				ev->len = safe;
				m->off += safe;
				return 0;
			}
			if (m->eof)
				return mp_bad(m, e, "content",
					      "the body ended inside the content: the item is not "
					      "written");
			if (mp_fill(m, e) < 0)
				return -1;
			continue;
		}
		case MP_DONE:
			ev->kind = SB_UP_END;
			return 0;
		}
	}
}

/* The upload's body as nginx passes it on (fastcgi_request_buffering off),
 * under W1's bound for a streamed body: it may take request_timeout s plus
 * 1 s per transfer_min_kbps KiB read so far. A read waits only for its
 * first byte, then takes what has come (the stream's buffer, and more
 * records while the socket has them ready), so a trickled body is checked
 * at every piece nginx forwards; a gap is bounded by nginx's
 * client_body_timeout. Past the bound the read ends the body (slow = 1)
 * and the upload answers 408. */
struct up_rd {
	struct req *r;
	int64_t t0, read, grace_ms, min_bps;
	int slow;
};

static int fcgi_read(void *arg, char *buf, int cap)
{
	struct up_rd *u = arg;
	FCGX_Stream *in = u->r->fx->in;
	struct pollfd p = { .fd = u->r->fx->ipcFd, .events = POLLIN };
	int n = 0, got, more;

	if (u->slow)
		return -1;
	while (n < cap) {
		more = (int)(in->stop - in->rdNext);
		if (more > cap - n)
			more = cap - n;
		if (more > 0) {
			n += FCGX_GetStr(buf + n, more, in);
			continue;
		}
		/* the buffer is empty: wait only while nothing has come yet */
		if (n > 0 && poll(&p, 1, 0) != 1)
			break;
		got = FCGX_GetStr(buf + n, 1, in);
		if (got <= 0) {
			if (n == 0)
				return got;
			break;
		}
		n += got;
	}
	u->read += n;
	if (u->min_bps > 0 && mono_ms() - u->t0 > u->grace_ms + u->read * 1000 / u->min_bps) {
		u->slow = 1;
		return -1;
	}
	return n;
}

static int64_t transfer_cap(const struct handler_ctx *h)
{
	return (int64_t)h->cfg->transfer_max_mb * 1024 * 1024;
}

/* POST <endpoint>/v1/files/upload */
int v1_files_upload(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *ct = req_param(h->r, "CONTENT_TYPE"), *cl = req_param(h->r, "CONTENT_LENGTH");
	char boundary[MP_BOUNDARY_MAX + 2];
	int64_t written = 0, cap = transfer_cap(h);
	struct up_rd u = { h->r,
			   mono_ms(),
			   0,
			   (int64_t)h->cfg->request_timeout * 1000,
			   (int64_t)h->cfg->transfer_min_kbps * 1024,
			   0 };
	struct v1_mp *m;
	long long len;
	int rc = -1;

	if (!media_is(ct, "multipart/form-data") ||
	    header_param(ct, "boundary", boundary, sizeof(boundary)) < 0 || !boundary[0] ||
	    strlen(boundary) > MP_BOUNDARY_MAX)
		return sp_err_field(
			e, SP_UNSUPPORTED_MEDIA, "Content-Type",
			"Content-Type: upload takes multipart/form-data with a boundary "
			"(1 to 70 characters)");
	if (*cl && parse_ll(cl, 0, INT64_MAX, &len) == 0 && len > cap + MP_OVERHEAD)
		return sp_err_field(
			e, SP_TOO_LARGE, "content",
			"content: the body (%lld bytes) is over the streamed cap of %lld "
			"bytes (transfer_max_mb) and its framing",
			len, (long long)cap);
	m = v1_mp_new(boundary, cap, cap + MP_OVERHEAD, fcgi_read, &u);
	if (!m)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	if (sandbox_files_upload(h->sb, h->r->org, hin_str(in, "sandbox", NULL), m->cap, v1_mp_next,
				 m, &written, e) < 0) {
		if (u.slow)
			sp_err_field(
				e, SP_TIMEOUT, "body",
				"body: the upload came slower than transfer_min_kbps (%d KiB/s) "
				"after its first request_timeout (%d s); an item cut short is "
				"not written",
				h->cfg->transfer_min_kbps, h->cfg->request_timeout);
		goto done;
	}
	/* the epilogue: read, not kept */
	while (!m->eof && m->read <= m->body_max) {
		m->off = m->len;
		if (mp_fill(m, e) < 0)
			break;
	}
	*out = json_object_new_object();
	json_object_object_add(*out, "filesWritten", json_object_new_int64(written));
	rc = 0;
done:
	v1_mp_free(m);
	return rc;
}

/* --- download -------------------------------------------------------------- */

struct dl {
	struct req *r;
	const char *const *paths;
	char boundary[48];
	int started, parts, gone;
};

static int dl_put(struct dl *d, const void *p, size_t n)
{
	if (d->gone)
		return -1;
	while (n) {
		int k = n > (1 << 30) ? 1 << 30 : (int)n;
		if (FCGX_PutStr(p, k, d->r->fx->out) != k) {
			d->gone = 1;
			return -1;
		}
		p = (const char *)p + k;
		n -= (size_t)k;
	}
	return 0;
}

/* The answer's head once, then a part's delimiter and headers. */
static int dl_part(struct dl *d, const char *ctype, const char *name)
{
	char head[256];
	int n;

	if (!d->started) {
		n = snprintf(head, sizeof(head),
			     "Status: 200 OK\r\nContent-Type: multipart/mixed; boundary=%s\r\n"
			     "Cache-Control: no-store\r\nX-Accel-Buffering: no\r\n\r\n",
			     d->boundary);
		d->started = 1;
		d->r->status = 200;
		if (dl_put(d, head, (size_t)n) < 0)
			return -1;
	}
	n = snprintf(
		head, sizeof(head),
		"%s--%s\r\nContent-Type: %s\r\nContent-Disposition: attachment; name=%s\r\n\r\n",
		d->parts ? "\r\n" : "", d->boundary, ctype, name);
	d->parts++;
	return dl_put(d, head, (size_t)n);
}

static int dl_json(struct dl *d, const char *name, json_object *o)
{
	size_t len = 0;
	const char *s = json_object_to_json_string_length(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	int rc = dl_part(d, "application/json", name) < 0 ? -1 : dl_put(d, s, len);

	json_object_put(o);
	return rc;
}

static int dl_header(void *arg, size_t idx, unsigned mode)
{
	struct dl *d = arg;
	json_object *o = json_object_new_object();

	json_object_object_add(o, "path", json_object_new_string(d->paths[idx]));
	json_object_object_add(o, "mode", json_object_new_int((int)mode));
	if (dl_json(d, "metadata", o) < 0)
		return -1;
	return dl_part(d, "application/octet-stream", "content");
}

static int dl_data(void *arg, const char *p, size_t n)
{
	struct dl *d = arg;

	if (d->gone || req_write_bulk(d->r, p, n) < 0) {
		d->gone = 1;
		return -1;
	}
	return 0;
}

static int dl_end(void *arg, size_t idx)
{
	(void)arg;
	(void)idx;
	return 0;
}

static int dl_error(void *arg, size_t idx, const struct sp_err *fe)
{
	struct dl *d = arg;
	json_object *o = json_object_new_object();

	json_object_object_add(o, "path", json_object_new_string(d->paths[idx]));
	json_object_object_add(o, "failure", face_v1.error_body(&face_v1, fe, NULL));
	return dl_json(d, "error", o);
}

/* GET <endpoint>/v1/files/download?paths=...: the paths in request order
 * (duplicates too), each a metadata part and one content part, or an
 * error part; a failure of the whole stream once parts were sent is a
 * stream-error part; then the closing delimiter. */
int v1_files_download(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	static const struct sb_down_sink sink = { dl_header, dl_data, dl_end, dl_error };
	json_object *arr = NULL;
	const char **paths;
	struct dl d;
	size_t n;
	int rc;

	(void)out;
	if (!h->stream_ok)
		return sp_err_set(e, SP_UNIMPLEMENTED, "download answers multipart over HTTP only");
	if (!json_object_object_get_ex(in, "paths", &arr) ||
	    !json_object_is_type(arr, json_type_array) || json_object_array_length(arr) == 0)
		return sp_err_field(e, SP_BAD_REQUEST, "paths", "paths: Required");
	n = json_object_array_length(arr);
	paths = calloc(n + 1, sizeof(*paths));
	if (!paths)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	for (size_t i = 0; i < n; i++)
		paths[i] = json_object_get_string(json_object_array_get_idx(arr, i));
	memset(&d, 0, sizeof(d));
	d.r = h->r;
	d.paths = paths;
	memcpy(d.boundary, "sandpit-", 8);
	crypto_random_id(d.boundary + 8, 32);
	rc = sandbox_files_download(h->sb, h->r->org, hin_str(in, "sandbox", NULL), paths, n,
				    transfer_cap(h), &sink, &d, e);
	free(paths);
	if (rc < 0 && !d.started)
		return -1; /* nothing sent: the plain error answer */
	if (rc < 0 && !d.gone)
		dl_json(&d, "stream-error", face_v1.error_body(&face_v1, e, NULL));
	if (!d.gone) {
		char close[64];
		int k = snprintf(close, sizeof(close), "\r\n--%s--\r\n", d.boundary);
		dl_put(&d, close, (size_t)k);
	}
	return 0;
}
