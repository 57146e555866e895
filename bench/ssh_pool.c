/*
 * 200 small Docker operations (GET /version, then a container inspect)
 * against an ssh:// server, with pooling on (one kept-alive HTTP
 * connection through the ssh bridge, ssh ControlMaster) and off (a new
 * connection and a new ssh session per request), interleaved in one run.
 * Prints p50 and mean per operation and the ratio. Usage:
 *   ssh_pool ssh://user@host:port KEY KNOWN_HOSTS CONTROL_DIR [N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "docker/docker.h"

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static struct docker_client *client(char **argv, int pooled)
{
	struct docker_endpoint ep = { 0 };
	struct sp_err e;
	struct docker_client *c;

	ep.url = argv[1];
	ep.ssh_key = argv[2];
	ep.ssh_known_hosts = argv[3];
	ep.ssh_control_dir = argv[4];
	ep.pooled = pooled;
	c = docker_client_create_ex(&ep, 30, &e);
	if (!c) {
		fprintf(stderr, "ssh_pool: %s\n", e.msg);
		exit(1);
	}
	return c;
}

/* One small operation; returns its time in microseconds. */
static int64_t one_op(struct docker_client *c)
{
	struct docker_version v;
	struct sp_err e;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	if (docker_negotiate(c, 0, &v, &e) < 0) {
		fprintf(stderr, "ssh_pool: %s\n", e.msg);
		exit(1);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (int64_t)(b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000;
}

int main(int argc, char **argv)
{
	long long n = 200;
	struct docker_client *pooled, *plain;
	int64_t *tp, *tu, sp = 0, su = 0;

	if (argc < 5 || (argc > 5 && parse_ll(argv[5], 1, 100000, &n) < 0)) {
		fprintf(stderr,
			"usage: ssh_pool ssh://user@host:port KEY KNOWN_HOSTS CONTROL_DIR [N]\n");
		return 2;
	}
	pooled = client(argv, 1);
	plain = client(argv, 0);
	tp = calloc((size_t)n, sizeof(*tp));
	tu = calloc((size_t)n, sizeof(*tu));
	if (!tp || !tu)
		return 1;
	one_op(pooled); /* the ssh master connection is made once, before timing */
	for (long long i = 0; i < n; i++) { /* interleaved: the same load for both */
		tp[i] = one_op(pooled);
		tu[i] = one_op(plain);
		sp += tp[i];
		su += tu[i];
	}
	qsort(tp, (size_t)n, sizeof(*tp), cmp);
	qsort(tu, (size_t)n, sizeof(*tu), cmp);
	printf("| ssh:// GET /version x %lld | p50 ms | mean ms |\n|---|---|---|\n", n);
	printf("| pooled (kept-alive + ControlMaster) | %.2f | %.2f |\n", tp[n / 2] / 1000.0,
	       sp / 1000.0 / (double)n);
	printf("| a new ssh session per request | %.2f | %.2f |\n", tu[n / 2] / 1000.0,
	       su / 1000.0 / (double)n);
	printf("\npooled is %.1fx faster per operation (mean), %.1fx (p50)\n",
	       (double)su / (double)sp, (double)tu[n / 2] / (double)tp[n / 2]);
	docker_client_free(pooled);
	docker_client_free(plain);
	free(tp);
	free(tu);
	return (double)su / (double)sp >= 5.0 ? 0 : 3;
}
