/*
 * The templates as sandbox.templates lists them: name, image, user,
 * workdir, env (with "~" as the home), and what the local Docker has of the
 * image (present, version), cached per worker and asked at most once per
 * answer, bounded like a status catch-up.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/util.h"
#include "../docker/docker.h"

/* What sandbox.templates tells of a template's image on the local Docker:
 * whether it is there and the version it really has: the sandpit.version
 * label images/build.sh probes into its images, else the *_VERSION variable
 * the upstream language images set (PYTHON_VERSION, NODE_VERSION, ...),
 * else the org.opencontainers.image.version label, else unknown (null).
 * Remembered per worker for TEMPLATE_INFO_TTL_MS, so sandbox.templates
 * costs no Docker call per request; a create of the image refreshes it from
 * the inspect it makes anyway. */
#define TEMPLATE_INFO_TTL_MS 30000

/* sandpitd's only (sandbox_templates): not locked, not for threads. */
static struct template_info {
	char image[256];
	char version[128];
	int present;
	int64_t at; /* mono ms */
} tinfo[CONFIG_MAX_TEMPLATES];
static unsigned tinfo_next;

static const char *img_label(json_object *img, const char *name)
{
	json_object *cfg, *labels, *v;

	if (json_object_object_get_ex(img, "Config", &cfg) &&
	    json_object_object_get_ex(cfg, "Labels", &labels) &&
	    json_object_is_type(labels, json_type_object) &&
	    json_object_object_get_ex(labels, name, &v) && json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

static void image_version(json_object *img, char *out, size_t cap)
{
	static const struct {
		const char *var, *lang;
	} vars[] = { { "PYTHON_VERSION=", "Python" }, { "NODE_VERSION=", "Node.js" },
		     { "BUN_VERSION=", "Bun" },	      { "DENO_VERSION=", "Deno" },
		     { "GOLANG_VERSION=", "Go" },     { "RUST_VERSION=", "Rust" },
		     { "RUBY_VERSION=", "Ruby" },     { "JAVA_VERSION=", "Java" },
		     { "PHP_VERSION=", "PHP" } };
	json_object *cfg, *env;
	const char *l = img_label(img, "sandpit.version");

	out[0] = '\0';
	if (l && *l) {
		str_copy(out, cap, l);
		return;
	}
	if (json_object_object_get_ex(img, "Config", &cfg) &&
	    json_object_object_get_ex(cfg, "Env", &env) &&
	    json_object_is_type(env, json_type_array))
		for (size_t i = 0; i < json_object_array_length(env); i++) {
			const char *kv = json_object_get_string(json_object_array_get_idx(env, i));
			for (size_t k = 0; kv && k < sizeof(vars) / sizeof(vars[0]); k++) {
				size_t n = strlen(vars[k].var);
				if (strncmp(kv, vars[k].var, n) == 0 && kv[n]) {
					snprintf(out, cap, "%s %s", vars[k].lang, kv + n);
					return;
				}
			}
		}
	l = img_label(img, "org.opencontainers.image.version");
	if (l && *l)
		str_copy(out, cap, l);
}

static struct template_info *tinfo_slot(const char *image)
{
	struct template_info *t;

	for (size_t i = 0; i < sizeof(tinfo) / sizeof(tinfo[0]); i++)
		if (tinfo[i].at && strcmp(tinfo[i].image, image) == 0)
			return &tinfo[i];
	t = &tinfo[tinfo_next++ % (sizeof(tinfo) / sizeof(tinfo[0]))];
	memset(t, 0, sizeof(*t));
	str_copy(t->image, sizeof(t->image), image);
	return t;
}

/* A local inspect answer (img NULL: the image is not there). */
void sandbox_template_info_note(const char *image, json_object *img)
{
	struct template_info *t = tinfo_slot(image);

	t->present = img != NULL;
	t->version[0] = '\0';
	if (img)
		image_version(img, t->version, sizeof(t->version));
	t->at = mono_ms();
	if (!t->at)
		t->at = 1;
}

/* *down: Docker failed an earlier template of the same answer (it is not
 * asked again). The inspect is optional: a server that is not answering
 * is not asked, and a call is bounded like a status catch-up
 * (RELIABILITY L2: templates never wait on Docker). */
static const struct template_info *template_info(struct sandbox_ctx *ctx, const char *image,
						 int64_t now, int *down)
{
	struct template_info *t = tinfo_slot(image);
	json_object *img = NULL;
	struct sp_err e;

	if (t->at && now - t->at < TEMPLATE_INFO_TTL_MS)
		return t;
	sp_err_clear(&e);
	if (!ctx || *down || sandbox_select_server(ctx, "", &e) < 0 || !ctx->dk ||
	    docker_client_suspect(ctx->dk)) {
		*down = 1;
		return t->at ? t : NULL; /* Docker unreachable: the last answer, if any */
	}
	docker_client_next_timeout(ctx->dk, CATCH_UP_TIMEOUT_MS);
	if (sandbox_docker_ready(ctx, &e) < 0) {
		*down = 1;
		return t->at ? t : NULL;
	}
	docker_client_next_timeout(ctx->dk, CATCH_UP_TIMEOUT_MS);
	if (docker_image_inspect(ctx->dk, image, &img, &e) == 0) {
		sandbox_template_info_note(image, img);
	} else if (e.code == SP_NOT_FOUND || e.code == SP_BAD_REQUEST) {
		sandbox_template_info_note(image, NULL);
	} else {
		*down = 1;
		return t->at ? t : NULL;
	}
	json_object_put(img);
	return tinfo_slot(image);
}

int sandbox_templates(struct sandbox_ctx *ctx, struct sandbox_template **out, size_t *nout,
		      struct sp_err *e)
{
	const struct config *cfg = ctx->cfg;
	int64_t now = mono_ms();
	int down = 0;

	*nout = 0;
	*out = calloc((size_t)cfg->ntemplates + 1, sizeof(**out));
	if (!*out)
		return sp_err_set(e, SP_INTERNAL, "out of memory");
	for (int i = 0; i < cfg->ntemplates; i++) {
		const struct template_conf *t = &cfg->templates[i];
		const struct template_info *ti = template_info(ctx, t->image, now, &down);
		struct sandbox_template *o = &(*out)[i];
		struct buf env;
		const char *p = t->env;
		str_copy(o->name, sizeof(o->name), t->name);
		str_copy(o->image, sizeof(o->image), t->image);
		str_copy(o->user, sizeof(o->user), "1000:1000");
		str_copy(o->workdir, sizeof(o->workdir), TEMPLATE_HOME);
		str_copy(o->description, sizeof(o->description),
			 t->description[0] ? t->description : t->image);
		str_copy(o->version, sizeof(o->version), ti ? ti->version : "");
		o->image_present = ti ? ti->present : -1;
		buf_init(&env, sizeof(o->env) - 1);
		while (*p) {
			size_t n = strcspn(p, "\n"), eq = strcspn(p, "=");
			if (eq < n) {
				char k[128], val[512], full[640];
				const char *tilde;
				snprintf(k, sizeof(k), "%.*s", (int)eq, p);
				snprintf(val, sizeof(val), "%.*s", (int)(n - eq - 1), p + eq + 1);
				tilde = strchr(val, '~');
				if (tilde)
					snprintf(full, sizeof(full), "%.*s%s%s", (int)(tilde - val),
						 val, TEMPLATE_HOME, tilde + 1);
				else
					str_copy(full, sizeof(full), val);
				if (buf_printf(&env, "%s=%s\n", k, full) < 0) {
					buf_free(&env);
					free(*out);
					*out = NULL;
					return sp_err_set(e, SP_INTERNAL,
							  "template %s: env over %zu bytes",
							  t->name, sizeof(o->env) - 1);
				}
			}
			p += n;
			if (*p)
				p++;
		}
		str_copy(o->env, sizeof(o->env), env.data ? env.data : "");
		buf_free(&env);
		(*nout)++;
	}
	return 0;
}
