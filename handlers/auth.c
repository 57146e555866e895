/*
 * /_auth: nginx's auth_request subrequest for every API and WebSocket call.
 * Maps the API key (x-api-key or "Authorization: Bearer"; without one,
 * the dashboard's session cookie: handlers/session.c) to its
 * organization, role and permissions (at a sandbox endpoint, /endpoints/:
 * the endpoint credential to its organization and permissions instead,
 * never a key), and checks the permission of the route being called: 200
 * with X-Sandpit-* identity headers, 401 for a missing or unknown key (or
 * credential), 403 for a missing permission or for a path no
 * route has (X-Sandpit-Deny: 404 or 405 then), 503 when the store
 * cannot answer (nginx then denies). Answers are cached in the worker for
 * AUTH_CACHE_MS by the key's keyed hash, never by the key, so a burst costs
 * one Redis lookup per worker; nginx keeps 200s for 1 s more (see
 * sandpit.conf.tmpl), so a revoked key stops working within 3 s; endpoint
 * credentials are never cached (they are charged to the sandbox's rate on
 * each request). Never logs or echoes a key or a credential.
 */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/perms.h"
#include "../common/util.h"
#include "../store/store.h"

#define AUTH_CACHE_MS 2000
#define AUTH_CACHE_SLOTS 64

struct auth_entry {
	char hash[65];
	char org[65], role[40], key_id[40];
	char perms[PERMS_LIST_MAX];
	int64_t until; /* mono_ms; 0 = empty */
};

static struct auth_entry cache[AUTH_CACHE_SLOTS];

/* Extracts the API key from x-api-key or "Authorization: Bearer". */
static const char *api_key(struct req *r, size_t *len)
{
	const char *k = req_param(r, "HTTP_X_API_KEY");

	if (!*k) {
		const char *a = req_param(r, "HTTP_AUTHORIZATION");
		if (strncasecmp(a, "Bearer ", 7) == 0)
			k = a + 7;
	}
	while (*k == ' ')
		k++;
	*len = strlen(k);
	while (*len && k[*len - 1] == ' ')
		(*len)--;
	return k;
}

static void answer(struct req *r, int status, const char *headers)
{
	const char *reason = status == 200   ? "OK"
			     : status == 401 ? "Unauthorized"
			     : status == 403 ? "Forbidden"
					     : "Service Unavailable";

	r->status = status;
	FCGX_FPrintF(r->fx->out,
		     "Status: %d %s\r\nCache-Control: no-store\r\nContent-Length: 0\r\n%s\r\n",
		     status, reason, headers);
}

/* The cache slot of a key hash (hex digits, evenly spread). */
static unsigned slot_of(const char *hash)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++)
		v = v * 16 + (unsigned)(hash[i] <= '9' ? hash[i] - '0' : hash[i] - 'a' + 10);
	return v % AUTH_CACHE_SLOTS;
}

/* Looks the key up (cache, then Redis). 0 found, -1 with e set. */
static int lookup(struct sandbox_ctx *sb, const char *hash, struct auth_entry *out,
		  struct sp_err *e)
{
	struct store_rec rec = { 0 };
	const char *org, *role, *key_id, *perms;
	char *custom = NULL;
	int64_t now = mono_ms();
	struct auth_entry *c = &cache[slot_of(hash)];

	if (c->until > now && strcmp(c->hash, hash) == 0) {
		*out = *c;
		return 0;
	}
	if (store_key_get(sb->st, hash, &rec, e) < 0)
		return -1;
	org = store_rec_get(&rec, "org");
	role = store_rec_get(&rec, "role");
	key_id = store_rec_get(&rec, "keyId");
	if (!org || !role || !key_id) {
		store_rec_free(&rec);
		return sp_err_set(e, SP_UNAUTHORIZED, "Invalid API key");
	}
	perms = perms_builtin_role(role);
	if (!perms) {
		struct sp_err re;
		if (store_role_get(sb->st, org, role, &custom, &re) < 0) {
			if (re.code != SP_NOT_FOUND) {
				store_rec_free(&rec);
				*e = re;
				return -1;
			}
			perms = ""; /* a deleted role grants nothing */
		} else {
			perms = custom;
		}
	}
	memset(out, 0, sizeof(*out));
	/* a field cut short would be another identity or fewer rights: an
	 * error naming the limit (503 to nginx), never a truncated copy */
	if (str_copy(out->hash, sizeof(out->hash), hash) < 0 ||
	    str_copy(out->org, sizeof(out->org), org) < 0 ||
	    str_copy(out->role, sizeof(out->role), role) < 0 ||
	    str_copy(out->key_id, sizeof(out->key_id), key_id) < 0 ||
	    str_copy(out->perms, sizeof(out->perms), perms) < 0) {
		log_error("auth: key %.12s: org, role, keyId or permissions longer than the "
			  "cache holds (%zu, %zu, %zu, %zu bytes)",
			  key_id, sizeof(out->org) - 1, sizeof(out->role) - 1,
			  sizeof(out->key_id) - 1, sizeof(out->perms) - 1);
		free(custom);
		store_rec_free(&rec);
		return sp_err_set(e, SP_INTERNAL, "key record over the auth cache's limits");
	}
	out->until = now + AUTH_CACHE_MS;
	*c = *out;
	free(custom);
	store_rec_free(&rec);
	return 0;
}

/* The route decision of an authenticated request (a key's or an endpoint
 * credential's perms), answered: 1 when allowed (nothing sent yet), 0 when
 * a refusal was sent. who names the caller in a 403's message, none starts
 * a 404's. */
static int route_check(struct req *r, const char *uri, const char *perms, const char *who,
		       const char *none)
{
	char hdr[512];
	const struct route *rt;
	size_t plen;

	/* Every route is checked, templated or not, on the raw path nginx got
	 * ($request_uri): a typed capture never holds an escape, a dot segment
	 * or an empty one, so a raw path that matches is its own decoded form
	 * and sandpitd routes it ($uri) to this same route. What matches no
	 * route (or not with this method) is denied here: 403 to nginx, with
	 * X-Sandpit-Deny naming the status the face's error page then
	 * answers the caller with (404, 405). */
	switch (route_authorize(handler_routes, req_param(r, "SANDPIT_AUTH_METHOD"), uri, perms,
				&rt)) {
	case ROUTE_DENY_UNKNOWN:
		/* the path only, never a line break; nginx shows it only when it
		 * is plain text ($sp_error_safe) */
		plen = strcspn(uri, "?\r\n");
		snprintf(hdr, sizeof(hdr), "X-Sandpit-Deny: 404\r\nX-Sandpit-Error: %s at %.*s\r\n",
			 none, (int)(plen > 200 ? 200 : plen), uri);
		answer(r, 403, hdr);
		return 0;
	case ROUTE_DENY_METHOD:
		snprintf(hdr, sizeof(hdr),
			 "X-Sandpit-Deny: 405\r\nX-Sandpit-Error: %s needs %s\r\n", rt->path,
			 rt->method);
		answer(r, 403, hdr);
		return 0;
	case ROUTE_DENY_PERM:
		snprintf(hdr, sizeof(hdr), "X-Sandpit-Error: %s lacks the %s permission\r\n", who,
			 rt->perm);
		answer(r, 403, hdr);
		return 0;
	case ROUTE_ALLOW:
		break;
	}
	return 1;
}

/* A request to a sandbox endpoint (/endpoints/<uid>/...): only an endpoint
 * credential for that sandbox, on this origin, unexpired, counts; an API
 * key is refused (the document: management credentials are not accepted
 * there), so is one sandbox's credential at another's endpoint (401: it is
 * no credential for this endpoint). A genuine one is charged to the
 * sandbox's rate (the keys' rate and burst, in Redis: minting more
 * credentials buys no more requests; over it 403 + X-Sandpit-Deny: 429),
 * then the route is checked against the credential's permissions. No
 * cache: nothing of a credential is kept, and each request is charged. */
/* The interact operation's pre-upgrade checks (its x-websocket contract):
 * no query; at most one credential, either Authorization or one
 * "sandboxes.bearer.v1." subprotocol offer (canonical unpadded base64url
 * of at most 4096 bytes) beside sandboxes.v1. A bearer offer is decoded
 * into dec (wiped by the caller) and *tok points at it. 1 fine, 0 when a
 * 400 was answered. */
#define WS_BEARER "sandboxes.bearer.v1."
#define WS_BEARER_MAX 4096
static int interact_credential(struct req *r, const char *uri, const char **tok, size_t *len,
			       char *dec, size_t dec_cap)
{
	const char *proto = req_param(r, "HTTP_SEC_WEBSOCKET_PROTOCOL"),
		   *a = req_param(r, "HTTP_AUTHORIZATION"), *offer = NULL;
	size_t offer_len = 0, got = 0;
	int offers = 0, has_v1 = 0;
	char *re = NULL;

	if (strchr(uri, '?')) {
		answer(r, 403,
		       "X-Sandpit-Deny: 400\r\nX-Sandpit-Error: interact takes no query "
		       "parameter (send the credential in Authorization or the subprotocol "
		       "offer)\r\n");
		return 0;
	}
	for (const char *p = proto; *p;) {
		size_t n;
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		n = strcspn(p, ",");
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == 12 && strncmp(p, "sandboxes.v1", 12) == 0)
			has_v1 = 1;
		else if (n >= sizeof(WS_BEARER) - 1 &&
			 strncmp(p, WS_BEARER, sizeof(WS_BEARER) - 1) == 0) {
			offers++;
			offer = p + sizeof(WS_BEARER) - 1;
			offer_len = n - (sizeof(WS_BEARER) - 1);
		}
		p += strcspn(p, ",");
	}
	if (!offers)
		return 1;
	if (offers > 1 || *a) {
		answer(r, 403,
		       offers > 1 ? "X-Sandpit-Deny: 400\r\nX-Sandpit-Error: More than one "
				    "credential offered as a subprotocol\r\n"
				  : "X-Sandpit-Deny: 400\r\nX-Sandpit-Error: Mixed credentials: "
				    "Authorization and a subprotocol offer; send one\r\n");
		return 0;
	}
	if (!has_v1) {
		answer(r, 403,
		       "X-Sandpit-Deny: 400\r\nX-Sandpit-Error: A credential offer needs the "
		       "sandboxes.v1 subprotocol beside it\r\n");
		return 0;
	}
	if (offer_len == 0 ||
	    offer_len > sodium_base64_ENCODED_LEN(WS_BEARER_MAX,
						  sodium_base64_VARIANT_URLSAFE_NO_PADDING) ||
	    sodium_base642bin((unsigned char *)dec, dec_cap - 1, offer, offer_len, NULL, &got, NULL,
			      sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
	    got == 0 || got > WS_BEARER_MAX) {
		answer(r, 403,
		       "X-Sandpit-Deny: 400\r\nX-Sandpit-Error: The subprotocol credential is not "
		       "unpadded base64url of at most 4096 bytes\r\n");
		return 0;
	}
	/* canonical: it encodes back to the very same text */
	re = malloc(offer_len + 4);
	if (!re || (sodium_bin2base64(re, offer_len + 4, (unsigned char *)dec, got,
				      sodium_base64_VARIANT_URLSAFE_NO_PADDING),
		    strlen(re) != offer_len || memcmp(re, offer, offer_len) != 0)) {
		free(re);
		answer(r, 403,
		       "X-Sandpit-Deny: 400\r\nX-Sandpit-Error: The subprotocol credential is not "
		       "canonical base64url\r\n");
		return 0;
	}
	free(re);
	dec[got] = '\0';
	*tok = dec;
	*len = got;
	return 1;
}

static void auth_endpoint_check(struct sandbox_ctx *sb, struct req *r, const char *uri, char *dec,
				size_t dec_cap)
{
	const char *id = uri + strlen(V1_EP_PREFIX), *a = req_param(r, "HTTP_AUTHORIZATION");
	size_t idlen = strcspn(id, "/?"), len = 0;
	char sandbox[65], origin[V1_EP_ORIGIN_MAX], perms[128], bucket[96];
	char hdr[PERMS_LIST_MAX + 256];
	const char *tok;
	struct v1_ep_claims c;
	struct sp_err e;
	int64_t retry_ms;
	int rc, interact, ok = idlen > 0 && idlen < sizeof(sandbox) && id[idlen] == '/';

	tok = NULL;
	for (size_t i = 0; ok && i < idlen; i++)
		ok = (id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') ||
		     (id[i] >= '0' && id[i] <= '9') || id[i] == '_' || id[i] == '-';
	if (!ok) {
		answer(r, 403,
		       "X-Sandpit-Deny: 404\r\nX-Sandpit-Error: No sandbox endpoint here\r\n");
		return;
	}
	memcpy(sandbox, id, idlen);
	sandbox[idlen] = '\0';
	{
		int mo = 0;
		const struct route *rt = route_find(handler_routes, "GET", uri, &mo);
		interact = rt && rt->op_id && strcmp(rt->op_id, "interact") == 0 &&
			   strcmp(req_param(r, "SANDPIT_AUTH_METHOD"), "GET") == 0;
	}
	if (interact) {
		if (!interact_credential(r, uri, &tok, &len, dec, dec_cap))
			return;
		if (tok) {
			a = "";
			goto check;
		}
	}
	if (*req_param(r, "HTTP_X_API_KEY")) {
		answer(r, 401,
		       "X-Sandpit-Error: An API key is not accepted at a sandbox endpoint: send "
		       "Authorization: Bearer with a credential from createEndpointCredential\r\n");
		return;
	}
	if (strncasecmp(a, "Bearer ", 7) != 0) {
		answer(r, 401,
		       "X-Sandpit-Error: Missing endpoint credential: send Authorization: Bearer "
		       "with a credential from createEndpointCredential\r\n");
		return;
	}
	tok = a + 7;
	while (*tok == ' ')
		tok++;
	len = strlen(tok);
	while (len && tok[len - 1] == ' ')
		len--;
check:
	if (v1_endpoint_origin(sb->cfg, r, origin, sizeof(origin)) < 0) {
		answer(r, 401, "X-Sandpit-Error: Invalid endpoint credential\r\n");
		return;
	}
	switch (v1_endpoint_token_check(sb->cfg->data_key, tok, len, origin, sandbox, now_ms(),
					&c)) {
	case V1_EP_OK:
		break;
	case V1_EP_OTHER_SANDBOX:
		/* interact's contract: a credential that does not address this
		 * endpoint is a 404 before the upgrade */
		if (interact)
			answer(r, 403,
			       "X-Sandpit-Deny: 404\r\nX-Sandpit-Error: This endpoint credential is "
			       "for another sandbox\r\n");
		else
			answer(r, 401,
			       "X-Sandpit-Error: This endpoint credential is for another "
			       "sandbox\r\n");
		return;
	case V1_EP_EXPIRED:
		answer(r, 401, "X-Sandpit-Error: The endpoint credential has expired\r\n");
		return;
	default:
		answer(r, 401,
		       strncmp(tok, "sp_", 3) == 0
			       ? "X-Sandpit-Error: An API key is not accepted at a sandbox endpoint: "
				 "send a credential from createEndpointCredential\r\n"
			       : "X-Sandpit-Error: Invalid endpoint credential\r\n");
		return;
	}
	sp_err_clear(&e);
	snprintf(bucket, sizeof(bucket), "endpoint/%s", sandbox);
	rc = store_rate_take(sb->st, bucket, 1, sb->cfg->rate_per_min, sb->cfg->rate_burst,
			     &retry_ms, &e);
	if (rc < 0) {
		answer(r, 503, "");
		return;
	}
	if (rc == 0) {
		answer(r, 403,
		       "X-Sandpit-Deny: 429\r\nX-Sandpit-Error: Too many requests for this "
		       "sandbox endpoint; retry after 1 s\r\n");
		return;
	}
	v1_endpoint_perms_list(c.perms, perms, sizeof(perms));
	if (!route_check(r, uri, perms, "This endpoint credential", "No endpoint operation"))
		return;
	/* Expires: interact closes the socket when the credential does (P4) */
	snprintf(hdr, sizeof(hdr),
		 "X-Sandpit-Org: %s\r\nX-Sandpit-Key-Id: endpoint\r\nX-Sandpit-Role: "
		 "endpoint\r\nX-Sandpit-Perms: %s\r\nX-Sandpit-Expires: %lld\r\n",
		 c.org, perms, (long long)c.exp_ms);
	answer(r, 200, hdr);
}

static void auth_endpoint(struct sandbox_ctx *sb, struct req *r, const char *uri)
{
	char dec[WS_BEARER_MAX + 8];

	auth_endpoint_check(sb, r, uri, dec, sizeof(dec));
	sodium_memzero(dec, sizeof(dec));
}

int handlers_auth_key(struct sandbox_ctx *sb, const char *hash, char *org, size_t org_cap,
		      char *perms, size_t perms_cap, struct sp_err *e)
{
	struct auth_entry id;

	if (lookup(sb, hash, &id, e) < 0)
		return -1;
	if (str_copy(org, org_cap, id.org) < 0 || str_copy(perms, perms_cap, id.perms) < 0)
		return sp_err_set(e, SP_INTERNAL, "key record over its buffers");
	return 0;
}

int handlers_auth_ident(struct sandbox_ctx *sb, const char *hash, struct auth_ident *out,
			struct sp_err *e)
{
	struct auth_entry id;

	if (lookup(sb, hash, &id, e) < 0)
		return -1;
	memcpy(out->org, id.org, sizeof(out->org));
	memcpy(out->role, id.role, sizeof(out->role));
	memcpy(out->key_id, id.key_id, sizeof(out->key_id));
	memcpy(out->perms, id.perms, sizeof(out->perms));
	return 0;
}

void handlers_auth(struct sandbox_ctx *sb, struct req *r)
{
	char hash[65], sess_hash[65], hdr[PERMS_LIST_MAX + 512], who[64];
	const char *key, *uri = req_param(r, "SANDPIT_AUTH_URI");
	struct auth_entry id;
	struct sp_err e;
	size_t len;
	int ep, n, sess = 0;

	sp_err_clear(&e);
	/* a preview URL's request (/_auth_preview_path, _host): the port's
	 * target, handlers/v1_ports.c */
	if (*req_param(r, "SANDPIT_AUTH_PREVIEW")) {
		v1_ports_auth(sb, r);
		return;
	}
	/* the endpoint's location asks through /_auth_endpoint (which says
	 * so); a raw path that only reaches the other location after nginx's
	 * normalisation (dot segments, escapes), or the reverse, is no path
	 * of either */
	ep = strcmp(req_param(r, "SANDPIT_AUTH_ENDPOINT"), "1") == 0;
	if (ep != (strncmp(uri, V1_EP_PREFIX, strlen(V1_EP_PREFIX)) == 0)) {
		answer(r, 403, "X-Sandpit-Deny: 404\r\nX-Sandpit-Error: Not found\r\n");
		return;
	}
	if (ep) {
		auth_endpoint(sb, r, uri);
		return;
	}
	key = api_key(r, &len);
	/* no key: the dashboard's session cookie stands for the key it was
	 * made with, under its cross-site rules (handlers/session.c) */
	if (len == 0) {
		sess = handlers_session_auth(sb, r, req_param(r, "SANDPIT_AUTH_METHOD"), hash,
					     sess_hash, &e);
		if (sess < 0) {
			snprintf(hdr, sizeof(hdr), "X-Sandpit-Error: %s\r\n", e.msg);
			answer(r,
			       e.code == SP_UNAUTHORIZED ? 401
			       : e.code == SP_FORBIDDEN	 ? 403
							 : 503,
			       e.code == SP_UNAUTHORIZED || e.code == SP_FORBIDDEN ? hdr : "");
			return;
		}
		if (sess == 0) {
			answer(r, 401,
			       "X-Sandpit-Error: Missing API key: send it in the x-api-key "
			       "header\r\n");
			return;
		}
	} else if (len > 256) {
		answer(r, 401, "X-Sandpit-Error: Invalid API key\r\n");
		return;
	} else {
		crypto_key_hash(sb->cfg->data_key, key, len, hash);
	}
	if (lookup(sb, hash, &id, &e) < 0) {
		if (e.code == SP_UNAUTHORIZED && sess) {
			/* the key was revoked: its session ends with it */
			if (store_session_del(sb->st, sess_hash, &e) < 0)
				log_warn("auth: session of a revoked key not dropped: %s", e.msg);
			answer(r, 401, "X-Sandpit-Error: The key of this session was revoked\r\n");
		} else if (e.code == SP_UNAUTHORIZED)
			answer(r, 401, "X-Sandpit-Error: Invalid API key\r\n");
		else
			answer(r, 503, "");
		return;
	}
	snprintf(who, sizeof(who), "Your role (%s)", id.role);
	if (!route_check(r, uri, id.perms, who, "No procedure"))
		return;
	/* hdr holds every field at its cache size; a cut is an error all the same */
	n = snprintf(hdr, sizeof(hdr),
		     "X-Sandpit-Org: %s\r\nX-Sandpit-Key-Id: %s\r\nX-Sandpit-Role: %s\r\n"
		     "X-Sandpit-Perms: %s\r\n",
		     id.org, id.key_id, id.role, id.perms);
	if (n < 0 || (size_t)n >= sizeof(hdr)) {
		log_error("auth: identity headers over %zu bytes", sizeof(hdr));
		answer(r, 503, "");
		return;
	}
	answer(r, 200, hdr);
}
