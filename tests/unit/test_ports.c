/*
 * Unit tests for the published ports' record text and preview labels
 * (sandbox/ports.c) and their rendering (handlers/v1_ports.c): entries in
 * number order, damaged ones skipped (never a port with a bad uid or
 * address), labels that are not exactly "<number>-<uid>" refused before
 * anything is looked up, a preview request split into its label and the
 * path sent on, core.ports without a request (the ETag's form),
 * and preview_domain's checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/config.h"
#include "handlers/handlers.h"
#include "sandbox/sandbox.h"

#define U1 "abcdefghijklmnopqrstuvwxyz012345"
#define U2 "0123456789abcdefghijklmnopqrstuv"

static void test_parse(void **state)
{
	static struct sandbox sb;
	struct sandbox_port p[SB_PORTS_MAX];

	(void)state;
	snprintf(sb.ports, sizeof(sb.ports),
		 "9000," U1 ",172.18.0.5,1;"
		 "80," U2 ",172.18.0.5,2;"
		 "0," U1 ",172.18.0.5,3;"	 /* number 0 */
		 "70000," U1 ",172.18.0.5,3;"	 /* past 65535 */
		 "81,SHORT,172.18.0.5,3;"	 /* a uid that is not 32 [a-z0-9] */
		 "82," U1 "X,172.18.0.5,3;"	 /* 33 characters */
		 "83," U1 ",172.18.0.5/evil,3;"	 /* an address with a path */
		 "84," U1 ",,3;"		 /* no address */
		 "85," U1 ",172.18.0.5;"	 /* a field missing */
		 "86," U1 ",172.18.0.5,3,extra;" /* one more */
		 "443," U1 ",fd00::5,4");
	assert_int_equal(sandbox_ports_parse(&sb, p, SB_PORTS_MAX), 3);
	assert_int_equal(p[0].number, 80);
	assert_string_equal(p[0].uid, U2);
	assert_int_equal(p[1].number, 443);
	assert_string_equal(p[1].ip, "fd00::5");
	assert_int_equal(p[2].number, 9000);
	assert_int_equal(p[2].created_at, 1);
	/* at most max */
	assert_int_equal(sandbox_ports_parse(&sb, p, 1), 1);
	sb.ports[0] = '\0';
	assert_int_equal(sandbox_ports_parse(&sb, p, SB_PORTS_MAX), 0);
}

static void test_labels(void **state)
{
	static const char *const bad[] = {
		"",
		"8080",
		"8080-",
		"-" U1,
		"0-" U1,
		"65536-" U1,
		"+80-" U1,
		" 80-" U1,
		"80-" U1 "x",
		"80-" U1 "/",
		"80-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345",
		"80-abcdefghijklmnopqrstuvwxyz01234",
		"80-abcdefghijklmnopqrstuvwxyz01234.",
		"80@127.0.0.1-" U1,
		"1234567-" U1,
	};
	struct sandbox_ctx ctx;
	char target[80], org[65];
	struct sp_err e;

	(void)state;
	/* no store: a label that names no port is refused before any lookup */
	memset(&ctx, 0, sizeof(ctx));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sp_err_clear(&e);
		assert_int_equal(sandbox_port_resolve(&ctx, bad[i], target, sizeof(target), org,
						      sizeof(org), &e),
				 -1);
		assert_int_equal(e.code, SP_NOT_FOUND);
	}
}

static void test_split(void **state)
{
	char label[80], rest[256];

	(void)state;
	assert_int_equal(v1_ports_preview_split("", 0, "/p/8080-" U1 "/a/b?c=1", "h", label,
						sizeof(label), rest, sizeof(rest)),
			 0);
	assert_string_equal(label, "8080-" U1);
	assert_string_equal(rest, "/a/b?c=1");
	assert_int_equal(v1_ports_preview_split("", 0, "/p/8080-" U1 "?q", "h", label,
						sizeof(label), rest, sizeof(rest)),
			 0);
	assert_string_equal(rest, "/?q");
	assert_int_equal(v1_ports_preview_split("preview.test", 1, "/x",
						"8080-" U1 ".Preview.Test:8443", label,
						sizeof(label), rest, sizeof(rest)),
			 0);
	assert_string_equal(label, "8080-" U1);
	assert_string_equal(rest, "/x");
	/* refused: no /p/, an empty label, a byte that would split a header or
	 * the request line, another domain, no domain configured, an empty
	 * first label (fuzz_preview found it) */
	static const struct {
		const char *domain, *uri, *host;
		int host_mode;
	} bad[] = {
		{ "", "/q/8080-" U1 "/", "h", 0 },
		{ "", "/p//x", "h", 0 },
		{ "", "/p/8080-" U1 "/a b", "h", 0 },
		{ "", "/p/8080-" U1 "/a\r\nX: y", "h", 0 },
		{ "", "/p/8080-" U1 "/\x7f", "h", 0 },
		{ "preview.test", "/", "8080-" U1 ".elsewhere.test", 1 },
		{ "preview.test", "/", "8080-" U1 ".preview.test.evil", 1 },
		{ "", "/", "8080-" U1 ".preview.test", 1 },
		{ "preview.test", "/", ".preview.test", 1 },
		{ "preview.test", "x", "8080-" U1 ".preview.test", 1 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(v1_ports_preview_split(bad[i].domain, bad[i].host_mode, bad[i].uri,
							bad[i].host, label, sizeof(label), rest,
							sizeof(rest)),
				 -1);
}

static void test_published(void **state)
{
	static struct sandbox sb;
	json_object *a, *o, *v;

	(void)state;
	sb.status = SB_RUNNING;
	snprintf(sb.ports, sizeof(sb.ports), "8080," U1 ",172.18.0.5,1");
	a = v1_ports_published(NULL, &sb);
	assert_int_equal(json_object_array_length(a), 1);
	o = json_object_array_get_idx(a, 0);
	assert_true(json_object_object_get_ex(o, "sandboxPort", &v));
	assert_int_equal(json_object_get_int(v), 8080);
	assert_true(json_object_object_get_ex(o, "url", &v));
	assert_string_equal(json_object_get_string(v), "/p/8080-" U1 "/");
	assert_true(json_object_object_get_ex(o, "protocol", &v));
	assert_string_equal(json_object_get_string(v), "tcp");
	/* never an address */
	assert_null(strstr(json_object_to_json_string(a), "172.18"));
	json_object_put(a);
	sb.status = SB_KILLED; /* a failed sandbox publishes nothing */
	a = v1_ports_published(NULL, &sb);
	assert_int_equal(json_object_array_length(a), 0);
	json_object_put(a);
}

static void test_preview_domain_config(void **state)
{
	static const char *const good[] = { "preview.example.com", "p.test:8443", "a-b.c9" };
	static const char *const bad[] = { "Preview.example.com", ".example.com",
					   "example.com.",	  "-x.example",
					   "x.example:",	  "x.example:123456",
					   "x.example:80a",	  "x_y.example",
					   "*.example.com",	  "x.example/p" };
	char dir[] = "/tmp/sandpit-unit-XXXXXX", path[256], key[256], err[512];
	static struct config cfg;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(key, sizeof(key), "%s/key", dir);
	snprintf(path, sizeof(path), "%s/conf", dir);
	f = fopen(key, "w");
	fputs("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", f);
	fclose(f);
	chmod(key, 0600);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		f = fopen(path, "w");
		fprintf(f, "data_key_file = %s\npreview_domain = %s\npreview_require_key = yes\n",
			key, good[i]);
		fclose(f);
		assert_int_equal(config_load(path, &cfg, err, sizeof(err)), 0);
		assert_string_equal(cfg.preview_domain, good[i]);
		assert_int_equal(cfg.preview_require_key, 1);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f = fopen(path, "w");
		fprintf(f, "data_key_file = %s\npreview_domain = %s\n", key, bad[i]);
		fclose(f);
		assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "preview_domain"));
	}
	unlink(path);
	unlink(key);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_published),
		cmocka_unit_test(test_preview_domain_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
