/*
 * Running commands in a sandbox: `sh -c CMD` through Docker exec, as the
 * sandbox's user (never a caller-chosen user, never privileged), with the
 * caller's env merged over the container's (template env, then envVars).
 * Every command carries a marker variable, and a marker file open on fd 9;
 * on timeout, or when the caller goes away, a second exec kills every
 * process whose environment holds the marker or that holds the file open
 * (no procps needed), so setsid, double forks, nohup, trap '' TERM and
 * env -i do not survive. If that kill cannot run (nothing can fork) or the
 * command still runs two seconds later, the whole container is killed and
 * the sandbox reads killed from then on. A running command counts as
 * activity: expiresAt covers it, and the container's watcher sees it run
 * (a process with PPid 0); lifecycle.c moves the container's expiry as it
 * ends. Every exec names the sandbox user in ExecCreate's User: the
 * container's own user is the keeper, which only sandpit's lifetime writes
 * run as.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/utf8.h"
#include "../common/util.h"
#include "../docker/docker.h"

#define MARKER_VAR "SANDPIT_EXEC"
#define MARKER_LEN 20
/* One KEY=value of a request's env: the core's own bound, past the edge's
 * (ROUTE_ENV_VALUE_MAX), under Linux's 128 KiB for one environment string. */
#define EXEC_ENV_ENTRY_MAX (128 * 1024 - 1)
#define CWD_PROC_CODE 125
#define STR_(x) #x
#define STR(x) STR_(x)
#define CWD_PROC_EXIT STR(CWD_PROC_CODE)

/* Kills every process (other than itself) whose environment holds $1, or
 * that holds the marker file /.sandpit/x/$1 open (the wrapper below opens
 * it on fd 9, so a command that clears its environment, `env -i`, is still
 * found), repeating until a pass finds none, so children forked meanwhile
 * die too; then removes the file. environ is NUL-separated: busybox grep
 * stops a line at the first NUL, so the variables are split into lines
 * with tr first; open files are compared with test -ef (a builtin: no
 * fork, and no ls, whose statx runsc 20221219 fails). A pass that cannot fork ends the shell with a non-zero
 * status (the caller kills the container). */
static const char killer_script[] =
	"m=\"" MARKER_VAR "=$1\" x=\"/.sandpit/x/$1\"; n=0\n"
	"while [ $n -lt 50 ]; do f=0\n"
	"for d in /proc/[0-9]*; do p=${d#/proc/}; [ \"$p\" = \"$$\" ] && continue\n"
	"k=0; tr '\\000' '\\n' 2>/dev/null <\"$d/environ\" | grep -q -x -F -e \"$m\" && k=1\n"
	"[ $k = 0 ] && for g in \"$d\"/fd/*; do [ \"$g\" -ef \"$x\" ] && k=1 && break; done\n"
	"[ $k = 1 ] && kill -9 \"$p\" 2>/dev/null && f=1\n"
	"done\n"
	"[ $f = 0 ] && { rm -f \"$x\"; exit 0; }; n=$((n+1))\n"
	"done\n"
	"exit 1\n";

/*
 * Runs a command ($1, with $0 = sh and $2... as its arguments) with the
 * marker file open on fd 9 (see killer_script). /.sandpit/x is the one
 * folder of /.sandpit the sandbox user may write; the expiry beside it is
 * the keeper's. A working folder that resolves into /proc (a symlink
 * planted in the sandbox) ends it at once with CWD_PROC_EXIT, before
 * anything runs (see cwd_in_proc).
 */
static const char activity_wrapper[] =
	/* the working folder as the kernel resolved it (symlinks followed):
	 * never /proc (RELIABILITY H5); cd -P is a builtin, no fork */
	"cd -P . 2>/dev/null && case $PWD in /proc|/proc/*) exit " CWD_PROC_EXIT ";; esac\n"
	"x=/.sandpit/x/$" MARKER_VAR "; : >\"$x\" 2>/dev/null && exec 9<\"$x\"\n"
	"c=$1; shift\n"
	"sh -c \"$c\" sh \"$@\"\n"
	"r=$?\n"
	"exec 9<&-; rm -f \"$x\"\n"
	"exit $r\n";

int sandbox_path_check(const char *field, const char *path, struct sp_err *e)
{
	size_t n = strlen(path);

	if (n == 0 || path[0] != '/')
		return sp_err_field(e, SP_BAD_REQUEST, field, "%s: Path must be absolute", field);
	if (n > 4096)
		return sp_err_field(e, SP_BAD_REQUEST, field, "%s: must be at most 4096 bytes",
				    field);
	return 0;
}

/* Whether path, read lexically ("//", "." and ".." resolved, as the kernel
 * does for a path without symlinks), is /proc or under it: "/tmp/../proc"
 * and "/./proc" name /proc too. path is at most 4096 bytes. */
static int under_proc(const char *path)
{
	char norm[4097];
	size_t n = 0;

	for (const char *p = path; *p;) {
		const char *c;
		size_t len;

		while (*p == '/')
			p++;
		c = p;
		while (*p && *p != '/')
			p++;
		len = (size_t)(p - c);
		if (len == 0 || (len == 1 && c[0] == '.'))
			continue;
		if (len == 2 && c[0] == '.' && c[1] == '.') {
			while (n > 0 && norm[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
			continue;
		}
		if (n + 1 + len >= sizeof(norm))
			return 1; /* cannot happen for a checked path; refuse */
		norm[n++] = '/';
		memcpy(norm + n, c, len);
		n += len;
	}
	norm[n] = '\0';
	return strncmp(norm, "/proc", 5) == 0 && (norm[5] == '\0' || norm[5] == '/');
}

/* The user every command of sb runs as: the template's, or the image's own
 * as it names it ("root" when it names none). Never a caller's value, and
 * never "" (that would be the container's user: the keeper). */
static const char *sandbox_user(const struct sandbox *sb)
{
	return sb->user[0] ? sb->user : "root";
}

static int discard(void *arg, int stream, const char *data, size_t len)
{
	(void)arg;
	(void)stream;
	(void)data;
	(void)len;
	return 0;
}

static void kill_container(struct sandbox_ctx *ctx, struct sandbox *sb, const char *why)
{
	struct sp_err e;

	log_warn("sandbox %s: %s; killing the container", sb->id, why);
	if (docker_container_kill(ctx->dk, sb->container_id, "KILL", &e) < 0 &&
	    e.code != SP_NOT_FOUND && e.code != SP_CONFLICT)
		log_error("sandbox %s: kill: %s", sb->id, e.msg);
	sandbox_mark_gone(ctx, sb);
}

/* Runs script (sh -c, $0 = name, $1 = arg) in the sandbox as its user, in
 * /, output dropped, for at most 10 s; returns its exit status, or -1 if it
 * could not run or did not end. */
static int run_check(struct sandbox_ctx *ctx, struct sandbox *sb, const char *script,
		     const char *name, const char *arg)
{
	json_object *body = json_object_new_object(), *cmd = json_object_new_array();
	char eid[65];
	struct sp_err e;
	int timed_out = 0, code = -1, running = 0;

	json_object_array_add(cmd, json_object_new_string("sh"));
	json_object_array_add(cmd, json_object_new_string("-c"));
	json_object_array_add(cmd, json_object_new_string(script));
	json_object_array_add(cmd, json_object_new_string(name));
	json_object_array_add(cmd, json_object_new_string(arg));
	json_object_object_add(body, "Cmd", cmd);
	json_object_object_add(body, "User", json_object_new_string(sandbox_user(sb)));
	json_object_object_add(body, "AttachStdout", json_object_new_boolean(1));
	json_object_object_add(body, "AttachStderr", json_object_new_boolean(1));
	json_object_object_add(body, "WorkingDir", json_object_new_string("/"));
	if (docker_exec_create(ctx->dk, sb->container_id, body, eid, &e) < 0 ||
	    docker_exec_start(ctx->dk, eid, 10000, discard, NULL, NULL, &timed_out, &e) < 0 ||
	    timed_out || docker_exec_inspect(ctx->dk, eid, &code, &running, &e) < 0)
		code = -1;
	json_object_put(body);
	return code;
}

/* Runs the killer for marker; returns -1 if it could not run. */
static int kill_marked(struct sandbox_ctx *ctx, struct sandbox *sb, const char *marker)
{
	return run_check(ctx, sb, killer_script, "sandpit-kill", marker) == 0 ? 0 : -1;
}

/* Whether cwd, resolved inside the sandbox as its user, is /proc or under
 * it: 1 only when the check ran and said so. */
static int cwd_in_proc(struct sandbox_ctx *ctx, struct sandbox *sb, const char *cwd)
{
	static const char check[] = "cd -P -- \"$1\" 2>/dev/null || exit 1\n"
				    "case $PWD in /proc|/proc/*) exit 0;; esac\nexit 1\n";

	return run_check(ctx, sb, check, "sandpit-cwd", cwd) == 0;
}

/* Waits up to ms for the exec to end; returns 1 if it still runs. */
static int still_running(struct sandbox_ctx *ctx, const char *eid, int64_t ms)
{
	int64_t until = mono_ms() + ms;
	struct timespec ts = { 0, 50 * 1000 * 1000 };

	for (;;) {
		int code, running = 0;
		struct sp_err e;
		if (docker_exec_inspect(ctx->dk, eid, &code, &running, &e) < 0 || !running)
			return 0;
		if (mono_ms() >= until)
			return 1;
		nanosleep(&ts, NULL);
	}
}

/* Wraps the caller's should_stop to remember that it fired. */
struct stop_watch {
	const struct sandbox_exec_io *io;
	int fired;
	int output; /* any output came */
};

static int watch_stop(void *arg)
{
	struct stop_watch *w = arg;

	if (w->io->should_stop && w->io->should_stop(w->io->arg))
		w->fired = 1;
	return w->fired;
}

static int pass_output(void *arg, int stream, const char *data, size_t len)
{
	struct stop_watch *w = arg;

	w->output = 1;
	if (w->io->on_output(w->io->arg, stream, data, len) < 0) {
		w->fired = 1;
		return -1;
	}
	return 0;
}

/* A sandbox from a warm pool was started before its envVars were known:
 * they go to each command instead, decrypted just for it. */
static int pooled_env(struct sandbox_ctx *ctx, const struct sandbox *sb, json_object *env,
		      struct sp_err *e)
{
	struct buf sealed, plain;
	int rc = -1;

	buf_init(&sealed, 1 << 20);
	buf_init(&plain, 1 << 20);
	if (store_sandbox_field(ctx->st, sb->org, sb->id, "envVars", &sealed, e) < 0)
		goto out;
	if (!sealed.len) {
		rc = 0;
		goto out;
	}
	if (crypto_open(ctx->cfg->data_key, sb->id, sealed.data, sealed.len, &plain) < 0) {
		sp_err_set(e, SP_INTERNAL, "The sandbox's envVars cannot be opened");
		goto out;
	}
	rc = sandbox_env_lines(plain.data ? plain.data : "", plain.len, env, e);
out:
	buf_free(&sealed);
	buf_wipe(&plain);
	return rc;
}

int sandbox_exec_run(struct sandbox_ctx *ctx, struct sandbox *sb, const struct sandbox_exec_req *rq,
		     const struct sandbox_exec_io *io, struct sandbox_exec_result *res,
		     struct sp_err *e)
{
	json_object *body = NULL, *cmd, *env;
	char marker[MARKER_LEN + 1], mvar[64], eid[65];
	int64_t timeout = rq->timeout_ms > 0 ? rq->timeout_ms : SB_DEFAULT_EXEC_TIMEOUT_MS;
	int timed_out = 0, code = -1, running = 0, rc = -1, started;
	struct stop_watch watch = { io, 0, 0 };

	memset(res, 0, sizeof(*res));
	if (rq->cwd && (sandbox_path_check("cwd", rq->cwd, e) < 0))
		return -1;
	if (rq->cwd && under_proc(rq->cwd))
		return sp_err_field(e, SP_BAD_REQUEST, "cwd", "cwd: may not be under /proc");
	crypto_random_id(marker, MARKER_LEN);
	snprintf(mvar, sizeof(mvar), MARKER_VAR "=%s", marker);

	body = json_object_new_object();
	cmd = json_object_new_array();
	json_object_array_add(cmd, json_object_new_string("sh"));
	json_object_array_add(cmd, json_object_new_string("-c"));
	if (rq->no_activity) {
		json_object_array_add(cmd, json_object_new_string_len(rq->cmd, (int)rq->cmd_len));
		json_object_array_add(cmd, json_object_new_string("sh"));
	} else {
		json_object_array_add(cmd, json_object_new_string(activity_wrapper));
		json_object_array_add(cmd, json_object_new_string("sandpit"));
		json_object_array_add(cmd, json_object_new_string_len(rq->cmd, (int)rq->cmd_len));
	}
	for (const char *const *a = rq->args; a && *a; a++)
		json_object_array_add(cmd, json_object_new_string(*a));
	json_object_object_add(body, "Cmd", cmd);
	env = json_object_new_array();
	if (sb->pooled && pooled_env(ctx, sb, env, e) < 0)
		goto out;
	if (rq->env) {
		json_object_object_foreach(rq->env, k, v)
		{
			struct buf kv;
			if (strcmp(k, MARKER_VAR) == 0)
				continue;
			buf_init(&kv, EXEC_ENV_ENTRY_MAX);
			if (buf_printf(&kv, "%s=", k) < 0 ||
			    buf_append(&kv, json_object_get_string(v),
				       (size_t)json_object_get_string_len(v)) < 0) {
				buf_wipe(&kv);
				sp_err_field(e, SP_BAD_REQUEST, "env",
					     "env.%.*s: KEY=value longer than %d bytes",
					     (int)utf8_prefix(k, 64), k, EXEC_ENV_ENTRY_MAX);
				goto out;
			}
			json_object_array_add(env,
					      json_object_new_string_len(kv.data, (int)kv.len));
			buf_wipe(&kv);
		}
	}
	json_object_array_add(env, json_object_new_string(mvar));
	json_object_object_add(body, "Env", env);
	json_object_object_add(body, "User", json_object_new_string(sandbox_user(sb)));
	json_object_object_add(body, "WorkingDir",
			       json_object_new_string(rq->cwd ? rq->cwd : sb->workdir));
	json_object_object_add(body, "AttachStdout", json_object_new_boolean(1));
	json_object_object_add(body, "AttachStderr", json_object_new_boolean(1));
	json_object_object_add(body, "AttachStdin", json_object_new_boolean(rq->input != NULL));
	json_object_object_add(body, "Tty", json_object_new_boolean(0));

	/* a running command is activity until it ends (plus timeoutMs after) */
	if (!rq->no_activity && sandbox_touch_record(ctx, sb, timeout, e) < 0)
		goto out;
	if (docker_exec_create(ctx->dk, sb->container_id, body, eid, e) < 0) {
		if (e->code == SP_NOT_FOUND || e->code == SP_CONFLICT) {
			sandbox_mark_gone(ctx, sb);
			sp_err_set(e, SP_PRECONDITION, "Sandbox is killed");
		}
		goto out;
	}
	if (rq->input)
		started = docker_exec_start_input(ctx->dk, eid, timeout, rq->input, rq->input_len,
						  pass_output, watch_stop, &watch, &timed_out, NULL,
						  e);
	else
		started = docker_exec_start(ctx->dk, eid, timeout, pass_output, watch_stop, &watch,
					    &timed_out, e);
	if (started < 0) {
		if (e->code == SP_NOT_FOUND || e->code == SP_CONFLICT) {
			sandbox_mark_gone(ctx, sb);
			sp_err_set(e, SP_PRECONDITION, "Sandbox is killed");
		}
		goto out;
	}
	if (docker_exec_inspect(ctx->dk, eid, &code, &running, e) < 0) {
		if (e->code != SP_NOT_FOUND)
			goto out;
		/* the exec went with its container (under gVisor a command that
		 * fills the pids limit can end the whole sandbox): the command is
		 * over, and so is the sandbox */
		kill_container(ctx, sb, "the container ended under a running command");
		res->timed_out = timed_out;
		res->exit_code = timed_out ? 124 : 137;
		res->stopped = watch.fired;
		sp_err_clear(e);
		rc = 0;
		goto out;
	}
	if (running && !timed_out && !watch.fired && !still_running(ctx, eid, 2000) &&
	    docker_exec_inspect(ctx->dk, eid, &code, &running, e) < 0)
		goto out; /* the stream can end a moment before the exit is recorded */
	if (running || timed_out || watch.fired) {
		/* timed out, or the caller went away: end the whole process tree */
		if (kill_marked(ctx, sb, marker) < 0 || still_running(ctx, eid, 2000))
			kill_container(ctx, sb,
				       timed_out ? "a timed-out command could not be killed"
						 : "an abandoned command could not be killed");
		res->timed_out = timed_out;
		res->exit_code = timed_out ? 124 : 137;
		res->stopped = watch.fired;
	} else {
		res->exit_code = code < 0 ? 1 : code;
		/* the wrapper refused a cwd that resolves into /proc; a command of
		 * the caller's own that exits so, silently, is told apart by
		 * resolving cwd once more (only then) */
		if (rq->cwd && !rq->no_activity && !watch.output && code == CWD_PROC_CODE &&
		    cwd_in_proc(ctx, sb, rq->cwd)) {
			sp_err_field(e, SP_BAD_REQUEST, "cwd", "cwd: may not be under /proc");
			goto out;
		}
	}
	if (sb->status == SB_RUNNING && !rq->no_activity) {
		struct sp_err ignore;
		sandbox_touch_record(ctx, sb, 0, &ignore);
	}
	rc = 0;
out:
	json_object_put(body);
	return rc;
}
