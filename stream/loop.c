/*
 * The event loop of one sandpit-stream worker: epoll over the shared
 * listening socket, every connection, and the eventfd that job threads
 * poke. A connection goes HTTP (the upgrade request nginx forwards) →
 * CHECK (101 sent; a thread looks the sandbox up for the caller's org) →
 * OPEN (ready sent; exec messages run one at a time) → CLOSING (our close
 * frame queued) → LINGER (close sent; wait briefly for the peer's EOF).
 * Nothing here blocks: sockets are non-blocking, Redis and Docker are the
 * threads' business. Output moves from a job's queue into wslay only while
 * wslay holds less than STREAM_WS_LOW bytes, so per-connection memory is
 * bounded by the job queue's cap plus that; a connection whose writes have
 * made no progress for stream_stuck_timeout_s is dropped and its command
 * killed. The loop never frees a connection while events for it may still
 * be in hand: closed connections are freed after each epoll batch.
 */
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>
#include <wslay/wslay.h>

#include "../common/buf.h"
#include "../common/log.h"
#include "../common/metrics.h"
#include "../common/util.h"
#include "../fcgi/pm.h"
#include "../fcgi/route.h"
#include "../handlers/handlers.h"

#define JSON_MAX_DEPTH 16
#define TICK_MS 500

enum conn_state { CS_HTTP, CS_HTTP_REPLY, CS_CHECK, CS_OPEN, CS_CLOSING, CS_LINGER };

struct conn {
	int fd;
	enum conn_state state;
	uint32_t events; /* epoll interest in force */
	int dead;	 /* closed; freed after the current batch */
	struct buf head; /* the request head, CS_HTTP only */
	struct buf out;	 /* raw HTTP bytes to send before any frame */
	size_t out_off;
	struct buf pre; /* bytes read past the request head, fed to wslay first */
	size_t pre_off;
	wslay_event_context_ptr ws;
	struct stream_job *job;
	char org[65];
	char sandbox_id[65];
	char rid[65];
	int64_t since_ms; /* entered the current state */
	/* CS_LINGER: when the peer's bytes last came, and whether our side is
	 * shut for writing yet (linger_enter) */
	int64_t linger_rx_ms;
	int half_closed;
	int64_t blocked_since_ms; /* a write would block since then; 0 = not blocked */
	int64_t last_ping_ms;
	int ws_counted; /* counted in METRICS_WS_OPEN */
	/* interact (SK_INTERACT): the process, the credential's expiry, whether
	 * attach came, when a frame last went out */
	int interact;
	char process[65];
	int64_t expires_ms;
	int attached;
	int64_t last_out_ms;
	/* a close waiting for the messages queued before it (wslay sends
	 * control frames first: the Error frame must go out before) */
	uint16_t close_code;
	char close_reason[124];
	int cmd_counted;	    /* its exec job is counted in METRICS_WS_RUNNING */
	struct conn *prev, *next;   /* every live connection */
	struct conn *aprev, *anext; /* connections with a job */
	int active;
};

static struct {
	const struct config *cfg;
	struct stream_worker w;
	int ep;
	int lfd; /* our own copy of the listening socket; -1 once draining */
	struct conn *conns, *actives, *zombies;
	int nconns, njobs;
	int draining;
	int64_t drain_deadline_ms; /* running commands are stopped then */
	const struct route *exec_route;
} L = { .ep = -1, .lfd = -1 };

static char tag_listen, tag_event;

static void service(struct conn *c);
static void conn_close(struct conn *c, const char *why);

/* --- small helpers --------------------------------------------------------- */

static void set_events(struct conn *c, uint32_t ev)
{
	struct epoll_event e = { .events = ev, .data.ptr = c };

	if (c->dead || ev == c->events)
		return;
	if (epoll_ctl(L.ep, EPOLL_CTL_MOD, c->fd, &e) < 0)
		log_warn("epoll_ctl MOD fd %d: %s", c->fd, strerror(errno));
	c->events = ev;
}

static void set_state(struct conn *c, enum conn_state s)
{
	c->state = s;
	c->since_ms = mono_ms();
}

/* CS_LINGER: reads and drops what the peer still sends. 1 when some bytes
 * came, 0 when none were waiting, -1 at the peer's end or an error. */
static int linger_drain(struct conn *c)
{
	char tmp[4096];
	ssize_t n;
	int got = 0;

	while ((n = recv(c->fd, tmp, sizeof(tmp), 0)) > 0)
		got = 1;
	if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		return -1;
	if (got)
		c->linger_rx_ms = mono_ms();
	return got;
}

/* Our close frame is out and the peer's has not come: from here on the
 * peer's bytes are read and dropped until it ends (or the linger bound).
 * Our side is shut for writing at once, unless our close refused a message
 * over the limit (1009): the peer is then still sending it, and nginx ends
 * the whole tunnel on our end of it; its close with the peer's bytes unread
 * resets the connection, and the peer never reads the close frame (it saw
 * 1006). So after a 1009 the shutdown waits until the peer has been quiet
 * for STREAM_LINGER_QUIET_MS (tick). */
static void linger_enter(struct conn *c)
{
	int cut = c->ws && wslay_event_get_status_code_sent(c->ws) == 1009;

	set_state(c, CS_LINGER);
	c->linger_rx_ms = mono_ms();
	c->half_closed = 0;
	if (linger_drain(c) < 0) {
		conn_close(c, "closed");
		return;
	}
	if (!cut) {
		shutdown(c->fd, SHUT_WR);
		c->half_closed = 1;
	}
}

static void active_add(struct conn *c)
{
	if (c->active)
		return;
	c->active = 1;
	c->aprev = NULL;
	c->anext = L.actives;
	if (L.actives)
		L.actives->aprev = c;
	L.actives = c;
	L.njobs++;
}

static void active_del(struct conn *c)
{
	if (!c->active)
		return;
	c->active = 0;
	if (c->aprev)
		c->aprev->anext = c->anext;
	else
		L.actives = c->anext;
	if (c->anext)
		c->anext->aprev = c->aprev;
	L.njobs--;
}

/* Drops the connection's job: stops its command if still running. */
/* The connection's command is over (or dropped): no longer running. */
static void cmd_uncount(struct conn *c)
{
	if (c->cmd_counted) {
		c->cmd_counted = 0;
		metrics_gauge_add(METRICS_WS_RUNNING, -1);
	}
}

static void drop_job(struct conn *c)
{
	cmd_uncount(c);
	if (!c->job)
		return;
	stream_job_stop(c->job);
	stream_job_release(c->job);
	c->job = NULL;
	active_del(c);
}

/* Queues a text message; owned by the caller. */
static void queue_text(struct conn *c, const char *data, size_t len)
{
	struct wslay_event_msg m = { WSLAY_TEXT_FRAME, (const uint8_t *)data, len };

	if (c->ws && wslay_event_queue_msg(c->ws, &m) != 0)
		log_debug("%s: message dropped (closing)", c->rid);
}

static void queue_json(struct conn *c, json_object *o)
{
	size_t len = 0;
	const char *s = json_object_to_json_string_length(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);

	if (s)
		queue_text(c, s, len);
	json_object_put(o);
}

static void send_error(struct conn *c, const char *msg)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "type", json_object_new_string("error"));
	json_object_object_add(o, "message", json_object_new_string(msg));
	queue_json(c, o);
}

/* Queues a close frame (reason < 123 bytes) after the messages queued so
 * far, and stops handling messages. */
static void queue_close(struct conn *c, uint16_t code, const char *reason)
{
	size_t n = strlen(reason);

	if (n > 120)
		n = 120;
	if (c->ws && wslay_event_get_queued_msg_count(c->ws) > 0) {
		/* service() queues it once they are out */
		c->close_code = code;
		memcpy(c->close_reason, reason, n);
		c->close_reason[n] = '\0';
	} else if (c->ws) {
		wslay_event_queue_close(c->ws, code, (const uint8_t *)reason, n);
	}
	if (c->state != CS_LINGER)
		set_state(c, CS_CLOSING);
	log_info("%s close %u %s", c->rid, (unsigned)code, reason);
}

/* interact: the terminal Error frame, then the close (the document: a
 * close reason holds at most 123 bytes, the frame says it all). */
static void interact_fail(struct conn *c, const char *code, uint16_t close_code, const char *msg)
{
	json_object *o = json_object_new_object();

	if (c->state == CS_CLOSING || c->state == CS_LINGER)
		return;
	drop_job(c);
	json_object_object_add(o, "code", json_object_new_string(code));
	json_object_object_add(o, "message", json_object_new_string(msg));
	json_object_object_add(o, "details", json_object_new_array());
	queue_json(c, o);
	queue_close(c, close_code, code);
}

/* --- wslay callbacks -------------------------------------------------------- */

static ssize_t ws_recv(wslay_event_context_ptr ctx, uint8_t *data, size_t len, int flags,
		       void *user)
{
	struct conn *c = user;
	ssize_t n;

	(void)flags;
	if (c->pre_off < c->pre.len) {
		size_t k = c->pre.len - c->pre_off;
		if (k > len)
			k = len;
		memcpy(data, c->pre.data + c->pre_off, k);
		c->pre_off += k;
		if (c->pre_off == c->pre.len) {
			buf_free(&c->pre);
			c->pre_off = 0;
		}
		return (ssize_t)k;
	}
	n = recv(c->fd, data, len, 0);
	if (n > 0)
		return n;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
	else
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE); /* EOF or error */
	return -1;
}

static ssize_t ws_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
		       void *user)
{
	struct conn *c = user;
	ssize_t n;

	(void)flags;
	n = send(c->fd, data, len, MSG_NOSIGNAL);
	if (n > 0) {
		c->blocked_since_ms = 0;
		return n;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
		if (!c->blocked_since_ms)
			c->blocked_since_ms = mono_ms();
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
	} else {
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	}
	return -1;
}

static void handle_exec(struct conn *c, json_object *msg)
{
	json_object *in = NULL, *issues = NULL;
	struct stream_job *j;
	struct sp_err e;

	sp_err_clear(&e);
	if (L.draining) {
		send_error(c, "The server is shutting down; reconnect");
		return;
	}
	if (c->job) {
		send_error(c, "A command is already running");
		return;
	}
	if (L.njobs >= STREAM_MAX_JOBS) {
		send_error(c, "Too many commands running on this server; try again");
		return;
	}
	/* The same table-driven validation as POST /api/sandbox.exec. */
	in = json_object_new_object();
	json_object_object_foreach(msg, k, v)
	{
		if (strcmp(k, "type") != 0)
			json_object_object_add(in, k, json_object_get(v));
	}
	json_object_object_add(in, "sandboxId", json_object_new_string(c->sandbox_id));
	if (!L.exec_route || route_validate(L.exec_route, in, 0, &e, &issues) < 0) {
		send_error(c, e.msg[0] ? e.msg : "Invalid exec message");
		json_object_put(in);
		json_object_put(issues);
		return;
	}
	j = stream_job_new(&L.w, JOB_EXEC, c->org, c->sandbox_id, c->rid, in);
	if (!j || stream_job_start(j) < 0) {
		if (j)
			stream_job_release(j);
		send_error(c, "Could not start the command; try again");
		return;
	}
	c->job = j;
	c->cmd_counted = 1;
	metrics_gauge_add(METRICS_WS_RUNNING, 1);
	active_add(c);
	log_info("%s sandbox %s: exec", c->rid, c->sandbox_id);
}

/* An int64 cursor: a JSON integer >= 0 or a string of digits. */
static int cursor_read(json_object *v, int64_t *out)
{
	long long x;

	if (json_object_is_type(v, json_type_int)) {
		*out = json_object_get_int64(v);
		return *out >= 0 ? 0 : -1;
	}
	if (json_object_is_type(v, json_type_string) &&
	    parse_ll(json_object_get_string(v), 0, INT64_MAX, &x) == 0) {
		*out = x;
		return 0;
	}
	return -1;
}

/* One TerminalSize dimension into *out: an integer; bounded, 1..65535,
 * else clamped into it. 0 fine, -1 out of the bounded range, -2 not one. */
static int dim_read(json_object *sz, const char *k, int bounded, unsigned *out)
{
	json_object *v;
	int64_t n = 0;

	if (json_object_object_get_ex(sz, k, &v) && v) {
		if (!json_object_is_type(v, json_type_int))
			return -2;
		n = json_object_get_int64(v);
	}
	if (bounded && (n < 1 || n > 65535))
		return -1;
	*out = n < 1 ? 1 : n > 65535 ? 65535 : (unsigned)n;
	return 0;
}

static void interact_attach(struct conn *c, json_object *a)
{
	json_object *name = NULL, *from = NULL;
	char want[96];
	int64_t at = 0;
	struct stream_job *j;

	json_object_object_foreach(a, k, v)
	{
		(void)v;
		if (strcmp(k, "name") != 0 && strcmp(k, "resumeFrom") != 0) {
			interact_fail(c, "invalidArgument", 1007, "attach: unknown member");
			return;
		}
	}
	if (!json_object_object_get_ex(a, "name", &name) ||
	    !json_object_is_type(name, json_type_string)) {
		interact_fail(c, "invalidArgument", 1007,
			      "attach.name: required (processes/{process})");
		return;
	}
	if (json_object_object_get_ex(a, "resumeFrom", &from) && from &&
	    cursor_read(from, &at) < 0) {
		interact_fail(c, "invalidArgument", 1007,
			      "attach.resumeFrom: an int64 stream sequence, 0 or more");
		return;
	}
	snprintf(want, sizeof(want), "processes/%s", c->process);
	if (strcmp(json_object_get_string(name), want) != 0) {
		interact_fail(c, "invalidArgument", 1008,
			      "attach.name: must be the path's process (processes/{process})");
		return;
	}
	if (!c->process[0]) {
		interact_fail(c, "notFound", 1008, "No such process in this sandbox");
		return;
	}
	if (L.njobs >= STREAM_MAX_JOBS) {
		interact_fail(c, "resourceExhausted", 1008,
			      "Too many interactions on this server; try again");
		return;
	}
	j = stream_job_new(&L.w, JOB_INTERACT, c->org, c->sandbox_id, c->rid, NULL);
	if (j) {
		str_copy(j->process, sizeof(j->process), c->process);
		j->from = at;
	}
	if (!j || stream_job_start(j) < 0) {
		if (j)
			stream_job_release(j);
		interact_fail(c, "unavailable", 1011, "Could not start the interaction; try again");
		return;
	}
	c->job = j;
	c->attached = 1;
	c->last_out_ms = mono_ms();
	active_add(c);
	log_info("%s sandbox %s: interact %s from %lld", c->rid, c->sandbox_id, c->process,
		 (long long)at);
}

/* One InteractRequest frame: exactly one of attach, closeStdin, resize,
 * stdin (its schema's oneOf), attach first and only once. */
static void handle_interact(struct conn *c, json_object *o)
{
	const char *key = NULL;
	json_object *v = NULL;
	int n = 0;
	char hdr[48];

	json_object_object_foreach(o, k, val)
	{
		key = k;
		v = val;
		n++;
	}
	if (n != 1 || (strcmp(key, "attach") != 0 && strcmp(key, "closeStdin") != 0 &&
		       strcmp(key, "resize") != 0 && strcmp(key, "stdin") != 0)) {
		interact_fail(c, "invalidArgument", 1007,
			      "A frame is one InteractRequest: exactly one of attach, stdin, "
			      "closeStdin, resize");
		return;
	}
	if (strcmp(key, "attach") == 0) {
		if (!v || !json_object_is_type(v, json_type_object)) {
			interact_fail(c, "invalidArgument", 1007, "attach: an object");
			return;
		}
		if (c->attached) {
			interact_fail(c, "invalidArgument", 1008, "attach was already sent");
			return;
		}
		interact_attach(c, v);
		return;
	}
	if (!c->attached) {
		interact_fail(c, "invalidArgument", 1008, "The first frame must be attach");
		return;
	}
	if (!c->job)
		return; /* the interaction is ending: nothing more goes in */
	if (strcmp(key, "closeStdin") == 0) {
		if (!v || !json_object_is_type(v, json_type_boolean)) {
			interact_fail(c, "invalidArgument", 1007, "closeStdin: a boolean");
			return;
		}
		if (json_object_get_boolean(v) && stream_job_input(c->job, "E\n", 2) < 0)
			interact_fail(c, "internal", 1011, "out of memory");
		return;
	}
	if (strcmp(key, "resize") == 0) {
		json_object *b = NULL;
		unsigned rows = 0, cols = 0;
		int bounded = 0, r1, r2;
		if (!v || !json_object_is_type(v, json_type_object)) {
			interact_fail(c, "invalidArgument", 1007, "resize: a TerminalSize object");
			return;
		}
		json_object_object_foreach(v, k2, v2)
		{
			(void)v2;
			if (strcmp(k2, "rows") != 0 && strcmp(k2, "cols") != 0 &&
			    strcmp(k2, "bounded") != 0) {
				interact_fail(c, "invalidArgument", 1007, "resize: unknown member");
				return;
			}
		}
		if (json_object_object_get_ex(v, "bounded", &b) && b) {
			if (!json_object_is_type(b, json_type_boolean)) {
				interact_fail(c, "invalidArgument", 1007,
					      "resize.bounded: a boolean");
				return;
			}
			bounded = json_object_get_boolean(b);
		}
		r1 = dim_read(v, "rows", bounded, &rows);
		r2 = dim_read(v, "cols", bounded, &cols);
		if (r1 == -2 || r2 == -2) {
			interact_fail(c, "invalidArgument", 1007,
				      "resize: rows and cols are integers");
			return;
		}
		if (r1 < 0 || r2 < 0) {
			interact_fail(c, "invalidArgument", 1008,
				      "resize: rows and cols 1 to 65535 (bounded)");
			return;
		}
		n = snprintf(hdr, sizeof(hdr), "R %u %u\n", rows, cols);
		if (stream_job_input(c->job, hdr, (size_t)n) < 0)
			interact_fail(c, "internal", 1011, "out of memory");
		return;
	}
	/* stdin: base64 (the schema's format: byte), in commands of at most
	 * 64 KiB */
	{
		const char *t;
		size_t tl, got = 0;
		unsigned char *bin;
		if (!v || !json_object_is_type(v, json_type_string)) {
			interact_fail(c, "invalidArgument", 1007, "stdin: base64 bytes");
			return;
		}
		t = json_object_get_string(v);
		tl = (size_t)json_object_get_string_len(v);
		bin = malloc(tl / 4 * 3 + 4);
		if (!bin) {
			interact_fail(c, "internal", 1011, "out of memory");
			return;
		}
		if (sodium_base642bin(bin, tl / 4 * 3 + 4, t, tl, NULL, &got, NULL,
				      sodium_base64_VARIANT_ORIGINAL) != 0) {
			free(bin);
			interact_fail(c, "invalidArgument", 1007, "stdin: not base64");
			return;
		}
		for (size_t off = 0; off < got;) {
			size_t piece = got - off > 65536 ? 65536 : got - off;
			n = snprintf(hdr, sizeof(hdr), "I %zu\n", piece);
			if (stream_job_input(c->job, hdr, (size_t)n) < 0 ||
			    stream_job_input(c->job, (const char *)bin + off, piece) < 0) {
				interact_fail(c, "internal", 1011, "out of memory");
				break;
			}
			off += piece;
		}
		free(bin);
	}
}

static void handle_text(struct conn *c, const char *data, size_t len)
{
	struct json_tokener *tok = json_tokener_new_ex(JSON_MAX_DEPTH);
	json_object *o = NULL, *t;
	const char *type;
	size_t tlen;
	char msg[160];

	if (!tok) {
		send_error(c, "Out of memory");
		return;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, data, (int)len);
	if (c->interact) {
		if (!o || json_tokener_get_error(tok) != json_tokener_success ||
		    json_tokener_get_parse_end(tok) != len ||
		    !json_object_is_type(o, json_type_object))
			interact_fail(c, "invalidArgument", 1007,
				      "A frame must be one InteractRequest JSON object");
		else
			handle_interact(c, o);
		goto out;
	}
	if (!o || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len) {
		enum json_tokener_error je = json_tokener_get_error(tok);
		snprintf(msg, sizeof(msg), "Invalid JSON: %s",
			 je == json_tokener_success ? "trailing data"
						    : json_tokener_error_desc(je));
		send_error(c, msg);
		goto out;
	}
	if (!json_object_is_type(o, json_type_object)) {
		send_error(c, "A message must be a JSON object with a type");
		goto out;
	}
	if (!json_object_object_get_ex(o, "type", &t) ||
	    !json_object_is_type(t, json_type_string)) {
		send_error(c, "type: expected a string (exec)");
		goto out;
	}
	type = json_object_get_string(t);
	tlen = (size_t)json_object_get_string_len(t);
	if (tlen == 4 && memcmp(type, "exec", 4) == 0) {
		handle_exec(c, o);
	} else {
		/* echo the type back only when short and printable ASCII */
		int show = tlen > 0 && tlen <= 40;
		for (size_t i = 0; show && i < tlen; i++)
			show = type[i] >= 0x20 && type[i] < 0x7f;
		snprintf(msg, sizeof(msg), "Unknown message type%s%s%s (expected exec)",
			 show ? " '" : "", show ? type : "", show ? "'" : "");
		send_error(c, msg);
	}
out:
	json_object_put(o);
	json_tokener_free(tok);
}

static void ws_on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
		      void *user)
{
	struct conn *c = user;

	(void)ctx;
	if (c->state != CS_OPEN)
		return;
	if (arg->opcode == WSLAY_TEXT_FRAME)
		handle_text(c, (const char *)arg->msg, arg->msg_length);
	else if (arg->opcode == WSLAY_BINARY_FRAME && c->interact)
		interact_fail(c, "invalidArgument", 1003, "Every frame is text (JSON)");
	else if (arg->opcode == WSLAY_BINARY_FRAME)
		send_error(c, "Binary messages are not supported; send JSON text");
	/* ping → pong and close are answered by wslay itself */
}

/* interact: a frame over the limit is refused with its Error frame
 * before wslay buffers it (wslay's own close would carry none). */
static void ws_on_frame_start(wslay_event_context_ptr ctx,
			      const struct wslay_event_on_frame_recv_start_arg *arg, void *user)
{
	struct conn *c = user;

	(void)ctx;
	if (c->interact && c->state == CS_OPEN && !(arg->opcode & 0x8) &&
	    arg->payload_length > (uint64_t)L.cfg->stream_max_message)
		interact_fail(c, "invalidArgument", 1009, "The frame is over the frame limit");
}

static const struct wslay_event_callbacks ws_callbacks = {
	ws_recv, ws_send, NULL, ws_on_frame_start, NULL, NULL, ws_on_msg,
};

/* --- connections ------------------------------------------------------------ */

static void conn_close(struct conn *c, const char *why)
{
	if (c->dead)
		return;
	c->dead = 1;
	if (why)
		log_debug("%s connection closed: %s", c->rid, why);
	epoll_ctl(L.ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	drop_job(c);
	if (c->ws)
		wslay_event_context_free(c->ws);
	c->ws = NULL;
	if (c->ws_counted) {
		c->ws_counted = 0;
		metrics_gauge_add(METRICS_WS_OPEN, -1);
	}
	buf_free(&c->head);
	buf_free(&c->out);
	buf_free(&c->pre);
	if (c->prev)
		c->prev->next = c->next;
	else
		L.conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	L.nconns--;
	c->next = L.zombies;
	L.zombies = c;
}

static void free_zombies(void)
{
	while (L.zombies) {
		struct conn *c = L.zombies;
		L.zombies = c->next;
		free(c);
	}
}

static void accept_all(void)
{
	for (;;) {
		struct epoll_event e;
		struct conn *c;
		int fd = accept4(L.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				log_warn("accept: %s", strerror(errno));
			return;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			log_error("out of memory for a connection");
			close(fd);
			continue;
		}
		c->fd = fd;
		buf_init(&c->head, STREAM_HTTP_MAX);
		buf_init(&c->out, 1024);
		buf_init(&c->pre, STREAM_HTTP_MAX);
		str_copy(c->rid, sizeof(c->rid), "-");
		set_state(c, CS_HTTP);
		c->events = EPOLLIN | EPOLLRDHUP;
		e.events = c->events;
		e.data.ptr = c;
		if (epoll_ctl(L.ep, EPOLL_CTL_ADD, fd, &e) < 0) {
			log_warn("epoll_ctl ADD: %s", strerror(errno));
			close(fd);
			free(c);
			continue;
		}
		c->next = L.conns;
		if (L.conns)
			L.conns->prev = c;
		L.conns = c;
		L.nconns++;
	}
}

/* An HTTP answer instead of an upgrade; the connection closes once sent. */
static void http_reply(struct conn *c, int status, const char *why)
{
	const char *text = status == 404   ? "Not Found"
			   : status == 405 ? "Method Not Allowed"
			   : status == 426 ? "Upgrade Required"
			   : status == 431 ? "Request Header Fields Too Large"
					   : "Bad Request";
	json_object *o = json_object_new_object();
	const char *body;

	json_object_object_add(o, "message", json_object_new_string(why));
	if (c->interact) {
		json_object_object_add(o, "code",
				       json_object_new_string(status == 404   ? "notFound"
							      : status == 405 ? "unimplemented"
									      : "invalidArgument"));
		json_object_object_add(o, "details", json_object_new_array());
	} else {
		json_object_object_add(o, "code",
				       json_object_new_string(status == 404   ? "NOT_FOUND"
							      : status == 405 ? "METHOD_NOT_ALLOWED"
									      : "BAD_REQUEST"));
	}
	body = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	/* out is sized for this answer: a why of any length goes out whole */
	buf_free(&c->out);
	buf_init(&c->out, strlen(body) + 512);
	if (buf_printf(&c->out,
		       "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		       "Connection: close\r\n%s\r\n%s",
		       status, text, strlen(body),
		       status == 426 ? "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n" : "",
		       body) < 0) {
		json_object_put(o);
		conn_close(c, "out of memory");
		return;
	}
	json_object_put(o);
	set_state(c, CS_HTTP_REPLY);
}

/* GET /metrics: the gauges of every worker of this daemon, labeled with
 * the socket's name; the connection closes once sent. */
static void metrics_reply(struct conn *c)
{
	struct buf m, labeled;
	char inst[128];

	buf_init(&m, 64 * 1024);
	buf_init(&labeled, 96 * 1024);
	metrics_instance_name(L.cfg->stream_listen, inst, sizeof(inst));
	if (metrics_render_stream(&m) < 0 ||
	    metrics_add_label(m.data ? m.data : "", m.len, "sandpit_instance", inst, &labeled) <
		    0) {
		buf_free(&m);
		buf_free(&labeled);
		http_reply(c, 400, "metrics too large");
		return;
	}
	/* out (1 KiB for the handshake) is sized for this answer: the text
	 * grows with the gauges and must go out whole */
	buf_free(&c->out);
	buf_init(&c->out, labeled.len + 512);
	if (buf_printf(
		    &c->out,
		    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
		    "Content-Length: %zu\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
		    labeled.len) < 0 ||
	    buf_append(&c->out, labeled.data ? labeled.data : "", labeled.len) < 0) {
		buf_free(&m);
		buf_free(&labeled);
		conn_close(c, "out of memory");
		return;
	}
	buf_free(&m);
	buf_free(&labeled);
	set_state(c, CS_HTTP_REPLY);
}

/* The upgrade is accepted: 101, then the checks in the order the close
 * codes promise (4000 sandboxId, 4001 identity, 4003 permission and
 * sandbox), the last one in a thread. */
/* interact's upgrade: 101 (echoing sandboxes.v1 only), then the checks
 * whose refusals the document gives close codes: no subprotocol 1002, no
 * identity or permission 1008; the attach frame comes next. */
static void upgrade_interact(struct conn *c, const struct stream_upgrade *u)
{
	if (buf_printf(&c->out,
		       "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
		       "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s\r\n",
		       u->accept,
		       u->subproto ? "Sec-WebSocket-Protocol: sandboxes.v1\r\n" : "") < 0 ||
	    wslay_event_context_server_init(&c->ws, &ws_callbacks, c) != 0) {
		conn_close(c, "out of memory");
		return;
	}
	wslay_event_config_set_max_recv_msg_length(c->ws, (uint64_t)L.cfg->stream_max_message);
	c->ws_counted = 1;
	metrics_gauge_add(METRICS_WS_OPEN, 1);
	c->last_ping_ms = mono_ms();
	c->last_out_ms = mono_ms();
	str_copy(c->sandbox_id, sizeof(c->sandbox_id), u->sandbox_id);
	str_copy(c->org, sizeof(c->org), u->org);
	str_copy(c->process, sizeof(c->process), u->process);
	c->expires_ms = u->expires_ms;
	set_state(c, CS_OPEN);
	if (L.draining) {
		interact_fail(c, "unavailable", 1011, "The server is shutting down; reconnect");
		return;
	}
	if (!u->subproto) {
		interact_fail(c, "invalidArgument", 1002,
			      "No subprotocol negotiated: offer sandboxes.v1");
		return;
	}
	if (!u->org[0]) {
		interact_fail(c, "unauthenticated", 1008, "Unauthenticated");
		return;
	}
	if (!route_has_perm(u->perms, "sandboxesExec")) {
		interact_fail(c, "permissionDenied", 1008,
			      "This endpoint credential lacks the sandboxesExec permission");
		return;
	}
}

static void upgrade(struct conn *c, const struct stream_upgrade *u)
{
	struct stream_job *j;

	if (u->kind == SK_INTERACT) {
		upgrade_interact(c, u);
		return;
	}

	if (buf_printf(&c->out,
		       "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
		       "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		       u->accept) < 0 ||
	    wslay_event_context_server_init(&c->ws, &ws_callbacks, c) != 0) {
		conn_close(c, "out of memory");
		return;
	}
	wslay_event_config_set_max_recv_msg_length(c->ws, (uint64_t)L.cfg->stream_max_message);
	c->ws_counted = 1;
	metrics_gauge_add(METRICS_WS_OPEN, 1);
	c->last_ping_ms = mono_ms();
	str_copy(c->sandbox_id, sizeof(c->sandbox_id), u->sandbox_id);
	str_copy(c->org, sizeof(c->org), u->org);
	if (L.draining) {
		queue_close(c, WSLAY_CODE_GOING_AWAY, "The server is shutting down; reconnect");
		return;
	}
	if (u->sid == SID_MISSING) {
		queue_close(c, 4000, "sandboxId is required");
		return;
	}
	if (!u->org[0]) {
		queue_close(c, 4001, "Unauthenticated");
		return;
	}
	if (!route_has_perm(u->perms, "sandbox:create")) {
		queue_close(c, 4003, "Your role lacks the sandbox:create permission");
		return;
	}
	if (u->sid == SID_MALFORMED) {
		queue_close(c, 4003, "Sandbox not found");
		return;
	}
	j = stream_job_new(&L.w, JOB_CHECK, c->org, c->sandbox_id, c->rid, NULL);
	if (!j || stream_job_start(j) < 0) {
		if (j)
			stream_job_release(j);
		queue_close(c, WSLAY_CODE_INTERNAL_SERVER_ERROR, "Service unavailable");
		return;
	}
	c->job = j;
	active_add(c);
	set_state(c, CS_CHECK);
}

static void read_head(struct conn *c)
{
	char tmp[4096];
	const char *end;
	struct stream_upgrade u;

	for (;;) {
		ssize_t n = recv(c->fd, tmp, sizeof(tmp), 0);
		if (n == 0) {
			conn_close(c, "EOF before the request head");
			return;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return;
			conn_close(c, "read error");
			return;
		}
		if (buf_append(&c->head, tmp, (size_t)n) < 0) {
			http_reply(c, 431, "Request head too large");
			break;
		}
		end = memmem(c->head.data, c->head.len, "\r\n\r\n", 4);
		if (!end)
			continue;
		end += 4;
		/* pre and head have the same cap: what followed the head fits */
		if ((size_t)(end - c->head.data) < c->head.len &&
		    buf_append(&c->pre, end, c->head.len - (size_t)(end - c->head.data)) < 0) {
			conn_close(c, "out of memory");
			return;
		}
		stream_http_parse(c->head.data, (size_t)(end - c->head.data), &u);
		c->interact = u.kind == SK_INTERACT;
		if (u.request_id[0])
			str_copy(c->rid, sizeof(c->rid), u.request_id);
		buf_free(&c->head);
		if (u.status == 200)
			metrics_reply(c);
		else if (u.status != 0)
			http_reply(c, u.status, u.why);
		else
			upgrade(c, &u);
		break;
	}
	service(c);
}

/* The job has finished and its queue is empty. */
static void job_finished(struct conn *c)
{
	struct stream_job *j = c->job;

	c->job = NULL;
	active_del(c);
	if (j->kind == JOB_CHECK && c->state == CS_CHECK) {
		if (j->ok) {
			json_object *o = json_object_new_object();
			json_object_object_add(o, "type", json_object_new_string("ready"));
			json_object_object_add(o, "sandboxId",
					       json_object_new_string(c->sandbox_id));
			queue_json(c, o);
			set_state(c, CS_OPEN);
			log_info("%s sandbox %s: ready", c->rid, c->sandbox_id);
		} else if (j->code == SP_NOT_FOUND || j->code == SP_PRECONDITION ||
			   j->code == SP_FORBIDDEN || j->code == SP_BAD_REQUEST) {
			queue_close(c, 4003, j->msg[0] ? j->msg : "Not authorized");
		} else if (j->code == SP_UNAUTHORIZED) {
			queue_close(c, 4001, "Unauthenticated");
		} else {
			queue_close(c, WSLAY_CODE_INTERNAL_SERVER_ERROR, "Service unavailable");
		}
	} else if (j->kind == JOB_INTERACT) {
		int code;
		char reason[124];
		pthread_mutex_lock(&j->mu);
		code = j->close_code;
		str_copy(reason, sizeof(reason), j->close_reason);
		pthread_mutex_unlock(&j->mu);
		log_info("%s sandbox %s: interact %s done (%d)", c->rid, c->sandbox_id, c->process,
			 code);
		if (code && c->state == CS_OPEN)
			queue_close(c, (uint16_t)code, reason);
	} else if (j->kind == JOB_EXEC) {
		cmd_uncount(c);
		log_info("%s sandbox %s: exec done", c->rid, c->sandbox_id);
		if (L.draining && c->state == CS_OPEN)
			queue_close(c, WSLAY_CODE_GOING_AWAY,
				    "The server is shutting down; reconnect");
	}
	stream_job_release(j);
}

/* Moves queued output from the job into wslay while wslay holds little. */
static void pump(struct conn *c)
{
	struct stream_job *j = c->job;
	int finished;

	if (!j)
		return;
	pthread_mutex_lock(&j->mu);
	while (j->head && (!c->ws || wslay_event_get_queued_msg_length(c->ws) < STREAM_WS_LOW)) {
		struct stream_msg *m = j->head;
		j->head = m->next;
		if (!j->head)
			j->tail = NULL;
		j->qbytes -= m->len;
		queue_text(c, m->data, m->len);
		c->last_out_ms = mono_ms();
		free(m);
	}
	if (j->qbytes <= STREAM_QUEUE_CAP)
		pthread_cond_broadcast(&j->cv);
	finished = j->done && !j->head;
	pthread_mutex_unlock(&j->mu);
	if (finished)
		job_finished(c);
}

/* Sends what can be sent, then sets the epoll interest to match. */
static void service(struct conn *c)
{
	uint32_t ev = EPOLLRDHUP;

	for (int round = 0; round < 64 && !c->dead; round++) {
		size_t before;
		/* raw HTTP bytes first */
		while (c->out_off < c->out.len) {
			ssize_t n = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off,
					 MSG_NOSIGNAL);
			if (n > 0) {
				c->out_off += (size_t)n;
				c->blocked_since_ms = 0;
				continue;
			}
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
				if (!c->blocked_since_ms)
					c->blocked_since_ms = mono_ms();
				break;
			}
			conn_close(c, "write error");
			return;
		}
		if (c->out_off < c->out.len)
			break;
		if (c->out.len) {
			buf_free(&c->out);
			c->out_off = 0;
		}
		if (c->state == CS_HTTP_REPLY) {
			conn_close(c, "HTTP answer sent");
			return;
		}
		if (!c->ws)
			break;
		pump(c);
		if (c->dead)
			return;
		before = wslay_event_get_queued_msg_length(c->ws);
		if (wslay_event_want_write(c->ws) && wslay_event_send(c->ws) != 0) {
			conn_close(c, "write error");
			return;
		}
		if (c->close_code && wslay_event_get_queued_msg_count(c->ws) == 0) {
			wslay_event_queue_close(c->ws, c->close_code,
						(const uint8_t *)c->close_reason,
						strlen(c->close_reason));
			c->close_code = 0;
			if (wslay_event_want_write(c->ws) && wslay_event_send(c->ws) != 0) {
				conn_close(c, "write error");
				return;
			}
		}
		/* go round again only while wslay drained and the job has more */
		if (!c->job || wslay_event_get_queued_msg_length(c->ws) >= before ||
		    wslay_event_want_write(c->ws))
			break;
	}
	if (c->dead)
		return;
	if (c->ws && !wslay_event_want_write(c->ws) && c->out_off >= c->out.len) {
		if (wslay_event_get_close_sent(c->ws)) {
			if (wslay_event_get_close_received(c->ws)) {
				conn_close(c, "closed");
				return;
			}
			if (c->state != CS_LINGER) {
				linger_enter(c);
				if (c->dead)
					return;
			}
		} else if (!wslay_event_want_read(c->ws) && c->state == CS_OPEN) {
			conn_close(c, "wslay is done");
			return;
		}
	}
	if (c->out_off < c->out.len || (c->ws && wslay_event_want_write(c->ws)))
		ev |= EPOLLOUT;
	switch (c->state) {
	case CS_HTTP:
	case CS_LINGER:
		ev |= EPOLLIN;
		break;
	case CS_OPEN:
	case CS_CLOSING:
		if (c->ws && wslay_event_want_read(c->ws) &&
		    wslay_event_get_queued_msg_length(c->ws) < STREAM_WS_READ_PAUSE &&
		    (!c->job || c->job->kind != JOB_INTERACT ||
		     stream_job_input_len(c->job) < STREAM_INPUT_CAP))
			ev |= EPOLLIN;
		break;
	default:
		break;
	}
	set_events(c, ev);
}

static void on_readable(struct conn *c, uint32_t events)
{
	switch (c->state) {
	case CS_HTTP:
		read_head(c);
		return;
	case CS_OPEN:
	case CS_CLOSING:
		if (!c->ws || !wslay_event_want_read(c->ws)) {
			if (events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))
				conn_close(c, "peer gone");
			return;
		}
		if (wslay_event_recv(c->ws) != 0) {
			conn_close(c, "peer gone");
			return;
		}
		service(c);
		return;
	case CS_LINGER:
		if (linger_drain(c) < 0)
			conn_close(c, "closed");
		return;
	default:
		/* CHECK, HTTP_REPLY: not reading; a hang-up ends the connection */
		if (events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))
			conn_close(c, "peer gone");
		return;
	}
}

static void on_event(struct conn *c, uint32_t events)
{
	if (c->dead)
		return;
	if (events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR)) {
		on_readable(c, events);
		if (c->dead)
			return;
	}
	if (events & EPOLLOUT)
		service(c);
}

/* The eventfd fired: some jobs have output or are done. */
static void on_jobs(void)
{
	uint64_t v;
	struct conn *c, *next;

	while (read(L.w.efd, &v, sizeof(v)) > 0)
		;
	for (c = L.actives; c; c = next) {
		enum conn_state before = c->state;
		next = c->anext;
		service(c);
		/* frames that came with the request head: no epoll event will say so */
		if (!c->dead && before == CS_CHECK && c->state == CS_OPEN && c->pre.len)
			on_readable(c, EPOLLIN);
	}
}

static void begin_drain(void)
{
	struct conn *c, *next;

	L.draining = 1;
	L.drain_deadline_ms = mono_ms() + (int64_t)(L.cfg->drain_timeout_s < STREAM_DRAIN_S
							    ? L.cfg->drain_timeout_s
							    : STREAM_DRAIN_S) *
						  1000;
	if (L.lfd >= 0) {
		epoll_ctl(L.ep, EPOLL_CTL_DEL, L.lfd, NULL);
		close(L.lfd);
		L.lfd = -1;
	}
	log_info("draining %d connections (%d commands running)", L.nconns, L.njobs);
	for (c = L.conns; c; c = next) {
		next = c->next;
		if (c->state == CS_HTTP || c->state == CS_HTTP_REPLY) {
			conn_close(c, "shutting down");
		} else if (c->state == CS_CHECK) {
			drop_job(c);
			queue_close(c, WSLAY_CODE_GOING_AWAY,
				    "The server is shutting down; reconnect");
			service(c);
		} else if (c->state == CS_OPEN && c->interact) {
			/* the process is the helper's: it goes on; the client resumes */
			interact_fail(c, "unavailable", 1011,
				      "The server is shutting down; reconnect and resume");
			service(c);
		} else if (c->state == CS_OPEN && !c->job) {
			queue_close(c, WSLAY_CODE_GOING_AWAY,
				    "The server is shutting down; reconnect");
			service(c);
		}
	}
}

static void tick(int64_t now)
{
	static const uint8_t nothing[1];
	struct conn *c, *next;
	int64_t stuck = (int64_t)L.cfg->stream_stuck_timeout_s * 1000;

	for (c = L.conns; c; c = next) {
		next = c->next;
		if (c->blocked_since_ms && now - c->blocked_since_ms > stuck) {
			log_warn("%s sandbox %s: the reader took nothing for %d s: dropping the "
				 "connection%s",
				 c->rid, c->sandbox_id, L.cfg->stream_stuck_timeout_s,
				 c->job ? " and killing its command" : "");
			conn_close(c, "stuck reader");
			continue;
		}
		switch (c->state) {
		case CS_HTTP:
		case CS_HTTP_REPLY:
			if (now - c->since_ms > STREAM_HANDSHAKE_MS)
				conn_close(c, "no request head in time");
			break;
		case CS_CLOSING:
		case CS_LINGER:
			if (c->state == CS_LINGER && !c->half_closed &&
			    now - c->linger_rx_ms >= STREAM_LINGER_QUIET_MS) {
				shutdown(c->fd, SHUT_WR);
				c->half_closed = 1;
			}
			if (now - c->since_ms >
			    STREAM_CLOSE_LINGER_MS + (c->state == CS_CLOSING ? stuck : 0))
				conn_close(c, "close timed out");
			break;
		case CS_OPEN:
			if (c->interact && c->expires_ms && now_ms() >= c->expires_ms) {
				/* P4: the socket closes, the process goes on */
				interact_fail(c, "unauthenticated", 1008,
					      "The endpoint credential expired; get a fresh one, "
					      "reconnect and resume");
				service(c);
				break;
			}
			if (c->interact && !c->attached && now - c->since_ms > STREAM_ATTACH_MS) {
				interact_fail(c, "invalidArgument", 1008,
					      "No attach frame within 30 s");
				service(c);
				break;
			}
			if (c->interact && c->attached &&
			    now - c->last_out_ms >= STREAM_HEARTBEAT_MS) {
				queue_text(c, "{\"heartbeat\":{}}", 16);
				c->last_out_ms = now;
				service(c);
			}
			if (now - c->last_ping_ms >= STREAM_PING_MS && c->ws) {
				struct wslay_event_msg m = { WSLAY_PING, nothing, 0 };
				c->last_ping_ms = now;
				wslay_event_queue_msg(c->ws, &m);
				service(c);
			}
			break;
		default:
			break;
		}
		if (L.draining && !c->dead) {
			if (now >= L.drain_deadline_ms + STREAM_CLOSE_LINGER_MS) {
				conn_close(c, "drain deadline");
			} else if (now >= L.drain_deadline_ms && c->job) {
				/* the command's process tree is killed by its thread */
				drop_job(c);
				if (c->state == CS_OPEN || c->state == CS_CHECK) {
					queue_close(
						c, WSLAY_CODE_GOING_AWAY,
						"The server is shutting down; the command was stopped");
					service(c);
				}
			}
		}
	}
}

static int setup(const struct config *cfg, int listen_fd)
{
	struct epoll_event e;
	int flags, method_ok = 0;

	L.cfg = cfg;
	L.exec_route = route_find(handler_routes, "POST", "/api/sandbox.exec", &method_ok);
	if (!L.exec_route || !method_ok) {
		log_error("no POST /api/sandbox.exec route to validate exec messages against");
		return -1;
	}
	if (stream_worker_init(&L.w, cfg) < 0)
		return -1;
	L.w.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	L.ep = epoll_create1(EPOLL_CLOEXEC);
	/* our own descriptor: pm swaps listen_fd for a dead socket on stop */
	L.lfd = fcntl(listen_fd, F_DUPFD_CLOEXEC, 0);
	if (L.w.efd < 0 || L.ep < 0 || L.lfd < 0) {
		log_error("eventfd/epoll/dup: %s", strerror(errno));
		return -1;
	}
	flags = fcntl(L.lfd, F_GETFL);
	if (flags < 0 || fcntl(L.lfd, F_SETFL, flags | O_NONBLOCK) < 0) {
		log_error("fcntl O_NONBLOCK: %s", strerror(errno));
		return -1;
	}
	e.events = EPOLLIN | EPOLLEXCLUSIVE;
	e.data.ptr = &tag_listen;
	if (epoll_ctl(L.ep, EPOLL_CTL_ADD, L.lfd, &e) < 0) {
		log_error("epoll_ctl listen: %s", strerror(errno));
		return -1;
	}
	e.events = EPOLLIN;
	e.data.ptr = &tag_event;
	if (epoll_ctl(L.ep, EPOLL_CTL_ADD, L.w.efd, &e) < 0) {
		log_error("epoll_ctl eventfd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

void stream_loop_run(const struct config *cfg, int listen_fd)
{
	struct epoll_event evs[64];
	int64_t last_tick = 0;

	/* few malloc arenas: job threads come and go, their memory should not linger */
	mallopt(M_ARENA_MAX, 2);
	if (setup(cfg, listen_fd) < 0)
		goto out;
	log_info("worker ready: max message %d bytes, stuck timeout %d s", cfg->stream_max_message,
		 cfg->stream_stuck_timeout_s);
	for (;;) {
		int64_t now;
		int n;

		if (!L.draining && pm_worker_should_stop())
			begin_drain();
		if (L.draining && L.nconns == 0 && atomic_load(&L.w.threads) == 0)
			break;
		if (L.draining &&
		    mono_ms() > L.drain_deadline_ms + STREAM_CLOSE_LINGER_MS + 10000) {
			log_warn("%d command threads still running at the drain deadline; exiting",
				 atomic_load(&L.w.threads));
			break;
		}
		n = epoll_wait(L.ep, evs, 64, TICK_MS);
		if (n < 0 && errno != EINTR) {
			log_error("epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;
			if (p == &tag_listen) {
				if (!L.draining)
					accept_all();
			} else if (p == &tag_event) {
				on_jobs();
			} else {
				on_event(p, evs[i].events);
			}
		}
		now = mono_ms();
		if (now - last_tick >= TICK_MS) {
			last_tick = now;
			tick(now);
		}
		free_zombies();
	}
out:
	while (L.conns)
		conn_close(L.conns, "exit");
	free_zombies();
	if (atomic_load(&L.w.threads) == 0)
		stream_worker_cleanup(&L.w);
	if (L.lfd >= 0)
		close(L.lfd);
	if (L.ep >= 0)
		close(L.ep);
	if (L.w.efd > 0)
		close(L.w.efd);
}
