/*
 * The reaper: the workers, between requests, end what the containers'
 * own lifetime rules could not. A container enforces its deadline and its
 * inactivity expiry itself (spec.c, sh/main.sh: the keeper's sleep and watcher);
 * this is the defence in depth from outside, for the cases where that is
 * not enough: an image whose user is root (it can replace the sleep and
 * date the keeper runs), a watcher that could not fork, a worker killed
 * mid-create (L5), a record lost or deleted (L4). One worker at a time
 * sweeps (a Redis lock with a TTL of reaper_interval_s), every server in
 * turn, listing containers by label: it ends those past their deadline
 * label, those whose record is gone (a container is never adopted: its
 * record is looked up by the org and id of its own labels), killed,
 * failed, expired (a stopped sandbox at its deadline too: its frozen
 * keeper cannot end it), stuck creating, or pointing at another container;
 * it stops onTimeout-stop sandboxes past their expiry (pause.c); and
 * it releases quota shares whose container Docker no longer lists. A
 * container made in stop_mode discard (no AutoRemove) that exited while
 * its record runs is removed too; one of a stopped sandbox is kept. It
 * only ever touches containers labelled with its own installation's id
 * (<prefix>.install): installations sharing a dockerd, and containers of
 * versions before that label, are left alone.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"

/* How long past its deadline or expiry the reaper leaves a container to
 * its own watcher. */
#define REAP_GRACE_MS 2000
#define REAP_MAX_LIVE 4096

struct reap_state {
	char (*live)[SANDBOX_ID_LEN + 1]; /* ids with a container left running or created */
	int nlive;
	int all_listed;			 /* every server answered its listing */
	char listed[SB_MAX_SERVERS][65]; /* the servers that did ("" = local) */
	int nlisted;
};

static const char *label_of(json_object *labels, const struct config *cfg, const char *name)
{
	char k[160];
	json_object *v;

	snprintf(k, sizeof(k), "%s.%s", cfg->label_prefix, name);
	if (!labels || !json_object_object_get_ex(labels, k, &v))
		return NULL;
	return json_object_get_string(v);
}

static void add_live(struct reap_state *rs, const char *id)
{
	if (rs->nlive < REAP_MAX_LIVE)
		str_copy(rs->live[rs->nlive++], SANDBOX_ID_LEN + 1, id);
}

static int is_live(const struct reap_state *rs, const char *id)
{
	for (int i = 0; i < rs->nlive; i++)
		if (strcmp(rs->live[i], id) == 0)
			return 1;
	return 0;
}

static int was_listed(const struct reap_state *rs, const char *server)
{
	const char *s = server && strcmp(server, "local") != 0 ? server : "";

	for (int i = 0; i < rs->nlisted; i++)
		if (strcmp(rs->listed[i], s) == 0)
			return 1;
	return 0;
}

/* Why container c (of server) must end, or NULL when it may live. Loads
 * its record into sb (*have: 1 when there is one). */
static const char *verdict(struct sandbox_ctx *ctx, json_object *c, const char *id, const char *org,
			   struct sandbox *sb, int *have)
{
	const struct config *cfg = ctx->cfg;
	json_object *labels = NULL, *v;
	const char *dl = NULL;
	long long deadline = 0;
	int pooled;
	int64_t now = now_ms();
	struct store_rec r = { 0 };
	struct sp_err e;

	json_object_object_get_ex(c, "Labels", &labels);
	dl = label_of(labels, cfg, "deadlineAt");
	pooled = label_of(labels, cfg, "pool") != NULL;
	if (dl && parse_ll(dl, 0, 1LL << 62, &deadline) < 0)
		deadline = 0;
	*have = 0;
	if (org && store_sandbox_get(ctx->st, org, id, &r, &e) == 0) {
		*have = sandbox_from_rec(&r, sb) == 0;
		store_rec_free(&r);
	} else if (org && e.code != SP_NOT_FOUND) {
		return NULL; /* Redis cannot say: leave it */
	}
	/* a pooled container's label is its pool expiry; once claimed, its
	 * record's deadline counts */
	if (deadline && (!pooled || !*have) && now > deadline + REAP_GRACE_MS)
		return pooled ? "its pool expiry passed" : "its deadline passed";
	if (!*have) {
		if (pooled)
			return NULL; /* waiting in its pool */
		return "it has no record";
	}
	if (strcmp(sb->org, org) != 0)
		return "its record belongs to another organization";
	switch (sb->status) {
	case SB_KILLED:
	case SB_ERROR:
		return "its record is killed";
	case SB_CREATING:
		return now > sandbox_creating_end(cfg, sb) ? "its creation did not finish" : NULL;
	case SB_RUNNING:
	case SB_STOPPED: /* paused: its own keeper cannot end it, so this does */
	case SB_STOPPING:
		if (json_object_object_get_ex(c, "Id", &v) && sb->container_id[0] &&
		    strcmp(json_object_get_string(v), sb->container_id) != 0)
			return "its record points at another container";
		/* stopped: its expiry is disarmed; onTimeout stop: stopped at
		 * its expiry (sweep_server), ended at its deadline */
		if (now > (sb->status != SB_RUNNING || sb->timeout_stop
				   ? sb->deadline_at
				   : min64(sb->expires_at, sb->deadline_at)) +
				  REAP_GRACE_MS)
			return "it expired";
		/* discard mode: no AutoRemove, so a container that ended stays
		 * (exited) until removed here; a stopped sandbox's is kept */
		if (sb->discard && sb->status == SB_RUNNING &&
		    json_object_object_get_ex(c, "State", &v) &&
		    strcmp(json_object_get_string(v), "exited") == 0)
			return "its container exited";
		return NULL;
	}
	return NULL;
}

/* One server: ends what must end, notes the ids that stay. */
static void sweep_server(struct sandbox_ctx *ctx, const char *server, struct reap_state *rs)
{
	char label[160];
	json_object *all = NULL;
	struct sp_err e;

	/* a server that is not answering (RELIABILITY L2) is swept next time:
	 * the sweeper does not wait on it, and shares of its sandboxes stay */
	if (sandbox_select_server(ctx, server, &e) < 0 || !ctx->dk ||
	    docker_client_suspect(ctx->dk) || sandbox_docker_ready(ctx, &e) < 0) {
		rs->all_listed = 0;
		return;
	}
	/* only this installation's containers: another sandpit sharing the
	 * dockerd keeps its records in another Redis */
	snprintf(label, sizeof(label), "%s.install=%s", ctx->cfg->label_prefix, ctx->install_id);
	if (docker_container_list(ctx->dk, label, 1, &all, &e) < 0) {
		rs->all_listed = 0;
		return;
	}
	if (rs->nlisted < SB_MAX_SERVERS)
		str_copy(rs->listed[rs->nlisted++], 65, server);
	for (size_t i = 0; i < json_object_array_length(all); i++) {
		json_object *c = json_object_array_get_idx(all, i), *labels = NULL;
		struct sandbox sb;
		const char *id, *org, *why;
		char sid[SANDBOX_ID_LEN + 1], sorg[65];
		int have = 0, rc;

		json_object_object_get_ex(c, "Labels", &labels);
		id = label_of(labels, ctx->cfg, "sandboxId");
		org = label_of(labels, ctx->cfg, "organizationId");
		if (!id || strlen(id) != SANDBOX_ID_LEN)
			continue;
		str_copy(sid, sizeof(sid), id);
		str_copy(sorg, sizeof(sorg), org ? org : "");
		if (!sorg[0] && label_of(labels, ctx->cfg, "pool")) {
			/* a warm container: claimed (its org recorded) or still waiting */
			if (store_owner_get(ctx->st, sid, sorg, sizeof(sorg), &e) < 0) {
				add_live(rs, sid);
				continue;
			}
		}
		org = sorg[0] ? sorg : NULL;
		why = verdict(ctx, c, sid, org, &sb, &have);
		if (!why) {
			if (have && sb.timeout_stop)
				sandbox_stop_expired(ctx, &sb);
			add_live(rs, sid);
			continue;
		}
		/* verdict may have selected nothing else, but be sure */
		sandbox_select_server(ctx, server, &e);
		rc = sandbox_end_containers(ctx, sid, 0, &e);
		if (rc != 0) {
			log_warn("reaper: sandbox %s: %s, but its container did not end: %s", sid,
				 why, rc < 0 ? e.msg : "still running");
			add_live(rs, sid);
			continue;
		}
		log_warn("reaper: sandbox %s: %s; its container was ended", sid, why);
		if (have && (sb.status == SB_RUNNING || sb.status == SB_STOPPED ||
			     sb.status == SB_STOPPING)) {
			sandbox_transition(ctx, &sb, SB_KILLED, NULL, 1);
		} else if (have && sb.status == SB_CREATING) {
			char msg[128];
			snprintf(msg, sizeof(msg), "Creation did not finish within %d s",
				 ctx->cfg->create_timeout_s);
			sandbox_transition(ctx, &sb, SB_ERROR, msg, 1);
		} else if (sorg[0]) {
			store_release(ctx->st, sorg, sid, &e);
			store_server_release(ctx->st, server, sid, &e);
		}
	}
	json_object_put(all);
}

/* Releases quota shares whose sandbox has no container left and whose
 * record is ended or gone (a share without a record is left alone while
 * a create may still be writing it). */
static void release_shares(struct sandbox_ctx *ctx, struct reap_state *rs, char **servers,
			   int nservers)
{
	char **orgs = NULL;
	int norgs = 0;
	struct sp_err e;
	int64_t now = now_ms(),
		young = (int64_t)(2 * ctx->cfg->docker_timeout_s + ctx->cfg->create_timeout_s) *
			1000;

	if (store_org_list(ctx->st, &orgs, &norgs, &e) < 0)
		return;
	for (int o = 0; o < norgs; o++) {
		char **ids = NULL;
		int64_t *made = NULL;
		int n = 0;
		if (store_reservations(ctx->st, orgs[o], &ids, &made, &n, &e) == 0)
			for (int i = 0; i < n; i++) {
				struct store_rec r = { 0 };
				struct sandbox sb;
				int release = 0;
				if (is_live(rs, ids[i]))
					continue;
				if (store_sandbox_get(ctx->st, orgs[o], ids[i], &r, &e) == 0) {
					if (sandbox_from_rec(&r, &sb) == 0 &&
					    (sb.status == SB_KILLED || sb.status == SB_ERROR) &&
					    was_listed(rs, sb.server_id))
						release = 1;
					store_rec_free(&r);
					if (release)
						store_server_release(ctx->st, sb.server_id, ids[i],
								     &e);
				} else if (e.code == SP_NOT_FOUND && rs->all_listed && made[i] &&
					   now - made[i] > young) {
					release = 1;
					store_server_release(ctx->st, "", ids[i], &e);
					for (int k = 0; k < nservers; k++)
						store_server_release(ctx->st, servers[k], ids[i],
								     &e);
				}
				if (release) {
					log_info("reaper: sandbox %s: quota share released",
						 ids[i]);
					store_release(ctx->st, orgs[o], ids[i], &e);
				}
			}
		for (int i = 0; i < n; i++)
			free(ids[i]);
		free(ids);
		free(made);
	}
	for (int o = 0; o < norgs; o++)
		free(orgs[o]);
	free(orgs);
}

void sandbox_reap(struct sandbox_ctx *ctx)
{
	struct reap_state rs = { 0 };
	struct store_rec srv = { 0 };
	char *servers[SB_MAX_SERVERS];
	int nservers = 0;
	struct sp_err e;
	int64_t now = mono_ms();

	if (ctx->cfg->reaper_interval_s <= 0 || now - ctx->reap_checked_at < 1000)
		return;
	ctx->reap_checked_at = now;
	if (sandbox_install_id(ctx, &e) < 0 || !ctx->install_id[0] ||
	    store_lock(ctx->st, "reaper", (int64_t)ctx->cfg->reaper_interval_s * 1000, &e) != 1)
		return;
	rs.live = calloc(REAP_MAX_LIVE, sizeof(*rs.live));
	if (!rs.live)
		return;
	rs.all_listed = 1;
	if (store_server_list(ctx->st, &srv, &e) == 0)
		for (int i = 0; i < srv.n && nservers < SB_MAX_SERVERS - 1; i++)
			servers[nservers++] = srv.name[i];
	else
		rs.all_listed = 0;
	sweep_server(ctx, "", &rs);
	sandbox_volumes_sweep(ctx);
	for (int i = 0; i < nservers; i++)
		sweep_server(ctx, servers[i], &rs);
	if (rs.nlive < REAP_MAX_LIVE)
		release_shares(ctx, &rs, servers, nservers);
	store_rec_free(&srv);
	free(rs.live);
	sandbox_select_server(ctx, "", &e);
}

void sandbox_idle(struct sandbox_ctx *ctx)
{
	sandbox_pool_arm_pending(ctx);
	sandbox_flush_expiry(ctx);
	sandbox_snapshot_idle(ctx);
	sandbox_pool_maintain(ctx);
	sandbox_reap(ctx);
}
