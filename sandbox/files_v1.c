/*
 * The /v1 file operations' core (issue 16): list, stat, readFile,
 * writeFile, mkdir, move, remove, each one docker exec of the helper's
 * file commands (sandbox/helper/files.c) in a running sandbox, as its
 * user, so nothing reached here is beyond that user's rights (F2, F3).
 * The helper's refusals (exit statuses) become the document's errors,
 * their reasons as the message prefix. Answers are the helper's JSON (or
 * raw bytes for readFile), parsed within a budget (helper.c,
 * sandbox_helper_json), which the handlers check and rebuild. A helper
 * that dies (the sandbox's code can kill it: status 137) or answers what
 * it should not is the sandbox's doing: SP_UNAVAILABLE naming the sandbox,
 * never SP_INTERNAL.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/log.h"
#include "../common/util.h"
#include "helper/proto.h"

int sandbox_files_code_err(const char *sid, int code, const char *err, struct sp_err *e)
{
	switch (code) {
	case HF_NOT_FOUND:
		return sp_err_set(e, SP_NOT_FOUND, "No such file or directory (%s)", err);
	case HF_NONREG:
		return sp_err_set(e, SP_PRECONDITION,
				  "path_authority_nonregular_object: The path names an existing "
				  "socket, FIFO, device, or other non-regular object where a "
				  "regular file is required.");
	case HF_TOO_BIG:
		return sp_err_set(e, SP_TOO_LARGE,
				  "file_too_large: %s (%d bytes); use download for larger "
				  "files",
				  err, SB_FILE_UNARY_MAX);
	case HF_DENIED:
		return sp_err_set(e, SP_FORBIDDEN, "The sandbox's user may not do this (%s)", err);
	case HF_DEST_DIR:
		return sp_err_set(e, SP_PRECONDITION,
				  "move_destination_is_directory: `from` names a regular file "
				  "and `to` an existing directory, which `Move` refuses rather "
				  "than moving the file into it.");
	case HF_OCCUPIED:
		return sp_err_set(e, SP_PRECONDITION,
				  "move_destination_occupied: `from` names a directory and `to` "
				  "an existing path, which `Move` refuses rather than "
				  "replacing.");
	case HF_XDEV:
		return sp_err_set(e, SP_PRECONDITION,
				  "move_crosses_filesystem: `from` and `to` are on different "
				  "filesystems, and `Move` never copies the contents to cross "
				  "the boundary.");
	case HF_NOT_EMPTY:
		return sp_err_set(e, SP_PRECONDITION,
				  "directory_not_empty: a nonrecursive remove of a nonempty "
				  "directory changes nothing");
	case HF_EXISTS:
		return sp_err_set(e, SP_CONFLICT, "The path exists and is not a directory");
	case HF_NOT_DIR:
		return sp_err_set(e, SP_PRECONDITION, "not_a_directory: %s", err);
	case HF_IS_DIR:
		return sp_err_set(e, SP_PRECONDITION, "is_a_directory: the path is a directory");
	case HF_INVALID:
		return sp_err_field(e, SP_BAD_REQUEST, "path", "path: %s", err);
	case HF_NO_SPACE:
		return sp_err_set(e, SP_QUOTA, "The sandbox's disk is full (%s)", err);
	case HF_CHANGED:
		return sp_err_set(e, SP_CONFLICT, "The file changed while it was read (%s)", err);
	case HF_TRUNCATED:
		return sp_err_set(e, SP_BAD_REQUEST, "The stream ended before its end (%s)", err);
	case 126:
	case 127:
		return sp_err_set(e, SP_PRECONDITION,
				  "This sandbox has no helper (it was created before sandpit "
				  "had one); create a new sandbox");
	default:
		/* killed (137), or a status it never gives: the sandbox's code
		 * interfered with it */
		log_warn("sandbox %s: files helper exit %d: %s", sid, code, err);
		return sp_err_set(e, SP_UNAVAILABLE,
				  "sandbox %s: its helper failed (status %d); the sandbox's own "
				  "code may be interfering with it",
				  sid, code);
	}
}

/* sandbox_files_raw, with the sandbox it ran in in *sb. */
static int sandbox_files_raw_sb(struct sandbox_ctx *ctx, const char *org, const char *id,
				const char *const *argv, const void *in, size_t in_len,
				struct buf *out, struct sandbox *sb, struct sp_err *e)
{
	char err[256] = "";
	int code = -1;

	if (sandbox_get_running(ctx, org, id, sb, e) < 0)
		return -1;
	if (sandbox_helper_run_input(ctx, sb, argv, NULL, NULL, in, in_len, out, err, sizeof(err),
				     &code, e) < 0)
		return -1;
	{
		struct sp_err ignore;
		sandbox_touch_record(ctx, sb, 0, &ignore);
	}
	err[strcspn(err, "\n")] = '\0';
	if (code != 0)
		return sandbox_files_code_err(sb->id, code, err, e);
	return 0;
}

int sandbox_files_raw(struct sandbox_ctx *ctx, const char *org, const char *id,
		      const char *const *argv, const void *in, size_t in_len, struct buf *out,
		      struct sp_err *e)
{
	struct sandbox sb;

	return sandbox_files_raw_sb(ctx, org, id, argv, in, in_len, out, &sb, e);
}

struct streamed {
	struct buf *out;
	char err[256];
	size_t err_len;
	int over;
};

static int streamed_out(void *arg, int stream, const char *data, size_t len)
{
	struct streamed *s = arg;

	if (stream == 1) {
		if (buf_append(s->out, data, len) < 0) {
			s->over = 1;
			return -1; /* nothing past the cap is read */
		}
		return 0;
	}
	while (len && s->err_len + 1 < sizeof(s->err)) {
		s->err[s->err_len++] = *data++;
		len--;
	}
	s->err[s->err_len] = '\0';
	return 0;
}

int sandbox_files_json_stream(struct sandbox_ctx *ctx, const char *org, const char *id,
			      const char *const *argv,
			      long (*in_fn)(void *arg, char *buf, size_t cap), void *in_arg,
			      size_t out_max, size_t max_tokens, json_object **out,
			      struct sp_err *e)
{
	struct sandbox sb;
	struct buf o;
	struct streamed s = { &o, "", 0, 0 };
	int code = -1, rc = -1;

	*out = NULL;
	if (sandbox_get_running(ctx, org, id, &sb, e) < 0)
		return -1;
	buf_init(&o, out_max);
	if (sandbox_helper_run_stream(ctx, &sb, argv, in_fn, in_arg, streamed_out, &s,
				      SANDBOX_HELPER_TIMEOUT_MS, &code, e) < 0)
		goto done;
	{
		struct sp_err ignore;
		sandbox_touch_record(ctx, &sb, 0, &ignore);
	}
	s.err[strcspn(s.err, "\n")] = '\0';
	if (s.over) {
		sp_err_set(e, SP_UNAVAILABLE,
			   "sandbox %s: its helper's answer to %s is over %zu bytes; the sandbox's "
			   "own code may be interfering with it",
			   sb.id, argv[0], out_max);
		goto done;
	}
	if (code != 0) {
		sandbox_files_code_err(sb.id, code, s.err, e);
		goto done;
	}
	rc = sandbox_helper_json(&sb, argv[0], o.data, o.len, max_tokens, out, e);
done:
	buf_free(&o);
	return rc;
}

int sandbox_files_json(struct sandbox_ctx *ctx, const char *org, const char *id,
		       const char *const *argv, const void *in, size_t in_len, size_t out_max,
		       size_t max_tokens, json_object **out, struct sp_err *e)
{
	struct sandbox sb;
	struct buf o;
	int rc = -1;

	*out = NULL;
	buf_init(&o, out_max);
	if (sandbox_files_raw_sb(ctx, org, id, argv, in, in_len, &o, &sb, e) < 0)
		goto done;
	rc = sandbox_helper_json(&sb, argv[0], o.data, o.len, max_tokens, out, e);
done:
	buf_free(&o);
	return rc;
}
