/*
 * The sandbox endpoint of the /v1 API (the Docker Sandboxes document's
 * data plane) and createEndpointCredential. A sandbox's endpoint is
 * <origin>/endpoints/<uid> on sandpit's own origin (public_url, else the
 * request's scheme and Host); nginx routes <endpoint>/v1/... to the
 * workers and /_auth checks the credential (handlers/auth.c).
 *
 * A credential is stateless: "sbe1." hex(org \n sandbox \n permission bits
 * \n expiry ms) "." the data key's keyed hash over the same claims and the
 * audience (the endpoint's URI). Nothing of it is stored (not in Redis,
 * not in the replay ledger), so it cannot be listed or revoked; it lives
 * at most 300 s, as the document fixes. Never logs a token; the buffer
 * that held one is wiped.
 */
#include "handlers.h"

#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "../common/buf.h"
#include "../common/crypto.h"
#include "../common/util.h"

#define TOKEN_TAG "sbe1."
#define MAC_HEX 64

static const struct {
	unsigned bit;
	const char *name;
} ep_perms[] = {
	{ V1_EP_EXEC, "sandboxesExec" },
	{ V1_EP_FILES_READ, "sandboxesFilesRead" },
	{ V1_EP_FILES_WRITE, "sandboxesFilesWrite" },
};
#define N_EP_PERMS (sizeof(ep_perms) / sizeof(ep_perms[0]))

void v1_endpoint_perms_list(unsigned bits, char *out, size_t cap)
{
	size_t used = 0;

	if (cap)
		out[0] = '\0';
	for (size_t i = 0; i < N_EP_PERMS; i++) {
		int n;
		if (!(bits & ep_perms[i].bit))
			continue;
		n = snprintf(out + used, cap - used, "%s%s", used ? "," : "", ep_perms[i].name);
		if (n < 0 || (size_t)n >= cap - used)
			return; /* callers size out for all three names */
		used += (size_t)n;
	}
}

/* A Host header value we build a URI on: host or host:port, a name, an
 * IPv4 address or a bracketed IPv6 one; nothing a URL would escape. */
static int host_ok(const char *h)
{
	size_t n = strlen(h);

	if (n == 0 || n > 255)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((h[i] >= 'a' && h[i] <= 'z') || (h[i] >= 'A' && h[i] <= 'Z') ||
		      (h[i] >= '0' && h[i] <= '9') || strchr(".-:[]", h[i])))
			return 0;
	return 1;
}

int v1_endpoint_origin(const struct config *cfg, struct req *r, char *out, size_t cap)
{
	const char *scheme, *host;
	int n;

	if (cfg->public_url[0])
		return str_copy(out, cap, cfg->public_url);
	scheme = req_param(r, "REQUEST_SCHEME");
	host = req_param(r, "HTTP_HOST");
	if (strcmp(scheme, "https") != 0 && strcmp(scheme, "http") != 0)
		return -1;
	if (!host_ok(host))
		return -1;
	n = snprintf(out, cap, "%s://%s", scheme, host);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* The endpoint URI of a sandbox (the credential's audience). */
static int endpoint_uri(const char *origin, const char *sandbox, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s" V1_EP_PREFIX "%s", origin, sandbox);

	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* The MAC over the claims and the audience, hex (65 bytes with the NUL). */
static int token_mac(const unsigned char key[32], const struct v1_ep_claims *c,
		     const char *audience, char hex[65])
{
	struct buf b;
	int rc = 0;

	buf_init(&b, 2048);
	if (buf_printf(&b, "sandpit v1 endpoint credential\n" TOKEN_TAG "\n%s\n%s\n%s\n%u\n%lld",
		       c->org, c->sandbox, audience, c->perms, (long long)c->exp_ms) < 0)
		rc = -1;
	else
		crypto_key_hash(key, b.data, b.len, hex);
	buf_free(&b);
	return rc;
}

int v1_endpoint_token_make(const unsigned char key[32], const struct v1_ep_claims *c,
			   const char *audience, char *out, size_t cap)
{
	char payload[256], mac[65];
	size_t o;
	int n = snprintf(payload, sizeof(payload), "%s\n%s\n%u\n%lld", c->org, c->sandbox, c->perms,
			 (long long)c->exp_ms);

	if (n < 0 || (size_t)n >= sizeof(payload) || token_mac(key, c, audience, mac) < 0 ||
	    cap < sizeof(TOKEN_TAG) + 2 * (size_t)n + MAC_HEX + 2)
		return -1;
	o = (size_t)snprintf(out, cap, "%s", TOKEN_TAG);
	for (int i = 0; i < n; i++)
		o += (size_t)snprintf(out + o, cap - o, "%02x", (unsigned char)payload[i]);
	snprintf(out + o, cap - o, ".%s", mac);
	sodium_memzero(mac, sizeof(mac));
	return 0;
}

/* Splits "org\nsandbox\nbits\nexp" into c; -1 when it is not that. */
static int claims_parse(const char *p, struct v1_ep_claims *c)
{
	const char *f[4];
	size_t len[4];
	char num[24];
	long long v;

	for (int i = 0; i < 4; i++) {
		f[i] = p;
		len[i] = i < 3 ? strcspn(p, "\n") : strlen(p);
		if (i < 3 && p[len[i]] != '\n')
			return -1;
		p += len[i] + (i < 3);
	}
	if (!len[0] || len[0] >= sizeof(c->org) || !len[1] || len[1] >= sizeof(c->sandbox) ||
	    len[2] != 1 || !len[3] || len[3] >= sizeof(num))
		return -1;
	memcpy(c->org, f[0], len[0]);
	c->org[len[0]] = '\0';
	memcpy(c->sandbox, f[1], len[1]);
	c->sandbox[len[1]] = '\0';
	if (f[2][0] < '1' || f[2][0] > '7')
		return -1;
	c->perms = (unsigned)(f[2][0] - '0');
	memcpy(num, f[3], len[3]);
	num[len[3]] = '\0';
	if (parse_ll(num, 1, INT64_MAX, &v) < 0)
		return -1;
	c->exp_ms = v;
	return 0;
}

enum v1_ep_check v1_endpoint_token_check(const unsigned char key[32], const char *token, size_t len,
					 const char *origin, const char *sandbox, int64_t now,
					 struct v1_ep_claims *c)
{
	const size_t tag = sizeof(TOKEN_TAG) - 1;
	char payload[256], mac[65], aud[V1_EP_TOKEN_MAX];
	const char *hex, *dot;
	size_t n, o = 0;
	unsigned diff = 0;

	memset(c, 0, sizeof(*c));
	if (len > V1_EP_TOKEN_MAX || len < tag + MAC_HEX + 4 || memcmp(token, TOKEN_TAG, tag) != 0)
		return V1_EP_INVALID;
	hex = token + tag;
	dot = memchr(hex, '.', len - tag);
	if (!dot || (size_t)(token + len - dot - 1) != MAC_HEX)
		return V1_EP_INVALID;
	n = (size_t)(dot - hex);
	if (n % 2 || n / 2 >= sizeof(payload))
		return V1_EP_INVALID;
	for (size_t i = 0; i < n; i += 2) {
		int hi = hex_digit((unsigned char)hex[i]),
		    lo = hex_digit((unsigned char)hex[i + 1]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			return V1_EP_INVALID;
		payload[o++] = (char)(hi * 16 + lo);
	}
	payload[o] = '\0';
	if (claims_parse(payload, c) < 0 ||
	    endpoint_uri(origin, c->sandbox, aud, sizeof(aud)) < 0 ||
	    token_mac(key, c, aud, mac) < 0)
		goto invalid;
	for (size_t i = 0; i < MAC_HEX; i++)
		diff |= (unsigned)(mac[i] ^ dot[1 + i]);
	sodium_memzero(mac, sizeof(mac));
	if (diff)
		goto invalid;
	if (strcmp(c->sandbox, sandbox) != 0)
		return V1_EP_OTHER_SANDBOX;
	if (c->exp_ms <= now)
		return V1_EP_EXPIRED;
	return V1_EP_OK;
invalid:
	memset(c, 0, sizeof(*c));
	return V1_EP_INVALID;
}

size_t v1_endpoint_capabilities(const struct route *table, const char **caps, size_t cap)
{
	static const char tmpl[] = V1_EP_PREFIX "{sandbox}/v1/";
	size_t n = 0;

	for (const struct route *rt = table; rt->path && n + 1 < cap; rt++)
		if (strncmp(rt->path, tmpl, sizeof(tmpl) - 1) == 0 && rt->op_id)
			caps[n++] = rt->op_id;
	if (cap)
		caps[n] = NULL;
	return n;
}

json_object *v1_endpoint_json(const struct route *table, const char *origin,
			      const struct sandbox *sb)
{
	const char *caps[64];
	size_t n = v1_endpoint_capabilities(table, caps, 64);
	char uri[V1_EP_TOKEN_MAX], name[SANDBOX_ID_LEN + 16], ttl[16];
	json_object *o, *arr, *auth, *tr;

	/* SandboxEndpoint.capabilities has minItems 1: no endpoint operation,
	 * no advertisement */
	if (n == 0 || endpoint_uri(origin, sb->id, uri, sizeof(uri)) < 0)
		return NULL;
	snprintf(name, sizeof(name), "sandboxes/%s", sb->id);
	snprintf(ttl, sizeof(ttl), "%ds", V1_EP_TTL_MAX_MS / 1000);
	o = json_object_new_object();
	json_object_object_add(o, "uri", json_object_new_string(uri));
	json_object_object_add(o, "protocol", json_object_new_string("http"));
	json_object_object_add(o, "credentialAudience", json_object_new_string(uri));
	json_object_object_add(o, "sandbox", json_object_new_string(name));
	json_object_object_add(o, "sandboxUid", json_object_new_string(sb->id));
	json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
	arr = json_object_new_array();
	for (size_t i = 0; i < n; i++)
		json_object_array_add(arr, json_object_new_string(caps[i]));
	json_object_object_add(o, "capabilities", arr);
	auth = json_object_new_object();
	json_object_object_add(auth, "scheme", json_object_new_string("scopedBearer"));
	json_object_object_add(auth, "defaultTtl", json_object_new_string(ttl));
	json_object_object_add(auth, "maxTtl", json_object_new_string(ttl));
	/* the header everywhere; for interact also the subprotocol offer
	 * (handlers/auth.c) */
	tr = json_object_new_array();
	json_object_array_add(tr, json_object_new_string("authorizationHeader"));
	json_object_array_add(tr, json_object_new_string("webSocketSubprotocol"));
	json_object_object_add(auth, "credentialTransports", tr);
	json_object_object_add(o, "authentication", auth);
	return o;
}

/* permissions: 1 to 3 distinct endpoint permission names. */
static int perms_read(json_object *in, unsigned *bits, struct sp_err *e)
{
	json_object *arr;
	size_t n;

	*bits = 0;
	if (!json_object_object_get_ex(in, "permissions", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		return sp_err_field(e, SP_BAD_REQUEST, "permissions",
				    "permissions: expected an array of permission names");
	n = json_object_array_length(arr);
	if (n == 0)
		return sp_err_field(e, SP_BAD_REQUEST, "permissions",
				    "permissions: at least one of sandboxesExec, "
				    "sandboxesFilesRead, sandboxesFilesWrite");
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(arr, i);
		const char *s =
			json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
		unsigned bit = 0;
		for (size_t k = 0; s && k < N_EP_PERMS; k++)
			if (strcmp(s, ep_perms[k].name) == 0)
				bit = ep_perms[k].bit;
		if (!bit)
			return sp_err_field(e, SP_BAD_REQUEST, "permissions",
					    "permissions: item %zu is not an endpoint permission "
					    "(sandboxesExec, sandboxesFilesRead, "
					    "sandboxesFilesWrite)",
					    i);
		if (*bits & bit)
			return sp_err_field(e, SP_BAD_REQUEST, "permissions",
					    "permissions: %s given twice", s);
		*bits |= bit;
	}
	return 0;
}

/* ttl: a Duration, default and at most 300 s, at least 1 s (clamped, as the
 * document says). */
static int ttl_read(json_object *in, int64_t *ms, struct sp_err *e)
{
	const char *t = hin_str(in, "ttl", NULL);
	int64_t v;

	*ms = V1_EP_TTL_MAX_MS;
	if (!t)
		return 0;
	v = v1_duration_ms(t);
	if (v == -1)
		return sp_err_field(e, SP_BAD_REQUEST, "ttl",
				    "ttl: expected a Duration such as 300s or 1.5s");
	if (v == -2)
		return sp_err_field(e, SP_BAD_REQUEST, "ttl", "ttl: must not be negative");
	*ms = v < V1_EP_TTL_MIN_MS ? V1_EP_TTL_MIN_MS : v > V1_EP_TTL_MAX_MS ? V1_EP_TTL_MAX_MS : v;
	return 0;
}

/* POST /v1/sandboxes/{sandbox}/endpoint-credentials. Checks the caller's
 * current authority (each permission asked for must be held), answers the
 * credential once (every answer carries Cache-Control: no-store). A sandbox
 * that failed (its container is gone for good) is a 409: its endpoint
 * serves nothing; one still creating gets a credential. */
int v1_endpoint_credential_create(struct handler_ctx *h, json_object *in, json_object **out,
				  struct sp_err *e)
{
	const char *id = hin_str(in, "sandbox", NULL);
	struct v1_ep_claims c = { 0 };
	struct sandbox sb;
	char origin[V1_EP_ORIGIN_MAX], aud[V1_EP_TOKEN_MAX], tok[V1_EP_TOKEN_MAX], iso[40];
	char name[SANDBOX_ID_LEN + 16];
	int64_t ttl;
	json_object *o, *arr;

	if (perms_read(in, &c.perms, e) < 0 || ttl_read(in, &ttl, e) < 0)
		return -1;
	for (size_t k = 0; k < N_EP_PERMS; k++)
		if ((c.perms & ep_perms[k].bit) && !route_has_perm(h->r->perms, ep_perms[k].name))
			return sp_err_field(e, SP_FORBIDDEN, "permissions",
					    "Your role lacks the %s permission this credential "
					    "would carry",
					    ep_perms[k].name);
	if (sandbox_get(h->sb, h->r->org, id, &sb, e) < 0)
		return -1;
	if (sb.status == SB_KILLED || sb.status == SB_ERROR)
		return sp_err_set(e, SP_PRECONDITION,
				  "The sandbox has failed; its endpoint serves nothing");
	if (v1_endpoint_origin(h->cfg, h->r, origin, sizeof(origin)) < 0 ||
	    endpoint_uri(origin, sb.id, aud, sizeof(aud)) < 0)
		return sp_err_field(
			e, SP_BAD_REQUEST, "Host",
			"Host: not usable for the endpoint's URI, and public_url is not "
			"configured");
	if (str_copy(c.org, sizeof(c.org), h->r->org) < 0 ||
	    str_copy(c.sandbox, sizeof(c.sandbox), sb.id) < 0)
		return sp_err_set(e, SP_INTERNAL, "organization or sandbox id over 64 bytes");
	c.exp_ms = now_ms() + ttl;
	if (v1_endpoint_token_make(h->cfg->data_key, &c, aud, tok, sizeof(tok)) < 0)
		return sp_err_set(e, SP_INTERNAL, "credential over its buffer");
	iso8601_ms(c.exp_ms, iso, sizeof(iso));
	snprintf(name, sizeof(name), "sandboxes/%s", sb.id);
	o = json_object_new_object();
	json_object_object_add(o, "token", json_object_new_string(tok));
	sodium_memzero(tok, sizeof(tok));
	json_object_object_add(o, "expireTime", json_object_new_string(iso));
	arr = json_object_new_array();
	for (size_t k = 0; k < N_EP_PERMS; k++)
		if (c.perms & ep_perms[k].bit)
			json_object_array_add(arr, json_object_new_string(ep_perms[k].name));
	json_object_object_add(o, "permissions", arr);
	json_object_object_add(o, "sandbox", json_object_new_string(name));
	json_object_object_add(o, "audience", json_object_new_string(aud));
	*out = o;
	return 0;
}
