/*
 * The thread's half of a process's interact WebSocket (issue 16): one
 * docker exec of the helper's attach in the sandbox (sandbox_process_attach)
 * for the connection's life. The attach's stdout is parsed here (the
 * helper's framing: "H <pty>\n", "C <seq> <stream> <len>\n" + bytes,
 * "X <code> <reason>\n", "N\n", "D <first> <last>\n", "F <why>\n") into the
 * document's ProcessOutput frames (chunk, exited) and its Error frame,
 * pushed into the job's bounded queue; the loop's stdin, closeStdin and
 * resize arrive as the helper's commands in the job's input buffer and go
 * to the exec's stdin. Nothing of the interaction is kept here: the
 * process, its output and its sequence numbers are the helper's, inside the
 * sandbox, so any worker of any sandpit-stream serves any process and a
 * reconnect resumes from attach.resumeFrom. The attach's output is the
 * sandbox user's to forge: every record is checked, a malformed one ends
 * the interaction (1011), never the daemon.
 */
#include "stream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "../common/log.h"
#include "../common/utf8.h"
#include "../sandbox/sandbox.h"

/* Sets how the socket closes once the queue is out (first one wins). */
static void set_close(struct stream_job *j, int code, const char *reason)
{
	pthread_mutex_lock(&j->mu);
	if (!j->close_code) {
		j->close_code = code;
		snprintf(j->close_reason, sizeof(j->close_reason), "%s", reason);
	}
	pthread_mutex_unlock(&j->mu);
}

static int closing(struct stream_job *j)
{
	int c;

	pthread_mutex_lock(&j->mu);
	c = j->close_code;
	pthread_mutex_unlock(&j->mu);
	return c;
}

/* The terminal Error frame, then the close code after it. */
static void fail(struct stream_job *j, const char *code, int close_code, const char *msg)
{
	json_object *o = json_object_new_object();

	if (closing(j))
		return;
	json_object_object_add(o, "code", json_object_new_string(code));
	json_object_object_add(o, "message", json_object_new_string(msg));
	json_object_object_add(o, "details", json_object_new_array());
	stream_job_push(j, stream_msg_json(o));
	json_object_put(o);
	set_close(j, close_code, code);
}

/* The helper's stream broke its protocol (a line it never writes): its
 * output was cut mid-record (the helper or its supervisor killed, as the
 * sandbox is ended), or code in the sandbox interfered. Retryable as an
 * ended interaction is; the line's head is logged. */
static void garbled(struct stream_job *j, const char *l, size_t n)
{
	char head[65];
	size_t k = n < sizeof(head) - 1 ? n : sizeof(head) - 1;

	for (size_t i = 0; i < k; i++)
		head[i] = l[i] >= 0x20 && l[i] < 0x7f ? l[i] : '?';
	head[k] = '\0';
	log_warn("%s sandbox %s: process %s: attach: not the helper's protocol: \"%s\"",
		 j->request_id, j->sandbox_id, j->process, head);
	fail(j, "unavailable", 1011,
	     "The sandbox's process helper answered something else (its output was cut, or "
	     "code in the sandbox interfered with it); reconnect and resume");
}

static void push_chunk(struct stream_job *j)
{
	static const char *const streams[] = { "unspecified", "stdout", "stderr", "pty" };
	size_t cap = sodium_base64_ENCODED_LEN(j->rec_len, sodium_base64_VARIANT_ORIGINAL);
	char *b = malloc(cap), seq[24];
	json_object *o, *c;

	if (!b) {
		fail(j, "internal", 1011, "out of memory");
		return;
	}
	sodium_bin2base64(b, cap, (const unsigned char *)j->rec, j->rec_len,
			  sodium_base64_VARIANT_ORIGINAL);
	snprintf(seq, sizeof(seq), "%llu", (unsigned long long)j->rec_seq);
	o = json_object_new_object();
	c = json_object_new_object();
	json_object_object_add(c, "stream", json_object_new_string(streams[j->rec_stream]));
	json_object_object_add(c, "data", json_object_new_string(b));
	json_object_object_add(c, "streamSequence", json_object_new_string(seq));
	json_object_object_add(o, "chunk", c);
	stream_job_push(j, stream_msg_json(o));
	json_object_put(o);
	free(b);
}

/* A header line of the attach's output (NUL-terminated, without its
 * newline). 0 to go on, -1 when the interaction is over. */
static int on_line(struct stream_job *j, char *l)
{
	unsigned long long a = 0, b = 0;
	unsigned st = 0;
	size_t len = 0;
	int n = 0;

	switch (l[0]) {
	case 'H':
		return 0;
	case 'C':
		if (sscanf(l, "C %llu %u %zu%n", &a, &st, &len, &n) != 3 || l[n] || a == 0 ||
		    st < 1 || st > 3 || len == 0 || len > sizeof(j->rec))
			break;
		if (a <= j->rec_seq) {
			/* out of order: the log was forged */
			fail(j, "dataLoss", 1011, "The process's output log is not in order");
			return -1;
		}
		j->rec_seq = a;
		j->rec_stream = st;
		j->rec_len = len;
		j->rec_have = 0;
		return 0;
	case 'X': {
		json_object *o, *x;
		long long code = 0;
		char *reason;
		if (sscanf(l, "X %lld%n", &code, &n) != 1)
			break;
		reason = l + n;
		while (*reason == ' ')
			reason++;
		if (!utf8_valid(reason, strlen(reason)) || strlen(reason) > 64)
			reason = "";
		o = json_object_new_object();
		x = json_object_new_object();
		json_object_object_add(
			x, "exitCode",
			json_object_new_int(code >= 0 && code <= 255 ? (int)code : 255));
		json_object_object_add(x, "reason", json_object_new_string(reason));
		json_object_object_add(o, "exited", x);
		stream_job_push(j, stream_msg_json(o));
		json_object_put(o);
		set_close(j, 1000, "exited");
		return -1;
	}
	case 'N':
		fail(j, "notFound", 1008, "No such process in this sandbox");
		return -1;
	case 'D': {
		char msg[200];
		if (sscanf(l, "D %llu %llu", &a, &b) != 2)
			break;
		snprintf(msg, sizeof(msg),
			 "output_not_retained: output after resumeFrom is no longer kept "
			 "(retained: sequences %llu to %llu)",
			 a, b);
		fail(j, "failedPrecondition", 1008, msg);
		return -1;
	}
	case 'F': {
		const char *why = l[1] == ' ' ? l + 2 : "refused";
		fail(j, "failedPrecondition", 1008,
		     utf8_valid(why, strlen(why)) ? why : "The request is refused in this state");
		return -1;
	}
	default:
		break;
	}
	garbled(j, l, strlen(l));
	return -1;
}

/* sandbox_attach_io.on_output: the attach's stdout, parsed as it comes;
 * waits while the queue is full (the exec's stream, and the attach behind
 * it, wait with it). Its stderr is logged. */
static int on_output(void *arg, int stream, const char *data, size_t len)
{
	struct stream_job *j = arg;

	if (stream == 2) {
		log_info("%s sandbox %s: process %s: attach: %.*s", j->request_id, j->sandbox_id,
			 j->process, (int)(len > 200 ? 200 : len), data);
		return 0;
	}
	while (len) {
		if (j->rec_len) {
			size_t k = j->rec_len - j->rec_have;
			if (k > len)
				k = len;
			memcpy(j->rec + j->rec_have, data, k);
			j->rec_have += k;
			data += k;
			len -= k;
			if (j->rec_have == j->rec_len) {
				push_chunk(j);
				j->rec_len = 0;
				if (stream_job_wait_room(j))
					return -1;
			}
			continue;
		}
		if (*data == '\n') {
			j->line[j->line_len] = '\0';
			j->line_len = 0;
			data++;
			len--;
			if (on_line(j, j->line) < 0)
				return -1;
			continue;
		}
		if (j->line_len + 1 >= sizeof(j->line) || *data == '\0') {
			garbled(j, j->line, j->line_len);
			return -1;
		}
		j->line[j->line_len++] = *data++;
		len--;
	}
	return atomic_load(&j->stop) ? -1 : 0;
}

static size_t in_peek(void *arg, const char **p)
{
	struct stream_job *j = arg;
	int wake = 0;

	if (!j->tx_len) {
		pthread_mutex_lock(&j->mu);
		if (j->in_len) {
			size_t n = j->in_len < sizeof(j->tx) ? j->in_len : sizeof(j->tx);
			memcpy(j->tx, j->in_buf, n);
			memmove(j->in_buf, j->in_buf + n, j->in_len - n);
			wake = j->in_len >= STREAM_INPUT_CAP && j->in_len - n < STREAM_INPUT_CAP;
			j->in_len -= n;
			j->tx_len = n;
		}
		pthread_mutex_unlock(&j->mu);
	}
	if (wake) {
		/* the loop reads the socket again */
		uint64_t one = 1;
		if (write(j->w->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			log_warn("eventfd write: %s", strerror(errno));
	}
	*p = j->tx;
	return j->tx_len;
}

static void in_consume(void *arg, size_t n)
{
	struct stream_job *j = arg;

	memmove(j->tx, j->tx + n, j->tx_len - n);
	j->tx_len -= n;
}

static int should_stop(void *arg)
{
	struct stream_job *j = arg;

	return atomic_load(&j->stop);
}

int stream_interact_run(struct stream_job *j, struct sandbox_ctx *ctx)
{
	struct sandbox_attach_io io = { in_peek, in_consume, j->wake, on_output, should_stop, j };
	struct sp_err e;
	int rc;

	sp_err_clear(&e);
	rc = sandbox_process_attach(ctx, j->org, j->sandbox_id, j->process, j->from, &io, &e);
	if (atomic_load(&j->stop))
		return 0;
	if (rc < 0) {
		int backend =
			e.code == SP_UNAVAILABLE || e.code == SP_INTERNAL || e.code == SP_TIMEOUT;
		if (e.code == SP_NOT_FOUND)
			fail(j, "notFound", 1008, e.msg[0] ? e.msg : "Not found");
		else if (e.code == SP_PRECONDITION || e.code == SP_CONFLICT)
			fail(j, "failedPrecondition", 1008, e.msg);
		else if (e.code == SP_FORBIDDEN)
			fail(j, "permissionDenied", 1008, e.msg);
		else
			fail(j, e.code == SP_INTERNAL ? "internal" : "unavailable", 1011,
			     e.msg[0] ? e.msg : "Service unavailable");
		if (backend)
			log_warn("%s sandbox %s: interact %s: %s", j->request_id, j->sandbox_id,
				 j->process, e.msg);
		return backend ? -1 : 0;
	}
	/* the exec ended before the process did: the sandbox stopped, or the
	 * helper was killed */
	fail(j, "unavailable", 1011,
	     "The interaction ended before the process did (the sandbox stopped, or its "
	     "helper was killed); reconnect and resume");
	return 0;
}
