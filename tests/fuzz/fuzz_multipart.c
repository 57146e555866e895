/*
 * Fuzz target: upload's multipart/form-data parser (handlers/v1_transfer.c,
 * v1_mp_*), fed as nginx feeds it: in reads of a fuzzer-chosen size, each
 * read's bytes in their own allocation so that ASan sees any read past
 * them. Input: one byte (the read size - 1), one byte (the content cap in
 * KiB, 0 = 1 byte), then the body (boundary "XyZ"). Checks: the parser
 * ends (an end event or a refusal) within a bound of events; a refusal
 * names a field; events come in the document's order (FILE, DATA...,
 * COMMIT, then FILE again, or END after a COMMIT or before any FILE); a
 * FileHeader's path is absolute, at most 4096 bytes, without NUL; the
 * content delivered never passes the cap; data never points outside the
 * parser's buffer (ASan).
 */
#include <stdlib.h>
#include <string.h>

#include "handlers/handlers.h"
#include "tests/fuzz/fuzz.h"

struct feed {
	const uint8_t *p;
	size_t n, piece;
};

static int rd(void *arg, char *buf, int cap)
{
	struct feed *f = arg;
	size_t k = f->n < f->piece ? f->n : f->piece;
	char *own;

	if (k > (size_t)cap)
		k = (size_t)cap;
	if (!k)
		return 0;
	own = malloc(k);
	FUZZ_CHECK(own);
	memcpy(own, f->p, k);
	memcpy(buf, own, k);
	free(own);
	f->p += k;
	f->n -= k;
	return (int)k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	size_t piece = fuzz_byte(&in) + 1;
	unsigned capk = fuzz_byte(&in);
	int64_t cap = capk ? (int64_t)capk * 1024 : 1, content = 0;
	struct feed f = { in.p, in.n, piece };
	struct v1_mp *m = v1_mp_new("XyZ", cap, cap + 65536, rd, &f);
	int in_file = 0, steps = 0;

	FUZZ_CHECK(m);
	for (;;) {
		struct sb_up_event ev;
		struct sp_err e;
		memset(&ev, 0, sizeof(ev));
		sp_err_clear(&e);
		FUZZ_CHECK(++steps < 10 * (int)size + 100);
		if (v1_mp_next(m, &ev, &e) < 0) {
			FUZZ_CHECK(e.code != SP_OK);
			FUZZ_CHECK(e.field[0]);
			break;
		}
		if (ev.kind == SB_UP_FILE) {
			size_t n = strlen(ev.path);
			FUZZ_CHECK(!in_file);
			FUZZ_CHECK(n >= 1 && n <= 4096 && ev.path[0] == '/');
			FUZZ_CHECK(ev.mode <= 0777);
			in_file = 1;
		} else if (ev.kind == SB_UP_DATA) {
			FUZZ_CHECK(in_file && ev.len > 0);
			content += (int64_t)ev.len;
			FUZZ_CHECK(content <= cap);
			/* touch every byte: ASan checks it is the parser's */
			volatile char x = 0;
			for (size_t i = 0; i < ev.len; i++)
				x ^= ev.data[i];
			(void)x;
		} else if (ev.kind == SB_UP_COMMIT) {
			FUZZ_CHECK(in_file);
			in_file = 0;
		} else {
			FUZZ_CHECK(!in_file);
			break;
		}
	}
	v1_mp_free(m);
	return 0;
}
