/*
 * sandbox_list: a page of an org's records in index order, after a cursor,
 * each caught up (by time; by Docker with one container listing per server
 * and page, skipped for a suspect server), and the catch-up of a whole org
 * (before a quota is found full).
 */
#include "internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/util.h"
#include "../docker/docker.h"

/* True when container id is among the running containers of a list answer. */
static int in_list(json_object *live, const char *id)
{
	for (size_t j = 0; live && j < json_object_array_length(live); j++) {
		json_object *cid;
		if (json_object_object_get_ex(json_object_array_get_idx(live, j), "Id", &cid) &&
		    strcmp(json_object_get_string(cid), id) == 0)
			return 1;
	}
	return 0;
}

/* Reads one record into *out with status catch-up: one container listing
 * per server (srv, asked once per page), skipped while the server is
 * suspect. 0 when the record reads as a sandbox. */
struct list_srv {
	char id[65];
	json_object *live; /* NULL: the server could not be asked */
};

static int list_item(struct sandbox_ctx *ctx, const struct store_rec *rec, struct list_srv *srv,
		     int *nsrv, int max_srv, const char *label, struct sandbox *out)
{
	struct sandbox *sb = out;
	int k;

	if (sandbox_from_rec(rec, sb) < 0)
		return -1;
	if (!sandbox_catch_up_time(ctx, sb) &&
	    (sb->status == SB_RUNNING || sb->status == SB_STOPPED || sb->status == SB_STOPPING)) {
		for (k = 0; k < *nsrv && strcmp(srv[k].id, sb->server_id) != 0; k++)
			;
		if (k == *nsrv && *nsrv < max_srv) {
			struct sp_err de;
			str_copy(srv[k].id, sizeof(srv[k].id), sb->server_id);
			srv[k].live = NULL;
			if (sandbox_select_server(ctx, sb->server_id, &de) == 0 &&
			    !docker_client_suspect(ctx->dk) &&
			    sandbox_docker_ready(ctx, &de) == 0 &&
			    (docker_client_next_timeout(ctx->dk, CATCH_UP_TIMEOUT_MS),
			     docker_container_list(ctx->dk, label, 0, &srv[k].live, &de) < 0))
				srv[k].live = NULL;
			(*nsrv)++;
		}
		if (k < *nsrv && srv[k].live && !in_list(srv[k].live, sb->container_id))
			sandbox_mark_gone(ctx, sb);
	}
	return 0;
}

/* A cursor is "<index score>.<id>" of the last index entry of a page. */
static int cursor_parse(const char *c, int64_t *score, char *id, size_t cap, struct sp_err *e)
{
	const char *dot = strchr(c, '.');
	long long n;
	char num[24];
	size_t len;

	if (!dot || dot == c || (size_t)(dot - c) >= sizeof(num))
		goto bad;
	memcpy(num, c, (size_t)(dot - c));
	num[dot - c] = '\0';
	len = strlen(dot + 1);
	if (parse_ll(num, 0, LLONG_MAX, &n) < 0 || len == 0 || len >= cap)
		goto bad;
	for (size_t i = 0; i < len; i++) {
		char ch = dot[1 + i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9')))
			goto bad;
	}
	*score = n;
	memcpy(id, dot + 1, len + 1);
	return 0;
bad:
	return sp_err_field(e, SP_BAD_REQUEST, "cursor", "cursor: not a cursor from a list answer");
}

void sandbox_page_free(struct sandbox_page *p)
{
	free(p->items);
	p->items = NULL;
	p->n = 0;
}

int sandbox_list(struct sandbox_ctx *ctx, const char *org, const struct sandbox_page_req *pg,
		 struct sandbox_page *out, struct sp_err *e)
{
	enum { MAX_SRV = 16 };
	int limit =
		pg && pg->limit > 0 && pg->limit < SB_LIST_PAGE_MAX ? pg->limit : SB_LIST_PAGE_MAX;
	struct store_rec *recs = calloc((size_t)limit + 1, sizeof(*recs));
	char **ids = calloc((size_t)limit + 1, sizeof(*ids));
	int64_t *scores = calloc((size_t)limit + 1, sizeof(*scores)), after = 0;
	struct list_srv srv[MAX_SRV];
	char label[192], after_id[65];
	int nids = 0, got = 0, nsrv = 0, rc = -1, n;

	memset(out, 0, sizeof(*out));
	out->items = calloc((size_t)limit, sizeof(*out->items));
	if (!recs || !ids || !scores || !out->items) {
		sp_err_set(e, SP_INTERNAL, "out of memory");
		goto out;
	}
	if (pg && pg->cursor && *pg->cursor &&
	    cursor_parse(pg->cursor, &after, after_id, sizeof(after_id), e) < 0)
		goto out;
	/* one more than the page: whether another page follows */
	if (store_sandbox_ids_page(ctx->st, org, after,
				   pg && pg->cursor && *pg->cursor ? after_id : NULL, limit + 1,
				   ids, scores, &got, e) < 0)
		goto out;
	nids = got;
	if (nids > limit) {
		snprintf(out->next_cursor, sizeof(out->next_cursor), "%lld.%s",
			 (long long)scores[limit - 1], ids[limit - 1]);
		nids = limit;
	}
	/* by the sandbox label, not the org's: a container from a warm pool was
	 * made before its org was known */
	config_label(ctx->cfg, "sandbox=true", label, sizeof(label));
	n = nids ? store_sandbox_get_many(ctx->st, org, ids, nids, recs, e) : 0;
	if (n < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		if (list_item(ctx, &recs[i], srv, &nsrv, MAX_SRV, label, &out->items[out->n]) == 0)
			out->n++;
		store_rec_free(&recs[i]);
	}
	rc = 0;
out:
	if (rc < 0)
		sandbox_page_free(out);
	free(recs);
	if (ids)
		store_ids_free_items(ids, got);
	free(ids);
	free(scores);
	for (int k = 0; k < nsrv; k++)
		json_object_put(srv[k].live);
	return rc;
}

/* Catches every record of org up (list pages read and dropped). */
void sandbox_catch_up_org(struct sandbox_ctx *ctx, const char *org)
{
	struct sandbox_page_req pg = { SB_LIST_PAGE_MAX, NULL };
	struct sandbox_page page;
	char cursor[sizeof(page.next_cursor)] = "";
	struct sp_err e;

	do {
		pg.cursor = cursor;
		if (sandbox_list(ctx, org, &pg, &page, &e) < 0)
			return;
		str_copy(cursor, sizeof(cursor), page.next_cursor);
		sandbox_page_free(&page);
	} while (cursor[0]);
}
