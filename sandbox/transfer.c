/*
 * The /v1 streamed file transfers' core (issue 16): upload and download,
 * each one docker exec of the helper's `upload` / `download` command
 * (sandbox/helper/files.c) as the sandbox's user, so nothing they reach
 * is beyond that user's rights (RELIABILITY F2, F3). Bytes stream through
 * in pieces both ways: into the helper's stdin from the caller's source,
 * out of its stdout into the caller's sink; no whole file is ever held.
 * The helper's frames come from a program the sandbox's code can trace,
 * so every frame is checked (order, sizes, the cap) before it is passed
 * on. Calls files_v1.c and helper.c.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/utf8.h"
#include "../common/util.h"
#include "helper/proto.h"

#define UP_PIECE_MAX HU_DATA_MAX
#define UP_ANSWER_MAX 4096

static void put32(char *p, uint32_t v)
{
	p[0] = (char)(v >> 24);
	p[1] = (char)(v >> 16);
	p[2] = (char)(v >> 8);
	p[3] = (char)v;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* --- upload ---------------------------------------------------------------- */

struct up {
	sb_up_next_fn next;
	void *arg;
	struct sp_err src_err; /* the source's failure */
	int src_failed, ended, helper_spoke;
	const char *pend; /* data of the last SB_UP_DATA not yet framed */
	size_t pend_len;
	int64_t commits;
	char out[UP_ANSWER_MAX], err[512];
	size_t out_len, err_len;
};

static int up_output(void *arg, int stream, const char *data, size_t len)
{
	struct up *u = arg;

	if (stream == 1) {
		size_t k = len < sizeof(u->out) - 1 - u->out_len ? len
								 : sizeof(u->out) - 1 - u->out_len;
		memcpy(u->out + u->out_len, data, k);
		u->out_len += k;
		u->out[u->out_len] = '\0';
	} else {
		size_t k = len < sizeof(u->err) - 1 - u->err_len ? len
								 : sizeof(u->err) - 1 - u->err_len;
		memcpy(u->err + u->err_len, data, k);
		u->err_len += k;
		u->err[u->err_len] = '\0';
		u->helper_spoke = 1; /* a refusal: the helper ends; send no more */
	}
	return 0;
}

/* The helper's stdin: the source's events as frames, at most cap bytes a
 * call. 0 once the input is over (the end, the helper's refusal, or the
 * source's failure, which the caller reports). */
static long up_input(void *arg, char *buf, size_t cap)
{
	struct up *u = arg;
	size_t used = 0;

	while (!u->ended && !u->helper_spoke) {
		struct sb_up_event ev;
		if (u->pend_len) {
			size_t k = u->pend_len;
			if (used + 5 >= cap)
				break;
			if (k > cap - used - 5)
				k = cap - used - 5;
			if (k > UP_PIECE_MAX)
				k = UP_PIECE_MAX;
			buf[used] = HU_DATA;
			put32(buf + used + 1, (uint32_t)k);
			memcpy(buf + used + 5, u->pend, k);
			used += 5 + k;
			u->pend += k;
			u->pend_len -= k;
			continue;
		}
		/* room for the largest frame that is not data */
		if (used && used + 9 + 4096 > cap)
			break;
		memset(&ev, 0, sizeof(ev));
		if (u->next(u->arg, &ev, &u->src_err) < 0) {
			u->src_failed = 1;
			u->ended = 1;
			break;
		}
		switch (ev.kind) {
		case SB_UP_FILE: {
			size_t n = strlen(ev.path);
			if (n == 0 || n > 4096 || used + 9 + n > cap) {
				sp_err_set(&u->src_err, SP_INTERNAL, "upload path over its frame");
				u->src_failed = u->ended = 1;
				break;
			}
			buf[used] = HU_FILE;
			put32(buf + used + 1, ev.mode & 0777);
			put32(buf + used + 5, (uint32_t)n);
			memcpy(buf + used + 9, ev.path, n);
			used += 9 + n;
			break;
		}
		case SB_UP_DATA:
			u->pend = ev.data;
			u->pend_len = ev.len;
			break;
		case SB_UP_COMMIT:
			buf[used++] = HU_COMMIT;
			u->commits++;
			break;
		case SB_UP_END:
			buf[used++] = HU_END;
			u->ended = 1;
			break;
		}
	}
	return (long)used;
}

int sandbox_files_upload(struct sandbox_ctx *ctx, const char *org, const char *id, int64_t cap,
			 sb_up_next_fn next, void *arg, int64_t *written, struct sp_err *e)
{
	struct sandbox sb;
	char capx[24];
	const char *argv[] = { HC_UPLOAD, capx, NULL };
	struct up u;
	int code = -1;
	long long w = -1;

	*written = 0;
	if (sandbox_get_running(ctx, org, id, &sb, e) < 0)
		return -1;
	memset(&u, 0, sizeof(u));
	u.next = next;
	u.arg = arg;
	snprintf(capx, sizeof(capx), "%lld", (long long)cap);
	if (sandbox_helper_run_stream(ctx, &sb, argv, up_input, &u, up_output, &u,
				      SB_TRANSFER_TIMEOUT_MS, &code, e) < 0) {
		if (u.src_failed)
			*e = u.src_err;
		return -1;
	}
	{
		struct sp_err ignore;
		sandbox_touch_record(ctx, &sb, 0, &ignore);
	}
	/* {"filesWritten":N}, N at most the commits sent */
	if (sscanf(u.out, "{\"filesWritten\":%lld}", &w) == 1 && w >= 0 && w <= u.commits)
		*written = w;
	if (u.src_failed) {
		*e = u.src_err;
		return -1;
	}
	if (code != 0) {
		long long idx = -1;
		char *sp;
		u.err[strcspn(u.err, "\n")] = '\0';
		sp = strchr(u.err, ' ');
		if (sp) {
			*sp = '\0';
			if (parse_ll(u.err, -1, INT64_MAX, &idx) < 0)
				idx = -1;
			*sp = ' ';
		}
		if (code == HF_TOO_BIG)
			sp_err_field(e, SP_TOO_LARGE, "content",
				     "content: item %lld is over the streamed cap of %lld bytes "
				     "(transfer_max_mb); %lld files written before it",
				     idx, (long long)cap, (long long)*written);
		else {
			size_t n;
			sandbox_files_code_err(sb.id, code, sp ? sp + 1 : u.err, e);
			n = strlen(e->msg);
			snprintf(e->msg + n, sizeof(e->msg) - n,
				 " (item %lld; %lld files written before it)", idx,
				 (long long)*written);
		}
		return -1;
	}
	if (w < 0 || !u.ended)
		return sp_err_set(e, SP_UNAVAILABLE,
				  "sandbox %s: its helper answered no upload result", sb.id);
	return 0;
}

/* --- download -------------------------------------------------------------- */

struct down {
	const char *sid; /* the sandbox's id, for messages */
	const struct sb_down_sink *sink;
	void *arg;
	size_t n, item; /* paths asked for; the item under way (or next) */
	int in_item, broken, stopped;
	int64_t cap, total;
	/* the frame being read */
	unsigned char head[5];
	size_t head_have;
	uint32_t left; /* payload bytes left */
	unsigned char small[512];
	size_t small_have;
	struct sp_err fatal; /* an 'X' frame or a malformed stream */
	char err[512];
	size_t err_len;
};

static int down_broken(struct down *d, const char *why)
{
	if (!d->broken)
		sp_err_set(&d->fatal, SP_UNAVAILABLE,
			   "sandbox %s: its helper sent a malformed stream (%s); the sandbox's own "
			   "code may be interfering with it",
			   d->sid, why);
	d->broken = 1;
	return -1;
}

/* The error of an 'E' or 'X' payload (code, message) into fe. */
static void down_err(const char *sid, const unsigned char *p, size_t n, int64_t cap,
		     struct sp_err *fe)
{
	char msg[300];
	size_t k = n > 1 ? n - 1 : 0;

	if (k >= sizeof(msg))
		k = sizeof(msg) - 1;
	memcpy(msg, p + 1, k);
	msg[k] = '\0';
	if (!utf8_valid(msg, k) || memchr(msg, '\0', k))
		str_copy(msg, sizeof(msg), "download");
	if (n && p[0] == HF_TOO_BIG)
		sp_err_field(fe, SP_TOO_LARGE, "paths",
			     "paths: the file is over what is left of the streamed cap of %lld "
			     "bytes (transfer_max_mb)",
			     (long long)cap);
	else
		sandbox_files_code_err(sid, n ? p[0] : 1, msg, fe);
}

/* One whole small frame (tag in d->head[0], payload in d->small). */
static int down_frame(struct down *d)
{
	unsigned char t = d->head[0];
	struct sp_err fe;

	switch (t) {
	case HD_HEAD:
		if (d->in_item || d->item >= d->n || d->small_have != 4)
			return down_broken(d, "a header out of place");
		d->in_item = 1;
		return d->sink->header(d->arg, d->item, get32(d->small) & 0777);
	case HD_END:
		if (!d->in_item)
			return down_broken(d, "an end out of place");
		d->in_item = 0;
		return d->sink->end(d->arg, d->item++);
	case HD_ITEM:
		if (d->in_item || d->item >= d->n || d->small_have < 1)
			return down_broken(d, "an error out of place");
		down_err(d->sid, d->small, d->small_have, d->cap, &fe);
		return d->sink->item_error(d->arg, d->item++, &fe);
	case HD_FAIL:
		down_err(d->sid, d->small, d->small_have, d->cap, &d->fatal);
		d->broken = 1;
		return -1;
	default:
		return down_broken(d, "an unknown frame");
	}
}

static int down_output(void *arg, int stream, const char *data, size_t len)
{
	struct down *d = arg;
	const unsigned char *p = (const unsigned char *)data;

	if (stream != 1) {
		size_t k = len < sizeof(d->err) - 1 - d->err_len ? len
								 : sizeof(d->err) - 1 - d->err_len;
		memcpy(d->err + d->err_len, data, k);
		d->err_len += k;
		d->err[d->err_len] = '\0';
		return 0;
	}
	if (d->broken || d->stopped)
		return -1;
	while (len) {
		if (d->left == 0 && d->head_have == 0) {
			d->head[d->head_have++] = *p++;
			len--;
			if (d->head[0] == HD_END) {
				d->head_have = 0;
				d->small_have = 0;
				if (down_frame(d) < 0)
					goto stop;
			}
			continue;
		}
		if (d->head_have < 5) {
			d->head[d->head_have++] = *p++;
			len--;
			if (d->head_have == 5) {
				d->left = get32(d->head + 1);
				d->small_have = 0;
				if (d->head[0] == HD_DATA) {
					if (!d->in_item || d->left == 0)
						return down_broken(d, "data out of place");
					if ((int64_t)d->left > d->cap - d->total) {
						sp_err_field(
							&d->fatal, SP_TOO_LARGE, "paths",
							"paths: the files are over the streamed "
							"cap of %lld bytes (transfer_max_mb)",
							(long long)d->cap);
						d->broken = 1;
						return -1;
					}
					d->total += d->left;
				} else if (d->left > sizeof(d->small)) {
					return down_broken(d, "a frame over its size");
				} else if (d->left == 0) {
					d->head_have = 0;
					if (down_frame(d) < 0)
						goto stop;
				}
			}
			continue;
		}
		{
			size_t k = len < d->left ? len : d->left;
			if (d->head[0] == HD_DATA) {
				if (d->sink->data(d->arg, (const char *)p, k) < 0)
					goto stop;
			} else {
				memcpy(d->small + d->small_have, p, k);
				d->small_have += k;
			}
			p += k;
			len -= k;
			d->left -= (uint32_t)k;
			if (d->left == 0) {
				d->head_have = 0;
				if (d->head[0] != HD_DATA && down_frame(d) < 0)
					goto stop;
			}
		}
	}
	return 0;
stop:
	if (!d->broken)
		d->stopped = 1;
	return -1;
}

int sandbox_files_download(struct sandbox_ctx *ctx, const char *org, const char *id,
			   const char *const *paths, size_t n, int64_t cap,
			   const struct sb_down_sink *sink, void *arg, struct sp_err *e)
{
	struct sandbox sb;
	char capx[24];
	const char **argv;
	struct down d;
	int code = -1, rc = -1;

	if (sandbox_get_running(ctx, org, id, &sb, e) < 0)
		return -1;
	argv = calloc(n + 3, sizeof(*argv));
	if (!argv)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	snprintf(capx, sizeof(capx), "%lld", (long long)cap);
	argv[0] = HC_DOWNLOAD;
	argv[1] = capx;
	for (size_t i = 0; i < n; i++)
		argv[2 + i] = paths[i];
	memset(&d, 0, sizeof(d));
	d.sid = sb.id;
	d.sink = sink;
	d.arg = arg;
	d.n = n;
	d.cap = cap;
	if (sandbox_helper_run_stream(ctx, &sb, argv, NULL, NULL, down_output, &d,
				      SB_TRANSFER_TIMEOUT_MS, &code, e) < 0)
		goto done;
	{
		struct sp_err ignore;
		sandbox_touch_record(ctx, &sb, 0, &ignore);
	}
	if (d.stopped) {
		rc = sp_err_set(e, SP_UNAVAILABLE, "The client went away");
		goto done;
	}
	if (d.broken) {
		*e = d.fatal;
		goto done;
	}
	if (code == 126 || code == 127) {
		sandbox_files_code_err(sb.id, code, "", e);
		goto done;
	}
	if (code != 0 || d.in_item || d.item != n || d.head_have || d.left) {
		if (code != 0)
			log_warn("download helper exit %d: %.200s", code, d.err);
		sp_err_set(e, SP_UNAVAILABLE,
			   "sandbox %s: its helper ended the stream early (status %d); the "
			   "sandbox's own code may be interfering with it",
			   sb.id, code);
		goto done;
	}
	rc = 0;
done:
	free(argv);
	return rc;
}

/* --- readFile, streamed --------------------------------------------------- */

struct rd {
	int (*begin)(void *arg, uint64_t size);
	int (*data)(void *arg, const char *p, size_t n);
	void *arg;
	unsigned char head[8];
	size_t head_have;
	uint64_t size, got;
	int64_t cap;
	int started, stopped, broken;
	char err[512];
	size_t err_len;
};

static int rd_output(void *arg, int stream, const char *data, size_t len)
{
	struct rd *d = arg;

	if (stream != 1) {
		size_t k = len < sizeof(d->err) - 1 - d->err_len ? len
								 : sizeof(d->err) - 1 - d->err_len;
		memcpy(d->err + d->err_len, data, k);
		d->err_len += k;
		d->err[d->err_len] = '\0';
		return 0;
	}
	while (len && d->head_have < 8) {
		d->head[d->head_have++] = (unsigned char)*data++;
		len--;
		if (d->head_have == 8) {
			d->size = 0;
			for (int i = 0; i < 8; i++)
				d->size = d->size << 8 | d->head[i];
			if (d->size > (uint64_t)d->cap) {
				d->broken = 1;
				return -1;
			}
			d->started = 1;
			if (d->begin(d->arg, d->size) < 0) {
				d->stopped = 1;
				return -1;
			}
		}
	}
	if (!len)
		return 0;
	if (d->got + len > d->size) {
		d->broken = 1;
		return -1;
	}
	d->got += len;
	if (d->data(d->arg, data, len) < 0) {
		d->stopped = 1;
		return -1;
	}
	return 0;
}

int sandbox_files_read_stream(struct sandbox_ctx *ctx, const char *org, const char *id,
			      const char *path, int64_t cap, int (*begin)(void *arg, uint64_t size),
			      int (*data)(void *arg, const char *p, size_t n), void *arg,
			      int *started, struct sp_err *e)
{
	struct sandbox sb;
	char capx[24];
	const char *argv[] = { HC_CAT, path, capx, NULL };
	struct rd d;
	int code = -1;

	*started = 0;
	if (sandbox_get_running(ctx, org, id, &sb, e) < 0)
		return -1;
	memset(&d, 0, sizeof(d));
	d.begin = begin;
	d.data = data;
	d.arg = arg;
	d.cap = cap;
	snprintf(capx, sizeof(capx), "%lld", (long long)cap);
	/* a slow reader holds the stream: more than the helper's usual bound */
	if (sandbox_helper_run_stream(ctx, &sb, argv, NULL, NULL, rd_output, &d,
				      4 * SANDBOX_HELPER_TIMEOUT_MS, &code, e) < 0) {
		*started = d.started;
		return -1;
	}
	*started = d.started;
	{
		struct sp_err ignore;
		sandbox_touch_record(ctx, &sb, 0, &ignore);
	}
	if (d.stopped)
		return sp_err_set(e, SP_UNAVAILABLE, "The client went away");
	if (d.broken)
		return sp_err_set(e, SP_UNAVAILABLE,
				  "sandbox %s: its helper sent more than the file's size; the "
				  "sandbox's own code may be interfering with it",
				  sb.id);
	if (code != 0 && !d.started) {
		d.err[strcspn(d.err, "\n")] = '\0';
		return sandbox_files_code_err(sb.id, code, d.err, e);
	}
	if (code == 0 && d.started && d.got != d.size)
		return sp_err_set(e, SP_CONFLICT, "The file changed while it was read");
	if (code != 0 || !d.started || d.got != d.size)
		return sp_err_set(e, SP_UNAVAILABLE,
				  "sandbox %s: its helper ended the file early (status %d); the "
				  "sandbox's own code may be interfering with it",
				  sb.id, code);
	return 0;
}
