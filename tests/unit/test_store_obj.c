/*
 * The org-scoped JSON records (store_obj_*, snapshots' "snaps") and the
 * lock helpers snapshots use (store_lock, store_locked, store_unlock),
 * against a private redis-server on a unix socket in a temporary folder:
 * a record is its org's only; a compare-and-set applies only over the
 * text it expects, and deletes with NULL; a lock is seen held until it is
 * dropped.
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

#include "common/buf.h"
#include "redis_unit.h"

static void test_put_get_list_org_scoped(void **state)
{
	struct store_rec r = { 0 };
	struct sp_err e;
	char *t = NULL;

	(void)state;
	assert_int_equal(store_obj_put(st, "a", "snaps", "s1", "{\"v\":1}", &e), 0);
	assert_int_equal(store_obj_put(st, "a", "snaps", "s2", "{\"v\":2}", &e), 0);
	assert_int_equal(store_obj_get(st, "a", "snaps", "s1", &t, &e), 0);
	assert_string_equal(t, "{\"v\":1}");
	free(t);
	/* another org, another kind: not there */
	assert_int_equal(store_obj_get(st, "b", "snaps", "s1", &t, &e), -1);
	assert_int_equal(e.code, SP_NOT_FOUND);
	assert_null(t);
	assert_int_equal(store_obj_get(st, "a", "vols", "s1", &t, &e), -1);
	assert_int_equal(store_obj_list(st, "a", "snaps", &r, &e), 0);
	assert_int_equal(r.n, 2);
	store_rec_free(&r);
	assert_int_equal(store_obj_list(st, "b", "snaps", &r, &e), 0);
	assert_int_equal(r.n, 0);
	store_rec_free(&r);
}

static void test_cas(void **state)
{
	struct sp_err e;
	char *t = NULL;

	(void)state;
	assert_int_equal(store_obj_put(st, "a", "snaps", "c", "old", &e), 0);
	/* over a text it no longer is: nothing */
	assert_int_equal(store_obj_cas(st, "a", "snaps", "c", "other", "new", &e), 1);
	assert_int_equal(store_obj_get(st, "a", "snaps", "c", &t, &e), 0);
	assert_string_equal(t, "old");
	free(t);
	assert_int_equal(store_obj_cas(st, "a", "snaps", "c", "old", "new", &e), 0);
	assert_int_equal(store_obj_get(st, "a", "snaps", "c", &t, &e), 0);
	assert_string_equal(t, "new");
	free(t);
	/* another org's cas never touches it */
	assert_int_equal(store_obj_cas(st, "b", "snaps", "c", "new", NULL, &e), 1);
	/* NULL deletes; a gone record is "differed" */
	assert_int_equal(store_obj_cas(st, "a", "snaps", "c", "new", NULL, &e), 0);
	assert_int_equal(store_obj_get(st, "a", "snaps", "c", &t, &e), -1);
	assert_int_equal(store_obj_cas(st, "a", "snaps", "c", "new", "again", &e), 1);
	assert_int_equal(store_obj_get(st, "a", "snaps", "c", &t, &e), -1);
}

static void test_lock_held_until_dropped(void **state)
{
	struct sp_err e;

	(void)state;
	assert_int_equal(store_locked(st, "snapcap:x", &e), 0);
	assert_int_equal(store_lock(st, "snapcap:x", 60000, &e), 1);
	assert_int_equal(store_lock(st, "snapcap:x", 60000, &e), 0);
	assert_int_equal(store_locked(st, "snapcap:x", &e), 1);
	assert_int_equal(store_unlock(st, "snapcap:x", &e), 0);
	assert_int_equal(store_locked(st, "snapcap:x", &e), 0);
	assert_int_equal(store_lock(st, "snapcap:x", 60000, &e), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get_list_org_scoped),
		cmocka_unit_test(test_cas),
		cmocka_unit_test(test_lock_held_until_dropped),
	};
	return cmocka_run_group_tests(tests, unit_redis_setup, unit_redis_teardown);
}
