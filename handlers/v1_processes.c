/*
 * The process operations of the sandbox endpoint (the Docker Sandboxes
 * document's data plane, issue 16), under <endpoint>/v1/processes: exec,
 * createProcess, listProcesses, getProcess, readOutput, signal. The
 * caller is an endpoint credential of this sandbox (handlers/auth.c made
 * sure), its organization in h->r->org.
 *
 * exec runs one command to completion through the same core as the
 * Dokploy face's exec (its kill of the whole tree at the end, its caps);
 * the others go to the helper inside the sandbox (sandbox/process.c),
 * whose answers come from files the sandbox user can write: every member
 * used here is checked and the answer is rebuilt, never passed through.
 * A process's stdin stays open (a pipe, or its PTY) for interact, which
 * sandpit-stream serves (stream/interact.c).
 */
#include "handlers.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "../common/buf.h"
#include "../common/crypto.h"
#include "../common/utf8.h"
#include "../common/util.h"

#define ARGV_MAX 4096
#define LIST_PAGE_DEFAULT 100
#define LIST_PAGE_MAX 1000

/* cmd: a non-empty array of strings (no NUL) as a NULL-terminated argv;
 * *argv is allocated (free it), the strings stay in in. */
static int argv_read(json_object *in, const char ***argv, struct sp_err *e)
{
	json_object *arr;
	size_t n;

	*argv = NULL;
	if (!json_object_object_get_ex(in, "cmd", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		return sp_err_field(e, SP_BAD_REQUEST, "cmd", "cmd: expected an array of strings");
	n = json_object_array_length(arr);
	if (n == 0)
		return sp_err_field(e, SP_BAD_REQUEST, "cmd", "cmd: at least one item");
	if (n > ARGV_MAX)
		return sp_err_field(e, SP_BAD_REQUEST, "cmd", "cmd: at most %d items", ARGV_MAX);
	*argv = calloc(n + 1, sizeof(**argv));
	if (!*argv)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(arr, i);
		const char *s;
		if (!json_object_is_type(v, json_type_string))
			goto bad;
		s = json_object_get_string(v);
		if (strlen(s) != (size_t)json_object_get_string_len(v) || (i == 0 && !*s))
			goto bad;
		(*argv)[i] = s;
		continue;
bad:
		free(*argv);
		*argv = NULL;
		return sp_err_field(e, SP_BAD_REQUEST, "cmd",
				    "cmd: item %zu must be a string without NUL (the first "
				    "not empty)",
				    i);
	}
	return 0;
}

/* The request's env object (absent: none) as the core's list; *v is
 * allocated. */
static int env_read(json_object *in, struct sandbox_env_var **v, size_t *n, struct sp_err *e)
{
	json_object *env = NULL;

	json_object_object_get_ex(in, "env", &env);
	return sandbox_env_of_json(env, "env", -1, v, n, e);
}

/* user: sandpit runs every command as the sandbox's user; naming that
 * user (or none) is fine, any other is refused. */
static int user_check(json_object *in, const struct sandbox *sb, struct sp_err *e)
{
	const char *u = hin_str(in, "user", NULL), *mine = sandbox_run_user(sb->user);

	if (!u || !*u || strcmp(u, mine) == 0)
		return 0;
	return sp_err_field(e, SP_BAD_REQUEST, "user",
			    "user: commands run as the sandbox's user (%s) only", mine);
}

/* --- exec ------------------------------------------------------------------ */

struct capture {
	struct buf out, err;
};

static int capture(void *arg, int stream, const char *data, size_t len)
{
	struct capture *c = arg;

	/* the core caps each stream at output_max, the buffers' size */
	return buf_append(stream == 2 ? &c->err : &c->out, data, len) < 0 ? -1 : 0;
}

static json_object *b64_json(const struct buf *b)
{
	size_t cap = sodium_base64_ENCODED_LEN(b->len, sodium_base64_VARIANT_ORIGINAL);
	char *t = malloc(cap);
	json_object *s;

	if (!t)
		return NULL;
	sodium_bin2base64(t, cap, (const unsigned char *)(b->data ? b->data : ""), b->len,
			  sodium_base64_VARIANT_ORIGINAL);
	s = json_object_new_string(t);
	free(t);
	return s;
}

/* POST <endpoint>/v1/processes/exec: runs cmd (argv, no shell between)
 * to completion; stdout and stderr base64 (the schema's format: byte), at
 * most SB_EXEC_OUTPUT_MAX bytes each (incomplete when more was dropped);
 * it ends at the core's exec timeout (60 s) like the Dokploy face's. */
int v1_processes_exec(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox_exec_req rq = { 0 };
	struct capture c;
	struct sandbox_exec_io io = { capture, NULL, &c };
	struct sandbox_exec_result res;
	struct sandbox sb;
	struct sandbox_env_var *vars = NULL;
	const char **argv = NULL;
	json_object *so, *se;
	int rc = -1;

	buf_init(&c.out, SB_EXEC_OUTPUT_MAX);
	buf_init(&c.err, SB_EXEC_OUTPUT_MAX);
	if (argv_read(in, &argv, e) < 0 || env_read(in, &vars, &rq.nenv, e) < 0)
		goto out;
	if (sandbox_get_running(h->sb, h->r->org, hin_str(in, "sandbox", NULL), &sb, e) < 0 ||
	    user_check(in, &sb, e) < 0)
		goto out;
	/* argv as given, no shell reading it: an empty command is the
	 * wrapper's argv form (sandbox/sh/wrapper.sh; its marker and cwd check
	 * stay) */
	rq.cmd = "";
	rq.cmd_len = 0;
	rq.args = argv;
	rq.env = vars;
	rq.cwd = hin_str(in, "workingDir", NULL);
	rq.output_max = SB_EXEC_OUTPUT_MAX;
	if (rq.cwd && !*rq.cwd)
		rq.cwd = NULL;
	if (sandbox_exec_run(h->sb, &sb, &rq, &io, &res, e) < 0) {
		if (e->field[0] && strcmp(e->field, "cwd") == 0)
			sp_err_field(e, SP_BAD_REQUEST, "workingDir", "workingDir: %s",
				     strchr(e->msg, ':') ? strchr(e->msg, ':') + 2 : e->msg);
		goto out;
	}
	so = b64_json(&c.out);
	se = b64_json(&c.err);
	if (!so || !se) {
		json_object_put(so);
		json_object_put(se);
		sp_err_set(e, SP_INTERNAL, "Out of memory answering the command's output");
		goto out;
	}
	*out = json_object_new_object();
	json_object_object_add(*out, "exitCode", json_object_new_int(res.exit_code));
	json_object_object_add(*out, "stdout", so);
	json_object_object_add(*out, "stderr", se);
	json_object_object_add(*out, "incomplete", json_object_new_boolean(res.truncated));
	rc = 0;
out:
	free(argv);
	free(vars);
	buf_free(&c.out);
	buf_free(&c.err);
	return rc;
}

/* --- the Process resource ---------------------------------------------------- */

static int64_t member_i64(json_object *o, const char *k)
{
	json_object *v;

	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
		return -1;
	return json_object_get_int64(v);
}

/* A string member that is valid UTF-8 of at most max bytes, else NULL. */
static const char *member_str(json_object *o, const char *k, size_t max)
{
	json_object *v;
	const char *s;
	size_t n;

	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	s = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	return n <= max && strlen(s) == n && utf8_valid(s, n) ? s : NULL;
}

/* The helper's report of one process as the document's Process; NULL when
 * the report is not one (the files were tampered with). */
static json_object *process_json(json_object *rep, const char *receipt)
{
	const char *uid = member_str(rep, "uid", SANDBOX_ID_LEN),
		   *label = member_str(rep, "label", SB_PROC_LABEL_MAX),
		   *session = member_str(rep, "session", SB_PROC_SESSION_MAX);
	int64_t pid = member_i64(rep, "pid"), last = member_i64(rep, "last");
	json_object *o, *ex = NULL;
	char name[64];

	if (!uid || !label || !*label || !session || last < 0)
		return NULL;
	json_object_object_get_ex(rep, "exit", &ex);
	snprintf(name, sizeof(name), "processes/%s", uid);
	o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "uid", json_object_new_string(uid));
	if (pid > 0 && pid <= INT32_MAX)
		json_object_object_add(o, "pid", json_object_new_int((int)pid));
	json_object_object_add(o, "session", json_object_new_string(session));
	json_object_object_add(o, "label", json_object_new_string(label));
	json_object_object_add(
		o, "state",
		json_object_new_string(
			ex && json_object_is_type(ex, json_type_object) ? "exited" : "running"));
	json_object_object_add(o, "lastStreamSequence", v1_int64_json(last));
	json_object_object_add(o, "receiptKind", json_object_new_string(receipt));
	if (ex && json_object_is_type(ex, json_type_object)) {
		int64_t code = member_i64(ex, "code");
		json_object_object_add(
			o, "exitCode",
			json_object_new_int(code >= 0 && code <= 255 ? (int)code : 255));
	}
	return o;
}

/* One TerminalSize dimension: an integer; bounded, 1..65535 (else a 400
 * naming it), unbounded, clamped into that range (a PTY has no other). */
static int size_read(json_object *sz, const char *k, int bounded, unsigned *out, struct sp_err *e)
{
	json_object *v;
	int64_t n;

	if (!json_object_object_get_ex(sz, k, &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_int))
		return sp_err_field(e, SP_BAD_REQUEST, "pty", "pty.initialSize.%s: an integer", k);
	n = json_object_get_int64(v);
	if (bounded && (n < 1 || n > 65535))
		return sp_err_field(e, SP_BAD_REQUEST, "pty",
				    "pty.initialSize.%s: 1 to 65535 (bounded)", k);
	*out = n < 1 ? 1 : n > 65535 ? 65535 : (unsigned)n;
	return 0;
}

/* pty: a PtyConfig ({initialSize?: TerminalSize}); default 24 x 80. */
static int pty_read(json_object *pty, struct sandbox_process_req *rq, struct sp_err *e)
{
	json_object *sz = NULL, *b;
	int bounded = 0;

	rq->pty = 1;
	rq->rows = 24;
	rq->cols = 80;
	if (!json_object_is_type(pty, json_type_object))
		return sp_err_field(e, SP_BAD_REQUEST, "pty", "pty: an object ({initialSize})");
	json_object_object_foreach(pty, k, v)
	{
		(void)v;
		if (strcmp(k, "initialSize") != 0)
			return sp_err_field(e, SP_BAD_REQUEST, "pty",
					    "pty: unknown member (only initialSize)");
	}
	if (!json_object_object_get_ex(pty, "initialSize", &sz) || !sz)
		return 0;
	if (!json_object_is_type(sz, json_type_object))
		return sp_err_field(e, SP_BAD_REQUEST, "pty",
				    "pty.initialSize: an object ({rows, cols, bounded})");
	json_object_object_foreach(sz, k2, v2)
	{
		(void)v2;
		if (strcmp(k2, "rows") != 0 && strcmp(k2, "cols") != 0 &&
		    strcmp(k2, "bounded") != 0)
			return sp_err_field(
				e, SP_BAD_REQUEST, "pty",
				"pty.initialSize: unknown member (rows, cols, bounded)");
	}
	if (json_object_object_get_ex(sz, "bounded", &b) && b) {
		if (!json_object_is_type(b, json_type_boolean))
			return sp_err_field(e, SP_BAD_REQUEST, "pty",
					    "pty.initialSize.bounded: a boolean");
		bounded = json_object_get_boolean(b);
	}
	if (size_read(sz, "rows", bounded, &rq->rows, e) < 0 ||
	    size_read(sz, "cols", bounded, &rq->cols, e) < 0)
		return -1;
	return 0;
}

/* POST <endpoint>/v1/processes: 201 with the Process (receiptKind fresh;
 * a replay of the same Idempotency-Key and payload answers the kept one
 * as replay, handlers/dispatch.c). */
int v1_processes_create(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct sandbox_process_req rq = { 0 };
	struct sandbox sb;
	struct sandbox_env_var *vars = NULL;
	const char **argv = NULL;
	char uid[SANDBOX_ID_LEN + 1];
	const char *id = hin_str(in, "sandbox", NULL);
	json_object *made = NULL, *rep = NULL, *pty;
	int rc = -1;

	if (json_object_object_get_ex(in, "pty", &pty) && pty &&
	    !json_object_is_type(pty, json_type_null) && pty_read(pty, &rq, e) < 0)
		return -1;
	if (argv_read(in, &argv, e) < 0 || env_read(in, &vars, &rq.nenv, e) < 0)
		goto out;
	if (sandbox_get_running(h->sb, h->r->org, id, &sb, e) < 0 || user_check(in, &sb, e) < 0)
		goto out;
	crypto_random_id(uid, SANDBOX_ID_LEN);
	rq.argv = argv;
	rq.env = vars;
	rq.uid = uid;
	rq.cwd = hin_str(in, "workingDir", NULL);
	rq.label = hin_str(in, "label", NULL);
	rq.session = hin_str(in, "session", NULL);
	if (!rq.label)
		rq.label = uid; /* the generated default */
	if (sandbox_process_create(h->sb, h->r->org, id, &rq, &made, e) < 0 ||
	    sandbox_process_get(h->sb, h->r->org, id, uid, &rep, e) < 0)
		goto out;
	*out = process_json(rep, "fresh");
	if (!*out) {
		sp_err_set(e, SP_UNAVAILABLE, "The helper's report of the new process is not one");
		goto out;
	}
	rc = 0;
out:
	json_object_put(made);
	json_object_put(rep);
	free(argv);
	free(vars);
	return rc;
}

int v1_processes_get(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	json_object *rep = NULL;

	if (sandbox_process_get(h->sb, h->r->org, hin_str(in, "sandbox", NULL),
				hin_str(in, "process", NULL), &rep, e) < 0)
		return -1;
	*out = process_json(rep, "unspecified");
	json_object_put(rep);
	if (!*out)
		return sp_err_set(e, SP_NOT_FOUND, "No such process in this sandbox");
	return 0;
}

struct proc_item {
	int64_t created;
	json_object *p; /* the Process */
};

static int by_created(const void *a, const void *b)
{
	const struct proc_item *x = a, *y = b;

	if (x->created != y->created)
		return x->created < y->created ? -1 : 1;
	return strcmp(json_object_get_string(json_object_object_get(x->p, "uid")),
		      json_object_get_string(json_object_object_get(y->p, "uid")));
}

/* filter: session=V and state=running|exited */
enum { F_SESSION, F_STATE };
static const char *const filter_fields[] = { "session", "state", NULL };

/* GET <endpoint>/v1/processes: in creation order; pageToken's cursor is
 * the uid of the last one of the page before (v1_conv.c). */
int v1_processes_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *filter = hin_str(in, "filter", NULL), *sbx = hin_str(in, "sandbox", NULL);
	size_t size = v1_page_size(in, LIST_PAGE_DEFAULT, LIST_PAGE_MAX);
	char token[V1_PAGE_CURSOR_MAX + 1], scope[2200];
	struct v1_filter f;
	json_object *rep = NULL, *arr, *page;
	struct proc_item *items = NULL;
	size_t n = 0, start = 0, count;

	if (v1_filter_parse(filter, filter_fields, &f, e) < 0)
		return -1;
	if (f.val[F_STATE] && strcmp(f.val[F_STATE], "running") != 0 &&
	    strcmp(f.val[F_STATE], "exited") != 0)
		return sp_err_field(e, SP_BAD_REQUEST, "filter",
				    "filter: state is running or exited");
	snprintf(scope, sizeof(scope), "%s\n%s", sbx ? sbx : "", filter ? filter : "");
	if (v1_page_cursor(h, in, "listProcesses", scope, token, sizeof(token), e) < 0)
		return -1;
	if (sandbox_process_list(h->sb, h->r->org, sbx, &rep, e) < 0)
		return -1;
	if (!json_object_object_get_ex(rep, "processes", &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		json_object_put(rep);
		return sp_err_set(e, SP_UNAVAILABLE, "The helper's process list is not one");
	}
	count = json_object_array_length(arr);
	items = calloc(count + 1, sizeof(*items));
	if (!items) {
		json_object_put(rep);
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	}
	for (size_t i = 0; i < count; i++) {
		json_object *r = json_object_array_get_idx(arr, i);
		json_object *p = r && json_object_is_type(r, json_type_object)
					 ? process_json(r, "unspecified")
					 : NULL;
		const char *st;
		if (!p)
			continue;
		st = json_object_get_string(json_object_object_get(p, "state"));
		if (!v1_filter_is(&f, F_SESSION,
				  json_object_get_string(json_object_object_get(p, "session"))) ||
		    !v1_filter_is(&f, F_STATE, st)) {
			json_object_put(p);
			continue;
		}
		items[n].created = member_i64(r, "created");
		items[n++].p = p;
	}
	json_object_put(rep);
	qsort(items, n, sizeof(*items), by_created);
	if (token[0]) {
		while (start < n &&
		       strcmp(json_object_get_string(json_object_object_get(items[start].p, "uid")),
			      token) != 0)
			start++;
		if (start == n) {
			for (size_t i = 0; i < n; i++)
				json_object_put(items[i].p);
			free(items);
			return sp_err_field(e, SP_BAD_REQUEST, "pageToken",
					    "pageToken: not a nextPageToken of this list");
		}
		start++;
	}
	*out = json_object_new_object();
	page = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		if (i >= start && i < start + size)
			json_object_array_add(page, items[i].p);
		else
			json_object_put(items[i].p);
	}
	json_object_object_add(*out, "processes", page);
	if (start + size < n) {
		json_object *last = json_object_array_get_idx(page, size - 1);
		char next[V1_PAGE_TOKEN_MAX + 1];
		v1_page_token(h, "listProcesses", scope,
			      json_object_get_string(json_object_object_get(last, "uid")), next,
			      sizeof(next));
		json_object_object_add(*out, "nextPageToken", json_object_new_string(next));
	} else {
		json_object_object_add(*out, "nextPageToken", json_object_new_string(""));
	}
	free(items);
	return 0;
}

/* GET <endpoint>/v1/processes/{process}/output: the chunks after
 * resumeFrom, whole, about maxBytes of data (the first always fits);
 * exited once the process has and nothing retained follows. Output
 * already dropped is failedPrecondition (409). */
int v1_processes_read(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	static const char *const streams[] = { "unspecified", "stdout", "stderr", "pty" };
	int64_t from = hin_i64(in, "resumeFrom", 0), max = hin_i64(in, "maxBytes", 0), next, last;
	json_object *rep = NULL, *page = NULL, *chunks, *arr, *ex = NULL;
	int rc = -1;

	if (max <= 0)
		max = SB_PROC_READ_DEFAULT;
	if (max > SB_PROC_READ_MAX)
		max = SB_PROC_READ_MAX;
	if (sandbox_process_read(h->sb, h->r->org, hin_str(in, "sandbox", NULL),
				 hin_str(in, "process", NULL), from, max, &rep, &page, e) < 0)
		return -1;
	last = member_i64(rep, "last");
	if (!json_object_object_get_ex(page, "chunks", &chunks) ||
	    !json_object_is_type(chunks, json_type_array) || last < 0) {
		sp_err_set(e, SP_UNAVAILABLE, "The helper's output page is not one");
		goto out;
	}
	next = from;
	arr = json_object_new_array();
	for (size_t i = 0; i < json_object_array_length(chunks); i++) {
		json_object *c = json_object_array_get_idx(chunks, i), *o, *d;
		int64_t seq = c ? member_i64(c, "seq") : -1, st = c ? member_i64(c, "stream") : -1;
		if (seq <= next || st < 1 || st > 3 || !json_object_object_get_ex(c, "data", &d) ||
		    !json_object_is_type(d, json_type_string))
			break; /* out of order or not a chunk: the page ends before it */
		o = json_object_new_object();
		json_object_object_add(o, "stream", json_object_new_string(streams[st]));
		json_object_object_add(o, "data", json_object_get(d));
		json_object_object_add(o, "streamSequence", v1_int64_json(seq));
		json_object_array_add(arr, o);
		next = seq;
	}
	*out = json_object_new_object();
	json_object_object_add(*out, "chunks", arr);
	json_object_object_add(*out, "nextResumeFrom", v1_int64_json(next));
	if (json_object_object_get_ex(rep, "exit", &ex) &&
	    json_object_is_type(ex, json_type_object) && next >= last) {
		json_object *x = json_object_new_object();
		const char *reason = member_str(ex, "reason", 64);
		int64_t code = member_i64(ex, "code");
		json_object_object_add(
			x, "exitCode",
			json_object_new_int(code >= 0 && code <= 255 ? (int)code : 255));
		json_object_object_add(x, "reason", json_object_new_string(reason ? reason : ""));
		json_object_object_add(*out, "exited", x);
	}
	rc = 0;
out:
	json_object_put(rep);
	json_object_put(page);
	return rc;
}

/* POST <endpoint>/v1/processes/{process}/signal: to the process's own
 * group (the helper makes one per process); a process that has exited is
 * failedPrecondition. */
int v1_processes_signal(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	static const struct {
		const char *name;
		int signo;
	} sigs[] = { { "term", SIGTERM }, { "kill", SIGKILL }, { "int", SIGINT },
		     { "hup", SIGHUP },	  { "quit", SIGQUIT }, { "usr1", SIGUSR1 },
		     { "usr2", SIGUSR2 } };
	const char *s = hin_str(in, "signal", NULL);
	int signo = 0;

	for (size_t i = 0; s && i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (strcmp(s, sigs[i].name) == 0)
			signo = sigs[i].signo;
	if (!signo)
		return sp_err_field(e, SP_BAD_REQUEST, "signal",
				    "signal: one of term, kill, int, hup, quit, usr1, usr2");
	if (sandbox_process_signal(h->sb, h->r->org, hin_str(in, "sandbox", NULL),
				   hin_str(in, "process", NULL), signo, e) < 0)
		return -1;
	*out = json_object_new_object();
	return 0;
}
