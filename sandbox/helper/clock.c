/*
 * sandpit-helper's clock commands, for the keeper (clock.h):
 *   sleep SECONDS[.FRACTION]  sleeps that long (at most 9 fraction digits,
 *                             at most 10^10 s); exit 0, 2 on a bad argument
 *   now                       prints the epoch time as SECONDS.NANOSECONDS
 *                             (9 digits), like GNU date +%s.%N
 * They read no file, no environment and no PATH, and install no signal
 * handler: a signal ends sleep as it ends a program without one.
 */
#define _GNU_SOURCE
#include "clock.h"
#include "proto.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* "N" or "N.F" (F at most 9 digits) into *ts; -1 for anything else. */
static int parse_duration(const char *s, struct timespec *ts)
{
	long long sec = 0, ns = 0;
	int digits = 0, frac = 0;

	if (!s || !*s)
		return -1;
	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		if (sec > 10000000000LL)
			return -1;
		sec = sec * 10 + (*s - '0');
	}
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++, frac++) {
			if (frac >= 9)
				return -1;
			ns = ns * 10 + (*s - '0');
		}
		for (int k = frac; k < 9; k++)
			ns *= 10;
	}
	if (*s || digits + frac == 0)
		return -1;
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)ns;
	return 0;
}

static int clock_sleep(int argc, char **argv)
{
	struct timespec left;

	if (argc != 1 || parse_duration(argv[0], &left) < 0) {
		fprintf(stderr, "usage: sandpit-helper sleep SECONDS[.FRACTION]\n");
		return 2;
	}
	while (nanosleep(&left, &left) < 0)
		if (errno != EINTR)
			return 1;
	return 0;
}

static int clock_now(int argc)
{
	struct timespec t;

	if (argc != 0 || clock_gettime(CLOCK_REALTIME, &t) < 0) {
		fprintf(stderr, "usage: sandpit-helper now\n");
		return 2;
	}
	printf("%lld.%09ld\n", (long long)t.tv_sec, t.tv_nsec);
	return fflush(stdout) == 0 ? 0 : 1;
}

int clock_main(const char *op, int argc, char **argv)
{
	if (strcmp(op, HC_SLEEP) == 0)
		return clock_sleep(argc, argv);
	if (strcmp(op, HC_NOW) == 0)
		return clock_now(argc);
	return -1;
}
