/*
 * A private redis-server for the store's unit tests: started on a unix
 * socket in a temporary folder (no TCP port, no persistence), with a
 * store opened on it; stopped and its folder removed after. Included by
 * the test files that need it (test_store_page.c, test_store_idem.c,
 * test_store_obj.c, test_store_lua.c) as their cmocka group setup and
 * teardown; unit_redis_restart gives a test a fresh server on the same
 * socket.
 */
#ifndef SANDPIT_TESTS_REDIS_UNIT_H
#define SANDPIT_TESTS_REDIS_UNIT_H

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"

static char unit_redis_dir[64], unit_redis_sock[128];
static pid_t unit_redis_pid;
static struct store *st;

/* Starts redis-server on unit_redis_sock and waits for the socket. */
static int unit_redis_spawn(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	unlink(unit_redis_sock);
	unit_redis_pid = fork();
	if (unit_redis_pid < 0)
		return -1;
	if (unit_redis_pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execlp("redis-server", "redis-server", "--port", "0", "--unixsocket",
		       unit_redis_sock, "--save", "", "--appendonly", "no", "--dir", unit_redis_dir,
		       "--loglevel", "warning", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 250 && access(unit_redis_sock, F_OK) != 0; i++)
		nanosleep(&ts, NULL);
	return access(unit_redis_sock, F_OK);
}

/* Stops the server (SIGTERM, waited for). */
static void unit_redis_stop(void)
{
	if (unit_redis_pid > 0) {
		kill(unit_redis_pid, SIGTERM);
		waitpid(unit_redis_pid, NULL, 0);
	}
	unit_redis_pid = 0;
}

/* A restart: a new server on the same socket, empty (no data, no scripts). */
static inline int unit_redis_restart(void)
{
	unit_redis_stop();
	return unit_redis_spawn();
}

static int unit_redis_setup(void **state)
{
	char url[160];
	struct sp_err e;
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	(void)state;
	snprintf(unit_redis_dir, sizeof(unit_redis_dir), "/tmp/sandpit-unit-XXXXXX");
	if (!mkdtemp(unit_redis_dir))
		return -1;
	snprintf(unit_redis_sock, sizeof(unit_redis_sock), "%s/r.sock", unit_redis_dir);
	unit_redis_spawn();
	snprintf(url, sizeof(url), "unix://%s", unit_redis_sock);
	st = store_open(url, "t", &e);
	if (!st)
		return -1;
	for (int i = 0; i < 250 && store_ping(st, &e) != 0; i++)
		nanosleep(&ts, NULL);
	return store_ping(st, &e) == 0 ? 0 : -1;
}

static int unit_redis_teardown(void **state)
{
	(void)state;
	if (st)
		store_close(st);
	unit_redis_stop();
	unlink(unit_redis_sock);
	rmdir(unit_redis_dir);
	return 0;
}

#endif
