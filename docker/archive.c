/*
 * Archive endpoints (put, get, stat, and a get piped into a put) and the
 * tar builder behind put. A get lands in the caller's capped buffer and is
 * aborted the moment the cap is crossed, never buffered whole; a copy
 * passes through a fixed ring. Paths are absolute, free of control bytes,
 * and escaped into the query. The tar builder never writes setuid or
 * setgid bits (RELIABILITY H4; the sticky bit is kept, for shared staging
 * folders) and refuses entry names that climb out with "..".
 */
#include <archive.h>
#include <archive_entry.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "docker_int.h"

/* Starts r as METHOD /containers/{id}/archive?path=PATH, both checked and
 * escaped. r is initialised even when this fails (so it can be cleaned). */
static int archive_req(struct docker_req *r, const char *method, const char *id, const char *path,
		       struct sp_err *e)
{
	docker_req_init(r, method);
	if (docker_check_id(id, "container", e) < 0 || docker_check_path(path, e) < 0 ||
	    docker_req_path(r, e, "/containers/%s/archive", id) < 0 ||
	    docker_req_query(r, "path", path, e) < 0)
		return -1;
	return 0;
}

/* Mapping: invalid id SP_NOT_FOUND; bad path SP_BAD_REQUEST; a missing
 * container or dir 404 SP_NOT_FOUND; Docker's 400 (dir is not a directory,
 * a dir replaced by a file) and 403 (read-only) SP_INTERNAL with Docker's
 * message. */
int docker_archive_put(struct docker_client *c, const char *id, const char *dir, const void *tar,
		       size_t len, struct sp_err *e)
{
	struct docker_req r;
	int rc = -1;

	if (archive_req(&r, "PUT", id, dir, e) < 0 ||
	    docker_req_query(&r, "noOverwriteDirNonDir", "true", e) < 0)
		goto done;
	if (!tar || len == 0) {
		sp_err_set(e, SP_INTERNAL, "archive put needs a tar body");
		goto done;
	}
	r.body = tar;
	r.body_len = len;
	r.ctype = "application/x-tar";
	rc = docker_call(c, &r, NULL, NULL, e);
done:
	docker_req_cleanup(&r);
	return rc;
}

/* Appends the tar of path to out. Mapping: SP_TOO_LARGE once out's cap is
 * crossed (out keeps its old length); a missing container or path 404
 * SP_NOT_FOUND; else as docker_call. */
int docker_archive_get(struct docker_client *c, const char *id, const char *path, struct buf *out,
		       struct sp_err *e)
{
	struct docker_req r;
	size_t had = out->len;
	int rc = -1;

	if (archive_req(&r, "GET", id, path, e) < 0)
		goto done;
	r.out = out;
	rc = docker_call(c, &r, NULL, NULL, e);
	if (rc < 0 && out->len > had) {
		out->len = had;
		out->data[had] = '\0';
	}
done:
	docker_req_cleanup(&r);
	return rc;
}

/* Mapping: as docker_archive_get for the source (a missing one 404
 * SP_NOT_FOUND), as docker_archive_put for the target. */
int docker_archive_copy(struct docker_client *c, const char *src_id, const char *src_path,
			const char *dst_id, const char *dst_dir, int64_t total_ms, int64_t limit,
			struct sp_err *e)
{
	struct docker_req g, p;
	int rc = -1;

	if (archive_req(&g, "GET", src_id, src_path, e) < 0) {
		docker_req_init(&p, "PUT");
		goto done;
	}
	if (archive_req(&p, "PUT", dst_id, dst_dir, e) < 0 ||
	    docker_req_query(&p, "noOverwriteDirNonDir", "true", e) < 0)
		goto done;
	p.ctype = "application/x-tar";
	if (docker_perform_pipe(c, &g, &p, total_ms, limit, e) < 0)
		goto done;
	if (!g.aborted && (g.status < 200 || g.status > 299)) {
		docker_status_err(&g, e);
		goto done;
	}
	if (p.status < 200 || p.status > 299) {
		docker_status_err(&p, e);
		goto done;
	}
	if (g.aborted) {
		sp_err_set(e, SP_INTERNAL, "Docker took the archive before its end");
		goto done;
	}
	rc = 0;
done:
	docker_req_cleanup(&g);
	docker_req_cleanup(&p);
	return rc;
}

struct first_block {
	unsigned char b[512];
	size_t n;
};

static int take_first_block(void *arg, const char *p, size_t n)
{
	struct first_block *f = arg;
	size_t k = sizeof(f->b) - f->n < n ? sizeof(f->b) - f->n : n;

	memcpy(f->b + f->n, p, k);
	f->n += k;
	return f->n == sizeof(f->b); /* 1 stops the transfer */
}

/* An octal tar number field (NUL or space terminated). */
static int tar_octal(const unsigned char *p, size_t n, unsigned *out)
{
	unsigned long v = 0;
	size_t i = 0;

	while (i < n && p[i] == ' ')
		i++;
	if (i == n || p[i] < '0' || p[i] > '7')
		return -1;
	for (; i < n && p[i] >= '0' && p[i] <= '7'; i++) {
		v = v * 8 + (unsigned)(p[i] - '0');
		if (v > 0xffffffffUL)
			return -1;
	}
	*out = (unsigned)v;
	return 0;
}

int docker_archive_owner(struct docker_client *c, const char *id, const char *path,
			 struct docker_owner *out, struct sp_err *e)
{
	struct first_block f = { .n = 0 };
	struct docker_req r;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (archive_req(&r, "GET", id, path, e) < 0)
		goto done;
	r.sink = take_first_block;
	r.sink_arg = &f;
	if (docker_perform(c, NULL, &r, e) < 0)
		goto done;
	if (r.status == 404) {
		sp_err_set(e, SP_NOT_FOUND, "No such container or path: %s", path);
		goto done;
	}
	if (r.status < 200 || r.status > 299) {
		docker_status_err(&r, e);
		goto done;
	}
	rc = 0;
	/* ustar: mode at 100, uid 108, gid 116, type 156 */
	if (f.n < sizeof(f.b) || tar_octal(f.b + 100, 8, &out->mode) < 0 ||
	    tar_octal(f.b + 108, 8, &out->uid) < 0 || tar_octal(f.b + 116, 8, &out->gid) < 0)
		goto done;
	out->type = (char)f.b[156];
	out->mode &= 07777;
done:
	docker_req_cleanup(&r);
	return rc;
}

int docker_stat_decode(const char *hdr, size_t len, struct docker_stat *st, struct sp_err *e)
{
	unsigned char raw[6144];
	size_t rawlen = 0;
	json_object *o = NULL, *v;
	const char *s;

	memset(st, 0, sizeof(*st));
	if (sodium_base642bin(raw, sizeof(raw), hdr, len, NULL, &rawlen, NULL,
			      sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    docker_parse_json((const char *)raw, rawlen, &o, e) < 0)
		return sp_err_set(e, SP_INTERNAL, "Docker's path stat header does not decode");
	s = docker_json_str(o, "name");
	snprintf(st->name, sizeof(st->name), "%s", s ? s : "");
	s = docker_json_str(o, "linkTarget");
	snprintf(st->link_target, sizeof(st->link_target), "%s", s ? s : "");
	if (json_object_object_get_ex(o, "size", &v))
		st->size = json_object_get_int64(v);
	if (json_object_object_get_ex(o, "mode", &v))
		st->mode = (uint32_t)json_object_get_int64(v);
	json_object_put(o);
	return 0;
}

/* Mapping: a missing container or path SP_NOT_FOUND (a HEAD answer carries
 * no message, so the two cannot be told apart); a header that does not
 * decode SP_INTERNAL. */
int docker_archive_stat(struct docker_client *c, const char *id, const char *path,
			struct docker_stat *st, struct sp_err *e)
{
	char hdr[8192];
	struct docker_req r;
	int rc = -1;

	memset(st, 0, sizeof(*st));
	hdr[0] = '\0';
	if (archive_req(&r, "HEAD", id, path, e) < 0)
		goto done;
	r.stat_hdr = hdr;
	r.stat_cap = sizeof(hdr);
	if (docker_perform(c, NULL, &r, e) < 0)
		goto done;
	if (r.status == 404) {
		sp_err_set(e, SP_NOT_FOUND, "No such container or path: %s", path);
		goto done;
	}
	if (r.status != 200) {
		docker_status_err(&r, e);
		goto done;
	}
	rc = docker_stat_decode(hdr, strlen(hdr), st, e);
done:
	docker_req_cleanup(&r);
	return rc;
}

struct tar_sink {
	struct buf *out;
	int too_big;
};

/* libarchive write callback: appends to the capped buffer. Past the cap it
 * drops the bytes and says so in too_big, but never fails the write:
 * libarchive 3.6 leaks its 10 KiB block buffer when the write at
 * archive_write_close fails (found by tests/fuzz/fuzz_tar.c). */
static la_ssize_t tar_write(struct archive *a, void *arg, const void *p, size_t n)
{
	struct tar_sink *sink = arg;

	(void)a;
	if (!sink->too_big && buf_append(sink->out, p, n) < 0)
		sink->too_big = 1;
	return (la_ssize_t)n;
}

/* A relative entry name with no empty, "." or ".." component; only a
 * directory's may end in '/' (a file's would read back as a directory). */
static int entry_name_ok(const char *p, int is_dir)
{
	const char *s = p;

	if (!p || !*p || *p == '/' || (!is_dir && p[strlen(p) - 1] == '/'))
		return 0;
	for (;;) {
		size_t n = strcspn(s, "/");
		if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return 0;
		if (n == 0 && s[0] == '/')
			return 0;
		if (!s[n])
			return 1;
		s += n + 1;
	}
}

/* True when every entry name is ASCII. */
static int names_ascii(const struct docker_tar_entry *ents, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (const char *c = ents[i].path; c && *c; c++)
			if ((unsigned char)*c > 0x7f)
				return 0;
	return 1;
}

/* Maps a libarchive write failure; returns -1. */
static int tar_fail(struct archive *a, const struct tar_sink *sink, struct sp_err *e)
{
	if (sink->too_big)
		return sp_err_set(e, SP_TOO_LARGE, "tar is larger than %zu bytes", sink->out->max);
	return sp_err_set(e, SP_INTERNAL, "tar: %s", archive_error_string(a));
}

/* Appends a ustar/pax tar of ents to out. Mapping: a bad entry
 * SP_BAD_REQUEST (field "path"); out's cap crossed SP_TOO_LARGE (out keeps
 * its old length); a libarchive failure SP_INTERNAL. */
int docker_tar_build(const struct docker_tar_entry *ents, size_t n, struct buf *out,
		     struct sp_err *e)
{
	struct archive *a = archive_write_new();
	struct archive_entry *ae = archive_entry_new();
	struct tar_sink sink = { out, 0 };
	size_t had = out->len;
	int rc = -1;

	if (!a || !ae) {
		sp_err_set(e, SP_INTERNAL, "out of memory");
		goto done;
	}
	/* A non-ASCII name goes into the pax header as the bytes given
	 * (hdrcharset=BINARY). Without it libarchive converts names from the
	 * locale's charset (the process never sets one: ASCII) and fails on
	 * any byte above 0x7f, so a workdir such as /home/été made
	 * sandbox.create fail (found by tests/fuzz/fuzz_tar.c). Docker reads
	 * pax names as bytes. Only then: the option adds a pax header to
	 * every entry. */
	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    (!names_ascii(ents, n) &&
	     archive_write_set_format_option(a, "pax", "hdrcharset", "BINARY") != ARCHIVE_OK) ||
	    archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
	    archive_write_open(a, &sink, NULL, tar_write, NULL) != ARCHIVE_OK) {
		sp_err_set(e, SP_INTERNAL, "tar: %s", archive_error_string(a));
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		const struct docker_tar_entry *t = &ents[i];
		if (!entry_name_ok(t->path, t->is_dir) || (!t->is_dir && t->len && !t->data)) {
			sp_err_field(e, SP_BAD_REQUEST, "path", "invalid tar entry");
			goto done;
		}
		archive_entry_clear(ae);
		archive_entry_set_pathname(ae, t->path);
		archive_entry_set_filetype(ae, t->is_dir ? AE_IFDIR : AE_IFREG);
		archive_entry_set_perm(ae, t->mode & 01777);
		archive_entry_set_uid(ae, t->uid);
		archive_entry_set_gid(ae, t->gid);
		archive_entry_set_mtime(ae, (time_t)t->mtime, 0);
		archive_entry_set_size(ae, t->is_dir ? 0 : (la_int64_t)t->len);
		if (archive_write_header(a, ae) != ARCHIVE_OK ||
		    (!t->is_dir && t->len &&
		     archive_write_data(a, t->data, t->len) != (la_ssize_t)t->len)) {
			tar_fail(a, &sink, e);
			goto done;
		}
	}
	if (archive_write_close(a) != ARCHIVE_OK || sink.too_big) {
		tar_fail(a, &sink, e);
		goto done;
	}
	rc = 0;
done:
	if (ae)
		archive_entry_free(ae);
	if (a)
		archive_write_free(a);
	if (rc < 0 && out->len > had) {
		out->len = had;
		out->data[had] = '\0';
	}
	return rc;
}

int docker_tar_first_file(const void *tar, size_t len, struct buf *out, struct sp_err *e)
{
	struct archive *a = archive_read_new();
	struct archive_entry *ae;
	int rc = -1;

	if (!a)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	archive_read_support_format_tar(a);
	if (archive_read_open_memory(a, tar, len) != ARCHIVE_OK) {
		sp_err_set(e, SP_INTERNAL, "bad tar: %s", archive_error_string(a));
		goto done;
	}
	while (archive_read_next_header(a, &ae) == ARCHIVE_OK) {
		char chunk[16384];
		la_ssize_t n;
		if (archive_entry_filetype(ae) != AE_IFREG)
			continue;
		while ((n = archive_read_data(a, chunk, sizeof(chunk))) > 0)
			if (buf_append(out, chunk, (size_t)n) < 0) {
				sp_err_set(e, SP_TOO_LARGE, "file in tar is too large");
				goto done;
			}
		rc = n < 0 ? sp_err_set(e, SP_INTERNAL, "bad tar data") : 0;
		goto done;
	}
	sp_err_set(e, SP_NOT_FOUND, "no regular file in tar");
done:
	archive_read_free(a);
	return rc;
}
