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
	char env[512];	      /* extra env, "K=V\n" lines; "~" expands to the home */
	char description[96]; /* sandbox.templates' description; "" = the image */
};

#define CONFIG_MAX_POOLS 8

/* A warm pool: started containers of one template and network mode kept
 * ready for creates that fit them. From lines like
 *   warm_pool = template=python size=4 network=isolated ttl=600 */
struct pool_conf {
	char template_name[32];
	char network[16]; /* isolated (default) or internet */
	int size;	  /* containers kept ready, 1..64 */
	int ttl_s;	  /* an unused container ends after this, default 600 */
};

struct config {
	char path[4096]; /* the file it came from */
	/* process manager */
	char listen[4096];   /* FastCGI unix socket path */
	int listen_mode;     /* socket file mode, default 0660 */
	int workers_min;     /* idle workers kept ready, default 2 */
	int workers_max;     /* upper bound while all are busy, default 32 */
	int max_requests;    /* recycle a worker after this many, default 1000 */
	int idle_timeout_s;  /* surplus idle workers exit after this, default 10 */
	int drain_timeout_s; /* SIGTERM waits this long for in-flight requests, default 660 */
	int crash_limit;     /* crashes within crash_window_s before backing off, default 10 */
	int crash_window_s;  /* default 10 */
	int worker_max_rss_mb; /* a worker over this after a request trims, then retires; default 256, 0 = off */
	int workers_reserved; /* workers on listen_fast for the routes without Docker, default 2, 0 = none */
	char listen_fast[4096]; /* their socket; default: listen with "-fast" before ".sock" */
	int org_long_requests; /* long requests one org may hold (beyond, when few workers are left, 429); 0 = max(1, workers_max/4) */
	/* logging */
	char log_level[16]; /* error|warn|info|debug, default info */
	int log_json;	    /* default 0 */
	/* stores and backends */
	char redis_url
		[4096]; /* redis://host:port/db or unix:///path.sock, default unix:///run/sandpit/redis.sock;
				     with redis_sentinels set, loading rewrites it to
				     sentinel://<sentinels>/<master name>/<db> (the db from the redis:// url
				     given, else 0); "?wait=N&wait_ms=T" is added for redis_wait_replicas */
	char redis_prefix[64]; /* key prefix, default "sp" */
	char redis_sentinels
		[1024]; /* "host:port,host:port,...": find the master through Sentinel; default "" (off) */
	char redis_master_name
		[128]; /* the Sentinel group name (e.g. mymaster); required with redis_sentinels */
	int redis_wait_replicas; /* a write is acknowledged only once this many replicas have it (WAIT), default 0 */
	int redis_wait_timeout_ms; /* ... within this long, else 503; default 1000 */
	char docker_host[4096];	   /* unix:///var/run/docker.sock */
	int docker_timeout_s;	   /* per Docker request, default 30 */
	int pull_timeout_s;	   /* image pull, default 300 */
	int docker_inflight_max; /* calls per server awaiting Docker's answer; 0 = workers_max/4 */
	int docker_stuck_ms;	 /* a server silent this long with calls waiting fails fast */
	int rate_per_min, rate_burst; /* per key, as nginx's limit_req: MCP tool calls (0 = off) */
	int allow_old_runc;	      /* start with a runc older than 1.1.12, default 0 */
	char ssh_control_dir
		[1024]; /* ssh ControlMaster sockets for ssh:// servers, default /tmp/sandpit-ssh */
	int server_connect_timeout_ms; /* reaching a remote Docker server, default 3000 */
	char placement_pool
		[64]; /* creates without serverId go to this pool's least-loaded server; "" = local */
	char public_url
		[256]; /* https://host[:port][/prefix] of the sandbox endpoints; "" = the request's */
	char preview_domain
		[200]; /* host-based preview URLs: <port>-<uid>.<this>[:port]; "" = path-based */
	int preview_require_key;  /* a preview request needs an API key of the port's org */
	char image_registry[256]; /* host[:port][/prefix] that createImage and getImagePullSpec
				     push to and name; "" = no registry (both decline) */
	char image_registry_auth_file
		[4096];		  /* USER:PASSWORD for it (chmod 600); "" = no credentials */
	char registry_auth[1024]; /* derived: the X-Registry-Auth value (a secret, never logged) */
	/* images a caller may name besides the templates' and its own
	 * snapshots (sandbox/image.c): patterns repository[:tag],
	 * repository@sha256:<digest> or prefix* (an optional ORG= before one
	 * scopes it to that organization), separated by blanks or commas;
	 * default none */
	char image_allow[4096];
	int image_pull; /* pull an allowed image that is not local, default 0 (never) */
	/* the folders (and below) a managed volume may be mounted at besides
	 * below the workdir (sandbox/volume.c), separated by blanks or commas;
	 * default "/data /mnt /srv /workspace" */
	char volume_dirs[1024];
	int fast_path; /* commands through the helper over the bridge, not docker exec; default 1 */
	char data_key_file[4096]; /* 32 random bytes, hex; encrypts env and hashes keys */
	unsigned char data_key[32];
	/* sandboxes */
	char naming[16]; /* sandpit|dokploy: how networks, labels and containers are named
				     (config_network_name etc.), default sandpit */
	char network_prefix
		[64]; /* networks <prefix>-isolated and <prefix>-internet, default "sandpit";
				     naming dokploy: "dokploy" whatever the file says */
	char label_prefix[64];	   /* container labels <prefix>.sandbox etc, default "sandpit";
				     naming dokploy: "dokploy" whatever the file says */
	char container_label[512]; /* more KEY=VALUE labels (space separated) on every sandbox
				      container, default none */
	char deny_cidrs[1024];	   /* IPv4 ranges sandboxes may not reach (comma separated), besides
				     the host itself and 169.254.0.0/16; default
				     "169.254.0.0/16,100.100.100.200/32" */
	int allow_unfiltered_local; /* place sandboxes on the local server even when its deny rules
				       cannot be installed (not root, no iptables), default 0 */
	char probe_image[256];	    /* the image of a remote server's network probe (needs sh and
				     busybox nc); "" = the alpine template's image */
	char probe_ports[128];	    /* the host ports the probe tries on the bridge gateway, besides
				     the server's Docker port; default "22,80,443,2375,2376,6379" */
	int transfer_max_mb; /* upload/download: content bytes a request may carry, default 1024 */
	int request_timeout; /* nginx's whole-request bound (SANDPIT_REQUEST_TIMEOUT), s, default
				 60: an upload's grace before transfer_min_kbps */
	int transfer_min_kbps; /* an upload may take request_timeout s plus 1 s per this many KiB
				  of its body; 0 = no bound; default 64 */
	int retention_s;       /* killed rows are kept this long, default 604800 */
	int create_timeout_s; /* a creation still "creating" this long after its last step (an image
				     pull adds pull_timeout_s) reads "error", its container removed; default 30 */
	int keeper_uid; /* uid:gid of the processes that enforce a sandbox's lifetime, default 65533 */
	int reaper_interval_s; /* workers sweep labelled containers this often (0 = never), default 5 */
	char default_runtime[16]; /* runc|gvisor: a create without `runtime`, default runc */
	char stop_mode[16]; /* preserve|discard: what a stop does to sandboxes created from now on
			       (docker pause, or docker stop with the disk kept), default preserve */
	char gvisor_runtime_isolated[64]; /* the dockerd runtime (runsc --network=none) for isolated
					     gVisor sandboxes, default runsc-isolated */
	char gvisor_runtime_internet[64]; /* ... (runsc --network=host) for internet ones, default
					     runsc-internet */
	/* disk limits (sandbox/disk.c, README "Disk limits") */
	char disk_limit[16]; /* auto|loop|storage-opt|off: how diskMb is enforced, default auto */
	char disk_dir[1024]; /* the local server's per-sandbox filesystem images, default
				     /var/lib/sandpit/disk */
	int disk_default_mb; /* diskMb of a create without it, default 1024 */
	int disk_max_mb;     /* the largest diskMb, default 16384 */
	int disk_reserve_mb; /* creates get 503 while the local host has less free space, default 2048 */
	int disk_reserve_inodes; /* ... or fewer free inodes, default 100000 */
	int disk_overcommit_pct; /* the local server's loop disks (diskMb, sparse) may promise at
				  * most this % of the free space above the reserve plus what
				  * they use; 0 = no bound; default 100 */
	int disk_preallocate;	 /* take each sandbox's diskMb from the host at create, default 0 */
	int volume_size_mb;	 /* a managed volume's loop disk (where loop disks are possible),
				  * MiB, default 1024 */
	int disk_readonly_rootfs; /* with a loop disk, the image's own files are read-only, default 1 */
	int disk_require_limit; /* refuse creates on a server that cannot limit disk, default 0 */
	/* sandpit-stream (the /sandbox-exec WebSocket daemon) */
	char stream_listen[4096];   /* its unix socket, default /run/sandpit/stream.sock */
	int stream_workers;	    /* event-loop processes, default 1 */
	int stream_stuck_timeout_s; /* a reader that takes nothing this long is dropped, default 30 */
	int stream_max_message;	    /* largest client message in bytes, default 1048576 */
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

/*
 * The names sandpit gives what it makes in Docker, by the naming scheme:
 *   naming sandpit: networks <N>-isolated, <N>-internet; labels <L>.sandbox,
 *     <L>.sandboxId, <L>.organizationId, networks labelled <L>.network;
 *     containers sandpit-<id>
 *   naming dokploy (Dokploy's names; N and L are then "dokploy"): networks
 *     dokploy-sandboxes-isolated, dokploy-sandboxes; labels dokploy.sandbox
 *     etc., networks labelled dokploy.sandbox; containers dokploy-sandbox-<id>
 * Every place that builds one of these names goes through these.
 */
int config_dokploy_naming(const struct config *cfg);
void config_network_name(const struct config *cfg, const char *mode, char *out, size_t cap);
void config_network_label(const struct config *cfg, char *out, size_t cap);
void config_label(const struct config *cfg, const char *what, char *out, size_t cap);
void config_container_name(const struct config *cfg, const char *id, char *out, size_t cap);

#endif
