/*
 * sandbox.exec: runs one command and answers {stdout, stderr, exitCode,
 * timedOut, truncated}. Each stream is capped at 1 MiB; past the cap the
 * output is read and dropped, so the command never blocks on a full pipe.
 * Bytes that are not UTF-8 become U+FFFD; nothing is cut at a NUL. A
 * client that goes away ends the command (checked about once a second).
 */
#include "handlers.h"

#include <string.h>

#include "../common/buf.h"
#include "../common/utf8.h"

#define EXEC_STREAM_MAX (1024 * 1024)

struct exec_out {
	struct buf out, err;
	int truncated;
	struct req *r;
};

static int on_output(void *arg, int stream, const char *data, size_t len)
{
	struct exec_out *o = arg;
	struct buf *b = stream == 2 ? &o->err : &o->out;
	size_t room = b->max - b->len;

	if (len > room) {
		o->truncated = 1;
		len = room;
	}
	if (len)
		buf_append(b, data, len);
	return 0;
}

static int client_gone(void *arg)
{
	struct exec_out *o = arg;

	return req_client_gone(o->r);
}

static json_object *utf8_string(const struct buf *b)
{
	struct buf clean;
	json_object *s;

	buf_init(&clean, 3 * b->len + 16);
	utf8_sanitize(b->data ? b->data : "", b->len, &clean);
	s = json_object_new_string_len(clean.data ? clean.data : "", (int)clean.len);
	buf_free(&clean);
	return s;
}

int h_sandbox_exec(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox_exec_req rq = { 0 };
	struct exec_out o = { .r = h->r };
	struct sandbox_exec_io io = { on_output, client_gone, &o };
	struct sandbox_exec_result res;
	struct sandbox sb;
	json_object *env = NULL;
	int rc = -1;

	rq.cmd = hin_str(in, "cmd", &rq.cmd_len);
	rq.cwd = hin_str(in, "cwd", NULL);
	rq.timeout_ms = hin_i64(in, "timeoutMs", SB_DEFAULT_EXEC_TIMEOUT_MS);
	if (json_object_object_get_ex(in, "env", &env))
		rq.env = env;
	if (sandbox_get_running(h->sb, h->r->org, hin_str(in, "sandboxId", NULL), &sb, e) < 0)
		return -1;
	buf_init(&o.out, EXEC_STREAM_MAX);
	buf_init(&o.err, EXEC_STREAM_MAX);
	if (sandbox_exec_run(h->sb, &sb, &rq, &io, &res, e) < 0)
		goto out;
	*out = json_object_new_object();
	json_object_object_add(*out, "stdout", utf8_string(&o.out));
	json_object_object_add(*out, "stderr", utf8_string(&o.err));
	json_object_object_add(*out, "exitCode", json_object_new_int(res.exit_code));
	json_object_object_add(*out, "timedOut", json_object_new_boolean(res.timed_out));
	json_object_object_add(*out, "truncated", json_object_new_boolean(o.truncated));
	rc = 0;
out:
	buf_free(&o.out);
	buf_free(&o.err);
	return rc;
}
