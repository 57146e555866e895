/*
 * The HTTP side of /sandbox-exec: parses the upgrade request nginx forwards
 * (request line, headers, the sandboxId query parameter, the identity
 * headers nginx sets) and computes Sec-WebSocket-Accept. Reads only the
 * bytes it is given, never past len; every value is length-checked before
 * it is copied. SHA-1 comes from OpenSSL's libcrypto (a well-kept library
 * that is on every host with libcurl4-openssl-dev), base64 from libsodium.
 */
#include "../common/util.h"
#include "stream.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <sodium.h>

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define STREAM_PATH "/sandbox-exec"
#define METRICS_PATH "/metrics"

int stream_ws_accept(const char *key, size_t len, char *out, size_t cap)
{
	unsigned char raw[32], md[EVP_MAX_MD_SIZE];
	char cat[128];
	size_t rawlen = 0;
	unsigned mdlen = 0;

	if (len == 0 || len > 64 || cap < 29)
		return -1;
	if (sodium_base642bin(raw, sizeof(raw), key, len, NULL, &rawlen, NULL,
			      sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    rawlen != 16)
		return -1;
	memcpy(cat, key, len);
	memcpy(cat + len, WS_GUID, sizeof(WS_GUID) - 1);
	if (EVP_Digest(cat, len + sizeof(WS_GUID) - 1, md, &mdlen, EVP_sha1(), NULL) != 1 ||
	    mdlen != 20)
		return -1;
	sodium_bin2base64(out, cap, md, mdlen, sodium_base64_VARIANT_ORIGINAL);
	return 0;
}

/* True when the comma-separated list s[0..n) holds token (any case). */
static int has_token(const char *s, size_t n, const char *token)
{
	size_t tl = strlen(token), i = 0;

	while (i < n) {
		size_t a, b;
		while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == ','))
			i++;
		a = i;
		while (i < n && s[i] != ',')
			i++;
		b = i;
		while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t'))
			b--;
		if (b - a == tl && strncasecmp(s + a, token, tl) == 0)
			return 1;
	}
	return 0;
}

/* Finds sandboxId in the query q[0..n) and checks it: 1..64 of
 * [A-Za-z0-9_-] after percent-decoding. */
static void parse_sandbox_id(const char *q, size_t n, struct stream_upgrade *u)
{
	size_t i = 0;

	u->sid = SID_MISSING;
	while (i < n) {
		size_t seg = i, o = 0;
		while (seg < n && q[seg] != '&')
			seg++;
		if (seg - i >= 10 && memcmp(q + i, "sandboxId=", 10) == 0) {
			if (u->sid != SID_MISSING) {
				u->sid = SID_MALFORMED; /* given twice */
				return;
			}
			u->sid = SID_OK;
			for (size_t k = i + 10; k < seg; k++) {
				int c = (unsigned char)q[k];
				if (c == '%') {
					int hi = k + 2 < seg ? hex_digit((unsigned char)q[k + 1])
							     : -1;
					int lo = k + 2 < seg ? hex_digit((unsigned char)q[k + 2])
							     : -1;
					if (hi < 0 || lo < 0) {
						u->sid = SID_MALFORMED;
						return;
					}
					c = hi * 16 + lo;
					k += 2;
				}
				if (!(isalnum(c) || c == '_' || c == '-') ||
				    o + 1 >= sizeof(u->sandbox_id)) {
					u->sid = SID_MALFORMED;
					return;
				}
				u->sandbox_id[o++] = (char)c;
			}
			u->sandbox_id[o] = '\0';
			if (o == 0)
				u->sid = SID_MISSING;
		}
		i = seg + 1;
	}
}

/* Copies an identity header value; a second copy or an unusable value
 * blanks it for good (seen[] remembers). */
static void set_ident(char *dst, size_t cap, int *seen, const char *v, size_t n)
{
	int ok = n > 0 && n < cap && !*seen;

	for (size_t i = 0; ok && i < n; i++)
		if ((unsigned char)v[i] < 0x21 || (unsigned char)v[i] > 0x7e)
			ok = 0;
	if (ok) {
		memcpy(dst, v, n);
		dst[n] = '\0';
	} else {
		dst[0] = '\0';
	}
	*seen = 1;
}

/* One path segment s[0..n) as an id: 1..64 of [A-Za-z0-9_-] into out. */
static int seg_id(const char *s, size_t n, char *out, size_t cap)
{
	if (n == 0 || n >= cap)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '-'))
			return -1;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

/* /endpoints/<sandbox>/v1/processes/<process>/interact (path p[0..n), no
 * query): 1 with the ids in u, 0 when it is not that path. A process
 * segment that is no id leaves u->process "" (no such process). */
static int interact_path(const char *p, size_t n, struct stream_upgrade *u)
{
	static const char pre[] = "/endpoints/", mid[] = "/v1/processes/", end[] = "/interact";
	const char *sb, *sl, *pr;
	size_t k;

	if (n < sizeof(pre) - 1 + sizeof(mid) - 1 + sizeof(end) - 1 + 2 ||
	    memcmp(p, pre, sizeof(pre) - 1) != 0 ||
	    memcmp(p + n - (sizeof(end) - 1), end, sizeof(end) - 1) != 0)
		return 0;
	sb = p + sizeof(pre) - 1;
	sl = memchr(sb, '/', (size_t)(p + n - sb));
	if (!sl || (size_t)(p + n - sl) < sizeof(mid) - 1 + sizeof(end) ||
	    memcmp(sl, mid, sizeof(mid) - 1) != 0 ||
	    seg_id(sb, (size_t)(sl - sb), u->sandbox_id, sizeof(u->sandbox_id)) < 0)
		return 0;
	pr = sl + sizeof(mid) - 1;
	k = (size_t)(p + n - (sizeof(end) - 1) - pr);
	if (k == 0 || memchr(pr, '/', k))
		return 0;
	if (seg_id(pr, k, u->process, sizeof(u->process)) < 0)
		u->process[0] = '\0';
	u->sid = SID_OK;
	u->kind = SK_INTERACT;
	return 1;
}

int stream_http_parse(const char *p, size_t len, struct stream_upgrade *u)
{
	const char *end = p + len, *line, *eol, *sp1, *sp2, *q;
	const char *key = NULL, *upgrade = NULL, *conn = NULL, *version = NULL;
	size_t key_len = 0, upgrade_len = 0, conn_len = 0, version_len = 0;
	int seen_org = 0, seen_key_id = 0, seen_role = 0, seen_perms = 0, seen_rid = 0, keys = 0;
	int seen_exp = 0;
	char exp[24] = "";

	memset(u, 0, sizeof(*u));
	u->status = 400;
	u->why = "Bad request";
	eol = memchr(p, '\n', len);
	if (!eol)
		return -1;
	line = p;
	sp1 = memchr(line, ' ', (size_t)(eol - line));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp1 || !sp2)
		return -1;
	if (eol - sp2 - 1 < 8 || memcmp(sp2 + 1, "HTTP/1.1", 8) != 0)
		return -1;
	/* headers */
	for (line = eol + 1; line < end; line = eol + 1) {
		const char *colon, *v, *ve;
		size_t nlen;
		eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol)
			break;
		ve = eol;
		if (ve > line && ve[-1] == '\r')
			ve--;
		if (ve == line)
			break; /* the blank line */
		colon = memchr(line, ':', (size_t)(ve - line));
		if (!colon)
			return -1;
		nlen = (size_t)(colon - line);
		v = colon + 1;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
#define IS(name) (nlen == sizeof(name) - 1 && strncasecmp(line, name, nlen) == 0)
		if (IS("Sec-WebSocket-Key")) {
			key = v;
			key_len = (size_t)(ve - v);
			keys++;
		} else if (IS("Upgrade")) {
			upgrade = v;
			upgrade_len = (size_t)(ve - v);
		} else if (IS("Connection")) {
			conn = v;
			conn_len = (size_t)(ve - v);
		} else if (IS("Sec-WebSocket-Version")) {
			version = v;
			version_len = (size_t)(ve - v);
		} else if (IS("X-Sandpit-Org")) {
			set_ident(u->org, sizeof(u->org), &seen_org, v, (size_t)(ve - v));
		} else if (IS("X-Sandpit-Key-Id")) {
			set_ident(u->key_id, sizeof(u->key_id), &seen_key_id, v, (size_t)(ve - v));
		} else if (IS("X-Sandpit-Role")) {
			set_ident(u->role, sizeof(u->role), &seen_role, v, (size_t)(ve - v));
		} else if (IS("X-Sandpit-Perms")) {
			set_ident(u->perms, sizeof(u->perms), &seen_perms, v, (size_t)(ve - v));
		} else if (IS("Sec-WebSocket-Protocol")) {
			if (has_token(v, (size_t)(ve - v), "sandboxes.v1"))
				u->subproto = 1;
		} else if (IS("X-Sandpit-Expires")) {
			set_ident(exp, sizeof(exp), &seen_exp, v, (size_t)(ve - v));
		} else if (IS("X-Sandpit-Request-Id")) {
			set_ident(u->request_id, sizeof(u->request_id), &seen_rid, v,
				  (size_t)(ve - v));
		}
#undef IS
	}
	if ((size_t)(sp1 - p) != 3 || memcmp(p, "GET", 3) != 0) {
		u->status = 405;
		u->why = "Method not allowed (a WebSocket upgrade is a GET)";
		return 0;
	}
	q = memchr(sp1 + 1, '?', (size_t)(sp2 - sp1 - 1));
	/* GET /metrics: this daemon's gauges (nginx's /metrics/stream) */
	if ((size_t)((q ? q : sp2) - sp1 - 1) == sizeof(METRICS_PATH) - 1 &&
	    memcmp(sp1 + 1, METRICS_PATH, sizeof(METRICS_PATH) - 1) == 0) {
		u->status = 200;
		u->why = NULL;
		return 0;
	}
	if (exp[0]) {
		long long v;
		if (parse_ll(exp, 1, INT64_MAX, &v) == 0)
			u->expires_ms = v;
	}
	if (interact_path(sp1 + 1, (size_t)((q ? q : sp2) - sp1 - 1), u)) {
		if (q) {
			u->status = 400;
			u->why = "interact takes no query parameter";
			return 0;
		}
	} else if ((size_t)((q ? q : sp2) - sp1 - 1) != sizeof(STREAM_PATH) - 1 ||
		   memcmp(sp1 + 1, STREAM_PATH, sizeof(STREAM_PATH) - 1) != 0) {
		u->status = 404;
		u->why = "Not found";
		return 0;
	}
	if (q && u->kind == SK_EXEC)
		parse_sandbox_id(q + 1, (size_t)(sp2 - q - 1), u);
	if (!upgrade || !has_token(upgrade, upgrade_len, "websocket") || !conn ||
	    !has_token(conn, conn_len, "upgrade")) {
		u->status = 426;
		u->why = "This endpoint speaks WebSocket only (Upgrade: websocket)";
		return 0;
	}
	if (!version || version_len != 2 || memcmp(version, "13", 2) != 0) {
		u->status = 426;
		u->why = "Unsupported Sec-WebSocket-Version (13 is)";
		return 0;
	}
	if (keys != 1 || stream_ws_accept(key, key_len, u->accept, sizeof(u->accept)) < 0) {
		u->status = 400;
		u->why = "Missing or malformed Sec-WebSocket-Key";
		return 0;
	}
	u->status = 0;
	u->why = NULL;
	return 0;
}
