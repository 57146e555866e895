/*
 * The file operations of the sandbox endpoint (issue 16), under
 * <endpoint>/v1/files: list, stat, readFile, writeFile, mkdir, move,
 * remove, exactly as the Docker Sandboxes document states them. Each is
 * one call of the helper inside the sandbox as its user
 * (sandbox/files_v1.c); its answers come from a program the sandbox's
 * code could replace the inputs of, so every FileInfo is checked and
 * rebuilt here. readFile answers raw bytes with an exact Content-Length,
 * writeFile takes a raw body; both up to the unary cap (10 MiB,
 * SB_FILE_UNARY_MAX), beyond which download and upload serve
 * (handlers/v1_transfer.c).
 */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/utf8.h"
#include "../common/util.h"
#include "../sandbox/helper/proto.h"

#define LIST_PAGE_DEFAULT 100
#define LIST_PAGE_MAX 1000
#define INFO_ANSWER_MAX (64 * 1024)
/* The structural tokens (sandbox_helper_json) a helper answer may hold:
 * a FileInfo is 13 ({, 5 commas, 6 colons, and the comma before the
 * next); {"info":…} and the small answers well under 64; rm shows at most
 * 1000 paths (REMOVE_SHOWN in sandbox/helper/files.c), 2 each. */
#define LIST_ENTRY_TOKENS 16
#define SMALL_ANSWER_TOKENS 64
#define REMOVE_ANSWER_TOKENS 4096

static const char *mstr(json_object *o, const char *k)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int64_t mi64(json_object *o, const char *k)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
		return -1;
	return json_object_get_int64(v);
}

/* A FileInfo rebuilt from the helper's, or NULL when it is not one (or its
 * path is not UTF-8, which JSON cannot carry). */
static json_object *info_json(json_object *hi)
{
	static const char *const types[] = { "regular", "directory", "symlink", "other", NULL };
	const char *path = mstr(hi, "path"), *type = mstr(hi, "type"),
		   *target = mstr(hi, "linkTarget");
	int64_t size = mi64(hi, "size"), mode = mi64(hi, "mode");
	json_object *o;
	int ok = 0;

	for (int i = 0; type && types[i]; i++)
		ok |= strcmp(type, types[i]) == 0;
	if (!ok || !path || !target || size < 0 || mode < 0 || mode > 0777 ||
	    !utf8_valid(path, strlen(path)))
		return NULL;
	if (strcmp(type, "symlink") != 0 || !utf8_valid(target, strlen(target)))
		target = "";
	o = json_object_new_object();
	json_object_object_add(o, "path", json_object_new_string(path));
	json_object_object_add(o, "size", v1_int64_json(size));
	json_object_object_add(o, "mode", json_object_new_int((int)mode));
	json_object_object_add(o, "isDir", json_object_new_boolean(strcmp(type, "directory") == 0));
	json_object_object_add(o, "type", json_object_new_string(type));
	json_object_object_add(o, "linkTarget", json_object_new_string(target));
	return o;
}

/* {"info": FileInfo} of the helper's answer rep, into *out. */
static int info_answer(json_object *rep, json_object **out, struct sp_err *e)
{
	json_object *hi = NULL, *fi;

	json_object_object_get_ex(rep, "info", &hi);
	fi = info_json(hi);
	if (!fi)
		return sp_err_set(e, SP_UNAVAILABLE, "The sandbox's helper answered no FileInfo");
	*out = json_object_new_object();
	json_object_object_add(*out, "info", fi);
	return 0;
}

static const char *sandbox_of(json_object *in)
{
	return hin_str(in, "sandbox", NULL);
}

/* GET <endpoint>/v1/files?path=: a page of the directory's entries by
 * path ascending (the only order); pageToken's cursor is the offset of
 * the next page (v1_conv.c). */
int v1_files_list(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *order = hin_str(in, "orderBy", NULL), *path = hin_str(in, "path", NULL);
	size_t size = v1_page_size(in, LIST_PAGE_DEFAULT, LIST_PAGE_MAX), skip = 0;
	char s[24], m[24], scope[8192];
	const char *argv[] = { HC_LS, path, s, m, NULL };
	json_object *rep = NULL, *ents, *arr, *more;
	int rc = -1;

	if (order && *order && strcmp(order, "path") != 0 && strcmp(order, "path asc") != 0)
		return sp_err_field(e, SP_BAD_REQUEST, "orderBy",
				    "orderBy: only path (ascending) is supported");
	snprintf(scope, sizeof(scope), "%s\n%s", sandbox_of(in) ? sandbox_of(in) : "",
		 path ? path : "");
	if (v1_page_offset(h, in, "listFiles", scope, &skip, e) < 0)
		return -1;
	snprintf(s, sizeof(s), "%zu", skip);
	snprintf(m, sizeof(m), "%zu", size);
	if (sandbox_files_json(h->sb, h->r->org, sandbox_of(in), argv, NULL, 0,
			       size * 32768 + 65536, size * LIST_ENTRY_TOKENS + 64, &rep, e) < 0)
		return -1;
	if (!json_object_object_get_ex(rep, "entries", &ents) ||
	    !json_object_is_type(ents, json_type_array)) {
		sp_err_set(e, SP_UNAVAILABLE, "The sandbox's helper answered no entries");
		goto done;
	}
	arr = json_object_new_array();
	for (size_t i = 0; i < json_object_array_length(ents); i++) {
		json_object *fi = info_json(json_object_array_get_idx(ents, i));
		if (fi)
			json_object_array_add(arr, fi);
	}
	*out = json_object_new_object();
	json_object_object_add(*out, "entries", arr);
	if (json_object_object_get_ex(rep, "more", &more) && json_object_get_boolean(more)) {
		char next[V1_PAGE_TOKEN_MAX + 1];
		snprintf(s, sizeof(s), "%zu", skip + size);
		v1_page_token(h, "listFiles", scope, s, next, sizeof(next));
		json_object_object_add(*out, "nextPageToken", json_object_new_string(next));
	} else {
		json_object_object_add(*out, "nextPageToken", json_object_new_string(""));
	}
	rc = 0;
done:
	json_object_put(rep);
	return rc;
}

/* GET <endpoint>/v1/files/stat?path= */
int v1_files_stat(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *argv[] = { HC_STAT, hin_str(in, "path", NULL), NULL };
	json_object *rep = NULL;
	int rc;

	if (sandbox_files_json(h->sb, h->r->org, sandbox_of(in), argv, NULL, 0, INFO_ANSWER_MAX,
			       SMALL_ANSWER_TOKENS, &rep, e) < 0)
		return -1;
	rc = info_answer(rep, out, e);
	json_object_put(rep);
	return rc;
}

struct read_out {
	struct req *r;
	int gone;
};

/* The head, with the file's exact size, once the helper has said it. */
static int read_begin(void *arg, uint64_t size)
{
	struct read_out *o = arg;
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "Status: 200 OK\r\nContent-Type: application/octet-stream\r\n"
			 "Content-Length: %llu\r\nCache-Control: no-store\r\n"
			 "X-Accel-Buffering: no\r\n\r\n",
			 (unsigned long long)size);

	o->r->status = 200;
	if (FCGX_PutStr(head, n, o->r->fx->out) != n) {
		o->gone = 1;
		return -1;
	}
	return 0;
}

static int read_data(void *arg, const char *p, size_t n)
{
	struct read_out *o = arg;

	if (req_write_bulk(o->r, p, n) < 0) {
		o->gone = 1;
		return -1;
	}
	return 0;
}

/* GET <endpoint>/v1/files/content?path=: the whole file, raw, with its
 * exact Content-Length (the size at the open), streamed as the helper
 * reads it (nginx does not buffer it: X-Accel-Buffering); a file over the
 * unary cap is refused whole. One that changes while read cuts the
 * answer (the client sees fewer bytes than Content-Length said), never a
 * short answer that looks whole. */
int v1_files_read(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	struct read_out o = { h->r, 0 };
	int started = 0;

	(void)out;
	if (!h->stream_ok)
		return sp_err_set(e, SP_UNIMPLEMENTED, "readFile answers raw bytes over HTTP only");
	if (sandbox_files_read_stream(h->sb, h->r->org, sandbox_of(in), hin_str(in, "path", NULL),
				      SB_FILE_UNARY_MAX, read_begin, read_data, &o, &started,
				      e) == 0)
		return 0;
	if (started)
		req_stream_abort(h->r);
	return -1;
}

struct body_src {
	struct req *r;
	long long left;
};

/* The request body's next piece, up to what Content-Length said. */
static long body_in(void *arg, char *buf, size_t cap)
{
	struct body_src *b = arg;
	int n;

	if (b->left <= 0)
		return 0;
	if ((long long)cap > b->left)
		cap = (size_t)b->left;
	if (cap > 1 << 20)
		cap = 1 << 20;
	n = FCGX_GetStr(buf, (int)cap, b->r->fx->in);
	if (n <= 0)
		return 0; /* the body ended early: the helper's put says so */
	b->left -= n;
	return n;
}

/* PUT <endpoint>/v1/files/content?path=&mode=: the raw body replaces the
 * file (mode & 0777, 0644 when 0, no umask). The body (nginx holds it
 * whole, so its Content-Length is known) streams into the helper as it is
 * read, never held whole here; over the unary cap is 413 before a byte of
 * it is read. */
int v1_files_write(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *cl = req_param(h->r, "CONTENT_LENGTH");
	char mode[24], len[24];
	const char *argv[] = { HC_PUT, hin_str(in, "path", NULL), mode, len, NULL };
	struct body_src src = { h->r, 0 };
	json_object *rep = NULL;
	int rc;

	snprintf(mode, sizeof(mode), "%lld", (long long)(hin_i64(in, "mode", 0) & 0777));
	if (*cl && parse_ll(cl, 0, (long long)1 << 40, &src.left) < 0)
		return sp_err_set(e, SP_BAD_REQUEST, "Bad Content-Length");
	if (!*cl) {
		/* no length (a chunked body nginx did not hold): whole, under the cap */
		if (req_read_body(h->r, SB_FILE_UNARY_MAX, e) < 0)
			return -1;
		snprintf(len, sizeof(len), "%zu", h->r->body.len);
		rc = sandbox_files_json(h->sb, h->r->org, sandbox_of(in), argv,
					h->r->body.data ? h->r->body.data : "", h->r->body.len,
					INFO_ANSWER_MAX, SMALL_ANSWER_TOKENS, &rep, e);
	} else {
		if (src.left > SB_FILE_UNARY_MAX)
			return sp_err_set(e, SP_TOO_LARGE, "Request body exceeds the %d byte limit",
					  SB_FILE_UNARY_MAX);
		snprintf(len, sizeof(len), "%lld", src.left);
		rc = sandbox_files_json_stream(h->sb, h->r->org, sandbox_of(in), argv, body_in,
					       &src, INFO_ANSWER_MAX, SMALL_ANSWER_TOKENS, &rep, e);
	}
	if (rc < 0)
		return -1;
	rc = info_answer(rep, out, e);
	json_object_put(rep);
	return rc;
}

/* PUT <endpoint>/v1/files/directories */
int v1_files_mkdir(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	char mode[24];
	json_object *p, *rep = NULL;
	int parents = json_object_object_get_ex(in, "parents", &p) && json_object_get_boolean(p);
	const char *argv[] = { HC_MKDIR, hin_str(in, "path", NULL), mode, parents ? "1" : "0",
			       NULL };

	snprintf(mode, sizeof(mode), "%lld", (long long)(hin_i64(in, "mode", 0) & 0777));
	if (sandbox_files_json(h->sb, h->r->org, sandbox_of(in), argv, NULL, 0, 1024,
			       SMALL_ANSWER_TOKENS, &rep, e) < 0) {
		if (e->code == SP_NOT_FOUND)
			sp_err_field(e, SP_NOT_FOUND, "path",
				     "path: a parent is missing (parents creates it)");
		return -1;
	}
	json_object_put(rep);
	*out = json_object_new_object();
	return 0;
}

/* POST <endpoint>/v1/files/move: one rename, never a copy. */
int v1_files_move(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	const char *argv[] = { HC_MV, hin_str(in, "from", NULL), hin_str(in, "to", NULL), NULL };
	json_object *rep = NULL;

	if (sandbox_files_json(h->sb, h->r->org, sandbox_of(in), argv, NULL, 0, 1024,
			       SMALL_ANSWER_TOKENS, &rep, e) < 0)
		return -1;
	json_object_put(rep);
	*out = json_object_new_object();
	return 0;
}

/* DELETE <endpoint>/v1/files?path=&recursive=: an absent path is fine; a
 * recursive removal that stops answers OK with failedPath set. */
int v1_files_remove(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	json_object *r, *rep = NULL, *done, *arr;
	int rec = json_object_object_get_ex(in, "recursive", &r) && json_object_get_boolean(r);
	const char *argv[] = { HC_RM, hin_str(in, "path", NULL), rec ? "1" : "0", NULL };
	const char *failed;
	int64_t count;

	if (sandbox_files_json(h->sb, h->r->org, sandbox_of(in), argv, NULL, 0, 32 * 1024 * 1024,
			       REMOVE_ANSWER_TOKENS, &rep, e) < 0)
		return -1;
	failed = mstr(rep, "failedPath");
	count = mi64(rep, "completedCount");
	if (!json_object_object_get_ex(rep, "completedPaths", &done) ||
	    !json_object_is_type(done, json_type_array) || !failed || count < 0) {
		json_object_put(rep);
		return sp_err_set(e, SP_UNAVAILABLE, "The sandbox's helper answered no removal");
	}
	arr = json_object_new_array();
	for (size_t i = 0; i < json_object_array_length(done) && i < 1000; i++) {
		json_object *v = json_object_array_get_idx(done, i);
		if (json_object_is_type(v, json_type_string) &&
		    utf8_valid(json_object_get_string(v), strlen(json_object_get_string(v))))
			json_object_array_add(arr, json_object_get(v));
	}
	*out = json_object_new_object();
	json_object_object_add(*out, "completedPaths", arr);
	json_object_object_add(*out, "completedCount", json_object_new_int64(count));
	json_object_object_add(
		*out, "failedPath",
		json_object_new_string(utf8_valid(failed, strlen(failed)) ? failed : ""));
	json_object_put(rep);
	return 0;
}
