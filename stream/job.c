/*
 * Job threads: the blocking half of sandpit-stream. A JOB_CHECK looks the
 * sandbox up for the connecting org (is it there, is it running); a
 * JOB_EXEC runs one command through sandbox_exec_run (the core's rules,
 * the env and cwd checks, as sandbox.exec has them) and turns its output
 * into stdout/stderr messages (invalid UTF-8 → U+FFFD, a sequence split
 * between two chunks is carried over, not mangled), then one exit or error
 * message. Messages go into the job's queue; the loop is woken through the
 * worker's eventfd. The queue is bounded: while it holds more than
 * STREAM_QUEUE_CAP bytes the output callback waits, which stalls Docker's
 * stream and, through the pipe, the command. Each thread borrows a sandbox
 * context (its own Redis and Docker connections) from a small per-worker
 * pool. A thread never touches a connection; it knows only its job.
 */
#include "stream.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "../common/buf.h"
#include "../common/log.h"
#include "../common/utf8.h"
#include "../sandbox/sandbox.h"

int stream_worker_init(struct stream_worker *w, const struct config *cfg)
{
	memset(w, 0, sizeof(*w));
	w->cfg = cfg;
	atomic_init(&w->threads, 0);
	if (pthread_mutex_init(&w->pool_mu, NULL) != 0)
		return -1;
	return 0;
}

void stream_worker_cleanup(struct stream_worker *w)
{
	for (int i = 0; i < w->npool; i++) {
		sandbox_ctx_cleanup(w->pool[i]);
		free(w->pool[i]);
	}
	w->npool = 0;
	pthread_mutex_destroy(&w->pool_mu);
}

/* Borrows a context from the pool or opens a new one. Allocates. */
static struct sandbox_ctx *pool_get(struct stream_worker *w, struct sp_err *e)
{
	struct sandbox_ctx *ctx = NULL;

	pthread_mutex_lock(&w->pool_mu);
	if (w->npool > 0)
		ctx = w->pool[--w->npool];
	pthread_mutex_unlock(&w->pool_mu);
	if (ctx)
		return ctx;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		sp_err_set(e, SP_INTERNAL, "out of memory");
		return NULL;
	}
	if (sandbox_ctx_init(ctx, w->cfg, e) < 0) {
		free(ctx);
		return NULL;
	}
	return ctx;
}

/* Returns a context; one that just failed on a backend is closed instead,
 * so the next job reconnects. */
static void pool_put(struct stream_worker *w, struct sandbox_ctx *ctx, int healthy)
{
	if (healthy) {
		pthread_mutex_lock(&w->pool_mu);
		if (w->npool < STREAM_POOL_MAX) {
			w->pool[w->npool++] = ctx;
			ctx = NULL;
		}
		pthread_mutex_unlock(&w->pool_mu);
	}
	if (ctx) {
		sandbox_ctx_cleanup(ctx);
		free(ctx);
	}
}

struct stream_msg *stream_msg_new(const char *data, size_t len)
{
	struct stream_msg *m = malloc(sizeof(*m) + len);

	if (!m)
		return NULL;
	m->next = NULL;
	m->len = len;
	memcpy(m->data, data, len);
	return m;
}

struct stream_msg *stream_msg_json(json_object *o)
{
	size_t len = 0;
	const char *s = json_object_to_json_string_length(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);

	return s ? stream_msg_new(s, len) : NULL;
}

struct stream_job *stream_job_new(struct stream_worker *w, enum stream_job_kind kind,
				  const char *org, const char *sandbox_id, const char *request_id,
				  json_object *in)
{
	struct stream_job *j = calloc(1, sizeof(*j));

	if (!j) {
		json_object_put(in);
		return NULL;
	}
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->refs = 1;
	j->kind = kind;
	atomic_init(&j->stop, 0);
	j->w = w;
	snprintf(j->org, sizeof(j->org), "%s", org);
	snprintf(j->sandbox_id, sizeof(j->sandbox_id), "%s", sandbox_id);
	snprintf(j->request_id, sizeof(j->request_id), "%s", request_id);
	j->in = in;
	j->wake = -1;
	if (kind == JOB_INTERACT) {
		j->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (j->wake < 0) {
			stream_job_release(j);
			return NULL;
		}
	}
	return j;
}

void stream_job_release(struct stream_job *j)
{
	int last;

	pthread_mutex_lock(&j->mu);
	last = --j->refs == 0;
	pthread_mutex_unlock(&j->mu);
	if (!last)
		return;
	while (j->head) {
		struct stream_msg *m = j->head;
		j->head = m->next;
		free(m);
	}
	json_object_put(j->in);
	free(j->in_buf);
	if (j->wake >= 0)
		close(j->wake);
	pthread_cond_destroy(&j->cv);
	pthread_mutex_destroy(&j->mu);
	free(j);
}

void stream_job_stop(struct stream_job *j)
{
	uint64_t one = 1;

	atomic_store(&j->stop, 1);
	pthread_mutex_lock(&j->mu);
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	if (j->wake >= 0 && write(j->wake, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("eventfd write: %s", strerror(errno));
}

int stream_job_input(struct stream_job *j, const char *p, size_t n)
{
	uint64_t one = 1;
	int rc = 0;

	pthread_mutex_lock(&j->mu);
	if (j->in_len + n > j->in_cap) {
		size_t cap = j->in_cap ? j->in_cap : 4096;
		char *nb;
		while (cap < j->in_len + n)
			cap *= 2;
		nb = realloc(j->in_buf, cap);
		if (!nb) {
			rc = -1;
			goto out;
		}
		j->in_buf = nb;
		j->in_cap = cap;
	}
	memcpy(j->in_buf + j->in_len, p, n);
	j->in_len += n;
out:
	pthread_mutex_unlock(&j->mu);
	if (rc == 0 && j->wake >= 0 && write(j->wake, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("eventfd write: %s", strerror(errno));
	return rc;
}

size_t stream_job_input_len(struct stream_job *j)
{
	size_t n;

	pthread_mutex_lock(&j->mu);
	n = j->in_len;
	pthread_mutex_unlock(&j->mu);
	return n;
}

static void wake_loop(struct stream_job *j)
{
	uint64_t one = 1;

	if (write(j->w->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("eventfd write: %s", strerror(errno));
}

/* Appends m to the queue (any size: exit and error messages are never
 * dropped) and wakes the loop if the queue was empty. Consumes m. */
static void push(struct stream_job *j, struct stream_msg *m)
{
	int was_empty;

	if (!m)
		return;
	pthread_mutex_lock(&j->mu);
	was_empty = j->head == NULL;
	if (j->tail)
		j->tail->next = m;
	else
		j->head = m;
	j->tail = m;
	j->qbytes += m->len;
	pthread_mutex_unlock(&j->mu);
	if (was_empty)
		wake_loop(j);
}

void stream_job_push(struct stream_job *j, struct stream_msg *m)
{
	push(j, m);
}

int stream_job_wait_room(struct stream_job *j)
{
	pthread_mutex_lock(&j->mu);
	while (j->qbytes > STREAM_QUEUE_CAP && !atomic_load(&j->stop)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 250 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&j->cv, &j->mu, &ts);
	}
	pthread_mutex_unlock(&j->mu);
	return atomic_load(&j->stop) ? 1 : 0;
}

static void push_error(struct stream_job *j, const char *msg)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "type", json_object_new_string("error"));
	json_object_object_add(o, "message", json_object_new_string(msg));
	push(j, stream_msg_json(o));
	json_object_put(o);
}

/* Bytes at the end of p[0..n) that start a UTF-8 sequence the chunk does
 * not finish (0..3). */
static size_t incomplete_tail(const unsigned char *p, size_t n)
{
	for (size_t k = 1; k <= 3 && k <= n; k++) {
		unsigned char c = p[n - k];
		size_t need;
		if (c >= 0x80 && c <= 0xBF)
			continue; /* a continuation byte: look further back */
		if (c < 0xC2 || c > 0xF4)
			return 0;
		need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
		return need > k ? k : 0;
	}
	return 0;
}

/* Sends data as messages of the stream's type, in pieces of at most
 * STREAM_PIECE_MAX bytes cut at character boundaries. final: nothing more
 * follows, so an incomplete tail is replaced rather than carried. */
static void emit(struct stream_job *j, int stream, const char *data, size_t len, int final)
{
	const char *type = stream == 2 ? "stderr" : "stdout";
	size_t nc = j->ncarry[stream], tail, off = 0;
	struct buf raw, clean;

	buf_init(&raw, len + 8);
	buf_init(&clean, 3 * (len + 8) + 16);
	if (buf_append(&raw, j->carry[stream], nc) < 0 || buf_append(&raw, data, len) < 0)
		goto out;
	j->ncarry[stream] = 0;
	tail = final ? 0 : incomplete_tail((const unsigned char *)raw.data, raw.len);
	if (tail) {
		memcpy(j->carry[stream], raw.data + raw.len - tail, tail);
		j->ncarry[stream] = tail;
	}
	if (raw.len - tail == 0)
		goto out;
	if (utf8_sanitize(raw.data, raw.len - tail, &clean) < 0)
		goto out;
	while (off < clean.len) {
		size_t n = clean.len - off;
		json_object *o;
		if (n > STREAM_PIECE_MAX) {
			n = STREAM_PIECE_MAX;
			while (n > 0 && ((unsigned char)clean.data[off + n] & 0xC0) == 0x80)
				n--;
		}
		o = json_object_new_object();
		json_object_object_add(o, "type", json_object_new_string(type));
		json_object_object_add(o, "data",
				       json_object_new_string_len(clean.data + off, (int)n));
		push(j, stream_msg_json(o));
		json_object_put(o);
		off += n;
	}
out:
	buf_free(&raw);
	buf_free(&clean);
}

/* sandbox_exec_io.on_output: queue the chunk, then wait while the queue is
 * over its cap. Returns -1 (ending the command) once the loop says stop. */
static int job_output(void *arg, int stream, const char *data, size_t len)
{
	struct stream_job *j = arg;

	if (atomic_load(&j->stop))
		return -1;
	emit(j, stream == 2 ? 2 : 1, data, len, 0);
	return stream_job_wait_room(j) ? -1 : 0;
}

static int job_should_stop(void *arg)
{
	struct stream_job *j = arg;

	return atomic_load(&j->stop);
}

static int backend_failure(const struct sp_err *e)
{
	return e->code == SP_UNAVAILABLE || e->code == SP_INTERNAL || e->code == SP_TIMEOUT;
}

/* Runs the exec message in j->in. Returns 0, or -1 when the backends
 * failed (the context is then not reused). */
static int run_exec(struct stream_job *j, struct sandbox_ctx *ctx)
{
	struct sandbox_exec_req rq = { 0 };
	struct sandbox_exec_io io = { job_output, job_should_stop, j };
	struct sandbox_exec_result res;
	struct sandbox sb;
	struct sandbox_env_var *vars = NULL;
	struct sp_err e;
	json_object *v;

	sp_err_clear(&e);
	if (json_object_object_get_ex(j->in, "cmd", &v)) {
		rq.cmd = json_object_get_string(v);
		rq.cmd_len = (size_t)json_object_get_string_len(v);
	}
	if (json_object_object_get_ex(j->in, "cwd", &v) && json_object_is_type(v, json_type_string))
		rq.cwd = json_object_get_string(v);
	/* validated by the exec route (an object of strings) */
	if (json_object_object_get_ex(j->in, "env", &v) &&
	    sandbox_env_of_json(v, "env", -1, &vars, &rq.nenv, &e) < 0) {
		push_error(j, e.code == SP_BAD_REQUEST ? e.msg : "Service unavailable; try again");
		return 0;
	}
	rq.env = vars;
	rq.timeout_ms = SB_DEFAULT_EXEC_TIMEOUT_MS;
	if (json_object_object_get_ex(j->in, "timeoutMs", &v) && v)
		rq.timeout_ms = json_object_is_type(v, json_type_double)
					? (int64_t)json_object_get_double(v)
					: json_object_get_int64(v);
	if (sandbox_get_running(ctx, j->org, j->sandbox_id, &sb, &e) < 0 ||
	    sandbox_exec_run(ctx, &sb, &rq, &io, &res, &e) < 0) {
		if (!atomic_load(&j->stop))
			push_error(j, e.msg[0] ? e.msg : "Internal error");
		if (backend_failure(&e))
			log_warn("%s sandbox %s: exec: %s", j->request_id, j->sandbox_id, e.msg);
		free(vars);
		return backend_failure(&e) ? -1 : 0;
	}
	free(vars);
	for (int s = 1; s <= 2; s++)
		if (j->ncarry[s])
			emit(j, s, "", 0, 1);
	if (res.stopped) {
		log_info("%s sandbox %s: command stopped (client gone, reader stuck, or shutdown)",
			 j->request_id, j->sandbox_id);
	} else {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "type", json_object_new_string("exit"));
		json_object_object_add(o, "exitCode", json_object_new_int(res.exit_code));
		json_object_object_add(o, "timedOut", json_object_new_boolean(res.timed_out));
		push(j, stream_msg_json(o));
		json_object_put(o);
	}
	return 0;
}

static void *job_main(void *arg)
{
	struct stream_job *j = arg;
	struct stream_worker *w = j->w;
	struct sandbox_ctx *ctx;
	struct sp_err e;
	int healthy = 1;

	sp_err_clear(&e);
	ctx = pool_get(w, &e);
	if (!ctx) {
		log_warn("%s sandbox context: %s", j->request_id, e.msg);
		if (j->kind == JOB_EXEC)
			push_error(j, "Service unavailable; try again");
		if (j->kind == JOB_INTERACT) {
			json_object *o = json_object_new_object();
			json_object_object_add(o, "code", json_object_new_string("unavailable"));
			json_object_object_add(
				o, "message",
				json_object_new_string("Service unavailable; try again"));
			json_object_object_add(o, "details", json_object_new_array());
			push(j, stream_msg_json(o));
			json_object_put(o);
			pthread_mutex_lock(&j->mu);
			j->close_code = 1011;
			snprintf(j->close_reason, sizeof(j->close_reason), "unavailable");
			pthread_mutex_unlock(&j->mu);
		}
		pthread_mutex_lock(&j->mu);
		j->ok = 0;
		j->code = SP_UNAVAILABLE;
		snprintf(j->msg, sizeof(j->msg), "Service unavailable");
		pthread_mutex_unlock(&j->mu);
	} else if (j->kind == JOB_CHECK) {
		struct sandbox sb;
		int rc = sandbox_get_running(ctx, j->org, j->sandbox_id, &sb, &e);
		healthy = rc == 0 || !backend_failure(&e);
		pthread_mutex_lock(&j->mu);
		j->ok = rc == 0;
		j->code = rc == 0 ? SP_OK : e.code;
		snprintf(j->msg, sizeof(j->msg), "%s", rc == 0 ? "" : e.msg);
		pthread_mutex_unlock(&j->mu);
	} else if (j->kind == JOB_INTERACT) {
		healthy = stream_interact_run(j, ctx) == 0;
	} else {
		healthy = run_exec(j, ctx) == 0;
	}
	if (ctx)
		pool_put(w, ctx, healthy);
	pthread_mutex_lock(&j->mu);
	j->done = 1;
	pthread_mutex_unlock(&j->mu);
	wake_loop(j);
	stream_job_release(j);
	atomic_fetch_sub(&w->threads, 1);
	return NULL;
}

int stream_job_start(struct stream_job *j)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int rc;

	pthread_mutex_lock(&j->mu);
	j->refs++;
	pthread_mutex_unlock(&j->mu);
	atomic_fetch_add(&j->w->threads, 1);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, STREAM_THREAD_STACK);
	/* signals are the loop's business: the thread starts with all blocked */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&t, &attr, job_main, j);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		log_error("pthread_create: %s", strerror(rc));
		atomic_fetch_sub(&j->w->threads, 1);
		pthread_mutex_lock(&j->mu);
		j->refs--;
		pthread_mutex_unlock(&j->mu);
		return -1;
	}
	return 0;
}
