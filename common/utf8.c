/* UTF-8 validation and repair. See utf8.h. Follows RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF. */
#include "utf8.h"

#include <stdint.h>
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

unsigned utf8_cp(const unsigned char *p, size_t len)
{
	static const unsigned char lead_mask[5] = { 0, 0x7F, 0x1F, 0x0F, 0x07 };
	unsigned cp;

	if (len < 1 || len > 4)
		return 0xFFFD;
	cp = p[0] & lead_mask[len];
	for (size_t i = 1; i < len; i++)
		cp = (cp << 6) | (p[i] & 0x3F);
	return cp;
}

int utf8_cp_unsafe(unsigned cp)
{
	return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E ||
	       cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) ||
	       cp == 0x2028 || cp == 0x2029;
}

int utf8_text_ok(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t i = 0;

	while (i < n) {
		size_t k = utf8_seq_len(u + i, n - i);
		if (k == 0 || utf8_cp_unsafe(utf8_cp(u + i, k)))
			return 0;
		i += k;
	}
	return 1;
}

int utf8_valid(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t i = 0;

	while (i < n) {
		size_t k;
		uint64_t w;
		if (i + 8 <= n && (memcpy(&w, u + i, 8), (w & 0x8080808080808080ULL) == 0)) {
			i += 8; /* eight ASCII bytes */
			continue;
		}
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

/* 1 when p[0..n) could still become a valid sequence (n is short of the
 * length its first byte announces and every byte so far fits). */
static int utf8_incomplete(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	size_t len;
	unsigned lo = 0x80, hi = 0xBF;

	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		lo = c == 0xE0 ? 0xA0 : 0x80;
		hi = c == 0xED ? 0x9F : 0xBF;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		lo = c == 0xF0 ? 0x90 : 0x80;
		hi = c == 0xF4 ? 0x8F : 0xBF;
	} else
		return 0;
	if (n >= len)
		return 0;
	if (n > 1 && (p[1] < lo || p[1] > hi))
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xBF)
			return 0;
	return 1;
}

/* 1 when none of the 8 bytes at p needs a look: no control character,
 * quote, backslash or non-ASCII byte (the common case, 8 at a time). */
static int plain8(const unsigned char *p)
{
	const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
	uint64_t w, q, b, c;

	memcpy(&w, p, 8);
	c = (w - 0x20 * ones) & ~w; /* a byte below 0x20 (or above 0x7f) */
	q = (w ^ ('"' * ones));
	q = (q - ones) & ~q; /* a quote */
	b = (w ^ ('\\' * ones));
	b = (b - ones) & ~b; /* a backslash */
	return ((w | c | q | b) & high) == 0;
}

int utf8_json_escape(const char *p, size_t n, int final, struct buf *out, size_t *used)
{
	static const char hex[] = "0123456789abcdef";
	static const char fffd[] = "\xEF\xBF\xBD";
	const unsigned char *u = (const unsigned char *)p;
	size_t i = 0, run = 0;

	while (i < n) {
		unsigned char c;
		char esc[6];
		size_t k, elen = 0;

		while (i + 8 <= n && plain8(u + i)) {
			i += 8;
			run += 8;
		}
		if (i == n)
			break;
		c = u[i];
		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			i++;
			run++;
			continue;
		}
		if (c >= 0x80) {
			k = utf8_seq_len(u + i, n - i);
			if (k) {
				i += k;
				run += k;
				continue;
			}
			if (!final && utf8_incomplete(u + i, n - i))
				break;
		}
		if (buf_append(out, u + i - run, run) < 0)
			return -1;
		run = 0;
		if (c >= 0x80) {
			if (buf_append(out, fffd, 3) < 0)
				return -1;
			i++;
			continue;
		}
		esc[elen++] = '\\';
		switch (c) {
		case '"':
			esc[elen++] = '"';
			break;
		case '\\':
			esc[elen++] = '\\';
			break;
		case '\n':
			esc[elen++] = 'n';
			break;
		case '\r':
			esc[elen++] = 'r';
			break;
		case '\t':
			esc[elen++] = 't';
			break;
		case '\b':
			esc[elen++] = 'b';
			break;
		case '\f':
			esc[elen++] = 'f';
			break;
		default:
			esc[elen++] = 'u';
			esc[elen++] = '0';
			esc[elen++] = '0';
			esc[elen++] = hex[c >> 4];
			esc[elen++] = hex[c & 15];
		}
		if (buf_append(out, esc, elen) < 0)
			return -1;
		i++;
	}
	if (buf_append(out, u + i - run, run) < 0)
		return -1;
	*used = i;
	return 0;
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
