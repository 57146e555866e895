/*
 * Fuzz target: the UTF-8 helpers (common/utf8.c) that make command output
 * and file content safe for JSON strings. The first two bytes are an
 * output cap; the rest is the text. Differential check against a decoder
 * written here from RFC 3629 (code point arithmetic rather than byte
 * ranges): utf8_seq_len and utf8_valid agree with it at every position;
 * utf8_sanitize's output is always valid UTF-8, equals the input when that
 * was valid, and equals the reference repair (one U+FFFD per byte that
 * does not start a valid sequence); with a capped buffer it fails exactly
 * when the repair would not fit. utf8_prefix never keeps more than asked,
 * at most 3 bytes less, and never cuts valid text inside a sequence.
 * utf8_json_escape, in two pieces, reads back through json-c as the
 * reference repair.
 */
#include <string.h>

#include <json-c/json.h>

#include "common/buf.h"
#include "common/utf8.h"
#include "tests/fuzz/fuzz.h"

/* Length of the valid sequence at p[0..n), or 0. */
static size_t ref_len(const unsigned char *p, size_t n)
{
	uint32_t cp, min;
	size_t len;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xE0) == 0xC0) {
		len = 2;
		cp = p[0] & 0x1F;
		min = 0x80;
	} else if ((p[0] & 0xF0) == 0xE0) {
		len = 3;
		cp = p[0] & 0x0F;
		min = 0x800;
	} else if ((p[0] & 0xF8) == 0xF0) {
		len = 4;
		cp = p[0] & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	size_t cap = fuzz_u16(&in), n = in.n, i = 0;
	const unsigned char *u;
	char *p = malloc(n ? n : 1);
	struct buf want, out, capped;
	int valid = 1;

	FUZZ_CHECK(p);
	memcpy(p, in.p, n);
	u = (const unsigned char *)p;
	buf_init(&want, (size_t)1 << 24);
	while (i < n) {
		size_t k = ref_len(u + i, n - i);
		FUZZ_CHECK(utf8_seq_len(u + i, n - i) == k);
		if (k) {
			FUZZ_CHECK(buf_append(&want, u + i, k) == 0);
			i += k;
		} else {
			FUZZ_CHECK(buf_append(&want, "\xEF\xBF\xBD", 3) == 0);
			valid = 0;
			i++;
		}
	}
	FUZZ_CHECK(utf8_valid(p, n) == valid);

	buf_init(&out, (size_t)1 << 24);
	FUZZ_CHECK(utf8_sanitize(p, n, &out) == 0);
	FUZZ_CHECK(out.len == want.len);
	FUZZ_CHECK(out.len == 0 || memcmp(out.data, want.data, out.len) == 0);
	FUZZ_CHECK(utf8_valid(out.data ? out.data : "", out.len));
	if (valid)
		FUZZ_CHECK(out.len == n && (n == 0 || memcmp(out.data, p, n) == 0));

	buf_init(&capped, cap);
	FUZZ_CHECK(utf8_sanitize(p, n, &capped) == (want.len > cap ? -1 : 0));
	FUZZ_CHECK(capped.len <= cap);

	/* utf8_prefix on the text as a C string, cut to cap % 64 bytes */
	{
		size_t max = cap % 64, len = strnlen(p, n), k;
		char *c = malloc(len + 1);
		FUZZ_CHECK(c);
		memcpy(c, p, len);
		c[len] = '\0';
		k = utf8_prefix(c, max);
		FUZZ_CHECK(k <= len && k <= max);
		FUZZ_CHECK(len <= max ? k == len : k + 3 >= max);
		if (utf8_valid(c, len))
			FUZZ_CHECK(utf8_valid(c, k));
		free(c);
	}
	/* utf8_json_escape, fed in two pieces cut at cap % (n + 1) (a cut
	 * sequence waits for the next piece): json-c reads the result back
	 * as exactly the reference repair */
	{
		size_t cut = n ? cap % (n + 1) : 0, used = 0;
		struct buf esc, rest;
		json_object *back;
		buf_init(&esc, (size_t)1 << 26);
		buf_init(&rest, (size_t)1 << 24);
		FUZZ_CHECK(buf_append(&esc, "\"", 1) == 0);
		FUZZ_CHECK(utf8_json_escape(p, cut, 0, &esc, &used) == 0);
		FUZZ_CHECK(used <= cut && cut - used <= 3);
		FUZZ_CHECK(buf_append(&rest, p + used, n - used) == 0);
		FUZZ_CHECK(utf8_json_escape(rest.data ? rest.data : "", rest.len, 1, &esc, &used) ==
			   0);
		FUZZ_CHECK(used == rest.len);
		FUZZ_CHECK(buf_append(&esc, "\"", 1) == 0);
		back = json_tokener_parse(esc.data);
		FUZZ_CHECK(back && json_object_is_type(back, json_type_string));
		FUZZ_CHECK((size_t)json_object_get_string_len(back) == want.len);
		FUZZ_CHECK(want.len == 0 ||
			   memcmp(json_object_get_string(back), want.data, want.len) == 0);
		json_object_put(back);
		buf_free(&esc);
		buf_free(&rest);
	}
	buf_free(&capped);
	buf_free(&out);
	buf_free(&want);
	free(p);
	return 0;
}
