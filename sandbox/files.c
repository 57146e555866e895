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

#include "../common/buf.h"
#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/utf8.h"
#include "../common/util.h"
#include "../docker/docker.h"

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

/*
 * $1 target dir, $2 target, $3 temporary name, $4 size, $5 mode (octal);
 * stdin holds exactly $4 bytes. Runs as the sandbox user, in the target
 * dir, where the temporary file is made (beside the target: the rename is
 * atomic; a relative name: it never outgrows PATH_MAX where the target
 * does not). head -c stops at an early EOF without a word, so the size is
 * checked (stat; wc -c where stat fails, as coreutils' does under gVisor:
 * busybox wc reads the whole file). A symlink as the target is replaced,
 * never followed (mv would move into a directory it names). Exit 3 the dir
 * cannot be made, 4 the target is a directory, 5 the user may not write
 * (the reason on stderr), 6 fewer bytes came than announced, 7 the
 * folder was removed (by the sandbox) while the write ran: a failure in a
 * folder that is gone — the working folder is no longer the one $1 names
 * (test -ef, a builtin: same device and inode; under gVisor getcwd still
 * answers for an unlinked folder, and a new folder may reuse the inode),
 * as is a step after cd failing with ENOENT (the shells say "No such file
 * or directory", "nonexistent directory", "Directory nonexistent"): in a
 * folder we are in, only its removal makes a name vanish. Neither is a
 * permission or transfer fault. The temporary file goes on
 * any failure; noclobber creates it with O_EXCL.
 */
static const char write_script[] =
	"d=$1 t=$2 f=$3 n=$4 m=$5\n"
	"gone() { [ . -ef \"$d\" ] || exit 7; }\n"
	"fail() { gone; case $1 in *'No such file'*|*onexistent*) exit 7;; esac\n"
	"printf '%s\\n' \"${1##*: }\" >&2; exit 5; }\n"
	"mkdir -p -- \"$d\" 2>/dev/null || [ -d \"$d\" ] || exit 3\n"
	"cd -- \"$d\" 2>/dev/null || { [ -d \"$d\" ] || exit 7; fail 'Permission denied'; }\n"
	"[ -d \"$t\" ] && [ ! -L \"$t\" ] && exit 4\n"
	"trap 'rm -f -- \"$f\" 2>/dev/null' EXIT\n"
	"set -C; umask 077\n"
	"e=$(head -c \"$n\" 2>&1 >\"$f\") || fail \"$e\"\n"
	"s=$(stat -c %s -- \"$f\" 2>/dev/null || wc -c <\"$f\")\n"
	"[ -n \"$s\" ] || exit 7\n" /* the file vanished: so did its folder */
	"[ \"$s\" -eq \"$n\" ] 2>/dev/null || { gone; exit 6; }\n"
	"e=$(chmod -- \"$m\" \"$f\" 2>&1) || fail \"$e\"\n"
	"if [ -L \"$t\" ] && [ -d \"$t\" ]; then e=$(rm -f -- \"$t\" 2>&1) || fail \"$e\"; fi\n"
	"e=$(mv -f -- \"$f\" \"$t\" 2>&1) || fail \"$e\"\n"
	"trap - EXIT\n";

/* $1 dir, $2 temporary name: what a killed write left behind. */
static const char unlink_script[] = "cd -- \"$1\" 2>/dev/null && rm -f -- \"$2\"\n";

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
		if (run_script(ctx, &sb, write_script, args, 0, data ? data : "", len, &c, &code,
			       e) < 0) {
			if (e->code == SP_TIMEOUT && sb.status == SB_RUNNING) {
				/* killed before its trap could run */
				const char *uargs[] = { dir, tmp, NULL };
				struct collect u;
				struct sp_err ignore;
				int ucode;
				collect_init(&u, 1024);
				run_script(ctx, &sb, unlink_script, uargs, 1, NULL, 0, &u, &ucode,
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

/* Sets p to $1 resolved one component at a time by readlink -f (where it
 * works; $1 as given otherwise): gVisor (runsc 20221219) resolves a path
 * through a symlink to "/" as "/" itself (root -> /: root/root is "/", not
 * /root), readlink -f resolves it as the kernel would. The "x" keeps a name
 * that ends in a newline. */
#define RESOLVE_P \
	"p=$1\n"  \
	"r=$(readlink -f -- \"$p\" 2>/dev/null && echo x) && p=${r%?x}\n"

/* $1 path. Exit 3 missing, 4 not a regular file, 5 unreadable. */
static const char read_script[] = RESOLVE_P "[ -e \"$p\" ] || exit 3\n"
					    "[ -f \"$p\" ] || exit 4\n"
					    "[ -r \"$p\" ] || exit 5\n"
					    "exec head -c 10485761 -- \"$p\"\n";

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
	if (run_script(ctx, &sb, read_script, args, 1, NULL, 0, &c, &code, e) < 0)
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

/* $1 dir. Exit 3 missing, 4 not a directory. GNU find gives metadata;
 * elsewhere (busybox) names and types only. Records end with NUL. */
static const char list_script[] = RESOLVE_P
	"[ -e \"$p\" ] || exit 3\n"
	"[ -d \"$p\" ] || exit 4\n"
	"if find \"$p\" -maxdepth 0 -printf '' >/dev/null 2>&1; then\n"
	"  printf 'F\\000'; exec find \"$p\" -mindepth 1 -maxdepth 1 -printf '%y\\t%s\\t%T@\\t%m\\t%f\\000'\n"
	"fi\n"
	"cd -- \"$p\" || exit 5\n"
	"printf 'N\\000'\n"
	"for f in * .*; do\n"
	"  [ \"$f\" = . ] || [ \"$f\" = .. ] && continue\n"
	"  if [ -L \"$f\" ]; then y=l; elif [ -d \"$f\" ]; then y=d; elif [ -f \"$f\" ]; then y=f;\n"
	"  elif [ -e \"$f\" ]; then y=o; else continue; fi\n"
	"  printf '%s\\t%s\\000' \"$y\" \"$f\"\n"
	"done\n";

static const char *type_name(char y)
{
	switch (y) {
	case 'f':
		return "file";
	case 'd':
		return "directory";
	case 'l':
		return "symlink";
	default:
		return "other";
	}
}

static int entry_cmp(const void *a, const void *b)
{
	json_object *x = *(json_object *const *)a, *y = *(json_object *const *)b, *tx, *ty, *nx,
		    *ny;
	int dx, dy;

	json_object_object_get_ex(x, "type", &tx);
	json_object_object_get_ex(y, "type", &ty);
	json_object_object_get_ex(x, "name", &nx);
	json_object_object_get_ex(y, "name", &ny);
	dx = strcmp(json_object_get_string(tx), "directory") == 0;
	dy = strcmp(json_object_get_string(ty), "directory") == 0;
	if (dx != dy)
		return dy - dx;
	return strcmp(json_object_get_string(nx), json_object_get_string(ny));
}

/* Appends one entry parsed from a NUL-terminated record. */
static void add_entry(json_object *arr, char *rec, int full)
{
	json_object *o = json_object_new_object();
	char *f[5] = { 0 };
	int nf = full ? 5 : 2;
	struct buf name;

	for (int i = 0; i < nf - 1; i++) {
		char *tab = strchr(rec, '\t');
		if (!tab) {
			json_object_put(o);
			return;
		}
		f[i] = rec;
		*tab = '\0';
		rec = tab + 1;
	}
	f[nf - 1] = rec;
	/* a name repaired may be 3 times as long (U+FFFD for each bad byte) */
	buf_init(&name, 3 * strlen(f[nf - 1]) + 16);
	if (utf8_sanitize(f[nf - 1], strlen(f[nf - 1]), &name) < 0) {
		buf_free(&name);
		json_object_put(o);
		return;
	}
	json_object_object_add(
		o, "name", json_object_new_string_len(name.data ? name.data : "", (int)name.len));
	buf_free(&name);
	json_object_object_add(o, "type", json_object_new_string(type_name(f[0][0])));
	if (full) {
		long long size = 0;
		double mtime = 0;
		char iso[40];
		parse_ll(f[1], 0, 1LL << 62, &size);
		parse_double(f[2], &mtime);
		iso8601_ms((int64_t)(mtime * 1000), iso, sizeof(iso));
		json_object_object_add(o, "size", json_object_new_int64(size));
		json_object_object_add(o, "mode", json_object_new_string(f[3]));
		json_object_object_add(o, "modifiedAt", json_object_new_string(iso));
	} else {
		json_object_object_add(o, "size", NULL);
		json_object_object_add(o, "mode", NULL);
		json_object_object_add(o, "modifiedAt", NULL);
	}
	json_object_array_add(arr, o);
}

int sandbox_list_files(struct sandbox_ctx *ctx, const char *org, const char *id, const char *path,
		       json_object **out, struct sp_err *e)
{
	struct sandbox sb;
	struct collect c;
	json_object *arr;
	int code = 0, rc = -1, full;
	size_t i;

	if (path && sandbox_path_check("path", path, e) < 0)
		return -1;
	if (sandbox_get_running(ctx, org, id, &sb, e) < 0)
		return -1;
	if (!path)
		path = sb.workdir;
	collect_init(&c, SB_LIST_MAX);
	{
		const char *args[] = { path, NULL };
		if (run_script(ctx, &sb, list_script, args, 0, NULL, 0, &c, &code, e) < 0)
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
	arr = json_object_new_array();
	for (i = 2; i < c.out.len;) {
		size_t n = strlen(c.out.data + i);
		if (n)
			add_entry(arr, c.out.data + i, full);
		i += n + 1;
	}
	json_object_array_sort(arr, entry_cmp);
	*out = json_object_new_object();
	json_object_object_add(*out, "path", json_object_new_string(path));
	json_object_object_add(*out, "entries", arr);
	rc = 0;
out:
	collect_free(&c);
	return rc;
}
