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
 * (a process with PPid 0); expiry.c moves the container's expiry as it
 * ends. Every command runs as the sandbox user (run/runner.c): the
 * container's own user is the keeper, which only sandpit's lifetime writes
 * run as.
 * May call: expiry.c (activity), state.c (mark gone), spec.c (envVars
 * lines), run/runner.c (every command, and the mapping of a refusal).
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/utf8.h"
#include "../common/util.h"
#include "../docker/docker.h"
#include "run/run.h"
#include "sh_programs.h"

/* The killer is sandbox/sh/kill.sh (sh_kill), the wrapper of every command
 * sandbox/sh/wrapper.sh (sh_wrapper), the cwd check sandbox/sh/cwd.sh
 * (sh_cwd). MARKER_VAR and CWD_PROC_CODE are written in those files too. */
#define MARKER_VAR "SANDPIT_EXEC"
#define MARKER_LEN 20
#define CWD_PROC_CODE 125
/* how the runtime's refusal to start an exec begins (its whole stdout) */
#define OCI_FAILED "OCI runtime exec failed: "

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
int sandbox_under_proc(const char *path)
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

static void kill_container(struct sandbox_ctx *ctx, struct sandbox *sb, const char *why)
{
	struct sp_err e;

	/* a sandbox stopped under a running command: the command is frozen
	 * with it (and goes on when it is started), the sandbox is kept */
	if (sandbox_container_paused(ctx, sb)) {
		log_warn("sandbox %s: %s: it was stopped meanwhile; left frozen", sb->id, why);
		return;
	}
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
	const char *args[] = { arg, NULL }, *argv[8];
	struct sb_cmd cmd = { .argv = argv, .who = SB_AS_USER };
	struct sb_run_io io = { .timeout_ms = 10000, .inspect = 1, .unmapped = 1 };
	struct sb_run_res res;
	struct sp_err e;

	run_sh(argv, 8, script, name, args);
	if (run_start(ctx, sb, &cmd, &io, &res, &e) < 0 || res.timed_out)
		return -1;
	return res.code;
}

/* Runs the killer for marker; returns -1 if it could not run. */
static int kill_marked(struct sandbox_ctx *ctx, struct sandbox *sb, const char *marker)
{
	return run_check(ctx, sb, sh_kill, "sandpit-kill", marker) == 0 ? 0 : -1;
}

/* Whether cwd, resolved inside the sandbox as its user, is /proc or under
 * it: 1 only when the check ran and said so. */
static int cwd_in_proc(struct sandbox_ctx *ctx, struct sandbox *sb, const char *cwd)
{
	return run_check(ctx, sb, sh_cwd, "sandpit-cwd", cwd) == 0;
}

/* A fast-path command (its main process's pid and start time): waits up
 * to ms for it to end, as still_running does for an exec; 1 if it still
 * runs (or the check cannot run: then it may). */
static int fast_still_running(struct sandbox_ctx *ctx, struct sandbox *sb,
			      const struct sandbox_fast_result *f, int64_t ms)
{
	int64_t until = mono_ms() + ms;
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	char id[48];

	if (f->pid <= 0)
		return 0; /* it never started (the helper was lost before) */
	snprintf(id, sizeof(id), "%d:%llu", f->pid, (unsigned long long)f->start);
	for (;;) {
		int r = run_check(ctx, sb, sh_alive, "sandpit-alive", id);
		if (r == 1)
			return 0;
		if (mono_ms() >= until)
			return 1;
		nanosleep(&ts, NULL);
	}
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

/* Wraps the caller's io: remembers that should_stop fired, caps each
 * stream at rq->output_max (past it the output is read and dropped, so the
 * command never blocks on a full pipe), and holds back a first stdout
 * piece that may be the runtime's refusal of cwd (see cwd_refused) until
 * more output or the exit tells. */
struct stop_watch {
	const struct sandbox_exec_io *io;
	const struct sandbox_exec_req *rq;
	int fired;
	int output;	 /* any output came */
	int truncated;	 /* a stream passed output_max */
	size_t n[3];	 /* bytes passed on per stream */
	int holding;	 /* held has the first piece of stdout */
	struct buf held; /* (nothing passed on before it) */
};

static int watch_stop(void *arg)
{
	struct stop_watch *w = arg;

	if (w->io->should_stop && w->io->should_stop(w->io->arg))
		w->fired = 1;
	return w->fired;
}

static int deliver(struct stop_watch *w, int stream, const char *data, size_t len)
{
	size_t max = w->rq->output_max;

	stream = stream == 2 ? 2 : 1;
	if (max && len > max - w->n[stream]) {
		w->truncated = 1;
		len = max - w->n[stream];
	}
	if (!len)
		return 0;
	w->n[stream] += len;
	if (w->io->on_output(w->io->arg, stream, data, len) < 0) {
		w->fired = 1;
		return -1;
	}
	return 0;
}

/* Passes a held piece on (it was output after all). */
static int release_held(struct stop_watch *w)
{
	int rc;

	if (!w->holding)
		return 0;
	w->holding = 0;
	rc = deliver(w, 1, w->held.data ? w->held.data : "", w->held.len);
	buf_free(&w->held);
	return rc;
}

static int pass_output(void *arg, int stream, const char *data, size_t len)
{
	struct stop_watch *w = arg;
	size_t n = len < sizeof(OCI_FAILED) - 1 ? len : sizeof(OCI_FAILED) - 1;

	if (!w->output && stream == 1 && w->rq->cwd && len && memcmp(data, OCI_FAILED, n) == 0) {
		w->output = 1;
		buf_init(&w->held, len);
		if (buf_append(&w->held, data, len) == 0) {
			w->holding = 1;
			return 0;
		}
		buf_free(&w->held);
	}
	w->output = 1;
	if (release_held(w) < 0)
		return -1;
	return deliver(w, stream, data, len);
}

/* Docker could not enter cwd: the process never started, exit 126, and
 * the runtime's one message is all the output. A 400 naming cwd, the
 * same over every face (REST and the WebSocket). A command that printed
 * such a line itself and exited 126 is told apart by entering cwd once
 * more (only then). */
static int cwd_refused(struct sandbox_ctx *ctx, struct sandbox *sb, const struct stop_watch *w,
		       int code, struct sp_err *e)
{
	static const char enter[] = "cd -- \"$1\" 2>/dev/null\n";
	const char *s = w->held.data, *why = "does not exist in the sandbox";

	if (!w->holding || code != 126 || !s ||
	    (!strstr(s, "chdir to cwd") &&			      /* runc */
	     !strstr(s, "failed to find initial working directory"))) /* runsc */
		return 0;
	/* runsc does not follow some symlinks into /proc that a shell's cd
	 * does: a cwd the user can enter but that resolves into /proc was
	 * refused for being there */
	if (run_check(ctx, sb, enter, "sandpit-cwd", w->rq->cwd) == 0) {
		if (!cwd_in_proc(ctx, sb, w->rq->cwd))
			return 0;
		sp_err_field(e, SP_BAD_REQUEST, "cwd", "cwd: may not be under /proc");
		return 1;
	}
	if (strstr(s, "not a directory"))
		why = "is not a directory";
	else if (strstr(s, "permission denied"))
		why = "may not be entered by the sandbox user";
	sp_err_field(e, SP_BAD_REQUEST, "cwd", "cwd: %.200s %s", w->rq->cwd, why);
	return 1;
}

/* The caller's variables, checked: a name as a shell reads it, no NUL in a
 * value, each KEY=value within what the kernel passes to a program
 * (MAX_ARG_STRLEN), and all of them within SB_ENV_TOTAL_MAX. Texts as the
 * route table's for the same faults. Also a /v1 create's environment. */
int sandbox_env_check(const struct sandbox_env_var *v, size_t n, const char *field,
		      struct sp_err *e)
{
	size_t total = 0;

	if (n > SB_ENV_MAX_VARS)
		return sp_err_field(e, SP_BAD_REQUEST, field, "%s: at most %d variables", field,
				    SB_ENV_MAX_VARS);
	for (size_t i = 0; i < n; i++) {
		size_t klen = strlen(v[i].key), len = klen + 1 + v[i].value_len;
		int ok = klen > 0 &&
			 (v[i].key[0] == '_' || (v[i].key[0] >= 'A' && v[i].key[0] <= 'Z') ||
			  (v[i].key[0] >= 'a' && v[i].key[0] <= 'z'));
		for (size_t k = 1; ok && k < klen; k++) {
			char c = v[i].key[k];
			ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			     (c >= '0' && c <= '9');
		}
		if (!ok)
			return sp_err_field(e, SP_BAD_REQUEST, field,
					    "%s: key '%.64s' must match ^[A-Za-z_][A-Za-z0-9_]*$",
					    field, v[i].key);
		if (memchr(v[i].value, '\0', v[i].value_len))
			return sp_err_field(e, SP_BAD_REQUEST, field,
					    "%s.%.64s: must not contain NUL bytes", field,
					    v[i].key);
		if (len > SB_ENV_VAR_MAX)
			return sp_err_field(e, SP_BAD_REQUEST, field,
					    "%s.%.64s: KEY=value must be at most %d bytes", field,
					    v[i].key, SB_ENV_VAR_MAX);
		total += len;
	}
	if (total > SB_ENV_TOTAL_MAX)
		return sp_err_field(e, SP_BAD_REQUEST, field,
				    "%s: at most %d bytes in all (KEY=value)", field,
				    SB_ENV_TOTAL_MAX);
	return 0;
}

int sandbox_env_of_json(json_object *obj, const char *field, int max, struct sandbox_env_var **v,
			size_t *n, struct sp_err *e)
{
	size_t i = 0;

	*v = NULL;
	*n = 0;
	if (!obj)
		return 0;
	if (!json_object_is_type(obj, json_type_object))
		return sp_err_field(e, SP_BAD_REQUEST, field, "%s: expected an object of strings",
				    field);
	*v = calloc((size_t)json_object_object_length(obj) + 1, sizeof(**v));
	if (!*v)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	json_object_object_foreach(obj, k, val)
	{
		if (max >= 0 && i == (size_t)max)
			break;
		if (!json_object_is_type(val, json_type_string)) {
			free(*v);
			*v = NULL;
			return sp_err_field(e, SP_BAD_REQUEST, field, "%s.%.64s: expected a string",
					    field, k);
		}
		(*v)[i].key = k;
		(*v)[i].value = json_object_get_string(val);
		(*v)[i].value_len = (size_t)json_object_get_string_len(val);
		i++;
	}
	*n = i;
	return 0;
}

/* A sandbox from a warm pool was started before its envVars were known:
 * they go to each command instead, decrypted just for it. */
int sandbox_pooled_env(struct sandbox_ctx *ctx, const struct sandbox *sb, json_object *env,
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

/* The command of rq: sh -c the command (through the wrapper unless
 * no_activity) and its arguments into *argv (allocated: release with
 * free), its env (a pooled sandbox's envVars, the caller's, the marker
 * mvar) into *env (a new array). -1 with e set when they cannot be made. */
static int exec_cmd(struct sandbox_ctx *ctx, const struct sandbox *sb,
		    const struct sandbox_exec_req *rq, const char *mvar, const char ***argv,
		    json_object **env, struct sp_err *e)
{
	size_t n = 0;
	int k;

	for (const char *const *a = rq->args; a && *a; a++)
		n++;
	*env = run_env(ctx, sb, rq->env, rq->nenv, MARKER_VAR, e);
	if (!*env)
		return -1;
	*argv = calloc(n + 6, sizeof(**argv));
	if (!*argv)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	/* sh -c CMD sh ARGS..., or sh -c WRAPPER sandpit CMD ARGS... */
	if (rq->no_activity) {
		k = run_sh(*argv, n + 6, rq->cmd ? rq->cmd : "", "sh", NULL);
	} else {
		k = run_sh(*argv, n + 6, sh_wrapper, "sandpit", NULL);
		(*argv)[k++] = rq->cmd ? rq->cmd : "";
	}
	for (const char *const *a = rq->args; a && *a; a++)
		(*argv)[k++] = *a;
	(*argv)[k] = NULL;
	json_object_array_add(*env, json_object_new_string(mvar));
	return 0;
}

/* The exec went with its container (under gVisor, a command that fills
 * the pids limit can end the whole sandbox: its runtime cannot start the
 * threads it needs): the command is over, and so is the sandbox. */
static int container_ended(struct sandbox_ctx *ctx, struct sandbox *sb, int timed_out,
			   const struct stop_watch *watch, struct sandbox_exec_result *res)
{
	kill_container(ctx, sb, "the container ended under a running command");
	res->timed_out = timed_out;
	res->exit_code = timed_out ? 124 : 137;
	res->stopped = watch->fired;
	return 1;
}

/* Whether the container of a command that ended with code (128 or more)
 * is gone or ending. gVisor answers 128 for a process whose sandbox kernel
 * died under it ("urpc ... WaitPID failed: EOF") a moment before Docker
 * sees the container stop: that code is waited on for up to 2 s (a
 * process cannot be ended by signal 0, only exit 128 itself). */
static int container_gone_under(struct sandbox_ctx *ctx, struct sandbox *sb, int code)
{
	int64_t until = mono_ms() + (code == 128 && strcmp(sb->runtime, "gvisor") == 0 ? 2000 : 0);
	struct timespec ts = { 0, 100 * 1000 * 1000 };

	for (;;) {
		int r = sandbox_container_running(ctx, sb);
		if (r != 1)
			return r == 0;
		if (mono_ms() >= until)
			return 0;
		nanosleep(&ts, NULL);
	}
}

/* After the exec's stream ended: its exit code into res, or, when it
 * still runs (timed out, or the caller went away), its whole process tree
 * killed (the container when that fails); a 400 naming cwd when the
 * runtime or the wrapper refused cwd. 0 done, 1 done and the container is
 * gone with the exec (no activity to record), -1 error. eid NULL: the
 * command ran through the fast path, fast says how it ended (a lost
 * helper: as a command still running). */
static int exec_outcome(struct sandbox_ctx *ctx, struct sandbox *sb,
			const struct sandbox_exec_req *rq, const char *eid,
			const struct sandbox_fast_result *fast, const char *marker, int timed_out,
			const struct stop_watch *watch, struct sandbox_exec_result *res,
			struct sp_err *e)
{
	int code = -1, running = 0;

	if (fast) { /* the fast path: its exit status, or still running */
		code = fast->code;
		running = fast->code < 0;
		timed_out = fast->timed_out;
	} else if (docker_exec_inspect(ctx->dk, eid, &code, &running, e) < 0) {
		if (e->code != SP_NOT_FOUND)
			return -1;
		sp_err_clear(e);
		return container_ended(ctx, sb, timed_out, watch, res);
	}
	if (eid && running && !timed_out && !watch->fired && !still_running(ctx, eid, 2000) &&
	    docker_exec_inspect(ctx->dk, eid, &code, &running, e) < 0)
		return -1; /* the stream can end a moment before the exit is recorded */
	/* a command ended by a signal may have gone with its whole container:
	 * then that, not the code, is the answer */
	if (!running && code >= 128 && container_gone_under(ctx, sb, code))
		return container_ended(ctx, sb, timed_out, watch, res);
	if (running || timed_out || watch->fired) {
		/* timed out, or the caller went away: end the whole process tree */
		if (kill_marked(ctx, sb, marker) < 0 ||
		    (eid ? still_running(ctx, eid, 2000) : fast_still_running(ctx, sb, fast, 2000)))
			kill_container(ctx, sb,
				       timed_out ? "a timed-out command could not be killed"
						 : "an abandoned command could not be killed");
		res->timed_out = timed_out;
		res->exit_code = timed_out ? 124 : 137;
		res->stopped = watch->fired;
		return 0;
	}
	res->exit_code = code < 0 ? 1 : code;
	if (cwd_refused(ctx, sb, watch, code, e))
		return -1;
	/* the wrapper refused a cwd that resolves into /proc; a command of the
	 * caller's own that exits so, silently, is told apart by resolving cwd
	 * once more (only then) */
	if (rq->cwd && !rq->no_activity && !watch->output && code == CWD_PROC_CODE &&
	    cwd_in_proc(ctx, sb, rq->cwd))
		return sp_err_field(e, SP_BAD_REQUEST, "cwd", "cwd: may not be under /proc");
	return 0;
}

int sandbox_exec_run(struct sandbox_ctx *ctx, struct sandbox *sb, const struct sandbox_exec_req *rq,
		     const struct sandbox_exec_io *io, struct sandbox_exec_result *res,
		     struct sp_err *e)
{
	json_object *env = NULL;
	const char **argv = NULL;
	char marker[MARKER_LEN + 1], mvar[64];
	int64_t timeout = rq->timeout_ms > 0 ? rq->timeout_ms : SB_DEFAULT_EXEC_TIMEOUT_MS;
	int rc = -1, done;
	struct stop_watch watch = { .io = io, .rq = rq };
	/* the fast path first (nothing ran when it does not serve); the
	 * watcher does not see its commands (their parent is the helper, not
	 * Docker's), so the fast path keeps the container's expiry ahead of
	 * one while it runs (keep_alive) */
	struct sb_run_io rio = { .timeout_ms = timeout,
				 .on_output = pass_output,
				 .should_stop = watch_stop,
				 .arg = &watch,
				 .fast = 1,
				 .keep_alive = !rq->no_activity };
	struct sb_run_res run;

	memset(res, 0, sizeof(*res));
	if (rq->cmd && memchr(rq->cmd, '\0', rq->cmd_len))
		return sp_err_field(e, SP_BAD_REQUEST, "cmd", "cmd: must not contain NUL bytes");
	if (rq->cwd && (sandbox_path_check("cwd", rq->cwd, e) < 0))
		return -1;
	if (rq->cwd && sandbox_under_proc(rq->cwd))
		return sp_err_field(e, SP_BAD_REQUEST, "cwd", "cwd: may not be under /proc");
	if (sandbox_env_check(rq->env, rq->nenv, "env", e) < 0)
		return -1;
	crypto_random_id(marker, MARKER_LEN);
	snprintf(mvar, sizeof(mvar), MARKER_VAR "=%s", marker);
	if (exec_cmd(ctx, sb, rq, mvar, &argv, &env, e) < 0)
		goto out;
	/* a running command is activity until it ends (plus timeoutMs after) */
	if (!rq->no_activity && sandbox_touch_record(ctx, sb, timeout, e) < 0)
		goto out;
	{
		/* as the sandbox's user, in cwd or the workdir */
		struct sb_cmd cmd = { argv,	  env,	     rq->cwd ? rq->cwd : sb->workdir,
				      SB_AS_USER, rq->input, rq->input_len };
		if (run_start(ctx, sb, &cmd, &rio, &run, e) < 0)
			goto out;
	}
	done = exec_outcome(ctx, sb, rq, run.fast ? NULL : run.eid, run.fast ? &run.f : NULL,
			    marker, run.timed_out, &watch, res, e);
	if (done < 0)
		goto out;
	if (done == 0 && sb->status == SB_RUNNING && !rq->no_activity) {
		struct sp_err ignore;
		sandbox_touch_record(ctx, sb, 0, &ignore);
	}
	rc = 0;
out:
	if (rc == 0 && release_held(&watch) < 0)
		res->stopped = 1; /* the caller refused the held piece */
	res->truncated = watch.truncated;
	buf_free(&watch.held);
	free((void *)argv);
	json_object_put(env);
	return rc;
}
