/*
 * The Dokploy sandbox procedures: create, one, list, templates, setTimeout,
 * kill, remove. Input is already validated against the route table; this
 * file maps it onto the sandbox core and never touches Docker or Redis.
 */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/util.h"

int h_sandbox_create(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox_create_req rq = { 0 };
	struct sandbox_timing tm = { 0 };
	struct sandbox sb;
	int n;

	rq.template_name = hin_str(in, "template", NULL);
	rq.image = hin_str(in, "image", NULL);
	rq.name = hin_str(in, "name", NULL);
	rq.server_id = hin_str(in, "serverId", NULL);
	rq.cpu = hin_dbl(in, "cpu", -1);
	rq.memory_mb = hin_i64(in, "memoryMb", -1);
	rq.pids_limit = hin_i64(in, "pidsLimit", -1);
	rq.disk_mb = hin_i64(in, "diskMb", -1);
	rq.timeout_ms = hin_i64(in, "timeoutMs", -1);
	rq.max_lifetime_ms = hin_i64(in, "maxLifetimeMs", -1);
	rq.network_mode = hin_str(in, "networkMode", NULL);
	rq.env_vars = hin_str(in, "envVars", &rq.env_vars_len);
	rq.workdir = hin_str(in, "workdir", NULL);
	rq.runtime = hin_str(in, "runtime", NULL);
	rq.created_by = h->r->key_id;
	rq.timing = &tm;
	if (sandbox_create(h->sb, h->r->org, &rq, &sb, e) < 0)
		return -1;
	/* where the time went, for clients and browsers' dev tools (about 150
	 * bytes of r->headers' 512; a cut header would be malformed, so none) */
	n = snprintf(h->r->headers, sizeof(h->r->headers),
		     "Server-Timing: %s;dur=%.1f, create;dur=%.1f, start;dur=%.1f, ready;dur=%.1f, "
		     "place;dur=%.1f, disk;dur=%.1f\r\n",
		     tm.pooled	 ? "pool"
		     : tm.pulled ? "pull"
				 : "image",
		     tm.image_us / 1000.0, tm.create_us / 1000.0, tm.start_us / 1000.0,
		     tm.ready_us / 1000.0, tm.place_us / 1000.0, tm.disk_us / 1000.0);
	if (n < 0 || (size_t)n >= sizeof(h->r->headers))
		h->r->headers[0] = '\0';
	*out = dk_sandbox_json(&sb);
	return 0;
}

int h_sandbox_one(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox sb;

	if (sandbox_get(h->sb, h->r->org, hin_str(in, "sandboxId", NULL), &sb, e) < 0)
		return -1;
	*out = dk_sandbox_json(&sb);
	return 0;
}

/* Dokploy's list has no pages: every record of the org, read from the
 * core a page at a time. */
int h_sandbox_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox_page_req pg = { SB_LIST_PAGE_MAX, NULL };
	struct sandbox_page page;
	char cursor[sizeof(page.next_cursor)] = "";
	json_object *arr = json_object_new_array();

	(void)in;
	do {
		pg.cursor = cursor;
		if (sandbox_list(h->sb, h->r->org, &pg, &page, e) < 0) {
			json_object_put(arr);
			return -1;
		}
		for (size_t i = 0; i < page.n; i++)
			json_object_array_add(arr, dk_sandbox_json(&page.items[i]));
		str_copy(cursor, sizeof(cursor), page.next_cursor);
		sandbox_page_free(&page);
	} while (cursor[0]);
	*out = arr;
	return 0;
}

int h_sandbox_templates(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox_template *t = NULL;
	size_t n = 0;

	(void)in;
	if (sandbox_templates(h->sb, &t, &n, e) < 0)
		return -1;
	*out = dk_templates_json(t, n);
	free(t);
	return 0;
}

int h_sandbox_set_timeout(struct handler_ctx *h, json_object *in, json_object **out,
			  struct sp_err *e)
{
	struct sandbox sb;

	if (sandbox_set_timeout(h->sb, h->r->org, hin_str(in, "sandboxId", NULL),
				hin_i64(in, "timeoutMs", 0), &sb, e) < 0)
		return -1;
	*out = dk_sandbox_json(&sb);
	return 0;
}

int h_sandbox_kill(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox sb;

	if (sandbox_kill(h->sb, h->r->org, hin_str(in, "sandboxId", NULL), &sb, e) < 0)
		return -1;
	*out = dk_sandbox_json(&sb);
	return 0;
}

int h_sandbox_remove(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *id = hin_str(in, "sandboxId", NULL);

	if (sandbox_remove(h->sb, h->r->org, id, e) < 0)
		return -1;
	*out = json_object_new_boolean(1); /* Dokploy's answer: true */
	return 0;
}
