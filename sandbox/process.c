/*
 * Durable processes: the core of /v1 createProcess, getProcess,
 * listProcesses, readOutput and signal (issue 16). Each is one docker exec
 * of the helper (helper.c) in a running sandbox, as its user; the process,
 * its output and its exit status are the helper's, in the sandbox's
 * process tmpfs (/.sandpit/p, spec.c), so nothing is kept here and any
 * worker serves any process. The helper's exit statuses map to the
 * errors below; its JSON is parsed here and checked by the caller.
 *
 * A running durable process is not activity: like a `cmd &` of an exec it
 * keeps no sandbox alive (the watcher counts commands docker exec runs,
 * and the supervisor is no longer one once spawn returns). Each operation
 * on a process is activity, as an exec is. The deadline and the kill of
 * everything at the end hold for supervisors and processes alike.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"
#include "helper/proto.h"
#include "run/run.h"

/* The structural tokens (helper.c, sandbox_helper_json) of the helper's
 * answers: a report has 9 members and an exit of 2 (about 26 tokens); a
 * list at most LIST_MAX (1000) reports; a read's page at most
 * READ_CHUNKS_MAX (4096) chunks of 3 members (8 tokens each); both in
 * sandbox/helper/sandpit-helper.c. */
#define REPORT_TOKENS 64
#define LIST_TOKENS (1000 * 32 + 64)
#define PAGE_TOKENS (4096 * 8 + 64)

/* What the process helper's exit status code means (err: the first line
 * of its stderr): 0 for HX_OK, else -1 with e set to the answer. */
static int helper_refusal(const struct sandbox *sb, int code, const char *err, struct sp_err *e)
{
	switch (code) {
	case HX_OK:
		return 0;
	case HX_NOT_FOUND:
		return sp_err_set(e, SP_NOT_FOUND, "No such process in this sandbox");
	case HX_DROPPED:
		return sp_err_field(
			e, SP_PRECONDITION, "resumeFrom",
			"output_not_retained: output after resumeFrom is no longer kept "
			"(retained: sequences %s)",
			err[0] ? err : "none");
	case HX_LABEL_TAKEN:
		return sp_err_field(e, SP_CONFLICT, "label",
				    "label: another process of this sandbox has this label");
	case HX_EXITED:
		return sp_err_set(e, SP_PRECONDITION, "The process has exited");
	case HX_EXEC:
		return sp_err_field(e, SP_BAD_REQUEST, "cmd", "cmd: %s", err);
	case HX_CWD:
		return sp_err_field(e, SP_BAD_REQUEST, "workingDir",
				    "workingDir: missing, or under /proc");
	case HX_USAGE:
		if (strncmp(err, "unknown operation", 17) != 0)
			break;
		/* a helper older than this sandpit (the sandbox was made before
		 * an upgrade: its volume holds that version's helper) */
		return sp_err_set(e, SP_PRECONDITION,
				  "This sandbox's process helper is older than this sandpit (the "
				  "sandbox was created before an upgrade); create a new sandbox");
	case 126:
	case 127:
		/* the runtime could not start the helper: a sandbox made before
		 * it existed has no /.sandpit-helper */
		return sp_err_set(
			e, SP_PRECONDITION,
			"This sandbox has no process helper (it was created before sandpit "
			"had one); create a new sandbox");
	default:
		break;
	}
	/* killed (137), or a status it never gives: the sandbox's code
	 * interfered with it */
	log_warn("sandbox %s: helper exit %d: %s", sb->id, code, err);
	return sp_err_set(e, SP_UNAVAILABLE,
			  "sandbox %s: its process helper failed (status %d); the sandbox's own "
			  "code may be interfering with it",
			  sb->id, code);
}

/* Runs the helper in the running sandbox org/id and parses its answer: the
 * first line into *out (within out_tokens), the second (when page is not
 * NULL) into *page (within PAGE_TOKENS). The helper's refusals become
 * errors; a helper killed or answering past a bound is SP_UNAVAILABLE. */
static int helper_call(struct sandbox_ctx *ctx, const char *org, const char *id,
		       const char *const *argv, const struct sandbox_process_req *rq,
		       size_t out_max, size_t out_tokens, json_object **out, json_object **page,
		       struct sp_err *e)
{
	struct sandbox sb;
	struct buf o;
	char err[256] = "";
	int code = -1, rc = -1;
	json_object *env = NULL;

	*out = NULL;
	if (page)
		*page = NULL;
	if (sandbox_get_running(ctx, org, id, &sb, e) < 0)
		return -1;
	buf_init(&o, out_max);
	/* a process gets the command env (run_env), an operation on one none */
	if (rq && !(env = run_env(ctx, &sb, rq->env, rq->nenv, NULL, e)))
		goto out;
	if (sandbox_helper_run(ctx, &sb, argv, env, rq ? sb.workdir : NULL, &o, err, sizeof(err),
			       &code, e) < 0)
		goto out;
	{
		struct sp_err ignore;
		sandbox_touch_record(ctx, &sb, 0, &ignore);
	}
	err[strcspn(err, "\n")] = '\0';
	if (helper_refusal(&sb, code, err, e) < 0)
		goto out;
	{
		const char *nl = memchr(o.data ? o.data : "", '\n', o.len);
		size_t first = nl ? (size_t)(nl - o.data) : o.len;
		if (sandbox_helper_json(&sb, argv[0], o.data, first, out_tokens, out, e) < 0)
			goto out;
		if (page && (!nl || sandbox_helper_json(&sb, argv[0], nl + 1, o.len - first - 1,
							PAGE_TOKENS, page, e) < 0)) {
			if (!nl)
				sp_err_set(e, SP_UNAVAILABLE,
					   "sandbox %s: its process helper answered no page",
					   sb.id);
			goto out;
		}
	}
	rc = 0;
out:
	if (rc < 0) {
		json_object_put(*out);
		*out = NULL;
		if (page) {
			json_object_put(*page);
			*page = NULL;
		}
	}
	json_object_put(env);
	buf_free(&o);
	return rc;
}

int sandbox_process_create(struct sandbox_ctx *ctx, const char *org, const char *id,
			   const struct sandbox_process_req *rq, json_object **out,
			   struct sp_err *e)
{
	const char *argv[4103];
	char keep[32], tty[16] = "-";
	size_t n = 0;

	if (rq->cwd && (sandbox_path_check("workingDir", rq->cwd, e) < 0))
		return -1;
	if (rq->cwd && sandbox_under_proc(rq->cwd))
		return sp_err_field(e, SP_BAD_REQUEST, "workingDir",
				    "workingDir: may not be under /proc");
	if (sandbox_env_check(rq->env, rq->nenv, "env", e) < 0)
		return -1;
	snprintf(keep, sizeof(keep), "%d", SB_PROC_RETENTION);
	if (rq->pty)
		snprintf(tty, sizeof(tty), "%ux%u", rq->rows, rq->cols);
	argv[n++] = HC_START;
	argv[n++] = rq->uid;
	argv[n++] = keep;
	argv[n++] = rq->label;
	argv[n++] = rq->session ? rq->session : "";
	argv[n++] = rq->cwd ? rq->cwd : ""; /* "": the workdir */
	argv[n++] = rq->pty ? tty : "-";
	for (const char *const *a = rq->argv; *a; a++) {
		if (n + 1 >= sizeof(argv) / sizeof(argv[0]))
			return sp_err_field(e, SP_BAD_REQUEST, "cmd", "cmd: at most 4096 items");
		argv[n++] = *a;
	}
	argv[n] = NULL;
	return helper_call(ctx, org, id, argv, rq, 65536, REPORT_TOKENS, out, NULL, e);
}

int sandbox_process_get(struct sandbox_ctx *ctx, const char *org, const char *id, const char *puid,
			json_object **out, struct sp_err *e)
{
	const char *argv[] = { HC_GET, puid, NULL };

	return helper_call(ctx, org, id, argv, NULL, 65536, REPORT_TOKENS, out, NULL, e);
}

int sandbox_process_list(struct sandbox_ctx *ctx, const char *org, const char *id,
			 json_object **out, struct sp_err *e)
{
	const char *argv[] = { HC_LIST, NULL };

	return helper_call(ctx, org, id, argv, NULL, 8 * 1024 * 1024, LIST_TOKENS, out, NULL, e);
}

int sandbox_process_read(struct sandbox_ctx *ctx, const char *org, const char *id, const char *puid,
			 int64_t from, int64_t max, json_object **out, json_object **page,
			 struct sp_err *e)
{
	char f[32], m[32];
	const char *argv[] = { HC_READ, puid, f, m, NULL };

	snprintf(f, sizeof(f), "%lld", (long long)from);
	snprintf(m, sizeof(m), "%lld", (long long)max);
	/* base64 of max bytes, plus one whole chunk, plus the framing */
	return helper_call(ctx, org, id, argv, NULL, (size_t)max * 2 + 1024 * 1024, REPORT_TOKENS,
			   out, page, e);
}

int sandbox_process_signal(struct sandbox_ctx *ctx, const char *org, const char *id,
			   const char *puid, int signo, struct sp_err *e)
{
	char s[16];
	const char *argv[] = { HC_SIGNAL, puid, s, NULL };
	json_object *o = NULL;
	int rc;

	snprintf(s, sizeof(s), "%d", signo);
	rc = helper_call(ctx, org, id, argv, NULL, 65536, REPORT_TOKENS, &o, NULL, e);
	json_object_put(o);
	return rc;
}

int sandbox_process_attach(struct sandbox_ctx *ctx, const char *org, const char *id,
			   const char *puid, int64_t from, const struct sandbox_attach_io *io,
			   struct sp_err *e)
{
	struct sandbox sb;
	struct docker_input in = { io->in_peek, io->in_consume, io->wake_fd, io->arg };
	char f[24];
	const char *argv[] = { NULL, HC_ATTACH, puid, f, NULL };
	/* the sandbox's user, never the keeper (the container's own) */
	struct sb_cmd cmd = { .argv = argv, .who = SB_AS_USER };
	struct sb_run_io rio = { .timeout_ms = SB_PROC_ATTACH_MAX_MS,
				 .on_output = io->on_output,
				 .should_stop = io->should_stop,
				 .arg = io->arg,
				 .live = &in };
	struct sb_run_res res;

	if (sandbox_get_running(ctx, org, id, &sb, e) < 0)
		return -1;
	snprintf(f, sizeof(f), "%lld", (long long)from);
	argv[0] = sandbox_helper_path(&sb);
	if (run_start(ctx, &sb, &cmd, &rio, &res, e) < 0)
		return -1;
	{
		struct sp_err ignore;
		sandbox_touch_record(ctx, &sb, 0, &ignore);
	}
	return 0;
}
