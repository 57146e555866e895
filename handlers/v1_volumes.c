/*
 * The /v1 volume operations (createVolume, listVolumes, getVolume,
 * deleteVolume): the core's managed volumes (sandbox/volume.c) as the
 * document's Volume. Its strong ETag is a keyed hash of that rendering (a
 * volume has no mutable field: it never changes). A pageToken is the last
 * volume's sort key under a MAC bound to the organization, the filter and
 * the order. Never touches Docker or Redis (the core does).
 */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/crypto.h"
#include "../common/util.h"

#define VOL_PAGE_DEFAULT 50
#define VOL_PAGE_MAX 256
#define VOL_ETAG_HEX 24
#define VOL_TOKEN_MAC 32

static json_object *volume_json(const struct config *cfg, const struct sandbox_volume *v,
				char *etag, size_t cap)
{
	json_object *o = json_object_new_object();
	char name[SANDBOX_ID_LEN + 16], iso[40], hex[65], tag[VOL_ETAG_HEX + 3];
	const char *t;
	size_t len = 0;
	struct buf b;

	snprintf(name, sizeof(name), "volumes/%s", v->id);
	json_object_object_add(o, "uid", json_object_new_string(v->id));
	json_object_object_add(o, "name", json_object_new_string(name));
	iso8601_ms(v->created_at, iso, sizeof(iso));
	json_object_object_add(o, "createdAt", json_object_new_string(iso));
	json_object_object_add(o, "displayName", json_object_new_string(v->display_name));
	t = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
	buf_init(&b, len + 64);
	if (buf_puts(&b, "sandpit v1 volume etag\n") < 0 || buf_append(&b, t, len) < 0)
		memset(hex, 'x', sizeof(hex)); /* cannot happen: the cap is the size */
	else
		crypto_key_hash(cfg->data_key, b.data, b.len, hex);
	buf_free(&b);
	snprintf(tag, sizeof(tag), "\"%.*s\"", VOL_ETAG_HEX, hex);
	json_object_object_add(o, "etag", json_object_new_string(tag));
	if (etag)
		str_copy(etag, cap, tag);
	return o;
}

/* displayName: 1 to SB_VOLUME_NAME_MAX bytes (the route checks), no '/',
 * not "." or "..", no control characters (FF_TEXT). */
static int display_name_check(const char *dn, struct sp_err *e)
{
	if (!dn || !*dn)
		return sp_err_field(e, SP_BAD_REQUEST, "displayName", "displayName: Required");
	if (strchr(dn, '/') || strcmp(dn, ".") == 0 || strcmp(dn, "..") == 0)
		return sp_err_field(e, SP_BAD_REQUEST, "displayName",
				    "displayName: a label without '/', not '.' or '..'");
	return 0;
}

int v1_volumes_create(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *dn = hin_str(in, "displayName", NULL);
	struct sandbox_volume v;

	if (display_name_check(dn, e) < 0)
		return -1;
	if (sandbox_volume_create(h->sb, h->r->org, hin_str(in, ROUTE_IN_IDEM_RESOURCE, NULL), dn,
				  &v, e) < 0)
		return -1;
	*out = volume_json(h->cfg, &v, NULL, 0);
	return 0;
}

int v1_volumes_get(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox_volume v;

	if (sandbox_volume_get(h->sb, h->r->org, hin_str(in, "volume", NULL), &v, e) < 0)
		return -1;
	*out = volume_json(h->cfg, &v, NULL, 0);
	return 0;
}

/* An absent volume is a 204 (the document: deleting an already absent
 * volume succeeds); a present one needs its current ETag. */
int v1_volumes_delete(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *id = hin_str(in, "volume", NULL), *want = hin_str(in, ROUTE_IN_IF_MATCH, NULL);
	struct sandbox_volume v;
	char tag[VOL_ETAG_HEX + 3];

	*out = NULL;
	if (sandbox_volume_get(h->sb, h->r->org, id, &v, e) < 0) {
		if (e->code != SP_NOT_FOUND)
			return -1;
		sp_err_clear(e);
		return 0;
	}
	json_object_put(volume_json(h->cfg, &v, tag, sizeof(tag)));
	if (!want || strcmp(want, tag) != 0) {
		sp_err_set(
			e, SP_ETAG_MISMATCH,
			"etag_mismatch: If-Match is not the volume's current ETag (read it again)");
		str_copy(e->field, sizeof(e->field), tag);
		return -1;
	}
	return sandbox_volume_delete(h->sb, h->r->org, id, e);
}

/* --- list ------------------------------------------------------------------ */

struct vol_filter {
	char name[96], display_name[SB_VOLUME_NAME_MAX + 1], uid[96];
	int has_name, has_display_name, has_uid;
};

static int filter_parse(const char *s, struct vol_filter *f, struct sp_err *e)
{
	memset(f, 0, sizeof(*f));
	while (s && *s) {
		size_t seg = strcspn(s, ","), klen, vlen, cap = 0;
		const char *eq = memchr(s, '=', seg), *k = s, *v;
		char *dst = NULL;
		int *has = NULL;
		if (!eq)
			return sp_err_field(e, SP_BAD_REQUEST, "filter",
					    "filter: expected field=value terms separated by ','");
		klen = (size_t)(eq - k);
		while (klen && k[klen - 1] == ' ')
			klen--;
		while (klen && *k == ' ')
			k++, klen--;
		v = eq + 1;
		vlen = (size_t)(s + seg - v);
		while (vlen && *v == ' ')
			v++, vlen--;
		while (vlen && v[vlen - 1] == ' ')
			vlen--;
		if (vlen >= 2 && v[0] == '"' && v[vlen - 1] == '"')
			v++, vlen -= 2;
#define KEY(lit, member)                                        \
	if (klen == strlen(lit) && memcmp(k, lit, klen) == 0) { \
		dst = f->member;                                \
		cap = sizeof(f->member);                        \
		has = &f->has_##member;                         \
	}
		KEY("name", name)
		KEY("display_name", display_name)
		KEY("uid", uid)
#undef KEY
		if (!dst)
			return sp_err_field(
				e, SP_BAD_REQUEST, "filter",
				"filter: unknown field '%.*s' (name, display_name, uid)",
				(int)(klen > 40 ? 40 : klen), k);
		if (*has)
			return sp_err_field(e, SP_BAD_REQUEST, "filter",
					    "filter: '%.*s' given twice", (int)klen, k);
		if (vlen >= cap)
			return sp_err_field(e, SP_BAD_REQUEST, "filter",
					    "filter: the value of '%.*s' is too long", (int)klen,
					    k);
		memcpy(dst, v, vlen);
		dst[vlen] = '\0';
		*has = 1;
		s += seg;
		if (*s == ',')
			s++;
	}
	return 0;
}

static int filter_match(const struct vol_filter *f, const struct sandbox_volume *v)
{
	char name[SANDBOX_ID_LEN + 16];

	snprintf(name, sizeof(name), "volumes/%s", v->id);
	return (!f->has_name || strcmp(f->name, name) == 0) &&
	       (!f->has_uid || strcmp(f->uid, v->id) == 0) &&
	       (!f->has_display_name || strcmp(f->display_name, v->display_name) == 0);
}

/* orderBy: created_at or name (name orders by the id), asc or desc;
 * "" = created_at desc (newest first, as the sandboxes). */
enum { BY_CREATED, BY_NAME };
static int order_parse(const char *s, int *by, int *desc, struct sp_err *e)
{
	char f[32] = "", d[16] = "";
	int n = 0;

	*by = BY_CREATED;
	*desc = 1;
	if (!s || !*s)
		return 0;
	if (strlen(s) < 64)
		n = sscanf(s, "%31s %15s", f, d);
	if (n < 1 || (strcmp(f, "created_at") != 0 && strcmp(f, "name") != 0) ||
	    (n == 2 && strcmp(d, "asc") != 0 && strcmp(d, "desc") != 0))
		return sp_err_field(e, SP_BAD_REQUEST, "orderBy",
				    "orderBy: a field (created_at, name) and an optional "
				    "direction (asc, desc)");
	*by = strcmp(f, "name") == 0 ? BY_NAME : BY_CREATED;
	*desc = n == 2 && strcmp(d, "desc") == 0;
	return 0;
}

struct vol_order {
	int by, desc;
};

static int cmp_key(const struct sandbox_volume *a, const struct sandbox_volume *b,
		   const struct vol_order *o)
{
	int c = 0;

	if (o->by == BY_CREATED)
		c = a->created_at < b->created_at ? -1 : a->created_at > b->created_at;
	if (c == 0)
		c = strcmp(a->id, b->id);
	return o->desc ? -c : c;
}

static int cmp_vol(const void *a, const void *b, void *o)
{
	return cmp_key(a, b, o);
}

/* The MAC of a page token over the org, the filter, the order and the
 * cursor (the last volume's createdAt and id). hex holds 65. */
static void token_mac(const struct config *cfg, const char *org, const char *filter,
		      const char *order, const char *cursor, char *hex)
{
	struct buf b;

	buf_init(&b, 8192);
	if (buf_printf(&b, "sandpit v1 listVolumes\n%s\n%s\n%s\n%s", org, filter, order, cursor) <
	    0)
		memset(hex, 0, 65);
	else
		crypto_key_hash(cfg->data_key, b.data, b.len, hex);
	buf_free(&b);
}

int v1_volumes_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *filter = hin_str(in, "filter", NULL), *order = hin_str(in, "orderBy", NULL),
		   *tok = hin_str(in, "pageToken", NULL);
	int64_t size = hin_i64(in, "pageSize", 0);
	struct sandbox_volume *all = NULL, after = { 0 };
	const struct sandbox_volume *last = NULL;
	struct vol_order ord;
	struct vol_filter f;
	char mac[65], next[160] = "";
	size_t n = 0, shown = 0;
	int has_after = 0, limit;
	json_object *arr, *o;

	filter = filter ? filter : "";
	order = order ? order : "";
	if (filter_parse(filter, &f, e) < 0 || order_parse(order, &ord.by, &ord.desc, e) < 0)
		return -1;
	if (tok && *tok) {
		/* <createdAt>.<id>.<mac> */
		long long at;
		const char *d1 = strchr(tok, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
		char num[24], cursor[64];
		unsigned diff = 0;
		if (!d1 || !d2 || d1 - tok >= (long)sizeof(num) || d2 - d1 - 1 != SANDBOX_ID_LEN ||
		    strlen(d2 + 1) != VOL_TOKEN_MAC)
			goto bad_token;
		snprintf(num, sizeof(num), "%.*s", (int)(d1 - tok), tok);
		snprintf(after.id, sizeof(after.id), "%.*s", SANDBOX_ID_LEN, d1 + 1);
		if (parse_ll(num, 0, 1LL << 62, &at) < 0 || !sandbox_id_ok(after.id))
			goto bad_token;
		after.created_at = at;
		snprintf(cursor, sizeof(cursor), "%lld.%s", at, after.id);
		token_mac(h->cfg, h->r->org, filter, order, cursor, mac);
		for (size_t i = 0; i < VOL_TOKEN_MAC; i++)
			diff |= (unsigned)(mac[i] ^ d2[1 + i]);
		if (diff)
			goto bad_token;
		has_after = 1;
	}
	limit = size <= 0 ? VOL_PAGE_DEFAULT : size > VOL_PAGE_MAX ? VOL_PAGE_MAX : (int)size;
	if (sandbox_volume_list(h->sb, h->r->org, &all, &n, e) < 0)
		return -1;
	if (n > 1)
		qsort_r(all, n, sizeof(*all), cmp_vol, &ord);
	arr = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		if (has_after && cmp_key(&all[i], &after, &ord) <= 0)
			continue;
		if (!filter_match(&f, &all[i]))
			continue;
		if ((int)shown == limit && last) {
			/* more follow: the token resumes after the last one shown */
			char cursor[64];
			snprintf(cursor, sizeof(cursor), "%lld.%s", (long long)last->created_at,
				 last->id);
			token_mac(h->cfg, h->r->org, filter, order, cursor, mac);
			snprintf(next, sizeof(next), "%s.%.*s", cursor, VOL_TOKEN_MAC, mac);
			break;
		}
		json_object_array_add(arr, volume_json(h->cfg, &all[i], NULL, 0));
		last = &all[i];
		shown++;
	}
	free(all);
	o = json_object_new_object();
	json_object_object_add(o, "volumes", arr);
	json_object_object_add(o, "nextPageToken", json_object_new_string(next));
	*out = o;
	return 0;
bad_token:
	return sp_err_field(e, SP_BAD_REQUEST, "pageToken",
			    "pageToken: not a token this list gave (with this filter and orderBy)");
}
