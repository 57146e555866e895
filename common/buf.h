/*
 * Growable byte buffers with a hard cap fixed at init. A buffer never grows
 * past its cap: appends that would cross it fail and leave the buffer as it
 * was. Data is always NUL-terminated for convenience, but the length is the
 * truth: binary content may hold NUL bytes.
 */
#ifndef SANDPIT_BUF_H
#define SANDPIT_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *data; /* owned; NULL until the first append */
	size_t len; /* bytes used, excluding the trailing NUL */
	size_t cap; /* bytes allocated */
	size_t max; /* hard cap on len */
};

/* Safe from any thread on a buffer no other thread uses (no shared state). */

/* Prepares an empty buffer that may hold up to max bytes. Allocates nothing. */
void buf_init(struct buf *b, size_t max);
/* Frees the buffer's memory and makes it empty; it may be reused. */
void buf_free(struct buf *b);
/* Overwrites the contents with zeros, then frees like buf_free. For secrets. */
void buf_wipe(struct buf *b);
/* Empties the buffer, keeping its memory. */
void buf_reset(struct buf *b);
/* Must-check: a result that is not looked at is a compile error (-Werror),
 * so that bytes are never lost silently (as curl marks its dynbuf calls). */
#define BUF_MUST_CHECK __attribute__((warn_unused_result))

/* Appends n bytes; allocates as needed. Returns -1 (buffer unchanged) when
 * the cap would be crossed or memory runs out. */
int buf_append(struct buf *b, const void *p, size_t n) BUF_MUST_CHECK;
int buf_puts(struct buf *b, const char *s) BUF_MUST_CHECK;
int buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3))) BUF_MUST_CHECK;
int buf_vprintf(struct buf *b, const char *fmt, va_list ap) BUF_MUST_CHECK;
/* Appends as much of p[0..n) as fits under the cap and returns how many
 * bytes it took (0 also when memory runs out). Deliberately lossy, so not
 * must-check: for keeping the head of something whose tail may go, such
 * as an error body kept for a message. */
size_t buf_append_head(struct buf *b, const void *p, size_t n);
/* Hands the data to the caller (who frees it) and empties the buffer. */
char *buf_take(struct buf *b, size_t *len);

#endif
