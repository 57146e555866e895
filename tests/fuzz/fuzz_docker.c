/*
 * Fuzz target: the Docker client's pure text handling (docker/), the parts
 * that read Docker's answers or turn caller values into request paths. The
 * first byte picks one:
 *   0 docker_parse_json: an answer body; success gives a value (never
 *     NULL), failure SP_INTERNAL and no value
 *   1 docker_stat_decode: the X-Docker-Container-Path-Stat header; names
 *     are terminated within their fields
 *   2 docker_image_split: an image reference; repo is a non-empty prefix,
 *     tag non-empty and "latest" or a suffix of the reference
 *   3 docker_escape: a query value; the output holds only unreserved bytes
 *     and %XX, decodes back to the input, and is refused only when it would
 *     not fit
 *   4 docker_path_allowed, docker_valid_id, docker_check_path: an allowed
 *     path holds no byte outside [A-Za-z0-9._~%/-] and no "." or ".."
 *     segment
 *   5 docker_runc_ok: a version and a commit
 *   6 docker_progress_feed: a pull's or push's progress stream, fed in
 *     pieces (their sizes from the second byte); what it keeps is
 *     terminated within its field, and once malformed it stays so
 * Text inputs are C strings (the callers' values are): cut at a NUL.
 */
#include <string.h>

#include "docker/docker_int.h"
#include "tests/fuzz/fuzz.h"

static int unreserved(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '.' || ch == '_' || ch == '~' || ch == '-';
}

static int hexv(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1; /* docker_escape writes upper case only */
}

static void do_json(const char *p, size_t n)
{
	json_object *o = (json_object *)1;
	struct sp_err e;

	sp_err_clear(&e);
	if (docker_parse_json(p, n, &o, &e) == 0) {
		FUZZ_CHECK(o != NULL); /* a bare null is refused, never NULL with 0 */
		json_object_put(o);
	} else {
		FUZZ_CHECK(o == NULL && e.code == SP_INTERNAL);
	}
}

static void do_stat(const char *p, size_t n)
{
	struct docker_stat st;
	struct sp_err e;

	sp_err_clear(&e);
	if (docker_stat_decode(p, n, &st, &e) == 0) {
		FUZZ_CHECK(strnlen(st.name, sizeof(st.name)) < sizeof(st.name));
		FUZZ_CHECK(strnlen(st.link_target, sizeof(st.link_target)) <
			   sizeof(st.link_target));
	} else {
		FUZZ_CHECK(e.code == SP_INTERNAL);
	}
}

static void do_image(const char *ref)
{
	char repo[256], tag[256];
	size_t rl, tl, n = strlen(ref);

	if (docker_image_split(ref, repo, sizeof(repo), tag, sizeof(tag)) < 0)
		return;
	rl = strnlen(repo, sizeof(repo));
	tl = strnlen(tag, sizeof(tag));
	FUZZ_CHECK(rl >= 1 && rl < sizeof(repo) && tl >= 1 && tl < sizeof(tag));
	FUZZ_CHECK(rl <= n && memcmp(repo, ref, rl) == 0);
	FUZZ_CHECK(strcmp(tag, "latest") == 0 || (tl <= n && memcmp(tag, ref + n - tl, tl) == 0));
}

static void do_escape(const char *s, size_t cap)
{
	char *out = malloc(cap ? cap : 1);
	size_t need = 0, n = strlen(s), o = 0;
	int rc;

	FUZZ_CHECK(out);
	for (size_t i = 0; i < n; i++)
		need += unreserved((unsigned char)s[i]) ? 1 : 3;
	rc = docker_escape(s, out, cap);
	FUZZ_CHECK(rc == (need + 1 <= cap && cap ? 0 : -1));
	if (rc == 0) {
		size_t len = strlen(out);
		FUZZ_CHECK(len == need);
		for (size_t i = 0; i < len; i++, o++) {
			if (out[i] == '%') {
				int hi, lo;
				FUZZ_CHECK(i + 2 < len);
				hi = hexv((unsigned char)out[i + 1]);
				lo = hexv((unsigned char)out[i + 2]);
				FUZZ_CHECK(hi >= 0 && lo >= 0);
				FUZZ_CHECK((unsigned char)s[o] == (unsigned)(hi * 16 + lo));
				FUZZ_CHECK(!unreserved((unsigned char)s[o]));
				i += 2;
			} else {
				FUZZ_CHECK(unreserved((unsigned char)out[i]) && out[i] == s[o]);
			}
		}
		FUZZ_CHECK(o == n);
	}
	free(out);
}

static void do_path(unsigned sel, const char *path)
{
	static const char *const methods[] = { "GET", "POST", "PUT", "DELETE", "HEAD", "PATCH" };
	const char *method = methods[sel % 6];
	size_t n = strcspn(path, "?");
	struct sp_err e;

	(void)docker_valid_id(path);
	sp_err_clear(&e);
	if (docker_check_path(path, &e) < 0)
		FUZZ_CHECK(e.code == SP_BAD_REQUEST && strcmp(e.field, "path") == 0);
	if (!docker_path_allowed(method, path))
		return;
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(unreserved((unsigned char)path[i]) || path[i] == '/' || path[i] == '%');
	for (size_t i = 0; i < n; i++) {
		size_t k;
		if (path[i] != '/')
			continue;
		k = strcspn(path + i + 1, "/?");
		FUZZ_CHECK(!(k == 1 && path[i + 1] == '.'));
		FUZZ_CHECK(!(k == 2 && path[i + 1] == '.' && path[i + 2] == '.'));
	}
}

static void do_progress(const char *p, size_t n, unsigned arg)
{
	struct docker_progress ps = { 0 };
	size_t piece = (arg & 63) + 1;

	ps.tok = json_tokener_new();
	FUZZ_CHECK(ps.tok);
	while (n > 0) {
		size_t k = n < piece ? n : piece;
		int was = ps.malformed;
		FUZZ_CHECK(docker_progress_feed(&ps, p, k) == 0);
		FUZZ_CHECK(!was || ps.malformed);
		p += k;
		n -= k;
		piece = piece * 3 % 97 + 1;
	}
	FUZZ_CHECK(memchr(ps.error, '\0', sizeof(ps.error)) != NULL);
	FUZZ_CHECK(memchr(ps.digest, '\0', sizeof(ps.digest)) != NULL);
	json_tokener_free(ps.tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	unsigned sel = fuzz_byte(&in), arg = fuzz_byte(&in);
	char *p = malloc(in.n + 1), *second;

	FUZZ_CHECK(p);
	memcpy(p, in.p, in.n);
	p[in.n] = '\0';
	switch (sel % 7) {
	case 0:
		do_json(p, in.n);
		break;
	case 1:
		do_stat(p, in.n);
		break;
	case 2:
		do_image(p);
		break;
	case 3:
		do_escape(p, arg);
		break;
	case 4:
		do_path(arg, p);
		break;
	case 6:
		do_progress(p, in.n, arg);
		break;
	default:
		second = p + strlen(p) + (strlen(p) < in.n ? 1 : 0);
		(void)docker_runc_ok(p, arg & 1 ? second : NULL);
		break;
	}
	free(p);
	return 0;
}
