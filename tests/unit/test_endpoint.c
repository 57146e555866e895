/*
 * Unit tests for the sandbox endpoint's credentials and advertisement
 * (handlers/v1_endpoint.c): a credential made and checked (genuine,
 * edited, for another sandbox or origin, expired, made with another data
 * key), its permissions through /_auth's route decision on a table with an
 * endpoint operation (a permission it lacks: 403), the endpoint's origin
 * (public_url, else the request's scheme and Host; public_url's checks),
 * and core.endpoint as
 * the document's SandboxEndpoint wants it (not emitted without an
 * operation: capabilities needs one).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/config.h"
#include "fcgi/request.h"
#include "fcgi/route.h"
#include "handlers/handlers.h"

static const unsigned char key1[32] = { 1, 2, 3 }, key2[32] = { 9 };
static const char origin[] = "https://sandpit.example:8443";

static void make(const char *sandbox, unsigned perms, int64_t exp, char *tok, size_t cap)
{
	struct v1_ep_claims c = { .perms = perms, .exp_ms = exp };
	char aud[256];

	snprintf(c.org, sizeof(c.org), "acme");
	snprintf(c.sandbox, sizeof(c.sandbox), "%s", sandbox);
	snprintf(aud, sizeof(aud), "%s/endpoints/%s", origin, sandbox);
	assert_int_equal(v1_endpoint_token_make(key1, &c, aud, tok, cap), 0);
}

static void test_token(void **state)
{
	char tok[V1_EP_TOKEN_MAX], bad[V1_EP_TOKEN_MAX];
	struct v1_ep_claims c;
	size_t n;

	(void)state;
	make("sb1", V1_EP_EXEC | V1_EP_FILES_READ, 2000000, tok, sizeof(tok));
	n = strlen(tok);
	assert_true(strncmp(tok, "sbe1.", 5) == 0);
	assert_int_equal(v1_endpoint_token_check(key1, tok, n, origin, "sb1", 1000000, &c),
			 V1_EP_OK);
	assert_string_equal(c.org, "acme");
	assert_string_equal(c.sandbox, "sb1");
	assert_int_equal(c.perms, V1_EP_EXEC | V1_EP_FILES_READ);
	assert_int_equal(c.exp_ms, 2000000);
	/* expiry is exclusive */
	assert_int_equal(v1_endpoint_token_check(key1, tok, n, origin, "sb1", 2000000, &c),
			 V1_EP_EXPIRED);
	/* another sandbox's endpoint; another origin; another data key */
	assert_int_equal(v1_endpoint_token_check(key1, tok, n, origin, "sb2", 1000000, &c),
			 V1_EP_OTHER_SANDBOX);
	assert_int_equal(
		v1_endpoint_token_check(key1, tok, n, "https://elsewhere", "sb1", 1000000, &c),
		V1_EP_INVALID);
	assert_int_equal(v1_endpoint_token_check(key2, tok, n, origin, "sb1", 1000000, &c),
			 V1_EP_INVALID);
	/* every single character changed, and every shorter prefix */
	for (size_t i = 0; i < n; i++) {
		memcpy(bad, tok, n + 1);
		bad[i] = bad[i] == 'a' ? 'b' : 'a';
		assert_int_equal(v1_endpoint_token_check(key1, bad, n, origin, "sb1", 1000000, &c),
				 V1_EP_INVALID);
		assert_int_equal(v1_endpoint_token_check(key1, tok, i, origin, "sb1", 1000000, &c),
				 V1_EP_INVALID);
	}
	assert_int_equal(v1_endpoint_token_check(key1, "", 0, origin, "sb1", 1000000, &c),
			 V1_EP_INVALID);
	/* an invalid check leaves no claims behind */
	assert_string_equal(c.org, "");
}

/* A table with one endpoint operation, as issue 16 will add them. */
static int h_none(struct handler_ctx *h, json_object *in, json_object **out, struct sp_err *e)
{
	(void)h;
	(void)in;
	(void)out;
	return sp_err_set(e, SP_INTERNAL, "not called");
}
static const struct field_spec sb_path[] = {
	{ .name = "sandbox",
	  .type = FT_ID,
	  .flags = FF_REQUIRED,
	  .min = 1,
	  .max = 64,
	  .source = FS_PATH },
	{ NULL, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, 0, NULL, NULL },
};
static const struct route no_ep_table[] = {
	{ .method = "GET",
	  .path = "/v1/sandboxes/{sandbox}",
	  .fn = h_none,
	  .fields = sb_path,
	  .perm = "sandboxesRead",
	  .kind = ROUTE_QUERY,
	  .op_id = "getSandbox" },
	{ NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, 0, 0, 0, 0, NULL },
};
static const struct route ep_table[] = {
	{ .method = "POST",
	  .path = "/endpoints/{sandbox}/v1/processes/exec",
	  .fn = h_none,
	  .fields = sb_path,
	  .perm = "sandboxesExec",
	  .kind = ROUTE_MUTATION,
	  .op_id = "exec" },
	{ .method = "GET",
	  .path = "/v1/sandboxes/{sandbox}",
	  .fn = h_none,
	  .fields = sb_path,
	  .perm = "sandboxesRead",
	  .kind = ROUTE_QUERY,
	  .op_id = "getSandbox" },
	{ .method = NULL },
};

static void test_permissions(void **state)
{
	char list[128];
	const struct route *rt;

	(void)state;
	v1_endpoint_perms_list(V1_EP_FILES_READ | V1_EP_FILES_WRITE, list, sizeof(list));
	assert_string_equal(list, "sandboxesFilesRead,sandboxesFilesWrite");
	assert_int_equal(
		route_authorize(ep_table, "POST", "/endpoints/sb1/v1/processes/exec", list, &rt),
		ROUTE_DENY_PERM);
	assert_string_equal(rt->perm, "sandboxesExec");
	v1_endpoint_perms_list(V1_EP_EXEC, list, sizeof(list));
	assert_string_equal(list, "sandboxesExec");
	assert_int_equal(
		route_authorize(ep_table, "POST", "/endpoints/sb1/v1/processes/exec", list, &rt),
		ROUTE_ALLOW);
	/* a credential's permissions reach no management operation */
	v1_endpoint_perms_list(V1_EP_EXEC | V1_EP_FILES_READ | V1_EP_FILES_WRITE, list,
			       sizeof(list));
	assert_int_equal(route_authorize(ep_table, "GET", "/v1/sandboxes/sb1", list, &rt),
			 ROUTE_DENY_PERM);
}

static void test_origin(void **state)
{
	static struct config cfg;
	FCGX_Request fx = { 0 };
	struct req r = { 0 };
	char host[64] = "HTTP_HOST=127.0.0.1:8443", scheme[] = "REQUEST_SCHEME=https";
	char *envp[] = { host, scheme, NULL };
	char out[256];

	(void)state;
	fx.envp = envp;
	r.fx = &fx;
	assert_int_equal(v1_endpoint_origin(&cfg, &r, out, sizeof(out)), 0);
	assert_string_equal(out, "https://127.0.0.1:8443");
	snprintf(host, sizeof(host), "HTTP_HOST=[::1]:99");
	assert_int_equal(v1_endpoint_origin(&cfg, &r, out, sizeof(out)), 0);
	assert_string_equal(out, "https://[::1]:99");
	/* a Host a URL would have to escape is no origin */
	snprintf(host, sizeof(host), "HTTP_HOST=evil/x?y");
	assert_int_equal(v1_endpoint_origin(&cfg, &r, out, sizeof(out)), -1);
	/* public_url wins over the request's */
	snprintf(cfg.public_url, sizeof(cfg.public_url), "https://sandpit.example/base");
	assert_int_equal(v1_endpoint_origin(&cfg, &r, out, sizeof(out)), 0);
	assert_string_equal(out, "https://sandpit.example/base");
}

/* public_url in the configuration: an origin and optional prefix, or
 * nothing; never a trailing '/', a query or what a URL escapes. */
static void test_public_url_config(void **state)
{
	static const char *const good[] = { "https://sandpit.example.com", "http://10.0.0.1:8080",
					    "https://h.example/pre/fix", "https://[::1]:8443" };
	static const char *const bad[] = { "https://h.example/", "ftp://h",	    "h.example",
					   "https://",		 "https://h/x?y=1", "https://h/#f",
					   "https://h x",	 "https://h/%2e" };
	char dir[] = "/tmp/sandpit-unit-XXXXXX", path[256], key[256], err[512];
	static struct config cfg;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(key, sizeof(key), "%s/key", dir);
	snprintf(path, sizeof(path), "%s/conf", dir);
	f = fopen(key, "w");
	fputs("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", f);
	fclose(f);
	chmod(key, 0600);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		f = fopen(path, "w");
		fprintf(f, "data_key_file = %s\npublic_url = %s\n", key, good[i]);
		fclose(f);
		assert_int_equal(config_load(path, &cfg, err, sizeof(err)), 0);
		assert_string_equal(cfg.public_url, good[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f = fopen(path, "w");
		fprintf(f, "data_key_file = %s\npublic_url = %s\n", key, bad[i]);
		fclose(f);
		assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "public_url"));
	}
	unlink(path);
	unlink(key);
	rmdir(dir);
}

static void test_advertisement(void **state)
{
	struct sandbox sb;
	json_object *o, *v, *auth;
	const char *caps[17];

	(void)state;
	memset(&sb, 0, sizeof(sb));
	snprintf(sb.id, sizeof(sb.id), "sb1");
	/* the real table: the seven process operations (interact among them),
	 * the seven unary file ones and the two streamed (issue 16) */
	assert_int_equal(v1_endpoint_capabilities(handler_routes, caps, 17), 16);
	assert_string_equal(caps[0], "exec");
	assert_string_equal(caps[5], "signal");
	assert_string_equal(caps[6], "interact");
	assert_string_equal(caps[7], "list");
	assert_string_equal(caps[13], "move");
	assert_string_equal(caps[14], "upload");
	assert_string_equal(caps[15], "download");
	o = v1_endpoint_json(handler_routes, origin, &sb);
	assert_non_null(o);
	json_object_put(o);
	/* a table without one: no advertisement (capabilities has minItems 1) */
	assert_int_equal(v1_endpoint_capabilities(no_ep_table, caps, 8), 0);
	assert_null(v1_endpoint_json(no_ep_table, origin, &sb));
	assert_int_equal(v1_endpoint_capabilities(ep_table, caps, 8), 1);
	assert_string_equal(caps[0], "exec");
	o = v1_endpoint_json(ep_table, origin, &sb);
	assert_non_null(o);
	assert_true(json_object_object_get_ex(o, "uri", &v));
	assert_string_equal(json_object_get_string(v),
			    "https://sandpit.example:8443/endpoints/sb1");
	assert_true(json_object_object_get_ex(o, "credentialAudience", &v));
	assert_string_equal(json_object_get_string(v),
			    "https://sandpit.example:8443/endpoints/sb1");
	assert_true(json_object_object_get_ex(o, "protocol", &v));
	assert_string_equal(json_object_get_string(v), "http");
	assert_true(json_object_object_get_ex(o, "sandbox", &v));
	assert_string_equal(json_object_get_string(v), "sandboxes/sb1");
	assert_true(json_object_object_get_ex(o, "apiVersion", &v));
	assert_string_equal(json_object_get_string(v), "v1");
	assert_true(json_object_object_get_ex(o, "capabilities", &v));
	assert_int_equal(json_object_array_length(v), 1);
	assert_true(json_object_object_get_ex(o, "authentication", &auth));
	assert_true(json_object_object_get_ex(auth, "scheme", &v));
	assert_string_equal(json_object_get_string(v), "scopedBearer");
	assert_true(json_object_object_get_ex(auth, "defaultTtl", &v));
	assert_string_equal(json_object_get_string(v), "300s");
	assert_true(json_object_object_get_ex(auth, "maxTtl", &v));
	assert_string_equal(json_object_get_string(v), "300s");
	assert_true(json_object_object_get_ex(auth, "credentialTransports", &v));
	assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 0)),
			    "authorizationHeader");
	assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 1)),
			    "webSocketSubprotocol");
	json_object_put(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token),	      cmocka_unit_test(test_permissions),
		cmocka_unit_test(test_origin),	      cmocka_unit_test(test_public_url_config),
		cmocka_unit_test(test_advertisement),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
