/*
 * Docker servers: the registry (records in Redis, as JSON), which
 * organizations may use each one, per-worker connections to them kept open
 * across requests, and placement of new sandboxes on the least-loaded
 * allowed server of the configured pool. The local server ("local", the
 * configuration's docker_host) always exists and every organization may
 * use it.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"

#define SERVER_RECHECK_MS 30000

static void jstr(json_object *o, const char *k, char *out, size_t cap)
{
	json_object *v;

	out[0] = '\0';
	if (json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string))
		str_copy(out, cap, json_object_get_string(v));
}

int server_from_json(const char *text, struct sandbox_server *s, struct sp_err *e)
{
	json_object *o = json_tokener_parse(text), *v;

	memset(s, 0, sizeof(*s));
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return sp_err_set(e, SP_INTERNAL, "Server record is damaged");
	}
	jstr(o, "id", s->id, sizeof(s->id));
	jstr(o, "name", s->name, sizeof(s->name));
	jstr(o, "endpoint", s->endpoint, sizeof(s->endpoint));
	jstr(o, "tlsCert", s->tls_cert, sizeof(s->tls_cert));
	jstr(o, "tlsKey", s->tls_key, sizeof(s->tls_key));
	jstr(o, "tlsCa", s->tls_ca, sizeof(s->tls_ca));
	jstr(o, "sshKey", s->ssh_key, sizeof(s->ssh_key));
	jstr(o, "sshKnownHosts", s->ssh_known_hosts, sizeof(s->ssh_known_hosts));
	jstr(o, "pool", s->pool, sizeof(s->pool));
	jstr(o, "orgs", s->orgs, sizeof(s->orgs));
	s->pooled = !(json_object_object_get_ex(o, "pooled", &v) && !json_object_get_boolean(v));
	s->allow_unfiltered =
		json_object_object_get_ex(o, "allowUnfiltered", &v) && json_object_get_boolean(v);
	jstr(o, "netCheck", s->net_check, sizeof(s->net_check));
	jstr(o, "netCheckDetail", s->net_check_detail, sizeof(s->net_check_detail));
	if (json_object_object_get_ex(o, "netCheckAt", &v))
		s->net_check_at = json_object_get_int64(v);
	if (json_object_object_get_ex(o, "maxLifetimeMs", &v))
		s->max_lifetime_ms = json_object_get_int64(v);
	json_object_put(o);
	return 0;
}

json_object *sandbox_server_json(const struct sandbox_server *s)
{
	json_object *o = json_object_new_object();

#define PUT(k, f)                                                                   \
	do {                                                                        \
		if (s->f[0])                                                        \
			json_object_object_add(o, k, json_object_new_string(s->f)); \
	} while (0)
	PUT("id", id);
	PUT("name", name);
	PUT("endpoint", endpoint);
	PUT("tlsCert", tls_cert);
	PUT("tlsKey", tls_key);
	PUT("tlsCa", tls_ca);
	PUT("sshKey", ssh_key);
	PUT("sshKnownHosts", ssh_known_hosts);
	PUT("pool", pool);
	PUT("orgs", orgs);
	PUT("netCheck", net_check);
	PUT("netCheckDetail", net_check_detail);
#undef PUT
	json_object_object_add(o, "pooled", json_object_new_boolean(s->pooled));
	json_object_object_add(o, "allowUnfiltered", json_object_new_boolean(s->allow_unfiltered));
	if (s->net_check_at)
		json_object_object_add(o, "netCheckAt", json_object_new_int64(s->net_check_at));
	if (s->max_lifetime_ms > 0)
		json_object_object_add(o, "maxLifetimeMs",
				       json_object_new_int64(s->max_lifetime_ms));
	return o;
}

int server_usable(const struct sandbox_server *s)
{
	return s->allow_unfiltered || strcmp(s->net_check, "pass") == 0;
}

int server_allows(const struct sandbox_server *s, const char *org)
{
	size_t n = strlen(org);

	for (const char *p = s->orgs; *p;) {
		size_t seg = strcspn(p, ",");
		if ((seg == 1 && *p == '*') || (seg == n && memcmp(p, org, n) == 0))
			return 1;
		p += seg;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* A new client for a server record. */
static struct docker_client *server_client(const struct config *cfg, const struct sandbox_server *s,
					   struct sp_err *e)
{
	struct docker_endpoint ep = { 0 };
	struct docker_client *dk;
	char ctl[1024];

	snprintf(ctl, sizeof(ctl), "%s", cfg->ssh_control_dir);
	ep.url = s->endpoint;
	ep.tls_cert = s->tls_cert;
	ep.tls_key = s->tls_key;
	ep.tls_ca = s->tls_ca;
	ep.ssh_key = s->ssh_key;
	ep.ssh_known_hosts = s->ssh_known_hosts;
	ep.ssh_control_dir = ctl;
	ep.pooled = s->pooled;
	ep.connect_timeout_ms = cfg->server_connect_timeout_ms;
	dk = docker_client_create_ex(&ep, cfg->docker_timeout_s, e);
	if (dk)
		sandbox_docker_guard(cfg, dk);
	return dk;
}

void sandbox_docker_guard(const struct config *cfg, struct docker_client *dk)
{
	int cap = cfg->docker_inflight_max;

	if (cap <= 0)
		cap = cfg->workers_max / 4 > 2 ? cfg->workers_max / 4 : 2;
	docker_client_set_guard(dk, cap, cfg->docker_stuck_ms);
}

/* Finds or opens the worker's connection to server id ("" = local).
 * Re-reads the record every SERVER_RECHECK_MS so a changed endpoint is
 * followed and a removed server stops being used. */
static struct server_conn *conn_for(struct sandbox_ctx *ctx, const char *id, struct sp_err *e)
{
	struct server_conn *c = NULL;
	struct sandbox_server s;
	char *json = NULL;
	int64_t now = mono_ms();

	if (!id || !*id || strcmp(id, "local") == 0)
		return &ctx->conns[0];
	for (int i = 1; i < ctx->nconns; i++)
		if (strcmp(ctx->conns[i].id, id) == 0)
			c = &ctx->conns[i];
	if (c && now - c->checked_at < SERVER_RECHECK_MS)
		return c;
	if (store_server_get(ctx->st, id, &json, e) < 0) {
		if (e->code == SP_NOT_FOUND)
			sp_err_set(e, SP_UNAVAILABLE, "Server %s is not registered", id);
		return NULL;
	}
	if (c && strcmp(c->record, json) == 0) {
		c->checked_at = now;
		free(json);
		return c;
	}
	if (server_from_json(json, &s, e) < 0) {
		free(json);
		return NULL;
	}
	if (!c) {
		if (ctx->nconns >= SB_MAX_SERVERS) {
			/* drop the oldest remote connection */
			docker_client_free(ctx->conns[1].dk);
			free(ctx->conns[1].record);
			memmove(&ctx->conns[1], &ctx->conns[2],
				sizeof(ctx->conns[0]) * (size_t)(ctx->nconns - 2));
			ctx->nconns--;
		}
		c = &ctx->conns[ctx->nconns++];
		memset(c, 0, sizeof(*c));
	} else {
		docker_client_free(c->dk);
		free(c->record);
		memset(c, 0, sizeof(*c));
	}
	str_copy(c->id, sizeof(c->id), id);
	c->record = json;
	c->checked_at = now;
	c->dk = server_client(ctx->cfg, &s, e);
	if (!c->dk) {
		free(c->record);
		ctx->nconns--;
		return NULL;
	}
	{
		char label[96];
		snprintf(label, sizeof(label), "Server %s is unavailable", id);
		docker_client_set_label(c->dk, label);
	}
	return c;
}

int sandbox_select_server(struct sandbox_ctx *ctx, const char *id, struct sp_err *e)
{
	struct server_conn *c = conn_for(ctx, id, e);

	ctx->cur = c;
	ctx->dk = c ? c->dk : NULL;
	return c ? 0 : -1;
}

void sandbox_servers_cleanup(struct sandbox_ctx *ctx)
{
	for (int i = 1; i < ctx->nconns; i++) {
		docker_client_free(ctx->conns[i].dk);
		free(ctx->conns[i].record);
	}
	ctx->nconns = 1;
}

static int load_server(struct store *st, const char *id, struct sandbox_server *s, struct sp_err *e)
{
	char *json = NULL;
	int rc;

	if (store_server_get(st, id, &json, e) < 0)
		return -1;
	rc = server_from_json(json, s, e);
	free(json);
	return rc;
}

/* The port of a server's Docker endpoint, tried by the probe on its
 * bridge gateway: tcp://host:PORT, ssh://user@host[:PORT] (default 22). */
static void endpoint_port(const char *url, char *out, size_t cap)
{
	const char *p = NULL, *host;

	out[0] = '\0';
	if (strncmp(url, "tcp://", 6) == 0)
		host = url + 6;
	else if (strncmp(url, "ssh://", 6) == 0)
		host = url + 6;
	else
		return;
	if (strchr(host, '@'))
		host = strchr(host, '@') + 1;
	if (host[0] == '[' && strchr(host, ']'))
		host = strchr(host, ']');
	p = strchr(host, ':');
	if (p) {
		size_t n = strspn(p + 1, "0123456789");
		if (n > 0 && n < 6)
			snprintf(out, cap, "%.*s", (int)n, p + 1);
	} else if (strncmp(url, "ssh://", 6) == 0) {
		str_copy(out, cap, "22");
	}
}

int sandbox_server_check(struct sandbox_ctx *ctx, const char *id, struct sp_err *e)
{
	struct sandbox_server s;
	char status[16], detail[512], port[8];
	json_object *o;
	int rc;

	if (load_server(ctx->st, id, &s, e) < 0)
		return -1;
	endpoint_port(s.endpoint, port, sizeof(port));
	if (sandbox_select_server(ctx, id, e) < 0) {
		str_copy(status, sizeof(status), "error");
		str_copy(detail, sizeof(detail), e->msg);
	} else {
		sandbox_net_probe(ctx, port, status, sizeof(status), detail, sizeof(detail));
	}
	log_info("server %s: network check %s%s%s", id, status, detail[0] ? ": " : "", detail);
	/* the record as it is now, with the result */
	if (load_server(ctx->st, id, &s, e) < 0)
		return -1;
	str_copy(s.net_check, sizeof(s.net_check), status);
	str_copy(s.net_check_detail, sizeof(s.net_check_detail), detail);
	s.net_check_at = now_ms();
	o = sandbox_server_json(&s);
	rc = store_server_put(ctx->st, s.id,
			      json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), e);
	json_object_put(o);
	return rc;
}

/* A server never checked is checked now (once: the result is stored), and
 * so is one whose check could not run (unreachable when it was added), at
 * most every NET_RECHECK_MS. */
#define NET_RECHECK_MS 60000
static int check_if_new(struct sandbox_ctx *ctx, const char *id, struct sandbox_server *s,
			struct sp_err *e)
{
	if (s->allow_unfiltered)
		return 0;
	if (s->net_check[0] &&
	    !(strcmp(s->net_check, "error") == 0 && now_ms() - s->net_check_at > NET_RECHECK_MS))
		return 0;
	if (sandbox_server_check(ctx, id, e) < 0)
		return -1;
	return load_server(ctx->st, id, s, e);
}

int sandbox_place(struct sandbox_ctx *ctx, const char *org, struct sandbox *sb,
		  const char *requested, struct sp_err *e)
{
	const char *cand[64];
	char ids[64][65];
	struct store_rec all = { 0 };
	int n = 0, rc = -1, unchecked = 0;

	if (requested && *requested && strcmp(requested, "local") != 0) {
		char *json = NULL;
		struct sandbox_server s;
		if (store_server_get(ctx->st, requested, &json, e) < 0) {
			if (e->code == SP_NOT_FOUND)
				sp_err_field(e, SP_NOT_FOUND, "serverId", "Server %s not found",
					     requested);
			return -1;
		}
		rc = server_from_json(json, &s, e);
		free(json);
		if (rc < 0)
			return -1;
		if (!server_allows(&s, org))
			return sp_err_field(e, SP_FORBIDDEN, "serverId",
					    "Your organization may not use server %s", requested);
		if (check_if_new(ctx, requested, &s, e) < 0)
			return -1;
		/* a check that could not run (the server did not answer, its
		 * certificate or host key was refused) says nothing of its
		 * network: that server is unavailable, and retryable */
		if (!server_usable(&s) && strcmp(s.net_check, "error") == 0)
			return sp_err_set(
				e, SP_UNAVAILABLE, "Server %s cannot be used now: %s", requested,
				s.net_check_detail[0] ? s.net_check_detail
						      : "its network check could not run");
		if (!server_usable(&s))
			return sp_err_field(
				e, SP_CONFLICT, "serverId",
				"Server %s failed its network check (%s%s%s): its "
				"sandboxes could reach its host or the metadata address. "
				"An operator must add the deny rules and run `sandpit "
				"servers check %s`, or accept it with --allow-unfiltered",
				requested, s.net_check[0] ? s.net_check : "not checked",
				s.net_check_detail[0] ? ": " : "", s.net_check_detail, requested);
		str_copy(sb->server_id, sizeof(sb->server_id), requested);
		return store_place(ctx->st, (const char *const[]){ requested }, 1, sb->id,
				   sb->deadline_at, (int64_t)(sb->cpu * 1000 + 0.5), sb->memory_mb,
				   sb->server_id, sizeof(sb->server_id), e);
	}
	if (!ctx->cfg->placement_pool[0] || (requested && strcmp(requested, "local") == 0)) {
		sb->server_id[0] = '\0';
		return store_place(ctx->st, (const char *const[]){ "local" }, 1, sb->id,
				   sb->deadline_at, (int64_t)(sb->cpu * 1000 + 0.5), sb->memory_mb,
				   ids[0], sizeof(ids[0]), e);
	}
	if (store_server_list(ctx->st, &all, e) < 0)
		return -1;
	for (int i = 0; i < all.n && n < 64; i++) {
		struct sandbox_server s;
		struct sp_err ignore;
		if (server_from_json(all.value[i], &s, &ignore) < 0 ||
		    strcmp(s.pool, ctx->cfg->placement_pool) != 0 || !server_allows(&s, org))
			continue;
		if (check_if_new(ctx, all.name[i], &s, &ignore) < 0 || !server_usable(&s)) {
			unchecked++;
			continue;
		}
		str_copy(ids[n], sizeof(ids[n]), all.name[i]);
		cand[n] = ids[n];
		n++;
	}
	store_rec_free(&all);
	if (n == 0 && unchecked)
		return sp_err_set(e, SP_UNAVAILABLE,
				  "No server of pool %s passed its network check (%d failed; see "
				  "`sandpit servers list`)",
				  ctx->cfg->placement_pool, unchecked);
	if (n == 0)
		return sp_err_set(e, SP_UNAVAILABLE,
				  "No server of pool %s is open to your organization",
				  ctx->cfg->placement_pool);
	if (store_place(ctx->st, cand, n, sb->id, sb->deadline_at, (int64_t)(sb->cpu * 1000 + 0.5),
			sb->memory_mb, sb->server_id, sizeof(sb->server_id), e) < 0)
		return -1;
	log_info("sandbox %s placed on %s (pool %s, %d candidates)", sb->id, sb->server_id,
		 ctx->cfg->placement_pool, n);
	return 0;
}

static int valid_server_id(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64 || strcmp(s, "local") == 0 || s[0] == '-' || s[0] == '_')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      s[i] == '_'))
			return 0;
	return 1;
}

int sandbox_server_add(struct store *st, const struct sandbox_server_spec *sp, struct sp_err *e)
{
	struct docker_endpoint ep = { 0 };
	struct sandbox_server s = { 0 };
	json_object *o;
	int rc;

	if (!sp->id || !valid_server_id(sp->id))
		return sp_err_set(
			e, SP_BAD_REQUEST,
			"--id: lower-case letters, digits, '-' and '_', up to 64, not 'local'");
	if (!sp->orgs || !*sp->orgs)
		return sp_err_set(e, SP_BAD_REQUEST,
				  "--orgs: name the organizations that may use it (or '*')");
	ep.url = sp->endpoint;
	ep.tls_cert = sp->tls_cert;
	ep.tls_key = sp->tls_key;
	ep.tls_ca = sp->tls_ca;
	if (docker_endpoint_check(&ep, e) < 0)
		return -1;
	str_copy(s.id, sizeof(s.id), sp->id);
	str_copy(s.name, sizeof(s.name), sp->name ? sp->name : sp->id);
	str_copy(s.endpoint, sizeof(s.endpoint), sp->endpoint);
	str_copy(s.tls_cert, sizeof(s.tls_cert), sp->tls_cert ? sp->tls_cert : "");
	str_copy(s.tls_key, sizeof(s.tls_key), sp->tls_key ? sp->tls_key : "");
	str_copy(s.tls_ca, sizeof(s.tls_ca), sp->tls_ca ? sp->tls_ca : "");
	str_copy(s.ssh_key, sizeof(s.ssh_key), sp->ssh_key ? sp->ssh_key : "");
	str_copy(s.ssh_known_hosts, sizeof(s.ssh_known_hosts),
		 sp->ssh_known_hosts ? sp->ssh_known_hosts : "");
	str_copy(s.pool, sizeof(s.pool), sp->pool ? sp->pool : "");
	str_copy(s.orgs, sizeof(s.orgs), sp->orgs);
	s.pooled = sp->pooled;
	s.allow_unfiltered = sp->allow_unfiltered;
	if (sp->max_lifetime_ms > SB_MAX_LIFETIME_MS ||
	    (sp->max_lifetime_ms > 0 && sp->max_lifetime_ms < SB_MIN_LIFETIME_MS))
		return sp_err_set(e, SP_BAD_REQUEST, "--max-lifetime: %d to %d seconds",
				  SB_MIN_LIFETIME_MS / 1000, SB_MAX_LIFETIME_MS / 1000);
	s.max_lifetime_ms = sp->max_lifetime_ms;
	o = sandbox_server_json(&s);
	rc = store_server_put(st, s.id, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
			      e);
	json_object_put(o);
	return rc;
}

int sandbox_server_list(struct store *st, struct sandbox_server_row **out, size_t *nout,
			struct sp_err *e)
{
	struct store_rec all = { 0 };

	*out = NULL;
	*nout = 0;
	if (store_server_list(st, &all, e) < 0)
		return -1;
	*out = calloc((size_t)all.n + 1, sizeof(**out));
	if (!*out) {
		store_rec_free(&all);
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	}
	for (int i = 0; i < all.n; i++) {
		struct sandbox_server_row *row = &(*out)[*nout];
		struct sp_err ignore;
		if (server_from_json(all.value[i], &row->s, &ignore) < 0)
			continue;
		row->has_load = store_server_load(st, row->s.id, &row->sandboxes, &row->cpu_milli,
						  &row->memory_mb, &ignore) == 0;
		(*nout)++;
	}
	store_rec_free(&all);
	return 0;
}
