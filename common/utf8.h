/*
 * UTF-8 checks for bytes that go into JSON strings: command output and file
 * content. Never cuts at a NUL; every invalid or truncated sequence becomes
 * U+FFFD, so the result is always valid UTF-8.
 */
#ifndef SANDPIT_UTF8_H
#define SANDPIT_UTF8_H

#include <stddef.h>

#include "buf.h"

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
size_t utf8_seq_len(const unsigned char *p, size_t n);
/* True when all n bytes are valid UTF-8. */
int utf8_valid(const char *p, size_t n);
/* The code point of the valid sequence of len bytes at p (utf8_seq_len). */
unsigned utf8_cp(const unsigned char *p, size_t len);
/* True for a code point that must not reach a terminal or a log as it is:
 * C0 and C1 controls, DEL, the bidirectional controls (U+061C, U+200E,
 * U+200F, U+202A..U+202E, U+2066..U+2069) and the line and paragraph
 * separators U+2028, U+2029. */
int utf8_cp_unsafe(unsigned cp);
/* True when p[0..n) is valid UTF-8 holding no utf8_cp_unsafe code point:
 * text for people (names). */
int utf8_text_ok(const char *p, size_t n);
/* Appends p to out with each invalid sequence replaced by U+FFFD. (Every
 * function here is pure: safe from any thread.) */
int utf8_sanitize(const char *p, size_t n, struct buf *out) BUF_MUST_CHECK;
/* Appends p to out as the inside of a JSON string (quote, backslash and
 * control characters escaped, '/' and non-ASCII as they are), repaired like
 * utf8_sanitize. For output that arrives in pieces: unless final, a
 * sequence cut by the end of p is left unconsumed; *used says how much of
 * p was taken (the rest goes in front of the next piece). -1 when out is
 * full. */
int utf8_json_escape(const char *p, size_t n, int final, struct buf *out,
		     size_t *used) BUF_MUST_CHECK;
/* How many bytes of the C string s to keep to cut it to at most max bytes
 * without splitting a multi-byte sequence: strlen(s) when it fits, else
 * max moved back to the start of the sequence it falls in. For "%.*s". */
size_t utf8_prefix(const char *s, size_t max);

#endif
