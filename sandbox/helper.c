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
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "../common/buf.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"
#include "run/run.h"

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

/* The helper's argv: its path, then argv (NULL-terminated). Allocates:
 * release with free; NULL when out of memory. */
static const char **helper_argv(const struct sandbox *sb, const char *const *argv)
{
	size_t n = 0;
	const char **out;

	while (argv[n])
		n++;
	out = calloc(n + 2, sizeof(*out));
	if (!out)
		return NULL;
	out[0] = sandbox_helper_path(sb);
	memcpy(out + 1, argv, n * sizeof(*out));
	return out;
}

int sandbox_helper_run_input(struct sandbox_ctx *ctx, struct sandbox *sb, const char *const *argv,
			     json_object *env, const char *cwd, const void *in, size_t in_len,
			     struct buf *out, char *err, size_t err_cap, int *code,
			     struct sp_err *e)
{
	const char **full = helper_argv(sb, argv);
	/* the sandbox's user, never the keeper (the container's own) */
	struct sb_cmd cmd = { full, env, cwd, SB_AS_USER, in, in_len };
	struct collect c = { out, "", 0, 0 };
	struct sb_run_io io = { .timeout_ms = SANDBOX_HELPER_TIMEOUT_MS,
				.on_output = collect,
				.arg = &c,
				.fast = 1,
				.keep_alive = 1,
				.inspect = 1 };
	struct sb_run_res res;
	int rc;

	*code = -1;
	if (!full)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	rc = run_start(ctx, sb, &cmd, &io, &res, e);
	free(full);
	if (rc < 0 && !c.over)
		return -1;
	if (c.over) {
		log_warn("sandbox %s: helper %s: an answer over %zu bytes", sb->id, argv[0],
			 out->max);
		return sp_err_set(e, SP_UNAVAILABLE,
				  "sandbox %s: its helper's answer to %s is over %zu bytes; the "
				  "sandbox's own code may be interfering with it",
				  sb->id, argv[0], out->max);
	}
	if (res.timed_out || res.code < 0)
		return sp_err_set(e, SP_UNAVAILABLE,
				  "sandbox %s: its helper did not answer in %d s", sb->id,
				  SANDBOX_HELPER_TIMEOUT_MS / 1000);
	*code = res.code;
	if (err && err_cap)
		str_copy(err, err_cap, c.err);
	return 0;
}

int sandbox_helper_run_stream(struct sandbox_ctx *ctx, struct sandbox *sb, const char *const *argv,
			      long (*in_fn)(void *arg, char *buf, size_t cap), void *in_arg,
			      int (*on_data)(void *arg, int stream, const char *data, size_t len),
			      void *arg, int64_t timeout_ms, int *code, struct sp_err *e)
{
	const char **full = helper_argv(sb, argv);
	/* the sandbox's user, never the keeper (the container's own) */
	struct sb_cmd cmd = { .argv = full, .who = SB_AS_USER };
	struct sb_run_io io = { .timeout_ms = timeout_ms,
				.on_output = on_data,
				.arg = arg,
				.in_fn = in_fn,
				.in_arg = in_arg,
				.inspect = 1 };
	struct sb_run_res res;
	int rc;

	*code = -1;
	if (!full)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	rc = run_start(ctx, sb, &cmd, &io, &res, e);
	free(full);
	if (rc < 0)
		return -1;
	if (res.timed_out)
		return sp_err_set(e, SP_UNAVAILABLE, "the transfer did not end in %lld s",
				  (long long)(timeout_ms / 1000));
	*code = res.code;
	return 0;
}
