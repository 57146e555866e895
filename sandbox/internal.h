/*
 * Shared between the files of sandbox/ only, grouped by the file that
 * defines each function. Which file may call which is tests/layers.map's
 * order of parts (base ← host ← box ← run ← life ← work/keep), checked from
 * the object files by tests/layers.sh in make lint.
 */
#ifndef SANDPIT_SANDBOX_INTERNAL_H
#define SANDPIT_SANDBOX_INTERNAL_H

#include <json-c/json.h>

#include "../store/store.h"
#include "base/base.h"
#include "sandbox.h"

/* The record's fields (record.c, sandbox_to_kv, which stops the process
 * rather than write past a table of this size). */
#define SB_RECORD_FIELDS 33
/* The home and default workdir of a template sandbox. */
#define TEMPLATE_HOME "/home/user"
/* A status catch-up or a template-info inspect is optional: a server
 * slower than this leaves the record (the info) as it is. */
#define CATCH_UP_TIMEOUT_MS 3000

static inline int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* record.c. Fills sb from a record; -1 if the record is not a sandbox. */
int sandbox_from_rec(const struct store_rec *r, struct sandbox *sb);
/* Writes sb as name/value pairs into kv (2 * SB_RECORD_FIELDS slots), using
 * nums (SB_RECORD_FIELDS slots) for numbers. Returns the pair count * 2. */
int sandbox_to_kv(const struct sandbox *sb, char nums[][32], const char **kv);

/* firewall.c: the local server's deny rules. The bridge interface name of
 * network mode ("isolated"/"internet"): <prefix>-iso / <prefix>-net, or
 * sp<8 hex of the prefix>-iso/-net for a prefix over 11 bytes. */
void firewall_bridge_name(const struct config *cfg, const char *mode, char *out, size_t cap);
/* <PREFIX>-INPUT and <PREFIX>-FORWARD. */
void firewall_chain_names(const struct config *cfg, char *in, char *fwd, size_t cap);
/* Installs, unless present, the rules that drop what comes in on bridges
 * to the host itself and to 169.254.0.0/16 and deny_cidrs. SP_UNAVAILABLE
 * when it cannot (not root, no iptables, iptables failed). */
int firewall_apply(const struct config *cfg, const char *const bridges[], int n, struct sp_err *e);

/* owner.c (the owner's numbers, sandbox_owner: base/base.h). Resolves the
 * image's named user ("app" or "app:group") to numbers through the created
 * container's /etc/passwd into sb->owner ("" when it cannot). */
void sandbox_resolve_owner(struct sandbox_ctx *ctx, struct sandbox *sb);
/* Makes the workdir the owner's in the created (not started) container
 * (img: its image's inspect). */
int sandbox_seed_files(struct sandbox_ctx *ctx, const struct sandbox *sb, json_object *img,
		       struct sp_err *e);

/* prepare.c: the current server made ready. docker_ready: Docker
 * negotiated (503 when the server cannot be reached). ensure_networks:
 * both sandbox networks made, and on the local server their deny rules.
 * prepare_server: both. network_missing: after a Docker call failed with
 * e: when e says a network is missing, marks the current server's
 * networks as to be made again and returns 1. */
int sandbox_docker_ready(struct sandbox_ctx *ctx, struct sp_err *e);
int sandbox_ensure_networks(struct sandbox_ctx *ctx, struct sp_err *e);
int sandbox_prepare_server(struct sandbox_ctx *ctx, struct sp_err *e);
int sandbox_network_missing(struct sandbox_ctx *ctx, const struct sp_err *e);

/* disk.c. plan: how the current server limits sb's disk (sb->disk.how),
 * sb->disk_mb from rq_mb (<= 0: the default), 400 for a diskMb it cannot
 * give, and the host floor (503 naming disk_reserve_mb/_inodes) on the
 * local server. prepare: makes the loop disk (file, mkfs, loop device);
 * on failure nothing is left. hostconfig: its Mounts, ReadonlyRootfs,
 * Tmpfs /tmp and /var/tmp, or StorageOpt, into a create's HostConfig (after
 * its Tmpfs). owner: gives the disk's root folder to sb's owner once it is
 * resolved (before the container starts). started: after the container
 * started, hands the disk to the kernel (file unlinked, device closed).
 * abort: undoes prepare (device detached, file removed); idempotent. */
int sandbox_disk_plan(struct sandbox_ctx *ctx, struct sandbox *sb, int64_t rq_mb, struct sp_err *e);
int sandbox_disk_prepare(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e);
void sandbox_disk_hostconfig(const struct config *cfg, const struct sandbox *sb, json_object *hc);
int sandbox_disk_owner(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e);
void sandbox_disk_started(struct sandbox_ctx *ctx, struct sandbox *sb);
void sandbox_disk_abort(struct sandbox_ctx *ctx, struct sandbox *sb);
/* A managed volume's loop disk (disk.c). volume_plan: *size_mb the size a
 * new volume gets on the local server (volume_size_mb), 0 where loop disks
 * are not possible (a named volume, no size); -1 (503, as a create's) when
 * the floor or disk_overcommit_pct refuses it. volume_make: its file made
 * and formatted, tagged (SB_VOLUME_DISK_XATTR) with the installation and
 * org for the sweep (volume.c). volume_remove: its file removed once no loop device holds
 * it (SP_PRECONDITION deletion_content_lease_held after 5 s). volume_detach:
 * its loop device detached (at its unmount when mounted). mount: the Mounts
 * entry of a loop device at target (the workdir's disk or a volume's). */
#define SB_VOLUME_DISK_DIR "volumes"	    /* below disk_dir */
#define SB_VOLUME_DISK_XATTR "user.sandpit" /* "<install id> <org>" */
int sandbox_disk_volume_plan(struct sandbox_ctx *ctx, int64_t *size_mb, struct sp_err *e);
int sandbox_disk_volume_make(struct sandbox_ctx *ctx, const char *vid, const char *org,
			     int64_t size_mb, struct sp_err *e);
int sandbox_disk_volume_remove(struct sandbox_ctx *ctx, const char *vid, struct sp_err *e);
void sandbox_disk_volume_detach(const struct config *cfg, const char *vid);
json_object *sandbox_disk_mount(const struct config *cfg, const struct sandbox *sb, const char *dev,
				const char *target);
/* The host floor before a snapshot of sb (its server must be ctx's): on
 * the local server, -1 (SP_QUOTA, naming disk_reserve_mb) when Docker's
 * root dir has less free than the floor plus the workdir's used bytes
 * (wd_src: the host folder of the workdir's loop disk, "" when the
 * workdir is no volume: then the floor alone). *limit (may be NULL) gets
 * the most bytes the capture's copy of the workdir may bring: half the
 * free space above the floor (a commit holds its layer twice for a
 * moment); 0 (no bound) on a server sandpit cannot see. */
int sandbox_disk_snapshot_room(struct sandbox_ctx *ctx, const char *wd_src, int64_t *limit,
			       struct sp_err *e);
/* Names diskMb (400) when Docker could not create the container because
 * the image's content at the workdir does not fit in the disk. */
void sandbox_disk_refused(const struct sandbox *sb, struct sp_err *e);

/* netcheck.c: runs the probe on the current server (ctx->dk); docker_port
 * ("" = none) is tried besides probe_ports. status: pass, fail or error;
 * detail: what was reached, or the error. -1 on error. */
int sandbox_net_probe(struct sandbox_ctx *ctx, const char *docker_port, char *status, size_t scap,
		      char *detail, size_t dcap);

/* spec.c. The keeper's "uid:gid" for ExecCreate's and the container's
 * User. */
void sandbox_keeper_user(const struct config *cfg, char *out, size_t cap);
/* The sandbox's CPU, memory and pids limits as Docker fields into o (the
 * HostConfig of a create, the body of an update); pids as the host counts
 * them for the sandbox's runtime. */
void sandbox_limits_json(const struct config *cfg, const struct sandbox *sb, json_object *o);
/* 0 when the sandbox's runtime can run on the current server; else -1 with
 * a 400 naming `runtime` (or why the daemon could not be asked). */
int sandbox_runtime_ok(struct sandbox_ctx *ctx, const struct sandbox *sb, struct sp_err *e);
/* Appends a .env body's KEY=value lines to env (Docker's "K=V" list). */
int sandbox_env_lines(const char *s, size_t len, json_object *env, struct sp_err *e);
/* Appends HOME=home and template t's env (NULL: none) to env. */
void sandbox_template_env(const struct template_conf *t, const char *home, json_object *env);
/* sb's managed volumes (sb->volumes) into a create's HostConfig Mounts:
 * read-write, never filled from the image (NoCopy); a volume with a loop
 * disk attached for this create (sb->disk.vols) as its device. */
void sandbox_volumes_mounts(const struct config *cfg, const struct sandbox *sb, json_object *hc);
/* When sb's main process aims to end (sleepto.sh aims 250 ms earlier
 * still): deadlineAt, less DEADLINE_GVISOR_LEAD_MS under gVisor, whose
 * teardown of the sandbox kernel takes up to about 0.5 s more than runc's
 * on a busy host, so that Docker sees the container end by deadlineAt. */
#define DEADLINE_GVISOR_LEAD_MS 500
int64_t sandbox_deadline_aim(const struct sandbox *sb);
/* The body of Docker's container create for sb, with env (taken as a new
 * reference); a new object. */
json_object *sandbox_container_spec(const struct sandbox_ctx *ctx, const struct sandbox *sb,
				    json_object *env);

/* (struct sandbox_server, a registered Docker server: sandbox.h) */
/* servers.c. Whether placement may use s: its network check passed, or
 * the operator overrode it. */
int server_usable(const struct sandbox_server *s);
int server_from_json(const char *text, struct sandbox_server *s, struct sp_err *e);
int server_allows(const struct sandbox_server *s, const char *org);
/* Makes server id ("" or "local" = the local server) the current one:
 * ctx->dk and ctx->cur. -1 (ctx->dk NULL) when it is unknown. */
int sandbox_select_server(struct sandbox_ctx *ctx, const char *id, struct sp_err *e);
void sandbox_servers_cleanup(struct sandbox_ctx *ctx);
/* Sets dk's stuck-server guard from the configuration (RELIABILITY L2). */
void sandbox_docker_guard(const struct config *cfg, struct docker_client *dk);
/* Chooses the server of a new sandbox (requested, else the pool's least
 * loaded, else local), checks the org may use it, and reserves the
 * sandbox's share there. Sets sb->server_id ("" = local). */
int sandbox_place(struct sandbox_ctx *ctx, const char *org, struct sandbox *sb,
		  const char *requested, struct sp_err *e);

/* state.c. The record's TTL in Redis: its time left plus retention_s. */
int64_t sandbox_record_ttl(const struct config *cfg, const struct sandbox *sb);
/* Writes the whole record (with the sealed env when given). */
int sandbox_save(struct sandbox_ctx *ctx, const struct sandbox *sb, const char *sealed_env,
		 struct sp_err *e);
/* Rewrites the record's fields if its status is still `expect`. Returns 0
 * when applied, 1 when someone else changed the status first. */
int sandbox_save_if(struct sandbox_ctx *ctx, const struct sandbox *sb, enum sandbox_status expect,
		    struct sp_err *e);
/* A record to killed (at now) or error, saved if nobody changed it
 * meanwhile; its quota share released when gone says Docker no longer runs
 * its container. */
void sandbox_transition(struct sandbox_ctx *ctx, struct sandbox *sb, enum sandbox_status to,
			const char *why, int gone);
/* discard.c: the stop (from stopping) and the start of a sandbox created
 * in stop_mode discard: docker stop / docker start, the record to match. */
int sandbox_discard_halt(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e);
int sandbox_discard_start(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e);
/* When a creating record reads error. */
int64_t sandbox_creating_end(const struct config *cfg, const struct sandbox *sb);
/* Status catch-up by time (creation past its time, expiry or deadline
 * passed): ends the containers first. 1 when the record changed. */
int sandbox_catch_up_time(struct sandbox_ctx *ctx, struct sandbox *sb);
/* Reads a record, no catch-up, and makes its server the current one (when
 * that cannot be reached, ctx->dk is NULL and ctx->server_err says why). */
int sandbox_load(struct sandbox_ctx *ctx, const char *org, const char *id, struct sandbox *sb,
		 struct sp_err *e);
/* run/runner.c: maps Docker's refusal to act on a sandbox's container (e:
 * no such container, or a 409) to its state (run.h, run_refusal_of): 503
 * while a capture holds it paused or while it still runs, 412 "Sandbox is
 * stopped" when a stop paused it, 412 "Sandbox is killed" only when it is
 * gone; any other error is left as it is. Returns -1. */
int sandbox_container_gone(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e);
/* 1 when Docker says sb's container is paused (a stop came in meanwhile):
 * a running record is made stopped. 0 otherwise, or when Docker cannot
 * say. */
int sandbox_container_paused(struct sandbox_ctx *ctx, struct sandbox *sb);
/* Whether sb's container runs (a paused one does too): 1 yes, 0 no (or it
 * is gone), -1 Docker could not tell. */
int sandbox_container_running(struct sandbox_ctx *ctx, struct sandbox *sb);

/* box/image_info.c: what the local Docker has of a template image, for
 * sandbox_templates: present, and its version ("" unknown), as of at (mono
 * ms; 0 never). Per worker; sandpitd's only, not for threads. */
struct sandbox_image_info {
	char image[256];
	char version[128];
	int present;
	int64_t at;
};
/* A local inspect answer of image (img NULL: the image is not there). */
void sandbox_template_info_note(const char *image, json_object *img);
/* image's entry, a fresh one (at 0) when it has none. */
struct sandbox_image_info *sandbox_template_info_slot(const char *image);

/* image.c. The one gate of every create's image (both faces, a
 * restore, the warm pool): sb's reference checked against the rules
 * (sandbox_image_admit) unless it is sb's template's, inspected on the
 * current server into *img (new), pulled first when it is missing and a
 * pull is allowed (*pulled = 1; the record's creatingUntil moved for the
 * pull), and its labels checked (no other organization's or
 * installation's snapshot). 400 naming field when it cannot be had. */
int sandbox_prepare_image(struct sandbox_ctx *ctx, struct sandbox *sb, const char *field,
			  json_object **img, struct sp_err *e, int *pulled);
/* The rules on a reference's name alone, before any effect: a template's
 * image, an allowed one (image_allow, per organization where scoped), or
 * org's own snapshot (its record) or registered image; never an image ID,
 * a prefix of one or a sha256: ID. 400 naming field otherwise. Asks the
 * store, never Docker. */
int sandbox_image_admit(struct sandbox_ctx *ctx, const char *org, const char *ref,
			const char *field, struct sp_err *e);
/* Whether sb's created container (of image img) lacks sh ("sh"),
 * into missing ("" when none). */
int sandbox_check_tools(struct sandbox_ctx *ctx, const struct sandbox *sb, json_object *img,
			char *missing, size_t cap, struct sp_err *e);

/* expiry.c: drops a deferred expiry write of sandbox id (it is being
 * killed or removed). */
void sandbox_drop_pending_expiry(struct sandbox_ctx *ctx, const char *id);
/* Writes the container's expiry now when it does not cover the record's
 * (a running sandbox; a failure is logged). */
void sandbox_sync_expiry(struct sandbox_ctx *ctx, struct sandbox *sb);
/* The container's expiry leads the record's by this much when sandpit
 * moves it, so a burst of short operations costs one write. */
#define SB_EXPIRY_LEAD_MS 3000
/* Writes at_ms (rounded up to the second) as the container's expiry, up or
 * down: its deadline before a stop (the watcher thawed by a start must not
 * find a stale expiry), the re-armed expiry after a start. */
int sandbox_arm_expiry(struct sandbox_ctx *ctx, struct sandbox *sb, int64_t at_ms,
		       struct sp_err *e);

/* pause.c: a running onTimeout-stop sandbox found past its expiry (a read,
 * the reaper): stopped, unless a command of it runs (then its expiry
 * moves). 1 when it was stopped. */
int sandbox_stop_expired(struct sandbox_ctx *ctx, struct sandbox *sb);
/* pause.c: waits (at least STOP_SETTLE_MIN_MS, at most STOP_SETTLE_MAX_MS)
 * until no exec of sb's container is half made: created or being started.
 * Call it before every pause: runc freezing a container under an exec
 * being set up hangs that exec, and Docker's lock of the container with it
 * (its unpause, and every image delete, which looks at each container,
 * wait on it for ever). */
int sandbox_settle_execs(struct sandbox_ctx *ctx, const struct sandbox *sb, struct sp_err *e);

/* list.c: catches every record of org up (list pages read and dropped). */
void sandbox_catch_up_org(struct sandbox_ctx *ctx, const char *org);

/* A warm container a create claimed, until the create is done with it:
 * its pool's name and its entry there (member "" when there is none). */
struct sandbox_pool_claim {
	char pool[128];
	char member[160];
	int64_t expires_at; /* its pool expiry (ms); 0 unknown */
	int64_t margin_ms;  /* the pool's: never handed out closer to it */
};

/* pool.c: claims a warm container for rq into sb (sets id, container id,
 * pooled) and *c if one fits and is ready: 1 claimed, 0 none. activate
 * gives it sb's limits, then arms its lifetimes: at once, or with
 * defer_expiry right after the answer (sandbox_pool_arm_pending).
 * unclaim, for a create that failed before activate: the container goes
 * back to its pool when reusable (no record was written under its id) and
 * far enough from its pool expiry, else it is removed now; *c is then
 * empty. */
int sandbox_pool_claim(struct sandbox_ctx *ctx, const struct sandbox_create_req *rq,
		       struct sandbox *sb, struct sandbox_pool_claim *c);
int sandbox_pool_activate(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e);
void sandbox_pool_unclaim(struct sandbox_ctx *ctx, struct sandbox_pool_claim *c, int reusable);

/* exec.c. under_proc: whether path, read lexically, is /proc or under it.
 * pooled_env: a warm sandbox's envVars appended to env (an array of
 * "K=V"), decrypted just for one command. */
int sandbox_under_proc(const char *path);
int sandbox_pooled_env(struct sandbox_ctx *ctx, const struct sandbox *sb, json_object *env,
		       struct sp_err *e);

/* helper.c: the helper inside every sandbox. volume: its volume's name
 * (sandpit-helper-<16 hex of its hash>; out holds 64). ensure: that
 * volume made and filled on the current server, once (image: a local
 * image to make the marker container from). mount: the read-only mount of
 * it added to a container's HostConfig. run: argv (NULL-terminated) run
 * as `sandpit-helper ARGV` in sb as its user, env (an array, not
 * consumed; NULL = none) and cwd (NULL = /); *code its exit status, out
 * its stdout (over out's cap the read stops: SP_UNAVAILABLE), err (may be
 * NULL) the start of its stderr. path: the helper's path in sb (the
 * execute-only copy, or the readable one under gVisor). json: one JSON
 * object out of a helper's answer of len bytes at data, parsed only when
 * it holds at most max_tokens structural tokens (each '{', '[', ',' and
 * ':' outside strings: every value json-c would allocate is one of them or
 * the first), nests at most SANDBOX_HELPER_JSON_DEPTH deep and has no
 * string over SANDBOX_HELPER_JSON_STRING bytes, so that parsing costs at
 * most about max_tokens KiB besides the input (json-c takes ~800 bytes for
 * `{}`); anything else is SP_UNAVAILABLE naming the sandbox and what (the
 * helper's operation). */
#define SANDBOX_HELPER_DIR \
	"/.sandpit-helper" /* not under the /.sandpit tmpfs: gVisor refuses that */
#define SANDBOX_HELPER_NAME "sandpit-helper"		/* mode 0111 */
#define SANDBOX_HELPER_NAME_READABLE "sandpit-helper-r" /* mode 0555: gVisor, the keeper */
#define SANDBOX_HELPER_TIMEOUT_MS 30000
#define SANDBOX_HELPER_JSON_DEPTH 8
#define SANDBOX_HELPER_JSON_STRING (64 * 1024)
void sandbox_helper_volume(char *out, size_t cap);
const char *sandbox_helper_path(const struct sandbox *sb);
int sandbox_helper_json(const struct sandbox *sb, const char *what, const char *data, size_t len,
			size_t max_tokens, json_object **out, struct sp_err *e);
int sandbox_helper_ensure(struct sandbox_ctx *ctx, const char *image, struct sp_err *e);
void sandbox_helper_mount(json_object *hc);
int sandbox_helper_run(struct sandbox_ctx *ctx, struct sandbox *sb, const char *const *argv,
		       json_object *env, const char *cwd, struct buf *out, char *err,
		       size_t err_cap, int *code, struct sp_err *e);
/* The same with in_len bytes at in (not NULL) on the helper's stdin, which
 * must read exactly that many (it is never closed). */
int sandbox_helper_run_input(struct sandbox_ctx *ctx, struct sandbox *sb, const char *const *argv,
			     json_object *env, const char *cwd, const void *in, size_t in_len,
			     struct buf *out, char *err, size_t err_cap, int *code,
			     struct sp_err *e);
/* The same, streamed: stdin pulled from in_fn (NULL = none; see
 * docker_input_fn), stdout and stderr handed to on_data as they come
 * (return -1 to stop), for at most timeout_ms. *code is the exit status
 * (-1 when the stream was stopped while it ran). */
int sandbox_helper_run_stream(struct sandbox_ctx *ctx, struct sandbox *sb, const char *const *argv,
			      long (*in_fn)(void *arg, char *buf, size_t cap), void *in_arg,
			      int (*on_data)(void *arg, int stream, const char *data, size_t len),
			      void *arg, int64_t timeout_ms, int *code, struct sp_err *e);

/* fastpath.c: commands through the helper's serving mode over the
 * sandbox's bridge address, skipping docker exec (the local server, runc only;
 * off with fast_path = no). possible: whether sb could use it at all.
 * start: starts the serving helper in sb (one docker exec as its user);
 * 0 when one serves. exec: runs cmd (argv, env, cwd, as the sandbox's
 * user; run/run.h) through it: 0 not served (nothing ran: use
 * docker exec), 1 served: res->code the exit status (-1 when none came:
 * timed out, stopped by the caller, or the helper lost mid-command, which
 * the caller then treats as a still-running command). */
#define SANDBOX_FAST_PORT 47011
struct sandbox_fast_io {
	const void *in; /* stdin, NULL = none (/dev/null) */
	size_t in_len;
	int64_t timeout_ms;
	int (*on_data)(void *arg, int stream, const char *data, size_t len);
	int (*should_stop)(void *arg); /* may be NULL */
	void *arg;
	/* as the watcher does for a docker exec's process: while the command
	 * runs, the container's expiry is kept ahead of it (fastpath.c) */
	int keep_alive;
};
struct sandbox_fast_result {
	int code, timed_out, stopped, lost;
	int pid;	/* the command's main process in the container, 0 = unknown */
	uint64_t start; /* its start time (field 22 of its stat) */
};
int sandbox_fast_possible(const struct sandbox_ctx *ctx, const struct sandbox *sb);
int sandbox_fast_start(struct sandbox_ctx *ctx, struct sandbox *sb);
/* Learns sb's address from Docker now (a warm container as it is made)
 * and shares it, so no worker's first command waits on Docker for it. */
void sandbox_fast_prime(struct sandbox_ctx *ctx, const struct sandbox *sb);
struct sb_cmd; /* run/run.h */
int sandbox_fast_exec(struct sandbox_ctx *ctx, struct sandbox *sb, const struct sb_cmd *cmd,
		      const struct sandbox_fast_io *io, struct sandbox_fast_result *res);

/* files_v1.c: the document's error of a helper file command's refusal
 * (its exit status code, err its stderr line). Returns -1. */
int sandbox_files_code_err(const char *sid, int code, const char *err, struct sp_err *e);

/* volume.c. fill: checks a create's attachments (targets
 * absolute, normalized, at most SB_VOLUME_TARGET_MAX bytes, never at or
 * below /proc, /sys, /dev, sandpit's own /.sandpit and /.sandpit-helper or
 * a system folder (/bin, /sbin, /usr, /lib*, /etc, /boot, /root, /var,
 * /opt, /run, /nix, /tmp), only below the workdir or at or below one of
 * cfg's volume_dirs, no two overlapping, no volume twice) and writes them
 * into sb->volumes (400 naming the attachment's field). path_check: a
 * target that holds a folder of the image's PATH (path, ':'-separated),
 * or lies in one, is a 400 naming it.
 * claim: makes sb (its record written "creating" already) the holder of
 * all of them at once, then checks each is on sb's server and that Docker
 * has it (409 failedPrecondition naming it otherwise). own: gives each
 * volume's root to sb's owner (when not so already) before the container
 * starts, through a never-started helper container. release: frees what
 * sb holds (safe when it holds nothing). The Docker volume of a managed
 * volume is SB_VOLUME_DOCKER_PREFIX + its id. */
#define SB_VOLUME_DOCKER_PREFIX "sandpit-vol-"
int sandbox_volumes_fill(const struct config *cfg, const struct sandbox_create_req *rq,
			 struct sandbox *sb, struct sp_err *e);
/* volume_at: the id of sb's volume attached at target (0), -1 when none. */
int sandbox_volume_at(const struct sandbox *sb, const char *target, char *id, size_t cap);
int sandbox_volumes_path_check(const struct sandbox *sb, const char *path, struct sp_err *e);
/* image.c: the image's PATH (its Config.Env's, else Docker's default);
 * valid until the thread's next call. */
const char *sandbox_image_path(json_object *img);
int sandbox_volumes_claim(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e);
int sandbox_volumes_own(struct sandbox_ctx *ctx, const struct sandbox *sb, struct sp_err *e);
void sandbox_volumes_release(struct sandbox_ctx *ctx, const struct sandbox *sb);
/* The reaper's part (local server): removes this installation's Docker
 * volumes of managed volumes that no record names, once they are older
 * than a createVolume can take (create_timeout_s plus twice
 * docker_timeout_s): a worker killed between Docker's create and the
 * record's write. One in use is left. */
void sandbox_volumes_sweep(struct sandbox_ctx *ctx);

#endif
