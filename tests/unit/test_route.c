/*
 * Unit tests for the route seam: the path-template matcher (common/
 * pathtmpl), a small route table with templated routes (field sources,
 * body kinds and limits, success statuses, /_auth's decision), the real
 * table's self-check, and the Dokploy face's code table. Requests go
 * through a fake FastCGI request (params in envp, the body in a reader
 * stream), as in tests/fuzz/fuzz_request.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/pathtmpl.h"
#include "common/perms.h"
#include "fcgi/face.h"
#include "fcgi/request.h"
#include "fcgi/route.h"
#include "handlers/handlers.h"

/* --- the matcher ----------------------------------------------------------- */

static int m(const char *tmpl, const char *path)
{
	return pathtmpl_match(tmpl, path, strlen(path), NULL, NULL);
}

static void test_match_captures(void **state)
{
	struct pathtmpl_cap caps[PATHTMPL_MAX_CAPS];
	const struct pathtmpl_cap *c;
	const char *p = "/v1/sandboxes/sb_1-a.b/ports/8080";
	int n = -1;

	(void)state;
	assert_true(
		pathtmpl_match("/v1/sandboxes/{sandbox}/ports/{port:int}", p, strlen(p), caps, &n));
	assert_int_equal(n, 2);
	c = pathtmpl_cap_get(caps, n, "sandbox");
	assert_non_null(c);
	assert_int_equal(c->type, PT_ID);
	assert_int_equal(c->len, 8);
	assert_memory_equal(c->val, "sb_1-a.b", 8);
	c = pathtmpl_cap_get(caps, n, "port");
	assert_non_null(c);
	assert_int_equal(c->type, PT_INT);
	assert_memory_equal(c->val, "8080", 4);
	assert_null(pathtmpl_cap_get(caps, n, "sandboxes"));
	/* a query is the caller's to cut off: the matcher sees path bytes */
	assert_true(pathtmpl_match("/a/{x}", "/a/b?c", 4, NULL, NULL));
	/* literals are exact */
	assert_true(m("/api/sandbox.one", "/api/sandbox.one"));
	assert_false(m("/api/sandbox.one", "/api/sandbox.On"));
	assert_false(m("/api/sandbox.one", "/api/sandbox.one2"));
	assert_false(m("/api/sandbox.one", "/api"));
}

static void test_match_typed(void **state)
{
	(void)state;
	/* int: digits only */
	assert_true(m("/p/{port:int}", "/p/0"));
	assert_false(m("/p/{port:int}", "/p/-1"));
	assert_false(m("/p/{port:int}", "/p/80a"));
	assert_false(m("/p/{port:int}", "/p/1234567890123456789"));
	/* id: starts alphanumeric; no escapes, no other bytes */
	assert_true(m("/s/{id}", "/s/a"));
	assert_false(m("/s/{id}", "/s/-a"));
	assert_false(m("/s/{id}", "/s/a%2Fb"));
	assert_false(m("/s/{id}", "/s/a b"));
	assert_false(m("/s/{id}", "/s/a~b"));
	assert_false(m("/s/{id:id}", "/s/a:b"));
	assert_false(m("/s/{id}", "/s/%61"));
	char big[200];
	memset(big, 'a', sizeof(big));
	snprintf(big, sizeof(big), "/s/%0129d", 1);
	assert_false(m("/s/{id}", big));
	/* ref: one escaped segment */
	assert_true(m("/i/{n:ref}/json", "/i/sandpit-test%2Fbusybox%3Alatest/json"));
	assert_false(m("/i/{n:ref}/json", "/i/a/b/json"));
}

static void test_match_bad(void **state)
{
	(void)state;
	/* bad escapes */
	assert_false(m("/i/{n:ref}", "/i/a%zz"));
	assert_false(m("/i/{n:ref}", "/i/a%2"));
	assert_false(m("/i/{n:ref}", "/i/a%"));
	assert_false(m("/i/{n:ref}", "/i/a%00b"));
	assert_false(m("/i/{n:ref}", "/i/a%0Ab"));
	/* dot segments, raw or escaped */
	assert_false(m("/s/{id}", "/s/.."));
	assert_false(m("/s/{id}", "/s/."));
	assert_false(m("/s/{id}/x", "/s/../x"));
	assert_false(m("/i/{n:ref}", "/i/%2E%2E"));
	assert_false(m("/i/{n:ref}", "/i/a%2F..%2Fb"));
	assert_false(m("/i/{n:ref}", "/i/a%2F%2Fb"));
	/* empty segments */
	assert_false(m("/s/{id}", "/s/"));
	assert_false(m("/s/{id}/x", "/s//x"));
	assert_false(m("/a/b", "/a//b"));
	assert_false(m("/a/b", "//a/b"));
	assert_false(m("/a", ""));
	/* a trailing slash the template does not have, or lacks */
	assert_false(m("/a/b", "/a/b/"));
	assert_false(m("/s/{id}", "/s/x/"));
	assert_false(m("/a/b/", "/a/b"));
	/* malformed templates never match and are refused */
	assert_false(m("/s/{id", "/s/x"));
	assert_false(m("/s/{id:hex}", "/s/x"));
	assert_false(m("/s/x{id}", "/s/xa"));
	assert_int_equal(pathtmpl_valid("/v1/sandboxes/{sandbox}/ports/{port:int}"), 0);
	{
		char label[80];
		pathtmpl_label("/images/{name:ref}/json", label, sizeof(label));
		assert_string_equal(label, "/images/{name}/json");
		pathtmpl_label("/v1/x:y/{a:int}/{b}/z:w", label, sizeof(label));
		assert_string_equal(label, "/v1/x:y/{a}/{b}/z:w");
	}
	assert_int_equal(pathtmpl_valid("/s/{id"), -1);
	assert_int_equal(pathtmpl_valid("/s/{1d}"), -1);
	assert_int_equal(pathtmpl_valid("/s/{id:hex}"), -1);
	assert_int_equal(pathtmpl_valid("/s//x"), -1);
	assert_int_equal(pathtmpl_valid("s/x"), -1);
	assert_int_equal(pathtmpl_valid("/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}"), -1);
}

/* --- a small table ------------------------------------------------------- */

static int h_none(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	(void)h;
	(void)in;
	(void)out;
	(void)e;
	return 0;
}

static const struct field_spec port_fields[] = {
	{ .name = "sandbox",
	  .type = FT_ID,
	  .flags = FF_REQUIRED,
	  .min = 1,
	  .max = 64,
	  .source = FS_PATH },
	{ .name = "port",
	  .type = FT_INT,
	  .flags = FF_REQUIRED,
	  .min = 1,
	  .max = 65535,
	  .source = FS_PATH },
	{ .name = "force", .type = FT_BOOL, .source = FS_QUERY },
	{ .name = "etag", .type = FT_STRING, .max = 100, .source = FS_HEADER, .from = "If-Match" },
	{ .name = NULL },
};

static const struct field_spec create_fields[] = {
	{ .name = "sandbox",
	  .type = FT_ID,
	  .flags = FF_REQUIRED,
	  .min = 1,
	  .max = 64,
	  .source = FS_PATH },
	{ .name = "number", .type = FT_INT, .flags = FF_REQUIRED, .min = 1, .max = 65535 },
	{ .name = "dryRun", .type = FT_BOOL, .source = FS_QUERY, .from = "dry_run" },
	{ .name = NULL },
};

static const struct field_spec raw_fields[] = {
	{ .name = "path", .type = FT_ABSPATH, .flags = FF_REQUIRED, .source = FS_QUERY },
	{ .name = NULL },
};

static const struct route table[] = {
	{ .method = "GET",
	  .path = "/v1/sandboxes/{sandbox}/ports/{port:int}",
	  .fn = h_none,
	  .fields = port_fields,
	  .perm = "ports:read" },
	{ .method = "DELETE",
	  .path = "/v1/sandboxes/{sandbox}/ports/{port:int}",
	  .fn = h_none,
	  .fields = port_fields,
	  .perm = "ports:write",
	  .status = 204,
	  .flags = RF_IF_MATCH },
	{ .method = "POST",
	  .path = "/v1/sandboxes/{sandbox}/ports",
	  .fn = h_none,
	  .fields = create_fields,
	  .perm = "ports:write",
	  .status = 201,
	  .body_max = 64,
	  .flags = RF_IDEMPOTENCY },
	{ .method = "PUT",
	  .path = "/v1/files/content",
	  .fn = h_none,
	  .fields = raw_fields,
	  .perm = "files:write",
	  .body = RB_RAW,
	  .body_max = 32 },
	{ .method = "POST",
	  .path = "/v1/files/upload",
	  .fn = h_none,
	  .fields = raw_fields,
	  .perm = "files:write",
	  .body = RB_MULTIPART },
	{ .method = "GET", .path = "/api/sandbox.list", .fn = h_none, .perm = "sandbox:read" },
	{ .method = "GET", .path = "/openapi.json", .fn = h_none },
	{ .method = NULL, .path = NULL },
};

static const struct route *rt_of(const char *method, const char *path)
{
	int ok;
	const struct route *rt = route_find(table, method, path, &ok);

	assert_non_null(rt);
	assert_true(ok);
	return rt;
}

static const struct route *rt_of_real(const char *method, const char *path)
{
	int ok;
	const struct route *rt = route_find(handler_routes, method, path, &ok);

	assert_non_null(rt);
	assert_true(ok);
	return rt;
}

static void test_authorize(void **state)
{
	const struct route *rt;

	(void)state;
	/* an unknown path is denied, whatever the key holds */
	assert_int_equal(route_authorize(table, "GET", "/v1/nothing", "ports:read", &rt),
			 ROUTE_DENY_UNKNOWN);
	assert_int_equal(
		route_authorize(table, "GET", "/api/sandbox.nope?x=1", "sandbox:read", &rt),
		ROUTE_DENY_UNKNOWN);
	/* a capture of the wrong type is no route either */
	assert_int_equal(
		route_authorize(table, "GET", "/v1/sandboxes/a/ports/http", "ports:read", &rt),
		ROUTE_DENY_UNKNOWN);
	assert_int_equal(
		route_authorize(table, "GET", "/v1/sandboxes/a%2F../ports/1", "ports:read", &rt),
		ROUTE_DENY_UNKNOWN);
	assert_int_equal(
		route_authorize(table, "GET", "/v1/sandboxes/a/ports/1/", "ports:read", &rt),
		ROUTE_DENY_UNKNOWN);
	/* a templated route's permission is checked, per method */
	assert_int_equal(
		route_authorize(table, "GET", "/v1/sandboxes/a/ports/1", "files:write", &rt),
		ROUTE_DENY_PERM);
	assert_string_equal(rt->perm, "ports:read");
	assert_int_equal(route_authorize(table, "GET", "/v1/sandboxes/a/ports/1?force=true",
					 "ports:read", &rt),
			 ROUTE_ALLOW);
	assert_int_equal(
		route_authorize(table, "HEAD", "/v1/sandboxes/a/ports/1", "ports:read", &rt),
		ROUTE_ALLOW);
	assert_int_equal(
		route_authorize(table, "DELETE", "/v1/sandboxes/a/ports/1", "ports:read", &rt),
		ROUTE_DENY_PERM);
	assert_string_equal(rt->perm, "ports:write");
	assert_int_equal(route_authorize(table, "DELETE", "/v1/sandboxes/a/ports/1",
					 "ports:read,ports:write", &rt),
			 ROUTE_ALLOW);
	/* the path is known, the method is not */
	assert_int_equal(route_authorize(table, "PATCH", "/v1/sandboxes/a/ports/1",
					 "ports:read,ports:write", &rt),
			 ROUTE_DENY_METHOD);
	/* literal routes as before; no permission = any valid key */
	assert_int_equal(route_authorize(table, "GET", "/api/sandbox.list", "", &rt),
			 ROUTE_DENY_PERM);
	assert_int_equal(route_authorize(table, "GET", "/api/sandbox.list", "sandbox:read", &rt),
			 ROUTE_ALLOW);
	assert_int_equal(route_authorize(table, "GET", "/openapi.json", "", &rt), ROUTE_ALLOW);
	/* and the real table: an unknown procedure is denied at /_auth */
	assert_int_equal(route_authorize(handler_routes, "GET", "/api/sandbox.nope",
					 "sandbox:read,sandbox:create,sandbox:delete", &rt),
			 ROUTE_DENY_UNKNOWN);
	assert_int_equal(route_authorize(handler_routes, "POST", "/api/sandbox.remove",
					 "sandbox:read,sandbox:create", &rt),
			 ROUTE_DENY_PERM);
}

/* --- a fake FastCGI request ----------------------------------------------- */

struct fake {
	FCGX_Request fx;
	FCGX_Stream in, out;
	unsigned char outbuf[4096];
	char *envp[12];
	char method[40], uri[200], query[200], clen[48], hdr[200];
	struct req r;
};

static void fake_fill(FCGX_Stream *s)
{
	s->isClosed = 1;
}

static void fake_empty(FCGX_Stream *s, int do_close)
{
	(void)do_close;
	s->wrNext = s->rdNext;
}

/* header: one "HTTP_X=v" param or NULL */
static struct req *fake(struct fake *f, const char *method, const char *uri, const char *query,
			const char *body, const char *header)
{
	size_t blen = body ? strlen(body) : 0;
	int k = 0;

	memset(f, 0, sizeof(*f));
	snprintf(f->method, sizeof(f->method), "REQUEST_METHOD=%s", method);
	snprintf(f->uri, sizeof(f->uri), "DOCUMENT_URI=%s", uri);
	snprintf(f->query, sizeof(f->query), "QUERY_STRING=%s", query ? query : "");
	snprintf(f->clen, sizeof(f->clen), "CONTENT_LENGTH=%zu", blen);
	f->envp[k++] = f->method;
	f->envp[k++] = f->uri;
	f->envp[k++] = f->query;
	f->envp[k++] = f->clen;
	if (header) {
		snprintf(f->hdr, sizeof(f->hdr), "%s", header);
		f->envp[k++] = f->hdr;
	}
	f->envp[k] = NULL;
	f->in.rdNext = f->in.stopUnget = (unsigned char *)(uintptr_t)(body ? body : "");
	f->in.stop = f->in.wrNext = f->in.rdNext + blen;
	f->in.isReader = 1;
	f->in.fillBuffProc = fake_fill;
	f->out.rdNext = f->out.wrNext = f->outbuf;
	f->out.stop = f->outbuf + sizeof(f->outbuf);
	f->out.emptyBuffProc = fake_empty;
	f->fx.in = &f->in;
	f->fx.out = &f->out;
	f->fx.envp = f->envp;
	f->fx.ipcFd = -1;
	req_init(&f->r, &f->fx);
	return &f->r;
}

/* Parses and validates a request to rt; returns the error code (SP_OK) and
 * leaves the input in *in (caller puts) and the failing field in e. */
static enum sp_code run(const struct route *rt, struct req *r, json_object **in, struct sp_err *e)
{
	json_object *issues = NULL;

	sp_err_clear(e);
	*in = NULL;
	if (route_parse_input(rt, r, in, e) < 0)
		return e->code;
	if (route_validate(rt, *in, 1, e, &issues) < 0) {
		json_object_put(issues);
		return e->code;
	}
	return SP_OK;
}

static void test_field_sources(void **state)
{
	struct fake f;
	struct sp_err e;
	json_object *in, *v;
	const struct route *get = rt_of("GET", "/v1/sandboxes/x/ports/1");
	const struct route *post = rt_of("POST", "/v1/sandboxes/x/ports");
	struct req *r;

	(void)state;
	/* path captures, a query key and a header land in `in`, typed */
	r = fake(&f, "GET", "/v1/sandboxes/sb1/ports/8080", "force=true", NULL,
		 "HTTP_IF_MATCH=\"abc\"");
	assert_int_equal(run(get, r, &in, &e), SP_OK);
	assert_string_equal(json_object_get_string(json_object_object_get(in, "sandbox")), "sb1");
	v = json_object_object_get(in, "port");
	assert_true(json_object_is_type(v, json_type_int));
	assert_int_equal(json_object_get_int(v), 8080);
	assert_true(json_object_get_boolean(json_object_object_get(in, "force")));
	assert_string_equal(json_object_get_string(json_object_object_get(in, "etag")), "\"abc\"");
	json_object_put(in);
	req_cleanup(r);
	/* a captured value is validated like a body field: 400 naming it */
	r = fake(&f, "GET", "/v1/sandboxes/sb1/ports/70000", NULL, NULL, NULL);
	assert_int_equal(run(get, r, &in, &e), SP_BAD_REQUEST);
	assert_string_equal(e.field, "port");
	json_object_put(in);
	req_cleanup(r);
	/* the query may not name a path field, nor an unknown key */
	r = fake(&f, "GET", "/v1/sandboxes/sb1/ports/80", "sandbox=other", NULL, NULL);
	assert_int_equal(run(get, r, &in, &e), SP_BAD_REQUEST);
	assert_string_equal(e.field, "sandbox");
	json_object_put(in);
	req_cleanup(r);
	r = fake(&f, "GET", "/v1/sandboxes/sb1/ports/80", "bogus=1", NULL, NULL);
	assert_int_equal(run(get, r, &in, &e), SP_BAD_REQUEST);
	assert_string_equal(e.field, "bogus");
	json_object_put(in);
	req_cleanup(r);
	/* a body route: body fields from the body, path from the path, a
	 * renamed query key; the body may not name the path field */
	r = fake(&f, "POST", "/v1/sandboxes/sb2/ports", "dry_run=false", "{\"number\":22}", NULL);
	assert_int_equal(run(post, r, &in, &e), SP_OK);
	assert_string_equal(json_object_get_string(json_object_object_get(in, "sandbox")), "sb2");
	assert_int_equal(json_object_get_int(json_object_object_get(in, "number")), 22);
	assert_false(json_object_get_boolean(json_object_object_get(in, "dryRun")));
	json_object_put(in);
	req_cleanup(r);
	r = fake(&f, "POST", "/v1/sandboxes/sb2/ports", NULL, "{\"number\":22,\"sandbox\":\"x\"}",
		 NULL);
	assert_int_equal(run(post, r, &in, &e), SP_BAD_REQUEST);
	assert_string_equal(e.field, "sandbox");
	json_object_put(in);
	req_cleanup(r);
	/* body values are JSON, never coerced from text */
	r = fake(&f, "POST", "/v1/sandboxes/sb2/ports", NULL, "{\"number\":\"22\"}", NULL);
	assert_int_equal(run(post, r, &in, &e), SP_BAD_REQUEST);
	assert_string_equal(e.field, "number");
	json_object_put(in);
	req_cleanup(r);
	/* the Dokploy procedures as before: a GET's query is its input, a
	 * POST's body is, and a POST's query is ignored */
	r = fake(&f, "POST", "/api/sandbox.exec", "x=1", "{\"sandboxId\":\"a\",\"cmd\":\"ls\"}",
		 NULL);
	assert_int_equal(run(rt_of_real("POST", "/api/sandbox.exec"), r, &in, &e), SP_OK);
	json_object_put(in);
	req_cleanup(r);
}

static void test_body_kinds_and_limits(void **state)
{
	struct fake f;
	struct sp_err e;
	json_object *in;
	const struct route *post = rt_of("POST", "/v1/sandboxes/x/ports");
	const struct route *raw = rt_of("PUT", "/v1/files/content");
	const struct route *multi = rt_of("POST", "/v1/files/upload");
	struct req *r;
	char big[100];

	(void)state;
	/* each route's own limit: 64 bytes here, 15 MiB by default */
	assert_int_equal(route_body_max(post), 64);
	assert_int_equal(route_body_max(rt_of_real("POST", "/api/sandbox.writeFile")),
			 ROUTE_BODY_MAX);
	snprintf(big, sizeof(big), "{\"number\":22,\"pad\":\"%060d\"}", 0);
	r = fake(&f, "POST", "/v1/sandboxes/sb2/ports", NULL, big, NULL);
	assert_int_equal(run(post, r, &in, &e), SP_TOO_LARGE);
	assert_non_null(strstr(e.msg, "64 byte"));
	assert_null(in);
	req_cleanup(r);
	/* a raw body reaches the handler as bytes (r->body), not as JSON; the
	 * other fields come from the query */
	r = fake(&f, "PUT", "/v1/files/content", "path=/home/user/a.bin", "\x01not json\x02", NULL);
	assert_int_equal(route_body_kind(raw), RB_RAW);
	assert_int_equal(run(raw, r, &in, &e), SP_OK);
	assert_int_equal(r->body.len, 10);
	assert_memory_equal(r->body.data, "\x01not json\x02", 10);
	assert_string_equal(json_object_get_string(json_object_object_get(in, "path")),
			    "/home/user/a.bin");
	json_object_put(in);
	req_cleanup(r);
	r = fake(&f, "PUT", "/v1/files/content", "path=/a", "0123456789012345678901234567890123",
		 NULL);
	assert_int_equal(run(raw, r, &in, &e), SP_TOO_LARGE);
	req_cleanup(r);
	/* multipart: the body is left unread for the handler to stream; in
	 * comes from the query */
	r = fake(&f, "POST", "/v1/files/upload", "path=/a", "--x\r\n", NULL);
	assert_int_equal(run(multi, r, &in, &e), SP_OK);
	assert_int_equal(r->body.len, 0);
	assert_string_equal(json_object_get_string(json_object_object_get(in, "path")), "/a");
	json_object_put(in);
	req_cleanup(r);
	/* body kinds by default: none for GET and DELETE, JSON otherwise */
	assert_int_equal(route_body_kind(rt_of("GET", "/v1/sandboxes/x/ports/1")), RB_NONE);
	assert_int_equal(route_body_kind(rt_of("DELETE", "/v1/sandboxes/x/ports/1")), RB_NONE);
	assert_int_equal(route_body_kind(post), RB_JSON);
	assert_int_equal(route_body_kind(rt_of_real("POST", "/api/sandbox.create")), RB_JSON);
	assert_int_equal(route_body_kind(rt_of_real("GET", "/api/sandbox.one")), RB_NONE);
}

static void test_status_and_flags(void **state)
{
	(void)state;
	assert_int_equal(route_status(rt_of("POST", "/v1/sandboxes/x/ports")), 201);
	assert_int_equal(route_status(rt_of("DELETE", "/v1/sandboxes/x/ports/1")), 204);
	assert_int_equal(route_status(rt_of("GET", "/v1/sandboxes/x/ports/1")), 200);
	/* the Dokploy procedures: 200, none of the /v1 behaviours (the /v1
	 * operations in the same table, the sandbox endpoint's too, have
	 * theirs and the /v1 face) */
	for (const struct route *rt = handler_routes; rt->path; rt++) {
		if (strncmp(rt->path, "/v1/", 4) == 0 ||
		    strncmp(rt->path, "/endpoints/{sandbox}/v1/", 24) == 0) {
			assert_ptr_equal(route_face(rt), &face_v1);
			continue;
		}
		assert_int_equal(route_status(rt), 200);
		assert_int_equal(rt->flags & (RF_IDEMPOTENCY | RF_IDEMPOTENCY_REQUIRED |
					      RF_IF_MATCH | RF_ETAG),
				 0);
		assert_ptr_equal(route_face(rt), &face_dokploy);
	}
}

static void test_table_check(void **state)
{
	struct sp_err e;
	static const struct field_spec no_capture[] = {
		{ .name = "sandbox", .type = FT_ID, .source = FS_PATH },
		{ .name = NULL },
	};
	static const struct field_spec nothing[] = { { .name = NULL } };
	struct route bad[2] = {
		{ .method = "GET", .path = "/v1/x", .fn = h_none, .fields = no_capture },
		{ .method = NULL, .path = NULL }
	};

	(void)state;
	sp_err_clear(&e);
	assert_int_equal(route_table_check(handler_routes, &e), 0);
	assert_int_equal(route_table_check(table, &e), 0);
	/* a path field without its capture */
	assert_int_equal(route_table_check(bad, &e), -1);
	/* a capture without its field */
	bad[0].path = "/v1/x/{other}";
	bad[0].fields = nothing;
	assert_int_equal(route_table_check(bad, &e), -1);
	/* a limit over nginx's, a status that is no success, a bad template */
	bad[0].path = "/v1/x";
	bad[0].body_max = ROUTE_BODY_MAX + 1;
	assert_int_equal(route_table_check(bad, &e), -1);
	bad[0].body_max = 0;
	bad[0].status = 302;
	assert_int_equal(route_table_check(bad, &e), -1);
	bad[0].status = 0;
	bad[0].path = "/v1/{x";
	assert_int_equal(route_table_check(bad, &e), -1);
	bad[0].path = "/v1/x";
	assert_int_equal(route_table_check(bad, &e), 0);
}

static void test_face_table(void **state)
{
	(void)state;
	/* the Dokploy face: every core code has a status and a name */
	for (int c = SP_OK; c < SP_CODE_COUNT; c++) {
		assert_true(face_status(&face_dokploy, (enum sp_code)c) >= 200);
		assert_non_null(face_code_name(&face_dokploy, (enum sp_code)c));
	}
	assert_int_equal(face_status(&face_dokploy, SP_NOT_FOUND), 404);
	assert_string_equal(face_code_name(&face_dokploy, SP_METHOD_NOT_ALLOWED),
			    "METHOD_NOT_SUPPORTED");
	assert_int_equal(face_status(&face_dokploy, SP_QUOTA), 429);
	assert_string_equal(face_code_name(&face_dokploy, SP_QUOTA), "QUOTA_EXCEEDED");
	assert_int_equal(face_status(&face_dokploy, SP_PRECONDITION_REQUIRED), 428);
	assert_int_equal(face_status(&face_dokploy, SP_CODE_COUNT), 500);
	/* the core's own names are neutral */
	assert_string_equal(sp_code_name(SP_NOT_FOUND), "not_found");
	assert_ptr_equal(face_of_path("/api/sandbox.one"), &face_dokploy);
	assert_ptr_equal(face_of_path("/nope"), &face_dokploy);
}

/* The RF_* behaviours, in dispatch's one place (through handlers_call, as
 * the REST dispatch calls it). */
static enum sp_code call(const struct route *rt, struct req *r, json_object **in)
{
	struct handler_ctx h = { r, NULL, NULL, 1, 0 };
	json_object *out = NULL, *issues = NULL;
	struct sp_err e;
	int rc;

	r->org = "org_test";
	r->perms = "ports:read,ports:write";
	sp_err_clear(&e);
	assert_int_equal(route_parse_input(rt, r, in, &e), 0);
	rc = handlers_call(&h, rt, *in, 1, &out, &issues, &e);
	json_object_put(out);
	json_object_put(issues);
	return rc < 0 ? e.code : SP_OK;
}

static void test_behaviours(void **state)
{
	const struct route *del = rt_of("DELETE", "/v1/sandboxes/x/ports/1");
	const struct route *post = rt_of("POST", "/v1/sandboxes/x/ports");
	struct fake f;
	json_object *in;
	struct req *r;

	(void)state;
	/* RF_IF_MATCH: missing is 428, a weak or unquoted ETag 400 */
	r = fake(&f, "DELETE", "/v1/sandboxes/sb1/ports/80", NULL, NULL, NULL);
	assert_int_equal(call(del, r, &in), SP_PRECONDITION_REQUIRED);
	assert_int_equal(face_status(&face_dokploy, SP_PRECONDITION_REQUIRED), 428);
	json_object_put(in);
	req_cleanup(r);
	r = fake(&f, "DELETE", "/v1/sandboxes/sb1/ports/80", NULL, NULL, "HTTP_IF_MATCH=W/\"e1\"");
	assert_int_equal(call(del, r, &in), SP_BAD_REQUEST);
	json_object_put(in);
	req_cleanup(r);
	r = fake(&f, "DELETE", "/v1/sandboxes/sb1/ports/80", NULL, NULL, "HTTP_IF_MATCH=\"e1\"");
	assert_int_equal(call(del, r, &in), SP_OK);
	assert_string_equal(json_object_get_string(json_object_object_get(in, ROUTE_IN_IF_MATCH)),
			    "\"e1\"");
	json_object_put(in);
	req_cleanup(r);
	/* RF_IDEMPOTENCY: optional, validated, delivered */
	r = fake(&f, "POST", "/v1/sandboxes/sb1/ports", NULL, "{\"number\":1}", NULL);
	assert_int_equal(call(post, r, &in), SP_OK);
	assert_null(json_object_object_get(in, ROUTE_IN_IDEMPOTENCY_KEY));
	json_object_put(in);
	req_cleanup(r);
	r = fake(&f, "POST", "/v1/sandboxes/sb1/ports", NULL, "{\"number\":1}",
		 "HTTP_IDEMPOTENCY_KEY=k-1");
	assert_int_equal(call(post, r, &in), SP_OK);
	assert_string_equal(
		json_object_get_string(json_object_object_get(in, ROUTE_IN_IDEMPOTENCY_KEY)),
		"k-1");
	json_object_put(in);
	req_cleanup(r);
	r = fake(&f, "POST", "/v1/sandboxes/sb1/ports", NULL, "{\"number\":1}",
		 "HTTP_IDEMPOTENCY_KEY=");
	assert_int_equal(call(post, r, &in), SP_BAD_REQUEST);
	json_object_put(in);
	req_cleanup(r);
	/* the permission is the route's, per method */
	r = fake(&f, "DELETE", "/v1/sandboxes/sb1/ports/80", NULL, NULL, "HTTP_IF_MATCH=\"e1\"");
	r->org = "org_test";
	{
		struct handler_ctx h = { r, NULL, NULL, 1, 0 };
		json_object *out = NULL, *issues = NULL;
		struct sp_err e;
		sp_err_clear(&e);
		r->perms = "ports:read";
		assert_int_equal(route_parse_input(del, r, &in, &e), 0);
		assert_int_equal(handlers_call(&h, del, in, 1, &out, &issues, &e), -1);
		assert_int_equal(e.code, SP_FORBIDDEN);
	}
	json_object_put(in);
	req_cleanup(r);
}

/* The /v1 face: the document's codes and pinned statuses, its details. */
static void test_v1_face(void **state)
{
	struct sp_err e;
	json_object *o, *d;

	(void)state;
	assert_int_equal(face_status(&face_v1, SP_BAD_REQUEST), 400);
	assert_string_equal(face_code_name(&face_v1, SP_BAD_REQUEST), "invalidArgument");
	assert_string_equal(face_code_name(&face_v1, SP_UNAUTHORIZED), "unauthenticated");
	assert_string_equal(face_code_name(&face_v1, SP_FORBIDDEN), "permissionDenied");
	assert_string_equal(face_code_name(&face_v1, SP_NOT_FOUND), "notFound");
	assert_int_equal(face_status(&face_v1, SP_PRECONDITION), 409);
	assert_string_equal(face_code_name(&face_v1, SP_PRECONDITION), "failedPrecondition");
	assert_int_equal(face_status(&face_v1, SP_ETAG_MISMATCH), 412);
	assert_int_equal(face_status(&face_v1, SP_PRECONDITION_REQUIRED), 428);
	assert_string_equal(face_code_name(&face_v1, SP_TOO_MANY), "resourceExhausted");
	assert_int_equal(face_status(&face_v1, SP_UNIMPLEMENTED), 501);
	assert_string_equal(face_code_name(&face_v1, SP_UNAVAILABLE), "unavailable");
	assert_string_equal(face_code_name(&face_v1, SP_OUT_OF_RANGE), "outOfRange");
	for (int c = SP_OK; c < SP_CODE_COUNT; c++)
		assert_non_null(face_v1.codes[c].name);
	assert_ptr_equal(face_of_path("/v1/sandboxes"), &face_v1);
	/* a 400 names its field in a BadRequest detail */
	sp_err_field(&e, SP_BAD_REQUEST, "resources.cpus", "resources.cpus: bad");
	o = face_v1.error_body(&face_v1, &e, NULL);
	d = json_object_array_get_idx(json_object_object_get(o, "details"), 0);
	assert_string_equal(json_object_get_string(json_object_object_get(d, "@type")),
			    "type.googleapis.com/google.rpc.BadRequest");
	assert_string_equal(
		json_object_get_string(json_object_object_get(
			json_object_array_get_idx(json_object_object_get(d, "fieldViolations"), 0),
			"field")),
		"resources.cpus");
	json_object_put(o);
	/* a 412 carries the current ETag */
	sp_err_set(&e, SP_ETAG_MISMATCH, "etag_mismatch: stale");
	snprintf(e.field, sizeof(e.field), "\"abc\"");
	o = face_v1.error_body(&face_v1, &e, NULL);
	d = json_object_array_get_idx(json_object_object_get(o, "details"), 0);
	assert_string_equal(json_object_get_string(json_object_object_get(d, "currentEtag")),
			    "\"abc\"");
	json_object_put(o);
}

/* sandpit's own permissions grant the document's through one table. */
static void test_perm_aliases(void **state)
{
	(void)state;
	assert_true(perms_has("sandbox:read", "sandboxesRead"));
	assert_true(perms_has("sandbox:read", "sandboxesFilesRead"));
	assert_false(perms_has("sandbox:read", "sandboxesCreate"));
	assert_true(perms_has("sandbox:create", "sandboxesRename"));
	assert_true(perms_has("sandbox:create", "sandboxesLifecycle"));
	assert_false(perms_has("sandbox:create", "sandboxesDelete"));
	assert_true(perms_has("sandbox:delete", "sandboxesDelete"));
	assert_true(perms_has("sandboxesRead", "sandboxesRead"));
	assert_false(perms_has("sandboxesRead", "sandbox:read")); /* one way only */
	assert_false(perms_has("", "sandboxesRead"));
	for (const char *const *k = perms_known; *k; k++)
		assert_true(perms_has(perms_builtin_role("owner"), *k));
	assert_true(perms_has(perms_builtin_role("admin"), "mcpWrite"));
	assert_string_equal(perms_builtin_role("member"), "");
}

/* FT_OBJECT: nested members checked and named, unknown ones refused;
 * FF_INT64_TEXT takes a string of digits. */
static void test_nested_fields(void **state)
{
	static const struct field_spec sub[] = {
		{ .name = "n",
		  .type = FT_INT,
		  .flags = FF_NULLABLE | FF_INT64_TEXT,
		  .min = 1,
		  .max = 9 },
		{ .name = NULL },
	};
	static const struct field_spec fields[] = {
		{ .name = "o", .type = FT_OBJECT, .sub = sub },
		{ .name = "j", .type = FT_JSON },
		{ .name = NULL },
	};
	static const struct route rt = { .method = "POST", .path = "/v1/x", .fields = fields };
	static const char *const ok[] = { "{\"o\":{\"n\":3}}", "{\"o\":{\"n\":\"3\"}}",
					  "{\"o\":{\"n\":null}}", "{\"o\":{}}", "{\"j\":[1,{}]}" };
	static const char *const bad[][2] = { { "{\"o\":{\"n\":10}}", "o.n" },
					      { "{\"o\":{\"n\":\"x\"}}", "o.n" },
					      { "{\"o\":{\"m\":1}}", "o.m" },
					      { "{\"o\":1}", "o" } };
	struct sp_err e;
	json_object *issues;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		json_object *in = json_tokener_parse(ok[i]);
		assert_int_equal(route_validate(&rt, in, 0, &e, &issues), 0);
		json_object_put(in);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_object *in = json_tokener_parse(bad[i][0]);
		assert_int_equal(route_validate(&rt, in, 0, &e, &issues), -1);
		assert_string_equal(e.field, bad[i][1]);
		json_object_put(issues);
		json_object_put(in);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match_captures),
		cmocka_unit_test(test_match_typed),
		cmocka_unit_test(test_match_bad),
		cmocka_unit_test(test_authorize),
		cmocka_unit_test(test_field_sources),
		cmocka_unit_test(test_body_kinds_and_limits),
		cmocka_unit_test(test_status_and_flags),
		cmocka_unit_test(test_table_check),
		cmocka_unit_test(test_face_table),
		cmocka_unit_test(test_behaviours),
		cmocka_unit_test(test_v1_face),
		cmocka_unit_test(test_perm_aliases),
		cmocka_unit_test(test_nested_fields),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
