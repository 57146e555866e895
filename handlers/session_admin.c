/*
 * The dashboard's organization pages for owners and admins, under
 * /session/ (nginx's location /session/, beside /session): the org's keys
 * (list; create, whose key is answered this once; revoke), its roles, its
 * quota (read only: an org does not raise its own quota), and the Docker
 * servers it may be placed on with their load (never their endpoints,
 * certificates or keys). Only a
 * session cookie is taken here, under the cross-site rules of
 * handlers/session.c (Origin, Sec-Fetch-Site, X-Sandpit-CSRF), and only for
 * a role with the operator permission; everything stays in the session's
 * organization. A new key is never logged; its hash alone is stored.
 */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/perms.h"
#include "../common/util.h"
#include "../store/store.h"

#define KEYS_MAX 256

/* A key id as sandpit makes them: [a-z0-9], 1 to 39 of them. */
static int key_id_ok(const char *k)
{
	size_t n = strlen(k);

	if (n == 0 || n > 39)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9')))
			return 0;
	return 1;
}

/* The session's identity, checked for the operator permission. */
static int admin_ident(struct sandbox_ctx *sb, struct req *r, struct auth_ident *id,
		       struct sp_err *e)
{
	char kh[65], sh[65];
	int rc = handlers_session_auth(sb, r, r->method, kh, sh, e);

	if (rc < 0)
		return -1;
	if (rc == 0)
		return sp_err_set(e, SP_UNAUTHORIZED,
				  "Not signed in (these pages take the "
				  "dashboard's session only)");
	if (handlers_auth_ident(sb, kh, id, e) < 0)
		return -1;
	if (!perms_has(id->perms, "operator"))
		return sp_err_set(e, SP_FORBIDDEN, "Your role (%s) lacks the operator permission",
				  id->role);
	return 0;
}

static json_object *iso_or_null(const char *ms_text)
{
	long long ms = 0;
	char iso[40];

	if (!ms_text || parse_ll(ms_text, 0, 1LL << 50, &ms) < 0)
		return NULL;
	iso8601_ms(ms, iso, sizeof(iso));
	return json_object_new_string(iso);
}

static int keys_list(struct sandbox_ctx *sb, const struct auth_ident *id, json_object **out,
		     struct sp_err *e)
{
	struct store_rec *recs = calloc(KEYS_MAX, sizeof(*recs));
	json_object *arr;
	int n;

	if (!recs)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	n = store_key_list(sb->st, id->org, recs, KEYS_MAX, e);
	if (n < 0) {
		free(recs);
		return -1;
	}
	arr = json_object_new_array();
	for (int i = 0; i < n; i++) {
		const char *k = store_rec_get(&recs[i], "keyId"),
			   *role = store_rec_get(&recs[i], "role");
		json_object *o = json_object_new_object();
		json_object_object_add(o, "keyId", json_object_new_string(k ? k : ""));
		json_object_object_add(o, "role", json_object_new_string(role ? role : ""));
		json_object_object_add(o, "createdAt",
				       iso_or_null(store_rec_get(&recs[i], "createdAt")));
		json_object_object_add(o, "current",
				       json_object_new_boolean(k && strcmp(k, id->key_id) == 0));
		json_object_array_add(arr, o);
		store_rec_free(&recs[i]);
	}
	free(recs);
	*out = json_object_new_object();
	json_object_object_add(*out, "keys", arr);
	return 0;
}

/* Whether key_id is one of org's keys: 1 yes, 0 no, -1 error. */
static int key_of_org(struct sandbox_ctx *sb, const char *org, const char *key_id, struct sp_err *e)
{
	struct store_rec *recs = calloc(KEYS_MAX, sizeof(*recs));
	int n, found = 0;

	if (!recs)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	n = store_key_list(sb->st, org, recs, KEYS_MAX, e);
	for (int i = 0; i < n; i++) {
		const char *k = store_rec_get(&recs[i], "keyId");
		found |= k && strcmp(k, key_id) == 0;
		store_rec_free(&recs[i]);
	}
	free(recs);
	return n < 0 ? -1 : found;
}

static int keys_create(struct sandbox_ctx *sb, struct req *r, const struct auth_ident *id,
		       json_object **out, struct sp_err *e)
{
	char key[64], hash[65], key_id[17], *custom = NULL;
	json_object *in = NULL, *v;
	const char *role;
	int rc = -1;

	if (handlers_session_body(r, &in, e) < 0)
		return -1;
	if (!in || !json_object_object_get_ex(in, "role", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		sp_err_set(e, SP_BAD_REQUEST, "role: a JSON body {\"role\": \"member\"} is needed");
		goto out;
	}
	role = json_object_get_string(v);
	if (!perms_builtin_role(role)) {
		if (!perms_valid_role_name(role)) {
			sp_err_set(e, SP_BAD_REQUEST, "role: not a role name");
			goto out;
		}
		if (store_role_get(sb->st, id->org, role, &custom, e) < 0) {
			if (e->code == SP_NOT_FOUND)
				sp_err_set(e, SP_BAD_REQUEST,
					   "role: no role %s in this organization", role);
			goto out;
		}
		free(custom);
	}
	crypto_new_api_key(key, sizeof(key));
	crypto_random_id(key_id, 16);
	crypto_key_hash(sb->cfg->data_key, key, strlen(key), hash);
	if (store_key_put(sb->st, hash, id->org, role, key_id, e) < 0)
		goto out;
	log_info("session: key %s (role %s) created in %s by key %s", key_id, role, id->org,
		 id->key_id);
	*out = json_object_new_object();
	json_object_object_add(*out, "keyId", json_object_new_string(key_id));
	json_object_object_add(*out, "role", json_object_new_string(role));
	json_object_object_add(*out, "key", json_object_new_string(key));
	rc = 0;
out:
	sodium_memzero(key, sizeof(key));
	json_object_put(in);
	return rc;
}

static int roles_list(struct sandbox_ctx *sb, const struct auth_ident *id, json_object **out,
		      struct sp_err *e)
{
	static const char *const builtin[] = { "owner", "admin", "member" };
	struct store_rec rec = { 0 };
	json_object *arr;

	if (store_role_list(sb->st, id->org, &rec, e) < 0)
		return -1;
	arr = json_object_new_array();
	for (size_t i = 0; i < 3 + (size_t)rec.n; i++) {
		json_object *o = json_object_new_object();
		const char *name = i < 3 ? builtin[i] : rec.name[i - 3];
		const char *perms = i < 3 ? perms_builtin_role(name) : rec.value[i - 3];
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "builtIn", json_object_new_boolean(i < 3));
		json_object_object_add(o, "permissions", json_object_new_string(perms));
		json_object_array_add(arr, o);
	}
	store_rec_free(&rec);
	*out = json_object_new_object();
	json_object_object_add(*out, "roles", arr);
	return 0;
}

static int quota_get(struct sandbox_ctx *sb, const struct auth_ident *id, json_object **out,
		     struct sp_err *e)
{
	static const char *const fields[] = { "sandboxes", "cpuMilli", "memoryMb",
					      "maxLifetimeMs" };
	struct store_rec rec = { 0 };

	if (store_quota_get(sb->st, id->org, &rec, e) < 0)
		return -1;
	*out = json_object_new_object();
	json_object_object_add(*out, "org", json_object_new_string(id->org));
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const char *v = store_rec_get(&rec, fields[i]);
		long long n;
		/* absent: unlimited (null) */
		json_object_object_add(
			*out, fields[i],
			v && parse_ll(v, 0, 1LL << 50, &n) == 0 ? json_object_new_int64(n) : NULL);
	}
	store_rec_free(&rec);
	return 0;
}

/* Whether the comma-separated orgs list lets org in ("*" or its name). */
static int org_listed(const char *orgs, const char *org)
{
	size_t n = strlen(org);

	for (const char *p = orgs; *p;) {
		size_t seg = strcspn(p, ",");
		if ((seg == 1 && *p == '*') || (seg == n && strncmp(p, org, n) == 0))
			return 1;
		p += seg;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* The Docker servers this org may be placed on, with their load: never
 * their endpoint, certificates or keys. */
static int servers_list(struct sandbox_ctx *sb, const struct auth_ident *id, json_object **out,
			struct sp_err *e)
{
	struct sandbox_server_row *rows = NULL;
	json_object *arr;
	size_t n = 0;

	if (sandbox_server_list(sb->st, &rows, &n, e) < 0)
		return -1;
	arr = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		const struct sandbox_server *s = &rows[i].s;
		json_object *o;
		char at[40];
		if (!org_listed(s->orgs, id->org))
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "id", json_object_new_string(s->id));
		json_object_object_add(o, "name", json_object_new_string(s->name));
		json_object_object_add(o, "pool", json_object_new_string(s->pool));
		json_object_object_add(o, "netCheck", json_object_new_string(s->net_check));
		if (s->net_check_at) {
			iso8601_ms(s->net_check_at, at, sizeof(at));
			json_object_object_add(o, "netCheckAt", json_object_new_string(at));
		}
		if (rows[i].has_load) {
			json_object_object_add(o, "sandboxes",
					       json_object_new_int64(rows[i].sandboxes));
			json_object_object_add(o, "cpuMilli",
					       json_object_new_int64(rows[i].cpu_milli));
			json_object_object_add(o, "memoryMb",
					       json_object_new_int64(rows[i].memory_mb));
		}
		json_object_array_add(arr, o);
	}
	free(rows);
	*out = json_object_new_object();
	json_object_object_add(*out, "servers", arr);
	return 0;
}

void handlers_session_admin(struct sandbox_ctx *sb, struct req *r)
{
	struct auth_ident id;
	json_object *out = NULL;
	struct sp_err e;
	const char *p = r->path + strlen("/session/");
	int rc = -1, get = strcmp(r->method, "GET") == 0;

	sp_err_clear(&e);
	if (admin_ident(sb, r, &id, &e) < 0)
		goto done;
	if (strcmp(p, "keys") == 0 && get)
		rc = keys_list(sb, &id, &out, &e);
	else if (strcmp(p, "keys") == 0 && strcmp(r->method, "POST") == 0)
		rc = keys_create(sb, r, &id, &out, &e);
	else if (strncmp(p, "keys/", 5) == 0 && strcmp(r->method, "DELETE") == 0) {
		const char *k = p + 5;
		int found = key_id_ok(k) ? key_of_org(sb, id.org, k, &e) : 0;
		if (found == 0)
			sp_err_set(&e, SP_NOT_FOUND, "No key %.40s in this organization", k);
		else if (found > 0 && store_key_revoke(sb->st, k, &e) == 0) {
			log_info("session: key %s revoked in %s by key %s", k, id.org, id.key_id);
			out = json_object_new_object();
			json_object_object_add(out, "revoked", json_object_new_string(k));
			rc = 0;
		}
	} else if (strcmp(p, "roles") == 0 && get)
		rc = roles_list(sb, &id, &out, &e);
	else if (strcmp(p, "quota") == 0 && get)
		rc = quota_get(sb, &id, &out, &e);
	else if (strcmp(p, "servers") == 0 && get)
		rc = servers_list(sb, &id, &out, &e);
	else
		sp_err_set(&e, SP_NOT_FOUND, "No dashboard page at %.100s", r->path);
done:
	if (rc < 0)
		req_send_error(r, &e, NULL);
	else
		req_send_json(r, 200, NULL, out);
	json_object_put(out);
}
