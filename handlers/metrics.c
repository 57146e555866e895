/*
 * GET /metrics: the Prometheus text exposition. Request and Docker call
 * counts and latencies come from the table the master shares with every
 * worker (common/metrics.c); sandboxes by status are counted from the
 * records in Redis, reading at most METRICS_SCAN_MAX of them per scrape so
 * a scrape stays cheap however many sandboxes there are. Warm pools: the
 * configured size, the containers ready and the claims of each; absent
 * without pools. No key: nginx limits who may reach
 * it by address.
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

/* Counts records per status over the orgs' indexes, up to the bound;
 * *truncated says the bound was hit. -1 on a store error. */
static int count_sandboxes(struct store *st, int64_t counts[4], int *truncated, struct sp_err *e)
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
			for (int j = 0; s && j < 4; j++)
				if (strcmp(s, sandbox_status_name((enum sandbox_status)j)) == 0)
					counts[j]++;
			store_rec_free(&recs[k]);
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
	struct buf body;
	int64_t counts[4] = { 0 };
	int truncated = 0, store_ok;
	char head[256];
	int rc = -1;

	(void)in;
	(void)out;
	buf_init(&body, METRICS_BODY_MAX);
	store_ok = count_sandboxes(h->sb->st, counts, &truncated, e) == 0;
	if (metrics_render(&body) < 0)
		goto too_big;
	if (buf_puts(&body, "# HELP sandpit_sandboxes Sandbox records by status (all "
			    "organizations).\n# TYPE sandpit_sandboxes gauge\n") < 0)
		goto too_big;
	for (int j = 0; store_ok && j < 4; j++)
		if (buf_printf(&body, "sandpit_sandboxes{status=\"%s\"} %lld\n",
			       sandbox_status_name((enum sandbox_status)j), (long long)counts[j]) < 0)
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
	snprintf(head, sizeof(head),
		 "Status: 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
		 "Content-Length: %zu\r\nCache-Control: no-store\r\n\r\n",
		 body.len);
	r->status = 200;
	FCGX_PutStr(head, (int)strlen(head), r->fx->out);
	FCGX_PutStr(body.data ? body.data : "", (int)body.len, r->fx->out);
	sp_err_clear(e);
	rc = 0;
	goto done;
too_big:
	sp_err_set(e, SP_INTERNAL, "metrics exceed %d bytes", METRICS_BODY_MAX);
done:
	buf_free(&body);
	return rc;
}
