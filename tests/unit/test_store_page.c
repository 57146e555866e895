/*
 * The index page behind sandbox_list's cursor (store_sandbox_ids_page),
 * against a private redis-server on a unix socket in a temporary folder:
 * newest first, a page strictly after its (score, id) cursor, equal
 * scores ordered by id as ZREVRANGE orders them, and a cursor whose member
 * was removed meanwhile still placing the next page (no repeat, no skip).
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

#include "redis_unit.h"

static void put(const char *org, const char *id, int64_t score)
{
	const char *kv[] = { "id", id };
	struct sp_err e;

	assert_int_equal(store_sandbox_put(st, org, id, kv, 2, 600, score, &e), 0);
}

/* Reads every page of org with limit per page (following the cursor as
 * sandbox_list does) into got, "," separated. */
static void read_all(const char *org, int limit, char *got, size_t cap)
{
	char *ids[8];
	int64_t scores[8], after = 0;
	char after_id[65] = "";
	int n;
	struct sp_err e;

	got[0] = '\0';
	assert_true(limit + 1 <= 8);
	for (int guard = 0; guard < 100; guard++) {
		assert_int_equal(store_sandbox_ids_page(st, org, after,
							after_id[0] ? after_id : NULL, limit + 1,
							ids, scores, &n, &e),
				 0);
		for (int i = 0; i < n && i < limit; i++) {
			size_t len = strlen(got);
			snprintf(got + len, cap - len, "%s%s", len ? "," : "", ids[i]);
		}
		if (n > limit) {
			after = scores[limit - 1];
			snprintf(after_id, sizeof(after_id), "%s", ids[limit - 1]);
		}
		store_ids_free_items(ids, n);
		if (n <= limit)
			return;
	}
	fail_msg("the pages did not end");
}

static void test_pages(void **state)
{
	char got[256];

	(void)state;
	/* scores as createdAt; b, c, d share one */
	put("o1", "a", 100);
	put("o1", "b", 200);
	put("o1", "c", 200);
	put("o1", "d", 200);
	put("o1", "e", 300);
	for (int limit = 1; limit <= 6; limit++) {
		read_all("o1", limit, got, sizeof(got));
		assert_string_equal(got, "e,d,c,b,a");
	}
	read_all("empty", 2, got, sizeof(got));
	assert_string_equal(got, "");
}

static void test_cursor_member_removed(void **state)
{
	char *ids[3];
	int64_t scores[3];
	int n;
	struct sp_err e;

	(void)state;
	put("o2", "a", 100);
	put("o2", "b", 200);
	put("o2", "c", 200);
	put("o2", "d", 200);
	put("o2", "e", 300);
	/* a first page of two: e, d; then d goes away */
	assert_int_equal(store_sandbox_ids_page(st, "o2", 0, NULL, 2, ids, scores, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_string_equal(ids[1], "d");
	assert_int_equal(scores[1], 200);
	store_ids_free_items(ids, n);
	assert_int_equal(store_sandbox_del(st, "o2", "d", &e), 0);
	/* the next page still starts after (200, d): c, b, a */
	assert_int_equal(store_sandbox_ids_page(st, "o2", 200, "d", 3, ids, scores, &n, &e), 0);
	assert_int_equal(n, 3);
	assert_string_equal(ids[0], "c");
	assert_string_equal(ids[1], "b");
	assert_string_equal(ids[2], "a");
	store_ids_free_items(ids, n);
	/* one added meanwhile, newer than the cursor, is not on a later page */
	put("o2", "f", 400);
	assert_int_equal(store_sandbox_ids_page(st, "o2", 200, "c", 3, ids, scores, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_string_equal(ids[0], "b");
	assert_string_equal(ids[1], "a");
	store_ids_free_items(ids, n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pages),
		cmocka_unit_test(test_cursor_member_removed),
	};

	return cmocka_run_group_tests(tests, unit_redis_setup, unit_redis_teardown);
}
