/* The path-template matcher (lifted from the Docker allow-list). See
 * pathtmpl.h. */
#include "pathtmpl.h"

#include <string.h>

#include "util.h"

static int is_alnum(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

static int is_unreserved(int ch)
{
	return is_alnum(ch) || ch == '.' || ch == '_' || ch == '~' || ch == '-';
}

int pathtmpl_id_ok(const char *s, size_t n)
{
	if (n == 0 || n > 128 || !is_alnum((unsigned char)s[0]))
		return 0;
	for (size_t i = 1; i < n; i++) {
		int ch = (unsigned char)s[i];
		if (!is_alnum(ch) && ch != '_' && ch != '.' && ch != '-')
			return 0;
	}
	return 1;
}

static int int_ok(const char *s, size_t n)
{
	if (n == 0 || n > 18)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* One escaped segment holding an image reference (see pathtmpl.h). */
static int ref_ok(const char *s, size_t n)
{
	char dec[256];
	size_t d = 0, start = 0;

	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		int ch = (unsigned char)s[i];
		if (ch == '%') {
			if (i + 2 >= n)
				return 0;
			int hi = hex_digit((unsigned char)s[i + 1]),
			    lo = hex_digit((unsigned char)s[i + 2]);
			if (hi < 0 || lo < 0)
				return 0;
			ch = hi * 16 + lo;
			i += 2;
		} else if (!is_unreserved(ch)) {
			return 0;
		}
		if (ch <= 0x20 || ch >= 0x7f || d + 1 >= sizeof(dec))
			return 0;
		dec[d++] = (char)ch;
	}
	for (size_t i = 0; i <= d; i++) {
		if (i < d && dec[i] != '/')
			continue;
		size_t len = i - start;
		if (len == 0 || (len == 1 && dec[start] == '.') ||
		    (len == 2 && dec[start] == '.' && dec[start + 1] == '.'))
			return 0;
		start = i + 1;
	}
	return 1;
}

/* Parses template segment t[0..tn) as a capture: 1 with name and type set,
 * 0 when it is a literal, -1 when it is a malformed capture. */
static int cap_parse(const char *t, size_t tn, const char **name, size_t *nlen,
		     enum pathtmpl_type *type)
{
	const char *colon;
	size_t tl;

	if (tn < 2 || t[0] != '{')
		return memchr(t, '{', tn) || memchr(t, '}', tn) ? -1 : 0;
	if (t[tn - 1] != '}')
		return -1;
	*name = t + 1;
	colon = memchr(t, ':', tn);
	*nlen = colon ? (size_t)(colon - t - 1) : tn - 2;
	*type = PT_ID;
	if (*nlen == 0 || !((**name >= 'a' && **name <= 'z') || (**name >= 'A' && **name <= 'Z') ||
			    **name == '_'))
		return -1;
	for (size_t i = 1; i < *nlen; i++)
		if (!is_alnum((unsigned char)(*name)[i]) && (*name)[i] != '_')
			return -1;
	if (!colon)
		return 1;
	tl = tn - 2 - *nlen - 1;
	if (tl == 2 && memcmp(colon + 1, "id", 2) == 0)
		*type = PT_ID;
	else if (tl == 3 && memcmp(colon + 1, "int", 3) == 0)
		*type = PT_INT;
	else if (tl == 3 && memcmp(colon + 1, "ref", 3) == 0)
		*type = PT_REF;
	else
		return -1;
	return 1;
}

static int seg_match(const char *t, size_t tn, const char *p, size_t pn, struct pathtmpl_cap *cap,
		     int *is_cap)
{
	enum pathtmpl_type type;
	const char *name;
	size_t nlen;
	int c = cap_parse(t, tn, &name, &nlen, &type), ok;

	*is_cap = 0;
	if (c < 0)
		return 0;
	if (c == 0)
		return tn == pn && memcmp(t, p, tn) == 0;
	ok = type == PT_INT   ? int_ok(p, pn)
	     : type == PT_REF ? ref_ok(p, pn)
			      : pathtmpl_id_ok(p, pn);
	if (!ok)
		return 0;
	*is_cap = 1;
	cap->name = name;
	cap->name_len = nlen;
	cap->type = type;
	cap->val = p;
	cap->len = pn;
	return 1;
}

int pathtmpl_match(const char *tmpl, const char *path, size_t n, struct pathtmpl_cap *caps,
		   int *ncaps)
{
	const char *t = tmpl, *tend = tmpl + strlen(tmpl);
	const char *p = path, *pend = path + n;
	int k = 0;

	if (ncaps)
		*ncaps = 0;
	if (t == tend || p == pend)
		return 0;
	while (t < tend && p < pend) {
		struct pathtmpl_cap one;
		int is_cap;
		if (*t != '/' || *p != '/')
			return 0;
		t++;
		p++;
		const char *ts = memchr(t, '/', (size_t)(tend - t));
		const char *ps = memchr(p, '/', (size_t)(pend - p));
		size_t tn = ts ? (size_t)(ts - t) : (size_t)(tend - t);
		size_t pn = ps ? (size_t)(ps - p) : (size_t)(pend - p);
		if (!seg_match(t, tn, p, pn, &one, &is_cap))
			return 0;
		if (is_cap) {
			if (k >= PATHTMPL_MAX_CAPS)
				return 0;
			if (caps)
				caps[k] = one;
			k++;
		}
		t += tn;
		p += pn;
	}
	if (t != tend || p != pend)
		return 0;
	if (ncaps)
		*ncaps = k;
	return 1;
}

int pathtmpl_valid(const char *tmpl)
{
	const char *t = tmpl, *tend;
	int k = 0;

	if (!tmpl || tmpl[0] != '/')
		return -1;
	tend = tmpl + strlen(tmpl);
	while (t < tend) {
		enum pathtmpl_type type;
		const char *name, *ts;
		size_t tn, nlen;
		int c;
		if (*t != '/')
			return -1;
		t++;
		ts = memchr(t, '/', (size_t)(tend - t));
		tn = ts ? (size_t)(ts - t) : (size_t)(tend - t);
		if (tn == 0)
			return -1;
		c = cap_parse(t, tn, &name, &nlen, &type);
		if (c < 0 || (c == 1 && ++k > PATHTMPL_MAX_CAPS))
			return -1;
		t += tn;
	}
	return 0;
}

const struct pathtmpl_cap *pathtmpl_cap_get(const struct pathtmpl_cap *caps, int ncaps,
					    const char *name)
{
	size_t n = strlen(name);

	for (int i = 0; i < ncaps; i++)
		if (caps[i].name_len == n && memcmp(caps[i].name, name, n) == 0)
			return &caps[i];
	return NULL;
}

void pathtmpl_label(const char *tmpl, char *out, size_t cap)
{
	size_t o = 0;
	int in_cap = 0, in_type = 0;

	if (cap == 0)
		return;
	for (const char *t = tmpl; *t && o + 1 < cap; t++) {
		if (*t == '{')
			in_cap = 1;
		else if (*t == ':' && in_cap)
			in_type = 1;
		else if (*t == '}')
			in_cap = in_type = 0;
		if (!in_type)
			out[o++] = *t;
	}
	out[o] = '\0';
}
