/*
 * The dashboard's sessions: POST /session signs in with an API key and
 * answers a session cookie (__Host-sandpit: HttpOnly, Secure,
 * SameSite=Strict, Path=/), GET /session says who the cookie is and its
 * CSRF token, DELETE /session signs out. The session lives in Redis
 * (store/session.c) by the keyed hash of its token, with SESSION_TTL_S,
 * and names the keyed hash of the key it was made with: /_auth
 * (handlers/auth.c) maps the cookie to that key, so every request made
 * with it has the key's organization and role, and a revoked key takes its
 * sessions with it.
 *
 * Cross-site use is refused here, for every cookie-authenticated request:
 * an Origin other than this server's, or a Sec-Fetch-Site other than
 * same-origin or none, is refused always; a mutation (any
 * method but GET/HEAD) and a WebSocket upgrade must carry this server's
 * Origin, and a mutation also the session's CSRF token in X-Sandpit-CSRF
 * (a header no cross-site form or link can send). Never logs or echoes a
 * key, a session token or a CSRF token.
 */
#include "handlers.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../store/store.h"

#define SESSION_TTL_S (12 * 3600)
#define SESSION_COOKIE "__Host-sandpit"
#define SESSION_TOKEN_LEN 48 /* [a-z0-9]: 248 bits */
#define SESSION_CSRF_LEN 32

int handlers_session_cookie(const char *c, char *tok, size_t cap)
{
	size_t nl = strlen(SESSION_COOKIE);

	while (*c) {
		while (*c == ' ' || *c == ';')
			c++;
		if (strncmp(c, SESSION_COOKIE, nl) == 0 && c[nl] == '=') {
			size_t n = strcspn(c + nl + 1, "; ");
			if (n != SESSION_TOKEN_LEN || n >= cap)
				return 0;
			memcpy(tok, c + nl + 1, n);
			tok[n] = '\0';
			for (size_t i = 0; i < n; i++)
				if (!((tok[i] >= 'a' && tok[i] <= 'z') ||
				      (tok[i] >= '0' && tok[i] <= '9')))
					return 0;
			return 1;
		}
		c += strcspn(c, ";");
	}
	return 0;
}

/* The session token of r's Cookie header (handlers_session_cookie). */
static int cookie_token(const struct req *r, char *tok, size_t cap)
{
	return handlers_session_cookie(req_param(r, "HTTP_COOKIE"), tok, cap);
}

/* The cross-site rules above for a request with method (and maybe an
 * Upgrade): 0 fine, -1 with e set (SP_FORBIDDEN). csrf NULL skips the
 * token (sign-in has no session yet). */
static int cross_site_check(const struct config *cfg, struct req *r, const char *method,
			    const char *csrf, struct sp_err *e)
{
	const char *origin = req_param(r, "HTTP_ORIGIN"),
		   *site = req_param(r, "HTTP_SEC_FETCH_SITE"),
		   *sent = req_param(r, "HTTP_X_SANDPIT_CSRF");
	int upgrade = *req_param(r, "HTTP_UPGRADE") != '\0';
	int safe = !upgrade && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0);
	char mine[V1_EP_ORIGIN_MAX];

	if (v1_endpoint_origin(cfg, r, mine, sizeof(mine)) < 0)
		return sp_err_set(e, SP_FORBIDDEN, "This server's origin is unknown (Host)");
	/* Sec-Fetch-Site (sent by current browsers on every request, even a
	 * no-cors GET that carries no Origin): only this origin's own
	 * requests, or one the user made (none: typed, bookmarked) */
	if ((*origin && strcmp(origin, mine) != 0) ||
	    (*site && strcmp(site, "same-origin") != 0 && strcmp(site, "none") != 0))
		return sp_err_set(e, SP_FORBIDDEN,
				  "A session cookie is not accepted from another origin");
	if (safe)
		return 0;
	if (!*origin)
		return sp_err_set(e, SP_FORBIDDEN,
				  "A session cookie needs the Origin header on this request");
	if (upgrade || !csrf)
		return 0;
	if (strlen(sent) != strlen(csrf) || sodium_memcmp(sent, csrf, strlen(csrf)) != 0)
		return sp_err_set(e, SP_FORBIDDEN,
				  "Missing or wrong X-Sandpit-CSRF header for this session");
	return 0;
}

int handlers_session_auth(struct sandbox_ctx *sb, struct req *r, const char *method,
			  char key_hash[65], char sess_hash[65], struct sp_err *e)
{
	char tok[SESSION_TOKEN_LEN + 1], csrf[SESSION_CSRF_LEN + 1];
	int rc;

	if (!cookie_token(r, tok, sizeof(tok)))
		return 0;
	crypto_key_hash(sb->cfg->data_key, tok, strlen(tok), sess_hash);
	sodium_memzero(tok, sizeof(tok));
	rc = store_session_get(sb->st, sess_hash, key_hash, 65, csrf, sizeof(csrf), NULL, e);
	if (rc < 0)
		return -1;
	if (rc == 0)
		return sp_err_set(e, SP_UNAUTHORIZED,
				  "The session has ended (signed out or expired): sign in again");
	rc = cross_site_check(sb->cfg, r, method, csrf, e);
	sodium_memzero(csrf, sizeof(csrf));
	return rc < 0 ? -1 : 1;
}

/* {org, role, keyId, permissions, csrfToken, expiresAt} of a session. */
static json_object *session_json(const struct auth_ident *id, const char *csrf, int64_t ttl_s)
{
	json_object *o = json_object_new_object(), *perms = json_object_new_array();
	const char *p = id->perms;

	while (*p) {
		size_t n = strcspn(p, ",");
		if (n)
			json_object_array_add(perms, json_object_new_string_len(p, (int)n));
		p += n;
		if (*p == ',')
			p++;
	}
	json_object_object_add(o, "org", json_object_new_string(id->org));
	json_object_object_add(o, "role", json_object_new_string(id->role));
	json_object_object_add(o, "keyId", json_object_new_string(id->key_id));
	json_object_object_add(o, "permissions", perms);
	json_object_object_add(o, "csrfToken", json_object_new_string(csrf));
	json_object_object_add(o, "expiresAt", json_object_new_int64(now_ms() + ttl_s * 1000));
	return o;
}

int handlers_session_body(struct req *r, json_object **in, struct sp_err *e)
{
	json_tokener *t;

	*in = NULL;
	if (req_read_body(r, 4096, e) < 0)
		return -1;
	t = json_tokener_new();
	if (t && r->body.len)
		*in = json_tokener_parse_ex(t, r->body.data, (int)r->body.len);
	json_tokener_free(t);
	return 0;
}

/* POST /session {"apiKey"}: a new session for a valid key. */
static int sign_in(struct sandbox_ctx *sb, struct req *r, struct sp_err *e)
{
	char kh[65], sh[65], tok[SESSION_TOKEN_LEN + 1], csrf[SESSION_CSRF_LEN + 1];
	char hdr[256];
	json_object *in = NULL, *k, *out;
	struct auth_ident id;
	const char *key;
	size_t len;
	int rc = -1;

	if (cross_site_check(sb->cfg, r, "POST", NULL, e) < 0)
		return -1;
	if (handlers_session_body(r, &in, e) < 0)
		return -1;
	if (!in || !json_object_is_type(in, json_type_object) ||
	    !json_object_object_get_ex(in, "apiKey", &k) ||
	    !json_object_is_type(k, json_type_string)) {
		sp_err_set(e, SP_BAD_REQUEST,
			   "apiKey: a JSON body {\"apiKey\": \"sp_...\"} is needed");
		goto out;
	}
	key = json_object_get_string(k);
	len = (size_t)json_object_get_string_len(k);
	if (len == 0 || len > 256) {
		sp_err_set(e, SP_UNAUTHORIZED, "apiKey: invalid API key");
		goto out;
	}
	crypto_key_hash(sb->cfg->data_key, key, len, kh);
	if (handlers_auth_ident(sb, kh, &id, e) < 0) {
		if (e->code == SP_UNAUTHORIZED)
			sp_err_set(e, SP_UNAUTHORIZED, "apiKey: invalid API key");
		goto out;
	}
	crypto_random_id(tok, SESSION_TOKEN_LEN);
	crypto_random_id(csrf, SESSION_CSRF_LEN);
	crypto_key_hash(sb->cfg->data_key, tok, SESSION_TOKEN_LEN, sh);
	if (store_session_put(sb->st, sh, kh, csrf, SESSION_TTL_S, e) < 0)
		goto out;
	snprintf(hdr, sizeof(hdr),
		 "Set-Cookie: " SESSION_COOKIE "=%s; Path=/; Max-Age=%d; Secure; HttpOnly; "
		 "SameSite=Strict\r\n",
		 tok, SESSION_TTL_S);
	out = session_json(&id, csrf, SESSION_TTL_S);
	req_send_json(r, 200, hdr, out);
	json_object_put(out);
	sodium_memzero(hdr, sizeof(hdr));
	rc = 0;
out:
	sodium_memzero(tok, sizeof(tok));
	sodium_memzero(csrf, sizeof(csrf));
	json_object_put(in);
	return rc;
}

/* GET /session (who) and DELETE /session (sign out). */
static int current(struct sandbox_ctx *sb, struct req *r, int del, struct sp_err *e)
{
	char tok[SESSION_TOKEN_LEN + 1], sh[65], kh[65], csrf[SESSION_CSRF_LEN + 1];
	struct auth_ident id;
	json_object *out;
	int64_t ttl = 0;
	int rc;

	if (!cookie_token(r, tok, sizeof(tok)))
		return sp_err_set(e, SP_UNAUTHORIZED, "Not signed in");
	crypto_key_hash(sb->cfg->data_key, tok, strlen(tok), sh);
	sodium_memzero(tok, sizeof(tok));
	rc = store_session_get(sb->st, sh, kh, sizeof(kh), csrf, sizeof(csrf), &ttl, e);
	if (rc < 0)
		return -1;
	if (rc == 0)
		return sp_err_set(e, SP_UNAUTHORIZED, "The session has ended: sign in again");
	if (cross_site_check(sb->cfg, r, del ? "DELETE" : "GET", csrf, e) < 0)
		goto fail;
	if (del) {
		if (store_session_del(sb->st, sh, e) < 0)
			goto fail;
		sodium_memzero(csrf, sizeof(csrf));
		req_send_json(r, 200,
			      "Set-Cookie: " SESSION_COOKIE
			      "=; Path=/; Max-Age=0; Secure; HttpOnly; "
			      "SameSite=Strict\r\n",
			      NULL);
		return 0;
	}
	if (handlers_auth_ident(sb, kh, &id, e) < 0) {
		if (e->code == SP_UNAUTHORIZED) {
			struct sp_err de;
			if (store_session_del(sb->st, sh, &de) < 0)
				log_warn("session: drop after key revocation: %s", de.msg);
			sp_err_set(e, SP_UNAUTHORIZED, "The key of this session was revoked");
		}
		goto fail;
	}
	out = session_json(&id, csrf, ttl);
	req_send_json(r, 200, NULL, out);
	json_object_put(out);
	sodium_memzero(csrf, sizeof(csrf));
	return 0;
fail:
	sodium_memzero(csrf, sizeof(csrf));
	return -1;
}

void handlers_session(struct sandbox_ctx *sb, struct req *r)
{
	struct sp_err e;
	int rc;

	sp_err_clear(&e);
	if (strncmp(r->path, "/session/", 9) == 0) {
		handlers_session_admin(sb, r);
		return;
	}
	if (strcmp(r->method, "POST") == 0)
		rc = sign_in(sb, r, &e);
	else if (strcmp(r->method, "GET") == 0)
		rc = current(sb, r, 0, &e);
	else if (strcmp(r->method, "DELETE") == 0)
		rc = current(sb, r, 1, &e);
	else
		rc = sp_err_set(&e, SP_METHOD_NOT_ALLOWED, "/session takes GET, POST or DELETE");
	if (rc < 0)
		req_send_error(r, &e, NULL);
}
