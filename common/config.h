/*
 * sandpitd's configuration: a plain "key = value" file, '#' comments. Every
 * key is known and checked; an unknown key or a bad value is an error that
 * names the line. Loading never half-applies: on error the caller keeps the
 * configuration it had. The data key is read from its own file (mode 0600)
 * and wiped when the configuration is freed.
 */
#ifndef SANDPIT_CONFIG_H
#define SANDPIT_CONFIG_H

#include <stddef.h>

#define CONFIG_MAX_TEMPLATES 32

struct template_conf {
	char name[32];
	char image[256];
	char env[512]; /* extra env, "K=V\n" lines; "~" expands to the home */
};

#define CONFIG_MAX_POOLS 8

/* A warm pool: started containers of one template and network mode kept
 * ready for creates that fit them. From lines like
 *   warm_pool = template=python size=4 network=isolated ttl=600 */
struct pool_conf {
	char template_name[32];
	char network[16]; /* isolated (default) or internet */
	int size;         /* containers kept ready, 1..64 */
	int ttl_s;        /* an unused container ends after this, default 600 */
};

struct config {
	char path[4096];          /* the file it came from */
	/* process manager */
	char listen[4096];        /* FastCGI unix socket path */
	int listen_mode;          /* socket file mode, default 0660 */
	int workers_min;          /* idle workers kept ready, default 2 */
	int workers_max;          /* upper bound while all are busy, default 32 */
	int max_requests;         /* recycle a worker after this many, default 1000 */
	int idle_timeout_s;       /* surplus idle workers exit after this, default 10 */
	int drain_timeout_s;      /* SIGTERM waits this long for in-flight requests, default 660 */
	int crash_limit;          /* crashes within crash_window_s before backing off, default 10 */
	int crash_window_s;       /* default 10 */
	/* logging */
	char log_level[16];       /* error|warn|info|debug, default info */
	int log_json;             /* default 0 */
	/* stores and backends */
	char redis_url[4096];     /* redis://host:port/db or unix:///path.sock, default unix:///run/sandpit/redis.sock;
				     with redis_sentinels set, loading rewrites it to
				     sentinel://<sentinels>/<master name>/<db> (the db from the redis:// url
				     given, else 0); "?wait=N&wait_ms=T" is added for redis_wait_replicas */
	char redis_prefix[64];    /* key prefix, default "sp" */
	char redis_sentinels[1024]; /* "host:port,host:port,...": find the master through Sentinel; default "" (off) */
	char redis_master_name[128]; /* the Sentinel group name (e.g. mymaster); required with redis_sentinels */
	int redis_wait_replicas;  /* a write is acknowledged only once this many replicas have it (WAIT), default 0 */
	int redis_wait_timeout_ms; /* ... within this long, else 503; default 1000 */
	char docker_host[4096];   /* unix:///var/run/docker.sock */
	int docker_timeout_s;     /* per Docker request, default 30 */
	int pull_timeout_s;       /* image pull, default 300 */
	int docker_inflight_max;  /* calls per server awaiting Docker's answer; 0 = workers_max/4 */
	int docker_stuck_ms;      /* a server silent this long with calls waiting fails fast */
	int rate_per_min, rate_burst; /* per key, as nginx's limit_req: MCP tool calls (0 = off) */
	int allow_old_runc;       /* start with a runc older than 1.1.12, default 0 */
	char ssh_control_dir[1024]; /* ssh ControlMaster sockets for ssh:// servers, default /tmp/sandpit-ssh */
	int server_connect_timeout_ms; /* reaching a remote Docker server, default 3000 */
	char placement_pool[64];  /* creates without serverId go to this pool's least-loaded server; "" = local */
	char data_key_file[4096]; /* 32 random bytes, hex; encrypts env and hashes keys */
	unsigned char data_key[32];
	/* sandboxes */
	char network_prefix[64];  /* networks <prefix>-isolated and <prefix>-internet, default "sandpit" */
	char label_prefix[64];    /* container labels <prefix>.sandbox etc, default "sandpit" */
	int retention_s;          /* killed rows are kept this long, default 604800 */
	int create_timeout_s;     /* a creation still "creating" after this reads "error", default 600 */
	char default_runtime[16]; /* runc|gvisor: a create without `runtime`, default runc */
	char gvisor_runtime_isolated[64]; /* the dockerd runtime (runsc --network=none) for isolated
					     gVisor sandboxes, default runsc-isolated */
	char gvisor_runtime_internet[64]; /* ... (runsc --network=host) for internet ones, default
					     runsc-internet */
	/* sandpit-stream (the /sandbox-exec WebSocket daemon) */
	char stream_listen[4096]; /* its unix socket, default /run/sandpit/stream.sock */
	int stream_workers;       /* event-loop processes, default 1 */
	int stream_stuck_timeout_s; /* a reader that takes nothing this long is dropped, default 30 */
	int stream_max_message;   /* largest client message in bytes, default 1048576 */
	int ntemplates;
	struct template_conf templates[CONFIG_MAX_TEMPLATES];
	int npools;
	struct pool_conf pools[CONFIG_MAX_POOLS];
};

/* Fills cfg with defaults and the eleven built-in templates. */
void config_defaults(struct config *cfg);
/* Loads path over the defaults. On error returns -1 and writes a message
 * naming the line into err; cfg is then unspecified (use a scratch copy). */
int config_load(const char *path, struct config *cfg, char *err, size_t errlen);
/* Wipes secrets held by cfg. */
void config_wipe(struct config *cfg);
const struct template_conf *config_template(const struct config *cfg, const char *name);

#endif
