/*
 * Unit tests for Sentinel discovery's parsers: the answers of ROLE and of
 * SENTINEL get-master-addr-by-name (fed as RESP bytes through hiredis's
 * reader, the way they come off the wire), the sentinel list, and the
 * configuration keys that build the sentinel:// url.
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
#include "store/sentinel.h"
#include "store/store.h"

/* One reply parsed from RESP bytes; free with freeReplyObject. */
static redisReply *resp(const char *bytes)
{
	redisReader *rd = redisReaderCreate();
	void *r = NULL;

	assert_non_null(rd);
	assert_int_equal(redisReaderFeed(rd, bytes, strlen(bytes)), REDIS_OK);
	assert_int_equal(redisReaderGetReply(rd, &r), REDIS_OK);
	assert_non_null(r);
	redisReaderFree(rd);
	return r;
}

static int role_of(const char *bytes)
{
	redisReply *r = resp(bytes);
	int rc = sentinel_role_is_master(r);
	freeReplyObject(r);
	return rc;
}

static void test_role(void **state)
{
	(void)state;
	/* a master: role, offset, replicas */
	assert_int_equal(role_of("*3\r\n$6\r\nmaster\r\n:3129659\r\n*1\r\n*3\r\n$9\r\n127.0.0.1\r\n"
				 "$4\r\n9001\r\n$7\r\n3129242\r\n"),
			 1);
	assert_int_equal(role_of("*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"), 1);
	/* a replica: a demoted master or a stale sentinel answer */
	assert_int_equal(
		role_of("*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:9000\r\n$9\r\nconnected\r\n"
			":3167038\r\n"),
		0);
	assert_int_equal(role_of("*2\r\n$8\r\nsentinel\r\n*1\r\n$8\r\nmymaster\r\n"), 0);
	/* not a ROLE answer */
	assert_int_equal(role_of("-ERR unknown command 'ROLE'\r\n"), -1);
	assert_int_equal(role_of("+OK\r\n"), -1);
	assert_int_equal(role_of("*0\r\n"), -1);
	assert_int_equal(role_of("*1\r\n$7\r\nmasters\r\n"), -1);
	assert_int_equal(role_of("*1\r\n:1\r\n"), -1);
	assert_int_equal(sentinel_role_is_master(NULL), -1);
}

static void test_master_addr(void **state)
{
	char host[64];
	int port = 0;
	redisReply *r;

	(void)state;
	r = resp("*2\r\n$9\r\n127.0.0.1\r\n$5\r\n26380\r\n");
	assert_int_equal(sentinel_addr_from_reply(r, host, sizeof(host), &port), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 26380);
	freeReplyObject(r);
	r = resp("*2\r\n$3\r\n::1\r\n$4\r\n6379\r\n");
	assert_int_equal(sentinel_addr_from_reply(r, host, sizeof(host), &port), 0);
	assert_string_equal(host, "::1");
	freeReplyObject(r);
	/* unknown name, errors, bad ports, odd shapes */
	static const char *const bad[] = {
		"*-1\r\n",
		"$-1\r\n",
		"-IDONTKNOW No such master with that name\r\n",
		"*2\r\n$9\r\n127.0.0.1\r\n$1\r\n0\r\n",
		"*2\r\n$9\r\n127.0.0.1\r\n$5\r\n65536\r\n",
		"*2\r\n$9\r\n127.0.0.1\r\n$2\r\nxx\r\n",
		"*1\r\n$9\r\n127.0.0.1\r\n",
		"*2\r\n$0\r\n\r\n$4\r\n6379\r\n",
		"*2\r\n$9\r\n127.0.0.1\r\n:6379\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = resp(bad[i]);
		assert_int_equal(sentinel_addr_from_reply(r, host, sizeof(host), &port), -1);
		freeReplyObject(r);
	}
	/* a host longer than the buffer */
	r = resp("*2\r\n$9\r\n127.0.0.1\r\n$4\r\n6379\r\n");
	assert_int_equal(sentinel_addr_from_reply(r, host, 9, &port), -1);
	freeReplyObject(r);
}

static void test_list(void **state)
{
	struct sentinel sn;
	const char *l = "127.0.0.1:26379, 10.0.0.2:26380,[::1]:26381";

	(void)state;
	assert_int_equal(sentinel_parse(&sn, l, strlen(l), "mymaster", 8), 0);
	assert_int_equal(sn.n, 3);
	assert_string_equal(sn.host[1], "10.0.0.2");
	assert_int_equal(sn.port[1], 26380);
	assert_string_equal(sn.host[2], "::1");
	assert_int_equal(sn.port[2], 26381);
	assert_string_equal(sn.name, "mymaster");
	static const char *const bad[] = { "",	   "host",  "host:",
					   ":1",   "h:0",   "h:70000",
					   "h:1,", "a/b:1", "h:1,h:2,h:3,h:4,h:5,h:6,h:7,h:8,h:9" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(sentinel_parse(&sn, bad[i], strlen(bad[i]), "m", 1), -1);
	assert_int_equal(sentinel_parse(&sn, "h:1", 3, "", 0), -1);
	assert_int_equal(sentinel_parse(&sn, "h:1", 3, "a b", 3), -1);
}

/* Loads a config with the given extra lines; returns 0 or -1. */
static int load(const char *lines, struct config *cfg, char *err)
{
	char dir[] = "/tmp/sandpit-unit-XXXXXX", conf[128], key[128];
	FILE *f;
	int rc;

	assert_non_null(mkdtemp(dir));
	snprintf(key, sizeof(key), "%s/data.key", dir);
	snprintf(conf, sizeof(conf), "%s/sandpitd.conf", dir);
	f = fopen(key, "w");
	assert_non_null(f);
	fputs("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", f);
	fclose(f);
	chmod(key, 0600);
	f = fopen(conf, "w");
	assert_non_null(f);
	fprintf(f, "data_key_file = %s\n%s\n", key, lines);
	fclose(f);
	rc = config_load(conf, cfg, err, 512);
	unlink(key);
	unlink(conf);
	rmdir(dir);
	return rc;
}

static void test_config(void **state)
{
	static struct config cfg;
	char err[512];
	struct sp_err e;
	struct store *st;

	(void)state;
	assert_int_equal(load("redis_url = redis://10.0.0.9:6379/3\n"
			      "redis_sentinels = 127.0.0.1:26379,127.0.0.1:26380\n"
			      "redis_master_name = mymaster",
			      &cfg, err),
			 0);
	assert_string_equal(cfg.redis_url, "sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster/3");
	st = store_open(cfg.redis_url, "sp", &e);
	assert_non_null(st);
	store_close(st);
	assert_int_equal(load("redis_sentinels = 127.0.0.1:26379\nredis_master_name = m\n"
			      "redis_wait_replicas = 1\nredis_wait_timeout_ms = 500",
			      &cfg, err),
			 0);
	assert_string_equal(cfg.redis_url, "sentinel://127.0.0.1:26379/m/0?wait=1&wait_ms=500");
	st = store_open(cfg.redis_url, "sp", &e);
	assert_non_null(st);
	store_close(st);
	/* plain urls are unchanged */
	assert_int_equal(load("redis_url = unix:///run/r.sock", &cfg, err), 0);
	assert_string_equal(cfg.redis_url, "unix:///run/r.sock");
	/* a master name is required, the list must parse */
	assert_int_equal(load("redis_sentinels = 127.0.0.1:26379", &cfg, err), -1);
	assert_non_null(strstr(err, "redis_master_name"));
	assert_int_equal(load("redis_sentinels = 127.0.0.1\nredis_master_name = m", &cfg, err), -1);
	assert_int_equal(load("redis_sentinels = a:1,b:2/x\nredis_master_name = m", &cfg, err), -1);
	assert_null(store_open("sentinel://h:1", "sp", &e));
	assert_null(store_open("sentinel://h:1/m/x", "sp", &e));
	assert_null(store_open("redis://h:1?wait=x", "sp", &e));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_role),
		cmocka_unit_test(test_master_addr),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
