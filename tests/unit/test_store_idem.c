/*
 * The Idempotency-Key ledger's entries (store_idem_*), against a private
 * redis-server on a unix socket in a temporary folder (RELIABILITY I1, I2):
 * a new entry keeps the resource id, owner and until it was begun with and
 * a retry reads them while it is pending; exactly one of two retries
 * claims it from the owner they saw; an abort drops it only for its
 * current owner; a finished entry replays its answer; another payload is
 * a mismatch.
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

static const struct store_idem_owner first = { "rid0000000000000000a", "host:ns:1:100:n1", 1000 };

static void test_begin_pending_claim_abort(void **state)
{
	struct store_idem_owner seen, a = { "", "host:ns:2:200:n2", 5000 },
				      b = { "", "host:ns:3:300:n3", 6000 };
	struct buf body;
	struct sp_err e;
	int status = 0;

	(void)state;
	buf_init(&body, 4096);
	assert_int_equal(store_idem_begin(st, "o", "createSandbox", "k1", "p1", 60, &first, &seen,
					  &status, &body, &e),
			 STORE_IDEM_NEW);
	assert_int_equal(store_idem_begin(st, "o", "createSandbox", "k1", "p1", 60, &a, &seen,
					  &status, &body, &e),
			 STORE_IDEM_PENDING);
	assert_string_equal(seen.rid, first.rid);
	assert_string_equal(seen.owner, first.owner);
	assert_int_equal(seen.until_ms, first.until_ms);
	assert_int_equal(store_idem_begin(st, "o", "createSandbox", "k1", "p2", 60, &a, &seen,
					  &status, &body, &e),
			 STORE_IDEM_MISMATCH);
	/* two retries saw the first owner: one claims it */
	assert_int_equal(store_idem_claim(st, "o", "createSandbox", "k1", first.owner, &a, &e), 0);
	assert_int_equal(store_idem_claim(st, "o", "createSandbox", "k1", first.owner, &b, &e), 1);
	assert_int_equal(store_idem_begin(st, "o", "createSandbox", "k1", "p1", 60, &b, &seen,
					  &status, &body, &e),
			 STORE_IDEM_PENDING);
	assert_string_equal(seen.owner, a.owner);
	assert_string_equal(seen.rid, first.rid);
	assert_int_equal(seen.until_ms, a.until_ms);
	/* the first request, back late, cannot drop what a holds */
	assert_int_equal(store_idem_abort(st, "o", "createSandbox", "k1", first.owner, &e), 0);
	assert_int_equal(store_idem_begin(st, "o", "createSandbox", "k1", "p1", 60, &b, &seen,
					  &status, &body, &e),
			 STORE_IDEM_PENDING);
	assert_int_equal(store_idem_abort(st, "o", "createSandbox", "k1", a.owner, &e), 0);
	assert_int_equal(store_idem_begin(st, "o", "createSandbox", "k1", "p1", 60, &b, &seen,
					  &status, &body, &e),
			 STORE_IDEM_NEW);
	buf_free(&body);
}

static void test_finish_replays(void **state)
{
	struct store_idem_owner seen, a = { "", "host:ns:2:200:n2", 5000 };
	struct buf body;
	struct sp_err e;
	int status = 0;

	(void)state;
	buf_init(&body, 4096);
	assert_int_equal(store_idem_begin(st, "o", "createSandbox", "k2", "p1", 60, &first, &seen,
					  &status, &body, &e),
			 STORE_IDEM_NEW);
	assert_int_equal(
		store_idem_finish(st, "o", "createSandbox", "k2", 201, "sealed", 6, 600, &e), 0);
	/* a claim of a finished entry fails; the answer replays */
	assert_int_equal(store_idem_claim(st, "o", "createSandbox", "k2", first.owner, &a, &e), 1);
	assert_int_equal(store_idem_begin(st, "o", "createSandbox", "k2", "p1", 60, &a, &seen,
					  &status, &body, &e),
			 STORE_IDEM_DONE);
	assert_int_equal(status, 201);
	assert_int_equal(body.len, 6);
	assert_memory_equal(body.data, "sealed", 6);
	buf_free(&body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_begin_pending_claim_abort),
		cmocka_unit_test(test_finish_replays),
	};
	return cmocka_run_group_tests(tests, unit_redis_setup, unit_redis_teardown);
}
