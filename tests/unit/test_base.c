/*
 * Unit tests for sandbox/base: the form of a sandbox id, the base-36 time
 * in a generated name (both faces' rule), the capture lock's name, and
 * who owns a sandbox's files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"
#include "sandbox/base/base.h"

static void test_id_ok(void **state)
{
	(void)state;
	assert_true(sandbox_id_ok("abcdefghij0123456789"));
	assert_false(sandbox_id_ok(NULL));
	assert_false(sandbox_id_ok(""));
	assert_false(sandbox_id_ok("abcdefghij012345678"));   /* 19 */
	assert_false(sandbox_id_ok("abcdefghij0123456789a")); /* 21 */
	assert_false(sandbox_id_ok("Abcdefghij0123456789"));  /* upper case */
	assert_false(sandbox_id_ok("abcdefghij012345678-"));
	assert_false(sandbox_id_ok("../defghij0123456789"));
}

static void test_time_name(void **state)
{
	char out[65];

	(void)state;
	sandbox_time_name("p-", 0, out, sizeof(out));
	assert_string_equal(out, "p-0");
	sandbox_time_name("p-", 35, out, sizeof(out));
	assert_string_equal(out, "p-z");
	sandbox_time_name("p-", 36, out, sizeof(out));
	assert_string_equal(out, "p-10");
	sandbox_time_name("", -5, out, sizeof(out)); /* a time before 1970 reads 0 */
	assert_string_equal(out, "0");
	/* 2026-12-05T00:00:00Z */
	sandbox_time_name("x", 1796428800000LL, out, sizeof(out));
	assert_string_equal(out, "xmx9nbpc0");
	sandbox_default_name(1796428800000LL, out, sizeof(out));
	assert_string_equal(out, "sandbox-mx9nbpc0");
	/* the prefix gives way to the time, never the other way round */
	sandbox_time_name("abcdefgh", 1796428800000LL, out, 12);
	assert_string_equal(out, "abcmx9nbpc0");
	/* not even the time fits: its last digits, which change fastest */
	sandbox_time_name("abc", 1796428800000LL, out, 4);
	assert_string_equal(out, "pc0");
	sandbox_time_name("abc", 36, out, 1);
	assert_string_equal(out, "");
}

static void test_lock_name(void **state)
{
	char out[64];

	(void)state;
	sandbox_lock_name(SB_LOCK_CAPTURE, "abcdefghij0123456789", out, sizeof(out));
	assert_string_equal(out, "snapcap:abcdefghij0123456789");
}

static void owner_of(const char *user, const char *owner, unsigned *uid, unsigned *gid,
		     unsigned *mode)
{
	struct sandbox sb;

	memset(&sb, 0, sizeof(sb));
	str_copy(sb.user, sizeof(sb.user), user);
	str_copy(sb.owner, sizeof(sb.owner), owner);
	sandbox_owner(&sb, uid, gid, mode);
}

static void test_owner(void **state)
{
	unsigned uid, gid, mode;

	(void)state;
	owner_of("", "", &uid, &gid, &mode);
	assert_true(uid == 0 && gid == 0 && mode == 0755);
	owner_of("root", "", &uid, &gid, &mode);
	assert_true(uid == 0 && gid == 0 && mode == 0755);
	owner_of("1000", "", &uid, &gid, &mode);
	assert_true(uid == 1000 && gid == 1000 && mode == 0755);
	owner_of("1000:1001", "", &uid, &gid, &mode);
	assert_true(uid == 1000 && gid == 1001 && mode == 0755);
	/* a named user, not resolved: root owns, anyone may use the folder */
	owner_of("app", "", &uid, &gid, &mode);
	assert_true(uid == 0 && gid == 0 && mode == 01777);
	/* resolved through /etc/passwd: the numbers win over the name */
	owner_of("app", "1234:5678", &uid, &gid, &mode);
	assert_true(uid == 1234 && gid == 5678 && mode == 0755);
	owner_of("app:staff", "", &uid, &gid, &mode);
	assert_true(uid == 0 && gid == 0 && mode == 01777);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_id_ok),
		cmocka_unit_test(test_time_name),
		cmocka_unit_test(test_lock_name),
		cmocka_unit_test(test_owner),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
