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
#include "store/store.h"

static char dir[64], sock[128];
static pid_t redis_pid;
static struct store *st;

static int setup(void **state)
{
	char url[160];
	struct sp_err e;
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sandpit-unit-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(sock, sizeof(sock), "%s/r.sock", dir);
	redis_pid = fork();
	if (redis_pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execlp("redis-server", "redis-server", "--port", "0", "--unixsocket", sock,
		       "--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning",
		       (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 250 && access(sock, F_OK) != 0; i++)
		nanosleep(&ts, NULL);
	snprintf(url, sizeof(url), "unix://%s", sock);
	st = store_open(url, "t", &e);
	if (!st)
		return -1;
	for (int i = 0; i < 250 && store_ping(st, &e) != 0; i++)
		nanosleep(&ts, NULL);
	return store_ping(st, &e) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char path[160];

	(void)state;
	if (st)
		store_close(st);
	if (redis_pid > 0) {
		kill(redis_pid, SIGTERM);
		waitpid(redis_pid, NULL, 0);
	}
	snprintf(path, sizeof(path), "%s/r.sock", dir);
	unlink(path);
	rmdir(dir);
	return 0;
}

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
	return cmocka_run_group_tests(tests, setup, teardown);
}
