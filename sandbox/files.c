/*
 * Files in a sandbox: write, read, list. Every file operation that touches
 * a caller-named path runs as the sandbox's user inside the container, so a
 * symlink planted by code in the sandbox (ln -s /etc x; write x/passwd)
 * cannot make the API act on a file that user could not: the kernel checks
 * the user's permissions on every component. A write is one exec: the
 * content goes to the script's stdin (read in place from the caller's
 * buffer, never staged anywhere else), into a temporary file in the
 * target's folder, renamed over the target only once every byte arrived, so
 * a broken transfer never leaves a truncated target. Never buffers more than
 * the 10 MiB file cap (+1 byte to detect it); a FIFO or /dev/zero cannot
 * hang a read (only regular files are read, through head -c with a bounded
 * timeout).
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "../common/buf.h"
#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/utf8.h"
#include "../common/util.h"
#include "../docker/docker.h"
#include "helper/proto.h"
#include "sh_programs.h"

#define FILE_OP_TIMEOUT_MS 30000
#define TEMP_PREFIX ".sandpit-write-"

/* Output of a helper script, each stream capped. */
struct collect {
	struct buf out, err;
	int too_big;
};

static int collect_output(void *arg, int stream, const char *data, size_t len)
{
	struct collect *c = arg;
	struct buf *b = stream == 2 ? &c->err : &c->out;

	if (buf_append(b, data, len) < 0) {
		if (b == &c->out) {
			c->too_big = 1;
			return -1;
		}
		/* stderr past its cap is dropped: only its head is a message */
		buf_append_head(b, data, len);
	}
	return 0;
}

/* A file script ended by a signal: the sandbox ended meanwhile (a kill,
 * a stop: "Sandbox is <status>", as the exec path says), or something in
 * it killed the script (retryable). Never the script's own failure. */
static int interrupted(struct sandbox_ctx *ctx, const struct sandbox *sb, int code,
		       struct sp_err *e)
{
	struct sandbox now;
	struct sp_err ignore;

	if (sandbox_load(ctx, sb->org, sb->id, &now, &ignore) == 0 && now.status != SB_RUNNING)
		return sp_err_set(e, SP_PRECONDITION, "Sandbox is %s",
				  sandbox_status_name(now.status));
	return sp_err_set(e, SP_UNAVAILABLE,
			  "The file operation was ended by signal %d in the sandbox; retry",
			  code - 128);
}

/* Runs a helper script as the sandbox user; *code is its exit status. in
 * (may be NULL) is fed to its stdin, in_len bytes read in place. */
static int run_script(struct sandbox_ctx *ctx, struct sandbox *sb, const char *script,
		      const char *const *args, int no_activity, const void *in, size_t in_len,
		      struct collect *c, int *code, struct sp_err *e)
{
	struct sandbox_exec_req rq = { 0 };
	struct sandbox_exec_io io = { collect_output, NULL, c };
	struct sandbox_exec_result res;

	rq.cmd = script;
	rq.cmd_len = strlen(script);
	rq.cwd = "/";
	rq.timeout_ms = FILE_OP_TIMEOUT_MS;
	rq.args = args;
	rq.no_activity = no_activity;
	rq.input = in;
	rq.input_len = in_len;
	if (sandbox_exec_run(ctx, sb, &rq, &io, &res, e) < 0)
		return -1;
	if (res.timed_out)
		return sp_err_set(e, SP_TIMEOUT, "The file operation did not finish within %d s",
				  FILE_OP_TIMEOUT_MS / 1000);
	*code = res.exit_code;
	/* the scripts exit 0 to 7: a status past 128 is a signal's (not
	 * sandpit's own, as it stops reading past the output's cap) */
	if (res.exit_code >= 128 && !c->too_big)
		return interrupted(ctx, sb, res.exit_code, e);
	return 0;
}

static void collect_init(struct collect *c, size_t out_max)
{
	buf_init(&c->out, out_max);
	buf_init(&c->err, 64 * 1024);
	c->too_big = 0;
}

static void collect_free(struct collect *c)
{
	buf_free(&c->out);
	buf_free(&c->err);
}

/* The last line of a helper's stderr, for messages. */
static const char *last_line(struct buf *b)
{
	char *p;

	if (!b->data || !b->len)
		return "";
	while (b->len && (b->data[b->len - 1] == '\n' || b->data[b->len - 1] == '\r'))
		b->data[--b->len] = '\0';
	p = strrchr(b->data, '\n');
	return p ? p + 1 : b->data;
}

/* Splits path into its directory and checks it names a file. */
static int split_path(const char *path, char *dir, size_t cap, struct sp_err *e)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash + 1;
	size_t n = (size_t)(slash - path);

	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return sp_err_field(e, SP_BAD_REQUEST, "path", "Path must point to a file");
	if (n == 0)
		n = 1;
	if (n >= cap)
		return sp_err_field(e, SP_BAD_REQUEST, "path", "path: too long");
	memcpy(dir, path, n);
	dir[n] = '\0';
	return 0;
}

/* The write: sandbox/sh/write.sh (sh_write), its exit codes below; what a
 * killed one left behind goes with sandbox/sh/unlink.sh (sh_unlink). */

/* The decoded size of n bytes of base64 (whitespace \n, \r and ' ' not
 * counted, '=' padding taken off), from the length alone. */
static size_t base64_size(const char *s, size_t n)
{
	size_t pad = 0, chars = 0;

	for (size_t i = 0; i < n; i++)
		if (s[i] != '\n' && s[i] != '\r' && s[i] != ' ')
			chars++;
	for (size_t i = n; i > 0 && pad < 2; i--) {
		if (s[i - 1] == '=')
			pad++;
		else if (s[i - 1] != '\n' && s[i - 1] != '\r' && s[i - 1] != ' ')
			break;
	}
	return chars / 4 * 3 + (chars % 4 ? chars % 4 - 1 : 0) - (chars % 4 ? 0 : pad);
}

int sandbox_file_content(const char *s, size_t n, int base64, unsigned char **bin,
			 const void **data, size_t *size, struct sp_err *e)
{
	size_t got, want = base64 ? base64_size(s, n) : n;

	*bin = NULL;
	*data = s;
	*size = n;
	if (want > SB_FILE_MAX)
		return sp_err_set(e, SP_TOO_LARGE, "File exceeds the %d byte limit", SB_FILE_MAX);
	if (!base64)
		return 0;
	*bin = malloc(want + 3);
	if (!*bin)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	if (sodium_base642bin(*bin, want + 3, s, n, " \r\n", &got, NULL,
			      sodium_base64_VARIANT_ORIGINAL) != 0) {
		free(*bin);
		*bin = NULL;
		return sp_err_field(e, SP_BAD_REQUEST, "content", "content: not valid base64");
	}
	*data = *bin;
	*size = got;
	return 0;
}

int sandbox_write_file(struct sandbox_ctx *ctx, const char *org, const char *id, const char *path,
		       const void *data, size_t len, unsigned mode, struct sandbox_file *out,
		       struct sp_err *e)
{
	struct sandbox sb;
	struct collect c;
	char dir[4097], tmp[sizeof(TEMP_PREFIX) + 16], size[24], octal[8];
	int code = 0, rc = -1;

	if (sandbox_path_check("path", path, e) < 0 || split_path(path, dir, sizeof(dir), e) < 0)
		return -1;
	if (len > SB_FILE_MAX)
		return sp_err_set(e, SP_TOO_LARGE, "File exceeds the %d byte limit", SB_FILE_MAX);
	if (sandbox_get_running(ctx, org, id, &sb, e) < 0)
		return -1;
	memcpy(tmp, TEMP_PREFIX, sizeof(TEMP_PREFIX) - 1);
	crypto_random_id(tmp + sizeof(TEMP_PREFIX) - 1, 16);
	snprintf(size, sizeof(size), "%zu", len);
	snprintf(octal, sizeof(octal), "%o", mode & 0777);
	collect_init(&c, 64 * 1024);
	{
		const char *args[] = { dir, path, tmp, size, octal, NULL };
		if (run_script(ctx, &sb, sh_write, args, 0, data ? data : "", len, &c, &code, e) <
		    0) {
			if (e->code == SP_TIMEOUT && sb.status == SB_RUNNING) {
				/* killed before its trap could run */
				const char *uargs[] = { dir, tmp, NULL };
				struct collect u;
				struct sp_err ignore;
				int ucode;
				collect_init(&u, 1024);
				run_script(ctx, &sb, sh_unlink, uargs, 1, NULL, 0, &u, &ucode,
					   &ignore);
				collect_free(&u);
			}
			goto out;
		}
	}
	switch (code) {
	case 0:
		break;
	case 3:
		sp_err_field(e, SP_BAD_REQUEST, "path", "Unable to create directory %s", dir);
		goto out;
	case 4:
		sp_err_field(e, SP_BAD_REQUEST, "path", "Path must point to a file");
		goto out;
	case 7:
		sp_err_field(
			e, SP_CONFLICT, "path",
			"The folder of %s was removed while it was written; nothing was written",
			path);
		goto out;
	case 6:
		sp_err_set(e, SP_UNAVAILABLE,
			   "The file's content did not reach the sandbox whole; "
			   "nothing was written");
		goto out;
	default:
		sp_err_field(e, SP_FORBIDDEN, "path", "Unable to write %s: %s", path,
			     last_line(&c.err)[0] ? last_line(&c.err) : "permission denied");
		goto out;
	}
	str_copy(out->path, sizeof(out->path), path);
	out->size = (int64_t)len;
	rc = 0;
out:
	collect_free(&c);
	return rc;
}

/* The read: sandbox/sh/read.sh (sh_read). Exit 3 missing, 4 not a regular
 * file, 5 unreadable. */

int sandbox_read_file(struct sandbox_ctx *ctx, const char *org, const char *id, const char *path,
		      struct buf *content, struct sp_err *e)
{
	struct sandbox sb;
	struct collect c;
	const char *args[] = { path, NULL };
	int code = 0, rc = -1;

	if (sandbox_path_check("path", path, e) < 0)
		return -1;
	if (sandbox_get_running(ctx, org, id, &sb, e) < 0)
		return -1;
	collect_init(&c, SB_FILE_MAX);
	if (run_script(ctx, &sb, sh_read, args, 1, NULL, 0, &c, &code, e) < 0)
		goto out;
	if (c.too_big) {
		sp_err_set(e, SP_TOO_LARGE, "File exceeds the %d byte limit", SB_FILE_MAX);
		goto out;
	}
	switch (code) {
	case 0:
		break;
	case 3:
		sp_err_field(e, SP_NOT_FOUND, "path", "File not found");
		goto out;
	case 4:
		sp_err_field(e, SP_BAD_REQUEST, "path", "Path is not a regular file");
		goto out;
	default:
		sp_err_field(e, SP_FORBIDDEN, "path", "Unable to read %s: %s", path,
			     last_line(&c.err)[0] ? last_line(&c.err) : "permission denied");
		goto out;
	}
	/* hand the bytes over without copying */
	buf_free(content);
	*content = c.out;
	buf_init(&c.out, 0);
	rc = 0;
out:
	collect_free(&c);
	return rc;
}

/* The listing: sandbox/sh/list.sh (sh_list). Exit 3 missing, 4 not a
 * directory. GNU find gives metadata; elsewhere (busybox) names and types
 * only. Records end with NUL. */

static enum sandbox_file_type type_of(char y)
{
	switch (y) {
	case 'f':
		return SB_FILE_REGULAR;
	case 'd':
		return SB_FILE_DIRECTORY;
	case 'l':
		return SB_FILE_SYMLINK;
	default:
		return SB_FILE_OTHER;
	}
}

/* Directories first, then by name (bytes). */
static int entry_cmp(const void *a, const void *b)
{
	const struct sandbox_file_entry *x = a, *y = b;
	int dx = x->type == SB_FILE_DIRECTORY, dy = y->type == SB_FILE_DIRECTORY;

	if (dx != dy)
		return dy - dx;
	return strcmp(x->name, y->name);
}

/* Fills *o from one NUL-terminated record; 0, or -1 to leave it out (a
 * malformed record) or on no memory. */
static int parse_entry(struct sandbox_file_entry *o, char *rec, int full)
{
	char *f[5] = { 0 };
	int nf = full ? 5 : 2;
	struct buf name;

	memset(o, 0, sizeof(*o));
	for (int i = 0; i < nf - 1; i++) {
		char *tab = strchr(rec, '\t');
		if (!tab)
			return -1;
		f[i] = rec;
		*tab = '\0';
		rec = tab + 1;
	}
	f[nf - 1] = rec;
	/* a name repaired may be 3 times as long (U+FFFD for each bad byte) */
	buf_init(&name, 3 * strlen(f[nf - 1]) + 16);
	if (utf8_sanitize(f[nf - 1], strlen(f[nf - 1]), &name) < 0) {
		buf_free(&name);
		return -1;
	}
	o->name = buf_take(&name, NULL);
	if (!o->name)
		return -1;
	o->type = type_of(f[0][0]);
	if (full) {
		long long size = 0;
		double mtime = 0;
		parse_ll(f[1], 0, 1LL << 62, &size);
		parse_double(f[2], &mtime);
		o->has_stat = 1;
		o->size = size;
		str_copy(o->mode, sizeof(o->mode), f[3]);
		o->modified_at = (int64_t)(mtime * 1000);
	}
	return 0;
}

/* Where the image's find cannot give metadata (busybox), the helper's ls
 * does: each entry's size, mode and modification time, by name. Nothing
 * changes when the helper cannot answer (the seed's name-only listing). */
static void helper_stats(struct sandbox_ctx *ctx, const struct sandbox *sb, const char *path,
			 struct sandbox_file_list *l)
{
	char max[24];
	const char *argv[] = { HC_LS, path, "0", max, NULL };
	json_object *rep = NULL, *ents;
	struct sp_err e;

	snprintf(max, sizeof(max), "%zu", l->n);
	if (!l->n || sandbox_files_json(ctx, sb->org, sb->id, argv, NULL, 0, SB_LIST_MAX * 2u,
					l->n * 16 + 64, &rep, &e) < 0)
		return;
	if (json_object_object_get_ex(rep, "entries", &ents) &&
	    json_object_is_type(ents, json_type_array))
		for (size_t i = 0; i < json_object_array_length(ents); i++) {
			json_object *hi = json_object_array_get_idx(ents, i), *v;
			const char *hp, *name;
			int64_t size, mode, mtime;
			if (!json_object_object_get_ex(hi, "path", &v) ||
			    !(hp = json_object_get_string(v)) ||
			    !json_object_object_get_ex(hi, "mtime", &v))
				continue;
			mtime = json_object_get_int64(v);
			size = json_object_object_get_ex(hi, "size", &v) ? json_object_get_int64(v)
									 : -1;
			mode = json_object_object_get_ex(hi, "mode", &v) ? json_object_get_int64(v)
									 : -1;
			name = strrchr(hp, '/') ? strrchr(hp, '/') + 1 : hp;
			if (size < 0 || mode < 0 || mode > 0777 || mtime < 0)
				continue;
			for (size_t k = 0; k < l->n; k++)
				if (!l->entries[k].has_stat &&
				    strcmp(l->entries[k].name, name) == 0) {
					l->entries[k].has_stat = 1;
					l->entries[k].size = size;
					snprintf(l->entries[k].mode, sizeof(l->entries[k].mode),
						 "%o", (unsigned)mode);
					l->entries[k].modified_at = mtime;
					break;
				}
		}
	json_object_put(rep);
}

void sandbox_file_list_free(struct sandbox_file_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->entries[i].name);
	free(l->entries);
	l->entries = NULL;
	l->n = 0;
}

int sandbox_list_files(struct sandbox_ctx *ctx, const char *org, const char *id, const char *path,
		       struct sandbox_file_list *out, struct sp_err *e)
{
	struct sandbox sb;
	struct collect c;
	int code = 0, rc = -1, full;
	size_t i, count = 0;

	memset(out, 0, sizeof(*out));
	if (path && sandbox_path_check("path", path, e) < 0)
		return -1;
	if (sandbox_get_running(ctx, org, id, &sb, e) < 0)
		return -1;
	if (!path)
		path = sb.workdir;
	collect_init(&c, SB_LIST_MAX);
	{
		const char *args[] = { path, NULL };
		if (run_script(ctx, &sb, sh_list, args, 0, NULL, 0, &c, &code, e) < 0)
			goto out;
	}
	if (code == 3) {
		sp_err_field(e, SP_NOT_FOUND, "path", "Directory not found");
		goto out;
	}
	if (code == 4) {
		sp_err_field(e, SP_BAD_REQUEST, "path", "Path is not a directory");
		goto out;
	}
	if (code != 0 || c.out.len < 2) {
		sp_err_field(e, c.too_big ? SP_TOO_LARGE : SP_FORBIDDEN, "path",
			     c.too_big ? "The directory listing exceeds %d bytes"
				       : "Unable to list files",
			     SB_LIST_MAX);
		goto out;
	}
	full = c.out.data[0] == 'F';
	for (i = 2; i < c.out.len; i += strlen(c.out.data + i) + 1)
		count++;
	out->entries = calloc(count + 1, sizeof(*out->entries));
	if (!out->entries) {
		sp_err_set(e, SP_INTERNAL, "out of memory");
		goto out;
	}
	for (i = 2; i < c.out.len;) {
		size_t n = strlen(c.out.data + i);
		if (n && parse_entry(&out->entries[out->n], c.out.data + i, full) == 0)
			out->n++;
		i += n + 1;
	}
	if (!full)
		helper_stats(ctx, &sb, path, out);
	qsort(out->entries, out->n, sizeof(*out->entries), entry_cmp);
	str_copy(out->path, sizeof(out->path), path);
	rc = 0;
out:
	if (rc < 0)
		sandbox_file_list_free(out);
	collect_free(&c);
	return rc;
}
