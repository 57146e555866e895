/*
 * Log lines to stderr: "time level [name pid] rid message" or one JSON
 * object per line. Writes each line with a single write(2) so lines from
 * several workers sharing stderr do not interleave.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum log_level log_gate = LOG_INFO;
static int log_json;
static char log_name[32] = "sandpit";
static char log_rid[64];

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void log_setup(const char *name, enum log_level level, int json)
{
	if (name)
		snprintf(log_name, sizeof(log_name), "%s", name);
	log_gate = level;
	log_json = json;
}

int log_level_parse(const char *s, enum log_level *out)
{
	for (int i = 0; i < 4; i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

void log_set_request_id(const char *id)
{
	snprintf(log_rid, sizeof(log_rid), "%s", id ? id : "");
}

const char *log_request_id(void)
{
	return log_rid;
}

/* Appends s to out as JSON string content, escaping what JSON needs. */
static size_t json_escape_into(char *out, size_t cap, size_t at, const char *s)
{
	for (; *s && at + 7 < cap; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			out[at++] = '\\';
			out[at++] = (char)c;
		} else if (c < 0x20) {
			at += (size_t)snprintf(out + at, cap - at, "\\u%04x", c);
		} else {
			out[at++] = (char)c;
		}
	}
	return at;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char msg[2048], line[4096], ts[40];
	struct timeval tv;
	struct tm tm;
	va_list ap;
	size_t n;
	int k;

	if (level > log_gate)
		return;
	va_start(ap, fmt);
	k = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	if (log_json) {
		k = snprintf(
			line, sizeof(line),
			"{\"time\":\"%s.%03ldZ\",\"level\":\"%s\",\"prog\":\"%s\",\"pid\":%d,\"rid\":\"",
			ts, (long)(tv.tv_usec / 1000), level_names[level], log_name, (int)getpid());
		if (k < 0 || (size_t)k >= sizeof(line))
			return;
		n = json_escape_into(line, sizeof(line), (size_t)k, log_rid);
		n += (size_t)snprintf(line + n, sizeof(line) - n, "\",\"msg\":\"");
		n = json_escape_into(line, sizeof(line), n, msg);
		if (n + 3 > sizeof(line))
			return;
		line[n++] = '"';
		line[n++] = '}';
		line[n++] = '\n';
	} else {
		k = snprintf(line, sizeof(line), "%s.%03ldZ %-5s [%s %d]%s%s %s\n", ts,
			     (long)(tv.tv_usec / 1000), level_names[level], log_name, (int)getpid(),
			     log_rid[0] ? " " : "", log_rid, msg);
		if (k < 0)
			return;
		n = (size_t)k < sizeof(line) ? (size_t)k : sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}
