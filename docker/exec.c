/*
 * Exec endpoints: create, start (attached, demultiplexed), inspect. A start
 * runs on its own short-lived curl handle: Docker hijacks the connection
 * for the stream and closes it at the end, and the stream may last minutes,
 * so it must never touch the client's kept-alive handle or its timeout. A
 * start with input for the process's stdin goes through docker_hijack, which
 * waits for Docker's 101 before it writes a byte.
 * Exec create refuses nothing on its own: the body (Cmd, Env, User,
 * WorkingDir) is the caller's and sandbox rules live above this module.
 */
#include <string.h>

#include "docker_int.h"

/* A missing container is SP_NOT_FOUND; a stopped or paused one SP_CONFLICT. */
int docker_exec_create(struct docker_client *c, const char *id, json_object *body, char exec_id[65],
		       struct sp_err *e)
{
	struct docker_req r;
	int rc = -1;

	docker_req_init(&r, "POST");
	if (docker_check_id(id, "container", e) < 0 ||
	    docker_req_path(&r, e, "/containers/%s/exec", id) < 0)
		goto done;
	if (!body || !json_object_is_type(body, json_type_object)) {
		sp_err_set(e, SP_INTERNAL, "exec create needs a JSON object body");
		goto done;
	}
	rc = docker_create_call(c, &r, body, exec_id, e);
done:
	docker_req_cleanup(&r);
	return rc;
}

struct exec_state {
	struct docker_demux dm;
	docker_output_fn fn;
	void *arg;
	int malformed;
};

static int exec_sink(void *arg, const char *p, size_t n)
{
	struct exec_state *st = arg;
	int rc = docker_demux_feed(&st->dm, p, n, st->fn, st->arg);

	if (rc < 0)
		st->malformed = 1;
	return rc;
}

/* Runs an attached start: through docker_perform, or, with input (in not
 * NULL), through docker_hijack, which writes the in_len bytes to the
 * process's stdin. */
static int exec_start(struct docker_client *c, const char *exec_id, int64_t timeout_ms,
		      const void *in, size_t in_len, docker_input_fn in_fn, void *in_arg,
		      docker_output_fn on_data, int (*should_stop)(void *arg), void *arg,
		      int *timed_out, size_t *in_sent, const struct docker_input *stream_in,
		      struct sp_err *e)
{
	static const char body[] = "{\"Detach\":false,\"Tty\":false}";
	struct exec_state st;
	struct docker_req r;
	CURL *h = NULL;
	int rc = -1;

	if (timed_out)
		*timed_out = 0;
	if (in_sent)
		*in_sent = 0;
	docker_req_init(&r, "POST");
	if (docker_check_id(exec_id, "exec instance", e) < 0 ||
	    docker_req_path(&r, e, "/exec/%s/start", exec_id) < 0)
		goto done;
	if (timeout_ms <= 0 || !on_data) {
		sp_err_set(e, SP_INTERNAL, "exec start needs a positive timeout and on_data");
		goto done;
	}
	docker_demux_init(&st.dm);
	st.fn = on_data;
	st.arg = arg;
	st.malformed = 0;
	r.body = body;
	r.body_len = sizeof(body) - 1;
	r.ctype = "application/json";
	r.sink = exec_sink;
	r.sink_arg = &st;
	r.timeout_ms = timeout_ms;
	r.timeout_is_result = 1;
	r.stop_fn = should_stop;
	r.stop_arg = arg;
	r.input = stream_in;
	if (stream_in) {
		in = "";
		in_len = 0;
	}
	if ((int64_t)c->timeout_s * 1000 < timeout_ms)
		r.header_ms = (int64_t)c->timeout_s * 1000;
	r.in_fn = in_fn;
	r.in_arg = in_arg;
	if (in || in_fn) {
		if (docker_hijack(c, &r, in, in_len, e) < 0)
			goto done;
	} else {
		h = curl_easy_init();
		if (!h) {
			sp_err_set(e, SP_INTERNAL, "curl_easy_init failed");
			goto done;
		}
		if (docker_perform(c, h, &r, e) < 0)
			goto done;
	}
	if (r.status == 101 && (in || in_fn))
		r.status = 200; /* the hijacked answer */
	if (r.status < 200 || r.status > 299) {
		docker_status_err(&r, e);
		goto done;
	}
	if (st.malformed) {
		sp_err_set(e, SP_INTERNAL, "Docker's exec stream is malformed");
		goto done;
	}
	if (!r.aborted && !r.timed_out && !docker_demux_whole(&st.dm)) {
		sp_err_set(e, SP_UNAVAILABLE,
			   "%sDocker's exec stream was cut in the middle of a frame", c->label);
		goto done;
	}
	if (timed_out)
		*timed_out = r.timed_out;
	if (in_sent)
		*in_sent = r.in_sent;
	rc = 0;
done:
	if (h)
		curl_easy_cleanup(h);
	docker_req_cleanup(&r);
	return rc;
}

/* Returns 0 when the stream ended, on_data aborted, or timeout_ms passed
 * (*timed_out = 1; the process may still run: the caller kills it).
 * Mapping: invalid or missing exec SP_NOT_FOUND; the container not running
 * 409 SP_CONFLICT; no answer headers within the client's timeout, or Docker
 * unreachable, SP_UNAVAILABLE; a malformed stream SP_INTERNAL. */
int docker_exec_start(struct docker_client *c, const char *exec_id, int64_t timeout_ms,
		      docker_output_fn on_data, int (*should_stop)(void *arg), void *arg,
		      int *timed_out, struct sp_err *e)
{
	return exec_start(c, exec_id, timeout_ms, NULL, 0, NULL, NULL, on_data, should_stop, arg,
			  timed_out, NULL, NULL, e);
}

/* As docker_exec_start; in must not be NULL (len 0 is fine). */
int docker_exec_start_input(struct docker_client *c, const char *exec_id, int64_t timeout_ms,
			    const void *in, size_t in_len, docker_output_fn on_data,
			    int (*should_stop)(void *arg), void *arg, int *timed_out,
			    size_t *in_sent, struct sp_err *e)
{
	if (!in)
		return sp_err_set(e, SP_INTERNAL, "exec start with input needs the input");
	return exec_start(c, exec_id, timeout_ms, in, in_len, NULL, NULL, on_data, should_stop, arg,
			  timed_out, in_sent, NULL, e);
}

int docker_exec_start_interactive(struct docker_client *c, const char *exec_id, int64_t timeout_ms,
				  const struct docker_input *in, docker_output_fn on_data,
				  int (*should_stop)(void *arg), void *arg, int *timed_out,
				  struct sp_err *e)
{
	if (!in || !in->peek || !in->consume)
		return sp_err_set(e, SP_INTERNAL,
				  "exec start with a stream needs peek and consume");
	return exec_start(c, exec_id, timeout_ms, NULL, 0, NULL, NULL, on_data, should_stop, arg,
			  timed_out, NULL, in, e);
}

int docker_exec_start_stream(struct docker_client *c, const char *exec_id, int64_t timeout_ms,
			     docker_input_fn in_fn, void *in_arg, docker_output_fn on_data,
			     int (*should_stop)(void *arg), void *arg, int *timed_out,
			     struct sp_err *e)
{
	if (!in_fn)
		return sp_err_set(e, SP_INTERNAL, "exec start with a stream needs its source");
	return exec_start(c, exec_id, timeout_ms, NULL, 0, in_fn, in_arg, on_data, should_stop, arg,
			  timed_out, NULL, NULL, e);
}

/* exit_code is -1 while running (or if Docker has none). Mapping: invalid
 * or missing exec SP_NOT_FOUND. */
int docker_exec_inspect(struct docker_client *c, const char *exec_id, int *exit_code, int *running,
			struct sp_err *e)
{
	json_object *o = NULL, *v;
	int run = 0, code = -1;

	if (docker_inspect_call(c, "/exec/%s/json", exec_id, "exec instance", &o, e) < 0)
		return -1;
	if (json_object_object_get_ex(o, "Running", &v))
		run = json_object_get_boolean(v);
	if (!run && json_object_object_get_ex(o, "ExitCode", &v) &&
	    json_object_is_type(v, json_type_int))
		code = json_object_get_int(v);
	if (exit_code)
		*exit_code = code;
	if (running)
		*running = run;
	json_object_put(o);
	return 0;
}

/* Starts an exec detached: Docker answers once the process runs, and the
 * process goes on without anyone reading its output. */
int docker_exec_start_detached(struct docker_client *c, const char *exec_id, struct sp_err *e)
{
	static const char body[] = "{\"Detach\":true,\"Tty\":false}";
	struct docker_req r;
	int rc = -1;

	docker_req_init(&r, "POST");
	if (docker_check_id(exec_id, "exec instance", e) < 0 ||
	    docker_req_path(&r, e, "/exec/%s/start", exec_id) < 0)
		goto done;
	r.body = body;
	r.body_len = sizeof(body) - 1;
	r.ctype = "application/json";
	rc = docker_call(c, &r, NULL, NULL, e);
done:
	docker_req_cleanup(&r);
	return rc;
}
