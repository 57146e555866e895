/*
 * Private to docker/: the client struct and the one request runner every
 * file of the module sends through. Nothing outside docker/ includes this.
 * A request is built in a struct docker_req (path, escaped query, body),
 * checked against the allow-list, sent, and its answer lands in a capped
 * buffer or a sink; a non-2xx answer body is kept apart for the message.
 */
#ifndef SANDPIT_DOCKER_INT_H
#define SANDPIT_DOCKER_INT_H

#include <sys/types.h>

#include <curl/curl.h>

#include "docker.h"

#define DOCKER_API_MIN_MAJOR 1
#define DOCKER_API_MIN_MINOR 41
#define DOCKER_API_MAX_MINOR 43
#define DOCKER_JSON_MAX ((size_t)8 << 20)     /* cap on a buffered JSON answer */
#define DOCKER_ERRBODY_MAX ((size_t)64 << 10) /* cap on a kept error answer */
#define DOCKER_QUERY_MAX ((size_t)32 << 10)
#define DOCKER_PATH_MAX 1024
#define DOCKER_URL_MAX (DOCKER_PATH_MAX + DOCKER_QUERY_MAX + 64)

enum docker_transport { DT_UNIX, DT_TCP, DT_SSH };

struct docker_client {
	CURL *h; /* kept alive across requests (not for exec streams) */
	enum docker_transport transport;
	char sock[108]; /* unix: the socket path */
	char base[300]; /* URL before the path: "http://docker", "https://host:port" */
	char tls_cert[4096], tls_key[4096], tls_ca[4096]; /* tcp: client cert, key, CA */
	char ssh_dest[300];				  /* ssh: user@host */
	char ssh_port[8];
	char ssh_key[4096], ssh_known_hosts[4096], ssh_control_dir[1024];
	int pooled;	    /* reuse connections (and the ssh master) across requests */
	pid_t bridge_pid;   /* ssh: the bridge process serving sock */
	pid_t bridge_owner; /* the process that started it (a forked copy does not own it) */
	int connect_timeout_ms;
	int timeout_s;		    /* default bound on a request */
	char api[16];		    /* "1.41" until docker_negotiate */
	char label[96];		    /* "Server x is unavailable: " or "" */
	struct docker_guard *guard; /* guard.c: this server's shared slot */
	int inflight_max, stuck_ms; /* guard.c: 0 = no guard */
	int next_timeout_ms;	    /* the next call's bound, once; 0 = timeout_s */
};

/* The one place that says how a handle reaches the client's daemon: socket
 * path, TLS files, the ssh bridge, no proxy, no signals, the connect
 * timeout, reuse. Set on a fresh handle or after curl_easy_reset, by
 * docker_perform and docker_hijack alike. */
void docker_transport_apply(struct docker_client *c, CURL *h);
/* Stops what the transport started (the ssh bridge). */
void docker_transport_close(struct docker_client *c);

/* A sink takes answer bytes of a 2xx answer; returns 0 to go on, else the
 * transfer is aborted and req.aborted is set. */
typedef int (*docker_sink_fn)(void *arg, const char *p, size_t n);

struct docker_req {
	/* filled by the caller */
	const char *method;	    /* GET POST PUT DELETE HEAD */
	char path[DOCKER_PATH_MAX]; /* unversioned, e.g. "/containers/x/start" */
	int unversioned;	    /* send path without the "/v1.41" prefix */
	struct buf query;	    /* escaped, without '?' */
	const char *ctype;	    /* body content type; JSON when NULL */
	const char *auth;	    /* X-Registry-Auth value (a secret: never logged), or NULL */
	int unguarded;		    /* the answer waits on a third party (a registry): bounded by
			  its own timeout, never counted as the daemon's silence (guard.c) */
	const void *body;
	size_t body_len;
	struct buf *out;     /* 2xx body goes here (default: &resp) */
	docker_sink_fn sink; /* or here, when set */
	void *sink_arg;
	int64_t timeout_ms;		  /* whole transfer; 0 = the client's timeout */
	int64_t header_ms;		  /* exec: answer headers must come within this */
	int timeout_is_result;		  /* a timeout after the headers is not an error */
	int (*stop_fn)(void *);		  /* polled about once a second: 1 = abort */
	const struct docker_input *input; /* docker_hijack: input that keeps coming */
	void *stop_arg;
	char *stat_hdr; /* captures X-Docker-Container-Path-Stat */
	size_t stat_cap;
	long ok_status[2]; /* non-2xx statuses docker_call treats as success */
	/* filled by docker_perform */
	CURL *h;
	long status;
	struct buf resp; /* capped at DOCKER_JSON_MAX */
	struct buf err;	 /* non-2xx answer body, capped */
	int too_big, aborted, timed_out, headers_done, header_timeout;
	size_t in_sent;	       /* docker_hijack: input bytes written */
	docker_input_fn in_fn; /* docker_hijack: input pulled from here */
	void *in_arg;
	int guard_place;		    /* guard.c: the place held, -1 none */
	struct docker_client *guard_client; /* guard.c */
};

/* guard.c (RELIABILITY L2). enter: takes a place among the calls waiting
 * for the server's first answer byte, waiting at most bound_ms while the
 * server shows life; -1 SP_UNAVAILABLE when the server is silent with its
 * places taken, or has said nothing for stuck_ms. answered: the first
 * answer byte came (the server lives); gives the place back. leave: gives
 * it back if still held (safe to call twice, or without enter). */
int docker_guard_enter(struct docker_client *c, struct docker_req *r, int64_t bound_ms,
		       struct sp_err *e);
void docker_guard_answered(struct docker_req *r);
void docker_guard_leave(struct docker_req *r);

/* Prepares r for method. Allocates nothing until used; release with
 * docker_req_cleanup, which is safe right after init. */
void docker_req_init(struct docker_req *r, const char *method);
void docker_req_cleanup(struct docker_req *r);
/* Sets the unversioned path, printf-formatted; -1 (SP_INTERNAL) if it does
 * not fit. Values in it must be validated ids or escaped already. */
int docker_req_path(struct docker_req *r, struct sp_err *e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Appends key=escaped(val) to the query. */
int docker_req_query(struct docker_req *r, const char *key, const char *val, struct sp_err *e);

/* Builds r's full URL into url (cap DOCKER_URL_MAX) and checks method +
 * path against the allow-list and the query's character set; *tmpl is the
 * matching template (for metrics). -1 (SP_INTERNAL) when it is refused or
 * does not fit. */
int docker_req_url(struct docker_client *c, const struct docker_req *r, struct buf *url,
		   const char **tmpl, struct sp_err *e);

/* Sends r on h (the client's handle when NULL). Returns 0 when an HTTP answer
 * came (any status; see r->status, r->aborted, r->timed_out), -1 with e set
 * when the path is refused, Docker is unreachable or slow (SP_UNAVAILABLE),
 * or the answer crossed out's cap (SP_TOO_LARGE). */
int docker_perform(struct docker_client *c, CURL *h, struct docker_req *r, struct sp_err *e);

/* Sends src (a GET) and dst (a PUT whose body is src's answer) at once, on
 * two connections of their own driven by one curl multi: src's answer
 * passes through a fixed ring (4 MiB) into dst's body (chunked), src
 * paused while the ring is full and dst while it is empty, so an answer
 * of any size moves through bounded memory. Neither has a total timeout:
 * the pair fails (SP_UNAVAILABLE) once no byte moved either way for the
 * client's timeout, or once total_ms passed (0: never); SP_TOO_LARGE once
 * more than limit bytes came (0: no limit). src holds a guard place until
 * its headers, dst none (its answer comes after its whole body). Returns
 * 0 when dst got an HTTP answer (src->status and dst->status tell; a
 * failed src aborts dst, src->aborted when dst ended first), -1 with e
 * set otherwise. */
int docker_perform_pipe(struct docker_client *c, struct docker_req *src, struct docker_req *dst,
			int64_t total_ms, int64_t limit, struct sp_err *e);

/* Sends r (a POST that Docker answers by hijacking the connection: exec
 * start) on a connection of its own with "Connection: Upgrade", waits for
 * the 101 (or 200) header block, then writes the in_len bytes at in to the
 * raw stream in bounded pieces while it hands what Docker sends to r->sink
 * (required), until Docker ends the stream. in is read in place, never
 * copied. Input Docker stops taking (the process ended before reading it
 * all) is not an error: the stream's end decides. Honours r->timeout_ms,
 * r->header_ms, r->timeout_is_result and r->stop_fn as docker_perform
 * does; r->in_sent counts the bytes written. A non-101/200 answer keeps its
 * body in r->err for docker_status_err. Returns 0 when an HTTP answer came,
 * -1 with e set as docker_perform. */
int docker_hijack(struct docker_client *c, struct docker_req *r, const void *in, size_t in_len,
		  struct sp_err *e);
/* The same with the input pulled from r->in_fn (in is then NULL): it is
 * called whenever the last piece is written, and may block (it reads the
 * caller's own client). */

/* docker_perform plus status mapping: body (JSON, not consumed, may be NULL)
 * is sent; a 2xx or r->ok_status answer is success, anything else is mapped
 * by docker_status_err. When out is not NULL and the answer has a body, *out
 * is a new json object the caller puts (NULL for an empty body). */
int docker_call(struct docker_client *c, struct docker_req *r, json_object *body, json_object **out,
		struct sp_err *e);

/* Sends r with body and copies the answer's "Id" (64 hex) into id_out: the
 * shared tail of container and exec create. */
int docker_create_call(struct docker_client *c, struct docker_req *r, json_object *body,
		       char id_out[65], struct sp_err *e);

/* GET fmt (one %s: the id, checked with docker_check_id as what) into
 * *out, new: the shared body of the inspects. An empty answer is an
 * error (SP_INTERNAL), a missing or invalid id SP_NOT_FOUND. */
int docker_inspect_call(struct docker_client *c, const char *fmt, const char *id, const char *what,
			json_object **out, struct sp_err *e);

/* Maps a non-2xx answer: 404 SP_NOT_FOUND, 409 SP_CONFLICT, else SP_INTERNAL,
 * with Docker's {"message"} (or the status) as the text. Returns -1. */
int docker_status_err(const struct docker_req *r, struct sp_err *e);

/* Parses len bytes of JSON; *out is new (caller puts it). -1, SP_INTERNAL. */
int docker_parse_json(const char *p, size_t len, json_object **out, struct sp_err *e);

/* Decodes the X-Docker-Container-Path-Stat header value hdr[0..len)
 * (base64 of a JSON object) into st, which is zeroed first. -1,
 * SP_INTERNAL, when it does not decode. Reads only; exposed for tests. */
int docker_stat_decode(const char *hdr, size_t len, struct docker_stat *st, struct sp_err *e);

/* A string member of o, or NULL. */
const char *docker_json_str(json_object *o, const char *key);

/* Checks a caller's container id: an invalid one reads as SP_NOT_FOUND
 * "No such <what>" (what: "container", "exec instance", "network"). */
int docker_check_id(const char *id, const char *what, struct sp_err *e);

/* Checks an absolute path for the archive endpoints: SP_BAD_REQUEST. */
int docker_check_path(const char *path, struct sp_err *e);

/* Whether a runc Version/GitCommit pair is safe from CVE-2024-21626: 1.1.12
 * or newer, or a known patched distro build. */
int docker_runc_ok(const char *version, const char *commit);

/* A pull's or push's progress stream (one JSON object after another),
 * fed in pieces of any size as it arrives, never buffered whole: keeps the
 * first "error" text and the last aux {Digest, Size} (a push's result);
 * malformed once the bytes are not JSON (the rest is ignored). tok:
 * json_tokener_new(), the caller's to free. Returns 0. */
struct docker_progress {
	json_tokener *tok;
	char error[400];
	char digest[80];
	int64_t size;
	int malformed;
};
int docker_progress_feed(struct docker_progress *ps, const char *p, size_t n);

/* Splits an image reference into repository and tag (or digest) as the
 * Docker CLI does; -1 if a part is empty or does not fit. */
int docker_image_split(const char *ref, char *repo, size_t rcap, char *tag, size_t tcap);

#endif
