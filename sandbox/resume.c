/*
 * sandbox_create_resume: a create retried under an Idempotency-Key whose
 * first attempt, with the same caller-chosen id, may have died midway
 * (RELIABILITY I2, L5). The record that attempt wrote "creating" before
 * any container existed, and the containers labelled with the id, say how
 * far it got: a finished sandbox is answered; a started container whose
 * record is still "creating" is adopted (the record finished) while its
 * creation time lasts; anything else the attempt left is ended and the
 * sandbox is created again under the same id. Docker's container names
 * (one per id) make a second container for the id impossible even when a
 * first attempt thought gone is still running: create.c leaves a taken
 * name to its holder. Never runs while the first attempt is known to be
 * under way (409).
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"

/* The one running container labelled with sb's id, into cid; 0 when there
 * is exactly one and it runs, 1 when there is none or it does not run (or
 * there are more), -1 when Docker cannot say. */
static int started_container(struct sandbox_ctx *ctx, const struct sandbox *sb, char *cid,
			     size_t cap, struct sp_err *e)
{
	char label[192];
	json_object *all = NULL, *c, *v;
	int rc = 1;

	snprintf(label, sizeof(label), "%s.sandboxId=%s", ctx->cfg->label_prefix, sb->id);
	if (sandbox_docker_ready(ctx, e) < 0 ||
	    docker_container_list(ctx->dk, label, 1, &all, e) < 0)
		return -1;
	if (json_object_array_length(all) == 1) {
		c = json_object_array_get_idx(all, 0);
		if (json_object_object_get_ex(c, "State", &v) && json_object_get_string(v) &&
		    strcmp(json_object_get_string(v), "running") == 0 &&
		    json_object_object_get_ex(c, "Id", &v) && json_object_get_string(v)) {
			str_copy(cid, cap, json_object_get_string(v));
			rc = 0;
		}
	}
	json_object_put(all);
	return rc;
}

/* Finishes the first attempt's record with its started container. 0 with
 * *out the sandbox; 1 when it cannot be (the record changed meanwhile). */
static int adopt(struct sandbox_ctx *ctx, struct sandbox *sb, const char *cid, struct sandbox *out,
		 struct sp_err *e)
{
	str_copy(sb->container_id, sizeof(sb->container_id), cid);
	sb->status = SB_RUNNING;
	if (sandbox_save_if(ctx, sb, SB_CREATING, e) != 0) {
		sp_err_clear(e);
		return 1;
	}
	log_info("sandbox %s: adopted the container of a create whose worker went away", sb->id);
	return sandbox_get(ctx, sb->org, sb->id, out, e);
}

int sandbox_create_resume(struct sandbox_ctx *ctx, const char *org,
			  const struct sandbox_create_req *rq, int owner_gone, struct sandbox *out,
			  struct sp_err *e)
{
	struct store_rec r = { 0 };
	struct sandbox sb;
	int have = 0, rc;
	char cid[80];

	if (!rq->id || !sandbox_id_ok(rq->id))
		return sp_err_set(e, SP_INTERNAL, "a resumed create needs its sandbox id");
	memset(&sb, 0, sizeof(sb));
	if (store_sandbox_get(ctx->st, org, rq->id, &r, e) == 0) {
		have = sandbox_from_rec(&r, &sb) == 0;
		store_rec_free(&r);
	} else if (e->code != SP_NOT_FOUND) {
		return -1;
	}
	sp_err_clear(e);
	/* the first attempt finished the sandbox (its answer was lost): this
	 * is the answer, as the sandbox is now */
	if (have && sb.status != SB_CREATING && sb.status != SB_ERROR)
		return sandbox_get(ctx, org, rq->id, out, e);
	if (have && sb.status == SB_CREATING && !owner_gone &&
	    now_ms() <= sandbox_creating_end(ctx->cfg, &sb))
		return sp_err_set(e, SP_CONFLICT, "Sandbox %s is still being created", rq->id);
	if (sandbox_select_server(ctx, have ? sb.server_id : (rq->server_id ? rq->server_id : ""),
				  e) < 0)
		return -1;
	/* started, and within its creation time (past it, the catch-up and
	 * the reaper end it: it is made again instead) */
	if (have && sb.status == SB_CREATING && now_ms() <= sandbox_creating_end(ctx->cfg, &sb)) {
		rc = started_container(ctx, &sb, cid, sizeof(cid), e);
		if (rc < 0)
			return -1;
		if (rc == 0 && (rc = adopt(ctx, &sb, cid, out, e)) <= 0)
			return rc;
	}
	/* whatever the first attempt left goes; then the same id again */
	rc = sandbox_end_containers(ctx, rq->id, 0, e);
	if (rc != 0) {
		if (rc > 0)
			sp_err_set(e, SP_UNAVAILABLE,
				   "The container of an earlier attempt to create sandbox %s did "
				   "not end; retry",
				   rq->id);
		return -1;
	}
	sandbox_disk_release(ctx, rq->id);
	if (have) {
		struct sp_err ignore;
		store_server_release(ctx->st, sb.server_id, rq->id, &ignore);
	}
	log_info("sandbox %s: creating it again (its first create's worker went away)", rq->id);
	return sandbox_create(ctx, org, rq, out, e);
}
