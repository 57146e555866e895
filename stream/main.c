/*
 * sandpit-stream: the /sandbox-exec WebSocket daemon, supervised like
 * sandpitd by the same process manager (fcgi/pm.c): a master that binds
 * stream_listen and serves nothing, and stream_workers event-loop workers
 * sharing that socket, respawned when they crash, drained on SIGTERM,
 * replaced on SIGHUP. It reads sandpitd's configuration file; only the
 * stream_* keys (and the backends) matter to it. `sandpit-stream -t` checks
 * the configuration.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <curl/curl.h>

#include "../common/config.h"
#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../fcgi/pm.h"
#include "stream.h"

static void apply_logging(const struct config *cfg)
{
	enum log_level lv = LOG_INFO;

	log_level_parse(cfg->log_level, &lv);
	log_setup("sandpit-stream", lv, cfg->log_json);
}

/* Loads the shared file and points the process manager at the stream
 * socket: a fixed pool of stream_workers, never recycled by count. */
static int load_config(const char *path, struct config *cfg, char *err, size_t errlen)
{
	if (config_load(path, cfg, err, errlen) < 0)
		return -1;
	if (strcmp(cfg->stream_listen, cfg->listen) == 0) {
		snprintf(err, errlen, "%s: stream_listen must differ from listen (%s)", path,
			 cfg->listen);
		return -1;
	}
	str_copy(cfg->listen, sizeof(cfg->listen), cfg->stream_listen);
	cfg->workers_min = cfg->stream_workers;
	cfg->workers_max = cfg->stream_workers;
	cfg->max_requests = 0;
	return 0;
}

static void worker_main(const struct config *cfg, int listen_fd)
{
	apply_logging(cfg);
	/* once, before any thread: libcurl's global state stays up for good */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		log_error("curl_global_init failed");
		exit(1);
	}
	stream_loop_run(cfg, listen_fd);
	curl_global_cleanup();
}

/* Each connection is a descriptor (two while its command runs): raise the
 * soft limit to the hard one. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_warn("setrlimit(RLIMIT_NOFILE): could not raise the limit");
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: sandpit-stream [-c CONFIG] [-t]\n"
			"  -c CONFIG  configuration file, shared with sandpitd (default "
			"$SANDPIT_CONFIG or /etc/sandpit/sandpitd.conf)\n"
			"  -t         check the configuration and exit\n");
}

int main(int argc, char **argv)
{
	const char *path = getenv("SANDPIT_CONFIG");
	static struct config cfg;
	char err[1024];
	int test = 0, opt, rc;

	if (!path || !*path)
		path = "/etc/sandpit/sandpitd.conf";
	while ((opt = getopt(argc, argv, "c:th")) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 't':
			test = 1;
			break;
		default:
			usage();
			return opt == 'h' ? 0 : 2;
		}
	}
	if (crypto_init() < 0) {
		fprintf(stderr, "sandpit-stream: libsodium failed to initialise\n");
		return 1;
	}
	if (load_config(path, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "sandpit-stream: configuration error: %s\n", err);
		return 1;
	}
	if (test) {
		printf("sandpit-stream: configuration %s OK\n", path);
		config_wipe(&cfg);
		return 0;
	}
	apply_logging(&cfg);
	raise_nofile();
	rc = pm_run(&cfg, load_config, worker_main);
	config_wipe(&cfg);
	return rc;
}
