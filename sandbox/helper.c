/*
 * The helper inside every sandbox (sandbox/helper/sandpit-helper.c, issue
 * 16): its bytes, embedded at build time; the per-server volume that holds
 * it; and running it in a sandbox.
 *
 * The volume is named by the helper's content hash (sandpit-helper-<16
 * hex>) and filled once per server through the Docker API alone, so it
 * works the same for local, TLS and ssh servers and under gVisor: a
 * container of the same name (created from the sandbox's own image, never
 * started: the marker that the volume is there) mounts it, and the archive
 * API puts the binary in. Every sandbox container, cold or warm, mounts it
 * read-only at /.sandpit-helper (spec.c). A newer helper is a new volume; old
 * ones stay until an operator removes them (README).
 *
 * The volume holds the binary twice: SANDBOX_HELPER_NAME execute-only
 * (mode 0111), and SANDBOX_HELPER_NAME_READABLE (0555) for gVisor, whose
 * execve needs read permission. An execve of a file the caller may not
 * read leaves the process non-dumpable from its first instruction, so no
 * process of the sandbox's opens its /proc/PID/fd (writes into the stdout
 * sandpit parses, reads the fast path's secret: review D3, D5); sandbox
 * containers drop every capability, so this holds for a root user too.
 * The layout is part of the volume's name (HELPER_LAYOUT), so a volume
 * filled by an older sandpit is never reused with other modes.
 *
 * The helper runs through docker exec as the sandbox user, never anyone
 * else; what it answers comes from files the sandbox user can write, and
 * from a program the sandbox's code can kill, so callers check it like any
 * input: its stdout is read under a cap and a deadline, its JSON parsed
 * only within a budget of values and depth (sandbox_helper_json), and a
 * helper that fails or answers what it should not is SP_UNAVAILABLE (503)
 * naming the sandbox, never SP_INTERNAL.
 */
#include "internal.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "../common/buf.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"

#ifndef SANDPIT_HELPER_BIN
#define SANDPIT_HELPER_BIN "build/helper/sandpit-helper"
#endif

/* The binary's bytes in .rodata (make builds it with musl first), and
 * their count. */
__asm__(".section .rodata\n"
	".global sandpit_helper_bin\n"
	".hidden sandpit_helper_bin\n"
	".global sandpit_helper_len\n"
	".hidden sandpit_helper_len\n"
	".balign 16\n"
	"sandpit_helper_bin:\n"
	".incbin \"" SANDPIT_HELPER_BIN "\"\n"
	"1:\n"
	".balign 8\n"
	"sandpit_helper_len:\n"
	".quad 1b - sandpit_helper_bin\n"
	".previous\n");
extern const unsigned char sandpit_helper_bin[];
extern const uint64_t sandpit_helper_len;

#define FILL_DIR "/h"
#define FILL_WAIT_MS 15000
/* the files' names and modes: changing them makes a new volume */
#define HELPER_LAYOUT "sandpit-helper 0111, sandpit-helper-r 0555\n"

static size_t helper_len(void)
{
	return (size_t)sandpit_helper_len;
}

void sandbox_helper_volume(char *out, size_t cap)
{
	unsigned char h[crypto_hash_sha256_BYTES];
	char hex[2 * sizeof(h) + 1];

	crypto_hash_sha256_state st;

	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, (const unsigned char *)HELPER_LAYOUT,
				  sizeof(HELPER_LAYOUT) - 1);
	crypto_hash_sha256_update(&st, sandpit_helper_bin, helper_len());
	crypto_hash_sha256_final(&st, h);
	sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
	snprintf(out, cap, "sandpit-helper-%.16s", hex);
}

const char *sandbox_helper_path(const struct sandbox *sb)
{
	return strcmp(sb->runtime, "gvisor") == 0 ? SANDBOX_HELPER_DIR
		       "/" SANDBOX_HELPER_NAME_READABLE
						  : SANDBOX_HELPER_DIR "/" SANDBOX_HELPER_NAME;
}

/* 1 when the marker container's volume holds both whole copies (the
 * readable one is written last), 0 when not (yet), -1 on a Docker error
 * other than "missing". */
static int volume_filled(struct sandbox_ctx *ctx, const char *name, struct sp_err *e)
{
	static const char *const files[] = { FILL_DIR "/" SANDBOX_HELPER_NAME,
					     FILL_DIR "/" SANDBOX_HELPER_NAME_READABLE };
	struct docker_stat st;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (docker_archive_stat(ctx->dk, name, files[i], &st, e) < 0) {
			if (e->code != SP_NOT_FOUND)
				return -1;
			sp_err_clear(e);
			return 0;
		}
		if (st.size != (int64_t)helper_len())
			return 0;
	}
	return 1;
}

static int volume_put(struct sandbox_ctx *ctx, const char *name, struct sp_err *e)
{
	struct docker_tar_entry ents[] = {
		{ SANDBOX_HELPER_NAME, 0, 0111, 0, 0, sandpit_helper_bin, helper_len(),
		  (int64_t)time(NULL) },
		{ SANDBOX_HELPER_NAME_READABLE, 0, 0555, 0, 0, sandpit_helper_bin, helper_len(),
		  (int64_t)time(NULL) },
	};
	struct buf tar;
	int rc;

	buf_init(&tar, 2 * helper_len() + 65536);
	rc = docker_tar_build(ents, 2, &tar, e) < 0
		     ? -1
		     : docker_archive_put(ctx->dk, name, FILL_DIR, tar.data, tar.len, e);
	buf_free(&tar);
	return rc;
}

int sandbox_helper_ensure(struct sandbox_ctx *ctx, const char *image, struct sp_err *e)
{
	char name[64], cid[65];
	json_object *body, *hc, *m, *mounts, *labels;
	int rc, made;

	if (ctx->cur && ctx->cur->helper_ready)
		return 0;
	sandbox_helper_volume(name, sizeof(name));
	rc = volume_filled(ctx, name, e);
	if (rc < 0)
		return -1;
	if (rc == 0) {
		body = json_object_new_object();
		hc = json_object_new_object();
		m = json_object_new_object();
		mounts = json_object_new_array();
		labels = json_object_new_object();
		json_object_object_add(body, "Image", json_object_new_string(image));
		json_object_object_add(body, "Entrypoint", json_object_new_array());
		json_object_object_add(body, "Cmd", json_object_new_array());
		json_object_array_add(json_object_object_get(body, "Cmd"),
				      json_object_new_string("true"));
		json_object_object_add(labels, "sandpit.helper", json_object_new_string(name));
		json_object_object_add(body, "Labels", labels);
		json_object_object_add(m, "Type", json_object_new_string("volume"));
		json_object_object_add(m, "Source", json_object_new_string(name));
		json_object_object_add(m, "Target", json_object_new_string(FILL_DIR));
		json_object_array_add(mounts, m);
		json_object_object_add(hc, "Mounts", mounts);
		json_object_object_add(hc, "NetworkMode", json_object_new_string("none"));
		json_object_object_add(body, "HostConfig", hc);
		made = docker_container_create(ctx->dk, name, body, cid, e);
		json_object_put(body);
		if (made < 0 && e->code != SP_CONFLICT)
			return -1;
		if (made == 0) {
			log_info("helper: filling volume %s (%zu bytes)", name, helper_len());
			if (volume_put(ctx, name, e) < 0)
				return -1;
		} else {
			/* another worker is filling it: wait, then fill it ourselves
			 * (its worker may have died after the create) */
			int64_t until = mono_ms() + FILL_WAIT_MS;
			sp_err_clear(e);
			while ((rc = volume_filled(ctx, name, e)) == 0 && mono_ms() < until) {
				struct timespec ts = { 0, 200000000L };
				nanosleep(&ts, NULL);
			}
			if (rc < 0 || (rc == 0 && volume_put(ctx, name, e) < 0))
				return -1;
		}
		if ((rc = volume_filled(ctx, name, e)) <= 0)
			return rc < 0 ? -1
				      : sp_err_set(e, SP_INTERNAL,
						   "the helper volume %s did not fill", name);
	}
	if (ctx->cur)
		ctx->cur->helper_ready = 1;
	return 0;
}

void sandbox_helper_mount(json_object *hc)
{
	json_object *mounts, *m = json_object_new_object(), *vo = json_object_new_object();
	char name[64];

	sandbox_helper_volume(name, sizeof(name));
	if (!json_object_object_get_ex(hc, "Mounts", &mounts)) {
		mounts = json_object_new_array();
		json_object_object_add(hc, "Mounts", mounts);
	}
	json_object_object_add(m, "Type", json_object_new_string("volume"));
	json_object_object_add(m, "Source", json_object_new_string(name));
	json_object_object_add(m, "Target", json_object_new_string(SANDBOX_HELPER_DIR));
	json_object_object_add(m, "ReadOnly", json_object_new_boolean(1));
	json_object_object_add(vo, "NoCopy", json_object_new_boolean(1));
	json_object_object_add(m, "VolumeOptions", vo);
	json_object_array_add(mounts, m);
}

/* The structure of a JSON text, checked without building it: 0 when it
 * fits the budget (see sandbox_helper_json), else -1 with why. */
static int json_shape(const char *p, size_t n, size_t max_tokens, const char **why)
{
	size_t tokens = 0, str_at = 0;
	int depth = 0, in_str = 0;

	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
			else if (i - str_at > SANDBOX_HELPER_JSON_STRING)
				return *why = "a string over its bound", -1;
			continue;
		}
		switch (c) {
		case '"':
			in_str = 1;
			str_at = i;
			break;
		case '{':
		case '[':
			if (++depth > SANDBOX_HELPER_JSON_DEPTH)
				return *why = "nesting over its bound", -1;
			/* fall through */
		case ',':
		case ':':
			if (++tokens > max_tokens)
				return *why = "more values than the answer can hold", -1;
			break;
		case '}':
		case ']':
			if (--depth < 0)
				return *why = "no JSON object", -1;
			break;
		default:
			break;
		}
	}
	return 0;
}

int sandbox_helper_json(const struct sandbox *sb, const char *what, const char *data, size_t len,
			size_t max_tokens, json_object **out, struct sp_err *e)
{
	const char *why = "no JSON object";
	json_tokener *tok;
	json_object *o = NULL;

	*out = NULL;
	if (data && len && len <= INT32_MAX && json_shape(data, len, max_tokens, &why) == 0 &&
	    (tok = json_tokener_new_ex(SANDBOX_HELPER_JSON_DEPTH + 1))) {
		o = json_tokener_parse_ex(tok, data, (int)len);
		/* one object, then nothing but white space */
		if (o && json_tokener_get_error(tok) == json_tokener_success) {
			size_t at = json_tokener_get_parse_end(tok);
			while (at < len && data[at] && strchr(" \t\r\n", data[at]))
				at++;
			if (at != len) {
				json_object_put(o);
				o = NULL;
			}
		}
		json_tokener_free(tok);
	}
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		log_warn("sandbox %s: helper %s: %s (%zu bytes)", sb->id, what, why, len);
		return sp_err_set(e, SP_UNAVAILABLE,
				  "sandbox %s: its helper's answer to %s was refused (%s); the "
				  "sandbox's own code may be interfering with it",
				  sb->id, what, why);
	}
	*out = o;
	return 0;
}

/* Collects the helper's stdout (capped: the read stops past the cap) and
 * stderr (one line's worth). */
struct collect {
	struct buf *out;
	char err[512];
	size_t err_len;
	int over;
};

static int collect(void *arg, int stream, const char *data, size_t len)
{
	struct collect *c = arg;

	if (stream == 1) {
		if (buf_append(c->out, data, len) < 0) {
			c->over = 1;
			return -1; /* nothing past the cap is read */
		}
		return 0;
	}
	while (len && c->err_len + 1 < sizeof(c->err)) {
		c->err[c->err_len++] = *data++;
		len--;
	}
	c->err[c->err_len] = '\0';
	return 0;
}

int sandbox_helper_run(struct sandbox_ctx *ctx, struct sandbox *sb, const char *const *argv,
		       json_object *env, const char *cwd, struct buf *out, char *err,
		       size_t err_cap, int *code, struct sp_err *e)
{
	return sandbox_helper_run_input(ctx, sb, argv, env, cwd, NULL, 0, out, err, err_cap, code,
					e);
}

int sandbox_helper_run_input(struct sandbox_ctx *ctx, struct sandbox *sb, const char *const *argv,
			     json_object *env, const char *cwd, const void *in, size_t in_len,
			     struct buf *out, char *err, size_t err_cap, int *code,
			     struct sp_err *e)
{
	json_object *body = json_object_new_object(), *cmd = json_object_new_array();
	struct collect c = { out, "", 0, 0 };
	char eid[65];
	int timed_out = 0, running = 0, rc = -1;

	*code = -1;
	json_object_array_add(cmd, json_object_new_string(sandbox_helper_path(sb)));
	for (const char *const *a = argv; *a; a++)
		json_object_array_add(cmd, json_object_new_string(*a));
	json_object_object_add(body, "Cmd", cmd);
	if (env)
		json_object_object_add(body, "Env", json_object_get(env));
	/* the sandbox's user, never the keeper (the container's own) */
	json_object_object_add(body, "User",
			       json_object_new_string(sb->user[0] ? sb->user : "root"));
	json_object_object_add(body, "WorkingDir", json_object_new_string(cwd ? cwd : "/"));
	json_object_object_add(body, "AttachStdout", json_object_new_boolean(1));
	json_object_object_add(body, "AttachStderr", json_object_new_boolean(1));
	if (in)
		json_object_object_add(body, "AttachStdin", json_object_new_boolean(1));
	/* the fast path first (fastpath.c); docker exec when it does not serve */
	if (sandbox_fast_possible(ctx, sb)) {
		struct sandbox_fast_io fio = { in, in_len, SANDBOX_HELPER_TIMEOUT_MS, collect, NULL,
					       &c, 1 };
		struct sandbox_fast_result fres;
		if (sandbox_fast_exec(ctx, sb, body, &fio, &fres) == 1) {
			if (c.over)
				goto answered;
			if (fres.code < 0) {
				sp_err_set(e, SP_UNAVAILABLE,
					   "sandbox %s: its helper did not answer in %d s", sb->id,
					   SANDBOX_HELPER_TIMEOUT_MS / 1000);
				goto out;
			}
			*code = fres.code;
			goto answered;
		}
		buf_reset(out);
		c.over = 0;
		c.err_len = 0;
		c.err[0] = '\0';
	}
	if (docker_exec_create(ctx->dk, sb->container_id, body, eid, e) < 0 ||
	    (in ? docker_exec_start_input(ctx->dk, eid, SANDBOX_HELPER_TIMEOUT_MS, in, in_len,
					  collect, NULL, &c, &timed_out, NULL, e)
		: docker_exec_start(ctx->dk, eid, SANDBOX_HELPER_TIMEOUT_MS, collect, NULL, &c,
				    &timed_out, e)) < 0) {
		if (e->code == SP_NOT_FOUND || e->code == SP_CONFLICT)
			sandbox_container_gone(ctx, sb, e);
		goto out;
	}
	if (c.over)
		goto answered;
	if (timed_out) {
		sp_err_set(e, SP_UNAVAILABLE, "sandbox %s: its helper did not answer in %d s",
			   sb->id, SANDBOX_HELPER_TIMEOUT_MS / 1000);
		goto out;
	}
	if (docker_exec_inspect(ctx->dk, eid, code, &running, e) < 0)
		goto out;
answered:
	if (c.over) {
		log_warn("sandbox %s: helper %s: an answer over %zu bytes", sb->id, argv[0],
			 out->max);
		sp_err_set(e, SP_UNAVAILABLE,
			   "sandbox %s: its helper's answer to %s is over %zu bytes; the "
			   "sandbox's own code may be interfering with it",
			   sb->id, argv[0], out->max);
		goto out;
	}
	if (err && err_cap)
		str_copy(err, err_cap, c.err);
	rc = 0;
out:
	json_object_put(body);
	return rc;
}

int sandbox_helper_run_stream(struct sandbox_ctx *ctx, struct sandbox *sb, const char *const *argv,
			      long (*in_fn)(void *arg, char *buf, size_t cap), void *in_arg,
			      int (*on_data)(void *arg, int stream, const char *data, size_t len),
			      void *arg, int64_t timeout_ms, int *code, struct sp_err *e)
{
	json_object *body = json_object_new_object(), *cmd = json_object_new_array();
	char eid[65];
	int timed_out = 0, running = 0, rc = -1;

	*code = -1;
	json_object_array_add(cmd, json_object_new_string(sandbox_helper_path(sb)));
	for (const char *const *a = argv; *a; a++)
		json_object_array_add(cmd, json_object_new_string(*a));
	json_object_object_add(body, "Cmd", cmd);
	/* the sandbox's user, never the keeper (the container's own) */
	json_object_object_add(body, "User",
			       json_object_new_string(sb->user[0] ? sb->user : "root"));
	json_object_object_add(body, "WorkingDir", json_object_new_string("/"));
	json_object_object_add(body, "AttachStdout", json_object_new_boolean(1));
	json_object_object_add(body, "AttachStderr", json_object_new_boolean(1));
	if (in_fn)
		json_object_object_add(body, "AttachStdin", json_object_new_boolean(1));
	if (docker_exec_create(ctx->dk, sb->container_id, body, eid, e) < 0 ||
	    (in_fn ? docker_exec_start_stream(ctx->dk, eid, timeout_ms, in_fn, in_arg, on_data,
					      NULL, arg, &timed_out, e)
		   : docker_exec_start(ctx->dk, eid, timeout_ms, on_data, NULL, arg, &timed_out,
				       e)) < 0) {
		if (e->code == SP_NOT_FOUND || e->code == SP_CONFLICT)
			sandbox_container_gone(ctx, sb, e);
		goto out;
	}
	if (timed_out) {
		sp_err_set(e, SP_UNAVAILABLE, "the transfer did not end in %lld s",
			   (long long)(timeout_ms / 1000));
		goto out;
	}
	if (docker_exec_inspect(ctx->dk, eid, code, &running, e) < 0)
		goto out;
	rc = 0;
out:
	json_object_put(body);
	return rc;
}
