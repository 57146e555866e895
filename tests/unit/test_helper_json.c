/*
 * The bounded parse of a helper's answer (sandbox/helper.c,
 * sandbox_helper_json; issue 24 D3a): a real answer parses; one with more
 * structural tokens than the budget, nesting past the bound, a string over
 * its bound, trailing bytes, or no object is SP_UNAVAILABLE naming the
 * sandbox, and is refused before json-c builds anything: a 3.3 MB
 * {"entries":[{},...]} costs no more memory than its own bytes.
 */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sandbox/internal.h"

static struct sandbox sb = { .id = "sbtestjson" };

static int parse(const char *text, size_t max_tokens, struct sp_err *e)
{
	json_object *o = NULL;
	int rc = sandbox_helper_json(&sb, "ls", text, strlen(text), max_tokens, &o, e);

	if (rc == 0)
		assert_non_null(o);
	else
		assert_null(o);
	json_object_put(o);
	return rc;
}

static void test_real(void **state)
{
	struct sp_err e;
	const char *ls = "{\"entries\":[{\"path\":\"/a\",\"size\":1,\"mode\":420,\"type\":"
			 "\"regular\",\"linkTarget\":\"\",\"mtime\":1},{\"path\":\"/b\",\"size\":"
			 "2,\"mode\":420,\"type\":\"regular\",\"linkTarget\":\"\",\"mtime\":2}],"
			 "\"more\":true}\n";

	(void)state;
	assert_int_equal(parse(ls, 2 * 16 + 64, &e), 0);
	/* braces and commas inside strings are not structure */
	assert_int_equal(parse("{\"a\":\"{[,:]}\\\"{\"}", 4, &e), 0);
}

static void test_refused(void **state)
{
	struct sp_err e;
	char deep[64] = "";

	(void)state;
	assert_int_equal(parse("{\"a\":[1,2,3,4,5,6,7,8]}", 8, &e), -1);
	assert_int_equal(e.code, SP_UNAVAILABLE);
	assert_non_null(strstr(e.msg, "sbtestjson"));
	memset(deep, '[', 9);
	memset(deep + 9, ']', 9);
	deep[18] = '\0';
	assert_int_equal(parse(deep, 1000, &e), -1);
	assert_int_equal(parse("{} {}", 1000, &e), -1);
	assert_int_equal(parse("{}x", 1000, &e), -1);
	assert_int_equal(parse("[]", 1000, &e), -1);
	assert_int_equal(parse("", 1000, &e), -1);
	assert_int_equal(parse("{\"a\":", 1000, &e), -1);
	{
		size_t n = SANDBOX_HELPER_JSON_STRING + 16;
		char *big = malloc(n + 16);
		assert_non_null(big);
		memcpy(big, "{\"a\":\"", 6);
		memset(big + 6, 'x', n);
		memcpy(big + 6 + n, "\"}", 3);
		assert_int_equal(parse(big, 1000, &e), -1);
		free(big);
	}
}

static void test_flood_costs_nothing(void **state)
{
	struct sp_err e;
	size_t n = (3342336 - 24096) / 3, len = 13 + 3 * n + 4;
	char *p = malloc(len), *w = p;
	struct mallinfo2 before, after;

	(void)state;
	assert_non_null(p);
	memcpy(w, "{\"entries\":[", 12);
	w += 12;
	for (size_t i = 0; i < n; i++)
		memcpy(w, "{},", 3), w += 3;
	memcpy(w, "{}]}", 5);
	before = mallinfo2();
	assert_int_equal(parse(p, 100 * 16 + 64, &e), -1);
	after = mallinfo2();
	/* refused before json-c allocated: well under a MB (it would be ~800 MB) */
	assert_true(after.uordblks < before.uordblks + (1 << 20));
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_flood_costs_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
