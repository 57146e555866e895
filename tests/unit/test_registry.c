/*
 * Registry transfer's edges (sandbox/registry.c, issue 17): image_registry
 * and image_registry_auth_file as config_load checks them (a clear message
 * naming the key; the file's mode; the X-Registry-Auth value built from
 * USER:PASSWORD), and the Docker requests the transfer may send.
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
#include <json-c/json.h>
#include <sodium.h>
#include "common/config.h"
#include "docker/docker.h"

static char dir[] = "/tmp/sandpit-unit-XXXXXX";
static char key[256], conf[256], auth[256];

static int setup(void **state)
{
	FILE *f;

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(key, sizeof(key), "%s/key", dir);
	snprintf(conf, sizeof(conf), "%s/conf", dir);
	snprintf(auth, sizeof(auth), "%s/auth", dir);
	f = fopen(key, "w");
	fputs("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", f);
	fclose(f);
	chmod(key, 0600);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(conf);
	unlink(auth);
	unlink(key);
	rmdir(dir);
	return 0;
}

static int load(const char *lines, struct config *cfg, char *err, size_t cap)
{
	FILE *f = fopen(conf, "w");

	fprintf(f, "data_key_file = %s\n%s", key, lines);
	fclose(f);
	return config_load(conf, cfg, err, cap);
}

static void write_auth(const char *text, mode_t mode)
{
	FILE *f = fopen(auth, "w");

	fputs(text, f);
	fclose(f);
	chmod(auth, mode);
}

static void test_registry_config(void **state)
{
	static const char *const good[] = { "127.0.0.1:5000/sandpit", "registry.example.com",
					    "localhost:5000", "r.example/a/b-c/d_e",
					    "r.example:443/team.x" };
	static const char *const bad[] = {
		"sandpit",	  "Registry.example.com/x", "127.0.0.1:5000/UPPER", "r.example/",
		"r.example//x",	  "r.example:/x",	    "r.example:123456",	    "r.example/-x",
		"r.example/a..b", "https://r.example",	    ".r.example",	    "r.example/x y"
	};
	static struct config cfg;
	char err[512], line[512];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(line, sizeof(line), "image_registry = %s\n", good[i]);
		assert_int_equal(load(line, &cfg, err, sizeof(err)), 0);
		assert_string_equal(cfg.image_registry, good[i]);
		assert_string_equal(cfg.registry_auth, "");
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "image_registry = %s\n", bad[i]);
		if (load(line, &cfg, err, sizeof(err)) != -1)
			fail_msg("took image_registry = %s", bad[i]);
		assert_non_null(strstr(err, "image_registry"));
	}
	/* long: 180 bytes go, 181 do not (a repository under it stays in 255) */
	{
		char longer[200];
		memset(longer, 'a', sizeof(longer));
		memcpy(longer, "r.example/", 10);
		longer[180] = '\0';
		snprintf(line, sizeof(line), "image_registry = %s\n", longer);
		assert_int_equal(load(line, &cfg, err, sizeof(err)), 0);
		longer[180] = 'a';
		longer[181] = '\0';
		snprintf(line, sizeof(line), "image_registry = %s\n", longer);
		assert_int_equal(load(line, &cfg, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "at most 180 bytes"));
	}
	/* the default: no registry */
	assert_int_equal(load("", &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.image_registry, "");
}

static void test_registry_auth_file(void **state)
{
	static struct config cfg;
	char err[512], line[1024], json[600];
	size_t len = 0;
	json_object *o, *v;

	(void)state;
	/* a credential file without a registry */
	snprintf(line, sizeof(line), "image_registry_auth_file = %s\n", auth);
	write_auth("user:pw\n", 0600);
	assert_int_equal(load(line, &cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "without image_registry"));

	snprintf(line, sizeof(line),
		 "image_registry = 127.0.0.1:5000/p\nimage_registry_auth_file = %s\n", auth);
	/* readable by others */
	write_auth("user:pw\n", 0644);
	assert_int_equal(load(line, &cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "chmod 600"));
	assert_null(strstr(err, "pw"));
	/* not USER:PASSWORD */
	for (size_t i = 0; i < 4; i++) {
		static const char *const badtext[] = { "nocolon\n", ":pw\n", "user:\n",
						       "a:b\nc:d\n" };
		write_auth(badtext[i], 0600);
		assert_int_equal(load(line, &cfg, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "USER:PASSWORD"));
	}
	/* a missing file */
	unlink(auth);
	assert_int_equal(load(line, &cfg, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "image_registry_auth_file"));
	/* good: base64url of the JSON Docker takes; a ':' in the password stays */
	write_auth("  alice:s3cr\"et:x  \n", 0600);
	assert_int_equal(load(line, &cfg, err, sizeof(err)), 0);
	assert_true(strlen(cfg.registry_auth) > 0);
	assert_null(strchr(cfg.registry_auth, '+'));
	assert_null(strchr(cfg.registry_auth, '/'));
	assert_int_equal(sodium_base642bin((unsigned char *)json, sizeof(json) - 1,
					   cfg.registry_auth, strlen(cfg.registry_auth), NULL, &len,
					   NULL, sodium_base64_VARIANT_URLSAFE),
			 0);
	json[len] = '\0';
	o = json_tokener_parse(json);
	assert_non_null(o);
	assert_true(json_object_object_get_ex(o, "username", &v));
	assert_string_equal(json_object_get_string(v), "alice");
	assert_true(json_object_object_get_ex(o, "password", &v));
	assert_string_equal(json_object_get_string(v), "s3cr\"et:x");
	assert_true(json_object_object_get_ex(o, "serveraddress", &v));
	assert_string_equal(json_object_get_string(v), "127.0.0.1:5000");
	json_object_put(o);
	config_wipe(&cfg);
	assert_string_equal(cfg.registry_auth, "");
}

static void test_registry_docker_paths(void **state)
{
	(void)state;
	assert_true(docker_path_allowed("POST", "/v1.41/images/sandpit-snapshot%3Aabc/tag"));
	assert_true(docker_path_allowed("POST", "/v1.41/images/127.0.0.1%3A5000%2Fp%2Fx/push"));
	assert_true(docker_path_allowed(
		"GET", "/v1.41/distribution/127.0.0.1%3A5000%2Fp%2Fx%3Alatest/json"));
	assert_false(docker_path_allowed("GET", "/v1.41/images/x/push"));
	assert_false(docker_path_allowed("POST", "/v1.41/distribution/x/json"));
	assert_false(docker_path_allowed("POST", "/v1.41/images/a/b/push"));
	assert_false(docker_path_allowed("GET", "/v1.41/distribution/%2E%2E/json"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry_config),
		cmocka_unit_test(test_registry_auth_file),
		cmocka_unit_test(test_registry_docker_paths),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
