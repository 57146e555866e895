/* Error values and their HTTP mapping. See err.h. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

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
	[SP_INTERNAL] = { 500, "INTERNAL_SERVER_ERROR" },
	[SP_UNAVAILABLE] = { 503, "SERVICE_UNAVAILABLE" },
};

static int err_vset(struct sp_err *e, enum sp_code code, const char *field, const char *fmt,
		    va_list ap)
{
	if (!e)
		return -1;
	e->code = code;
	snprintf(e->field, sizeof(e->field), "%s", field ? field : "");
	if (vsnprintf(e->msg, sizeof(e->msg), fmt, ap) < 0)
		e->msg[0] = '\0';
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
