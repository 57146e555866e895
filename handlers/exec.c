/*
 * sandbox.exec: runs one command and answers {stdout, stderr, exitCode,
 * timedOut, truncated}. The rules are the core's (sandbox_exec_run): each
 * stream capped at SB_EXEC_OUTPUT_MAX (1 MiB), the env and cwd checks.
 * This face renders: bytes that are not UTF-8 become U+FFFD; nothing is
 * cut at a NUL. A client that goes away ends the command (checked about
 * once a second).
 *
 * Over HTTP the answer goes out while the command runs: at its second
 * piece of stdout the status (200) and `{"stdout":"` are sent, and stdout
 * follows as it comes, escaped in pieces; stderr (kept, capped) and the
 * rest close the object at the end. (Not at the first: kept from when the
 * cwd check was made here; the core now holds back a runtime's refusal of
 * cwd itself.) So a command printing a lot costs
 * about what reading it from Docker costs. Should Docker fail after that
 * first byte, the answer is cut off (the client sees an incomplete
 * answer, never a wrong one). Through MCP the answer is built whole.
 */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/log.h"
#include "../common/utf8.h"
#include "../common/util.h"

struct exec_out {
	struct buf out, err;
	struct req *r;
	int stream_ok;	/* may answer while the command runs */
	int streaming;	/* the status and `{"stdout":"` are out */
	int gone;	/* a streamed write failed: the client went away */
	int pieces;	/* stdout pieces seen */
	struct buf esc; /* an escaped piece on its way out */
};

/* Escapes and sends what out holds (the stdout bytes not yet sent, with a
 * cut UTF-8 sequence kept for the next piece unless final). */
static void stream_out(struct exec_out *o, int final)
{
	size_t used = 0;

	o->esc.len = 0;
	if (utf8_json_escape(o->out.data ? o->out.data : "", o->out.len, final, &o->esc, &used) <
		    0 ||
	    req_stream_write(o->r, o->esc.data, o->esc.len) < 0)
		o->gone = 1;
	memmove(o->out.data, o->out.data + used, o->out.len - used);
	o->out.len -= used;
}

static int on_output(void *arg, int stream, const char *data, size_t len)
{
	struct exec_out *o = arg;

	/* the core caps each stream at SB_EXEC_OUTPUT_MAX, the buffers' size */
	if (stream == 2)
		return buf_append(&o->err, data, len) < 0 ? -1 : 0;
	if (buf_append(&o->out, data, len) < 0)
		return -1;
	o->pieces++;
	if (!o->stream_ok || o->gone || o->pieces < 2)
		return 0;
	if (!o->streaming) {
		/* nginx passes each piece on as it comes, not in 32 KiB buffers,
		 * so a command's lines reach the client (the CLI) as printed */
		str_copy(o->r->headers, sizeof(o->r->headers), "X-Accel-Buffering: no\r\n");
		req_stream_begin(o->r, 200);
		if (req_stream_write(o->r, "{\"stdout\":\"", 11) < 0)
			o->gone = 1;
		o->streaming = 1;
	}
	stream_out(o, 0);
	return 0;
}

static int client_gone(void *arg)
{
	struct exec_out *o = arg;

	return o->gone || req_client_gone(o->r);
}

static json_object *utf8_string(const struct buf *b)
{
	struct buf clean;
	json_object *s;

	buf_init(&clean, 3 * b->len + 16);
	if (utf8_sanitize(b->data ? b->data : "", b->len, &clean) < 0) {
		buf_free(&clean);
		return NULL;
	}
	s = json_object_new_string_len(clean.data ? clean.data : "", (int)clean.len);
	buf_free(&clean);
	return s;
}

/* The end of a streamed answer: the rest of stdout, then the other fields
 * (stderr escaped like stdout). */
static void stream_end(struct exec_out *o, const struct sandbox_exec_result *res)
{
	char tail[128];
	size_t used;
	int n;

	stream_out(o, 1);
	o->esc.len = 0;
	n = snprintf(tail, sizeof(tail), "\",\"exitCode\":%d,\"timedOut\":%s,\"truncated\":%s}\n",
		     res->exit_code, res->timed_out ? "true" : "false",
		     res->truncated ? "true" : "false");
	if (req_stream_write(o->r, "\",\"stderr\":\"", 12) < 0 ||
	    utf8_json_escape(o->err.data ? o->err.data : "", o->err.len, 1, &o->esc, &used) < 0 ||
	    req_stream_write(o->r, o->esc.data, o->esc.len) < 0 ||
	    req_stream_write(o->r, tail, (size_t)n) < 0)
		o->gone = 1;
}

int h_sandbox_exec(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox_exec_req rq = { 0 };
	struct exec_out o = { .r = h->r, .stream_ok = h->stream_ok };
	struct sandbox_exec_io io = { on_output, client_gone, &o };
	struct sandbox_exec_result res;
	struct sandbox sb;
	json_object *env = NULL;
	struct sandbox_env_var *vars = NULL;
	int rc = -1;

	rq.cmd = hin_str(in, "cmd", &rq.cmd_len);
	rq.cwd = hin_str(in, "cwd", NULL);
	rq.timeout_ms = hin_i64(in, "timeoutMs", SB_DEFAULT_EXEC_TIMEOUT_MS);
	rq.output_max = SB_EXEC_OUTPUT_MAX;
	if (sandbox_get_running(h->sb, h->r->org, hin_str(in, "sandboxId", NULL), &sb, e) < 0)
		return -1;
	if (json_object_object_get_ex(in, "env", &env) &&
	    sandbox_env_of_json(env, "env", -1, &vars, &rq.nenv, e) < 0)
		return -1;
	rq.env = vars;
	buf_init(&o.out, SB_EXEC_OUTPUT_MAX);
	buf_init(&o.err, SB_EXEC_OUTPUT_MAX);
	buf_init(&o.esc, 6 * SB_EXEC_OUTPUT_MAX + 16);
	if (sandbox_exec_run(h->sb, &sb, &rq, &io, &res, e) < 0) {
		if (o.streaming) {
			log_warn("exec: %s after the answer began; cutting it off", e->msg);
			req_stream_abort(h->r);
			rc = 0;
		}
		goto out;
	}
	if (o.streaming) {
		stream_end(&o, &res);
		rc = 0;
		goto out;
	}
	{
		json_object *so = utf8_string(&o.out), *se = utf8_string(&o.err);
		if (!so || !se) {
			json_object_put(so);
			json_object_put(se);
			sp_err_set(e, SP_INTERNAL, "Out of memory answering the command's output");
			goto out;
		}
		*out = json_object_new_object();
		json_object_object_add(*out, "stdout", so);
		json_object_object_add(*out, "stderr", se);
	}
	json_object_object_add(*out, "exitCode", json_object_new_int(res.exit_code));
	json_object_object_add(*out, "timedOut", json_object_new_boolean(res.timed_out));
	json_object_object_add(*out, "truncated", json_object_new_boolean(res.truncated));
	rc = 0;
out:
	free(vars);
	buf_free(&o.out);
	buf_free(&o.err);
	buf_free(&o.esc);
	return rc;
}
