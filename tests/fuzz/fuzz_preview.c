/*
 * Fuzz target: how a preview URL's request is split (handlers/v1_ports.c,
 * v1_ports_preview_split) into the port's label and the path sent on to
 * the sandbox, which nginx puts in its proxy_pass URL after the target
 * (X-Sandpit-Path). The first byte picks the form (path- or host-based)
 * and whether preview_domain is set; the rest is the raw URI, a NUL, and
 * the Host. Checks: an accepted request's path always starts with '/' and
 * holds no byte <= ' ' nor DEL (it can never name a host, end a header or
 * split a request line); the path form's label is the segment after /p/
 * and the path the rest of the URI; the host form's label is the Host's
 * first label, lower-cased, its domain preview_domain's, and the path the
 * whole URI; without preview_domain the host form accepts nothing.
 */
#include <string.h>
#include <strings.h>

#include "handlers/handlers.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	unsigned mode = fuzz_byte(&in);
	int host_mode = mode & 1;
	const char *domain = mode & 2 ? "preview.test" : "";
	char uri[4096], host[512], label[80], rest[8192];
	size_t ulen = 0, hlen = 0;
	const uint8_t *p = in.p;

	/* uri NUL host, each cut to its buffer */
	while (ulen < in.n && p[ulen])
		ulen++;
	if (ulen >= sizeof(uri))
		return 0;
	memcpy(uri, p, ulen);
	uri[ulen] = '\0';
	if (ulen < in.n) {
		hlen = in.n - ulen - 1;
		if (hlen >= sizeof(host))
			return 0;
		memcpy(host, p + ulen + 1, hlen);
	}
	host[hlen] = '\0';
	if (v1_ports_preview_split(domain, host_mode, uri, host, label, sizeof(label), rest,
				   sizeof(rest)) < 0)
		return 0;
	FUZZ_CHECK(rest[0] == '/');
	for (const char *c = rest; *c; c++)
		FUZZ_CHECK((unsigned char)*c > ' ' && *c != 0x7f);
	FUZZ_CHECK(label[0] != '\0');
	if (!host_mode) {
		size_t n = strlen(label);
		FUZZ_CHECK(strncmp(uri, "/p/", 3) == 0 && strncmp(uri + 3, label, n) == 0);
		FUZZ_CHECK(!strchr(label, '/') && !strchr(label, '?'));
		FUZZ_CHECK(strcmp(rest + (uri[3 + n] == '/' ? 0 : 1), uri + 3 + n) == 0);
	} else {
		size_t n = strlen(label);
		FUZZ_CHECK(domain[0] != '\0');
		FUZZ_CHECK(strcmp(rest, uri) == 0);
		FUZZ_CHECK(!strchr(label, '.') && strncasecmp(host, label, n) == 0 &&
			   host[n] == '.');
		for (const char *c = label; *c; c++)
			FUZZ_CHECK(!(*c >= 'A' && *c <= 'Z'));
		FUZZ_CHECK(strncasecmp(host + n + 1, domain, strlen(domain)) == 0);
		FUZZ_CHECK(host[n + 1 + strlen(domain)] == '\0' ||
			   host[n + 1 + strlen(domain)] == ':');
	}
	return 0;
}
