/*
 * What the local Docker has of a template image, remembered per worker:
 * whether it is there and the version it really has: the sandpit.version
 * label images/build.sh probes into its images, else the *_VERSION variable
 * the upstream language images set (PYTHON_VERSION, NODE_VERSION, ...),
 * else the org.opencontainers.image.version label, else unknown (""). A
 * create refreshes it from the inspect it makes anyway (image.c);
 * sandbox.templates reads it (templates.c, which asks Docker again once an
 * entry is older than its TTL). Calls nothing in sandbox/.
 */
#include "../internal.h"

#include <stdio.h>
#include <string.h>

#include "../../common/util.h"

/* sandpitd's only (sandbox_templates): not locked, not for threads. */
static struct sandbox_image_info tinfo[CONFIG_MAX_TEMPLATES];
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

struct sandbox_image_info *sandbox_template_info_slot(const char *image)
{
	struct sandbox_image_info *t;

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
	struct sandbox_image_info *t = sandbox_template_info_slot(image);

	t->present = img != NULL;
	t->version[0] = '\0';
	if (img)
		image_version(img, t->version, sizeof(t->version));
	t->at = mono_ms();
	if (!t->at)
		t->at = 1;
}
