/* Error values and their HTTP mapping. See err.h. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "utf8.h"

static const struct {
	int http;
	const char *name;
} codes[] = {
	[SP_OK] = { 200, "OK" },
	[SP_BAD_REQUEST] = { 400, "BAD_REQUEST" },
	[SP_UNAUTHORIZED] = { 401, "UNAUTHORIZED" },
	[SP_FORBIDDEN] = { 403, "FORBIDDEN" },
	[SP_NOT_FOUND] = { 404, "NOT_FOUND" },
	[SP_METHOD_NOT_ALLOWED] = { 405, "METHOD_NOT_SUPPORTED" },
	[SP_TIMEOUT] = { 408, "TIMEOUT" },
	[SP_CONFLICT] = { 409, "CONFLICT" },
	[SP_PRECONDITION] = { 412, "PRECONDITION_FAILED" },
	[SP_TOO_LARGE] = { 413, "PAYLOAD_TOO_LARGE" },
	[SP_UNPROCESSABLE] = { 422, "UNPROCESSABLE_CONTENT" },
	[SP_TOO_MANY] = { 429, "TOO_MANY_REQUESTS" },
	[SP_QUOTA] = { 429, "QUOTA_EXCEEDED" },
	[SP_INTERNAL] = { 500, "INTERNAL_SERVER_ERROR" },
	[SP_UNAVAILABLE] = { 503, "SERVICE_UNAVAILABLE" },
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

int sp_code_http(enum sp_code code)
{
	if ((unsigned)code >= sizeof(codes) / sizeof(codes[0]))
		return 500;
	return codes[code].http;
}

const char *sp_code_name(enum sp_code code)
{
	if ((unsigned)code >= sizeof(codes) / sizeof(codes[0]))
		return "INTERNAL_SERVER_ERROR";
	return codes[code].name;
}
