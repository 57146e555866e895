/*
 * Fuzz target: Docker's multiplexed stream demuxer (docker/demux.c), fed
 * the way a transfer feeds it: in pieces cut at fuzzer-chosen points, each
 * piece in its own allocation so that ASan sees any read past its end.
 * Input: one byte n (pieces - 1, mod 16), one byte stop (if not 0, on_data
 * refuses once that many payload bytes came), n big-endian u16 cut
 * offsets, then the stream. Differential check: the (stream, byte)
 * sequence delivered equals what a plain whole-buffer decoder of the same
 * frames gives; a malformed header is reported (-1) exactly when the
 * reference finds one, and nothing is delivered after it; a refusal by
 * on_data returns 1; the held partial header and payload left agree.
 */
#include <string.h>

#include "common/buf.h"
#include "docker/docker.h"
#include "tests/fuzz/fuzz.h"

struct sink {
	struct buf got; /* pairs: stream byte, data byte */
	size_t payload, stop_after;
	int refused;
};

static int collect(void *arg, int stream, const char *data, size_t len)
{
	struct sink *s = arg;

	FUZZ_CHECK(stream == 1 || stream == 2);
	FUZZ_CHECK(len > 0);
	FUZZ_CHECK(!s->refused); /* never called again after a refusal */
	if (s->stop_after && s->payload + len >= s->stop_after) {
		s->refused = 1;
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		char pair[2] = { (char)stream, data[i] };
		FUZZ_CHECK(buf_append(&s->got, pair, 2) == 0);
	}
	s->payload += len;
	return 0;
}

/* The reference: decodes the whole stream at once. Returns 1 when it meets
 * a malformed header; *left and *hdr_have describe the unfinished end. */
static int reference(const uint8_t *p, size_t n, struct buf *want, uint32_t *left, size_t *hdr_have)
{
	size_t pos = 0;

	*left = 0;
	*hdr_have = 0;
	while (pos < n) {
		uint32_t size;
		size_t take;
		int stream;
		if (n - pos < 8) {
			*hdr_have = n - pos;
			return 0;
		}
		if (p[pos] > 2 || p[pos + 1] || p[pos + 2] || p[pos + 3])
			return 1;
		stream = p[pos] == 2 ? 2 : 1;
		size = (uint32_t)p[pos + 4] << 24 | (uint32_t)p[pos + 5] << 16 |
		       (uint32_t)p[pos + 6] << 8 | p[pos + 7];
		pos += 8;
		take = n - pos < size ? n - pos : size;
		for (size_t i = 0; i < take; i++) {
			char pair[2] = { (char)stream, (char)p[pos + i] };
			FUZZ_CHECK(buf_append(want, pair, 2) == 0);
		}
		pos += take;
		*left = size - (uint32_t)take;
	}
	return 0;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	size_t ncut = fuzz_byte(&in) % 16, cuts[17], stream_len, hdr_have, at = 0;
	unsigned stop = fuzz_byte(&in);
	const uint8_t *stream;
	struct docker_demux d;
	struct sink s;
	struct buf want;
	uint32_t left;
	int broken = 0, stopped = 0, ref_bad;

	for (size_t i = 0; i < ncut; i++)
		cuts[i] = fuzz_u16(&in);
	stream = in.p;
	stream_len = in.n;
	for (size_t i = 0; i < ncut; i++)
		cuts[i] = stream_len ? cuts[i] % (stream_len + 1) : 0;
	cuts[ncut] = stream_len;
	qsort(cuts, ncut + 1, sizeof(cuts[0]), cmp_size);

	memset(&s, 0, sizeof(s));
	buf_init(&s.got, (size_t)1 << 24);
	buf_init(&want, (size_t)1 << 24);
	s.stop_after = stop;
	docker_demux_init(&d);
	for (size_t i = 0; i <= ncut; i++) {
		size_t n = cuts[i] - at;
		char *piece = malloc(n ? n : 1);
		int rc;
		FUZZ_CHECK(piece);
		memcpy(piece, stream + at, n);
		rc = docker_demux_feed(&d, piece, n, collect, &s);
		free(piece);
		at = cuts[i];
		FUZZ_CHECK(rc >= -1 && rc <= 1);
		if (broken) {
			FUZZ_CHECK(rc == -1); /* once broken, stays broken */
			continue;
		}
		if (rc == -1)
			broken = 1;
		if (rc == 1) {
			FUZZ_CHECK(s.refused);
			stopped = 1;
			break; /* the caller aborts the transfer */
		}
	}

	ref_bad = reference(stream, stream_len, &want, &left, &hdr_have);
	if (stopped) {
		/* what came before the refusal is a prefix of the reference */
		FUZZ_CHECK(s.got.len <= want.len);
		FUZZ_CHECK(s.got.len == 0 || memcmp(s.got.data, want.data, s.got.len) == 0);
	} else {
		FUZZ_CHECK(!s.refused);
		FUZZ_CHECK(broken == ref_bad);
		FUZZ_CHECK(s.got.len == want.len);
		FUZZ_CHECK(want.len == 0 || memcmp(s.got.data, want.data, want.len) == 0);
		if (!broken) {
			FUZZ_CHECK(d.left == left);
			FUZZ_CHECK(d.hdr_have == hdr_have);
		}
	}
	buf_free(&s.got);
	buf_free(&want);
	return 0;
}
