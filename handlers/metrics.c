/*
 * GET /metrics: the Prometheus text exposition. Request and Docker call
 * counts and latencies come from the table the master shares with every
 * worker (common/metrics.c); sandboxes by status are counted from the
 * records in Redis, reading at most METRICS_SCAN_MAX of them per scrape so
 * a scrape stays cheap however many sandboxes there are. Warm pools: the
 * configured size, the containers ready and the claims of each; absent
 * without pools. Sandboxes are also counted per organization
 * (sandpit_org_sandboxes, at most METRICS_ORGS_MAX organizations). Every
 * sample carries sandpit_instance, the name of this instance's socket
 * (sandpitd, sandpitd-2, ...), so that instances behind one nginx never mix
 * in one series; nginx's /metrics/NAME reaches one instance by that name.
 * No key: nginx limits who may reach it by address.
 */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/metrics.h"
#include "../store/store.h"

#define METRICS_ORGS_MAX 256
#define METRICS_SCAN_MAX 5000
#define METRICS_BODY_MAX (4 * 1024 * 1024)

/* Counts records per status over the orgs' indexes, up to the bound, and
 * appends one sandpit_org_sandboxes line per org and status to per_org;
 * *truncated says the bound was hit. -1 on a store error or past per_org's
 * cap. */
static int count_sandboxes(struct store *st, int64_t counts[SB_STATUS_COUNT], struct buf *per_org,
			   int *truncated, struct sp_err *e)
{
	char **orgs = NULL;
	int norgs = 0, left = METRICS_SCAN_MAX, rc = -1;
	struct store_rec *recs = NULL;

	*truncated = 0;
	if (store_org_list(st, &orgs, &norgs, e) < 0)
		return -1;
	recs = calloc((size_t)METRICS_SCAN_MAX + 1, sizeof(*recs));
	if (!recs) {
		sp_err_set(e, SP_INTERNAL, "out of memory");
		goto out;
	}
	if (norgs > METRICS_ORGS_MAX)
		*truncated = 1;
	for (int i = 0; i < norgs && i < METRICS_ORGS_MAX && left > 0; i++) {
		/* one more than allowed tells a full index from a truncated one */
		int64_t mine[SB_STATUS_COUNT] = { 0 };
		int n = store_sandbox_list(st, orgs[i], recs, left + 1, e);
		if (n < 0)
			goto out;
		if (n > left) {
			*truncated = 1;
			store_rec_free(&recs[left]);
			n = left;
		}
		for (int k = 0; k < n; k++) {
			const char *s = store_rec_get(&recs[k], "status");
			for (int j = 0; s && j < SB_STATUS_COUNT; j++)
				if (strcmp(s, sandbox_status_name((enum sandbox_status)j)) == 0) {
					counts[j]++;
					mine[j]++;
				}
			store_rec_free(&recs[k]);
		}
		/* org names are [a-z0-9_-] (store/), safe as label values */
		for (int j = 0; n > 0 && j < SB_STATUS_COUNT; j++)
			if (buf_printf(per_org,
				       "sandpit_org_sandboxes{org=\"%s\",status=\"%s\"} %lld\n",
				       orgs[i], sandbox_status_name((enum sandbox_status)j),
				       (long long)mine[j]) < 0) {
				sp_err_set(e, SP_INTERNAL, "metrics exceed %d bytes",
					   METRICS_BODY_MAX);
				goto out;
			}
		left -= n;
	}
	if (left <= 0)
		*truncated = 1;
	rc = 0;
out:
	free(recs);
	for (int i = 0; i < norgs; i++)
		free(orgs[i]);
	free(orgs);
	return rc;
}

int h_metrics(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct req *r = h->r;
	struct buf body, per_org, labeled;
	int64_t counts[SB_STATUS_COUNT] = { 0 };
	int truncated = 0, store_ok;
	char head[256], inst[128];
	int rc = -1;

	(void)in;
	(void)out;
	buf_init(&body, METRICS_BODY_MAX);
	buf_init(&per_org, METRICS_BODY_MAX);
	buf_init(&labeled, METRICS_BODY_MAX + METRICS_BODY_MAX / 2);
	store_ok = count_sandboxes(h->sb->st, counts, &per_org, &truncated, e) == 0;
	if (metrics_render(&body) < 0)
		goto too_big;
	if (buf_puts(&body, "# HELP sandpit_sandboxes Sandbox records by status (all "
			    "organizations).\n# TYPE sandpit_sandboxes gauge\n") < 0)
		goto too_big;
	for (int j = 0; store_ok && j < SB_STATUS_COUNT; j++)
		if (buf_printf(&body, "sandpit_sandboxes{status=\"%s\"} %lld\n",
			       sandbox_status_name((enum sandbox_status)j),
			       (long long)counts[j]) < 0)
			goto too_big;
	if (store_ok && per_org.len &&
	    (buf_puts(&body, "# HELP sandpit_org_sandboxes Sandbox records by organization and "
			     "status.\n# TYPE sandpit_org_sandboxes gauge\n") < 0 ||
	     buf_append(&body, per_org.data, per_org.len) < 0))
		goto too_big;
	if (buf_printf(&body,
		       "# HELP sandpit_sandboxes_scan_truncated 1 when the count stopped at %d "
		       "records.\n# TYPE sandpit_sandboxes_scan_truncated gauge\n"
		       "sandpit_sandboxes_scan_truncated %d\n"
		       "# HELP sandpit_store_up 1 when Redis answered this scrape.\n"
		       "# TYPE sandpit_store_up gauge\nsandpit_store_up %d\n",
		       METRICS_SCAN_MAX, truncated, store_ok) < 0)
		goto too_big;
	/* The configured warm pools: their size, the containers ready, claims. */
	if (h->cfg->npools > 0 &&
	    buf_puts(&body, "# HELP sandpit_pool_target Warm containers a pool keeps ready.\n"
			    "# TYPE sandpit_pool_target gauge\n"
			    "# HELP sandpit_pool_ready Warm containers ready now.\n"
			    "# TYPE sandpit_pool_ready gauge\n"
			    "# HELP sandpit_pool_claims_total Containers claimed from a pool.\n"
			    "# TYPE sandpit_pool_claims_total counter\n") < 0)
		goto too_big;
	for (int i = 0; i < h->cfg->npools; i++) {
		const struct pool_conf *p = &h->cfg->pools[i];
		int ready = 0;
		long long claims = 0;
		if (buf_printf(&body, "sandpit_pool_target{template=\"%s\",network=\"%s\"} %d\n",
			       p->template_name, p->network, p->size) < 0)
			goto too_big;
		if (sandbox_pool_stats(h->sb, i, &ready, &claims) == 0 &&
		    buf_printf(&body,
			       "sandpit_pool_ready{template=\"%s\",network=\"%s\"} %d\n"
			       "sandpit_pool_claims_total{template=\"%s\",network=\"%s\"} %lld\n",
			       p->template_name, p->network, ready, p->template_name, p->network,
			       claims) < 0)
			goto too_big;
	}
	metrics_instance_name(h->cfg->listen, inst, sizeof(inst));
	if (metrics_add_label(body.data ? body.data : "", body.len, "sandpit_instance", inst,
			      &labeled) < 0)
		goto too_big;
	snprintf(head, sizeof(head),
		 "Status: 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
		 "Content-Length: %zu\r\nCache-Control: no-store\r\n\r\n",
		 labeled.len);
	r->status = 200;
	FCGX_PutStr(head, (int)strlen(head), r->fx->out);
	FCGX_PutStr(labeled.data ? labeled.data : "", (int)labeled.len, r->fx->out);
	sp_err_clear(e);
	rc = 0;
	goto done;
too_big:
	sp_err_set(e, SP_INTERNAL, "metrics exceed %d bytes", METRICS_BODY_MAX);
done:
	buf_free(&body);
	buf_free(&per_org);
	buf_free(&labeled);
	return rc;
}
