/*
 * Unit tests for upload's multipart/form-data parser (handlers/v1_transfer.c,
 * v1_mp_*): bytes fed in pieces of every size from 1 byte up, so a
 * delimiter, a header block or a FileHeader split across reads still
 * parses to the same events; content holding the boundary's text without
 * its CRLF; the document's refusals (content first, two metadata parts,
 * Content-Transfer-Encoding, a wrong content type, a bad FileHeader, no
 * closing delimiter, content cut short) naming the field; the content cap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "handlers/handlers.h"

#define B "XyZ"

struct feed {
	const char *p;
	size_t len, off, piece;
};

static int rd(void *arg, char *buf, int cap)
{
	struct feed *f = arg;
	size_t k = f->len - f->off;

	if (k > f->piece)
		k = f->piece;
	if (k > (size_t)cap)
		k = (size_t)cap;
	memcpy(buf, f->p + f->off, k);
	f->off += k;
	return (int)k;
}

/* Runs the parser over body in pieces of piece bytes; writes the events as
 * text ("F path mode|D n|C|E") into out, returns 0, or -1 with e. */
static int parse(const char *body, size_t len, size_t piece, int64_t cap, char *out, size_t ocap,
		 struct sp_err *e)
{
	struct feed f = { body, len, 0, piece };
	struct v1_mp *m = v1_mp_new(B, cap, cap + 4096, rd, &f);
	size_t o = 0, data = 0;
	int rc = -1;

	assert_non_null(m);
	out[0] = '\0';
	for (;;) {
		struct sb_up_event ev;
		memset(&ev, 0, sizeof(ev));
		sp_err_clear(e);
		if (v1_mp_next(m, &ev, e) < 0)
			break;
		if (ev.kind != SB_UP_DATA && data) {
			o += (size_t)snprintf(out + o, ocap - o, "D%zu ", data);
			data = 0;
		}
		if (ev.kind == SB_UP_FILE)
			o += (size_t)snprintf(out + o, ocap - o, "F%s %o ", ev.path, ev.mode);
		else if (ev.kind == SB_UP_DATA)
			data += ev.len;
		else if (ev.kind == SB_UP_COMMIT)
			o += (size_t)snprintf(out + o, ocap - o, "C ");
		else {
			o += (size_t)snprintf(out + o, ocap - o, "E");
			rc = 0;
			break;
		}
	}
	v1_mp_free(m);
	return rc;
}

#define META(p)                                                            \
	"--" B "\r\nContent-Disposition: form-data; name=\"metadata\"\r\n" \
	"Content-Type: application/json\r\n\r\n" p "\r\n"
#define CONTENT(d)                                                                        \
	"--" B "\r\nContent-Disposition: form-data; name=\"content\"; filename=\"x\"\r\n" \
	"Content-Type: application/octet-stream\r\n\r\n" d "\r\n"
#define END "--" B "--\r\n"

static void test_pieces(void **state)
{
	/* the first content holds the boundary's text, but never CRLF "--"
	 * boundary (which would end it) */
	static const char body[] = "preamble\r\n" META("{\"path\":\"/a\",\"mode\":420}")
		CONTENT("hello\n--" B " not one\r\n-" B "x\r\n-") META("{\"path\":\"/e\"}")
			CONTENT("") META("{\"path\":\"/m\",\"mode\":33261}") CONTENT("z") END
		"epilogue";
	char want[256], got[256];
	struct sp_err e;

	(void)state;
	assert_int_equal(parse(body, sizeof(body) - 1, 1 << 20, 1000, want, sizeof(want), &e), 0);
	snprintf(got, sizeof(got), "F/a 644 D%zu C F/e 0 C F/m 755 D1 C E",
		 strlen("hello\n--" B " not one\r\n-" B "x\r\n-"));
	assert_string_equal(want, got);
	for (size_t piece = 1; piece < 80; piece++) {
		assert_int_equal(parse(body, sizeof(body) - 1, piece, 1000, got, sizeof(got), &e),
				 0);
		assert_string_equal(got, want);
	}
}

/* The field the refusal of body names. */
static const char *refusal(const char *body, int64_t cap, struct sp_err *e)
{
	char got[256];

	assert_int_equal(parse(body, strlen(body), 7, cap, got, sizeof(got), e), -1);
	return e->field;
}

static void test_refusals(void **state)
{
	struct sp_err e;

	(void)state;
	assert_string_equal(refusal(CONTENT("x") END, 100, &e), "content[0]");
	assert_int_equal(e.code, SP_BAD_REQUEST);
	assert_string_equal(
		refusal(META("{\"path\":\"/a\"}") META("{\"path\":\"/b\"}") END, 100, &e),
		"metadata[0]");
	assert_string_equal(refusal(META("{\"path\":\"a\"}") CONTENT("x") END, 100, &e),
			    "metadata[0].path");
	assert_string_equal(refusal(META("{\"path\":\"/a\",\"x\":1}") CONTENT("x") END, 100, &e),
			    "metadata[0]");
	assert_string_equal(
		refusal(META("{\"path\":\"/a\",\"mode\":-1}") CONTENT("x") END, 100, &e),
		"metadata[0].mode");
	assert_string_equal(refusal(META("[1]") CONTENT("x") END, 100, &e), "metadata[0]");
	assert_string_equal(refusal("--" B
				    "\r\nContent-Disposition: form-data; name=\"metadata\"\r\n"
				    "Content-Type: text/plain\r\n\r\n{\"path\":\"/a\"}\r\n" END,
				    100, &e),
			    "metadata[0]");
	assert_string_equal(
		refusal(META("{\"path\":\"/a\"}") "--" B
						  "\r\nContent-Disposition: form-data; name=\"content\"\r\n"
						  "Content-Type: application/octet-stream\r\n"
						  "Content-Transfer-Encoding: base64\r\n\r\neA==\r\n" END,
			100, &e),
		"content[0]");
	assert_non_null(strstr(e.msg, "Content-Transfer-Encoding"));
	/* no closing delimiter: the content never ends */
	assert_string_equal(refusal(META("{\"path\":\"/a\"}") CONTENT("x"), 100, &e), "content[0]");
	/* cut inside the headers, after the metadata */
	assert_string_equal(refusal(META("{\"path\":\"/a\"}") "--" B "\r\nContent-Disp", 100, &e),
			    "body");
	assert_string_equal(refusal(META("{\"path\":\"/a\"}") END, 100, &e), "content[0]");
	assert_string_equal(refusal("no delimiter at all", 100, &e), "body");
	/* over the cap: resourceExhausted naming content */
	assert_string_equal(refusal(META("{\"path\":\"/a\"}") CONTENT("0123456789") END, 5, &e),
			    "content");
	assert_int_equal(e.code, SP_TOO_LARGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
