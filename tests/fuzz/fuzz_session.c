/*
 * Fuzz target: the dashboard's session cookie out of a Cookie header
 * (handlers/session.c, handlers_session_cookie), which /_auth reads on
 * every request without an API key. The input is the header. Checks: a
 * token found is 48 characters of [a-z0-9], and the header holds
 * "__Host-sandpit=" followed by exactly it, at the start or after a ';' or
 * a space; a buffer one byte short finds nothing.
 */
#include <string.h>

#include "handlers/handlers.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char hdr[8192], tok[64], small[48];
	const char *at;
	int found = 0;

	if (size >= sizeof(hdr))
		return 0;
	memcpy(hdr, data, size);
	hdr[size] = '\0';
	if (handlers_session_cookie(hdr, tok, sizeof(tok)) != 1) {
		FUZZ_CHECK(handlers_session_cookie(hdr, small, sizeof(small)) == 0);
		return 0;
	}
	FUZZ_CHECK(strlen(tok) == 48);
	for (const char *c = tok; *c; c++)
		FUZZ_CHECK((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9'));
	for (at = strstr(hdr, "__Host-sandpit="); at; at = strstr(at + 1, "__Host-sandpit="))
		if ((at == hdr || at[-1] == ';' || at[-1] == ' ') &&
		    strncmp(at + 15, tok, 48) == 0 &&
		    (at[63] == '\0' || at[63] == ';' || at[63] == ' '))
			found = 1;
	FUZZ_CHECK(found);
	FUZZ_CHECK(handlers_session_cookie(hdr, small, sizeof(small)) == 0);
	return 0;
}
