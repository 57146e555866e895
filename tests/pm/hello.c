/*
 * hello: the smallest FastCGI program on top of fcgi/pm.c, for
 * tests/pm/test_pm.sh. Each request is answered "hello <worker pid>";
 * QUERY_STRING "sleep=N" holds the worker N seconds first, so a test can keep
 * workers busy. With HELLO_CRASH set in the environment every worker exits 1
 * as soon as it starts (a crash loop). Test code only: it must never be
 * linked into sandpitd, and it trusts its query string only as far as
 * parse_ll's range check.
 *
 * Usage: hello CONFIG_FILE (loaded with config_load, reloaded on SIGHUP).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "common/config.h"
#include "common/log.h"
#include "common/util.h"
#include "fcgi/pm.h"

/* Sleeps the whole of seconds even when signals interrupt the sleep. */
static void hello_sleep(long long seconds)
{
	struct timespec left = { .tv_sec = (time_t)seconds, .tv_nsec = 0 };

	while (nanosleep(&left, &left) < 0 && errno == EINTR)
		;
}

/* Answers one accepted request. */
static void hello_answer(FCGX_Request *req)
{
	const char *qs = FCGX_GetParam("QUERY_STRING", req->envp);
	long long n;

	if (qs && strncmp(qs, "sleep=", 6) == 0 && parse_ll(qs + 6, 0, 600, &n) == 0) {
		log_info("serving sleep=%lld", n);
		hello_sleep(n);
	}
	FCGX_FPrintF(req->out, "Content-Type: text/plain\r\n\r\nhello %d\n", (int)getpid());
}

static void hello_worker(const struct config *cfg, int listen_fd)
{
	FCGX_Request req;

	(void)cfg;
	if (getenv("HELLO_CRASH"))
		exit(1);
	if (FCGX_Init() != 0 || FCGX_InitRequest(&req, listen_fd, 0) != 0) {
		log_error("FCGX_Init/FCGX_InitRequest failed");
		exit(1);
	}
	while (!pm_worker_should_stop()) {
		if (FCGX_Accept_r(&req) < 0)
			break;
		pm_worker_busy(1);
		hello_answer(&req);
		FCGX_Finish_r(&req);
		pm_worker_busy(0);
	}
	FCGX_Free(&req, 1);
}

int main(int argc, char **argv)
{
	static struct config cfg;
	enum log_level level = LOG_INFO;
	char err[1024];
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CONFIG_FILE\n", argv[0]);
		return 2;
	}
	log_setup("hello", LOG_INFO, 0);
	if (config_load(argv[1], &cfg, err, sizeof(err)) < 0) {
		log_error("config: %s", err);
		return 1;
	}
	if (log_level_parse(cfg.log_level, &level) == 0)
		log_setup("hello", level, cfg.log_json);
	rc = pm_run(&cfg, config_load, hello_worker);
	config_wipe(&cfg);
	return rc;
}
