/*
 * Unit tests for docker/ that need no daemon: escaping and id checks with
 * hostile input (RELIABILITY H6), the method + path allow-list, the stream
 * demultiplexer fed in every kind of piece (A6), the tar builder read back
 * with libarchive, image reference splitting, the runc check (H3), the
 * refusal of a request outside the allow-list before any I/O, and, through
 * a FAKE one-shot daemon on a unix socket, two answers the real dockerd here
 * cannot give (a pull stream ending in an error object, a corrupt exec
 * stream).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <cmocka.h>

#include "common/log.h"
#include "docker/docker.h"
#include "docker/docker_int.h"

static const char *const hostile[] = {
	"../",	"..",	"../../etc/passwd", "a?b", "a#b", "%2F", "a%2Fb",   "a&b=c",
	"%00",	"a\nb", "a\r\nX: y",	    "a/b", "a b", "",	 ".hidden", "-rm",
	"a\tb", "a\"b",
};

static int only_escaped(const char *s)
{
	for (; *s; s++) {
		if (*s == '%') {
			if (!strchr("0123456789ABCDEF", s[1]) || !strchr("0123456789ABCDEF", s[2]))
				return 0;
			s += 2;
		} else if (
			!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-",
				*s)) {
			return 0;
		}
	}
	return 1;
}

static void test_escape(void **state)
{
	char out[64], *big, *bigout;
	(void)state;

	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		assert_int_equal(docker_escape(hostile[i], out, sizeof(out)), 0);
		assert_true(only_escaped(out));
		assert_null(strchr(out, '/'));
		assert_null(strchr(out, '?'));
		assert_null(strchr(out, '#'));
		assert_null(strchr(out, '&'));
		assert_null(strchr(out, '\n'));
	}
	assert_int_equal(docker_escape("../", out, sizeof(out)), 0);
	assert_string_equal(out, "..%2F");
	assert_int_equal(docker_escape("%2F", out, sizeof(out)), 0);
	assert_string_equal(out, "%252F");
	assert_int_equal(docker_escape("a&b=c", out, sizeof(out)), 0);
	assert_string_equal(out, "a%26b%3Dc");
	assert_int_equal(docker_escape("\xff\n", out, sizeof(out)), 0);
	assert_string_equal(out, "%FF%0A");
	assert_int_equal(docker_escape("a-b_c.d~e", out, sizeof(out)), 0);
	assert_string_equal(out, "a-b_c.d~e");
	/* exact fit and one short */
	assert_int_equal(docker_escape("abc", out, 4), 0);
	assert_int_equal(docker_escape("abc", out, 3), -1);
	assert_int_equal(docker_escape("/", out, 4), 0);
	assert_int_equal(docker_escape("/", out, 3), -1);
	assert_int_equal(docker_escape(NULL, out, sizeof(out)), -1);

	big = malloc(10241);
	bigout = malloc(3 * 10240 + 1);
	assert_non_null(big);
	assert_non_null(bigout);
	for (int i = 0; i < 10240; i++)
		big[i] = "a/?#\n"[i % 5];
	big[10240] = '\0';
	assert_int_equal(docker_escape(big, out, sizeof(out)), -1);
	assert_int_equal(docker_escape(big, bigout, 3 * 10240 + 1), 0);
	assert_true(only_escaped(bigout));
	assert_false(docker_valid_id(big));
	free(big);
	free(bigout);
}

static void test_valid_id(void **state)
{
	char id[130];
	(void)state;

	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++)
		assert_false(docker_valid_id(hostile[i]));
	assert_false(docker_valid_id(NULL));
	assert_true(docker_valid_id("abc"));
	assert_true(docker_valid_id("a"));
	assert_true(docker_valid_id("sandpit-isolated"));
	assert_true(docker_valid_id("a.b_c-D9"));
	assert_true(docker_valid_id(
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
	memset(id, 'a', sizeof(id));
	id[128] = '\0';
	assert_true(docker_valid_id(id));
	id[128] = 'a';
	id[129] = '\0';
	assert_false(docker_valid_id(id));
}

static void test_path_allowed(void **state)
{
	static const char *const ok[][2] = {
		{ "GET", "/version" },
		{ "GET", "/v1.41/version" },
		{ "POST", "/v1.41/containers/create" },
		{ "POST", "/v1.43/containers/create?name=x" },
		{ "POST", "/v1.41/containers/abc/start" },
		{ "POST", "/v1.41/containers/abc/stop" },
		{ "POST", "/v1.41/containers/abc/kill" },
		{ "POST", "/v1.41/containers/abc/pause" },
		{ "POST", "/v1.41/containers/abc/unpause" },
		{ "DELETE", "/v1.41/containers/abc" },
		{ "GET", "/v1.41/containers/abc/json" },
		{ "GET", "/v1.41/containers/json" },
		{ "PUT", "/v1.41/containers/abc/archive" },
		{ "HEAD", "/v1.41/containers/abc/archive" },
		{ "GET", "/v1.41/containers/abc/archive" },
		{ "POST", "/v1.41/containers/abc/exec" },
		{ "POST", "/v1.41/exec/abc/start" },
		{ "GET", "/v1.41/exec/abc/json" },
		{ "POST", "/v1.41/images/create" },
		{ "GET", "/v1.41/images/busybox/json" },
		{ "GET", "/v1.41/images/sandpit-test%2Fbusybox%3Alatest/json" },
		{ "GET", "/v1.41/images/localhost%3A5000%2Fa%2Fb%40sha256%3Aab/json" },
		/* snapshots (sandbox/snapshot.c): commit, and removing their images */
		{ "POST", "/v1.41/commit" },
		{ "DELETE", "/v1.41/images/sandpit-snapshot%3Aabc" },
		{ "POST", "/v1.41/networks/create" },
		{ "GET", "/v1.41/networks" },
		{ "GET", "/v1.41/networks/sandpit-isolated" },
		{ "DELETE", "/v1.41/networks/abc" },
		{ "GET", "/v1.41/volumes?filters=x" },
		{ "POST", "/v1.41/volumes/create" },
		{ "GET", "/v1.41/volumes/sandpit-vol-abc" },
		{ "DELETE", "/v1.41/volumes/sandpit-vol-abc" },
	};
	static const char *const bad[][2] = {
		{ "GET", "/v1.41/containers/abc/attach" },
		{ "POST", "/v1.41/containers/abc/json" },
		{ "GET", "/v1.41/containers/abc/start" },
		{ "DELETE", "/v1.41/images/a/b" },
		{ "DELETE", "/v1.41/images/..%2Fx" },
		{ "POST", "/v1.41/commit/x" },
		{ "POST", "/v1.41/containers/../exec" },
		{ "GET", "/v1.41/containers/../../version/json" },
		{ "GET", "/v1.41/containers/a%2Fb/json" },
		{ "GET", "/v1.41/containers/%2E%2E/json" },
		{ "GET", "/v1.41/containers/%00/json" },
		{ "GET", "/v1.41/containers/a\n/json" },
		{ "GET", "/v1.41/containers/a#/json" },
		{ "GET", "/v1.41/containers//json" },
		{ "GET", "/v1.41/containers/abc/json/" },
		{ "GET", "/v1.41//containers/json" },
		{ "GET", "/v1.41/containers/.abc/json" },
		{ "GET", "/v1.4x/containers/json" },
		{ "GET", "/v1/containers/json" },
		{ "GET", "/v1.41.2/containers/json" },
		{ "GET", "/v1.41" },
		{ "GET", "/v1.41/images/a/b/json" },
		{ "GET", "/v1.41/images/%2E%2E%2Fcontainers%2Fx/json" },
		{ "GET", "/v1.41/images/..%2Fx/json" },
		{ "GET", "/v1.41/images/a%2F%2Fb/json" },
		{ "GET", "/v1.41/images/a%0Ab/json" },
		{ "GET", "/v1.41/images/a%2/json" },
		{ "GET", "/v1.41/images/a%zz/json" },
		{ "POST", "/v1.41/exec/abc/resize" },
		{ "POST", "/v1.41/volumes/prune" },
		{ "GET", "/v1.41/volumes/%2E%2E/json" },
		{ "POST", "/v1.41/swarm/init" },
		{ "POST", "/v1.41/build" },
		{ "get", "/v1.41/containers/json" },
		{ "GET", "v1.41/containers/json" },
		{ "GET", "" },
	};
	char big[11000];
	(void)state;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (!docker_path_allowed(ok[i][0], ok[i][1]))
			fail_msg("refused %s %s", ok[i][0], ok[i][1]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (docker_path_allowed(bad[i][0], bad[i][1]))
			fail_msg("allowed %s %s", bad[i][0], bad[i][1]);
	}
	assert_false(docker_path_allowed(NULL, "/version"));
	assert_false(docker_path_allowed("GET", NULL));
	memcpy(big, "/v1.41/containers/", 18);
	memset(big + 18, 'a', 10000);
	memcpy(big + 10018, "/json", 6);
	assert_false(docker_path_allowed("GET", big));
}

/* --- demux ---------------------------------------------------------------- */

struct sink {
	char out[2][300000];
	size_t len[2];
	int calls;
	int stop_after; /* abort on this call, 0 = never */
};

static int collect(void *arg, int stream, const char *p, size_t n)
{
	struct sink *s = arg;

	assert_true(stream == 1 || stream == 2);
	s->calls++;
	if (s->stop_after && s->calls >= s->stop_after)
		return -1;
	assert_true(s->len[stream - 1] + n <= sizeof(s->out[0]));
	memcpy(s->out[stream - 1] + s->len[stream - 1], p, n);
	s->len[stream - 1] += n;
	return 0;
}

/* Appends one frame to buf at *at. */
static void frame(unsigned char *buf, size_t *at, int stream, const void *p, uint32_t n)
{
	unsigned char *h = buf + *at;

	h[0] = (unsigned char)stream;
	h[1] = h[2] = h[3] = 0;
	h[4] = (unsigned char)(n >> 24);
	h[5] = (unsigned char)(n >> 16);
	h[6] = (unsigned char)(n >> 8);
	h[7] = (unsigned char)n;
	memcpy(h + 8, p, n);
	*at += 8 + n;
}

struct stream_case {
	unsigned char *raw;
	size_t len;
	char *want[2];
	size_t want_len[2];
};

/* A stream of mixed frames: 1-byte frames, empty frames, 64 KiB frames
 * with NUL and invalid UTF-8, a stdin (0) frame. */
static void build_stream(struct stream_case *sc)
{
	static const unsigned char bin[] = { 'x', 0, 0xff, 0xfe, '\n' };
	size_t at = 0;
	unsigned char *big = malloc(65536);

	assert_non_null(big);
	sc->raw = malloc(400000);
	sc->want[0] = malloc(200000);
	sc->want[1] = malloc(200000);
	assert_non_null(sc->raw);
	sc->want_len[0] = sc->want_len[1] = 0;
	for (int i = 0; i < 65536; i++)
		big[i] = (unsigned char)(i * 7 + 3);
#define ADD(st, p, n)                                                                        \
	do {                                                                                 \
		frame(sc->raw, &at, st, p, n);                                               \
		memcpy(sc->want[(st) == 2 ? 1 : 0] + sc->want_len[(st) == 2 ? 1 : 0], p, n); \
		sc->want_len[(st) == 2 ? 1 : 0] += n;                                        \
	} while (0)
	ADD(1, "o", 1);
	ADD(2, "e", 1);
	ADD(1, "", 0);
	ADD(2, big, 65536);
	ADD(1, bin, sizeof(bin));
	ADD(1, big, 65536);
	ADD(2, "", 0);
	ADD(0, "in", 2);
	ADD(2, "tail", 4);
	ADD(1, big + 1, 65535);
#undef ADD
	sc->len = at;
	free(big);
}

static void free_stream(struct stream_case *sc)
{
	free(sc->raw);
	free(sc->want[0]);
	free(sc->want[1]);
}

static void check_split(const struct stream_case *sc, const size_t *pieces, size_t npieces)
{
	struct docker_demux d;
	struct sink *s = calloc(1, sizeof(*s));
	size_t at = 0, k = 0;

	assert_non_null(s);
	docker_demux_init(&d);
	while (at < sc->len) {
		size_t n = pieces[k++ % npieces];
		if (n > sc->len - at)
			n = sc->len - at;
		assert_int_equal(docker_demux_feed(&d, (const char *)sc->raw + at, n, collect, s),
				 0);
		at += n;
	}
	assert_int_equal(s->len[0], sc->want_len[0]);
	assert_int_equal(s->len[1], sc->want_len[1]);
	assert_memory_equal(s->out[0], sc->want[0], sc->want_len[0]);
	assert_memory_equal(s->out[1], sc->want[1], sc->want_len[1]);
	assert_int_equal(d.hdr_have, 0);
	assert_int_equal(d.left, 0);
	free(s);
}

static void test_demux_pieces(void **state)
{
	static const size_t whole[] = { (size_t)-1 };
	static const size_t ones[] = { 1 };
	static const size_t mixed[] = { 1, 65536, 3, 1, 7, 8, 9, 4096, 1, 1, 65535 };
	static const size_t odd[] = { 5, 11, 13 };
	struct stream_case sc;
	(void)state;

	build_stream(&sc);
	check_split(&sc, whole, 1);
	check_split(&sc, ones, 1);
	check_split(&sc, mixed, sizeof(mixed) / sizeof(mixed[0]));
	check_split(&sc, odd, sizeof(odd) / sizeof(odd[0]));
	free_stream(&sc);
}

static void test_demux_truncated_header(void **state)
{
	static const unsigned char h[] = { 1, 0, 0, 0, 0, 0, 0, 3, 'a', 'b', 'c' };
	struct docker_demux d;
	struct sink *s = calloc(1, sizeof(*s));
	(void)state;

	assert_non_null(s);
	docker_demux_init(&d);
	/* a header cut after 5 bytes delivers nothing and waits */
	assert_true(docker_demux_whole(&d));
	assert_int_equal(docker_demux_feed(&d, (const char *)h, 5, collect, s), 0);
	assert_int_equal(s->calls, 0);
	assert_int_equal(d.hdr_have, 5);
	assert_false(docker_demux_whole(&d)); /* a stream ending here was cut */
	assert_int_equal(docker_demux_feed(&d, (const char *)h + 5, 0, collect, s), 0);
	assert_int_equal(docker_demux_feed(&d, (const char *)h + 5, 4, collect, s), 0);
	assert_int_equal(s->len[0], 1);
	assert_false(docker_demux_whole(&d)); /* and here: 2 payload bytes short */
	assert_int_equal(docker_demux_feed(&d, (const char *)h + 9, 2, collect, s), 0);
	assert_int_equal(s->len[0], 3);
	assert_memory_equal(s->out[0], "abc", 3);
	assert_true(docker_demux_whole(&d));
	free(s);
}

static void test_demux_bad_header(void **state)
{
	static const unsigned char bad_stream[] = { 3, 0, 0, 0, 0, 0, 0, 1, 'x' };
	static const unsigned char bad_pad[] = { 1, 0, 1, 0, 0, 0, 0, 1, 'x' };
	static const unsigned char ok_then_bad[] = { 2,	  0,   0,   0,	 0,   0,   0,	2,   'o',
						     'k', 'H', 'T', 'T', 'P', '/', '1', '.', '1' };
	static const unsigned char good[] = { 1, 0, 0, 0, 0, 0, 0, 1, 'x' };
	struct docker_demux d;
	struct sink *s = calloc(1, sizeof(*s));
	(void)state;

	assert_non_null(s);
	docker_demux_init(&d);
	assert_int_equal(
		docker_demux_feed(&d, (const char *)bad_stream, sizeof(bad_stream), collect, s),
		-1);
	assert_int_equal(s->calls, 0);
	/* broken stays broken */
	assert_int_equal(docker_demux_feed(&d, (const char *)good, sizeof(good), collect, s), -1);
	assert_int_equal(s->calls, 0);

	docker_demux_init(&d);
	assert_int_equal(docker_demux_feed(&d, (const char *)bad_pad, sizeof(bad_pad), collect, s),
			 -1);
	assert_int_equal(s->calls, 0);

	/* bad byte arriving 1 byte at a time, after a good frame */
	docker_demux_init(&d);
	int rc = 0;
	for (size_t i = 0; i < sizeof(ok_then_bad) && rc == 0; i++)
		rc = docker_demux_feed(&d, (const char *)ok_then_bad + i, 1, collect, s);
	assert_int_equal(rc, -1);
	assert_int_equal(s->len[1], 2);
	assert_memory_equal(s->out[1], "ok", 2);
	free(s);
}

static void test_demux_stop(void **state)
{
	struct stream_case sc;
	struct docker_demux d;
	struct sink *s = calloc(1, sizeof(*s));
	(void)state;

	assert_non_null(s);
	build_stream(&sc);
	s->stop_after = 3;
	docker_demux_init(&d);
	assert_int_equal(docker_demux_feed(&d, (const char *)sc.raw, sc.len, collect, s), 1);
	assert_int_equal(s->calls, 3);
	free_stream(&sc);
	free(s);
}

/* --- tar ------------------------------------------------------------------ */

static void test_tar_build(void **state)
{
	static const char data[] = { 'h', 'i', 0, '\xff', '\n' };
	const struct docker_tar_entry ents[] = {
		{ "home", 1, 0755, 1000, 1000, NULL, 0, 1700000000 },
		{ "home/user/", 1, 0700, 1000, 1000, NULL, 0, 1700000001 },
		{ "home/user/a.bin", 0, 0644, 1000, 1000, data, sizeof(data), 1700000002 },
		{ "home/user/suid", 0, 04755 | 02000 | 01000, 0, 0, "#!", 2, 1700000003 },
		{ "empty", 0, 0600, 7, 8, NULL, 0, 0 },
	};
	struct archive *a;
	struct archive_entry *ae;
	struct buf out;
	struct sp_err e;
	char got[16];
	size_t i = 0;
	(void)state;

	buf_init(&out, 1 << 20);
	assert_int_equal(docker_tar_build(ents, 5, &out, &e), 0);
	assert_true(out.len >= 512 * 7 && out.len % 512 == 0);
	a = archive_read_new();
	archive_read_support_format_tar(a);
	assert_int_equal(archive_read_open_memory(a, out.data, out.len), ARCHIVE_OK);
	while (archive_read_next_header(a, &ae) == ARCHIVE_OK) {
		assert_true(i < 5);
		/* tar writes directory names with a trailing '/' */
		const char *name = archive_entry_pathname(ae);
		size_t nl = strlen(name), wl = strlen(ents[i].path);
		if (ents[i].is_dir && ents[i].path[wl - 1] != '/') {
			assert_int_equal(nl, wl + 1);
			assert_int_equal(name[wl], '/');
		} else {
			assert_int_equal(nl, wl);
		}
		assert_memory_equal(name, ents[i].path, wl);
		assert_int_equal(archive_entry_filetype(ae), ents[i].is_dir ? AE_IFDIR : AE_IFREG);
		assert_int_equal(archive_entry_perm(ae), ents[i].mode & 01777);
		assert_int_equal(archive_entry_uid(ae), ents[i].uid);
		assert_int_equal(archive_entry_gid(ae), ents[i].gid);
		assert_int_equal(archive_entry_mtime(ae), ents[i].mtime);
		assert_int_equal(archive_entry_size(ae), ents[i].is_dir ? 0 : (int64_t)ents[i].len);
		if (!ents[i].is_dir && ents[i].len) {
			assert_int_equal(archive_read_data(a, got, sizeof(got)),
					 (la_ssize_t)ents[i].len);
			assert_memory_equal(got, ents[i].data, ents[i].len);
		}
		i++;
	}
	assert_int_equal(i, 5);
	archive_read_free(a);
	buf_free(&out);
}

/* Regression (found by tests/fuzz/fuzz_tar.c): a non-ASCII name, such as
 * the workdir /home/été of a sandbox.create, failed the build with "Can't
 * translate pathname" (a 500). It is written as its bytes and reads back
 * the same; an ASCII-only tar stays free of pax headers. */
static void test_tar_non_ascii_name(void **state)
{
	const struct docker_tar_entry ascii = { "home/a.txt", 0, 0644, 0, 0, "hi", 2, 0 };
	const struct docker_tar_entry ents[] = {
		{ "home/\xc3\xa9t\xc3\xa9", 1, 0755, 1000, 1000, NULL, 0, 0 },
		{ "home/\xc3\xa9t\xc3\xa9/caf\xc3\xa9.txt", 0, 0644, 1000, 1000, "ok", 2, 0 },
		{ "raw/\xff\xfe", 0, 0644, 0, 0, "x", 1, 0 },
	};
	struct archive *a;
	struct archive_entry *ae;
	struct buf out;
	struct sp_err e;
	(void)state;

	buf_init(&out, 1 << 20);
	assert_int_equal(docker_tar_build(&ascii, 1, &out, &e), 0);
	assert_int_equal(out.len, 512 * 4); /* header, data, two end blocks: no pax header */
	buf_free(&out);

	buf_init(&out, 1 << 20);
	assert_int_equal(docker_tar_build(ents, 3, &out, &e), 0);
	a = archive_read_new();
	archive_read_support_format_tar(a);
	assert_int_equal(archive_read_open_memory(a, out.data, out.len), ARCHIVE_OK);
	assert_int_equal(archive_read_next_header(a, &ae), ARCHIVE_OK);
	assert_string_equal(archive_entry_pathname(ae), "home/\xc3\xa9t\xc3\xa9/");
	assert_int_equal(archive_read_next_header(a, &ae), ARCHIVE_OK);
	assert_string_equal(archive_entry_pathname(ae), ents[1].path);
	assert_int_equal(archive_read_next_header(a, &ae), ARCHIVE_OK);
	assert_string_equal(archive_entry_pathname(ae), ents[2].path);
	assert_int_equal(archive_read_next_header(a, &ae), ARCHIVE_EOF);
	archive_read_free(a);
	buf_free(&out);
}

static void test_tar_refuses(void **state)
{
	static const char *const bad[] = { "",	   "/etc/passwd", "../x", "a/../b",
					   "a/..", "./a",	  "a//b", NULL };
	struct docker_tar_entry ent = { NULL, 0, 0644, 0, 0, "x", 1, 0 };
	struct buf out;
	struct sp_err e;
	char big[4096];
	(void)state;

	buf_init(&out, 1 << 20);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ent.path = bad[i];
		assert_int_equal(docker_tar_build(&ent, 1, &out, &e), -1);
		assert_int_equal(e.code, SP_BAD_REQUEST);
		assert_int_equal(out.len, 0);
	}
	/* a file whose name ends in '/' would read back as a directory
	 * (found by tests/fuzz/fuzz_tar.c) */
	ent.path = "dir/";
	assert_int_equal(docker_tar_build(&ent, 1, &out, &e), -1);
	assert_int_equal(e.code, SP_BAD_REQUEST);
	/* a file with data NULL but a length */
	ent.path = "f";
	ent.data = NULL;
	assert_int_equal(docker_tar_build(&ent, 1, &out, &e), -1);
	buf_free(&out);

	/* crossing the cap: SP_TOO_LARGE and out as it was */
	memset(big, 'z', sizeof(big));
	ent.data = big;
	ent.len = sizeof(big);
	buf_init(&out, 2048);
	assert_int_equal(buf_append(&out, "kept", 4), 0);
	assert_int_equal(docker_tar_build(&ent, 1, &out, &e), -1);
	assert_int_equal(e.code, SP_TOO_LARGE);
	assert_int_equal(out.len, 4);
	buf_free(&out);
}

/* --- images, runc, refusal ------------------------------------------------ */

static void test_image_split(void **state)
{
	static const char *const cases[][3] = {
		{ "busybox", "busybox", "latest" },
		{ "busybox:1.36", "busybox", "1.36" },
		{ "sandpit-test/busybox:latest", "sandpit-test/busybox", "latest" },
		{ "host:5000/a/b", "host:5000/a/b", "latest" },
		{ "host:5000/a/b:tag", "host:5000/a/b", "tag" },
		{ "a/b@sha256:0123abcd", "a/b", "sha256:0123abcd" },
		{ "host:5000/a:t@sha256:0123abcd", "host:5000/a", "sha256:0123abcd" },
	};
	char repo[256], tag[256];
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(
			docker_image_split(cases[i][0], repo, sizeof(repo), tag, sizeof(tag)), 0);
		assert_string_equal(repo, cases[i][1]);
		assert_string_equal(tag, cases[i][2]);
	}
	assert_int_equal(docker_image_split("a:", repo, sizeof(repo), tag, sizeof(tag)), -1);
	assert_int_equal(docker_image_split(":t", repo, sizeof(repo), tag, sizeof(tag)), -1);
	assert_int_equal(docker_image_split("a@", repo, sizeof(repo), tag, sizeof(tag)), -1);
}

static void test_runc_ok(void **state)
{
	(void)state;
	assert_true(docker_runc_ok("1.1.12", ""));
	assert_true(docker_runc_ok("1.1.13", "v1.1.13-0-g58aa920"));
	assert_true(docker_runc_ok("1.2.0-rc.1", ""));
	assert_true(docker_runc_ok("2.0.0", NULL));
	assert_true(docker_runc_ok("1.1.5+ds1", "1.1.5+ds1-1+deb12u1"));
	assert_true(docker_runc_ok("1.1.5+ds1", "1.1.5+ds1-1+deb12u2"));
	assert_false(docker_runc_ok("1.1.11", "v1.1.11-0-g4bccb38"));
	assert_false(docker_runc_ok("1.1.5+ds1", "1.1.5+ds1-1"));
	assert_false(docker_runc_ok("1.1.5+ds1", "1.1.5+ds1-1+deb12u0"));
	assert_false(docker_runc_ok("1.1.5+ds1", "1.1.5+ds1-1+deb12u"));
	assert_false(docker_runc_ok("1.1.5+ds1", "1.1.5+ds1-1+deb12u1x"));
	assert_false(docker_runc_ok("1.1.5", "1.1.5+ds1-1+deb12u1"));
	assert_false(docker_runc_ok("1.0.0-rc93", ""));
	assert_false(docker_runc_ok("", ""));
	assert_false(docker_runc_ok("junk", "junk"));
	assert_false(docker_runc_ok(NULL, NULL));
}

/* Hostile ids never reach the socket: they fail as not found or bad
 * request, and a path outside the allow-list is refused before I/O (the
 * client points at a socket that does not exist, so any I/O would read
 * SP_UNAVAILABLE). */
static void test_refused_before_io(void **state)
{
	struct docker_client *c;
	struct docker_req r;
	struct sp_err e;
	json_object *o = NULL, *body = json_object_new_object();
	char id[65];
	char big[10241];
	(void)state;

	c = docker_client_create("unix:///nonexistent/sandpit-test.sock", 2, &e);
	assert_non_null(c);
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		assert_int_equal(docker_container_inspect(c, hostile[i], &o, &e), -1);
		assert_int_equal(e.code, SP_NOT_FOUND);
		assert_null(o);
		assert_int_equal(docker_container_start(c, hostile[i], &e), -1);
		assert_int_equal(e.code, SP_NOT_FOUND);
		assert_int_equal(docker_exec_inspect(c, hostile[i], NULL, NULL, &e), -1);
		assert_int_equal(e.code, SP_NOT_FOUND);
		assert_int_equal(docker_network_ensure(c, hostile[i], 0, NULL, &e), -1);
		assert_int_equal(e.code, SP_BAD_REQUEST);
		assert_int_equal(docker_container_create(c, hostile[i], body, id, &e), -1);
		assert_int_equal(e.code, SP_BAD_REQUEST);
	}
	/* a stop of an invalid id is success: nothing to stop */
	assert_int_equal(docker_container_stop(c, "../x", 1, &e), 0);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(docker_container_inspect(c, big, &o, &e), -1);
	assert_int_equal(e.code, SP_NOT_FOUND);
	assert_int_equal(docker_image_inspect(c, "../../x", &o, &e), -1);
	assert_int_equal(e.code, SP_BAD_REQUEST);
	assert_int_equal(docker_image_inspect(c, big, &o, &e), -1);
	assert_int_equal(e.code, SP_BAD_REQUEST);
	assert_int_equal(docker_image_pull(c, "a b", 5, &e), -1);
	assert_int_equal(e.code, SP_BAD_REQUEST);
	assert_int_equal(docker_archive_stat(c, "abc", "relative", &(struct docker_stat){ 0 }, &e),
			 -1);
	assert_int_equal(e.code, SP_BAD_REQUEST);
	assert_int_equal(docker_archive_put(c, "abc", "/tmp\n", "x", 1, &e), -1);
	assert_int_equal(e.code, SP_BAD_REQUEST);

	/* the allow-list guard inside the runner */
	docker_req_init(&r, "POST");
	assert_int_equal(docker_req_path(&r, &e, "/containers/abc/attach"), 0);
	assert_int_equal(docker_perform(c, NULL, &r, &e), -1);
	assert_int_equal(e.code, SP_INTERNAL);
	docker_req_cleanup(&r);

	/* an allowed path does reach the (missing) socket */
	assert_int_equal(docker_container_inspect(c, "abc", &o, &e), -1);
	assert_int_equal(e.code, SP_UNAVAILABLE);
	assert_non_null(strstr(e.msg, "Docker is unreachable"));
	docker_client_free(c);
	json_object_put(body);

	assert_null(docker_client_create("tcp://127.0.0.1:2375", 5, &e));
	assert_null(docker_client_create("unix://relative.sock", 5, &e));
}

static void test_status_err(void **state)
{
	struct docker_req r;
	struct sp_err e;
	(void)state;

	docker_req_init(&r, "GET");
	assert_int_equal(docker_req_path(&r, &e, "/containers/x/json"), 0);
	r.status = 404;
	assert_int_equal(buf_puts(&r.err, "{\"message\":\"No such container: x\"}\n"), 0);
	docker_status_err(&r, &e);
	assert_int_equal(e.code, SP_NOT_FOUND);
	assert_string_equal(e.msg, "No such container: x");
	r.status = 409;
	docker_status_err(&r, &e);
	assert_int_equal(e.code, SP_CONFLICT);
	r.status = 500;
	buf_reset(&r.err);
	assert_int_equal(buf_puts(&r.err, "plain text"), 0);
	docker_status_err(&r, &e);
	assert_int_equal(e.code, SP_INTERNAL);
	assert_string_equal(e.msg, "plain text");
	buf_reset(&r.err);
	docker_status_err(&r, &e);
	assert_non_null(strstr(e.msg, "HTTP 500"));
	docker_req_cleanup(&r);
}

/* --- a FAKE daemon for answers the real one gives only with a registry -- */

/* Serves one connection on a fresh unix socket with the canned answer and
 * returns the child's pid; host gets the "unix://" address. */
static pid_t fake_daemon(const char *answer, size_t len, char *host, size_t cap)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	pid_t pid;

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/sandpit-fake-%d.sock", (int)getpid());
	unlink(sa.sun_path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 1), 0);
	snprintf(host, cap, "unix://%s", sa.sun_path);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char req[8192];
		size_t have = 0;
		int cfd = accept(fd, NULL, NULL);
		while (cfd >= 0 && have < sizeof(req) - 1) {
			ssize_t n = read(cfd, req + have, sizeof(req) - 1 - have);
			if (n <= 0)
				break;
			have += (size_t)n;
			req[have] = '\0';
			if (strstr(req, "\r\n\r\n"))
				break;
		}
		if (cfd >= 0 && write(cfd, answer, len) != (ssize_t)len)
			_exit(1);
		_exit(0);
	}
	close(fd);
	return pid;
}

static void fake_done(pid_t pid, const char *host)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	unlink(host + strlen("unix://"));
}

static void test_fake_pull_stream_error(void **state)
{
	static const char answer[] =
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
		"{\"status\":\"Pulling from a/b\",\"id\":\"1\"}\r\n"
		"{\"status\":\"Downloading\",\"progressDetail\":{\"current\":1}}\r\n"
		"{\"errorDetail\":{\"message\":\"manifest unknown\"},\"error\":\"manifest unknown\"}\r\n";
	struct docker_client *c;
	struct sp_err e;
	char host[128];
	pid_t pid;
	(void)state;

	pid = fake_daemon(answer, sizeof(answer) - 1, host, sizeof(host));
	c = docker_client_create(host, 5, &e);
	assert_non_null(c);
	assert_int_equal(docker_image_pull(c, "host:5000/a/b:t", 5, &e), -1);
	assert_int_equal(e.code, SP_INTERNAL);
	assert_string_equal(e.msg, "manifest unknown");
	docker_client_free(c);
	fake_done(pid, host);
}

static void test_fake_exec_bad_frame(void **state)
{
	static const char answer[] = "HTTP/1.1 200 OK\r\n"
				     "Content-Type: application/vnd.docker.raw-stream\r\n\r\n"
				     "\001\000\000\000\000\000\000\002ok"
				     "HTTP/1.1 garbage";
	struct docker_client *c;
	struct sink *s = calloc(1, sizeof(*s));
	struct sp_err e;
	char host[128];
	int timed_out = 7;
	pid_t pid;
	(void)state;

	assert_non_null(s);
	pid = fake_daemon(answer, sizeof(answer) - 1, host, sizeof(host));
	c = docker_client_create(host, 5, &e);
	assert_non_null(c);
	assert_int_equal(docker_exec_start(c, "abc", 5000, collect, NULL, s, &timed_out, &e), -1);
	assert_int_equal(e.code, SP_INTERNAL);
	assert_int_equal(timed_out, 0);
	assert_int_equal(s->len[0], 2);
	assert_memory_equal(s->out[0], "ok", 2);
	docker_client_free(c);
	fake_done(pid, host);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_valid_id),
		cmocka_unit_test(test_path_allowed),
		cmocka_unit_test(test_demux_pieces),
		cmocka_unit_test(test_demux_truncated_header),
		cmocka_unit_test(test_demux_bad_header),
		cmocka_unit_test(test_demux_stop),
		cmocka_unit_test(test_tar_build),
		cmocka_unit_test(test_tar_refuses),
		cmocka_unit_test(test_tar_non_ascii_name),
		cmocka_unit_test(test_image_split),
		cmocka_unit_test(test_runc_ok),
		cmocka_unit_test(test_refused_before_io),
		cmocka_unit_test(test_status_err),
		cmocka_unit_test(test_fake_pull_stream_error),
		cmocka_unit_test(test_fake_exec_bad_frame),
	};

	log_setup("test_docker", LOG_ERROR, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
