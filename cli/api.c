/*
 * The REST client behind the sandpit command line. See api.h. One curl
 * handle per process; answers are capped (a 10 MiB file travels as ~14 MB
 * of base64) and parsed with json-c. The key never goes to a log line and
 * is wiped on close.
 */
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <sodium.h>

#include "../common/buf.h"
#include "../common/util.h"

#define API_ANSWER_MAX (64u * 1024 * 1024)
#define API_JSON_DEPTH 32

struct api {
	CURL *curl;
	char url[1024];
	char key[512];
	char ca[1024];
	char err[1024];
	int status;
};

struct api *api_open(char *err, size_t cap)
{
	const char *url = getenv("SANDPIT_URL"), *key = getenv("SANDPIT_KEY"),
		   *ca = getenv("SANDPIT_CA");
	struct api *a;
	size_t n;

	if (!url || !*url || !key || !*key) {
		snprintf(err, cap,
			 "set SANDPIT_URL (https://host:port) and SANDPIT_KEY (an API key)");
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		snprintf(err, cap, "out of memory");
		return NULL;
	}
	if (str_copy(a->url, sizeof(a->url), url) < 0 ||
	    str_copy(a->key, sizeof(a->key), key) < 0 ||
	    (ca && str_copy(a->ca, sizeof(a->ca), ca) < 0)) {
		snprintf(err, cap, "SANDPIT_URL, SANDPIT_KEY or SANDPIT_CA is too long");
		api_close(a);
		return NULL;
	}
	n = strlen(a->url);
	while (n && a->url[n - 1] == '/')
		a->url[--n] = '\0';
	if (strncmp(a->url, "https://", 8) != 0 && strncmp(a->url, "http://", 7) != 0) {
		snprintf(err, cap, "SANDPIT_URL must start with https:// or http://");
		api_close(a);
		return NULL;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	a->curl = curl_easy_init();
	if (!a->curl) {
		snprintf(err, cap, "curl_easy_init failed");
		api_close(a);
		return NULL;
	}
	return a;
}

void api_close(struct api *a)
{
	if (!a)
		return;
	if (a->curl)
		curl_easy_cleanup(a->curl);
	sodium_memzero(a->key, sizeof(a->key));
	free(a);
}

const char *api_error(const struct api *a)
{
	return a->err;
}

int api_status(const struct api *a)
{
	return a->status;
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;

	if (buf_append(b, p, size * n) < 0)
		return 0; /* over the cap: curl fails with CURLE_WRITE_ERROR */
	return size * n;
}

/* Appends in's members to b as a query string. */
static int query_string(CURL *c, json_object *in, struct buf *b)
{
	char sep = '?';

	if (!in)
		return 0;
	json_object_object_foreach(in, k, v)
	{
		const char *text;
		char *ek, *ev;
		if (!v)
			continue;
		text = json_object_is_type(v, json_type_string) ? json_object_get_string(v)
								: json_object_to_json_string(v);
		ek = curl_easy_escape(c, k, 0);
		ev = curl_easy_escape(c, text, 0);
		if (!ek || !ev || buf_printf(b, "%c%s=%s", sep, ek, ev) < 0) {
			curl_free(ek);
			curl_free(ev);
			return -1;
		}
		curl_free(ek);
		curl_free(ev);
		sep = '&';
	}
	return 0;
}

static json_object *parse(const char *data, size_t len)
{
	struct json_tokener *tok = json_tokener_new_ex(API_JSON_DEPTH);
	json_object *o;

	if (!tok)
		return NULL;
	o = json_tokener_parse_ex(tok, data, (int)len);
	if (o && json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

int api_call(struct api *a, const char *method, const char *proc, json_object *in,
	     json_object **out)
{
	struct curl_slist *hdrs = NULL;
	struct buf url, answer;
	char keyhdr[600];
	const char *body = NULL;
	json_object *o = NULL, *msg;
	long status = 0;
	CURLcode cc;
	int rc = -1, post = strcmp(method, "POST") == 0;

	*out = NULL;
	a->status = 0;
	a->err[0] = '\0';
	buf_init(&url, 64 * 1024);
	buf_init(&answer, API_ANSWER_MAX);
	if (buf_printf(&url, "%s/api/%s", a->url, proc) < 0 ||
	    (!post && query_string(a->curl, in, &url) < 0)) {
		snprintf(a->err, sizeof(a->err), "the request is too long");
		goto out;
	}
	snprintf(keyhdr, sizeof(keyhdr), "x-api-key: %s", a->key);
	hdrs = curl_slist_append(hdrs, keyhdr);
	hdrs = curl_slist_append(hdrs, "Accept: application/json");
	if (post) {
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
		body = in ? json_object_to_json_string_ext(
				    in, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
			  : "{}";
	}
	curl_easy_reset(a->curl);
	curl_easy_setopt(a->curl, CURLOPT_URL, url.data);
	curl_easy_setopt(a->curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(a->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(a->curl, CURLOPT_WRITEDATA, &answer);
	curl_easy_setopt(a->curl, CURLOPT_CONNECTTIMEOUT, 15L);
	curl_easy_setopt(a->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(a->curl, CURLOPT_USERAGENT, "sandpit-cli");
	curl_easy_setopt(a->curl, CURLOPT_PROTOCOLS_STR, "https,http");
	if (a->ca[0])
		curl_easy_setopt(a->curl, CURLOPT_CAINFO, a->ca);
	if (post) {
		curl_easy_setopt(a->curl, CURLOPT_POST, 1L);
		curl_easy_setopt(a->curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(a->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	}
	cc = curl_easy_perform(a->curl);
	if (cc != CURLE_OK) {
		snprintf(a->err, sizeof(a->err), "%s: %s", a->url,
			 cc == CURLE_WRITE_ERROR ? "the answer is too large"
						 : curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &status);
	a->status = (int)status;
	o = parse(answer.data ? answer.data : "", answer.len);
	if (status < 200 || status > 299) {
		if (o && json_object_object_get_ex(o, "message", &msg))
			snprintf(a->err, sizeof(a->err), "%s", json_object_get_string(msg));
		else
			snprintf(a->err, sizeof(a->err), "HTTP %ld from %s", status, a->url);
		goto out;
	}
	if (!o) {
		snprintf(a->err, sizeof(a->err), "the answer from %s is not JSON", a->url);
		goto out;
	}
	*out = o;
	o = NULL;
	rc = 0;
out:
	json_object_put(o);
	curl_slist_free_all(hdrs);
	sodium_memzero(keyhdr, sizeof(keyhdr));
	buf_free(&url);
	buf_free(&answer);
	return rc;
}
