/*
 * Unit tests for the parsers and checks that read outside input: the
 * route validator, UTF-8 repair, the configuration loader, and the
 * crypto wrappers (sealing, key hashing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <fcgiapp.h>
#include <hiredis.h>

#include "common/buf.h"
#include "common/config.h"
#include "common/crypto.h"
#include "common/metrics.h"
#include "common/perms.h"
#include "common/utf8.h"
#include "fcgi/request.h"
#include "fcgi/route.h"
#include "store/store.h"

extern const struct route handler_routes[];

static const struct route *find(const char *method, const char *path)
{
	int ok;
	const struct route *rt = route_find(handler_routes, method, path, &ok);
	assert_non_null(rt);
	assert_true(ok);
	return rt;
}

/* Validates a JSON text against a route; returns the failing field or "". */
static const char *check(const char *path, const char *json, int from_query, char *field)
{
	const struct route *rt = find(from_query ? "GET" : "POST", path);
	json_object *in = json_tokener_parse(json), *issues = NULL;
	struct sp_err e;
	int rc;

	assert_non_null(in);
	sp_err_clear(&e);
	rc = route_validate(rt, in, from_query, &e, &issues);
	field[0] = '\0';
	if (rc < 0) {
		assert_int_equal(e.code, SP_BAD_REQUEST);
		assert_non_null(issues);
		snprintf(field, 128, "%s", e.field);
		assert_non_null(strstr(e.msg, e.field));
	}
	json_object_put(issues);
	json_object_put(in);
	return field;
}

static void test_create_bounds(void **state)
{
	char f[128];
	(void)state;
	assert_string_equal(check("/api/sandbox.create", "{\"template\":\"python\"}", 0, f), "");
	assert_string_equal(check("/api/sandbox.create", "{\"cpu\":0.1,\"memoryMb\":64}", 0, f),
			    "");
	assert_string_equal(check("/api/sandbox.create", "{\"cpu\":0.09}", 0, f), "cpu");
	assert_string_equal(check("/api/sandbox.create", "{\"cpu\":\"1\"}", 0, f), "cpu");
	assert_string_equal(check("/api/sandbox.create", "{\"memoryMb\":262145}", 0, f),
			    "memoryMb");
	assert_string_equal(check("/api/sandbox.create", "{\"memoryMb\":1.5}", 0, f), "memoryMb");
	assert_string_equal(check("/api/sandbox.create", "{\"memoryMb\":512.0}", 0, f), "");
	assert_string_equal(check("/api/sandbox.create", "{\"pidsLimit\":15}", 0, f), "pidsLimit");
	assert_string_equal(check("/api/sandbox.create", "{\"networkMode\":\"host\"}", 0, f),
			    "networkMode");
	assert_string_equal(check("/api/sandbox.create", "{\"workdir\":\"rel\"}", 0, f), "workdir");
	assert_string_equal(check("/api/sandbox.create", "{\"workdir\":\"/a\\u0000b\"}", 0, f),
			    "workdir");
	assert_string_equal(check("/api/sandbox.create", "{\"bogus\":1}", 0, f), "bogus");
	assert_string_equal(check("/api/sandbox.create", "{\"serverId\":null}", 0, f), "");
	assert_string_equal(check("/api/sandbox.create", "{\"name\":null}", 0, f), "name");
	assert_string_equal(check("/api/sandbox.create", "{\"template\":\"../x\"}", 0, f),
			    "template");
}

static void test_exec_and_query(void **state)
{
	char f[128];
	(void)state;
	assert_string_equal(
		check("/api/sandbox.exec", "{\"sandboxId\":\"a\",\"cmd\":\"ls\"}", 0, f), "");
	assert_string_equal(check("/api/sandbox.exec", "{\"sandboxId\":\"a\",\"cmd\":\"\"}", 0, f),
			    "cmd");
	assert_string_equal(check("/api/sandbox.exec", "{\"cmd\":\"ls\"}", 0, f), "sandboxId");
	assert_string_equal(check("/api/sandbox.exec",
				  "{\"sandboxId\":\"a\",\"cmd\":\"x\",\"env\":{\"1A\":\"v\"}}", 0,
				  f),
			    "env");
	assert_string_equal(check("/api/sandbox.exec",
				  "{\"sandboxId\":\"a\",\"cmd\":\"x\",\"env\":{\"A\":1}}", 0, f),
			    "env");
	assert_string_equal(check("/api/sandbox.exec",
				  "{\"sandboxId\":\"a\",\"cmd\":\"x\",\"timeoutMs\":999}", 0, f),
			    "timeoutMs");
	/* query strings: numbers come as text and are coerced */
	assert_string_equal(check("/api/sandbox.one", "{\"sandboxId\":\"abc\"}", 1, f), "");
	assert_string_equal(check("/api/sandbox.one", "{\"sandboxId\":\"a/b\"}", 1, f),
			    "sandboxId");
	assert_string_equal(check("/api/sandbox.readFile",
				  "{\"sandboxId\":\"a\",\"path\":\"/x\",\"encoding\":\"hex\"}", 1,
				  f),
			    "encoding");
}

/* Regression (found by tests/fuzz/fuzz_request.c): error answers echoed
 * request keys cut at a byte count, splitting a UTF-8 sequence, so the
 * JSON answer (or the WebSocket text frame of sandpit-stream) was not
 * valid UTF-8. Cuts now fall between sequences, and raw bytes in a message
 * become U+FFFD. */
static void test_error_text_stays_utf8(void **state)
{
	char body[512], key[256];
	const struct route *rt = find("POST", "/api/sandbox.exec");
	json_object *in, *issues = NULL;
	struct sp_err e;
	size_t k = 0;
	(void)state;

	assert_int_equal(utf8_prefix("abc", 5), 3);
	assert_int_equal(utf8_prefix("ab\xc3\xa9", 3), 2);
	assert_int_equal(utf8_prefix("ab\xc3\xa9", 4), 4);
	assert_int_equal(utf8_prefix("\xf0\x9f\x98\x80x", 3), 0);

	key[k++] = 'a';
	while (k + 2 < sizeof(key) - 1) {
		key[k++] = '\xc3';
		key[k++] = '\xa9';
	}
	key[k] = '\0';
	/* an unknown key, and an env key, longer than any cut */
	snprintf(body, sizeof(body), "{\"sandboxId\":\"x\",\"cmd\":\"x\",\"%s\":1}", key);
	in = json_tokener_parse(body);
	assert_non_null(in);
	assert_int_equal(route_validate(rt, in, 0, &e, &issues), -1);
	assert_true(utf8_valid(e.msg, strlen(e.msg)));
	assert_true(utf8_valid(e.field, strlen(e.field)));
	assert_true(strlen(e.field) >= sizeof(e.field) - 4);
	assert_true(utf8_valid(json_object_to_json_string(issues),
			       strlen(json_object_to_json_string(issues))));
	json_object_put(issues);
	json_object_put(in);
	snprintf(body, sizeof(body), "{\"sandboxId\":\"x\",\"cmd\":\"x\",\"env\":{\"%.100s\":1}}",
		 key);
	in = json_tokener_parse(body);
	assert_non_null(in);
	assert_int_equal(route_validate(rt, in, 0, &e, &issues), -1);
	assert_true(utf8_valid(e.msg, strlen(e.msg)));
	json_object_put(issues);
	json_object_put(in);

	/* a raw byte, such as a request path's, and a message cut at the cap */
	sp_err_field(&e, SP_NOT_FOUND, "p\xff",
		     "No procedure at /a\xff"
		     "b");
	assert_string_equal(e.msg, "No procedure at /a\xef\xbf\xbd"
				   "b");
	assert_string_equal(e.field, "p\xef\xbf\xbd");
	sp_err_set(&e, SP_BAD_REQUEST, "%s%s%s", key, key, key);
	assert_true(utf8_valid(e.msg, strlen(e.msg)));
	assert_true(strlen(e.msg) >= sizeof(e.msg) - 4);
}

static void test_utf8(void **state)
{
	struct buf b;
	(void)state;
	assert_true(utf8_valid("h\xC3\xA9llo", 6));
	assert_false(utf8_valid("\xC3", 1));
	assert_false(utf8_valid("\xED\xA0\x80", 3)); /* a surrogate */
	assert_false(utf8_valid("\xC0\xAF", 2));     /* overlong */
	assert_true(utf8_valid("a\0b", 3));	     /* NUL is valid UTF-8 */
	buf_init(&b, 1024);
	assert_int_equal(utf8_sanitize("a\xFF"
				       "b\0c\xE2\x82",
				       7, &b),
			 0);
	assert_int_equal(b.len, 1 + 3 + 1 + 1 + 1 + 3 + 3);
	assert_memory_equal(b.data,
			    "a\xEF\xBF\xBD"
			    "b\0c\xEF\xBF\xBD\xEF\xBF\xBD",
			    b.len);
	assert_true(utf8_valid(b.data, b.len));
	buf_free(&b);
}

/* utf8_json_escape against json-c's own escaping of the repaired bytes,
 * fed whole and in every two-piece split (a cut sequence waits for the
 * next piece). */
static void check_json_escape(const char *in, size_t n)
{
	size_t used;
	struct buf clean, want, got, pend;
	json_object *s;
	const char *j;

	buf_init(&clean, 4096);
	buf_init(&want, 4096);
	assert_int_equal(utf8_sanitize(in, n, &clean), 0);
	s = json_object_new_string_len(clean.data, (int)clean.len);
	j = json_object_to_json_string_ext(s,
					   JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	assert_int_equal(buf_append(&want, j + 1, strlen(j) - 2), 0); /* without the quotes */
	for (size_t cut = 0; cut <= n; cut++) {
		json_object *back;
		char quoted[4096];
		buf_init(&got, 4096);
		buf_init(&pend, 4096);
		assert_int_equal(utf8_json_escape(in, cut, 0, &got, &used), 0);
		assert_true(cut - used <= 3);
		assert_int_equal(buf_append(&pend, in + used, cut - used), 0);
		assert_int_equal(buf_append(&pend, in + cut, n - cut), 0);
		assert_int_equal(
			utf8_json_escape(pend.data ? pend.data : "", pend.len, 1, &got, &used), 0);
		assert_int_equal(used, pend.len);
		snprintf(quoted, sizeof(quoted), "\"%.*s\"", (int)got.len,
			 got.data ? got.data : "");
		back = json_tokener_parse(quoted);
		assert_non_null(back);
		assert_int_equal(json_object_get_string_len(back), (int)clean.len);
		assert_memory_equal(json_object_get_string(back), clean.data, clean.len);
		json_object_put(back);
		buf_free(&got);
		buf_free(&pend);
	}
	/* the same text as json-c, byte for byte (\u escapes in either case) */
	buf_init(&got, 4096);
	assert_int_equal(utf8_json_escape(in, n, 1, &got, &used), 0);
	assert_int_equal(got.len, want.len);
	assert_int_equal(strncasecmp(got.data, want.data, got.len), 0);
	buf_free(&got);
	json_object_put(s);
	buf_free(&clean);
	buf_free(&want);
}

static void test_utf8_json_escape(void **state)
{
	static const char mixed[] = "a\"b\\c/\n\t\x01\x1f\x7f\xE2\x82\xAC\xF0\x9F\x98\x80\xFF"
				    "\xE2\x82"
				    "z\0end\xC3";
	/* long plain runs (the 8-bytes-at-a-time path) broken by each kind */
	static const char runs[] =
		"abcdefghijklmnopqrstuvwxyz0123456789\"ABCDEFGHIJKLMNOPQRSTUVWXYZ!#$%"
		"&'()*+,-./:;<=>?@[]^_`{|}~ \\abcdefghijklmnop\x1f"
		"abcdefghijklmnop"
		"\x80"
		"abcdefghijklmnop\xC3\xA9"
		"abcdefghijklmnop\x7f"
		"abcdefgh";
	(void)state;
	check_json_escape(mixed, sizeof(mixed) - 1);
	check_json_escape(runs, sizeof(runs) - 1);
	check_json_escape("", 0);
}

static void test_config(void **state)
{
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
	f = fopen(path, "w");
	fprintf(f,
		"# comment\nlisten = /tmp/x.sock\ndata_key_file = %s\nworkers_max = 7 # trailing\n"
		"template.python = local/python:1\ntemplate.extra = local/extra\n",
		key);
	fclose(f);
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.workers_max, 7);
	assert_string_equal(config_template(&cfg, "python")->image, "local/python:1");
	assert_string_equal(config_template(&cfg, "extra")->image, "local/extra");
	assert_int_equal(cfg.data_key[0], 0x00);
	assert_int_equal(cfg.data_key[31], 0xff);
	{
		char n[128];
		/* naming sandpit (the default): the prefixes */
		config_network_name(&cfg, "isolated", n, sizeof(n));
		assert_string_equal(n, "sandpit-isolated");
		config_network_name(&cfg, "internet", n, sizeof(n));
		assert_string_equal(n, "sandpit-internet");
		config_network_label(&cfg, n, sizeof(n));
		assert_string_equal(n, "sandpit.network");
		config_container_name(&cfg, "abc", n, sizeof(n));
		assert_string_equal(n, "sandpit-abc");
		/* naming dokploy: Dokploy's names, whatever the prefixes say */
		f = fopen(path, "w");
		fprintf(f,
			"data_key_file = %s\nlabel_prefix = x\nnaming = dokploy\nnetwork_prefix = y\n",
			key);
		fclose(f);
		assert_int_equal(config_load(path, &cfg, err, sizeof(err)), 0);
		config_network_name(&cfg, "isolated", n, sizeof(n));
		assert_string_equal(n, "dokploy-sandboxes-isolated");
		config_network_name(&cfg, "internet", n, sizeof(n));
		assert_string_equal(n, "dokploy-sandboxes");
		config_network_label(&cfg, n, sizeof(n));
		assert_string_equal(n, "dokploy.sandbox");
		config_label(&cfg, "sandboxId", n, sizeof(n));
		assert_string_equal(n, "dokploy.sandboxId");
		config_container_name(&cfg, "abc", n, sizeof(n));
		assert_string_equal(n, "dokploy-sandbox-abc");
		assert_string_equal(cfg.label_prefix, "dokploy");
		f = fopen(path, "w");
		fprintf(f, "data_key_file = %s\nnaming = other\n", key);
		fclose(f);
		assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "naming must be sandpit or dokploy"));
	}
	f = fopen(path, "w");
	fprintf(f, "data_key_file = %s\nworkers_min = 9\nworkers_max = 3\n", key);
	fclose(f);
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "workers_min"));
	/* container_label: KEY=VALUE, never one of sandpit's own labels */
	f = fopen(path, "w");
	fprintf(f, "data_key_file = %s\ncontainer_label = sandpit-test.run=r1-x  a.b=c=d\n", key);
	fclose(f);
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.container_label, "sandpit-test.run=r1-x  a.b=c=d");
	static const char *const bad_labels[] = { "novalue",
						  "=v",
						  "a b=c",
						  "sandpit.sandbox=false",
						  "k=\x01",
						  "a=1 sandpit.x=2",
						  "a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9" };
	for (size_t i = 0; i < sizeof(bad_labels) / sizeof(bad_labels[0]); i++) {
		f = fopen(path, "w");
		fprintf(f, "data_key_file = %s\ncontainer_label = %s\n", key, bad_labels[i]);
		fclose(f);
		assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "container_label"));
	}
	/* the network keys: defaults, good and bad values */
	f = fopen(path, "w");
	fprintf(f, "data_key_file = %s\n", key);
	fclose(f);
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.deny_cidrs, "169.254.0.0/16,100.100.100.200/32");
	assert_int_equal(cfg.allow_unfiltered_local, 0);
	f = fopen(path, "w");
	fprintf(f,
		"data_key_file = %s\ndeny_cidrs = 10.0.0.0/8, 192.168.0.0/16,0.0.0.0/0\n"
		"probe_ports = 22, 65535\nallow_unfiltered_local = true\n",
		key);
	fclose(f);
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.allow_unfiltered_local, 1);
	{
		static const char *const bad[] = {
			"deny_cidrs = 10.0.0.0",
			"deny_cidrs = 10.0.0.0/33",
			"deny_cidrs = 10.0.0/8",
			"deny_cidrs = 256.0.0.0/8",
			"deny_cidrs = 010.0.0.0/8",
			"deny_cidrs = -j ACCEPT",
			"deny_cidrs = fd00::/8",
			"probe_ports = 0",
			"probe_ports = 65536",
			"probe_ports = 22;rm",
			"network_prefix = a-very-long-prefix-over-20",
			"network_prefix = bad/name",
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			f = fopen(path, "w");
			fprintf(f, "data_key_file = %s\n%s\n", key, bad[i]);
			fclose(f);
			assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -1);
		}
	}
	/* the disk keys (README "Disk limits") */
	f = fopen(path, "w");
	fprintf(f,
		"data_key_file = %s\ndisk_limit = loop\ndisk_default_mb = 64\ndisk_max_mb = 128\n"
		"disk_reserve_mb = 10\ndisk_reserve_inodes = 20\ndisk_preallocate = yes\n"
		"disk_dir = /srv/disks\n",
		key);
	fclose(f);
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.disk_limit, "loop");
	assert_int_equal(cfg.disk_default_mb, 64);
	assert_int_equal(cfg.disk_max_mb, 128);
	assert_int_equal(cfg.disk_reserve_mb, 10);
	assert_int_equal(cfg.disk_reserve_inodes, 20);
	assert_int_equal(cfg.disk_preallocate, 1);
	assert_int_equal(cfg.disk_readonly_rootfs, 1);
	assert_string_equal(cfg.disk_dir, "/srv/disks");
	f = fopen(path, "w");
	fprintf(f, "data_key_file = %s\ndisk_limit = quota\n", key);
	fclose(f);
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "disk_limit"));
	f = fopen(path, "w");
	fprintf(f, "data_key_file = %s\ndisk_default_mb = 2048\ndisk_max_mb = 1024\n", key);
	fclose(f);
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "disk_default_mb"));
	f = fopen(path, "w");
	fprintf(f, "data_key_file = %s\ndisk_dir = relative\n", key);
	fclose(f);
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "disk_dir"));
	chmod(key, 0644);
	f = fopen(path, "w");
	fprintf(f, "data_key_file = %s\n", key);
	fclose(f);
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "chmod 600"));
	unlink(key);
	unlink(path);
	rmdir(dir);
}

static void test_crypto(void **state)
{
	unsigned char k[32] = { 1, 2, 3 };
	char h1[65], h2[65], key[64];
	struct buf sealed, plain;
	(void)state;
	assert_int_equal(crypto_init(), 0);
	crypto_new_api_key(key, sizeof(key));
	assert_int_equal(strncmp(key, "sp_", 3), 0);
	assert_int_equal(strlen(key), 46);
	crypto_key_hash(k, key, strlen(key), h1);
	crypto_key_hash(k, key, strlen(key), h2);
	assert_string_equal(h1, h2);
	k[0] = 9;
	crypto_key_hash(k, key, strlen(key), h2);
	assert_string_not_equal(h1, h2);
	buf_init(&sealed, 4096);
	buf_init(&plain, 4096);
	assert_int_equal(crypto_seal(k, "sb1", "SECRET=x", 8, &sealed), 0);
	assert_null(strstr(sealed.data, "SECRET"));
	assert_int_equal(crypto_open(k, "sb1", sealed.data, sealed.len, &plain), 0);
	assert_memory_equal(plain.data, "SECRET=x", 8);
	buf_reset(&plain);
	assert_int_equal(crypto_open(k, "sb2", sealed.data, sealed.len, &plain),
			 -1); /* bound to id */
	buf_free(&sealed);
	buf_free(&plain);
}

/* Every sample line gets the instance label; comments and blank lines stay. */
static void test_metrics_label(void **state)
{
	static const char in[] = "# HELP a An a.\n# TYPE a counter\na 1\n"
				 "b{x=\"1\",y=\"2\"} 3\nc{} 4\n\nd_bucket{le=\"+Inf\"} 5\n";
	static const char want[] = "# HELP a An a.\n# TYPE a counter\na{i=\"s\\\"2\"} 1\n"
				   "b{i=\"s\\\"2\",x=\"1\",y=\"2\"} 3\nc{i=\"s\\\"2\"} 4\n\n"
				   "d_bucket{i=\"s\\\"2\",le=\"+Inf\"} 5\n";
	struct buf out;
	char name[32];

	(void)state;
	buf_init(&out, 4096);
	assert_int_equal(metrics_add_label(in, sizeof(in) - 1, "i", "s\"2", &out), 0);
	assert_int_equal(out.len, sizeof(want) - 1);
	assert_memory_equal(out.data, want, out.len);
	buf_free(&out);
	buf_init(&out, 8); /* the cap is kept */
	assert_int_equal(metrics_add_label(in, sizeof(in) - 1, "i", "s", &out), -1);
	buf_free(&out);
	metrics_instance_name("/run/sandpit/sandpitd-2.sock", name, sizeof(name));
	assert_string_equal(name, "sandpitd-2");
	metrics_instance_name("stream.sock", name, sizeof(name));
	assert_string_equal(name, "stream");
	metrics_instance_name("/x/plain", name, sizeof(name));
	assert_string_equal(name, "plain");
}

/* A record read back keeps every field: store_rec once stopped at 48 and
 * dropped the rest without a word. */
static void test_store_rec_many_fields(void **state)
{
	enum { FIELDS = 200 };
	struct buf resp;
	redisReader *rd = redisReaderCreate();
	void *reply = NULL;
	struct store_rec rec = { 0 };
	char name[16];

	(void)state;
	buf_init(&resp, 1 << 20);
	assert_int_equal(buf_printf(&resp, "*%d\r\n", 2 * FIELDS + 1), 0);
	for (int i = 0; i < FIELDS; i++)
		assert_int_equal(buf_printf(&resp, "$4\r\nf%03d\r\n$4\r\nv%03d\r\n", i, i), 0);
	assert_int_equal(buf_append(&resp, "$3\r\nbin\r\n", 9),
			 0); /* a name with no value: not a field */
	assert_int_equal(redisReaderFeed(rd, resp.data, resp.len), REDIS_OK);
	assert_int_equal(redisReaderGetReply(rd, &reply), REDIS_OK);
	assert_non_null(reply);
	assert_int_equal(store_rec_from_reply(reply, &rec), 0);
	assert_int_equal(rec.n, FIELDS);
	for (int i = 0; i < FIELDS; i += 7) {
		char want[8];
		snprintf(name, sizeof(name), "f%03d", i);
		snprintf(want, sizeof(want), "v%03d", i);
		assert_string_equal(store_rec_get(&rec, name), want);
	}
	assert_string_equal(store_rec_get(&rec, "f199"), "v199");
	assert_int_equal(rec.vlen[FIELDS - 1], 4);
	store_rec_free(&rec);
	assert_int_equal(rec.n, 0);
	assert_null(rec.name);
	freeReplyObject(reply);
	redisReaderFree(rd);
	buf_free(&resp);
}

/* Every valid permission list fits the buffers that hold one (the auth
 * cache, X-Sandpit-Perms, sandpit-stream's upgrade). */
static void test_perms_list_fits(void **state)
{
	size_t all = 0;

	(void)state;
	for (const char *const *k = perms_known; *k; k++)
		all += strlen(*k) + 1;
	assert_true(all < PERMS_LIST_MAX);
}

/* A FastCGI output stream into memory, for req_send_json. */
static unsigned char fcgi_out[256 * 1024];

static void fcgi_out_full(FCGX_Stream *s, int close)
{
	(void)close;
	s->isClosed = 1; /* the test's buffer is far larger than any answer */
}

static const char *send_with_headers(size_t extra, int *status)
{
	FCGX_Stream st = { 0 };
	FCGX_Request fx = { 0 };
	struct req r = { 0 };
	struct buf hdr;
	json_object *o = json_object_new_object();

	st.wrNext = fcgi_out;
	st.stop = fcgi_out + sizeof(fcgi_out) - 1;
	st.emptyBuffProc = fcgi_out_full;
	fx.out = &st;
	fx.ipcFd = -1;
	r.fx = &fx;
	buf_init(&hdr, 1 << 20);
	while (hdr.len < extra)
		assert_int_equal(buf_printf(&hdr, "X-Long-%zu: %s\r\n", hdr.len,
					    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
				 0);
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	req_send_json(&r, 200, hdr.len ? hdr.data : NULL, o);
	json_object_put(o);
	buf_free(&hdr);
	*st.wrNext = '\0';
	*status = r.status;
	return (const char *)fcgi_out;
}

/* req_send_json once dropped an answer whose head passed 2 KiB: nothing
 * was written at all. Now the head grows; past REQ_HEAD_MAX the answer is
 * a 500 that says why. */
static void test_req_send_json_long_headers(void **state)
{
	int status;
	const char *out;

	(void)state;
	out = send_with_headers(0, &status);
	assert_int_equal(status, 200);
	assert_non_null(strstr(out, "Status: 200 OK\r\n"));
	assert_non_null(strstr(out, "\r\n\r\n{\"ok\":true}\n"));
	out = send_with_headers(4096, &status);
	assert_int_equal(status, 200);
	assert_non_null(strstr(out, "Status: 200 OK\r\n"));
	assert_non_null(strstr(out, "X-Long-0: "));
	assert_non_null(strstr(out, "\r\n\r\n{\"ok\":true}\n"));
	out = send_with_headers(REQ_HEAD_MAX + 100, &status);
	assert_int_equal(status, 500);
	assert_non_null(strstr(out, "Status: 500 Internal Server Error\r\n"));
	assert_non_null(strstr(out, "Answer headers over 64 KiB"));
	assert_null(strstr(out, "X-Long-0: "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_bounds),
		cmocka_unit_test(test_exec_and_query),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_utf8_json_escape),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_crypto),
		cmocka_unit_test(test_error_text_stays_utf8),
		cmocka_unit_test(test_metrics_label),
		cmocka_unit_test(test_store_rec_many_fields),
		cmocka_unit_test(test_perms_list_fits),
		cmocka_unit_test(test_req_send_json_long_headers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
