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

/* The incremental decoder of a leading {"stdout":"..." member. */
enum sd_state { SD_PREFIX, SD_STR, SD_ESC, SD_U, SD_DONE, SD_OFF };

struct answer {
	struct buf b;
	api_sink sink;
	void *arg;
	enum sd_state st;
	size_t prefix;	/* bytes of the prefix matched */
	unsigned u;	/* the \u digits so far */
	int udigits;	/* how many */
	unsigned hi;	/* a high surrogate waiting for its low half */
	int streamed;	/* sink got something */
	char out[4096]; /* decoded bytes not yet given to the sink */
	size_t nout;
};

#define SD_PREFIX_TEXT "{\"stdout\":\""

static void sd_flush(struct answer *an)
{
	if (an->nout) {
		an->sink(an->out, an->nout, an->arg);
		an->streamed = 1;
		an->nout = 0;
	}
}

static void sd_put(struct answer *an, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (an->nout == sizeof(an->out))
			sd_flush(an);
		an->out[an->nout++] = p[i];
	}
}

/* Appends code point cp as UTF-8 (a lone surrogate as U+FFFD). */
static void sd_put_cp(struct answer *an, unsigned cp)
{
	char u[4];

	if (cp >= 0xD800 && cp <= 0xDFFF)
		cp = 0xFFFD;
	if (cp < 0x80) {
		u[0] = (char)cp;
		sd_put(an, u, 1);
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3F));
		sd_put(an, u, 2);
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F));
		sd_put(an, u, 3);
	} else {
		u[0] = (char)(0xF0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char)(0x80 | (cp & 0x3F));
		sd_put(an, u, 4);
	}
}

static void sd_feed(struct answer *an, const char *p, size_t n)
{
	for (size_t i = 0; i < n && an->st != SD_DONE && an->st != SD_OFF; i++) {
		char c = p[i];
		switch (an->st) {
		case SD_PREFIX:
			if (c != SD_PREFIX_TEXT[an->prefix]) {
				an->st = SD_OFF;
				break;
			}
			if (++an->prefix == sizeof(SD_PREFIX_TEXT) - 1)
				an->st = SD_STR;
			break;
		case SD_STR:
			if (c == '"') {
				an->st = SD_DONE;
			} else if (c == '\\') {
				an->st = SD_ESC;
			} else {
				if (an->hi) {
					sd_put_cp(an, 0xFFFD);
					an->hi = 0;
				}
				sd_put(an, &c, 1);
			}
			break;
		case SD_ESC: {
			const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
			const char *k = strchr(from, c);
			if (c == 'u') {
				an->st = SD_U;
				an->u = 0;
				an->udigits = 0;
				break;
			}
			if (an->hi) {
				sd_put_cp(an, 0xFFFD);
				an->hi = 0;
			}
			if (k && c)
				sd_put(an, to + (k - from), 1);
			an->st = SD_STR;
			break;
		}
		case SD_U: {
			int d = c >= '0' && c <= '9'   ? c - '0'
				: c >= 'a' && c <= 'f' ? c - 'a' + 10
				: c >= 'A' && c <= 'F' ? c - 'A' + 10
						       : -1;
			if (d < 0) {
				an->st = SD_OFF;
				break;
			}
			an->u = an->u * 16 + (unsigned)d;
			if (++an->udigits < 4)
				break;
			an->st = SD_STR;
			if (an->u >= 0xD800 && an->u <= 0xDBFF) {
				if (an->hi)
					sd_put_cp(an, 0xFFFD);
				an->hi = an->u;
			} else if (an->u >= 0xDC00 && an->u <= 0xDFFF && an->hi) {
				sd_put_cp(an,
					  0x10000 + ((an->hi - 0xD800) << 10) + (an->u - 0xDC00));
				an->hi = 0;
			} else {
				if (an->hi)
					sd_put_cp(an, 0xFFFD);
				an->hi = 0;
				sd_put_cp(an, an->u);
			}
			break;
		}
		default:
			break;
		}
	}
	sd_flush(an);
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct answer *an = arg;

	if (buf_append(&an->b, p, size * n) < 0)
		return 0; /* over the cap: curl fails with CURLE_WRITE_ERROR */
	if (an->sink)
		sd_feed(an, p, size * n);
	return size * n;
}

/* The transport error, with a hint where the fix is known. */
static void transport_error(struct api *a, CURLcode cc)
{
	const char *hint = "";

	if (cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE ||
	    cc == CURLE_SSL_CERTPROBLEM)
		hint = a->ca[0]
			       ? " (check that SANDPIT_CA names the server's CA certificate)"
			       : " (a private CA, as make up's: set SANDPIT_CA to its certificate, "
				 "e.g. SANDPIT_CA=state/tls/cert.pem)";
	else if (cc == CURLE_COULDNT_CONNECT)
		hint = " (is sandpit running there? make up prints its URL)";
	snprintf(a->err, sizeof(a->err), "%s: %s%s", a->url,
		 cc == CURLE_WRITE_ERROR ? "the answer is too large" : curl_easy_strerror(cc),
		 hint);
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
	return api_call_stream(a, method, proc, in, NULL, NULL, NULL, out);
}

int api_call_stream(struct api *a, const char *method, const char *proc, json_object *in,
		    api_sink sink, void *arg, int *streamed, json_object **out)
{
	struct curl_slist *hdrs = NULL;
	struct buf url;
	struct answer an = { .sink = sink, .arg = arg };
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
	buf_init(&an.b, API_ANSWER_MAX);
	if (streamed)
		*streamed = 0;
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
	curl_easy_setopt(a->curl, CURLOPT_WRITEDATA, &an);
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
	if (streamed)
		*streamed = an.streamed;
	if (cc != CURLE_OK) {
		transport_error(a, cc);
		goto out;
	}
	curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &status);
	a->status = (int)status;
	o = parse(an.b.data ? an.b.data : "", an.b.len);
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
	buf_free(&an.b);
	return rc;
}
