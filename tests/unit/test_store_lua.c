/*
 * The store's Lua programs (the files of store/lua, run by EVALSHA), against a
 * private redis-server on a unix socket in a temporary folder: each
 * embedded program compiles in Redis and its digest computed at build
 * time is the one Redis computes; the store keeps working after the
 * server forgets its programs (SCRIPT FLUSH, a restart) or its data
 * (FLUSHALL): the next call loads the program it needs and succeeds,
 * once, for a compare-and-set that must never run twice as for a read.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis.h>

#include "lua_programs.h"
#include "redis_unit.h"

/* A command on a connection of its own (not the store's); the reply. */
static redisReply *raw(const char *fmt, const char *arg)
{
	redisContext *c = redisConnectUnix(unit_redis_sock);
	redisReply *r;

	assert_non_null(c);
	assert_int_equal(c->err, 0);
	r = arg ? redisCommand(c, fmt, arg) : redisCommand(c, fmt);
	redisFree(c);
	assert_non_null(r);
	return r;
}

/* Whether the server has the program (SCRIPT EXISTS). */
static int loaded(const struct store_lua *p)
{
	redisReply *r = raw("SCRIPT EXISTS %s", p->sha);
	int yes;

	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	yes = r->element[0]->integer == 1;
	freeReplyObject(r);
	return yes;
}

static void test_each_program_compiles_with_its_digest(void **state)
{
	(void)state;
	assert_true(store_lua_count >= 20);
	for (int i = 0; i < store_lua_count; i++) {
		const struct store_lua *p = store_lua_all[i];
		redisReply *r = raw("SCRIPT LOAD %s", p->text);
		if (r->type != REDIS_REPLY_STRING)
			fail_msg("%s: %s", p->name, r->str ? r->str : "not loaded");
		assert_string_equal(r->str, p->sha);
		freeReplyObject(r);
	}
}

/* A compare-and-set (never sent twice) and an index read, in org o, after
 * the server forgot every program (the command how). */
static void use_after_forget(const char *o, const char *how)
{
	struct store_rec recs[4];
	struct sp_err e;
	char *t = NULL;
	int n;

	assert_int_equal(store_obj_put(st, o, "snaps", "c", "v1", &e), 0);
	assert_int_equal(store_obj_cas(st, o, "snaps", "c", "v1", "v2", &e), 0);
	assert_int_equal(store_volume_put(st, o, "vol1",
					  (const char *const[]){ "volumeId", "vol1", "holder", "" },
					  4, 1, 10, &e),
			 0);
	assert_true(loaded(&store_lua_obj_cas));
	freeReplyObject(raw(how, NULL));
	if (strcmp(how, "FLUSHALL") == 0) {
		/* Redis 7 keeps its programs across FLUSHALL; the data is gone */
		assert_int_equal(store_obj_get(st, o, "snaps", "c", &t, &e), -1);
		assert_int_equal(store_obj_put(st, o, "snaps", "c", "v2", &e), 0);
	} else {
		assert_false(loaded(&store_lua_obj_cas));
		assert_false(loaded(&store_lua_index_records));
	}
	/* the same store, the same connection: loaded again, run once */
	assert_int_equal(store_obj_cas(st, o, "snaps", "c", "v2", "v3", &e), 0);
	assert_int_equal(store_obj_get(st, o, "snaps", "c", &t, &e), 0);
	assert_string_equal(t, "v3");
	free(t);
	assert_true(loaded(&store_lua_obj_cas));
	n = store_volume_list(st, o, recs, 4, &e);
	assert_int_equal(n, strcmp(how, "FLUSHALL") == 0 ? 0 : 1);
	for (int i = 0; i < n; i++)
		store_rec_free(&recs[i]);
	assert_true(loaded(&store_lua_index_records));
}

static void test_script_flush(void **state)
{
	(void)state;
	use_after_forget("f1", "SCRIPT FLUSH");
}

static void test_flushall(void **state)
{
	(void)state;
	use_after_forget("f2", "FLUSHALL");
}

/* A new server on the same socket: the store's connection is gone and
 * the new server has no program. */
static void test_restart(void **state)
{
	struct sp_err e;
	char *t = NULL;

	(void)state;
	assert_int_equal(store_obj_put(st, "o", "snaps", "r", "a", &e), 0);
	assert_int_equal(store_obj_cas(st, "o", "snaps", "r", "a", "b", &e), 0);
	assert_int_equal(unit_redis_restart(), 0);
	assert_false(loaded(&store_lua_obj_cas));
	assert_int_equal(store_obj_put(st, "o", "snaps", "r", "b", &e), 0);
	assert_int_equal(store_obj_cas(st, "o", "snaps", "r", "b", "c", &e), 0);
	assert_int_equal(store_obj_get(st, "o", "snaps", "r", &t, &e), 0);
	assert_string_equal(t, "c");
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_program_compiles_with_its_digest),
		cmocka_unit_test(test_script_flush),
		cmocka_unit_test(test_flushall),
		cmocka_unit_test(test_restart),
	};
	return cmocka_run_group_tests(tests, unit_redis_setup, unit_redis_teardown);
}
