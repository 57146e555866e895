/* Shared between the files of sandbox/ only. */
#ifndef SANDPIT_SANDBOX_INTERNAL_H
#define SANDPIT_SANDBOX_INTERNAL_H

#include "../store/store.h"
#include "sandbox.h"

#define SB_RECORD_FIELDS 25

/* Fills sb from a record; -1 if the record is not a sandbox. */
int sandbox_from_rec(const struct store_rec *r, struct sandbox *sb);
/* Writes sb as name/value pairs into kv (2 * SB_RECORD_FIELDS slots), using
 * nums (SB_RECORD_FIELDS slots) for numbers. Returns the pair count * 2. */
int sandbox_to_kv(const struct sandbox *sb, char nums[][32], const char **kv);

/* The uid/gid that owns files the API creates, and the mode of a folder
 * that user must be able to use. */
void sandbox_owner(const struct sandbox *sb, unsigned *uid, unsigned *gid, unsigned *dir_mode);

/* A registered Docker server. */
struct server {
	char id[65], name[65], endpoint[512];
	char tls_cert[1024], tls_key[1024], tls_ca[1024];
	char ssh_key[1024], ssh_known_hosts[1024];
	char pool[65];
	char orgs[1024]; /* comma separated; "*" = every organization */
	int pooled;
};
int server_from_json(const char *text, struct server *s, struct sp_err *e);
json_object *server_to_json(const struct server *s);
int server_allows(const struct server *s, const char *org);
/* Makes server id ("" or "local" = the local server) the current one:
 * ctx->dk and ctx->cur. -1 (ctx->dk NULL) when it is unknown. */
int sandbox_select_server(struct sandbox_ctx *ctx, const char *id, struct sp_err *e);
void sandbox_servers_cleanup(struct sandbox_ctx *ctx);
/* Sets dk's stuck-server guard from the configuration (RELIABILITY L2). */
void sandbox_docker_guard(const struct config *cfg, struct docker_client *dk);
/* Chooses the server of a new sandbox (requested, else the pool's least
 * loaded, else local), checks the org may use it, and reserves the
 * sandbox's share there. Sets sb->server_id ("" = local). */
int sandbox_place(struct sandbox_ctx *ctx, const char *org, struct sandbox *sb,
		  const char *requested, struct sp_err *e);

/* lifecycle.c, for pool.c: negotiate and make the networks of the current
 * server; the container body of a template sandbox (*img: the image
 * inspect, new); the sh/sleep/date check; the files seeded before start. */
int sandbox_prepare_server(struct sandbox_ctx *ctx, struct sp_err *e);
json_object *sandbox_container_body(struct sandbox_ctx *ctx, struct sandbox *sb,
				    const struct template_conf *t, json_object **img, struct sp_err *e);
int sandbox_check_tools(struct sandbox_ctx *ctx, const struct sandbox *sb, json_object *img,
			char *missing, size_t cap, struct sp_err *e);
int sandbox_seed_files(struct sandbox_ctx *ctx, const struct sandbox *sb, json_object *img,
		       struct sp_err *e);
/* The sandbox's CPU, memory and pids limits as Docker fields into o (the
 * HostConfig of a create, the body of an update); pids as the host counts
 * them for the sandbox's runtime. */
void sandbox_limits_json(const struct config *cfg, const struct sandbox *sb, json_object *o);
/* Appends a .env body's KEY=value lines to env (Docker's "K=V" list). */
int sandbox_env_lines(const char *s, size_t len, json_object *env, struct sp_err *e);

/* pool.c: claims a warm container for rq into sb (sets id, container id,
 * pooled) if one fits and is ready: 1 claimed, 0 none. activate arms it
 * with sb's limits and lifetimes. */
int sandbox_pool_claim(struct sandbox_ctx *ctx, const struct sandbox_create_req *rq,
		       struct sandbox *sb);
int sandbox_pool_activate(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e);

#endif
