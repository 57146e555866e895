/*
 * Capped growable buffers. See buf.h. Never writes past cap, never grows
 * past max.
 */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void buf_wipe(struct buf *b)
{
	if (b->data)
		explicit_bzero(b->data, b->cap);
	buf_free(b);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

static int buf_reserve(struct buf *b, size_t n)
{
	size_t need, ncap;
	char *p;

	if (n > b->max - b->len)
		return -1;
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : 64;
	while (ncap < need)
		ncap = ncap > ((size_t)-1) / 2 ? need : ncap * 2;
	p = realloc(b->data, ncap);
	if (!p)
		return -1;
	b->data = p;
	b->cap = ncap;
	return 0;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
	if (buf_reserve(b, n) < 0)
		return -1;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

size_t buf_append_head(struct buf *b, const void *p, size_t n)
{
	size_t room = b->max - b->len;

	if (n > room)
		n = room;
	return buf_append(b, p, n) < 0 ? 0 : n;
}

int buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0 || buf_reserve(b, (size_t)n) < 0)
		return -1;
	if (vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap) != n)
		return -1;
	b->len += (size_t)n;
	return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

char *buf_take(struct buf *b, size_t *len)
{
	char *p = b->data;

	if (len)
		*len = b->len;
	if (!p) {
		p = calloc(1, 1);
	}
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}
