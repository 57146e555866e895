/* UTF-8 validation and repair. See utf8.h. Follows RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF. */
#include "utf8.h"

#include <string.h>

size_t utf8_seq_len(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	size_t len;
	unsigned lo = 0x80, hi = 0xBF;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else
		return 0;
	if (n < len)
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xBF)
			return 0;
	return len;
}

int utf8_valid(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t i = 0;

	while (i < n) {
		size_t k;
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		k = utf8_seq_len(u + i, n - i);
		if (!k)
			return 0;
		i += k;
	}
	return 1;
}

int utf8_sanitize(const char *p, size_t n, struct buf *out)
{
	static const char fffd[] = "\xEF\xBF\xBD";
	const unsigned char *u = (const unsigned char *)p;
	size_t i = 0, run = 0;

	while (i < n) {
		size_t k = u[i] < 0x80 ? 1 : utf8_seq_len(u + i, n - i);
		if (k) {
			i += k;
			run += k;
			continue;
		}
		if (buf_append(out, u + i - run, run) < 0 || buf_append(out, fffd, 3) < 0)
			return -1;
		run = 0;
		i++;
	}
	return buf_append(out, u + i - run, run);
}

size_t utf8_prefix(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1), back = 0;

	if (n <= max)
		return n;
	/* s[max] exists: step back over continuation bytes (at most 3) */
	while (max > 0 && back < 3 && ((unsigned char)s[max] & 0xC0) == 0x80) {
		max--;
		back++;
	}
	return max;
}
