/*
 * Process identities (common/proc.c), which the Idempotency-Key ledger
 * uses to know that a first request's worker is gone (RELIABILITY I2):
 * this process is not gone, a child is once it exited (and as a zombie,
 * killed but not yet reaped), a pid with another start time is gone, and
 * another host's or namespace's identity cannot be judged (never gone).
 * And a worker's resident memory (issue 24 D9): a heap grown by a request
 * and freed, but pinned by a live block at its top, is given back by
 * proc_rss_settle (malloc_trim) and stays within the bound; memory still
 * held is reported over it (the worker retires).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/proc.h"

static void test_self(void **state)
{
	char id[PROC_IDENTITY_MAX], with_nonce[PROC_IDENTITY_MAX + 20];

	(void)state;
	proc_identity(id, sizeof(id));
	assert_true(id[0] != '\0');
	assert_int_equal(proc_identity_gone(id), 0);
	snprintf(with_nonce, sizeof(with_nonce), "%s:abc123", id);
	assert_int_equal(proc_identity_gone(with_nonce), 0);
	/* the same pid started at another time: a reused pid */
	snprintf(with_nonce, sizeof(with_nonce), "%s9:abc123", id);
	assert_int_equal(proc_identity_gone(with_nonce), 1);
}

static void test_child(void **state)
{
	int pfd[2];
	char id[PROC_IDENTITY_MAX] = "";
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		proc_identity(id, sizeof(id));
		if (write(pfd[1], id, strlen(id) + 1) < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	assert_true(read(pfd[0], id, sizeof(id)) > 0);
	close(pfd[0]);
	assert_int_equal(proc_identity_gone(id), 0);
	kill(pid, SIGKILL);
	/* a zombie until reaped: already gone */
	for (int i = 0; i < 200 && !proc_identity_gone(id); i++)
		usleep(10000);
	assert_int_equal(proc_identity_gone(id), 1);
	waitpid(pid, NULL, 0);
	assert_int_equal(proc_identity_gone(id), 1);
}

static void test_elsewhere(void **state)
{
	(void)state;
	assert_int_equal(proc_identity_gone(""), 0);
	assert_int_equal(proc_identity_gone(NULL), 0);
	assert_int_equal(proc_identity_gone("00000000-0000-0000-0000-000000000000:1:1:1"), 0);
	assert_int_equal(proc_identity_gone("garbage"), 0);
}

#define CHUNK (64 * 1024) /* under the mmap threshold: from the heap */
#define NCHUNKS 2048	  /* 128 MiB */

static void test_rss(void **state)
{
	static char *chunks[NCHUNKS];
	long long base, grown, after;
	char *pin;

	(void)state;
	base = proc_rss_bytes();
	assert_true(base > 0);
	for (int i = 0; i < NCHUNKS; i++) {
		chunks[i] = malloc(CHUNK);
		assert_non_null(chunks[i]);
		memset(chunks[i], 1, CHUNK);
	}
	pin = malloc(CHUNK); /* keeps the heap's top: free() alone gives nothing back */
	assert_non_null(pin);
	memset(pin, 1, CHUNK);
	grown = proc_rss_bytes();
	assert_true(grown - base > 100LL << 20);
	/* still held: over a bound between the two, whatever trim does */
	assert_int_equal(proc_rss_settle(base + (64LL << 20), &after), 1);
	assert_true(after > base + (64LL << 20));
	for (int i = 0; i < NCHUNKS; i++)
		free(chunks[i]);
	/* freed but not given back until trimmed; then within the bound */
	assert_true(proc_rss_bytes() > base + (64LL << 20));
	assert_int_equal(proc_rss_settle(base + (64LL << 20), &after), 0);
	assert_true(after <= base + (64LL << 20));
	/* no bound, or under it: nothing to do */
	assert_int_equal(proc_rss_settle(0, NULL), 0);
	assert_int_equal(proc_rss_settle(1LL << 50, NULL), 0);
	free(pin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rss),
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_child),
		cmocka_unit_test(test_elsewhere),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
