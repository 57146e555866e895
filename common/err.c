/* Error values. See err.h; their HTTP mapping is each face's (fcgi/face.c). */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "utf8.h"

static const char *const names[SP_CODE_COUNT] = {
	[SP_OK] = "ok",
	[SP_BAD_REQUEST] = "bad_request",
	[SP_UNAUTHORIZED] = "unauthorized",
	[SP_FORBIDDEN] = "forbidden",
	[SP_NOT_FOUND] = "not_found",
	[SP_METHOD_NOT_ALLOWED] = "method_not_allowed",
	[SP_TIMEOUT] = "timeout",
	[SP_CONFLICT] = "conflict",
	[SP_PRECONDITION] = "precondition",
	[SP_TOO_LARGE] = "too_large",
	[SP_UNPROCESSABLE] = "unprocessable",
	[SP_TOO_MANY] = "too_many",
	[SP_QUOTA] = "quota",
	[SP_INTERNAL] = "internal",
	[SP_UNAVAILABLE] = "unavailable",
	[SP_PRECONDITION_REQUIRED] = "precondition_required",
	[SP_UNSUPPORTED_MEDIA] = "unsupported_media",
	[SP_UNIMPLEMENTED] = "unimplemented",
	[SP_ETAG_MISMATCH] = "etag_mismatch",
	[SP_OUT_OF_RANGE] = "out_of_range",
};

/* Copies src into dst[cap] as valid UTF-8: invalid bytes (a raw request
 * path, a cut sequence) become U+FFFD, and a text too long is cut between
 * sequences, never inside one. Messages and fields go into JSON answers
 * and WebSocket text frames, which must be UTF-8. */
static void copy_text(char *dst, size_t cap, const char *src)
{
	struct buf fixed;
	size_t n = strlen(src);

	buf_init(&fixed, cap * 3 + 16);
	if (!utf8_valid(src, n) && utf8_sanitize(src, n > cap ? cap : n, &fixed) == 0 && fixed.data)
		src = fixed.data;
	snprintf(dst, cap, "%.*s", (int)utf8_prefix(src, cap - 1), src);
	buf_free(&fixed);
}

static int err_vset(struct sp_err *e, enum sp_code code, const char *field, const char *fmt,
		    va_list ap)
{
	char msg[sizeof(e->msg) + 4];

	if (!e)
		return -1;
	e->code = code;
	copy_text(e->field, sizeof(e->field), field ? field : "");
	if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0)
		msg[0] = '\0';
	copy_text(e->msg, sizeof(e->msg), msg);
	return -1;
}

int sp_err_set(struct sp_err *e, enum sp_code code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(e, code, NULL, fmt, ap);
	va_end(ap);
	return -1;
}

int sp_err_field(struct sp_err *e, enum sp_code code, const char *field, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(e, code, field, fmt, ap);
	va_end(ap);
	return -1;
}

void sp_err_clear(struct sp_err *e)
{
	e->code = SP_OK;
	e->field[0] = '\0';
	e->msg[0] = '\0';
}

const char *sp_code_name(enum sp_code code)
{
	if ((unsigned)code >= SP_CODE_COUNT || !names[code])
		return "internal";
	return names[code];
}
