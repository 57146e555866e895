/*
 * sandpitd: the FastCGI application server. The master (pm.c) binds the
 * socket and runs the workers; each worker opens its own Redis and Docker
 * connections after fork and serves requests through the route table.
 * `sandpitd -t` checks a configuration and says what is wrong.
 */
#include <malloc.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "../common/config.h"
#include "../common/log.h"
#include "../common/proc.h"
#include "../docker/docker.h"
#include "../handlers/handlers.h"
#include "daemon.h"

/* A request or answer larger than this is followed by malloc_trim. */
#define BIG_REQUEST (256 * 1024)
#include "request.h"

static int load_config(const char *path, struct config *cfg, char *err, size_t errlen)
{
	return config_load(path, cfg, err, errlen);
}

/* Waits up to a second for a connection on the listening socket; 1 when
 * one may be there (or the socket closed: accept then says so). ppoll, not
 * poll: an idle worker is then told apart from one waiting on Docker
 * (which polls) by its syscall alone (tests/api/abuse.test.mjs). */
static int connection_waiting(int listen_fd)
{
	struct pollfd p = { listen_fd, POLLIN, 0 };
	struct timespec ts = { 1, 0 };

	return ppoll(&p, 1, &ts, NULL) != 0;
}

/* Work outside requests (a deferred expiry, pools, the reaper), counted
 * busy for the master: it may wait on Docker like a request does. */
static void idle_work(struct sandbox_ctx *ctx)
{
	pm_worker_background(1);
	sandbox_idle(ctx);
	pm_worker_background(0);
}

/* A reserved worker's bound on one Docker call: its routes answer from
 * the records, and a list's catch-up with Docker is skipped when Docker
 * is slow, so a stalled daemon holds one at most this long. */
#define RESERVED_DOCKER_TIMEOUT_S 2

static void worker_main(const struct config *cfg, int listen_fd)
{
	static struct config reserved_cfg; /* too large for the stack */
	struct sandbox_ctx ctx;
	FCGX_Request fx;
	struct sp_err e;

	if (pm_worker_reserved() && cfg->docker_timeout_s > RESERVED_DOCKER_TIMEOUT_S) {
		memcpy(&reserved_cfg, cfg, sizeof(reserved_cfg));
		reserved_cfg.docker_timeout_s = RESERVED_DOCKER_TIMEOUT_S;
		cfg = &reserved_cfg;
	}
	daemon_logging("sandpitd", cfg);
	if (sandbox_ctx_init(&ctx, cfg, &e) < 0) {
		log_error("worker start: %s", e.msg);
		return;
	}
	FCGX_Init();
	if (FCGX_InitRequest(&fx, listen_fd, FCGI_FAIL_ACCEPT_ON_INTR) != 0) {
		log_error("FCGX_InitRequest failed");
		sandbox_ctx_cleanup(&ctx);
		return;
	}
	/* a container's expiry is moved after the answer went out */
	ctx.defer_expiry = 1;
	/* a reserved worker (listen_fast) only answers: the background work
	 * may wait on Docker, and it must not */
	if (!pm_worker_reserved())
		idle_work(&ctx);
	while (!pm_worker_should_stop()) {
		struct req r;
		long long rss;
		int big;
		if (!pm_worker_reserved() && (cfg->npools || cfg->reaper_interval_s) &&
		    !connection_waiting(listen_fd)) {
			/* idle: pools, the reaper */
			idle_work(&ctx);
			continue;
		}
		if (FCGX_Accept_r(&fx) < 0)
			break;
		pm_worker_busy(1);
		req_init(&r, &fx);
		handlers_serve(&ctx, &r);
		big = r.body.cap > BIG_REQUEST;
		req_cleanup(&r);
		FCGX_Finish_r(&fx);
		pm_worker_busy(0);
		/* a large body or answer leaves a large heap behind: give it back,
		 * so an idle worker stays small */
		if (big || req_last_answer_size() > BIG_REQUEST)
			malloc_trim(64 * 1024);
		/* a worker whose memory a request grew past worker_max_rss_mb
		 * gives it back, or retires (the master starts a fresh one) */
		if (proc_rss_settle((long long)cfg->worker_max_rss_mb << 20, &rss) == 1) {
			log_info("worker memory %lld MiB after a request, over worker_max_rss_mb "
				 "(%d): retiring",
				 rss >> 20, cfg->worker_max_rss_mb);
			pm_worker_retire();
		}
		/* between requests: a deferred expiry, pools, the reaper; a
		 * reserved worker only moves the expiry its answer deferred */
		if (!pm_worker_reserved())
			idle_work(&ctx);
		else
			sandbox_flush_expiry(&ctx);
	}
	FCGX_Free(&fx, 1);
	sandbox_ctx_cleanup(&ctx);
}

/* Refuses to start on a Docker that is too old or runs a vulnerable runc
 * (a daemon that answered /version); an unreachable Docker is only a
 * warning (requests get 503 until it is up). Both errors are SP_UNAVAILABLE,
 * the status a request gets for them. */
static int check_docker(const struct config *cfg)
{
	struct docker_client *dk;
	struct docker_version v;
	struct sp_err e;
	int rc = 0;

	dk = docker_client_create(cfg->docker_host, 5, &e);
	if (!dk) {
		log_error("docker client: %s", e.msg);
		return -1;
	}
	if (docker_negotiate(dk, cfg->allow_old_runc, &v, &e) < 0) {
		if (e.code == SP_UNAVAILABLE && !v.answered) {
			log_warn("%s; sandbox operations answer 503 until it is reachable", e.msg);
		} else {
			log_error("%s", e.msg);
			rc = -1;
		}
	} else {
		log_info("docker %s, API %s, runc %s", v.engine, v.api_version,
			 v.runc[0] ? v.runc : "unknown");
	}
	docker_client_free(dk);
	/* the local deny rules, before any worker runs: they name the bridges
	 * sandpit gives its networks, so they can exist before the networks */
	if (rc == 0 && sandbox_firewall_init(cfg, &e) < 0)
		log_warn("local server: %s; %s", e.msg,
			 cfg->allow_unfiltered_local
				 ? "allow_unfiltered_local is set: sandbox traffic is not filtered"
				 : "creates on the local server answer 503 until it works "
				   "(or allow_unfiltered_local = true)");
	return rc;
}

int main(int argc, char **argv)
{
	static const struct daemon_spec d = { "sandpitd", "configuration file", load_config,
					      worker_main, check_docker };

	struct sp_err e;

	/* a route table that contradicts itself is a build mistake: refuse to
	 * serve it (route_table_check, fcgi/route.h) */
	if (route_table_check(handler_routes, &e) < 0) {
		fprintf(stderr, "sandpitd: %s\n", e.msg);
		return 1;
	}
	/* before any fork: every worker shares the Docker servers' guards */
	if (docker_shared_init() < 0)
		log_warn("mmap docker guards: each worker guards its Docker calls alone");
	return daemon_main(&d, argc, argv);
}
