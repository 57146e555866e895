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

#include "../common/util.h"

#define VOL_PAGE_DEFAULT 50
#define VOL_PAGE_MAX 256

static json_object *volume_json(const struct config *cfg, const struct sandbox_volume *v,
				char *etag, size_t cap)
{
	json_object *o = json_object_new_object();
	char name[SANDBOX_ID_LEN + 16], tag[V1_ETAG_MAX];

	snprintf(name, sizeof(name), "volumes/%s", v->id);
	json_object_object_add(o, "uid", json_object_new_string(v->id));
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "createdAt", v1_time_json(v->created_at));
	json_object_object_add(o, "displayName", json_object_new_string(v->display_name));
	v1_add_etag(cfg, "volume", o, tag);
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
	char tag[V1_ETAG_MAX];

	*out = NULL;
	if (sandbox_volume_get(h->sb, h->r->org, id, &v, e) < 0) {
		if (e->code != SP_NOT_FOUND)
			return -1;
		sp_err_clear(e);
		return 0;
	}
	json_object_put(volume_json(h->cfg, &v, tag, sizeof(tag)));
	if (v1_if_match(want, tag, "volume", e) < 0)
		return -1;
	return sandbox_volume_delete(h->sb, h->r->org, id, e);
}

/* --- list ------------------------------------------------------------------ */

enum { F_NAME, F_DISPLAY_NAME, F_UID };
static const char *const filter_fields[] = { "name", "display_name", "uid", NULL };

static int filter_match(const struct v1_filter *f, const struct sandbox_volume *v)
{
	char name[SANDBOX_ID_LEN + 16];

	snprintf(name, sizeof(name), "volumes/%s", v->id);
	return v1_filter_is(f, F_NAME, name) && v1_filter_is(f, F_UID, v->id) &&
	       v1_filter_is(f, F_DISPLAY_NAME, v->display_name);
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

int v1_volumes_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *filter = hin_str(in, "filter", NULL), *order = hin_str(in, "orderBy", NULL);
	struct sandbox_volume *all = NULL, after = { 0 };
	const struct sandbox_volume *last = NULL;
	struct vol_order ord;
	struct v1_filter f;
	char cursor[V1_PAGE_CURSOR_MAX + 1], next[V1_PAGE_TOKEN_MAX + 1] = "", scope[1200];
	size_t n = 0, shown = 0, limit = v1_page_size(in, VOL_PAGE_DEFAULT, VOL_PAGE_MAX);
	json_object *arr, *o;

	filter = filter ? filter : "";
	order = order ? order : "";
	if (v1_filter_parse(filter, filter_fields, &f, e) < 0 ||
	    order_parse(order, &ord.by, &ord.desc, e) < 0)
		return -1;
	snprintf(scope, sizeof(scope), "%s\n%s", filter, order);
	if (v1_page_cursor(h, in, "listVolumes", scope, cursor, sizeof(cursor), e) < 0)
		return -1;
	if (cursor[0]) {
		/* <createdAt>.<id>, as this list made it */
		long long at;
		const char *d = strchr(cursor, '.');
		char num[24];
		if (!d || d - cursor >= (long)sizeof(num) || strlen(d + 1) != SANDBOX_ID_LEN)
			goto bad_token;
		snprintf(num, sizeof(num), "%.*s", (int)(d - cursor), cursor);
		snprintf(after.id, sizeof(after.id), "%s", d + 1);
		if (parse_ll(num, 0, 1LL << 62, &at) < 0 || !sandbox_id_ok(after.id))
			goto bad_token;
		after.created_at = at;
	}
	if (sandbox_volume_list(h->sb, h->r->org, &all, &n, e) < 0)
		return -1;
	if (n > 1)
		qsort_r(all, n, sizeof(*all), cmp_vol, &ord);
	arr = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		if (cursor[0] && cmp_key(&all[i], &after, &ord) <= 0)
			continue;
		if (!filter_match(&f, &all[i]))
			continue;
		if (shown == limit && last) {
			/* more follow: the token resumes after the last one shown */
			snprintf(cursor, sizeof(cursor), "%lld.%s", (long long)last->created_at,
				 last->id);
			v1_page_token(h, "listVolumes", scope, cursor, next, sizeof(next));
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
			    "pageToken: not a nextPageToken of this list");
}
