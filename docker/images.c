/*
 * Image endpoints: inspect, pull, commit (a container's filesystem as a new
 * image: snapshots) and remove. An image reference is checked against
 * the reference character set and percent-escaped whole into one path
 * segment ("a/b:c" -> "a%2Fb%3Ac"; the daemon decodes it). A pull's progress
 * stream is parsed object by object as it arrives, never buffered whole.
 */
#include <stdio.h>
#include <string.h>

#include "docker_int.h"

#define IMAGE_REF_MAX 255
#define DISTRIBUTION_TIMEOUT_S 10 /* bound on a /distribution look-up */

/* Checks an image reference: 1..255 bytes of [A-Za-z0-9._/:@-], starting
 * with an alphanumeric, without "..", "//" or a trailing '/'. Sets
 * SP_BAD_REQUEST (field "image"). */
static int check_ref(const char *s, struct sp_err *e)
{
	size_t n = s ? strnlen(s, IMAGE_REF_MAX + 1) : 0;

	if (n == 0 || n > IMAGE_REF_MAX)
		goto bad;
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
	      (s[0] >= '0' && s[0] <= '9')))
		goto bad;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '/' ||
		      ch == ':' || ch == '@' || ch == '-'))
			goto bad;
	}
	if (strstr(s, "..") || strstr(s, "//") || s[n - 1] == '/')
		goto bad;
	return 0;
bad:
	return sp_err_field(e, SP_BAD_REQUEST, "image", "invalid image reference");
}

/* Checks ref and sets r's path to fmt (one %s) with ref escaped into one
 * segment: a bad or too long reference is SP_BAD_REQUEST (field "image"). */
static int image_path(struct docker_req *r, const char *fmt, const char *ref, struct sp_err *e)
{
	char esc[IMAGE_REF_MAX * 3 + 1];
	int rc;

	if (check_ref(ref, e) < 0)
		return -1;
	if (docker_escape(ref, esc, sizeof(esc)) < 0)
		return sp_err_field(e, SP_BAD_REQUEST, "image", "image reference is too long");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	rc = docker_req_path(r, e, fmt, esc);
#pragma GCC diagnostic pop
	if (rc < 0)
		sp_err_field(e, SP_BAD_REQUEST, "image", "image reference is too long");
	return rc;
}

/* Missing image: SP_NOT_FOUND; a bad reference: SP_BAD_REQUEST. */
int docker_image_inspect(struct docker_client *c, const char *image, json_object **out,
			 struct sp_err *e)
{
	struct docker_req r;
	int rc = -1;

	*out = NULL;
	docker_req_init(&r, "GET");
	if (image_path(&r, "/images/%s/json", image, e) < 0)
		goto done;
	rc = docker_call(c, &r, NULL, out, e);
	if (rc == 0 && !*out)
		rc = sp_err_set(e, SP_INTERNAL, "Docker's image inspect answer is empty");
done:
	docker_req_cleanup(&r);
	return rc;
}

/* "name@sha256:..." -> digest (a tag before it is dropped); else a ':'
 * after the last '/' starts the tag; else "latest". */
int docker_image_split(const char *ref, char *repo, size_t rcap, char *tag, size_t tcap)
{
	const char *at = strchr(ref, '@'), *slash, *colon;
	size_t rlen;

	if (at) {
		if (snprintf(tag, tcap, "%s", at + 1) >= (int)tcap || !tag[0])
			return -1;
		rlen = (size_t)(at - ref);
	} else {
		rlen = strlen(ref);
	}
	slash = memrchr(ref, '/', rlen);
	colon = memrchr(slash ? slash : ref, ':', rlen - (size_t)((slash ? slash : ref) - ref));
	if (colon) {
		if (!at && (snprintf(tag, tcap, "%s", colon + 1) >= (int)tcap || !tag[0]))
			return -1;
		rlen = (size_t)(colon - ref);
	} else if (!at) {
		snprintf(tag, tcap, "latest");
	}
	if (rlen == 0 || rlen >= rcap)
		return -1;
	memcpy(repo, ref, rlen);
	repo[rlen] = '\0';
	return 0;
}

int docker_progress_feed(struct docker_progress *ps, const char *p, size_t n)
{
	while (n > 0 && !ps->malformed) {
		int chunk = n > 65536 ? 65536 : (int)n;
		json_object *o = json_tokener_parse_ex(ps->tok, p, chunk), *aux, *v;
		enum json_tokener_error err = json_tokener_get_error(ps->tok);
		size_t used = json_tokener_get_parse_end(ps->tok);

		if (o) {
			const char *m = json_object_is_type(o, json_type_object)
						? docker_json_str(o, "error")
						: NULL;
			if (m && !ps->error[0])
				snprintf(ps->error, sizeof(ps->error), "%s", m[0] ? m : "failed");
			if (json_object_is_type(o, json_type_object) &&
			    json_object_object_get_ex(o, "aux", &aux) &&
			    json_object_is_type(aux, json_type_object)) {
				const char *d = docker_json_str(aux, "Digest");
				if (d && strlen(d) < sizeof(ps->digest))
					snprintf(ps->digest, sizeof(ps->digest), "%s", d);
				if (json_object_object_get_ex(aux, "Size", &v))
					ps->size = json_object_get_int64(v);
			}
			json_object_put(o);
			json_tokener_reset(ps->tok);
		} else if (err != json_tokener_continue) {
			ps->malformed = 1;
			break;
		}
		if (used == 0 || used > (size_t)chunk)
			used = (size_t)chunk;
		p += used;
		n -= used;
	}
	return 0;
}

/* Feeds progress bytes (a docker_sink_fn). */
static int progress_sink(void *arg, const char *p, size_t n)
{
	return docker_progress_feed(arg, p, n);
}

/* Sends r (a pull or a push) and reads its progress stream into *ps as
 * it comes; within timeout_s (the client's when 0). Docker answers 200
 * and reports a failure inside the stream: its "error" is SP_INTERNAL
 * with Docker's text, a stream that is not JSON too (what: "pull",
 * "push"). */
static int progress_call(struct docker_client *c, struct docker_req *r, int timeout_s,
			 struct docker_progress *ps, const char *what, struct sp_err *e)
{
	int rc = -1;

	ps->tok = json_tokener_new();
	if (!ps->tok)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	r->sink = progress_sink;
	r->sink_arg = ps;
	r->timeout_ms = (int64_t)(timeout_s > 0 ? timeout_s : c->timeout_s) * 1000;
	if (docker_call(c, r, NULL, NULL, e) < 0)
		goto done;
	if (ps->error[0])
		sp_err_set(e, SP_INTERNAL, "%s", ps->error);
	else if (ps->malformed)
		sp_err_set(e, SP_INTERNAL, "Docker's %s progress is not JSON", what);
	else
		rc = 0;
done:
	json_tokener_free(ps->tok);
	ps->tok = NULL;
	return rc;
}

/* Mapping: a bad reference SP_BAD_REQUEST; the daemon's 404 (repository
 * unknown) SP_NOT_FOUND; any other failure, including an "error" object in
 * the progress stream (registry unreachable, manifest unknown, disk full),
 * SP_INTERNAL with the daemon's message; transport SP_UNAVAILABLE. */
int docker_image_pull(struct docker_client *c, const char *image, int timeout_s, struct sp_err *e)
{
	char repo[IMAGE_REF_MAX + 1], tag[IMAGE_REF_MAX + 1];
	struct docker_progress ps = { 0 };
	struct docker_req r;
	int rc = -1;

	docker_req_init(&r, "POST");
	if (check_ref(image, e) < 0)
		goto done;
	if (docker_image_split(image, repo, sizeof(repo), tag, sizeof(tag)) < 0) {
		sp_err_field(e, SP_BAD_REQUEST, "image", "invalid image reference");
		goto done;
	}
	if (docker_req_path(&r, e, "/images/create") < 0 ||
	    docker_req_query(&r, "fromImage", repo, e) < 0 ||
	    docker_req_query(&r, "tag", tag, e) < 0)
		goto done;
	rc = progress_call(c, &r, timeout_s, &ps, "pull", e);
done:
	docker_req_cleanup(&r);
	return rc;
}

int docker_image_commit(struct docker_client *c, const char *container, const char *repo,
			const char *tag, json_object *config, char id_out[80], struct sp_err *e)
{
	struct docker_req r;
	json_object *ans = NULL;
	const char *id;
	int rc = -1;

	id_out[0] = '\0';
	docker_req_init(&r, "POST");
	if (!docker_valid_id(container)) {
		sp_err_set(e, SP_BAD_REQUEST, "invalid container id");
		goto done;
	}
	if ((repo && check_ref(repo, e) < 0) || (tag && !docker_valid_id(tag))) {
		if (e->code == SP_OK)
			sp_err_set(e, SP_BAD_REQUEST, "invalid image tag");
		goto done;
	}
	if (docker_req_path(&r, e, "/commit") < 0 ||
	    docker_req_query(&r, "container", container, e) < 0 ||
	    (repo && docker_req_query(&r, "repo", repo, e) < 0) ||
	    (tag && docker_req_query(&r, "tag", tag, e) < 0) ||
	    docker_req_query(&r, "pause", "false", e) < 0)
		goto done;
	{
		/* always a JSON body: Docker refuses a commit without one */
		json_object *none = config ? NULL : json_object_new_object();
		int crc = docker_call(c, &r, config ? config : none, &ans, e);
		json_object_put(none);
		if (crc < 0)
			goto done;
	}
	id = ans ? docker_json_str(ans, "Id") : NULL;
	if (!id || strlen(id) >= 80) {
		sp_err_set(e, SP_INTERNAL, "Docker's commit answer has no image id");
		goto done;
	}
	snprintf(id_out, 80, "%s", id);
	rc = 0;
done:
	json_object_put(ans);
	docker_req_cleanup(&r);
	return rc;
}

int docker_image_remove(struct docker_client *c, const char *image, struct sp_err *e)
{
	struct docker_req r;
	int rc = -1;

	docker_req_init(&r, "DELETE");
	if (image_path(&r, "/images/%s", image, e) == 0)
		rc = docker_call(c, &r, NULL, NULL, e);
	docker_req_cleanup(&r);
	return rc;
}

int docker_image_tag(struct docker_client *c, const char *image, const char *repo, const char *tag,
		     struct sp_err *e)
{
	struct docker_req r;
	int rc = -1;

	docker_req_init(&r, "POST");
	if (check_ref(repo, e) < 0)
		goto done;
	if (!docker_valid_id(tag)) {
		sp_err_set(e, SP_BAD_REQUEST, "invalid image tag");
		goto done;
	}
	if (image_path(&r, "/images/%s/tag", image, e) < 0)
		goto done;
	if (docker_req_query(&r, "repo", repo, e) < 0 || docker_req_query(&r, "tag", tag, e) < 0) {
		sp_err_field(e, SP_BAD_REQUEST, "image", "image reference is too long");
		goto done;
	}
	rc = docker_call(c, &r, NULL, NULL, e);
done:
	docker_req_cleanup(&r);
	return rc;
}

int docker_image_push(struct docker_client *c, const char *repo, const char *tag, const char *auth,
		      int timeout_s, char digest_out[80], struct sp_err *e)
{
	struct docker_progress st = { 0 };
	struct docker_req r;
	int rc = -1;

	digest_out[0] = '\0';
	docker_req_init(&r, "POST");
	if (!docker_valid_id(tag)) {
		sp_err_set(e, SP_BAD_REQUEST, "invalid image tag");
		goto done;
	}
	if (image_path(&r, "/images/%s/push", repo, e) < 0)
		goto done;
	if (docker_req_query(&r, "tag", tag, e) < 0) {
		sp_err_field(e, SP_BAD_REQUEST, "image", "image reference is too long");
		goto done;
	}
	/* Docker refuses a push without the header: "{}" is no credential.
	 * Docker answers at once and streams: the guard sees its answer */
	r.auth = auth && auth[0] ? auth : "e30=";
	if (progress_call(c, &r, timeout_s, &st, "push", e) < 0)
		goto done;
	if (!st.digest[0]) {
		sp_err_set(e, SP_INTERNAL, "Docker's push progress names no digest");
		goto done;
	}
	snprintf(digest_out, 80, "%s", st.digest);
	rc = 0;
done:
	docker_req_cleanup(&r);
	return rc;
}

int docker_distribution_inspect(struct docker_client *c, const char *ref, const char *auth,
				char digest_out[80], char *media_type, size_t mcap,
				struct sp_err *e)
{
	struct docker_req r;
	json_object *ans = NULL, *d;
	const char *dg, *mt;
	int rc = -1;

	digest_out[0] = '\0';
	if (mcap)
		media_type[0] = '\0';
	docker_req_init(&r, "GET");
	if (image_path(&r, "/distribution/%s/json", ref, e) < 0)
		goto done;
	r.auth = auth && auth[0] ? auth : NULL;
	/* a manifest look-up takes milliseconds: a silent registry must not
	 * hold the worker for long, nor look like a stuck daemon */
	r.unguarded = 1;
	r.timeout_ms = (int64_t)(c->timeout_s < DISTRIBUTION_TIMEOUT_S ? c->timeout_s
								       : DISTRIBUTION_TIMEOUT_S) *
		       1000;
	if (docker_call(c, &r, NULL, &ans, e) < 0)
		goto done;
	dg = ans && json_object_object_get_ex(ans, "Descriptor", &d) ? docker_json_str(d, "digest")
								     : NULL;
	if (!dg || strlen(dg) >= 80) {
		sp_err_set(e, SP_INTERNAL, "Docker's distribution answer names no digest");
		goto done;
	}
	snprintf(digest_out, 80, "%s", dg);
	mt = docker_json_str(d, "mediaType");
	if (mt && mcap)
		snprintf(media_type, mcap, "%s", mt);
	rc = 0;
done:
	json_object_put(ans);
	docker_req_cleanup(&r);
	return rc;
}
