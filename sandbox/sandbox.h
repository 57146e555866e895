/*
 * The sandbox core: lifecycle (create, read with status catch-up, list,
 * set timeout, kill, remove), templates and the container security model.
 * Speaks to Docker through docker/ and to Redis through store/; knows
 * nothing of HTTP. Every function is scoped to one organization: another
 * org's sandbox reads as not found. Errors are struct sp_err with the API's
 * texts ("Sandbox not found", "Sandbox is killed", ...).
 */
#ifndef SANDPIT_SANDBOX_H
#define SANDPIT_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include "../common/config.h"
#include "../common/err.h"

struct store;
struct docker_client;

/* A worker's connection to one Docker server. */
struct server_conn {
	char id[65]; /* "local" for conns[0] */
	struct docker_client *dk;
	char *record;	     /* the server's record as last read (JSON) */
	int64_t checked_at;  /* mono ms */
	int docker_ready;    /* version negotiated */
	int networks_ready;  /* sandbox networks ensured */
	int helper_ready;    /* the helper's volume is there (helper.c) */
	char runtimes[1024]; /* the daemon's runtime names, '\n'-ended ("" = not asked yet) */
	int64_t runtimes_at; /* mono ms when asked */
};

#define SB_MAX_SERVERS 16

/* What a worker holds: its configuration and its own connections. dk is
 * the client of the server the current operation acts on (selected when a
 * sandbox record is loaded, or by placement); NULL when that server cannot
 * be reached. */
struct sandbox_ctx {
	const struct config *cfg;
	struct store *st;
	struct docker_client *dk;
	struct server_conn *cur;
	struct server_conn conns[SB_MAX_SERVERS];
	int nconns;
	struct sp_err server_err; /* why dk is NULL */
	int pool_dirty;		  /* a pooled container was claimed: refill soon */
	int64_t pool_checked_at;  /* mono ms */
	int64_t reap_checked_at;  /* mono ms: when this worker last tried to sweep */
	int defer_expiry;	  /* move containers' expiries in sandbox_idle, not at once */
	char pending_org[65], pending_id[21]; /* the sandbox whose expiry waits ("" none) */
	char install_id
		[33]; /* this installation's id, as its containers are labelled ("" = not read yet) */
	/* a snapshot accepted and not yet captured (snapshot.c; "" none) */
	char snap_pending_org[65], snap_pending_id[21];
	/* a warm container claimed and answered whose lifetimes are armed
	 * right after the answer (pool.c, with defer_expiry; id "" none) */
	struct sandbox_arm {
		char org[65], id[21], cid[65];
		int64_t deadline_at, expires_at, timeout_ms, max_lifetime_ms;
	} arm_pending;
};

/* stopped: the container is paused (sandbox_stop), its processes and
 * memory kept; its inactivity expiry is disarmed (expiresAt = deadlineAt),
 * its deadline still counts. stopping: a stop is
 * under way (or was interrupted: a stop or a start finishes it); nothing
 * new may run in the container meanwhile. */
enum sandbox_status { SB_CREATING, SB_RUNNING, SB_KILLED, SB_ERROR, SB_STOPPED, SB_STOPPING };
#define SB_STATUS_COUNT 6

#define SANDBOX_ID_LEN 20

/* How a sandbox's disk is limited (disk.c, README "Disk limits"). */
enum { SB_DISK_NONE, SB_DISK_LOOP, SB_DISK_STORAGE_OPT };

/* Managed volumes (/v1, volume.c): at most SB_VOLUME_ATTACH_MAX per
 * sandbox, each target at most SB_VOLUME_TARGET_MAX bytes, their JSON
 * text at most SB_VOLUMES_TEXT_MAX. */
#define SB_VOLUME_ATTACH_MAX 8
#define SB_VOLUME_TARGET_MAX 255
#define SB_VOLUMES_TEXT_MAX 4096

/* A managed volume's loop disk while a create attaches it (by the
 * attachment's index): size_mb 0 = a Docker named volume (no size). fd is
 * the loop device's, open only while dev is not "". */
struct sandbox_vol_disk {
	char id[SANDBOX_ID_LEN + 1]; /* the volume's */
	int64_t size_mb;
	int fd;
	char dev[32];
};

/* A sandbox's own filesystem while its create runs; not in the record.
 * fd is the loop device's, open only while dev is not "". */
struct sandbox_disk {
	int how; /* SB_DISK_* */
	int fd;
	char dev[32];		 /* /dev/loopN, "" once handed over */
	char file[1100];	 /* the backing file, "" once unlinked */
	unsigned uid, gid, mode; /* what its root folder was made for */
	struct sandbox_vol_disk vols[SB_VOLUME_ATTACH_MAX];
};

/* A sandbox's labels (/v1): at most SB_LABELS_COUNT_MAX, their JSON text
 * at most SB_LABELS_MAX bytes. */
#define SB_LABELS_COUNT_MAX 64
#define SB_LABELS_MAX 4096

/* A sandbox's published ports (/v1 createPort, sandbox/ports.c): at most
 * SB_PORTS_MAX, kept in the record's "ports" field as text of at most
 * SB_PORTS_TEXT_MAX bytes (only ports.c writes it). */
#define SB_PORTS_MAX 16
#define SB_PORTS_TEXT_MAX 2047

struct sandbox {
	char id[SANDBOX_ID_LEN + 1];
	char name[65];
	char org[65];
	char server_id[65]; /* "" = the local server */
	char image[256];
	char template_name[32]; /* "" for a custom image */
	char container_id[65];
	enum sandbox_status status;
	double cpu;
	int64_t memory_mb;
	int64_t pids_limit;
	int64_t timeout_ms;
	int64_t max_lifetime_ms;
	char network_mode[16];
	char workdir[4097];
	char user[64];	/* as the image or template names it */
	char owner[32]; /* the same user as numeric "uid:gid", "" if unknown */
	char runtime[16];
	int pooled;	 /* came from a warm pool: envVars go to each exec */
	int discard;	 /* stop mode fixed at creation: 1 = discard (docker stop/start, no
			    AutoRemove: discard.c), 0 = preserve (a pause, pause.c) */
	int64_t disk_mb; /* the disk limit in force, MiB; 0 = none (the server cannot) */
	struct sandbox_disk disk;
	int64_t created_at, expires_at, deadline_at, last_activity_at, killed_at; /* ms, 0 = none */
	int64_t container_expires_at; /* the expiry last written into the container (ms) */
	int64_t creating_until;	      /* creating: reads error after this (ms); 0 = by createdAt */
	char error_message[512];
	char labels[SB_LABELS_MAX + 1]; /* the caller's labels: a JSON object's text, "" = none */
	int has_environment;		/* the record holds a sealed environment (/v1) */
	int timeout_stop; /* onTimeout stop (/v1): paused at expiry, not ended (record onTimeout) */
	char ports[SB_PORTS_TEXT_MAX + 1]; /* published ports (ports.c), "" = none */
	/* managed volumes (/v1, volume.c): [{"volume":id,"target":path}] as
	 * admitted, "" = none (record volumes) */
	char volumes[SB_VOLUMES_TEXT_MAX + 1];
	/* the id of the key that created it (record createdBy), "" if unknown */
	char created_by[40];
};

/* Where a create spent its time, in microseconds (for Server-Timing). */
struct sandbox_timing {
	int64_t place_us;  /* quota, placement, the creating record */
	int64_t image_us;  /* image inspect, and a pull when needed */
	int64_t create_us; /* container create, image checks, seeding files */
	int64_t start_us;  /* container start */
	int64_t ready_us;  /* the running record */
	int64_t disk_us;   /* the sandbox's filesystem (within create_us) */
	int pulled;	   /* the image was pulled */
	int pooled;	   /* claimed from a warm pool */
};

/* A create request as validated at the edge; strings NULL when not given,
 * numbers < 0 when not given. */
struct sandbox_env_var;
struct sandbox_volume_attach;
struct sandbox_create_req {
	const char *id;	    /* caller-chosen (sandbox_id_ok), made cold; NULL: a random one */
	const char *labels; /* a JSON object's text (the face checks it), at most SB_LABELS_MAX */
	/* environment (/v1): nenv variables for the container, under the
	 * rules of an exec's env (sandbox_env_check); kept sealed in the
	 * record and shown back (sandbox_environment); made cold */
	const struct sandbox_env_var *env;
	size_t nenv;
	const char *template_name;
	/* a reference the caller named (sandbox/image.c's rules); image_field
	 * the field its refusals name, NULL: "image" */
	const char *image, *image_field;
	const char *name;
	const char *server_id;
	double cpu;
	int64_t memory_mb, pids_limit, timeout_ms, max_lifetime_ms;
	const char *network_mode;
	const char *env_vars;
	size_t env_vars_len;
	const char *workdir;
	const char *runtime;	       /* "runc" | "gvisor"; NULL: the configured default */
	const char *created_by;	       /* the caller's key id (a label for people), NULL: none */
	int64_t disk_mb;	       /* <= 0: the configured default */
	struct sandbox_timing *timing; /* filled when not NULL */
	int timeout_stop;	       /* onTimeout stop: paused at expiry (made cold) */
	/* non-NULL (/v1): a timeout beyond the hard deadline is an outOfRange
	 * naming this field; NULL (/api): the expiry is capped at it */
	const char *timeout_field;
	/* managed volumes to attach (/v1 features.managedVolumes), checked
	 * here (sandbox_volume_targets_check), claimed exclusively for the
	 * sandbox before its container exists; made cold */
	const struct sandbox_volume_attach *volumes;
	size_t nvolumes;
};

/* Defaults and bounds (dokploy-reference.md). */
#define SB_DEFAULT_CPU 1.0
#define SB_DEFAULT_MEMORY_MB 512
#define SB_DEFAULT_PIDS 256
#define SB_DEFAULT_TIMEOUT_MS 300000
#define SB_MAX_LIFETIME_MS 86400000 /* the default, and the longest a setting allows */
#define SB_MIN_LIFETIME_MS 10000
#define SB_MIN_TIMEOUT_MS 10000
#define SB_KILL_GRACE_S 2

const char *sandbox_status_name(enum sandbox_status s);
/* The user every command of a sandbox runs as, given the user its image or
 * template names (user, may be "" or NULL): that user, or "root" when it
 * names none; never "", which would be the container's own user (the
 * keeper). A caller never chooses it. */
const char *sandbox_run_user(const char *user);

/* Prepares ctx for a worker: opens the store and the Docker client.
 * Allocates; release with sandbox_ctx_cleanup. Safe from any thread: a
 * ctx is one thread's at a time (sandpit-stream keeps a pool of them,
 * one per running job), cfg is read only, and the process-wide caches it
 * reaches are locked (state.c seen_mu, image.c tool_mu, owner.c owned_mu)
 * or atomics (docker/guard.c). */
int sandbox_ctx_init(struct sandbox_ctx *ctx, const struct config *cfg, struct sp_err *e);
/* Safe from any thread, on a ctx no other thread uses. */
void sandbox_ctx_cleanup(struct sandbox_ctx *ctx);

int sandbox_create(struct sandbox_ctx *ctx, const char *org, const struct sandbox_create_req *rq,
		   struct sandbox *out, struct sp_err *e);
/* The environment a create was given (rq->env), as a JSON object's text
 * appended to out (nothing when it had none). The record holds it sealed;
 * it is opened for the caller here. */
struct buf;
int sandbox_environment(struct sandbox_ctx *ctx, const struct sandbox *sb, struct buf *out,
			struct sp_err *e);
/* 1 when id has the form of a sandbox id (SANDBOX_ID_LEN of [a-z0-9]). */
int sandbox_id_ok(const char *id);
/* A generated name: prefix, cut so that the time fits, then ms in base 36
 * (lowercase), in out (cap bytes with its NUL); when not even the time
 * fits, its last digits, which change fastest. */
void sandbox_time_name(const char *prefix, int64_t ms, char *out, size_t cap);
/* A create whose first attempt with the same caller-chosen id (rq->id) may
 * have died midway (sandbox/resume.c, RELIABILITY I2): the sandbox that
 * attempt finished is answered, a container it started with its record
 * still "creating" is adopted, and otherwise whatever it left is ended and
 * the sandbox created again under the same id, so there is never more
 * than one container for it. owner_gone: the first attempt's process is
 * known to be gone; else the first counts as gone only once its record's
 * creation time has passed (or it left none). 409 SP_CONFLICT while the
 * first attempt is still under way. */
int sandbox_create_resume(struct sandbox_ctx *ctx, const char *org,
			  const struct sandbox_create_req *rq, int owner_gone, struct sandbox *out,
			  struct sp_err *e);
/* Reads a record and brings its status up to date (past expiresAt or
 * deadlineAt, container gone, creation stuck). */
int sandbox_get(struct sandbox_ctx *ctx, const char *org, const char *id, struct sandbox *out,
		struct sp_err *e);
/* Like sandbox_get, but fails with 412 "Sandbox is <status>" unless the
 * sandbox is running; for operations that act on the container. Safe from
 * any thread: as sandbox_ctx_init (sandbox_get too: its seen_running
 * cache is under seen_mu). */
int sandbox_get_running(struct sandbox_ctx *ctx, const char *org, const char *id,
			struct sandbox *out, struct sp_err *e);
/* A page request: at most limit items (<= 0 or over SB_LIST_PAGE_MAX:
 * SB_LIST_PAGE_MAX), after cursor (NULL or "": from the start), a
 * next_cursor from an earlier page. */
#define SB_LIST_PAGE_MAX 256
struct sandbox_page_req {
	int limit;
	const char *cursor;
};
/* A page of records: items[0..n) (allocated; sandbox_page_free), and the
 * cursor of the next page ("" = this was the last). A page may hold fewer
 * than limit items and still have a next one (records that ended meanwhile
 * are left out). */
struct sandbox_page {
	struct sandbox *items;
	size_t n;
	char next_cursor[96];
};
/* Lists the org's sandboxes, newest first (by createdAt), each caught up.
 * A cursor stays valid when records are added or removed meanwhile:
 * a page starts strictly after the last index entry of the one before.
 * 400 naming cursor for a cursor that is not one. */
int sandbox_list(struct sandbox_ctx *ctx, const char *org, const struct sandbox_page_req *pg,
		 struct sandbox_page *out, struct sp_err *e);
void sandbox_page_free(struct sandbox_page *p);
int sandbox_set_timeout(struct sandbox_ctx *ctx, const char *org, const char *id,
			int64_t timeout_ms, struct sandbox *out, struct sp_err *e);
int sandbox_kill(struct sandbox_ctx *ctx, const char *org, const char *id, struct sandbox *out,
		 struct sp_err *e);
int sandbox_remove(struct sandbox_ctx *ctx, const char *org, const char *id, struct sp_err *e);
/* Marks activity in the record: moves expiresAt (never past deadlineAt);
 * extra_ms keeps the sandbox alive that much longer (a running command
 * counts as activity: the container's watcher sees it run). With
 * extra_ms 0 (an operation ended) the container's expiry is moved to
 * cover the record's, as the keeper, when it does not yet (lazily: it
 * leads by a few seconds, so a burst costs one write). */
int sandbox_touch_record(struct sandbox_ctx *ctx, struct sandbox *sb, int64_t extra_ms,
			 struct sp_err *e);
/* Tops the warm pools up (at most one container each), at most once a
 * second unless a claim made it urgent. Call between requests. */
void sandbox_pool_maintain(struct sandbox_ctx *ctx);
/* Arms the warm container a create answered with (defer_expiry), if one
 * waits: a Docker call the answer need not wait for. */
void sandbox_pool_arm_pending(struct sandbox_ctx *ctx);
/* Work between requests: a warm container's arming and the deferred
 * expiry write (defer_expiry), the warm pools, and the reaper. Call when a request was answered and while
 * idle (about once a second). */
void sandbox_idle(struct sandbox_ctx *ctx);
/* Writes a deferred container expiry now, if one waits. */
void sandbox_flush_expiry(struct sandbox_ctx *ctx);
/* The reaper (reaper.c): at most every reaper_interval_s, and by one
 * worker at a time across all workers and hosts (a Redis lock), ends the
 * labelled containers of every server that are past their deadline, have
 * no live record, or belong to a killed, expired, failed or stuck-creating
 * record; turns those records killed/error; releases quota shares whose
 * container Docker no longer lists. */
void sandbox_reap(struct sandbox_ctx *ctx);
/* Ends every container labelled with sandbox id on the current server
 * (grace_s > 0: stop with that grace, else SIGKILL; created or exited
 * ones are removed). 0 when Docker then lists none running, 1 when some
 * still run after 3 s, -1 on a Docker error (e says why). */
int sandbox_end_containers(struct sandbox_ctx *ctx, const char *id, int grace_s, struct sp_err *e);
/* Pool i of the configuration: containers ready now, claims so far. */
int sandbox_pool_stats(struct sandbox_ctx *ctx, int i, int *ready, long long *claims);
/* Disk (disk.c). release: removes what a sandbox's disk left on the local
 * host (its backing file, a loop device nobody holds); safe to call for
 * any id at any time, also while the sandbox runs (a running sandbox's
 * file is already unlinked and its device held by the mount). For the
 * reaper and for remove. sweep: releases the disks of creates that died
 * (files older than create_timeout_s); creates call it once a minute. */
int sandbox_disk_release(struct sandbox_ctx *ctx, const char *sandbox_id);
/* 1 when loop device dev (/dev/loopN) is still backed by sandbox_id's disk
 * file, or by managed volume volume_id's when not NULL (a discard-mode
 * start checks it: after a host restart the device may be another
 * sandbox's, or none), else 0. */
int sandbox_disk_backs(const struct config *cfg, const char *dev, const char *sandbox_id,
		       const char *volume_id);
void sandbox_disk_sweep(struct sandbox_ctx *ctx);
/* Marks a sandbox killed after its container was found gone. */
void sandbox_mark_gone(struct sandbox_ctx *ctx, struct sandbox *sb);

/* Commands. */
#define SB_DEFAULT_EXEC_TIMEOUT_MS 60000
#define SB_MAX_EXEC_TIMEOUT_MS 600000

/* One variable of a command's environment (value: value_len bytes). */
struct sandbox_env_var {
	const char *key;
	const char *value;
	size_t value_len;
};

/* The rules every face's exec shares (exec.c): at most SB_ENV_MAX_VARS
 * variables, each KEY=value at most SB_ENV_VAR_MAX bytes (the kernel's
 * MAX_ARG_STRLEN less its NUL: a longer one cannot reach the program), all
 * of them at most SB_ENV_TOTAL_MAX; a 400 naming env otherwise. A cwd the
 * runtime cannot enter is a 400 naming cwd (the runtime's own text never
 * reaches the caller as output). SB_EXEC_OUTPUT_MAX is the cap of an
 * answer that carries the output whole (sandbox.exec). */
#define SB_ENV_MAX_VARS 256
#define SB_ENV_VAR_MAX 131071
#define SB_ENV_TOTAL_MAX 1048576
/* Checks variables against those rules; field names the request field
 * in a 400 ("env" for an exec, "environment" for a /v1 create). */
int sandbox_env_check(const struct sandbox_env_var *v, size_t n, const char *field,
		      struct sp_err *e);
/* A JSON object of string values (a request's env or environment, a
 * snapshot's sealed envVars) as a list of variables pointing into it:
 * *v is allocated (free it; NULL and *n 0 for a NULL object), at most
 * max variables are taken (max < 0: all). Anything but an object of
 * strings is a 400 naming field. Then sandbox_env_check for the rules. */
struct json_object;
int sandbox_env_of_json(struct json_object *obj, const char *field, int max,
			struct sandbox_env_var **v, size_t *n, struct sp_err *e);
#define SB_EXEC_OUTPUT_MAX (1024 * 1024)

struct sandbox_exec_req {
	const char
		*cmd; /* a shell command; "" (cmd_len 0): args are the program and its arguments */
	size_t cmd_len;
	const char *cwd;		   /* NULL = the sandbox workdir */
	const struct sandbox_env_var *env; /* nenv variables (checked here) */
	size_t nenv;
	int64_t timeout_ms;	 /* 0 = the default */
	const char *const *args; /* positional parameters $1.. (NULL-terminated) or NULL */
	int no_activity;	 /* do not count this as activity (readFile) */
	const void *input;	 /* not NULL: input_len bytes for the command's stdin */
	size_t input_len;	 /* (read in place; the command must read exactly these) */
	size_t output_max;	 /* > 0: each stream's bytes past this are read and
				  * dropped (res->truncated) */
};

/* Where output goes while a command runs. on_output(arg, 1|2, bytes, len)
 * returns 0 to go on; should_stop(arg) (may be NULL) is polled about once a
 * second and ends the command when it returns 1 (the caller went away). */
struct sandbox_exec_io {
	int (*on_output)(void *arg, int stream, const char *data, size_t len);
	int (*should_stop)(void *arg);
	void *arg;
};

struct sandbox_exec_result {
	int exit_code; /* 124 on timeout */
	int timed_out;
	int stopped;   /* ended because should_stop said so */
	int truncated; /* output past output_max was dropped */
};

/* Runs one command in a running sandbox (sb from sandbox_get_running).
 * Safe from any thread: as sandbox_ctx_init; io's callbacks run on the
 * calling thread. */
int sandbox_exec_run(struct sandbox_ctx *ctx, struct sandbox *sb, const struct sandbox_exec_req *rq,
		     const struct sandbox_exec_io *io, struct sandbox_exec_result *res,
		     struct sp_err *e);
/* Checks a path from a request: absolute, at most 4096 bytes. */
int sandbox_path_check(const char *field, const char *path, struct sp_err *e);

/* Files. Paths are absolute, at most 4096 bytes. write: mode's setuid,
 * setgid and sticky bits are dropped; the file belongs to the sandbox
 * user. read: content gets the bytes (replaced, capped at SB_FILE_MAX).
 * list: *out is {path, entries:[{name,type,size,mode,modifiedAt}]},
 * directories first; path NULL = the workdir. */
#define SB_FILE_MAX 10485760
#define SB_LIST_MAX (8 * 1024 * 1024)
struct sandbox_file {
	char path[4097];
	int64_t size;
};
struct buf;
int sandbox_write_file(struct sandbox_ctx *ctx, const char *org, const char *id, const char *path,
		       const void *data, size_t len, unsigned mode, struct sandbox_file *out,
		       struct sp_err *e);
int sandbox_read_file(struct sandbox_ctx *ctx, const char *org, const char *id, const char *path,
		      struct buf *content, struct sp_err *e);
enum sandbox_file_type { SB_FILE_REGULAR, SB_FILE_DIRECTORY, SB_FILE_SYMLINK, SB_FILE_OTHER };
struct sandbox_file_entry {
	char *name; /* UTF-8 (invalid bytes replaced by U+FFFD) */
	enum sandbox_file_type type;
	int has_stat; /* size, mode and modified_at are known (GNU find; not busybox) */
	int64_t size;
	char mode[12];	     /* permission bits in octal, as find prints them ("755") */
	int64_t modified_at; /* ms */
};
struct sandbox_file_list {
	char path[4097]; /* the folder listed */
	struct sandbox_file_entry *entries;
	size_t n;
};
int sandbox_list_files(struct sandbox_ctx *ctx, const char *org, const char *id, const char *path,
		       struct sandbox_file_list *out, struct sp_err *e);
void sandbox_file_list_free(struct sandbox_file_list *l);
/* Content as a request carries it, text (the bytes as they are) or base64:
 * sized from its encoded length before anything is decoded (413 past
 * SB_FILE_MAX), base64 decoded once into *bin (allocated, free it; NULL
 * for text). *data, *size: the bytes to write. 400 naming content for
 * base64 that is not. */
int sandbox_file_content(const char *s, size_t n, int base64, unsigned char **bin,
			 const void **data, size_t *size, struct sp_err *e);

/* Docker servers (besides "local"). add: registers or replaces one after
 * checking its endpoint (no connection is made). */
struct sandbox_server_spec {
	const char *id, *name, *endpoint;
	const char *tls_cert, *tls_key, *tls_ca;
	const char *ssh_key, *ssh_known_hosts;
	const char *pool, *orgs;
	int pooled;
	int allow_unfiltered;	 /* place sandboxes there even if its network check fails */
	int64_t max_lifetime_ms; /* its sandboxes' hard deadline at most; 0 = no own limit */
};
/* A registered Docker server as its record holds it. */
struct sandbox_server {
	char id[65], name[65], endpoint[512];
	char tls_cert[1024], tls_key[1024], tls_ca[1024];
	char ssh_key[1024], ssh_known_hosts[1024];
	char pool[65];
	char orgs[1024]; /* comma separated; "*" = every organization */
	int pooled;
	int allow_unfiltered; /* the operator accepts a failed network check */
	char net_check[16];   /* "" (not checked), pass, fail, error */
	char net_check_detail[512];
	int64_t net_check_at;	 /* epoch ms */
	int64_t max_lifetime_ms; /* its sandboxes' hard deadline at most; 0 = SB_MAX_LIFETIME_MS */
};
/* A server with its current load (has_load 0: the load could not be read). */
struct sandbox_server_row {
	struct sandbox_server s;
	int has_load;
	int64_t sandboxes, cpu_milli, memory_mb;
};
/* Installs the local server's deny rules for the bridges of its sandbox
 * networks (see firewall.c). SP_UNAVAILABLE when it cannot. */
int sandbox_firewall_init(const struct config *cfg, struct sp_err *e);
int sandbox_server_add(struct store *st, const struct sandbox_server_spec *sp, struct sp_err *e);
/* Runs the network check of server id (netcheck.c) and stores the result
 * in its record: netCheck pass|fail|error, netCheckDetail, netCheckAt.
 * -1 only when the record cannot be read or written; a failed check is 0
 * (read netCheck). */
int sandbox_server_check(struct sandbox_ctx *ctx, const char *id, struct sp_err *e);
/* The registered servers (records that do not read as one are left out);
 * *out is allocated (free it), *n rows. */
int sandbox_server_list(struct store *st, struct sandbox_server_row **out, size_t *n,
			struct sp_err *e);
/* A server's record as JSON (the fields that are set; never its load):
 * what the store keeps and `sandpit servers list` prints. New object. */
struct json_object *sandbox_server_json(const struct sandbox_server *s);

/* A template as sandbox.templates lists it. */
struct sandbox_template {
	char name[32];
	char image[256];
	char user[16];
	char workdir[32];
	char description[96];
	char env[4096];	   /* extra variables, "K=V\n" lines, "~" expanded to the workdir */
	char version[128]; /* "" = unknown */
	int image_present; /* 1, 0, or -1 when unknown (Docker not asked yet, or down) */
};
/* The configured templates, each with the version and the presence of its
 * image on the local Docker (an image inspect per template at most every
 * 30 s per worker). *out is allocated (free it), *n entries. */
int sandbox_templates(struct sandbox_ctx *ctx, struct sandbox_template **out, size_t *n,
		      struct sp_err *e);

/* /v1 (sandbox/v1.c). rename: sets the record's name when it is still
 * seen_name (what the caller's read showed), atomically; SP_ETAG_MISMATCH
 * when it changed meanwhile, 404 when the record is gone; *out is the
 * record after the change. */
int sandbox_rename(struct sandbox_ctx *ctx, const char *org, const char *id, const char *seen_name,
		   const char *name, struct sandbox *out, struct sp_err *e);

/* Stop and start (pause.c). stop pauses a running sandbox's container
 * (its processes and memory kept) and makes the record stopped; start
 * unpauses it and makes it running again, which counts as activity
 * (expiresAt = now + timeoutMs, never past deadlineAt). Stopping a stopped
 * sandbox, or starting a running one, changes nothing and succeeds. A
 * sandbox that is creating, killed or error (an expiry or the deadline
 * passed while stopped included: the read that finds it ends it) is 412
 * "Sandbox is <status>". *out is the record after the change. */
int sandbox_stop(struct sandbox_ctx *ctx, const char *org, const char *id, struct sandbox *out,
		 struct sp_err *e);
int sandbox_start(struct sandbox_ctx *ctx, const char *org, const char *id, struct sandbox *out,
		  struct sp_err *e);

/* Durable processes (sandbox/process.c), supervised by the helper inside
 * the sandbox (issue 16): they live in the sandbox, so any worker serves
 * any of them and they outlive every sandpit process. Each call is one
 * docker exec of the helper as the sandbox user. The answers are the
 * helper's JSON (new objects), from files the sandbox user can write:
 * callers check every member they use. */
struct json_object;
#define SB_PROC_RETENTION (4 * 1024 * 1024)	   /* output kept per process, bytes */
#define SB_PROC_ATTACH_MAX_MS (24LL * 3600 * 1000) /* one interact connection at most */
#define SB_PROC_LABEL_MAX 128
#define SB_PROC_SESSION_MAX 1024
#define SB_PROC_READ_DEFAULT (1024 * 1024) /* readOutput's page when maxBytes is 0 */
#define SB_PROC_READ_MAX (4 * 1024 * 1024)
struct sandbox_process_req {
	const char *const *argv; /* NULL-terminated, at least one */
	const struct sandbox_env_var *env;
	size_t nenv;
	const char *cwd; /* NULL = the workdir */
	const char *label, *session;
	const char *uid;     /* the process's id (SANDBOX_ID_LEN [a-z0-9]) */
	int pty;	     /* 1: stdin, stdout and stderr on a PTY of rows x cols */
	unsigned rows, cols; /* 1..65535 each */
};
/* create: *out {"uid","pid"}; SP_CONFLICT when the label is taken, a 400
 * naming cmd when cmd[0] cannot be run. get: *out the helper's report
 * ({"uid","label","session","pid","created","first","last","exit"?}),
 * SP_NOT_FOUND. list: *out {"processes":[report...]}. read: *out the
 * report and (*page) {"chunks":[{"seq","stream","data"(base64)}]} after
 * sequence from, about max bytes; SP_PRECONDITION when output after from
 * is no longer kept. signal: SP_PRECONDITION when it has exited. */
int sandbox_process_create(struct sandbox_ctx *ctx, const char *org, const char *id,
			   const struct sandbox_process_req *rq, struct json_object **out,
			   struct sp_err *e);
int sandbox_process_get(struct sandbox_ctx *ctx, const char *org, const char *id, const char *puid,
			struct json_object **out, struct sp_err *e);
int sandbox_process_list(struct sandbox_ctx *ctx, const char *org, const char *id,
			 struct json_object **out, struct sp_err *e);
int sandbox_process_read(struct sandbox_ctx *ctx, const char *org, const char *id, const char *puid,
			 int64_t from, int64_t max, struct json_object **out,
			 struct json_object **page, struct sp_err *e);
int sandbox_process_signal(struct sandbox_ctx *ctx, const char *org, const char *id,
			   const char *puid, int signo, struct sp_err *e);

/* One interaction with a durable process (interact, sandpit-stream): a
 * docker exec of the helper's attach in the running sandbox org/id, as its
 * user, for as long as both ends want. Input: in_peek offers bytes of the
 * helper's command protocol (sandbox/helper/sandpit-helper.c: "I <len>\n"
 * + bytes, "E\n", "R <rows> <cols>\n"), in_consume says how many went;
 * wake_fd is readable when there is more (or should_stop became true).
 * Output: on_output gets the attach's stdout (stream 1) as it comes; -1
 * from it ends the interaction. Returns 0 when the exec ended (or was
 * stopped), -1 with e set when the sandbox is not running or Docker failed.
 * May be called from any thread with a context of its own. */
struct sandbox_attach_io {
	size_t (*in_peek)(void *arg, const char **p);
	void (*in_consume)(void *arg, size_t n);
	int wake_fd;
	int (*on_output)(void *arg, int stream, const char *data, size_t len);
	int (*should_stop)(void *arg);
	void *arg;
};
int sandbox_process_attach(struct sandbox_ctx *ctx, const char *org, const char *id,
			   const char *puid, int64_t from, const struct sandbox_attach_io *io,
			   struct sp_err *e);

/* The /v1 file operations (sandbox/files_v1.c): the helper's file command
 * argv ("stat", "ls", "cat", "put", "mkdir", "mv", "rm", then its
 * arguments) run as the sandbox's user, in_len bytes at in (may be NULL)
 * on its stdin. raw: its stdout appended to out (out's cap; beyond it the
 * read stops: SP_UNAVAILABLE). json: its answer, one JSON object (new;
 * check every member), parsed only within max_tokens structural tokens
 * (sandbox_helper_json in helper.c: about max_tokens KiB of memory at
 * most; the caller's bound follows from what it asked for). The helper's
 * refusals become the document's errors; a helper that was killed or
 * answers past a bound is SP_UNAVAILABLE. */
struct buf;
#define SB_FILE_UNARY_MAX (10 * 1024 * 1024) /* readFile/writeFile, bytes */
int sandbox_files_raw(struct sandbox_ctx *ctx, const char *org, const char *id,
		      const char *const *argv, const void *in, size_t in_len, struct buf *out,
		      struct sp_err *e);
/* The same as json with stdin pulled from in_fn (docker_input_fn's
 * contract), streamed: the caller never holds the input whole. */
int sandbox_files_json_stream(struct sandbox_ctx *ctx, const char *org, const char *id,
			      const char *const *argv,
			      long (*in_fn)(void *arg, char *buf, size_t cap), void *in_arg,
			      size_t out_max, size_t max_tokens, struct json_object **out,
			      struct sp_err *e);
int sandbox_files_json(struct sandbox_ctx *ctx, const char *org, const char *id,
		       const char *const *argv, const void *in, size_t in_len, size_t out_max,
		       size_t max_tokens, struct json_object **out, struct sp_err *e);

/* Snapshots (sandbox/snapshot.c, /v1): a running sandbox's disk as a
 * local image <SB_SNAP_REPO>:<id> on its server, the org's record moving
 * creating -> ready | failed. create: refuses a sandbox that is not
 * running (SP_PRECONDITION snapshot_source_not_running), a second
 * capture of one sandbox at a time (snapshot_in_progress) and a snapshot
 * past SB_SNAP_MAX_PER_ORG (SP_QUOTA), writes the
 * record creating, and leaves the capture to sandbox_snapshot_idle (now
 * when ctx->defer_expiry is 0). get: SP_NOT_FOUND for another org's; a
 * capture that never finished reads failed. list: newest first (*out
 * allocated, free it). delete: SP_PRECONDITION deletion_preparation_incomplete
 * while creating, deletion_content_lease_held while a container uses the
 * image. restore: a new sandbox from a ready snapshot with its source's
 * configuration (sandbox_create; with sandbox_rid, resume as an
 * Idempotency-Key's retry: sandbox_create_resume). capturing: 1 while a
 * capture holds sandbox_id's container paused (reads must not take it
 * for a stop). */
#define SB_SNAP_REPO "sandpit-snapshot"
#define SB_SNAP_DESC_MAX 4096
#define SB_SNAP_MAX_PER_ORG 256 /* snapshots an organization may keep (429 beyond) */
enum { SB_SNAP_CREATING, SB_SNAP_READY, SB_SNAP_FAILED };
struct sandbox_snapshot {
	char id[SANDBOX_ID_LEN + 1];
	char org[65];
	char display_name[256];
	char description[SB_SNAP_DESC_MAX + 1];
	char sandbox_id[SANDBOX_ID_LEN + 1];
	char server_id[65];
	int status;			       /* SB_SNAP_* */
	char image[64];			       /* SB_SNAP_REPO:id */
	char image_id[80];		       /* sha256:... once ready */
	int64_t size_bytes, created_at, until; /* until: a capture not done by then failed */
	char error_message[512];
	/* the source's configuration, for a restore */
	char template_name[32], src_image[256], network_mode[16], workdir[4097], user[64],
		runtime[16];
	double cpu;
	int64_t memory_mb, pids_limit, disk_mb, timeout_ms, max_lifetime_ms;
	int timeout_stop;
	char labels[SB_LABELS_MAX + 1];
};
struct sandbox_snapshot_req {
	const char *id; /* an Idempotency-Key's chosen id, or NULL */
	const char *display_name, *description;
};
int sandbox_snapshot_create(struct sandbox_ctx *ctx, const char *org, const char *sandbox_id,
			    const struct sandbox_snapshot_req *rq, struct sandbox_snapshot *out,
			    struct sp_err *e);
void sandbox_snapshot_idle(struct sandbox_ctx *ctx);
int sandbox_snapshot_get(struct sandbox_ctx *ctx, const char *org, const char *id,
			 struct sandbox_snapshot *out, struct sp_err *e);
int sandbox_snapshot_list(struct sandbox_ctx *ctx, const char *org, struct sandbox_snapshot **out,
			  size_t *n, struct sp_err *e);
int sandbox_snapshot_delete(struct sandbox_ctx *ctx, const char *org, const char *id,
			    struct sp_err *e);
int sandbox_snapshot_restore(struct sandbox_ctx *ctx, const char *org, const char *id,
			     const char *name, const char *sandbox_rid, const char *resume,
			     struct sandbox *out, struct sp_err *e);
int sandbox_snapshot_capturing(struct sandbox_ctx *ctx, const char *sandbox_id);

/* Images (/v1, snapshot.c): the templates (images/<template>, source
 * image) and the org's snapshots' images (images/snapshot-<id>, source
 * sandbox), with what Docker says of them. list: *out allocated. get:
 * SP_NOT_FOUND for an unknown one or another org's. */
#define SB_SNAP_IMAGE_PREFIX "snapshot-"
enum {
	SB_IMAGE_COMPLETED,
	SB_IMAGE_PREPARING,
	SB_IMAGE_FAILED,
	SB_IMAGE_UNKNOWN,
	SB_IMAGE_WAITING /* registered by createImage, nothing pushed yet */
};
enum { SB_IMAGE_FROM_IMAGE = 1, SB_IMAGE_FROM_SANDBOX };
struct sandbox_image {
	char id[64];
	char ref[320];
	char push_ref[320];	/* registered ones: where the content goes (repo:latest) */
	char display_name[256]; /* registered ones ("" = the id) */
	char start_cmd[2048], ready_cmd[2048]; /* registered ones: JSON arrays ("" = none) */
	char digest[80];
	char snapshot[SANDBOX_ID_LEN + 1]; /* "" for a template */
	char description[256];
	int source; /* SB_IMAGE_FROM_* */
	int status; /* SB_IMAGE_* */
	int64_t size_bytes;
	int64_t created_ms; /* snapshots */
	char created[48];   /* templates: Docker's Created ("" unknown) */
	char os[16], arch[16];
	char failure[512];
};
int sandbox_images_list(struct sandbox_ctx *ctx, const char *org, struct sandbox_image **out,
			size_t *n, struct sp_err *e);
int sandbox_image_get(struct sandbox_ctx *ctx, const char *org, const char *id,
		      struct sandbox_image *out, struct sp_err *e);

/* Registry transfer (sandbox/registry.c), only where the operator set
 * image_registry: an org's images live in <image_registry>/<org key>/<image
 * id>, the org key a keyed hash of the org (never guessable, never
 * shared). register (createImage fromImage): a record images/img-<id>
 * (kind "pushimgs") whose content the client pushes to push_ref; it reads
 * waitingForPush until the registry has it, then completed with the
 * registry's digest. pull_spec: a snapshot's image tagged and pushed there
 * from the snapshot's server (again on every call: a push of what the
 * registry has costs one manifest), a registered one looked up; out gets
 * repo@digest. Errors: SP_UNIMPLEMENTED without a registry, SP_NOT_FOUND,
 * SP_PRECONDITION for a template or an image that is not ready or not
 * pushed, SP_UNAVAILABLE when the registry refuses or cannot be reached. */
#define SB_REG_IMAGE_PREFIX "img-"
struct sandbox_image_reg {
	const char *id; /* an Idempotency-Key's chosen id (its record, when there, is the answer) */
	const char *display_name, *description;
	const char *start_cmd, *ready_cmd; /* JSON arrays of strings, or NULL */
};
struct sandbox_pull_spec {
	char ref[400];	 /* repo@sha256:... */
	char digest[80]; /* the manifest's */
	char media_type[128];
};
int sandbox_registry_configured(const struct sandbox_ctx *ctx);
/* Whether a create's image reference names a registered image (createImage)
 * of org: 0 when ref is not under image_registry at all, 1 when it is
 * <image_registry>/<org's key>/img-<id> (":latest" or "@sha256:<digest>"
 * or neither) and org holds that record, 2 when it is under the registry
 * but not one of org's; -1 on a store error. */
int sandbox_reg_image_ref(struct sandbox_ctx *ctx, const char *org, const char *ref,
			  struct sp_err *e);
int sandbox_image_register(struct sandbox_ctx *ctx, const char *org,
			   const struct sandbox_image_reg *rq, struct sandbox_image *out,
			   struct sp_err *e);
int sandbox_image_pull_spec(struct sandbox_ctx *ctx, const char *org, const char *id,
			    struct sandbox_pull_spec *out, struct sp_err *e);
/* registry.c for snapshot.c: a registered image (id without its prefix)
 * as an image; the org's registered images (*out allocated); delete. */
int sandbox_reg_image_get(struct sandbox_ctx *ctx, const char *org, const char *id,
			  struct sandbox_image *out, struct sp_err *e);
int sandbox_reg_image_list(struct sandbox_ctx *ctx, const char *org, struct sandbox_image **out,
			   size_t *n, struct sp_err *e);
int sandbox_reg_image_delete(struct sandbox_ctx *ctx, const char *org, const char *id,
			     struct sp_err *e);

/* Published ports (sandbox/ports.c, the /v1 ports and preview URLs). A
 * port is reached only through sandpit's nginx (a preview URL): no host
 * port is published; nginx asks sandpitd (sandbox_port_resolve) for the
 * target of each request, which is only ever the sandbox's own container
 * address and the published number. uid: 32 hex digits of randomness, the
 * unguessable part of the URL ("<number>-<uid>"). */
#define SB_PORT_UID_LEN 32
struct sandbox_port {
	int number;
	char uid[SB_PORT_UID_LEN + 1];
	char ip[48]; /* the container's address when published (a delete cuts
			connections to it; requests go to its address now) */
	int64_t created_at;
};
/* The ports of a record (sb->ports), in number order, at most max: the
 * count. A damaged entry is skipped. */
int sandbox_ports_parse(const struct sandbox *sb, struct sandbox_port *out, int max);
/* Publishes number (1..65535) of a running or stopped sandbox: the new
 * port into out. SP_CONFLICT when it is published, SP_PRECONDITION
 * (a reason in the message) when the sandbox cannot have one: failed,
 * creating, on a remote server, gVisor without a network, SB_PORTS_MAX
 * reached. */
int sandbox_port_create(struct sandbox_ctx *ctx, const char *org, const char *id, int number,
			struct sandbox_port *out, struct sp_err *e);
/* Withdraws number: 1 when it was published (and is no more; the open
 * connections through it are cut), 0 when it was not. */
int sandbox_port_delete(struct sandbox_ctx *ctx, const char *org, const char *id, int number,
			struct sp_err *e);
/* Where a preview request for label "<number>-<uid>" goes. 0 with
 * target "ip:port" (and the owner's org, for a key check); -1 with e:
 * SP_NOT_FOUND (no such port, or its sandbox is gone), SP_UNAVAILABLE
 * (the sandbox is stopped, stopping or creating: a message that says
 * so), SP_PRECONDITION (its container has no address). */
int sandbox_port_resolve(struct sandbox_ctx *ctx, const char *label, char *target, size_t cap,
			 char *org, size_t org_cap, struct sp_err *e);

/* Managed volumes (sandbox/volume.c, /v1 createVolume and the others):
 * Docker named volumes (driver local, sandpit-vol-<id>) on the local
 * server, labelled with their id, organization and installation, their
 * records in Redis (store/volume.c). Owned by one organization: another
 * org's id is not found. Attached to at most one live sandbox at a time
 * (the record's holder), only at its creation; the claim of all of a
 * create's volumes is one atomic step. A holder that is no longer live
 * (its record gone, failed, past its deadline, or a create that died)
 * is taken over by the next claim or delete. */
#define SB_VOLUMES_PER_ORG 256
#define SB_VOLUME_NAME_MAX 256 /* displayName, bytes */
struct sandbox_volume {
	char id[SANDBOX_ID_LEN + 1];
	char display_name[SB_VOLUME_NAME_MAX + 1];
	char server_id[65]; /* "local" */
	char docker_name[64];
	int64_t created_at; /* ms */
	char holder[64];    /* the sandbox it is attached to, "" none (or a delete's mark) */
	int64_t size_mb;    /* its loop disk's size (disk.c); 0 = a named volume, no size */
};
struct sandbox_volume_attach {
	const char *volume; /* the id (volumes/<id> without the prefix) */
	const char *target; /* an absolute guest path */
};
/* create: a new volume (id: a caller-chosen one, an Idempotency-Key's;
 * NULL: a random one; an existing record of that id is answered as it
 * is); 429 SP_QUOTA past SB_VOLUMES_PER_ORG. get: 404 "Volume not found".
 * list: every volume of the org, oldest first (*out allocated, free it).
 * delete: 0 also when absent; SP_PRECONDITION
 * "deletion_content_lease_held: ..." while a live sandbox holds it (or a
 * container still mounts it). */
int sandbox_volume_create(struct sandbox_ctx *ctx, const char *org, const char *id,
			  const char *display_name, struct sandbox_volume *out, struct sp_err *e);
int sandbox_volume_get(struct sandbox_ctx *ctx, const char *org, const char *id,
		       struct sandbox_volume *out, struct sp_err *e);
int sandbox_volume_list(struct sandbox_ctx *ctx, const char *org, struct sandbox_volume **out,
			size_t *n, struct sp_err *e);
int sandbox_volume_delete(struct sandbox_ctx *ctx, const char *org, const char *id,
			  struct sp_err *e);

/* The streamed transfers (sandbox/transfer.c), as the sandbox's user,
 * with at most cap bytes of content in all, in bounded memory.
 * upload: next() gives the items one event at a time (a file's path and
 * mode, its data in pieces valid until the next call, its commit, the
 * end); -1 (its e) stops the transfer, the item under way dropped, and is
 * the answer. *written counts the files that replaced their paths, also
 * on failure. A refusal of the helper names the item's index.
 * download: the n paths in order: for each sink->header, data..., end, or
 * item_error (its Error); a sink call returning -1 stops (the client is
 * gone: SP_UNAVAILABLE). -1 with e: a whole-stream failure, before or
 * after items were delivered. */
#define SB_TRANSFER_TIMEOUT_MS (3600 * 1000)
enum sb_up_kind { SB_UP_FILE, SB_UP_DATA, SB_UP_COMMIT, SB_UP_END };
struct sb_up_event {
	enum sb_up_kind kind;
	const char *path; /* SB_UP_FILE: absolute, at most 4096 bytes */
	unsigned mode;	  /* SB_UP_FILE: & 0777, 0 = 0644 */
	const char *data; /* SB_UP_DATA */
	size_t len;
};
typedef int (*sb_up_next_fn)(void *arg, struct sb_up_event *ev, struct sp_err *e);
int sandbox_files_upload(struct sandbox_ctx *ctx, const char *org, const char *id, int64_t cap,
			 sb_up_next_fn next, void *arg, int64_t *written, struct sp_err *e);
struct sb_down_sink {
	int (*header)(void *arg, size_t idx, unsigned mode);
	int (*data)(void *arg, const char *p, size_t n);
	int (*end)(void *arg, size_t idx);
	int (*item_error)(void *arg, size_t idx, const struct sp_err *fe);
};
/* readFile, streamed: the helper's `cat` of a regular file of at most cap
 * bytes; begin(size) once its size is known, then data(...) with exactly
 * size bytes in pieces (a callback returning -1 stops: the client is
 * gone). -1 with e; *started says whether begin was called (the answer's
 * head is out: the caller must cut the answer, never end it as whole). */
int sandbox_files_read_stream(struct sandbox_ctx *ctx, const char *org, const char *id,
			      const char *path, int64_t cap, int (*begin)(void *arg, uint64_t size),
			      int (*data)(void *arg, const char *p, size_t n), void *arg,
			      int *started, struct sp_err *e);
int sandbox_files_download(struct sandbox_ctx *ctx, const char *org, const char *id,
			   const char *const *paths, size_t n, int64_t cap,
			   const struct sb_down_sink *sink, void *arg, struct sp_err *e);

#endif
