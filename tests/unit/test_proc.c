/*
 * Process identities (common/proc.c), which the Idempotency-Key ledger
 * uses to know that a first request's worker is gone (RELIABILITY I2):
 * this process is not gone, a child is once it exited (and as a zombie,
 * killed but not yet reaped), a pid with another start time is gone, and
 * another host's or namespace's identity cannot be judged (never gone).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_child),
		cmocka_unit_test(test_elsewhere),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
