/*
 * The conventions every /v1 resource shares: ETags and If-Match, and the
 * pages of every list (sandboxes, snapshots, images, volumes, processes,
 * files): the filter, the page size from pageSize, and the pageToken.
 *
 * An ETag is strong: 24 hex digits of the data key's keyed hash over the
 * resource's kind and its rendering (or, for a resource that never
 * changes, what names it), so it changes with every visible change and
 * with nothing else, and says nothing of the key.
 *
 * A token is the list's cursor (where the next page starts: an offset, a
 * uid, the core's own cursor) in hex, a dot, and a MAC over the list's
 * operation, the org and its scope (what the call was asked for: filter,
 * order, sandbox, path) and the cursor, under the data key. So a token is
 * opaque to its caller and refused, as a 400 naming pageToken, by another
 * list, another org, another scope, and when edited.
 *
 * And the renderings they share: a time, an int64 (a string, the
 * document's format), the ETag member, the host's architecture.
 */
#include "handlers.h"

#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "../common/buf.h"
#include "../common/crypto.h"
#include "../common/util.h"

#define PAGE_MAC 32 /* hex digits of a token's MAC */
#define ETAG_HEX 24

json_object *v1_time_json(int64_t ms)
{
	char iso[40];

	iso8601_ms(ms, iso, sizeof(iso));
	return json_object_new_string(iso);
}

json_object *v1_int64_json(int64_t v)
{
	char n[32];

	snprintf(n, sizeof(n), "%lld", (long long)v);
	return json_object_new_string(n);
}

const char *v1_host_arch(void)
{
	static struct utsname u;

	if (!u.machine[0] && uname(&u) < 0)
		return "";
	if (strcmp(u.machine, "x86_64") == 0)
		return "amd64";
	if (strcmp(u.machine, "aarch64") == 0)
		return "arm64";
	return u.machine;
}

void v1_add_etag(const struct config *cfg, const char *kind, json_object *o, char tag[V1_ETAG_MAX])
{
	char v[V1_ETAG_MAX];

	v1_etag(cfg, kind, o, v);
	json_object_object_add(o, "etag", json_object_new_string(v));
	if (tag)
		str_copy(tag, V1_ETAG_MAX, v);
}

void v1_etag_of(const struct config *cfg, const char *kind, const char *data, size_t len,
		char out[V1_ETAG_MAX])
{
	char hex[65];
	struct buf b;

	buf_init(&b, len + 64);
	if (buf_printf(&b, "sandpit v1 %s etag\n", kind) < 0 || buf_append(&b, data, len) < 0) {
		/* cannot happen (the cap is the size): an ETag that never matches */
		snprintf(out, V1_ETAG_MAX, "\"x\"");
	} else {
		crypto_key_hash(cfg->data_key, b.data, b.len, hex);
		snprintf(out, V1_ETAG_MAX, "\"%.*s\"", ETAG_HEX, hex);
	}
	buf_free(&b);
}

void v1_etag(const struct config *cfg, const char *kind, json_object *o, char out[V1_ETAG_MAX])
{
	size_t len = 0;
	const char *t = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);

	v1_etag_of(cfg, kind, t, len, out);
}

int v1_if_match(const char *want, const char *current, const char *what, struct sp_err *e)
{
	if (want && strcmp(want, current) == 0)
		return 0;
	sp_err_set(e, SP_ETAG_MISMATCH,
		   "etag_mismatch: If-Match is not the %s's current ETag (read it again)", what);
	str_copy(e->field, sizeof(e->field), current);
	return -1;
}

size_t v1_page_size(json_object *in, size_t dflt, size_t max)
{
	int64_t n = hin_i64(in, "pageSize", 0);

	return n <= 0 ? dflt : (uint64_t)n > max ? max : (size_t)n;
}

/* hex holds 65; all zero when the inputs pass their caps (they cannot: the
 * route's fields bound them), so no token made then matches. */
static void page_mac(const struct handler_ctx *h, const char *op, const char *scope,
		     const char *cursor, char *hex)
{
	struct buf b;

	buf_init(&b, 8192);
	if (buf_printf(&b, "sandpit v1 %s\n%s\n%s\n%s", op, h->r->org, scope, cursor) < 0)
		memset(hex, 0, 65);
	else
		crypto_key_hash(h->cfg->data_key, b.data, b.len, hex);
	buf_free(&b);
}

void v1_page_token(const struct handler_ctx *h, const char *op, const char *scope,
		   const char *cursor, char *out, size_t cap)
{
	char mac[65];
	size_t o = 0, n = strlen(cursor);

	if (cap < 2 * n + PAGE_MAC + 2) {
		out[0] = '\0'; /* a cap the callers size from V1_PAGE_TOKEN_MAX */
		return;
	}
	page_mac(h, op, scope, cursor, mac);
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(out + o, cap - o, "%02x", (unsigned char)cursor[i]);
	snprintf(out + o, cap - o, ".%.*s", PAGE_MAC, mac);
}

int v1_page_cursor(const struct handler_ctx *h, json_object *in, const char *op, const char *scope,
		   char *cursor, size_t cap, struct sp_err *e)
{
	const char *tok = hin_str(in, "pageToken", NULL), *dot;
	char mac[65];
	size_t n, o = 0;
	unsigned diff = 0;

	cursor[0] = '\0';
	if (!tok || !*tok)
		return 0;
	dot = strchr(tok, '.');
	n = dot ? (size_t)(dot - tok) : 0;
	if (!dot || n == 0 || n % 2 || n / 2 >= cap || strlen(dot + 1) != PAGE_MAC)
		goto bad;
	for (size_t i = 0; i < n; i += 2) {
		int hi = hex_digit((unsigned char)tok[i]),
		    lo = hex_digit((unsigned char)tok[i + 1]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			goto bad;
		cursor[o++] = (char)(hi * 16 + lo);
	}
	cursor[o] = '\0';
	page_mac(h, op, scope, cursor, mac);
	for (size_t i = 0; i < PAGE_MAC; i++)
		diff |= (unsigned)(mac[i] ^ dot[1 + i]);
	if (diff)
		goto bad;
	return 0;
bad:
	cursor[0] = '\0';
	return sp_err_field(e, SP_BAD_REQUEST, "pageToken",
			    "pageToken: not a nextPageToken of this list (with this filter and "
			    "order)");
}

int v1_page_offset(const struct handler_ctx *h, json_object *in, const char *op, const char *scope,
		   size_t *off, struct sp_err *e)
{
	char cursor[V1_PAGE_CURSOR_MAX + 1];
	long long n = 0;

	*off = 0;
	if (v1_page_cursor(h, in, op, scope, cursor, sizeof(cursor), e) < 0)
		return -1;
	if (cursor[0] && parse_ll(cursor, 1, 1000000000, &n) < 0) /* a MAC'd cursor: ours */
		return sp_err_field(e, SP_BAD_REQUEST, "pageToken",
				    "pageToken: not a nextPageToken of this list");
	*off = (size_t)n;
	return 0;
}

json_object *v1_page_slice(const struct handler_ctx *h, json_object *in, const char *op,
			   const char *scope, size_t off, size_t dflt, size_t max, json_object *all,
			   const char *key)
{
	size_t lim = v1_page_size(in, dflt, max), n = json_object_array_length(all);
	json_object *arr = json_object_new_array(), *o = json_object_new_object();
	char next[V1_PAGE_TOKEN_MAX + 1] = "";

	for (size_t i = off; i < n && i < off + lim; i++)
		json_object_array_add(arr, json_object_get(json_object_array_get_idx(all, i)));
	if (off + lim < n) {
		char at[24];
		snprintf(at, sizeof(at), "%zu", off + lim);
		v1_page_token(h, op, scope, at, next, sizeof(next));
	}
	json_object_put(all);
	json_object_object_add(o, key, arr);
	json_object_object_add(o, "nextPageToken", json_object_new_string(next));
	return o;
}

/* s[0..*n) without spaces around it, and without the double quotes around
 * a value. */
static const char *trim(const char *s, size_t *n, int unquote)
{
	while (*n && *s == ' ')
		s++, (*n)--;
	while (*n && s[*n - 1] == ' ')
		(*n)--;
	if (unquote && *n >= 2 && s[0] == '"' && s[*n - 1] == '"')
		s++, *n -= 2;
	return s;
}

int v1_filter_parse(const char *s, const char *const *fields, struct v1_filter *f, struct sp_err *e)
{
	size_t used = 0;

	memset(f, 0, sizeof(*f));
	while (s && *s) {
		size_t seg = strcspn(s, ","), klen, vlen;
		const char *eq = memchr(s, '=', seg), *k, *v;
		int i = 0;
		if (!eq)
			return sp_err_field(e, SP_BAD_REQUEST, "filter",
					    "filter: expected field=value terms separated by ','");
		klen = (size_t)(eq - s);
		k = trim(s, &klen, 0);
		vlen = (size_t)(s + seg - eq - 1);
		v = trim(eq + 1, &vlen, 1);
		while (fields[i] && (strlen(fields[i]) != klen || memcmp(fields[i], k, klen) != 0))
			i++;
		if (!fields[i]) {
			char known[200] = "";
			for (int j = 0; fields[j]; j++)
				snprintf(known + strlen(known), sizeof(known) - strlen(known),
					 "%s%s", j ? ", " : "", fields[j]);
			return sp_err_field(e, SP_BAD_REQUEST, "filter",
					    "filter: unknown field '%.*s' (%s)",
					    (int)(klen > 40 ? 40 : klen), k, known);
		}
		if (f->val[i])
			return sp_err_field(e, SP_BAD_REQUEST, "filter", "filter: '%s' given twice",
					    fields[i]);
		if (used + vlen + 1 > sizeof(f->text))
			return sp_err_field(e, SP_BAD_REQUEST, "filter", "filter: too long");
		memcpy(f->text + used, v, vlen);
		f->text[used + vlen] = '\0';
		f->val[i] = f->text + used;
		used += vlen + 1;
		s += seg;
		if (*s == ',')
			s++;
	}
	return 0;
}

int v1_filter_is(const struct v1_filter *f, int i, const char *v)
{
	return !f->val[i] || strcmp(f->val[i], v) == 0;
}
