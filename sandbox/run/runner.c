/*
 * The one runner of commands in containers (run.h): the user a command
 * runs as, the ExecCreate body and its `sh -c` argv, the fast path first
 * where the caller allows it, docker exec otherwise, and the one mapping
 * of Docker's refusal of an exec. It never runs a command as a user a
 * caller names, never as the container's own user in a sandbox (that is
 * the keeper), and never ends a sandbox whose container still runs.
 */
#include "run.h"

#include <string.h>

#include "../../common/buf.h"
#include "../../common/log.h"
#include "../../common/util.h"

const char *sandbox_run_user(const char *user)
{
	return user && user[0] ? user : "root";
}

int run_user(const struct config *cfg, const struct sandbox *sb, enum sb_who who, char *out,
	     size_t cap)
{
	switch (who) {
	case SB_AS_USER:
		if (!sb)
			return -1;
		str_copy(out, cap, sandbox_run_user(sb->user));
		return 0;
	case SB_AS_KEEPER:
		sandbox_keeper_user(cfg, out, cap);
		return 0;
	case SB_AS_IMAGE:
		if (sb)
			return -1;
		str_copy(out, cap, "");
		return 0;
	}
	return -1;
}

int run_sh(const char **out, size_t cap, const char *script, const char *name,
	   const char *const *args)
{
	size_t n = 0, want = 5;

	for (const char *const *a = args; a && *a; a++)
		want++;
	if (cap < want)
		return -1;
	out[n++] = "sh";
	out[n++] = "-c";
	out[n++] = script;
	out[n++] = name;
	for (const char *const *a = args; a && *a; a++)
		out[n++] = *a;
	out[n] = NULL;
	return (int)n;
}

json_object *run_body(const struct sb_cmd *cmd, const char *user, int stdin_attached, int detached)
{
	json_object *body = json_object_new_object(), *argv = json_object_new_array();

	for (const char *const *a = cmd->argv; a && *a; a++)
		json_object_array_add(argv, json_object_new_string(*a));
	json_object_object_add(body, "Cmd", argv);
	if (cmd->env)
		json_object_object_add(body, "Env", json_object_get(cmd->env));
	if (user && user[0])
		json_object_object_add(body, "User", json_object_new_string(user));
	json_object_object_add(body, "WorkingDir",
			       json_object_new_string(cmd->cwd ? cmd->cwd : "/"));
	if (!detached) {
		json_object_object_add(body, "AttachStdout", json_object_new_boolean(1));
		json_object_object_add(body, "AttachStderr", json_object_new_boolean(1));
	}
	if (stdin_attached)
		json_object_object_add(body, "AttachStdin", json_object_new_boolean(1));
	return body;
}

json_object *run_env(struct sandbox_ctx *ctx, const struct sandbox *sb,
		     const struct sandbox_env_var *v, size_t n, const char *skip, struct sp_err *e)
{
	json_object *env = json_object_new_array();

	if (sb->pooled && sandbox_pooled_env(ctx, sb, env, e) < 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		struct buf kv;
		if (skip && strcmp(v[i].key, skip) == 0)
			continue;
		buf_init(&kv, SB_ENV_VAR_MAX + 1);
		if (buf_printf(&kv, "%s=", v[i].key) < 0 ||
		    buf_append(&kv, v[i].value, v[i].value_len) < 0) {
			buf_wipe(&kv); /* sandbox_env_check keeps this from happening */
			sp_err_field(e, SP_BAD_REQUEST, "env", "env.%.64s: too long", v[i].key);
			goto fail;
		}
		json_object_array_add(env, json_object_new_string_len(kv.data, (int)kv.len));
		buf_wipe(&kv);
	}
	return env;
fail:
	json_object_put(env);
	return NULL;
}

enum run_refusal run_refusal_of(const struct run_facts *f)
{
	if (f->docker != SP_NOT_FOUND && f->docker != SP_CONFLICT)
		return RUN_KEEP;
	if (f->docker == SP_CONFLICT && f->sb_running) {
		/* a snapshot's capture holds it paused (or did a moment ago) */
		if (f->capturing == RUN_UNASKED)
			return RUN_ASK_CAPTURING;
		if (f->capturing == 1)
			return RUN_BUSY;
	}
	if (f->docker == SP_CONFLICT) {
		if (f->paused == RUN_UNASKED)
			return RUN_ASK_PAUSED;
		if (f->paused == 1)
			return RUN_STOPPED;
	}
	if (f->container_running == RUN_UNASKED)
		return RUN_ASK_RUNNING;
	/* the refusal was about the exec, or the runtime could not start it:
	 * no operation ends a sandbox for that */
	return f->container_running != 0 ? RUN_RETRY : RUN_GONE;
}

/* The answer to a command while a snapshot's capture holds the container
 * paused: retryable (503), the sandbox untouched. */
static int capture_busy(struct sp_err *e)
{
	return sp_err_set(e, SP_UNAVAILABLE,
			  "The sandbox is paused for a snapshot's capture; retry in a moment");
}

/* Maps Docker's refusal to act on sb's container (no such container, or a
 * 409: not running, or paused) to the record's state: a capture's pause a
 * 503, a paused container a stopped sandbox (412 "Sandbox is stopped": a
 * stop that came in meanwhile), a container Docker still lists running or
 * cannot say about a 503, and only a container that is gone or ended a
 * killed sandbox. Any other error is left as it is. */
int sandbox_container_gone(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	struct run_facts f = { e->code, sb->status == SB_RUNNING, RUN_UNASKED, RUN_UNASKED,
			       RUN_UNASKED };

	for (;;) {
		switch (run_refusal_of(&f)) {
		case RUN_ASK_CAPTURING:
			f.capturing = sandbox_snapshot_capturing(ctx, sb->id) ? 1 : 0;
			break;
		case RUN_ASK_PAUSED:
			f.paused = sandbox_container_paused(ctx, sb) ? 1 : 0;
			break;
		case RUN_ASK_RUNNING:
			f.container_running = sandbox_container_running(ctx, sb);
			break;
		case RUN_KEEP:
			return -1;
		case RUN_BUSY:
			return capture_busy(e);
		case RUN_STOPPED:
			return sp_err_set(e, SP_PRECONDITION, "Sandbox is %s",
					  sandbox_status_name(sb->status));
		case RUN_RETRY:
			log_warn("sandbox %s: Docker refused a call on its container (%s), which "
				 "%s",
				 sb->id, e->msg,
				 f.container_running == 1 ? "still runs" : "it cannot inspect");
			return sp_err_set(e, SP_UNAVAILABLE,
					  "sandbox %s: Docker refused to act on its container; "
					  "retry in a moment",
					  sb->id);
		case RUN_GONE:
			sandbox_mark_gone(ctx, sb);
			return sp_err_set(e, SP_PRECONDITION, "Sandbox is killed");
		}
	}
}

static int drop_output(void *arg, int stream, const char *data, size_t len)
{
	(void)arg;
	(void)stream;
	(void)data;
	(void)len;
	return 0;
}

/* docker exec of body in cid: create, start as io says, inspect when
 * asked. */
static int run_docker(struct sandbox_ctx *ctx, const char *cid, json_object *body,
		      const struct sb_cmd *cmd, const struct sb_run_io *io, struct sb_run_res *res,
		      struct sp_err *e)
{
	docker_output_fn out = io->on_output ? io->on_output : drop_output;
	int rc;

	if (docker_exec_create(ctx->dk, cid, body, res->eid, e) < 0)
		return -1;
	if (io->detached)
		return docker_exec_start_detached(ctx->dk, res->eid, e);
	if (io->live)
		rc = docker_exec_start_interactive(ctx->dk, res->eid, io->timeout_ms, io->live, out,
						   io->should_stop, io->arg, &res->timed_out, e);
	else if (io->in_fn)
		rc = docker_exec_start_stream(ctx->dk, res->eid, io->timeout_ms, io->in_fn,
					      io->in_arg, out, io->should_stop, io->arg,
					      &res->timed_out, e);
	else if (cmd->in)
		rc = docker_exec_start_input(ctx->dk, res->eid, io->timeout_ms, cmd->in,
					     cmd->in_len, out, io->should_stop, io->arg,
					     &res->timed_out, NULL, e);
	else
		rc = docker_exec_start(ctx->dk, res->eid, io->timeout_ms, out, io->should_stop,
				       io->arg, &res->timed_out, e);
	if (rc < 0)
		return -1;
	if (io->inspect && !res->timed_out &&
	    docker_exec_inspect(ctx->dk, res->eid, &res->code, &res->running, e) < 0)
		return -1;
	return 0;
}

/* The body of cmd as io runs it, for sb (NULL: a container that is no
 * sandbox); NULL with e set when who does not fit. */
static json_object *body_of(struct sandbox_ctx *ctx, const struct sandbox *sb,
			    const struct sb_cmd *cmd, const struct sb_run_io *io, struct sp_err *e)
{
	char user[64];

	if (run_user(ctx->cfg, sb, cmd->who, user, sizeof(user)) < 0) {
		sp_err_set(e, SP_INTERNAL, "a command cannot run as that user here");
		return NULL;
	}
	return run_body(cmd, user, cmd->in || io->in_fn || io->live, io->detached);
}

int run_start(struct sandbox_ctx *ctx, struct sandbox *sb, const struct sb_cmd *cmd,
	      const struct sb_run_io *io, struct sb_run_res *res, struct sp_err *e)
{
	json_object *body;
	int rc;

	memset(res, 0, sizeof(*res));
	res->code = -1;
	/* the fast path first (nothing ran when it does not serve) */
	if (io->fast && cmd->who == SB_AS_USER && !io->in_fn && !io->live && !io->detached &&
	    sandbox_fast_possible(ctx, sb)) {
		struct sandbox_fast_io fio = {
			cmd->in,	 cmd->in_len,
			io->timeout_ms,	 io->on_output ? io->on_output : drop_output,
			io->should_stop, io->arg,
			io->keep_alive
		};
		if (sandbox_fast_exec(ctx, sb, cmd, &fio, &res->f) == 1) {
			res->fast = 1;
			res->code = res->f.code;
			res->timed_out = res->f.timed_out;
			return 0;
		}
	}
	/* a snapshot's capture is pausing the container, or holds it paused:
	 * an exec set up while runc freezes the container hangs runc, and
	 * Docker with it (one already on its way is let through:
	 * sandbox_settle_execs) */
	if (sandbox_lock_held(ctx, SB_LOCK_FREEZE, sb->id))
		return capture_busy(e);
	body = body_of(ctx, sb, cmd, io, e);
	if (!body)
		return -1;
	rc = run_docker(ctx, sb->container_id, body, cmd, io, res, e);
	json_object_put(body);
	if (rc < 0 && !io->unmapped)
		sandbox_container_gone(ctx, sb, e);
	return rc;
}

int run_container(struct sandbox_ctx *ctx, const char *cid, const struct sb_cmd *cmd,
		  const struct sb_run_io *io, struct sb_run_res *res, struct sp_err *e)
{
	json_object *body;
	int rc;

	memset(res, 0, sizeof(*res));
	res->code = -1;
	body = body_of(ctx, NULL, cmd, io, e);
	if (!body)
		return -1;
	rc = run_docker(ctx, cid, body, cmd, io, res, e);
	json_object_put(body);
	return rc;
}
