/*
 * Fuzz target: a request's input, the way sandpitd reads it. The first
 * byte picks a route of the real table (handlers/routes.c) and whether its
 * input comes as a query string or a JSON body; the rest is that input.
 * It goes through route_parse_input and route_validate, and a refusal
 * through req_send_error into a fake FastCGI stream, exactly as
 * handlers_serve would. Checks: nothing crashes or leaks; an accepted body
 * is an object no deeper than ROUTE_JSON_MAX_DEPTH; an accepted input
 * holds only the route's fields, each of its type and within its bounds,
 * and every required one; a refusal has code, message and (from the
 * validator) an issue list whose first entry names e.field; and the answer
 * written is one well-formed JSON object, valid UTF-8, whose
 * Content-Length is right.
 */
#include <ctype.h>
#include <math.h>
#include <string.h>

#include "common/buf.h"
#include "common/utf8.h"
#include "fcgi/request.h"
#include "fcgi/route.h"
#include "handlers/handlers.h"
#include "tests/fuzz/fuzz.h"

/* --- a fake FastCGI request: params in envp, the body in a reader stream
 * that closes once drained, the answer collected from a writer stream --- */

struct fake_fcgi {
	FCGX_Request fx;
	FCGX_Stream in, out;
	unsigned char outbuf[4096];
	struct buf answer;
	char *envp[8];
	char method[40], uri[80], clen[48], *query;
};

static void fake_fill(FCGX_Stream *s)
{
	s->isClosed = 1;
}

static void fake_empty(FCGX_Stream *s, int do_close)
{
	struct fake_fcgi *f = s->data;

	(void)do_close;
	FUZZ_CHECK(buf_append(&f->answer, f->outbuf, (size_t)(s->wrNext - f->outbuf)) == 0);
	s->wrNext = f->outbuf;
}

/* Sets f up for one request; query (may be NULL) and body stay the
 * caller's. Allocates the QUERY_STRING param; fake_fcgi_free frees it. */
static void fake_fcgi_init(struct fake_fcgi *f, const struct route *rt, const char *method,
			   const char *query, const void *body, size_t blen)
{
	size_t qlen = query ? strlen(query) : 0;
	int k = 0;

	memset(f, 0, sizeof(*f));
	buf_init(&f->answer, 1 << 20);
	snprintf(f->method, sizeof(f->method), "REQUEST_METHOD=%s", method);
	snprintf(f->uri, sizeof(f->uri), "DOCUMENT_URI=%s", rt->path);
	snprintf(f->clen, sizeof(f->clen), "CONTENT_LENGTH=%zu", blen);
	f->query = malloc(sizeof("QUERY_STRING=") + qlen);
	FUZZ_CHECK(f->query);
	memcpy(f->query, "QUERY_STRING=", sizeof("QUERY_STRING=") - 1);
	memcpy(f->query + sizeof("QUERY_STRING=") - 1, query ? query : "", qlen + 1);
	f->envp[k++] = f->method;
	f->envp[k++] = f->uri;
	f->envp[k++] = f->query;
	f->envp[k++] = f->clen;
	f->envp[k++] = "SANDPIT_ORG=org_fuzz";
	f->envp[k++] = "SANDPIT_PERMS=sandbox:read,sandbox:create,sandbox:delete";
	f->envp[k] = NULL;
	f->in.rdNext = f->in.stopUnget = (unsigned char *)(uintptr_t)body;
	f->in.stop = f->in.wrNext = (unsigned char *)(uintptr_t)body + blen;
	f->in.isReader = 1;
	f->in.fillBuffProc = fake_fill;
	f->out.rdNext = f->out.wrNext = f->outbuf;
	f->out.stop = f->outbuf + sizeof(f->outbuf);
	f->out.emptyBuffProc = fake_empty;
	f->out.data = f;
	f->fx.in = &f->in;
	f->fx.out = &f->out;
	f->fx.envp = f->envp;
	f->fx.ipcFd = -1;
}

static void fake_fcgi_free(struct fake_fcgi *f)
{
	free(f->query);
	buf_free(&f->answer);
}

/* --- invariants ----------------------------------------------------------- */

static int json_depth(json_object *o)
{
	int d = 0;

	if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, k, v)
		{
			int c = json_depth(v);
			(void)k;
			if (c > d)
				d = c;
		}
		return d + 1;
	}
	if (json_object_is_type(o, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(o); i++) {
			int c = json_depth(json_object_array_get_idx(o, i));
			if (c > d)
				d = c;
		}
		return d + 1;
	}
	return 0;
}

static const struct field_spec *spec_of(const struct route *rt, const char *name)
{
	for (const struct field_spec *f = rt->fields; f && f->name; f++)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

/* Restates the table's rules independently of check_field. */
static void check_accepted_value(const struct field_spec *f, json_object *v)
{
	const char *s;
	size_t len;
	int found = 0;

	FUZZ_CHECK(v != NULL); /* a nullable null is dropped, not kept */
	switch (f->type) {
	case FT_STRING:
	case FT_ID:
	case FT_ABSPATH:
	case FT_ENUM:
		FUZZ_CHECK(json_object_is_type(v, json_type_string));
		s = json_object_get_string(v);
		len = (size_t)json_object_get_string_len(v);
		if (f->type == FT_ENUM) {
			for (const char *const *c = f->choices; *c; c++)
				found |= strlen(*c) == len && memcmp(*c, s, len) == 0;
			FUZZ_CHECK(found);
			break;
		}
		FUZZ_CHECK(memchr(s, '\0', len) == NULL);
		if (f->type == FT_ABSPATH) {
			FUZZ_CHECK(len >= 1 && len <= 4096 && s[0] == '/');
			break;
		}
		FUZZ_CHECK((long long)len >= f->min && (!f->max || (long long)len <= f->max));
		for (size_t i = 0; f->type == FT_ID && i < len; i++)
			FUZZ_CHECK(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '-');
		break;
	case FT_INT:
		if ((f->flags & FF_INT64_TEXT) && json_object_is_type(v, json_type_string)) {
			char *end;
			long long n = strtoll(json_object_get_string(v), &end, 10);
			FUZZ_CHECK(*end == '\0' && n >= f->min && n <= f->max);
		} else if (json_object_is_type(v, json_type_double)) {
			double d = json_object_get_double(v);
			FUZZ_CHECK(isfinite(d) && d == floor(d));
			FUZZ_CHECK(d >= (double)f->min && d <= (double)f->max);
		} else {
			FUZZ_CHECK(json_object_is_type(v, json_type_int));
			FUZZ_CHECK(json_object_get_int64(v) >= f->min &&
				   json_object_get_int64(v) <= f->max);
		}
		break;
	case FT_NUMBER:
		FUZZ_CHECK(json_object_is_type(v, json_type_double) ||
			   json_object_is_type(v, json_type_int));
		FUZZ_CHECK(isfinite(json_object_get_double(v)));
		FUZZ_CHECK(json_object_get_double(v) >= f->dmin &&
			   json_object_get_double(v) <= f->dmax);
		break;
	case FT_BOOL:
		FUZZ_CHECK(json_object_is_type(v, json_type_boolean));
		break;
	case FT_OBJECT: /* its members were checked as fields of their own */
		FUZZ_CHECK(json_object_is_type(v, json_type_object));
		break;
	case FT_JSON: /* any value: the handler decides */
		break;
	case FT_PATHLIST: {
		size_t n;
		FUZZ_CHECK(json_object_is_type(v, json_type_array));
		n = json_object_array_length(v);
		FUZZ_CHECK((long long)n >= f->min && (!f->max || (long long)n <= f->max));
		for (size_t i = 0; i < n; i++) {
			json_object *p = json_object_array_get_idx(v, i);
			FUZZ_CHECK(json_object_is_type(p, json_type_string));
			s = json_object_get_string(p);
			len = (size_t)json_object_get_string_len(p);
			FUZZ_CHECK(len >= 1 && len <= 4096 && s[0] == '/');
			FUZZ_CHECK(memchr(s, '\0', len) == NULL);
		}
		break;
	}
	case FT_ENVMAP: {
		int count = 0;
		FUZZ_CHECK(json_object_is_type(v, json_type_object));
		json_object_object_foreach(v, k, val)
		{
			FUZZ_CHECK(isalpha((unsigned char)k[0]) || k[0] == '_');
			for (const char *c = k; *c; c++)
				FUZZ_CHECK(isalnum((unsigned char)*c) || *c == '_');
			FUZZ_CHECK(json_object_is_type(val, json_type_string));
			FUZZ_CHECK(!memchr(json_object_get_string(val), '\0',
					   (size_t)json_object_get_string_len(val)));
			count++;
		}
		FUZZ_CHECK(count <= 256);
		break;
	}
	}
}

static void check_accepted(const struct route *rt, json_object *in)
{
	json_object_object_foreach(in, k, v)
	{
		const struct field_spec *f = spec_of(rt, k);
		FUZZ_CHECK(f != NULL);
		check_accepted_value(f, v);
	}
	for (const struct field_spec *f = rt->fields; f->name; f++)
		if (f->flags & FF_REQUIRED)
			FUZZ_CHECK(json_object_object_get_ex(in, f->name, NULL));
}

/* got (a char[cap]) is whole, or a prefix of whole cut at most 3 bytes
 * before its end. */
static void check_cut(const char *got, size_t cap, const char *whole)
{
	size_t g = strlen(got), w = strlen(whole);

	FUZZ_CHECK(g <= w && memcmp(got, whole, g) == 0);
	FUZZ_CHECK(g == w || g + 4 >= cap);
	FUZZ_CHECK(utf8_valid(got, g));
}

/* A validator refusal: e and the issue list agree. */
static void check_refused(const struct sp_err *e, json_object *issues)
{
	json_object *first, *path, *msg, *code;

	FUZZ_CHECK(e->code == SP_BAD_REQUEST);
	FUZZ_CHECK(e->msg[0] != '\0');
	FUZZ_CHECK(issues && json_object_is_type(issues, json_type_array));
	FUZZ_CHECK(json_object_array_length(issues) >= 1);
	for (size_t i = 0; i < json_object_array_length(issues); i++) {
		json_object *it = json_object_array_get_idx(issues, i);
		FUZZ_CHECK(json_object_object_get_ex(it, "code", &code) &&
			   json_object_is_type(code, json_type_string));
		FUZZ_CHECK(json_object_object_get_ex(it, "message", &msg) &&
			   json_object_is_type(msg, json_type_string));
		FUZZ_CHECK(json_object_object_get_ex(it, "path", &path) &&
			   json_object_is_type(path, json_type_array) &&
			   json_object_array_length(path) == 1);
	}
	first = json_object_array_get_idx(issues, 0);
	json_object_object_get_ex(first, "path", &path);
	json_object_object_get_ex(first, "message", &msg);
	/* e names the first issue's field and carries its message, both cut
	 * to the struct's size between UTF-8 sequences */
	check_cut(e->field, sizeof(e->field),
		  json_object_get_string(json_object_array_get_idx(path, 0)));
	check_cut(e->msg, sizeof(e->msg), json_object_get_string(msg));
}

/* The answer req_send_error wrote: a head with a right Content-Length, and
 * a body that is one JSON object with message and code strings. */
static void check_answer(struct fake_fcgi *f)
{
	const char *a, *sep, *cl;
	size_t blen;
	long long n;
	json_tokener *tok;
	json_object *o, *v;

	fake_empty(&f->out, 0);
	FUZZ_CHECK(f->answer.len > 0);
	a = f->answer.data;
	sep = memmem(a, f->answer.len, "\r\n\r\n", 4);
	FUZZ_CHECK(sep != NULL);
	FUZZ_CHECK(strncmp(a, "Status: 4", 9) == 0);
	cl = memmem(a, (size_t)(sep - a), "Content-Length: ", 16);
	FUZZ_CHECK(cl != NULL);
	n = strtoll(cl + 16, NULL, 10);
	blen = f->answer.len - (size_t)(sep + 4 - a);
	FUZZ_CHECK(n >= 0 && (size_t)n == blen);
	tok = json_tokener_new();
	FUZZ_CHECK(tok);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, sep + 4, (int)blen - 1);
	FUZZ_CHECK(o && json_tokener_get_parse_end(tok) == blen - 1);
	FUZZ_CHECK(sep[4 + blen - 1] == '\n');
	/* JSON text is UTF-8 (RFC 8259): no cut sequence, no raw key byte */
	FUZZ_CHECK(utf8_valid(sep + 4, blen));
	FUZZ_CHECK(json_object_object_get_ex(o, "message", &v) &&
		   json_object_is_type(v, json_type_string));
	FUZZ_CHECK(json_object_object_get_ex(o, "code", &v) &&
		   json_object_is_type(v, json_type_string));
	json_object_put(o);
	json_tokener_free(tok);
}

/* --- the target ------------------------------------------------------------ */

static const struct route *routes[64];
static size_t nroutes;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in fin = { data, size };
	unsigned pick = fuzz_byte(&fin);
	const struct route *real;
	struct route rt;
	struct fake_fcgi f;
	struct req r;
	struct sp_err e;
	json_object *in = NULL, *issues = NULL;
	char *text = NULL;
	int as_query, rc;

	if (!nroutes)
		for (const struct route *p = handler_routes; p->path && nroutes < 64; p++)
			if (p->fields)
				routes[nroutes++] = p;
	real = routes[(pick >> 1) % nroutes];
	/* bit 0 swaps the form: a POST route's fields read from a query
	 * string (the coercions), a GET route's from a JSON body */
	as_query = (strcmp(real->method, "GET") == 0) != (pick & 1);
	rt = *real;
	rt.method = as_query ? "GET" : "POST";

	if (as_query) {
		/* QUERY_STRING is a C string: the input up to its first NUL */
		text = malloc(fin.n + 1);
		FUZZ_CHECK(text);
		memcpy(text, fin.p, fin.n);
		text[fin.n] = '\0';
		fake_fcgi_init(&f, &rt, "GET", text, "", 0);
	} else {
		fake_fcgi_init(&f, &rt, "POST", NULL, fin.p, fin.n);
	}
	req_init(&r, &f.fx);
	sp_err_clear(&e);
	rc = route_parse_input(&rt, &r, &in, &e);
	if (rc < 0) {
		FUZZ_CHECK(in == NULL);
		FUZZ_CHECK(e.code == SP_BAD_REQUEST && e.msg[0]);
		req_send_error(&r, &e, NULL);
		check_answer(&f);
		goto done;
	}
	FUZZ_CHECK(in && json_object_is_type(in, json_type_object));
	FUZZ_CHECK(json_depth(in) <= ROUTE_JSON_MAX_DEPTH);
	if (as_query) {
		/* every query value is a string; a path list's (its key may
		 * repeat) an array of strings */
		json_object_object_foreach(in, k, v)
		{
			const struct field_spec *fs = rt.fields;
			while (fs->name && strcmp(fs->name, k) != 0)
				fs++;
			if (fs->name && fs->type == FT_PATHLIST) {
				FUZZ_CHECK(json_object_is_type(v, json_type_array));
				for (size_t i = 0; i < json_object_array_length(v); i++)
					FUZZ_CHECK(json_object_is_type(
						json_object_array_get_idx(v, i), json_type_string));
			} else {
				FUZZ_CHECK(json_object_is_type(v, json_type_string));
			}
		}
	}
	rc = route_validate(&rt, in, as_query, &e, &issues);
	if (rc == 0) {
		FUZZ_CHECK(issues == NULL);
		check_accepted(&rt, in);
	} else {
		check_refused(&e, issues);
		req_send_error(&r, &e, issues);
		check_answer(&f);
	}
done:
	json_object_put(in);
	json_object_put(issues);
	req_cleanup(&r);
	fake_fcgi_free(&f);
	free(text);
	return 0;
}
