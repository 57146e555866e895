/*
 * Route lookup and table-driven input validation. See route.h. Every value
 * a request carries passes through route_validate before a handler sees it;
 * bad input becomes a 400 that names the field, never a 500.
 */
#include "route.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/perms.h"
#include "face.h"
#include "../common/utf8.h"
#include "../common/util.h"

enum route_body route_body_kind(const struct route *rt)
{
	if (rt->body != RB_AUTO)
		return rt->body;
	if (strcmp(rt->method, "GET") == 0 || strcmp(rt->method, "HEAD") == 0 ||
	    strcmp(rt->method, "DELETE") == 0)
		return RB_NONE;
	return RB_JSON;
}

size_t route_body_max(const struct route *rt)
{
	return rt->body_max ? rt->body_max : ROUTE_BODY_MAX;
}

int route_status(const struct route *rt)
{
	return rt->status ? rt->status : 200;
}

const struct face *route_face(const struct route *rt)
{
	return rt->face ? rt->face : face_of_path(rt->path);
}

/* The input (FS_INPUT) is the query string unless the body is JSON. */
static int input_is_query(const struct route *rt)
{
	return route_body_kind(rt) != RB_JSON;
}

/* True when f's value arrives as text (coerced to its type). */
static int from_text(const struct route *rt, const struct field_spec *f)
{
	return f->source == FS_PATH || f->source == FS_QUERY || f->source == FS_HEADER ||
	       (f->source == FS_INPUT && input_is_query(rt));
}

static const char *field_from(const struct field_spec *f)
{
	return f->from ? f->from : f->name;
}

const struct route *route_match(const struct route *table, const char *method, const char *path,
				int *method_ok, struct pathtmpl_cap *caps, int *ncaps)
{
	const struct route *found = NULL;
	struct pathtmpl_cap one[PATHTMPL_MAX_CAPS];
	size_t n = strcspn(path, "?");
	int k;

	*method_ok = 0;
	if (ncaps)
		*ncaps = 0;
	for (const struct route *rt = table; rt->path; rt++) {
		if (!pathtmpl_match(rt->path, path, n, one, &k))
			continue;
		if (!found) {
			found = rt;
			if (caps)
				memcpy(caps, one, sizeof(one[0]) * (size_t)k);
			if (ncaps)
				*ncaps = k;
		}
		if (strcmp(rt->method, method) == 0 ||
		    (strcmp(method, "HEAD") == 0 && strcmp(rt->method, "GET") == 0)) {
			*method_ok = 1;
			if (caps)
				memcpy(caps, one, sizeof(one[0]) * (size_t)k);
			if (ncaps)
				*ncaps = k;
			return rt;
		}
	}
	return found;
}

const struct route *route_find(const struct route *table, const char *method, const char *path,
			       int *method_ok)
{
	return route_match(table, method, path, method_ok, NULL, NULL);
}

enum route_auth route_authorize(const struct route *table, const char *method, const char *uri,
				const char *perms, const struct route **rtp)
{
	const struct route *rt;
	int ok;

	rt = route_find(table, method, uri, &ok);
	*rtp = rt;
	if (!rt)
		return ROUTE_DENY_UNKNOWN;
	if (!ok)
		return ROUTE_DENY_METHOD;
	if (rt->perm && !perms_has(perms, rt->perm))
		return ROUTE_DENY_PERM;
	return ROUTE_ALLOW;
}

/* Percent-decodes s[0..n) ('+' is a space) into out (cap >= n + 1). */
static int url_decode(const char *s, size_t n, char *out, size_t *olen)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi, lo;
			if (i + 2 >= n)
				return -1;
			hi = hex_digit((unsigned char)s[i + 1]);
			lo = hex_digit((unsigned char)s[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			out[o++] = (char)(hi * 16 + lo);
			i += 2;
		} else {
			out[o++] = s[i] == '+' ? ' ' : s[i];
		}
	}
	out[o] = '\0';
	*olen = o;
	return 0;
}

static int parse_query(const char *q, json_object **in, struct sp_err *e)
{
	json_object *o = json_object_new_object();
	char *key = NULL, *val = NULL;
	size_t qlen = strlen(q);

	key = malloc(qlen + 1);
	val = malloc(qlen + 1);
	if (!key || !val) {
		sp_err_set(e, SP_INTERNAL, "out of memory");
		goto fail;
	}
	while (*q) {
		size_t seg = strcspn(q, "&"), klen, vlen;
		const char *eq = memchr(q, '=', seg);
		size_t kraw = eq ? (size_t)(eq - q) : seg;
		if (seg == 0) {
			q++;
			continue;
		}
		if (url_decode(q, kraw, key, &klen) < 0 ||
		    url_decode(eq ? eq + 1 : "", eq ? seg - kraw - 1 : 0, val, &vlen) < 0) {
			sp_err_set(e, SP_BAD_REQUEST, "Malformed query string");
			goto fail;
		}
		/* a key is echoed in error answers: UTF-8 only (field names are ASCII) */
		if (strlen(key) != klen || !utf8_valid(key, klen)) {
			sp_err_set(e, SP_BAD_REQUEST, "Malformed query string");
			goto fail;
		}
		{
			json_object *prev = NULL, *v = json_object_new_string_len(val, (int)vlen);
			/* a repeated key becomes an array of its values; only a
			 * list field takes one (merge_query) */
			if (json_object_object_get_ex(o, key, &prev)) {
				if (!json_object_is_type(prev, json_type_array)) {
					json_object *arr = json_object_new_array();
					json_object_array_add(arr, json_object_get(prev));
					json_object_object_add(o, key, arr);
					prev = arr;
				}
				json_object_array_add(prev, v);
			} else {
				json_object_object_add(o, key, v);
			}
		}
		q += seg;
		if (*q == '&')
			q++;
	}
	free(key);
	free(val);
	*in = o;
	return 0;
fail:
	free(key);
	free(val);
	json_object_put(o);
	return -1;
}

/* Parses the JSON body in r->body into *in (an object). */
static int parse_json_body(struct req *r, json_object **in, struct sp_err *e)
{
	struct json_tokener *tok;
	json_object *o;

	if (r->body.len == 0) {
		*in = json_object_new_object();
		return 0;
	}
	/* json-c's UTF-8 check lets overlong forms through (such as C1 A9);
	 * keys are echoed in error answers, which must be UTF-8 */
	if (!utf8_valid(r->body.data, r->body.len))
		return sp_err_set(e, SP_BAD_REQUEST, "Malformed JSON body: not valid UTF-8");
	tok = json_tokener_new_ex(ROUTE_JSON_MAX_DEPTH);
	if (!tok)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, r->body.data, (int)r->body.len);
	if (!o || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != r->body.len) {
		enum json_tokener_error je = json_tokener_get_error(tok);
		json_object_put(o);
		json_tokener_free(tok);
		if (je == json_tokener_error_depth)
			return sp_err_set(e, SP_BAD_REQUEST,
					  "Malformed JSON body: nested too deeply");
		return sp_err_set(e, SP_BAD_REQUEST, "Malformed JSON body: %s",
				  je == json_tokener_success ? "trailing data"
							     : json_tokener_error_desc(je));
	}
	json_tokener_free(tok);
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return sp_err_set(e, SP_BAD_REQUEST, "The JSON body must be an object");
	}
	*in = o;
	return 0;
}

/* The field of rt that a key of the given origin names, or NULL: the input
 * (query string or body) names FS_INPUT fields, plus FS_QUERY fields when it
 * is the query, FS_BODY ones when it is the body. */
static const struct field_spec *field_by_key(const struct route *rt, const char *key, int query)
{
	for (const struct field_spec *f = rt->fields; f && f->name; f++) {
		if (f->source == FS_INPUT && strcmp(f->name, key) == 0)
			return f;
		if (query && f->source == FS_QUERY && strcmp(field_from(f), key) == 0)
			return f;
		if (!query && f->source == FS_BODY && strcmp(f->name, key) == 0)
			return f;
	}
	return NULL;
}

static int has_source(const struct route *rt, enum field_source src)
{
	for (const struct field_spec *f = rt->fields; f && f->name; f++)
		if (f->source == src)
			return 1;
	return 0;
}

static int named_field(const struct route *rt, const char *key)
{
	for (const struct field_spec *f = rt->fields; f && f->name; f++)
		if (strcmp(f->name, key) == 0)
			return 1;
	return 0;
}

/* Moves the query's keys into in under their fields' names. When the
 * query is the route's input (is_input), a key naming no field is left for
 * route_validate to report; otherwise only FS_QUERY keys are taken. A key
 * naming a field of another source is refused here. */
static int merge_query(const struct route *rt, json_object *q, json_object *in, int is_input,
		       struct sp_err *e)
{
	json_object_object_foreach(q, key, val)
	{
		const struct field_spec *f = field_by_key(rt, key, 1);
		if (json_object_is_type(val, json_type_array) && (!f || f->type != FT_PATHLIST))
			return sp_err_field(e, SP_BAD_REQUEST, f ? f->name : key,
					    "%.*s: given more than once",
					    (int)utf8_prefix(key, 100), key);
		if (f && f->type == FT_PATHLIST && json_object_is_type(val, json_type_string)) {
			json_object *arr = json_object_new_array();
			json_object_array_add(arr, json_object_get(val));
			if (json_object_object_get_ex(in, f->name, NULL)) {
				json_object_put(arr);
				return sp_err_field(e, SP_BAD_REQUEST, f->name,
						    "%s: given more than once", f->name);
			}
			json_object_object_add(in, f->name, arr);
			continue;
		}
		if (f && (is_input || f->source == FS_QUERY)) {
			if (json_object_object_get_ex(in, f->name, NULL))
				return sp_err_field(e, SP_BAD_REQUEST, f->name,
						    "%s: given more than once", f->name);
			json_object_object_add(in, f->name, json_object_get(val));
			continue;
		}
		if (!is_input || named_field(rt, key))
			return sp_err_field(e, SP_BAD_REQUEST, key, "Unrecognized key: '%.*s'",
					    (int)utf8_prefix(key, 100), key);
		json_object_object_add(in, key, json_object_get(val));
	}
	return 0;
}

/* The CGI param of a header: HTTP_ + upper case, '-' as '_'. */
static void header_param(const char *header, char *out, size_t cap)
{
	size_t o = (size_t)snprintf(out, cap, "HTTP_");

	for (const char *h = header; *h && o + 1 < cap; h++)
		out[o++] = *h == '-' ? '_' : (char)toupper((unsigned char)*h);
	out[o] = '\0';
}

/* Adds the path captures and headers rt's fields name. */
static int merge_path_headers(const struct route *rt, struct req *r, json_object *in,
			      struct sp_err *e)
{
	struct pathtmpl_cap caps[PATHTMPL_MAX_CAPS];
	int ncaps = 0;

	if (has_source(rt, FS_PATH) &&
	    !pathtmpl_match(rt->path, r->path, strlen(r->path), caps, &ncaps))
		ncaps = 0; /* the required path fields are then missing */
	for (const struct field_spec *f = rt->fields; f && f->name; f++) {
		if (f->source == FS_PATH) {
			const struct pathtmpl_cap *c = pathtmpl_cap_get(caps, ncaps, field_from(f));
			if (c)
				json_object_object_add(
					in, f->name,
					json_object_new_string_len(c->val, (int)c->len));
		} else if (f->source == FS_HEADER) {
			char param[128];
			const char *v;
			header_param(field_from(f), param, sizeof(param));
			v = FCGX_GetParam(param, r->fx->envp);
			if (!v)
				continue;
			if (!utf8_valid(v, strlen(v)))
				return sp_err_field(e, SP_BAD_REQUEST, f->name,
						    "%s: not valid UTF-8", field_from(f));
			json_object_object_add(in, f->name, json_object_new_string(v));
		}
	}
	return 0;
}

int route_parse_input(const struct route *rt, struct req *r, json_object **in, struct sp_err *e)
{
	enum route_body kind = route_body_kind(rt);
	json_object *o = NULL, *q = NULL;

	*in = NULL;
	if (kind == RB_JSON || kind == RB_RAW) {
		if (req_read_body(r, route_body_max(rt), e) < 0)
			return -1;
	}
	if (kind == RB_JSON) {
		if (parse_json_body(r, &o, e) < 0)
			return -1;
		json_object_object_foreach(o, key, val)
		{
			(void)val;
			/* a body naming a path, query or header field: unknown */
			if (!field_by_key(rt, key, 0) && named_field(rt, key)) {
				sp_err_field(e, SP_BAD_REQUEST, key, "Unrecognized key: '%.*s'",
					     (int)utf8_prefix(key, 100), key);
				json_object_put(o); /* key is o's */
				return -1;
			}
		}
		/* the query of a body route is read only when the route
		 * declares query fields (the procedures ignore it) */
		if (has_source(rt, FS_QUERY)) {
			if (parse_query(r->query, &q, e) < 0 || merge_query(rt, q, o, 0, e) < 0)
				goto fail;
		}
	} else {
		json_object *raw = NULL;
		if (parse_query(r->query, &raw, e) < 0)
			return -1;
		o = json_object_new_object();
		if (merge_query(rt, raw, o, 1, e) < 0) {
			json_object_put(raw);
			goto fail;
		}
		json_object_put(raw);
	}
	if (merge_path_headers(rt, r, o, e) < 0)
		goto fail;
	json_object_put(q);
	*in = o;
	return 0;
fail:
	json_object_put(q);
	json_object_put(o);
	return -1;
}

static void add_issue(json_object *issues, const char *field, const char *code, const char *msg)
{
	json_object *it = json_object_new_object(), *p = json_object_new_array();

	json_object_array_add(p, json_object_new_string(field));
	json_object_object_add(it, "code", json_object_new_string(code));
	json_object_object_add(it, "path", p);
	json_object_object_add(it, "message", json_object_new_string(msg));
	json_object_array_add(issues, it);
}

static int env_key_ok(const char *k)
{
	if (!(isalpha((unsigned char)*k) || *k == '_'))
		return 0;
	for (k++; *k; k++)
		if (!(isalnum((unsigned char)*k) || *k == '_'))
			return 0;
	return 1;
}

/* Coerces a query-string text to the field's type; replaces it in `in`. */
static json_object *coerce(const struct field_spec *f, json_object *v)
{
	const char *s = json_object_get_string(v);
	long long n;
	double d;

	switch (f->type) {
	case FT_INT:
		if (parse_ll(s, -(1LL << 53), 1LL << 53, &n) == 0)
			return json_object_new_int64(n);
		if (parse_double(s, &d) == 0)
			return json_object_new_double(d);
		break;
	case FT_NUMBER:
		if (parse_double(s, &d) == 0 && isfinite(d))
			return json_object_new_double(d);
		break;
	case FT_BOOL:
		if (strcmp(s, "true") == 0)
			return json_object_new_boolean(1);
		if (strcmp(s, "false") == 0)
			return json_object_new_boolean(0);
		break;
	default:
		break;
	}
	return NULL;
}

static const char *check_object(const struct field_spec *f, json_object *v, char *msg, size_t cap,
				const char **code, char *where, size_t wcap);

/* Checks one present value; returns NULL when fine, else writes a message
 * and the field at fault (f's name, or "parent.member" inside an
 * FT_OBJECT) into where. */
static const char *check_field(const struct field_spec *f, json_object *v, char *msg, size_t cap,
			       const char **code, char *where, size_t wcap)
{
	const char *s;
	size_t len;

	*code = "invalid_type";
	str_copy(where, wcap, f->name);
	switch (f->type) {
	case FT_JSON:
		return NULL;
	case FT_PATHLIST: {
		size_t n;
		if (!json_object_is_type(v, json_type_array)) {
			snprintf(msg, cap, "%s: expected an array of absolute paths", f->name);
			return msg;
		}
		n = json_object_array_length(v);
		if ((long long)n < f->min || (f->max && (long long)n > f->max)) {
			*code = (long long)n < f->min ? "too_small" : "too_big";
			snprintf(msg, cap, "%s: %lld to %lld paths", f->name, f->min, f->max);
			return msg;
		}
		for (size_t i = 0; i < n; i++) {
			json_object *p = json_object_array_get_idx(v, i);
			const char *ps = json_object_get_string(p);
			size_t pl = (size_t)json_object_get_string_len(p);
			if (!json_object_is_type(p, json_type_string) || pl == 0 || ps[0] != '/' ||
			    pl > 4096 || memchr(ps, '\0', pl) || !utf8_valid(ps, pl)) {
				*code = "invalid_string";
				snprintf(where, wcap, "%s[%zu]", f->name, i);
				snprintf(
					msg, cap,
					"%s: must be an absolute path of at most 4096 bytes, UTF-8, "
					"without NUL",
					where);
				return msg;
			}
		}
		return NULL;
	}
	case FT_OBJECT:
		return check_object(f, v, msg, cap, code, where, wcap);
	case FT_STRING:
	case FT_ID:
	case FT_ABSPATH:
	case FT_ENUM:
		if (!json_object_is_type(v, json_type_string)) {
			snprintf(msg, cap, "%s: expected a string", f->name);
			return msg;
		}
		s = json_object_get_string(v);
		len = (size_t)json_object_get_string_len(v);
		if (f->type == FT_ENUM) {
			for (const char *const *c = f->choices; *c; c++)
				if (strlen(*c) == len && memcmp(*c, s, len) == 0)
					return NULL;
			*code = "invalid_enum_value";
			int k = snprintf(msg, cap, "%s: expected one of", f->name);
			for (const char *const *c = f->choices; *c && k > 0 && (size_t)k < cap; c++)
				k += snprintf(msg + k, cap - (size_t)k, "%s '%s'",
					      c == f->choices ? "" : ",", *c);
			return msg;
		}
		if (memchr(s, '\0', len)) {
			*code = "invalid_string";
			snprintf(msg, cap, "%s: must not contain NUL bytes", f->name);
			return msg;
		}
		if (f->type == FT_ABSPATH) {
			if (len == 0 || s[0] != '/') {
				*code = "invalid_string";
				snprintf(msg, cap, "%s: Path must be absolute", f->name);
				return msg;
			}
			if (len > 4096) {
				*code = "too_big";
				snprintf(msg, cap, "%s: must be at most 4096 bytes", f->name);
				return msg;
			}
			return NULL;
		}
		if ((long long)len < f->min) {
			*code = "too_small";
			snprintf(msg, cap, "%s: must be at least %lld characters", f->name, f->min);
			return msg;
		}
		if (f->max && (long long)len > f->max) {
			*code = "too_big";
			snprintf(msg, cap, "%s: must be at most %lld characters", f->name, f->max);
			return msg;
		}
		if ((f->flags & FF_TEXT) && !utf8_text_ok(s, len)) {
			*code = "invalid_string";
			snprintf(
				msg, cap,
				"%s: must not hold control characters (newlines, escapes, DEL, C1) "
				"or bidirectional controls",
				f->name);
			return msg;
		}
		if (f->type == FT_ID) {
			for (size_t i = 0; i < len; i++)
				if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-') {
					*code = "invalid_string";
					snprintf(msg, cap,
						 "%s: may hold only letters, digits, '_' and '-'",
						 f->name);
					return msg;
				}
		}
		return NULL;
	case FT_INT: {
		int64_t n;
		long long ll;
		if ((f->flags & FF_INT64_TEXT) && json_object_is_type(v, json_type_string)) {
			if (parse_ll(json_object_get_string(v), INT64_MIN, INT64_MAX, &ll) < 0) {
				snprintf(msg, cap, "%s: expected an integer", f->name);
				return msg;
			}
			n = ll;
		} else if (json_object_is_type(v, json_type_double)) {
			double d = json_object_get_double(v);
			if (!isfinite(d) || d != floor(d) || fabs(d) > 9007199254740992.0) {
				snprintf(msg, cap, "%s: expected an integer", f->name);
				return msg;
			}
			n = (int64_t)d;
		} else if (json_object_is_type(v, json_type_int)) {
			n = json_object_get_int64(v);
		} else {
			snprintf(msg, cap, "%s: expected an integer", f->name);
			return msg;
		}
		if (n < f->min || n > f->max) {
			*code = n < f->min ? "too_small" : "too_big";
			snprintf(msg, cap, "%s: must be between %lld and %lld", f->name, f->min,
				 f->max);
			return msg;
		}
		return NULL;
	}
	case FT_NUMBER: {
		double d;
		if (!json_object_is_type(v, json_type_double) &&
		    !json_object_is_type(v, json_type_int)) {
			snprintf(msg, cap, "%s: expected a number", f->name);
			return msg;
		}
		d = json_object_get_double(v);
		if (!isfinite(d) || d < f->dmin || d > f->dmax) {
			*code = d < f->dmin ? "too_small" : "too_big";
			snprintf(msg, cap, "%s: must be between %g and %g", f->name, f->dmin,
				 f->dmax);
			return msg;
		}
		return NULL;
	}
	case FT_BOOL:
		if (!json_object_is_type(v, json_type_boolean)) {
			snprintf(msg, cap, "%s: expected a boolean", f->name);
			return msg;
		}
		return NULL;
	case FT_ENVMAP: {
		/* the shape only: how many and how long are the core's rule
		 * (sandbox/exec.c env_check), the same for every face */
		if (!json_object_is_type(v, json_type_object)) {
			snprintf(msg, cap, "%s: expected an object of strings", f->name);
			return msg;
		}
		json_object_object_foreach(v, k, val)
		{
			if (!env_key_ok(k)) {
				*code = "invalid_string";
				snprintf(msg, cap,
					 "%s: key '%.*s' must match ^[A-Za-z_][A-Za-z0-9_]*$",
					 f->name, (int)utf8_prefix(k, 64), k);
				return msg;
			}
			if (!json_object_is_type(val, json_type_string)) {
				snprintf(msg, cap, "%s.%.*s: expected a string", f->name,
					 (int)utf8_prefix(k, 64), k);
				return msg;
			}
			if (memchr(json_object_get_string(val), '\0',
				   (size_t)json_object_get_string_len(val))) {
				*code = "invalid_string";
				snprintf(msg, cap, "%s.%.*s: must not contain NUL bytes", f->name,
					 (int)utf8_prefix(k, 64), k);
				return msg;
			}
		}
		return NULL;
	}
	}
	return NULL;
}

/* FT_OBJECT: unknown members, then each member of f->sub (null is "not
 * given" for a FF_NULLABLE one), named "f.member". */
static const char *check_object(const struct field_spec *f, json_object *v, char *msg, size_t cap,
				const char **code, char *where, size_t wcap)
{
	if (!json_object_is_type(v, json_type_object)) {
		snprintf(msg, cap, "%s: expected an object", f->name);
		return msg;
	}
	json_object_object_foreach(v, key, val)
	{
		const struct field_spec *g = f->sub;
		(void)val;
		while (g && g->name && strcmp(g->name, key) != 0)
			g++;
		if (!g || !g->name) {
			*code = "unrecognized_keys";
			snprintf(where, wcap, "%s.%.*s", f->name, (int)utf8_prefix(key, 64), key);
			snprintf(msg, cap, "%s: Unrecognized key", where);
			return msg;
		}
	}
	for (const struct field_spec *g = f->sub; g && g->name; g++) {
		struct field_spec named = *g;
		char name[128];
		json_object *m = NULL;
		int present = json_object_object_get_ex(v, g->name, &m);
		snprintf(name, sizeof(name), "%s.%s", f->name, g->name);
		named.name = name;
		if (present && !m && (g->flags & FF_NULLABLE))
			continue;
		if (!present || !m) {
			if (present || (g->flags & FF_REQUIRED)) {
				str_copy(where, wcap, name);
				snprintf(msg, cap, "%s: %s", name,
					 present ? "must not be null" : "Required");
				return msg;
			}
			continue;
		}
		if (check_field(&named, m, msg, cap, code, where, wcap))
			return msg;
	}
	return NULL;
}

int route_validate(const struct route *rt, json_object *in, int from_http, struct sp_err *e,
		   json_object **issues)
{
	json_object *iss = json_object_new_array();
	char msg[512], first[512] = "", first_field[128] = "", where[128];
	const char *code;

	/* unknown fields */
	json_object_object_foreach(in, key, val)
	{
		const struct field_spec *f = NULL;
		(void)val;
		for (const struct field_spec *g = rt->fields; g && g->name; g++)
			if (strcmp(g->name, key) == 0)
				f = g;
		if (!f) {
			snprintf(msg, sizeof(msg), "Unrecognized key: '%.*s'",
				 (int)utf8_prefix(key, 100), key);
			add_issue(iss, key, "unrecognized_keys", msg);
			if (!first[0]) {
				str_copy(first, sizeof(first), msg);
				snprintf(first_field, sizeof(first_field), "%.*s",
					 (int)utf8_prefix(key, sizeof(first_field) - 1), key);
			}
		}
	}
	for (const struct field_spec *f = rt->fields; f && f->name; f++) {
		json_object *v = NULL;
		const char *bad;
		int present = json_object_object_get_ex(in, f->name, &v);
		if (present && v == NULL) {
			if (!(f->flags & FF_NULLABLE)) {
				snprintf(msg, sizeof(msg), "%s: must not be null", f->name);
				add_issue(iss, f->name, "invalid_type", msg);
				goto record;
			}
			json_object_object_del(in, f->name);
			present = 0;
		}
		if (!present) {
			if (f->flags & FF_REQUIRED) {
				snprintf(msg, sizeof(msg), "%s: Required", f->name);
				add_issue(iss, f->name, "invalid_type", msg);
				goto record;
			}
			continue;
		}
		if (from_http && from_text(rt, f) && f->type != FT_STRING && f->type != FT_ID &&
		    f->type != FT_ABSPATH && f->type != FT_ENUM && f->type != FT_PATHLIST) {
			json_object *c = coerce(f, v);
			if (!c) {
				snprintf(msg, sizeof(msg), "%s: expected %s", f->name,
					 f->type == FT_BOOL ? "true or false" : "a number");
				add_issue(iss, f->name, "invalid_type", msg);
				goto record;
			}
			json_object_object_add(in, f->name, c);
			v = c;
		}
		bad = check_field(f, v, msg, sizeof(msg), &code, where, sizeof(where));
		if (!bad)
			continue;
		add_issue(iss, where, code, msg);
		if (!first[0]) {
			str_copy(first, sizeof(first), msg);
			str_copy(first_field, sizeof(first_field), where);
		}
		continue;
record:
		if (!first[0]) {
			str_copy(first, sizeof(first), msg);
			str_copy(first_field, sizeof(first_field), f->name);
		}
	}
	if (json_object_array_length(iss) == 0) {
		json_object_put(iss);
		*issues = NULL;
		return 0;
	}
	*issues = iss;
	return sp_err_field(e, SP_BAD_REQUEST, first_field, "%s", first);
}

int route_has_perm(const char *perms, const char *perm)
{
	return perms_has(perms, perm);
}

int route_table_check(const struct route *table, struct sp_err *e)
{
	for (const struct route *rt = table; rt->path; rt++) {
		enum route_body kind = route_body_kind(rt);
		int st = route_status(rt);
		if (pathtmpl_valid(rt->path) < 0)
			return sp_err_set(e, SP_INTERNAL, "route %s: bad path template", rt->path);
		if (route_body_max(rt) > ROUTE_BODY_MAX)
			return sp_err_set(e, SP_INTERNAL,
					  "route %s: body limit over nginx's %u bytes", rt->path,
					  ROUTE_BODY_MAX);
		if (st < 200 || st > 299)
			return sp_err_set(e, SP_INTERNAL, "route %s: success status %d", rt->path,
					  st);
		for (const struct field_spec *f = rt->fields; f && f->name; f++) {
			if (f->source == FS_PATH) {
				/* the template holds "{from}" or "{from:" */
				char a[80], b[80];
				snprintf(a, sizeof(a), "{%s}", field_from(f));
				snprintf(b, sizeof(b), "{%s:", field_from(f));
				if (!strstr(rt->path, a) && !strstr(rt->path, b))
					return sp_err_set(e, SP_INTERNAL,
							  "route %s: no capture for field %s",
							  rt->path, f->name);
			}
			if (f->source == FS_BODY && kind != RB_JSON)
				return sp_err_set(e, SP_INTERNAL,
						  "route %s: body field %s without a JSON body",
						  rt->path, f->name);
		}
		/* every capture is some field's (a capture nobody reads would
		 * pass unvalidated into nothing; a route reading the request
		 * itself, fields NULL, is exempt) */
		if (rt->fields) {
			for (const char *c = strchr(rt->path, '{'); c; c = strchr(c + 1, '{')) {
				size_t n = strcspn(c + 1, ":}");
				int found = 0;
				for (const struct field_spec *f = rt->fields; f->name; f++)
					if (f->source == FS_PATH && strlen(field_from(f)) == n &&
					    strncmp(field_from(f), c + 1, n) == 0)
						found = 1;
				if (!found)
					return sp_err_set(e, SP_INTERNAL,
							  "route %s: capture without a field",
							  rt->path);
			}
		}
	}
	return 0;
}
