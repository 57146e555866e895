/*
 * Docker Engine API client over libcurl. One client per worker, created after
 * fork, keeps its connection alive across requests. Threads: every
 * function is safe from any thread on a client no other thread uses at the
 * time (sandpit-stream: one per job's sandbox_ctx); clients share only the
 * stuck-server guard (guard.c, atomics) and the metrics table (atomics),
 * and need curl_global_init done once before the first thread. Knows the Engine API and
 * nothing of sandbox rules. Every id, name and path it puts into a URL is
 * validated and percent-escaped here, and every request is checked against
 * an allow-list of method + path templates before it is sent (RELIABILITY
 * H6). Errors come back in a struct sp_err:
 *   unreachable / timed out -> SP_UNAVAILABLE ("Docker is unreachable: ...")
 *   400 -> SP_BAD_REQUEST, 404 -> SP_NOT_FOUND, 409 -> SP_CONFLICT,
 *   304 on stop/start -> success,
 *   anything else -> SP_INTERNAL with Docker's message.
 */
#ifndef SANDPIT_DOCKER_H
#define SANDPIT_DOCKER_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "../common/buf.h"
#include "../common/err.h"

struct docker_client;

struct docker_version {
	char api_version[16];  /* negotiated, e.g. "1.41" */
	char engine[64];       /* Engine version */
	char runc[64];	       /* runc Version, "" if not reported */
	char runc_commit[128]; /* runc GitCommit (distro build id) */
	int answered;	       /* /version answered: a refusal, not an outage */
};

/* Where a Docker daemon is and how to reach it.
 *   unix:///path               the local socket
 *   tcp://host:port            with tls_cert, tls_key and tls_ca: TLS with a
 *                              client certificate (all three or none)
 *   ssh://user@host[:port]     the Engine API through `docker system
 *                              dial-stdio` on the far side; ssh_key and
 *                              ssh_known_hosts are files (may be NULL)
 * pooled: keep connections open across requests (and, over ssh, one
 * ControlMaster connection under ssh_control_dir); 0 opens a new connection
 * (and a new ssh session) for every request — for comparisons only.
 * connect_timeout_ms bounds reaching the daemon (0 = 5000). */
struct docker_endpoint {
	const char *url;
	const char *tls_cert, *tls_key, *tls_ca;
	const char *ssh_key, *ssh_known_hosts, *ssh_control_dir;
	int pooled;
	int connect_timeout_ms;
};

/* Creates a client for host ("unix:///var/run/docker.sock"). timeout_s
 * bounds every request except pulls and exec streams. Allocates; free with
 * docker_client_free. Does no I/O. */
struct docker_client *docker_client_create(const char *host, int timeout_s, struct sp_err *e);
/* Like docker_client_create for any endpoint. Allocates; does no I/O. */
struct docker_client *docker_client_create_ex(const struct docker_endpoint *ep, int timeout_s,
					      struct sp_err *e);
/* Checks an endpoint's URL and files without connecting; -1 with a message
 * naming what is wrong. */
int docker_endpoint_check(const struct docker_endpoint *ep, struct sp_err *e);
void docker_client_free(struct docker_client *c);
/* Names the daemon in "unreachable" messages ("Server x is unavailable"). */
void docker_client_set_label(struct docker_client *c, const char *label);
/* RELIABILITY L2: maps the per-server guard slots into memory shared by
 * every process forked after it (call once, before forking the workers);
 * without it each process guards alone. -1 when mmap fails. */
int docker_shared_init(void);
/* Guards c's calls: at most inflight_max (1..32; 0 = no guard) calls of
 * all workers wait for the server's first answer byte at once; the others
 * wait for a place while the server keeps answering, and fail at once
 * (SP_UNAVAILABLE, retryable) once it has been silent for 2.5 s with every
 * place taken, or for stuck_ms with any call waiting. */
void docker_client_set_guard(struct docker_client *c, int inflight_max, int stuck_ms);
/* 1 when c's server has calls waiting that it has not answered for a
 * second: optional calls (status catch-up) should not be made. */
int docker_client_suspect(struct docker_client *c);
/* Bounds c's next call (only that one) to ms instead of timeout_s: for
 * optional calls, such as status catch-up, that must not hold a worker. */
void docker_client_next_timeout(struct docker_client *c, int ms);

/* GET /version; sets the API version used in later paths (the daemon's,
 * capped at 1.43). Refuses an API below 1.41 and, unless allow_old_runc, a
 * runc older than 1.1.12 that is not a known patched distro build
 * (CVE-2024-21626), with a message saying what to do. */
int docker_negotiate(struct docker_client *c, int allow_old_runc, struct docker_version *v,
		     struct sp_err *e);

/* GET /info: writes the names of the daemon's registered runtimes
 * (Runtimes), each followed by '\n', into out (cap bytes, NUL-terminated;
 * names that do not fit are left out). */
int docker_runtimes(struct docker_client *c, char *out, size_t cap, struct sp_err *e);

/* GET /info: the storage driver ("overlay2"), its backing filesystem
 * (DriverStatus "Backing Filesystem": "extfs", "xfs"; "" when the driver
 * names none) and DockerRootDir, for the disk limits (sandbox/disk.c). */
struct docker_storage {
	char driver[32];
	char backing_fs[32];
	char root_dir[1024];
};
int docker_storage(struct docker_client *c, struct docker_storage *out, struct sp_err *e);

/* Images. inspect: *out is a new json object (caller puts it). pull: POST
 * /images/create, reads the progress stream to the end, fails with the
 * stream's error message; bounded by timeout_s. */
int docker_image_inspect(struct docker_client *c, const char *image, json_object **out,
			 struct sp_err *e);
int docker_image_pull(struct docker_client *c, const char *image, int timeout_s, struct sp_err *e);

/* commit: POST /commit of container (never paused by Docker: the caller
 * pauses), tagged repo:tag when both are given (else untagged), with
 * config (the image's Config; Docker fills what it leaves empty from the
 * container's, Labels excepted; not consumed; may be NULL); id_out gets the
 * image id ("sha256:..."). remove: DELETE /images/{image} (not forced): a
 * container using it is SP_CONFLICT, a missing one SP_NOT_FOUND. */
int docker_image_commit(struct docker_client *c, const char *container, const char *repo,
			const char *tag, json_object *config, char id_out[80], struct sp_err *e);
int docker_image_remove(struct docker_client *c, const char *image, struct sp_err *e);
/* Registries. auth is an X-Registry-Auth value (base64url JSON; a secret,
 * never logged) or NULL. tag: POST /images/{image}/tag as repo:tag. push:
 * POST /images/{repo}/push?tag=, reads the progress stream to the end
 * within timeout_s; an "error" inside it (Docker answers 200 and reports
 * the registry's refusal in the stream) is SP_INTERNAL with its text;
 * digest_out gets the manifest digest the registry took. distribution:
 * GET /distribution/{ref}/json, the registry's manifest digest and media
 * type of ref (asked through the daemon, at most 10 s, outside the stuck-
 * server guard: its silence is the registry's); an unknown one is
 * SP_NOT_FOUND when Docker says 404, else Docker's mapping (a registry
 * that refuses: SP_INTERNAL with Docker's text). */
int docker_image_tag(struct docker_client *c, const char *image, const char *repo, const char *tag,
		     struct sp_err *e);
int docker_image_push(struct docker_client *c, const char *repo, const char *tag, const char *auth,
		      int timeout_s, char digest_out[80], struct sp_err *e);
int docker_distribution_inspect(struct docker_client *c, const char *ref, const char *auth,
				char digest_out[80], char *media_type, size_t mcap,
				struct sp_err *e);
/* Containers. create: body is the ContainerConfig (+HostConfig,
 * NetworkingConfig) object, not consumed; name may be NULL; id_out gets the
 * full id (65 bytes). stop: POST stop?t=grace (a stopped or missing
 * container is success). inspect/list: *out is a new json object. list
 * filters by one label "key=value" and includes stopped containers when all. */
int docker_container_create(struct docker_client *c, const char *name, json_object *body,
			    char id_out[65], struct sp_err *e);
int docker_container_start(struct docker_client *c, const char *id, struct sp_err *e);
int docker_container_stop(struct docker_client *c, const char *id, int grace_s, struct sp_err *e);
int docker_container_kill(struct docker_client *c, const char *id, const char *signal,
			  struct sp_err *e);
/* pause: freezes every process of a running container (its cgroup's
 * freezer; under gVisor the sandbox); unpause thaws them. A pause of a
 * paused or stopped container, and an unpause of one that is not paused,
 * are SP_CONFLICT; a missing one SP_NOT_FOUND. */
int docker_container_pause(struct docker_client *c, const char *id, struct sp_err *e);
int docker_container_unpause(struct docker_client *c, const char *id, struct sp_err *e);
int docker_container_remove(struct docker_client *c, const char *id, int force, struct sp_err *e);
int docker_container_inspect(struct docker_client *c, const char *id, json_object **out,
			     struct sp_err *e);
/* POST /containers/{id}/update: body holds resources (NanoCpus, Memory,
 * MemorySwap, PidsLimit); not consumed. */
int docker_container_update(struct docker_client *c, const char *id, json_object *body,
			    struct sp_err *e);
int docker_container_list(struct docker_client *c, const char *label, int all, json_object **out,
			  struct sp_err *e);

/* Archives. put: PUT /containers/{id}/archive?path=dir with a tar body
 * (noOverwriteDirNonDir=true). get: GET archive of path into out, failing
 * with SP_TOO_LARGE once out's cap is crossed (the transfer is aborted, not
 * buffered whole). stat: HEAD archive; fills st from
 * X-Docker-Container-Path-Stat; a missing path is SP_NOT_FOUND. */
struct docker_stat {
	char name[256];
	int64_t size;
	uint32_t mode; /* Go os.FileMode bits as Docker reports them */
	char link_target[4096];
};
int docker_archive_put(struct docker_client *c, const char *id, const char *dir, const void *tar,
		       size_t len, struct sp_err *e);
int docker_archive_get(struct docker_client *c, const char *id, const char *path, struct buf *out,
		       struct sp_err *e);
int docker_archive_stat(struct docker_client *c, const char *id, const char *path,
			struct docker_stat *st, struct sp_err *e);
/* GET archive of src_path in src_id piped into PUT archive at dst_dir in
 * dst_id (noOverwriteDirNonDir=true), through a fixed buffer (4 MiB):
 * never more of the tar held, whatever its size. No total timeout but
 * total_ms (0: none); fails SP_UNAVAILABLE once no byte moved for the
 * client's timeout, SP_TOO_LARGE once the tar passed limit bytes (0: no
 * limit; Docker keeps what it extracted in dst_id, the caller removes it).
 * Errors map as get's (source) and put's (target). */
int docker_archive_copy(struct docker_client *c, const char *src_id, const char *src_path,
			const char *dst_id, const char *dst_dir, int64_t total_ms, int64_t limit,
			struct sp_err *e);
/* Owner, permission bits and tar type ('5' directory, '2' symlink, ...) of
 * path itself, from the first header of its archive; the transfer stops
 * there, whatever lies below. A header it cannot read (a PAX one) gives
 * type 0. A missing path is SP_NOT_FOUND. */
struct docker_owner {
	unsigned uid, gid, mode;
	char type;
};
int docker_archive_owner(struct docker_client *c, const char *id, const char *path,
			 struct docker_owner *out, struct sp_err *e);

/* Builds an uncompressed tar (libarchive) in out. Entries are written in
 * order; a directory entry has data NULL; only a directory's name may end
 * in '/'. */
struct docker_tar_entry {
	const char *path; /* relative, no leading '/' */
	int is_dir;
	unsigned mode; /* permission bits only */
	unsigned uid, gid;
	const void *data;
	size_t len;
	int64_t mtime; /* seconds */
};
int docker_tar_build(const struct docker_tar_entry *ents, size_t n, struct buf *out,
		     struct sp_err *e);
/* Appends the content of the first regular file in a tar to out (capped by
 * out's max: SP_TOO_LARGE); SP_NOT_FOUND when the tar holds none. */
int docker_tar_first_file(const void *tar, size_t len, struct buf *out, struct sp_err *e);

/* Networks. ensure: makes sure a bridge network `name` exists with
 * com.docker.network.bridge.enable_icc=false (and Internal when internal);
 * an existing one without those options is removed and recreated when no
 * container is attached, else kept with a warning. */
int docker_network_ensure(struct docker_client *c, const char *name, int internal,
			  const char *label, struct sp_err *e);
/* The same; bridge (NULL = Docker's choice) is the host interface name a
 * network it creates is given (com.docker.network.bridge.name, at most 15
 * bytes), and out_bridge (NULL = not wanted) receives the interface name of
 * the network that settled, whoever made it. */
int docker_network_ensure_ex(struct docker_client *c, const char *name, int internal,
			     const char *label, const char *bridge, char *out_bridge, size_t cap,
			     struct sp_err *e);
int docker_network_inspect(struct docker_client *c, const char *name, json_object **out,
			   struct sp_err *e);

/* Volumes (named, driver local). create: POST /volumes/create with labels
 * (not consumed; may be NULL); an existing volume of that name is
 * success (Docker answers it). inspect: *out new; SP_NOT_FOUND when
 * missing. remove: never forced; in use is SP_CONFLICT, missing
 * SP_NOT_FOUND. */
int docker_volume_create(struct docker_client *c, const char *name, json_object *labels,
			 struct sp_err *e);
int docker_volume_inspect(struct docker_client *c, const char *name, json_object **out,
			  struct sp_err *e);
int docker_volume_remove(struct docker_client *c, const char *name, struct sp_err *e);
/* GET /volumes filtered by one label "key=value": *out a new array of
 * Docker's volume objects (Name, Labels, CreatedAt, ...). */
int docker_volume_list(struct docker_client *c, const char *label, json_object **out,
		       struct sp_err *e);
/* GET /containers/json?all=1 filtered to the containers that mount volume
 * name: *out a new array. */
int docker_volume_users(struct docker_client *c, const char *name, json_object **out,
			struct sp_err *e);

/* Exec. create: body is ExecConfig (AttachStdout/Err, Env, Cmd, WorkingDir,
 * User is never taken from a caller). start: runs attached, demultiplexes
 * the stream and calls on_data(stream 1|2, bytes, len) as output arrives;
 * on_data returns 0 to go on, -1 to abort. should_stop (may be NULL) is
 * polled about once a second and aborts the stream when it returns 1. The
 * call ends when the stream ends, when it is aborted, or after timeout_ms
 * (then *timed_out = 1). inspect: exit code (-1 while running) and running
 * flag. */
typedef int (*docker_output_fn)(void *arg, int stream, const char *data, size_t len);
int docker_exec_create(struct docker_client *c, const char *id, json_object *body, char exec_id[65],
		       struct sp_err *e);
int docker_exec_start(struct docker_client *c, const char *exec_id, int64_t timeout_ms,
		      docker_output_fn on_data, int (*should_stop)(void *arg), void *arg,
		      int *timed_out, struct sp_err *e);
/* Like docker_exec_start for an exec created with AttachStdin: writes the
 * in_len bytes at in (read in place, never copied) to the process's stdin
 * once Docker has hijacked the connection, while the output streams in.
 * stdin is never closed: the process must read exactly in_len bytes (head
 * -c N). A process that ends before reading them all is not an error (its
 * exit code tells); *in_sent (may be NULL) counts the bytes Docker took. */
int docker_exec_start_input(struct docker_client *c, const char *exec_id, int64_t timeout_ms,
			    const void *in, size_t in_len, docker_output_fn on_data,
			    int (*should_stop)(void *arg), void *arg, int *timed_out,
			    size_t *in_sent, struct sp_err *e);
/* Like docker_exec_start_input with input that keeps coming (an
 * interactive process: interact's stdin): in->peek
 * offers the next bytes for the process's stdin (0: none now), in->consume
 * says how many Docker took; in->wake_fd (-1: none) is polled beside the
 * connection, readable when peek may have more (it is drained here). The
 * call ends when the stream ends, on_data or should_stop aborts, or after
 * timeout_ms. stdin is never closed. */
struct docker_input {
	size_t (*peek)(void *arg, const char **p);
	void (*consume)(void *arg, size_t n);
	int wake_fd;
	void *arg;
};
int docker_exec_start_interactive(struct docker_client *c, const char *exec_id, int64_t timeout_ms,
				  const struct docker_input *in, docker_output_fn on_data,
				  int (*should_stop)(void *arg), void *arg, int *timed_out,
				  struct sp_err *e);
/* A source of stdin bytes for docker_exec_start_stream: fills at most cap
 * bytes at buf and returns their count, 0 when the input is over (the
 * connection's write side is then shut: Docker closes the process's stdin
 * once it has read all), -1 to abort the stream. It may block. */
typedef long (*docker_input_fn)(void *arg, char *buf, size_t cap);
/* Like docker_exec_start_input with the input pulled from in_fn piece by
 * piece (never more than one piece, 64 KiB, held), so an input of any size
 * streams through bounded memory. */
int docker_exec_start_stream(struct docker_client *c, const char *exec_id, int64_t timeout_ms,
			     docker_input_fn in_fn, void *in_arg, docker_output_fn on_data,
			     int (*should_stop)(void *arg), void *arg, int *timed_out,
			     struct sp_err *e);
/* Starts an exec detached: returns once the process runs. */
int docker_exec_start_detached(struct docker_client *c, const char *exec_id, struct sp_err *e);
int docker_exec_inspect(struct docker_client *c, const char *exec_id, int *exit_code, int *running,
			struct sp_err *e);

/* The stream demultiplexer for Docker's 8-byte-header framing, fed bytes
 * in pieces of any size. Returns -1 on a malformed header (stream type
 * other than 0,1,2, or non-zero padding; the demuxer then stays broken),
 * 1 when it stopped early because on_data returned -1, else 0. Stream 0
 * (stdin) frames are delivered as stream 1, as Docker documents. */
struct docker_demux {
	unsigned char hdr[8];
	size_t hdr_have;
	int stream;    /* of the current frame; -1 once broken */
	uint32_t left; /* payload bytes left in the current frame */
};
void docker_demux_init(struct docker_demux *d);
int docker_demux_feed(struct docker_demux *d, const char *p, size_t n, docker_output_fn on_data,
		      void *arg);
/* Whether the bytes fed so far end on a frame boundary: a stream that ends
 * anywhere else was cut on its way (a dropped connection, a proxy that
 * lost its tail), and what came of it is not the whole output. */
int docker_demux_whole(const struct docker_demux *d);

/* Escaping helpers, exposed for tests. escape: percent-encodes everything
 * outside [A-Za-z0-9._~-] into out; -1 if it does not fit. valid_id: a
 * container/exec id or name: [A-Za-z0-9][A-Za-z0-9_.-]{0,127}. */
int docker_escape(const char *s, char *out, size_t cap);
int docker_valid_id(const char *s);
/* Checks method + path (the part before '?') against the allow-list. */
int docker_path_allowed(const char *method, const char *path);

#endif
