/*
 * Fuzz target: tar handling (docker/archive.c). The first byte's low bit
 * picks one of two modes.
 *   read: the rest is a tar (as Docker's archive answer would be) handed
 *     to docker_tar_first_file with a fuzzer-chosen output cap. Checks:
 *     no crash or leak, the cap holds, a failure is one of the mapped
 *     codes.
 *   round trip: entries (names, kinds, modes, owners, times, content) are
 *     derived from the input and built with docker_tar_build into a buffer
 *     that already holds a few bytes. Checks: a bad entry name is refused
 *     as SP_BAD_REQUEST on "path" and only then; a failed build leaves the
 *     buffer as it was; a built tar reads back (libarchive, in this file)
 *     as the same entries, in order, with no setuid or setgid bit; and
 *     docker_tar_first_file gives back the first regular file's bytes
 *     exactly, and SP_TOO_LARGE with a cap one byte short.
 */
#include <archive.h>
#include <archive_entry.h>
#include <string.h>

#include "common/buf.h"
#include "docker/docker.h"
#include "tests/fuzz/fuzz.h"

#define MAX_ENTS 6
#define PREFIX "pre"

static void read_mode(struct fuzz_in *in)
{
	size_t cap = fuzz_u16(in);
	struct buf out;
	struct sp_err e;
	int rc;

	buf_init(&out, cap);
	sp_err_clear(&e);
	rc = docker_tar_first_file(in->p, in->n, &out, &e);
	FUZZ_CHECK(out.len <= cap);
	if (rc < 0)
		FUZZ_CHECK(e.code == SP_TOO_LARGE || e.code == SP_INTERNAL ||
			   e.code == SP_NOT_FOUND);
	else
		FUZZ_CHECK(rc == 0 && e.code == SP_OK);
	buf_free(&out);
}

/* The builder's rule, restated: relative, no empty, "." or ".." part, a
 * trailing '/' for a directory only. */
static int name_ok(const char *p, int is_dir)
{
	const char *s = p;

	if (!*p || *p == '/' || (!is_dir && p[strlen(p) - 1] == '/'))
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

struct ent {
	struct docker_tar_entry t;
	char name[300];
};

/* Fills e from the input; names are C strings (a NUL byte ends one). */
static void make_entry(struct fuzz_in *in, struct ent *x, size_t i)
{
	unsigned flags = fuzz_byte(in);
	size_t got, nlen;
	const uint8_t *p;

	memset(x, 0, sizeof(*x));
	x->t.is_dir = flags & 1;
	switch ((flags >> 1) & 3) {
	case 0: /* a short plain name */
		snprintf(x->name, sizeof(x->name), "d%zu/f%zu", i, i);
		break;
	case 1: /* a long one: pax extended header */
		snprintf(x->name, sizeof(x->name),
			 "%0120zu/a-long-directory-name-that-needs-a-pax-header/%zu", i, i);
		break;
	default: /* the fuzzer's bytes */
		nlen = fuzz_byte(in);
		p = fuzz_take(in, nlen, &got);
		memcpy(x->name, p, got);
		x->name[got] = '\0';
		break;
	}
	x->t.path = x->name;
	x->t.mode = fuzz_u16(in);
	x->t.uid = flags & 0x10 ? (unsigned)fuzz_u16(in) << 8 : fuzz_byte(in);
	x->t.gid = flags & 0x20 ? (unsigned)fuzz_u16(in) << 8 : fuzz_byte(in);
	x->t.mtime = (int64_t)(int16_t)fuzz_u16(in) * (flags & 0x40 ? 86400 * 30 : 1);
	if (!x->t.is_dir) {
		x->t.len = fuzz_u16(in) % 4096;
		x->t.data = fuzz_take(in, x->t.len, &got);
		x->t.len = got;
		if (flags & 0x80) { /* an empty file given as NULL data */
			x->t.data = NULL;
			x->t.len = 0;
		}
	}
}

/* Reads the built tar back and compares it with the entries. */
static void check_readback(const void *tar, size_t len, const struct ent *ents, size_t n)
{
	struct archive *a = archive_read_new();
	struct archive_entry *ae;
	char chunk[4096];

	FUZZ_CHECK(a);
	archive_read_support_format_tar(a);
	FUZZ_CHECK(archive_read_open_memory(a, tar, len) == ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		const struct docker_tar_entry *t = &ents[i].t;
		const char *name;
		size_t nl, tl = strlen(t->path), have = 0;
		la_ssize_t k;

		FUZZ_CHECK(archive_read_next_header(a, &ae) == ARCHIVE_OK);
		name = archive_entry_pathname(ae);
		FUZZ_CHECK(name);
		/* a directory may come back with a trailing '/' */
		nl = strlen(name);
		if (t->is_dir && nl == tl + 1 && name[tl] == '/')
			nl--;
		FUZZ_CHECK(nl == tl && memcmp(name, t->path, tl) == 0);
		FUZZ_CHECK(archive_entry_filetype(ae) == (t->is_dir ? AE_IFDIR : AE_IFREG));
		FUZZ_CHECK((archive_entry_perm(ae) & 06000) == 0);
		FUZZ_CHECK(archive_entry_perm(ae) == (t->mode & 01777));
		FUZZ_CHECK(archive_entry_uid(ae) == t->uid && archive_entry_gid(ae) == t->gid);
		FUZZ_CHECK(archive_entry_mtime(ae) == t->mtime);
		FUZZ_CHECK(archive_entry_size(ae) == (t->is_dir ? 0 : (la_int64_t)t->len));
		while ((k = archive_read_data(a, chunk, sizeof(chunk))) > 0) {
			FUZZ_CHECK(have + (size_t)k <= t->len);
			FUZZ_CHECK(memcmp(chunk, (const char *)t->data + have, (size_t)k) == 0);
			have += (size_t)k;
		}
		FUZZ_CHECK(k == 0);
		FUZZ_CHECK(have == (t->is_dir ? 0 : t->len));
	}
	FUZZ_CHECK(archive_read_next_header(a, &ae) == ARCHIVE_EOF);
	archive_read_free(a);
}

static void round_trip(struct fuzz_in *in)
{
	unsigned capsel = fuzz_byte(in);
	size_t n = 1 + fuzz_byte(in) % MAX_ENTS, cap, had = sizeof(PREFIX) - 1;
	struct docker_tar_entry ts[MAX_ENTS];
	struct ent ents[MAX_ENTS];
	const struct docker_tar_entry *first = NULL;
	struct buf out, file;
	struct sp_err e;
	int names_ok = 1, rc;

	for (size_t i = 0; i < n; i++) {
		make_entry(in, &ents[i], i);
		ts[i] = ents[i].t;
		names_ok &= name_ok(ents[i].name, ents[i].t.is_dir);
		if (!first && !ts[i].is_dir)
			first = &ents[i].t;
	}
	cap = capsel == 255 ? ((size_t)1 << 22) : had + (size_t)capsel * 256;
	buf_init(&out, cap);
	FUZZ_CHECK(buf_append(&out, PREFIX, had) == 0);
	sp_err_clear(&e);
	rc = docker_tar_build(ts, n, &out, &e);
	if (rc < 0) {
		/* a bad name, or the cap crossed (never with room enough) */
		int expected = e.code == SP_BAD_REQUEST
				       ? !names_ok && strcmp(e.field, "path") == 0
				       : e.code == SP_TOO_LARGE && cap < ((size_t)1 << 22);
		if (!expected)
			fprintf(stderr, "build refused: code %d: %s\n", e.code, e.msg);
		FUZZ_CHECK(expected);
		FUZZ_CHECK(out.len == had && memcmp(out.data, PREFIX, had) == 0);
		FUZZ_CHECK(out.data[had] == '\0');
		buf_free(&out);
		return;
	}
	FUZZ_CHECK(names_ok);
	FUZZ_CHECK(memcmp(out.data, PREFIX, had) == 0);
	check_readback(out.data + had, out.len - had, ents, n);

	sp_err_clear(&e);
	buf_init(&file, first ? first->len : 0);
	rc = docker_tar_first_file(out.data + had, out.len - had, &file, &e);
	if (!first) {
		FUZZ_CHECK(rc < 0 && e.code == SP_NOT_FOUND);
	} else {
		FUZZ_CHECK(rc == 0);
		FUZZ_CHECK(file.len == first->len);
		FUZZ_CHECK(first->len == 0 || memcmp(file.data, first->data, first->len) == 0);
		if (first->len > 0) {
			buf_free(&file);
			buf_init(&file, first->len - 1);
			sp_err_clear(&e);
			FUZZ_CHECK(docker_tar_first_file(out.data + had, out.len - had, &file, &e) <
				   0);
			FUZZ_CHECK(e.code == SP_TOO_LARGE);
		}
	}
	buf_free(&file);
	buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };

	if (fuzz_byte(&in) & 1)
		round_trip(&in);
	else
		read_mode(&in);
	return 0;
}
