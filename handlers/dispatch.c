/*
 * One request through the route table: nginx's auth subrequests, routing,
 * the permission check (again, behind nginx's), input validation, the
 * handler, and the answer. Identity comes only from the SANDPIT_* params
 * nginx sets; a client-sent header never counts.
 */
#include "handlers.h"

#include <stdio.h>
#include <string.h>

#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/metrics.h"
#include "../common/proc.h"
#include "../common/util.h"
#include "../fcgi/pm.h"
#include "../store/store.h"

const char *hin_str(json_object *in, const char *name, size_t *len)
{
	json_object *v;

	if (!json_object_object_get_ex(in, name, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	if (len)
		*len = (size_t)json_object_get_string_len(v);
	return json_object_get_string(v);
}

int64_t hin_i64(json_object *in, const char *name, int64_t def)
{
	json_object *v;

	if (!json_object_object_get_ex(in, name, &v) || !v)
		return def;
	if (json_object_is_type(v, json_type_double))
		return (int64_t)json_object_get_double(v);
	return json_object_get_int64(v);
}

double hin_dbl(json_object *in, const char *name, double def)
{
	json_object *v;

	if (!json_object_object_get_ex(in, name, &v) || !v)
		return def;
	return json_object_get_double(v);
}

static int behaviours_before(struct handler_ctx *h, const struct route *rt, json_object *in,
			     json_object **out, struct sp_err *e);

int handlers_call(struct handler_ctx *h, const struct route *rt, json_object *in, int from_http,
		  json_object **out, json_object **issues, struct sp_err *e)
{
	struct req *r = h->r;

	*out = NULL;
	*issues = NULL;
	if (rt->kind != ROUTE_PUBLIC) {
		if (!r->org[0])
			return sp_err_set(e, SP_UNAUTHORIZED, "Missing or invalid API key");
		if (rt->perm && !route_has_perm(r->perms, rt->perm))
			return sp_err_set(e, SP_FORBIDDEN, "Your role lacks the %s permission",
					  rt->perm);
	}
	if (rt->fields && route_validate(rt, in, from_http, e, issues) < 0)
		return -1;
	/* the behaviours read the caller's HTTP headers: only when the
	 * request is the call itself (REST), never for an MCP tool call */
	if (in && h->stream_ok) {
		int b = behaviours_before(h, rt, in, out, e);
		if (b < 0)
			return -1;
		if (b == 1) /* the replay of an Idempotency-Key's first answer */
			return 0;
	}
	if (rt->flags & RF_LONG) {
		int share = h->cfg->org_long_requests, held, total, rc;
		if (share <= 0)
			share = h->cfg->workers_max / 4 > 1 ? h->cfg->workers_max / 4 : 1;
		if (pm_worker_long_begin(r->org, share, &held, &total) != 0)
			return sp_err_set(e, SP_TOO_MANY,
					  "Too many long-running requests of this organization at "
					  "once (%d running, %d of %d workers busy with them; "
					  "org_long_requests %d): retry shortly",
					  held, total, h->cfg->workers_max, share);
		rc = rt->fn(h, in, out, e);
		pm_worker_long_end();
		return rc;
	}
	return rt->fn(h, in, out, e);
}

/* The header value of a CGI param, or NULL when absent. */
static const char *header(const struct req *r, const char *param)
{
	return FCGX_GetParam(param, r->fx->envp);
}

/* An If-Match value: a quoted strong ETag, ^"[^"\x00-\x20\x7f]*"$. */
static int etag_ok(const char *v)
{
	size_t n = strlen(v);

	if (n < 2 || v[0] != '"' || v[n - 1] != '"')
		return 0;
	for (size_t i = 1; i + 1 < n; i++) {
		unsigned char ch = (unsigned char)v[i];
		if (ch == '"' || ch <= 0x20 || ch == 0x7f)
			return 0;
	}
	return 1;
}

/* How long a first request holds its Idempotency-Key before a retry may
 * run again (a worker that died mid-request leaves its entry pending), and
 * how long an answer is replayed (the document: at least 24 hours). An
 * operation that makes a resource (RF_IDEMPOTENCY_RESOURCE) keeps its
 * pending entry as long as an answer: a retry decides from the entry's
 * owner and the resource whether the first request is gone, never from
 * the entry expiring (which would make a second resource). */
#define IDEM_LEASE_S 900
#define IDEM_KEEP_S (25 * 3600)

/* The replay ledger's state of the request in progress: its entry is
 * pending (active, under the key's hash, held by owner: this worker's
 * process identity and a nonce), or the answer is a replay of the first
 * one (replay_status). One request at a time per worker process (workers
 * are single-threaded; MCP's tool calls run no behaviours);
 * handlers_serve resets it. */
static struct {
	int active;
	char hash[65];
	char owner[192];
	int replay_status;
} ledger;

/* How long the first request of a resource-making operation holds its key
 * for sure: a creation's time and two Docker calls' (the reaper's bound
 * for a creation that may still write its record). Past it, a retry looks
 * at the resource to tell (sandbox_create_resume). */
static int64_t idem_hold_ms(const struct config *cfg)
{
	return (int64_t)(cfg->create_timeout_s + 2 * cfg->docker_timeout_s) * 1000;
}

/* The replay ledger's step before the handler: 0 to run it (the entry is
 * now pending: ledger.active), 1 when *out is the first answer's body
 * (ledger.replay_status its status), -1 for a 409 (another payload, or the
 * first request still running). The payload is the operation, the path
 * and the validated input, so the same key on another sandbox is another
 * payload. For an RF_IDEMPOTENCY_RESOURCE route, *rid and *resume say
 * which resource id the handler makes and whether it takes over from a
 * first request that is gone ("gone": its worker is; "late": its time
 * passed; "" for a first request). */
static int ledger_begin(struct handler_ctx *h, const struct route *rt, json_object *in,
			const char *key, json_object **out, char *rid, const char **resume,
			struct sp_err *e)
{
	struct buf text, body;
	char payload[65], nonce[17];
	size_t len = 0;
	const char *js = json_object_to_json_string_length(in, JSON_C_TO_STRING_PLAIN, &len);
	int status = 0, rc, makes = (rt->flags & RF_IDEMPOTENCY_RESOURCE) != 0;
	struct store_idem_owner mine = { { 0 }, { 0 }, 0 }, seen;
	char ident[PROC_IDENTITY_MAX];

	crypto_key_hash(h->cfg->data_key, key, strlen(key), ledger.hash);
	buf_init(&text, len + strlen(h->r->path) + 256);
	if (buf_printf(&text, "sandpit idempotency\n%s\n%s\n", rt->op_id, h->r->path) < 0 ||
	    buf_append(&text, js, len) < 0) {
		buf_free(&text);
		return sp_err_set(e, SP_INTERNAL, "idempotency payload over its buffer");
	}
	crypto_key_hash(h->cfg->data_key, text.data, text.len, payload);
	buf_free(&text);
	proc_identity(ident, sizeof(ident));
	crypto_random_id(nonce, 16);
	snprintf(mine.owner, sizeof(mine.owner), "%s:%s", ident, nonce);
	str_copy(ledger.owner, sizeof(ledger.owner), mine.owner);
	if (makes) {
		crypto_random_id(mine.rid, SANDBOX_ID_LEN);
		mine.until_ms = now_ms() + idem_hold_ms(h->cfg);
	}
	buf_init(&body, ROUTE_BODY_MAX);
	rc = store_idem_begin(h->sb->st, h->r->org, rt->op_id, ledger.hash, payload,
			      makes ? IDEM_KEEP_S : IDEM_LEASE_S, &mine, &seen, &status, &body, e);
	switch (rc) {
	case STORE_IDEM_NEW:
		ledger.active = 1;
		str_copy(rid, SANDBOX_ID_LEN + 1, mine.rid);
		rc = 0;
		break;
	case STORE_IDEM_PENDING: {
		int gone = makes && seen.rid[0] && proc_identity_gone(seen.owner),
		    late = makes && seen.rid[0] && now_ms() > seen.until_ms;
		/* the first request is under way, unless its worker is gone
		 * or its time passed: then one retry takes the entry over */
		if ((gone || late) &&
		    (rc = store_idem_claim(h->sb->st, h->r->org, rt->op_id, ledger.hash, seen.owner,
					   &mine, e)) <= 0) {
			if (rc < 0)
				break;
			ledger.active = 1;
			str_copy(rid, SANDBOX_ID_LEN + 1, seen.rid);
			*resume = gone ? "gone" : "late";
			break;
		}
		rc = sp_err_field(e, SP_PRECONDITION, "Idempotency-Key",
				  "idempotency_in_progress: the first request with this "
				  "Idempotency-Key is still running; retry later");
		break;
	}
	case STORE_IDEM_MISMATCH:
		rc = sp_err_field(e, SP_PRECONDITION, "Idempotency-Key",
				  "The Idempotency-Key was already used with a different payload.");
		break;
	case STORE_IDEM_DONE: {
		/* the answer is kept sealed (a /v1 environment is in it) */
		struct buf plain;
		char ad[256];
		snprintf(ad, sizeof(ad), "idem/%s/%s/%s", h->r->org, rt->op_id, ledger.hash);
		buf_init(&plain, ROUTE_BODY_MAX);
		ledger.replay_status = status;
		if (body.len && body.data[0] == '{') {
			/* kept in clear by a sandpit before the answers were sealed */
			if (buf_append(&plain, body.data, body.len) < 0)
				plain.len = 0;
		} else if (body.len &&
			   crypto_open(h->cfg->data_key, ad, body.data, body.len, &plain) < 0) {
			rc = sp_err_set(e, SP_INTERNAL, "The kept answer cannot be opened");
			buf_free(&plain);
			break;
		}
		*out = plain.len ? json_tokener_parse(plain.data) : NULL;
		buf_wipe(&plain);
		/* a kept Process says it is one (the document's receiptKind) */
		if (*out && json_object_object_get_ex(*out, "receiptKind", NULL))
			json_object_object_add(*out, "receiptKind",
					       json_object_new_string("replay"));
		rc = 1;
		break;
	}
	default:
		rc = -1;
	}
	buf_free(&body);
	return rc;
}

/* The one place where the RF_* behaviours a route switches on run, before
 * its handler (after route_validate). The Dokploy procedures set none.
 * 1 when *out is a replayed answer (the handler is not run). */
static int behaviours_before(struct handler_ctx *h, const struct route *rt, json_object *in,
			     json_object **out, struct sp_err *e)
{
	const char *idem = NULL;

	if (rt->flags & (RF_IDEMPOTENCY | RF_IDEMPOTENCY_REQUIRED)) {
		const char *k = header(h->r, "HTTP_IDEMPOTENCY_KEY");
		size_t n = k ? strlen(k) : 0;
		if (!k && (rt->flags & RF_IDEMPOTENCY_REQUIRED))
			return sp_err_field(e, SP_BAD_REQUEST, "Idempotency-Key",
					    "Idempotency-Key: Required");
		if (k) {
			int ok = n >= 1 && n <= 255;
			for (size_t i = 0; ok && i < n; i++)
				ok = k[i] >= 0x20 && k[i] < 0x7f;
			if (!ok)
				return sp_err_field(e, SP_BAD_REQUEST, "Idempotency-Key",
						    "Idempotency-Key: 1 to 255 printable ASCII "
						    "characters");
			idem = k;
		}
	}
	if (rt->flags & RF_IF_MATCH) {
		const char *v = header(h->r, "HTTP_IF_MATCH");
		if (!v || !*v)
			return sp_err_field(e, SP_PRECONDITION_REQUIRED, "If-Match",
					    "etag_required: send the resource's current ETag in "
					    "If-Match");
		if (!etag_ok(v))
			return sp_err_field(e, SP_BAD_REQUEST, "If-Match",
					    "If-Match: expected a quoted strong ETag");
		json_object_object_add(in, ROUTE_IN_IF_MATCH, json_object_new_string(v));
	}
	/* no store (a unit test's context): nothing to replay from */
	if (idem && h->sb && h->sb->st) {
		/* the replay ledger looks (org, op, key) up: the same payload
		 * answers the first result, another one is a 409. The payload
		 * is the input without the headers the behaviours deliver. */
		json_object *bare = NULL;
		char rid[SANDBOX_ID_LEN + 1] = "";
		const char *resume = "";
		int rc;
		json_object_deep_copy(in, &bare, NULL);
		if (bare)
			json_object_object_del(bare, ROUTE_IN_IF_MATCH);
		rc = bare ? ledger_begin(h, rt, bare, idem, out, rid, &resume, e)
			  : sp_err_set(e, SP_INTERNAL, "out of memory");
		json_object_put(bare);
		if (rc != 0)
			return rc;
		if (rid[0])
			json_object_object_add(in, ROUTE_IN_IDEM_RESOURCE,
					       json_object_new_string(rid));
		if (resume[0])
			json_object_object_add(in, ROUTE_IN_IDEM_RESUME,
					       json_object_new_string(resume));
	}
	if (idem)
		json_object_object_add(in, ROUTE_IN_IDEMPOTENCY_KEY, json_object_new_string(idem));
	return 0;
}

/* The ETag of an answer: its "etag" member, or its core's (a /v1 Sandbox
 * keeps it in core.etag); NULL when none is a valid one. */
static const char *answer_etag(json_object *out)
{
	json_object *v, *core;

	if (!out || !json_object_is_type(out, json_type_object))
		return NULL;
	if (!json_object_object_get_ex(out, "etag", &v) &&
	    (!json_object_object_get_ex(out, "core", &core) ||
	     !json_object_is_type(core, json_type_object) ||
	     !json_object_object_get_ex(core, "etag", &v)))
		return NULL;
	if (!json_object_is_type(v, json_type_string) || !etag_ok(json_object_get_string(v)))
		return NULL;
	return json_object_get_string(v);
}

/* If-None-Match against etag, compared weakly: "*", or a comma-separated
 * list of entity tags with or without W/. A malformed value matches
 * nothing (the document). */
static int none_match_hit(const char *v, const char *etag)
{
	size_t n = strlen(etag);

	if (!v)
		return 0;
	while (*v) {
		size_t seg;
		while (*v == ' ' || *v == '\t' || *v == ',')
			v++;
		seg = strcspn(v, ",");
		while (seg && (v[seg - 1] == ' ' || v[seg - 1] == '\t'))
			seg--;
		if (seg == 1 && *v == '*')
			return 1;
		if (seg > 2 && strncmp(v, "W/", 2) == 0) {
			v += 2;
			seg -= 2;
		}
		if (seg == n && memcmp(v, etag, n) == 0)
			return 1;
		v += seg;
		while (*v && *v != ',')
			v++;
	}
	return 0;
}

/* The same place, after a handler succeeded: answer headers, and the
 * status when it is not the route's (304 for a GET whose If-None-Match
 * holds the current ETag, after the permission check and the read). */
static int behaviours_after(struct handler_ctx *h, const struct route *rt, json_object *out)
{
	const char *tag = (rt->flags & RF_ETAG) ? answer_etag(out) : NULL;

	if (tag) {
		size_t used = strlen(h->r->headers);
		snprintf(h->r->headers + used, sizeof(h->r->headers) - used, "ETag: %s\r\n", tag);
		if (strcmp(rt->method, "GET") == 0 &&
		    none_match_hit(header(h->r, "HTTP_IF_NONE_MATCH"), tag))
			return 304;
	}
	return ledger.replay_status ? ledger.replay_status
	       : h->status	    ? h->status
				    : route_status(rt);
}

/* The ledger's step after the handler: the first answer is kept for its
 * replays; a failed first request leaves no entry (a retry runs again),
 * unless another request holds the entry by now, or the failure (why) is
 * that the first request is still under way (a retry that took over too
 * early: the entry stays pending). */
static void ledger_end(struct handler_ctx *h, const struct route *rt, int status, json_object *out,
		       const struct sp_err *why)
{
	struct sp_err e;
	size_t len = 0;
	const char *js = "";
	struct buf sealed;
	char ad[256];

	if (!ledger.active)
		return;
	ledger.active = 0;
	if (status == 0 && why && why->code == SP_PRECONDITION &&
	    strcmp(why->field, "Idempotency-Key") == 0)
		return;
	if (status == 0) {
		if (store_idem_abort(h->sb->st, h->r->org, rt->op_id, ledger.hash, ledger.owner,
				     &e) < 0)
			log_warn("idempotency entry of %s left pending: %s", rt->op_id, e.msg);
		return;
	}
	if (out && status != 204)
		js = json_object_to_json_string_length(out, JSON_C_TO_STRING_PLAIN, &len);
	/* sealed to the entry (Redis never holds an answer in clear) */
	snprintf(ad, sizeof(ad), "idem/%s/%s/%s", h->r->org, rt->op_id, ledger.hash);
	buf_init(&sealed, 2 * len + 256);
	if (len && crypto_seal(h->cfg->data_key, ad, js, len, &sealed) < 0)
		log_warn("idempotency answer of %s not sealed", rt->op_id);
	else if (store_idem_finish(h->sb->st, h->r->org, rt->op_id, ledger.hash, status,
				   sealed.len ? sealed.data : "", sealed.len, IDEM_KEEP_S, &e) < 0)
		log_warn("idempotency answer of %s not kept: %s", rt->op_id, e.msg);
	buf_free(&sealed);
}

void handlers_serve(struct sandbox_ctx *sb, struct req *r)
{
	struct handler_ctx h = { r, sb, sb->cfg, 1, 0 };
	json_object *in = NULL, *out = NULL, *issues = NULL;
	const struct route *rt = NULL;
	const struct face *face = face_of_path(r->path);
	struct sp_err e;
	int method_ok;
	const char *op = "unrouted";
	int64_t t0 = mono_us();
	int status;

	sp_err_clear(&e);
	memset(&ledger, 0, sizeof(ledger));
	log_set_request_id(r->request_id);
	if (strcmp(req_param(r, "SANDPIT_AUTH"), "1") == 0) {
		op = "auth";
		handlers_auth(sb, r);
		goto done;
	}
	if (strcmp(req_param(r, "SANDPIT_SESSION"), "1") == 0) {
		op = "session";
		handlers_session(sb, r);
		goto done;
	}
	rt = route_find(handler_routes, r->method, r->path, &method_ok);
	if (!rt) {
		sp_err_set(&e, SP_NOT_FOUND, "No procedure at %.200s", r->path);
		goto fail;
	}
	op = rt->op_id;
	face = route_face(rt);
	if (!method_ok) {
		sp_err_set(&e, SP_METHOD_NOT_ALLOWED, "%s needs %s", rt->path, rt->method);
		goto fail;
	}
	if (rt->fields && route_parse_input(rt, r, &in, &e) < 0)
		goto fail;
	/* a route that reads the request itself still gets its raw body read
	 * under its own limit */
	if (!rt->fields && route_body_kind(rt) == RB_RAW &&
	    req_read_body(r, route_body_max(rt), &e) < 0)
		goto fail;
	if (handlers_call(&h, rt, in, 1, &out, &issues, &e) < 0)
		goto fail;
	/* A route without fields may have answered itself (MCP's 202). */
	if (r->status)
		goto done;
	status = behaviours_after(&h, rt, out);
	ledger_end(&h, rt, status, out, NULL);
	face_send_result(r, face, status, r->headers[0] ? r->headers : NULL,
			 status == 304 ? NULL : out);
	goto done;
fail:
	if (r->status) /* a streamed answer that was cut off (handlers/exec.c) */
		goto done;
	if (e.code == SP_OK)
		sp_err_set(&e, SP_INTERNAL, "Internal error");
	if (rt)
		ledger_end(&h, rt, 0, NULL, &e);
	face_send_error(r, face, &e, issues);
done:
	t0 = mono_us() - t0;
	metrics_observe(METRICS_REQUEST, op, r->status, t0);
	log_info("%s %s %d %lldms", r->method, r->path, r->status, (long long)(t0 / 1000));
	json_object_put(in);
	json_object_put(out);
	json_object_put(issues);
	log_set_request_id(NULL);
}
