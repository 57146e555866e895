/*
 * The templates as sandbox.templates lists them: name, image, user,
 * workdir, env (with "~" as the home), and what the local Docker has of the
 * image (present, version), cached per worker and asked at most once per
 * answer, bounded like a status catch-up (the cache: box/image_info.c).
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/util.h"
#include "../docker/docker.h"

/* sandbox.templates asks the local Docker again about a template image
 * whose entry (box/image_info.c) is older than this, so the answer costs no
 * Docker call per request. */
#define TEMPLATE_INFO_TTL_MS 30000

/* *down: Docker failed an earlier template of the same answer (it is not
 * asked again). The inspect is optional: a server that is not answering
 * is not asked, and a call is bounded like a status catch-up
 * (RELIABILITY L2: templates never wait on Docker). */
static const struct sandbox_image_info *template_info(struct sandbox_ctx *ctx, const char *image,
						      int64_t now, int *down)
{
	struct sandbox_image_info *t = sandbox_template_info_slot(image);
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
	return sandbox_template_info_slot(image);
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
		const struct sandbox_image_info *ti = template_info(ctx, t->image, now, &down);
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
