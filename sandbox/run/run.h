/*
 * The runner: every command sandpit runs in a container goes through here.
 * A command is a struct sb_cmd (argv, env, cwd, who it runs as, stdin);
 * run_start builds Docker's ExecCreate body from it (the one place that
 * does), tries the fast path where the caller allows it, falls back to
 * docker exec, and maps Docker's refusal of an exec on a sandbox (404,
 * 409) through sandbox_container_gone, the one mapping of those answers.
 * Three rules live here and nowhere else:
 *   - who a command runs as (sandbox_run_user, run_user): the sandbox's
 *     user, never "" (that would be the container's own user, the keeper);
 *     the keeper only for sandpit's own lifetime writes;
 *   - the ExecCreate body and `sh -c SCRIPT NAME ARGS` (run_body, run_sh);
 *   - what Docker's 404/409 on an exec means (run_refusal_of, pure, and
 *     sandbox_container_gone, which gathers the facts it asks for).
 */
#ifndef SANDPIT_SANDBOX_RUN_H
#define SANDPIT_SANDBOX_RUN_H

#include "../internal.h"

#include "../../docker/docker.h"

/* Who a command runs as: the sandbox's user (every command of a caller's,
 * the helper, the serving helper), the keeper (sandpit's writes of the
 * container's lifetime), or the container's own user: only for a
 * container that is no sandbox (the network probe's), refused for a
 * sandbox's. */
enum sb_who { SB_AS_USER, SB_AS_KEEPER, SB_AS_IMAGE };

/* A command. argv is NULL-terminated, argv[0] the program; env an array of
 * "KEY=value" strings (not consumed; NULL: none); cwd NULL is "/"; in NULL:
 * no stdin bytes (the io may still stream stdin), else in_len bytes that
 * the command must read exactly. */
struct sb_cmd {
	const char *const *argv;
	json_object *env;
	const char *cwd;
	enum sb_who who;
	const void *in;
	size_t in_len;
};

/* How a command runs. timeout_ms bounds it (then res->timed_out);
 * on_output gets stdout (1) and stderr (2) as they come (NULL: dropped;
 * return -1 to stop); should_stop (may be NULL) ends it when it returns 1.
 * stdin other than cmd->in bytes: in_fn pulls it piece by piece
 * (docker_input_fn), or live offers it as it comes (docker_input).
 * fast: the fast path may serve (only commands as the sandbox's user);
 * keep_alive: the fast path keeps the container's expiry ahead while it
 * runs. detached: starts it and returns. inspect: its exit status into
 * res->code once the stream ends (not after a timeout). unmapped: a 404 or
 * 409 is handed back as Docker's (sandpit's own writes, whose callers
 * decide), not mapped through sandbox_container_gone. */
struct sb_run_io {
	int64_t timeout_ms;
	docker_output_fn on_output;
	int (*should_stop)(void *arg);
	void *arg;
	docker_input_fn in_fn;
	void *in_arg;
	const struct docker_input *live;
	int fast, keep_alive, detached, inspect, unmapped;
};

/* How it ended. code: the exit status, -1 when none is known (still
 * running, timed out, stopped, or not inspected); fast: the fast path
 * served it and f says how (eid is then ""); else eid is the exec's id. */
struct sb_run_res {
	int code, running, timed_out, fast;
	struct sandbox_fast_result f;
	char eid[65];
};

/* The user of a command as who, for sb (NULL for a container that is no
 * sandbox) into out: "" for SB_AS_IMAGE (no User given to Docker). -1
 * when who does not fit (SB_AS_IMAGE for a sandbox, SB_AS_USER without
 * one). */
int run_user(const struct config *cfg, const struct sandbox *sb, enum sb_who who, char *out,
	     size_t cap);

/* `sh -c SCRIPT NAME ARGS...` into out (cap pointers, NULL-terminated;
 * args NULL-terminated or NULL). Pointers are borrowed. The count of
 * strings, or -1 when cap is too small. */
int run_sh(const char **out, size_t cap, const char *script, const char *name,
	   const char *const *args);

/* The ExecCreate body of cmd: Cmd, Env (a reference to cmd->env), User
 * (user "" or NULL: none), WorkingDir (cwd, else "/"), stdout and stderr
 * attached unless detached, stdin when stdin_attached. A new object. */
json_object *run_body(const struct sb_cmd *cmd, const char *user, int stdin_attached, int detached);

/* The env of a command of sb: a pooled sandbox's envVars (its container
 * was started before they were known), then the n variables at v (checked
 * by sandbox_env_check), but none named skip (may be NULL). A new array;
 * NULL with e set when it cannot be made. */
json_object *run_env(struct sandbox_ctx *ctx, const struct sandbox *sb,
		     const struct sandbox_env_var *v, size_t n, const char *skip, struct sp_err *e);

/* What Docker's refusal of an exec on a sandbox means. The facts, as far as
 * they are known: docker the refusal's code (SP_NOT_FOUND, SP_CONFLICT, or
 * any other: passed on as it is); sb_running whether the record reads
 * running; capturing whether a snapshot's capture holds it, paused whether
 * Docker says its container is paused, container_running whether Docker
 * says the container runs (1), is gone (0) or cannot say (-1); each is
 * RUN_UNASKED until asked. The outcome names the fact to ask next, or the
 * answer: BUSY (503, paused for a capture), STOPPED (412 "Sandbox is
 * <status>": a stop came in), RETRY (503: the container runs or Docker
 * cannot say, so nothing ends), GONE (the sandbox is killed), KEEP (not a
 * refusal of this kind). */
#define RUN_UNASKED (-2)
struct run_facts {
	int docker, sb_running, capturing, paused, container_running;
};
enum run_refusal {
	RUN_ASK_CAPTURING,
	RUN_ASK_PAUSED,
	RUN_ASK_RUNNING,
	RUN_KEEP,
	RUN_BUSY,
	RUN_STOPPED,
	RUN_RETRY,
	RUN_GONE
};
enum run_refusal run_refusal_of(const struct run_facts *f);

/* Runs cmd in the sandbox sb's container as io says. 0 when it ran (res
 * says how it ended), -1 with e set (a 404 or 409 mapped through
 * sandbox_container_gone unless io->unmapped). Thread-safe as ctx is. */
int run_start(struct sandbox_ctx *ctx, struct sandbox *sb, const struct sb_cmd *cmd,
	      const struct sb_run_io *io, struct sb_run_res *res, struct sp_err *e);
/* The same in container cid, which is no sandbox's (a warm pool's before it
 * is claimed, a probe): docker exec only, refusals as Docker's. */
int run_container(struct sandbox_ctx *ctx, const char *cid, const struct sb_cmd *cmd,
		  const struct sb_run_io *io, struct sb_run_res *res, struct sp_err *e);

#endif
