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
#include "../common/log.h"
#include "../common/util.h"
#include "../fcgi/daemon.h"
#include "stream.h"

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
	/* threads of one process: no reserved pool, no recycling by size */
	cfg->workers_reserved = 0;
	cfg->listen_fast[0] = '\0';
	cfg->worker_max_rss_mb = 0;
	return 0;
}

static void worker_main(const struct config *cfg, int listen_fd)
{
	daemon_logging("sandpit-stream", cfg);
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

/* In the master: more descriptors for the connections. */
static int prepare(const struct config *cfg)
{
	(void)cfg;
	raise_nofile();
	return 0;
}

int main(int argc, char **argv)
{
	static const struct daemon_spec d = { "sandpit-stream",
					      "configuration file, shared with sandpitd",
					      load_config, worker_main, prepare };

	return daemon_main(&d, argc, argv);
}
