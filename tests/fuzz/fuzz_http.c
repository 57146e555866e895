/*
 * Fuzz target: the WebSocket upgrade head sandpit-stream parses
 * (stream/http.c). The input is the head, in an allocation of exactly its
 * size. Checks: no crash, no read past len (ASan); the answer is one of
 * the statuses the loop knows, with a reason unless it is an accept; every
 * identity field is a terminated string of printable ASCII without spaces;
 * a sandboxId marked present holds 1..64 of [A-Za-z0-9_-]; an accepted
 * upgrade carries a 28-byte Sec-WebSocket-Accept. The first byte, when it
 * is 0xff, instead sends the rest to stream_ws_accept alone.
 */
#include <ctype.h>
#include <string.h>

#include "stream/stream.h"
#include "tests/fuzz/fuzz.h"

static void check_ident(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	FUZZ_CHECK(n < cap);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK((unsigned char)s[i] >= 0x21 && (unsigned char)s[i] <= 0x7e);
}

static void check_accept_value(const char *a)
{
	FUZZ_CHECK(strlen(a) == 28 && a[27] == '=');
	for (size_t i = 0; i < 27; i++)
		FUZZ_CHECK(isalnum((unsigned char)a[i]) || a[i] == '+' || a[i] == '/');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stream_upgrade u;
	char *p;
	int rc;

	if (size && data[0] == 0xff) {
		char out[32];
		p = malloc(size - 1 ? size - 1 : 1);
		FUZZ_CHECK(p);
		memcpy(p, data + 1, size - 1);
		if (stream_ws_accept(p, size - 1, out, sizeof(out)) == 0)
			check_accept_value(out);
		free(p);
		return 0;
	}
	p = malloc(size ? size : 1);
	FUZZ_CHECK(p);
	memcpy(p, data, size);
	rc = stream_http_parse(p, size, &u);
	free(p);
	FUZZ_CHECK(rc == 0 || rc == -1);
	if (rc < 0)
		FUZZ_CHECK(u.status == 400);
	FUZZ_CHECK(u.status == 0 || u.status == 200 || u.status == 400 || u.status == 404 ||
		   u.status == 405 || u.status == 426);
	FUZZ_CHECK((u.status == 0 || u.status == 200) == (u.why == NULL));
	check_ident(u.org, sizeof(u.org));
	check_ident(u.key_id, sizeof(u.key_id));
	check_ident(u.role, sizeof(u.role));
	check_ident(u.perms, sizeof(u.perms));
	check_ident(u.request_id, sizeof(u.request_id));
	FUZZ_CHECK(u.sid == SID_MISSING || u.sid == SID_OK || u.sid == SID_MALFORMED);
	if (u.sid == SID_OK) {
		size_t n = strnlen(u.sandbox_id, sizeof(u.sandbox_id));
		FUZZ_CHECK(n >= 1 && n <= 64);
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(isalnum((unsigned char)u.sandbox_id[i]) ||
				   u.sandbox_id[i] == '_' || u.sandbox_id[i] == '-');
	}
	if (u.status == 0)
		check_accept_value(u.accept);
	return 0;
}
