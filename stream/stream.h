/*
 * sandpit-stream: the /sandbox-exec WebSocket daemon. nginx authenticates
 * the upgrade through /_auth and proxies it here over a unix socket with the
 * identity in X-Sandpit-* headers that it sets itself; this daemon trusts
 * nothing else. One event loop per worker process holds every connection
 * (WebSocket framing by wslay); each running command gets its own thread,
 * which calls the blocking sandbox core and hands output to the loop through
 * a bounded queue and an eventfd. Nothing here buffers output without bound:
 * a full queue blocks the command's stream, and a reader stuck too long is
 * dropped and its command killed.
 */
#ifndef SANDPIT_STREAM_H
#define SANDPIT_STREAM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "../common/config.h"
#include "../common/err.h"
#include "../common/perms.h"

#define STREAM_HTTP_MAX 16384		   /* the upgrade request head */
#define STREAM_QUEUE_CAP (1024 * 1024)	   /* output waiting per connection */
#define STREAM_WS_LOW (64 * 1024)	   /* at most this much handed to wslay at once */
#define STREAM_WS_READ_PAUSE (1024 * 1024) /* stop reading while this much is unsent */
#define STREAM_PIECE_MAX (32 * 1024)	   /* output bytes per stdout/stderr message */
#define STREAM_PING_MS 20000		   /* keeps idle connections alive through proxies */
#define STREAM_HANDSHAKE_MS 10000	   /* the upgrade request must arrive within this */
#define STREAM_LINGER_QUIET_MS 500	   /* after a 1009: the peer quiet this long, we shut */
#define STREAM_CLOSE_LINGER_MS 3000	   /* after our close frame, wait this long for EOF */
#define STREAM_DRAIN_S 10		   /* on SIGTERM, running commands get this long */
#define STREAM_MAX_JOBS 512		   /* running commands per worker process */
#define STREAM_POOL_MAX 8		   /* idle Redis+Docker contexts kept per worker */
#define STREAM_THREAD_STACK (512 * 1024)

/* --- http.c: the upgrade request ---------------------------------------- */

enum stream_sid { SID_MISSING = 0, SID_OK, SID_MALFORMED };
enum stream_kind { SK_EXEC = 0, SK_INTERACT };

/* What the upgrade request says. status 0 = a WebSocket upgrade to accept;
 * else the HTTP status to answer with (why says why). Identity fields are ""
 * when nginx did not send them (or sent something unusable). */
struct stream_upgrade {
	int status;
	const char *why;
	enum stream_sid sid;
	char sandbox_id[65];
	char org[65];
	char key_id[65];
	char role[33];
	char perms[PERMS_LIST_MAX];
	char request_id[65];
	char accept[32]; /* Sec-WebSocket-Accept */
	/* interact: /endpoints/<sandbox_id>/v1/processes/<process>/interact */
	enum stream_kind kind;
	char process[65];   /* "" when the path's process is no process id */
	int subproto;	    /* sandboxes.v1 was offered */
	int64_t expires_ms; /* the credential's expiry (X-Sandpit-Expires); 0 none */
};

/* Parses one HTTP/1.1 request head of len bytes (through the blank line).
 * Reads only; fills u. u->status 0 is an upgrade of /sandbox-exec (or of a
 * process's interact, u->kind SK_INTERACT), 200 a
 * GET /metrics, anything else the error to answer. Returns 0, or -1 when
 * the head is not HTTP at all (u->status is then 400 too). */
int stream_http_parse(const char *p, size_t len, struct stream_upgrade *u);
/* Sec-WebSocket-Accept for a Sec-WebSocket-Key: base64(SHA-1(key + GUID)),
 * written with its NUL into out (>= 29 bytes). -1 if the key is not 16
 * base64-encoded bytes. */
int stream_ws_accept(const char *key, size_t len, char *out, size_t cap);

/* --- job.c: one command (or the connect-time check) in its own thread --- */

/* A ready-to-send text message. */
struct stream_msg {
	struct stream_msg *next;
	size_t len;
	char data[];
};

struct sandbox_ctx;

/* Per worker process: what job threads share with the loop. */
struct stream_worker {
	const struct config *cfg;
	int efd;	    /* eventfd: some job has output, or finished */
	atomic_int threads; /* job threads still running */
	pthread_mutex_t pool_mu;
	struct sandbox_ctx *pool[STREAM_POOL_MAX];
	int npool;
};

enum stream_job_kind { JOB_CHECK, JOB_EXEC, JOB_INTERACT };

/* Shared by a connection and its thread; freed when both have let go. The
 * queue, done and the check result are guarded by mu. */
struct stream_job {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* signalled when the queue drains below the cap, or on stop */
	int refs;
	enum stream_job_kind kind;
	atomic_int stop; /* the loop wants the command ended */
	int done;	 /* the thread has finished */
	struct stream_msg *head, *tail;
	size_t qbytes;
	struct stream_worker *w;
	char org[65];
	char sandbox_id[65];
	char request_id[65];
	json_object *in; /* the validated exec message (owned) */
	/* JOB_CHECK's answer */
	int ok;
	enum sp_code code;
	char msg[256];
	/* JOB_INTERACT: the process, the resume point, the helper's commands
	 * waiting for the exec's stdin (in, guarded by mu; tx the thread's),
	 * the eventfd that wakes the thread, how the socket closes after */
	char process[65];
	int64_t from;
	char *in_buf;
	size_t in_len, in_cap;
	char tx[65536 + 64];
	size_t tx_len;
	int wake;
	int close_code; /* 0: none (the loop stopped it) */
	char close_reason[124];
	/* thread-side: the attach's output being parsed (interact.c) */
	char line[160];
	size_t line_len;
	uint64_t rec_seq;
	unsigned rec_stream;
	size_t rec_len, rec_have;
	char rec[32768];
	/* thread-side: an incomplete UTF-8 sequence carried to the next chunk */
	unsigned char carry[3][4];
	size_t ncarry[3];
};

int stream_worker_init(struct stream_worker *w, const struct config *cfg);
void stream_worker_cleanup(struct stream_worker *w);

/* A new job with one reference (the caller's); in is consumed. NULL when
 * out of memory. */
struct stream_job *stream_job_new(struct stream_worker *w, enum stream_job_kind kind,
				  const char *org, const char *sandbox_id, const char *request_id,
				  json_object *in);
/* Starts the job's thread (which takes its own reference). -1 if it could
 * not be started; the caller keeps its reference either way. */
int stream_job_start(struct stream_job *j);
/* Drops one reference; the last one frees the job and its queue. */
void stream_job_release(struct stream_job *j);
/* Asks the thread to end the command as soon as it can. */
void stream_job_stop(struct stream_job *j);

#define STREAM_INPUT_CAP (1024 * 1024) /* interact: stdin waiting per connection */
#define STREAM_HEARTBEAT_MS 10000      /* interact: a heartbeat after this long without a frame */
#define STREAM_ATTACH_MS 30000	       /* interact: the attach frame must come within this */

/* interact.c: the thread's half. Runs the job's interaction (consumes
 * nothing); 0, or -1 when the backends failed (the context is not reused). */
int stream_interact_run(struct stream_job *j, struct sandbox_ctx *ctx);
/* Queues bytes of the helper's command protocol for the exec's stdin and
 * wakes the thread. -1 when out of memory. */
int stream_job_input(struct stream_job *j, const char *p, size_t n);
/* Bytes queued for stdin and not yet taken by the thread. */
size_t stream_job_input_len(struct stream_job *j);
/* Pushes a message into the job's queue (consumed) and wakes the loop. */
void stream_job_push(struct stream_job *j, struct stream_msg *m);
/* Waits while the job's queue is over its cap; 1 once asked to stop. */
int stream_job_wait_room(struct stream_job *j);

/* A JSON text message {"type":type,"message":msg} or similar, built by the
 * caller; allocates. */
struct stream_msg *stream_msg_new(const char *data, size_t len);
struct stream_msg *stream_msg_json(json_object *o);

/* --- loop.c: the event loop of one worker ------------------------------ */

/* Runs until the worker is told to stop and every connection is gone. */
void stream_loop_run(const struct config *cfg, int listen_fd);

#endif
