/*
 * A sandbox's image: inspected on the current server, pulled when it is
 * missing (the record's creatingUntil moved for the pull), and checked for
 * the sh, sleep and date sandpit's programs need (remembered per image
 * id).
 * May call: templates.c (a local inspect refreshes the template info).
 */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"

/* tool_cache is shared by sandpit-stream's threads: read and written under
 * tool_mu, held for the look-up or the store only, never across a Docker
 * call. */
static pthread_mutex_t tool_mu = PTHREAD_MUTEX_INITIALIZER;

/* Which of sh, sleep, date the image lacks, remembered per image id so the
 * look-up costs nothing after the first sandbox of an image. Under
 * tool_mu. */
static struct {
	char image_id[80];
	char missing[32];
} tool_cache[32];
static unsigned tool_cache_next;

static const char *image_path(json_object *img)
{
	json_object *cfg, *env;
	static _Thread_local char path[1024]; /* per thread: valid until its next call */

	str_copy(path, sizeof(path),
		 "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	if (json_object_object_get_ex(img, "Config", &cfg) &&
	    json_object_object_get_ex(cfg, "Env", &env) &&
	    json_object_is_type(env, json_type_array))
		for (size_t i = 0; i < json_object_array_length(env); i++) {
			const char *kv = json_object_get_string(json_object_array_get_idx(env, i));
			if (kv && strncmp(kv, "PATH=", 5) == 0)
				str_copy(path, sizeof(path), kv + 5);
		}
	return path;
}

/* Checks sh, sleep and date through archive stats on the created (not yet
 * started) container. Writes the names missing ("" when none) into out. */
static int find_missing_tools(struct sandbox_ctx *ctx, const char *cid, const char *image_id,
			      const char *path, char *out, size_t cap, struct sp_err *e)
{
	static const char *const tools[] = { "sh", "sleep", "date" };
	unsigned i;
	int hit = 0;

	pthread_mutex_lock(&tool_mu);
	for (i = 0; i < sizeof(tool_cache) / sizeof(tool_cache[0]) && !hit; i++)
		if (strcmp(tool_cache[i].image_id, image_id) == 0) {
			str_copy(out, cap, tool_cache[i].missing);
			hit = 1;
		}
	pthread_mutex_unlock(&tool_mu);
	if (hit)
		return 0;
	out[0] = '\0';
	for (i = 0; i < 3; i++) {
		const char *p = path;
		int found = 0;
		while (*p && !found) {
			size_t n = strcspn(p, ":");
			char full[1200];
			struct docker_stat st;
			struct sp_err se;
			snprintf(full, sizeof(full), "%.*s/%s", (int)n, p, tools[i]);
			if (n && full[0] == '/' &&
			    docker_archive_stat(ctx->dk, cid, full, &st, &se) == 0)
				found = 1;
			else if (n && full[0] == '/' && se.code != SP_NOT_FOUND)
				return sp_err_set(e, se.code, "%s", se.msg);
			p += n;
			if (*p)
				p++;
		}
		if (!found) {
			size_t k = strlen(out);
			snprintf(out + k, cap - k, "%s%s", k ? ", " : "", tools[i]);
		}
	}
	pthread_mutex_lock(&tool_mu);
	i = tool_cache_next++ % (sizeof(tool_cache) / sizeof(tool_cache[0]));
	str_copy(tool_cache[i].image_id, sizeof(tool_cache[i].image_id), image_id);
	str_copy(tool_cache[i].missing, sizeof(tool_cache[i].missing), out);
	pthread_mutex_unlock(&tool_mu);
	return 0;
}

int sandbox_check_tools(struct sandbox_ctx *ctx, const struct sandbox *sb, json_object *img,
			char *missing, size_t cap, struct sp_err *e)
{
	json_object *v;

	if (!json_object_object_get_ex(img, "Id", &v))
		return sp_err_set(e, SP_INTERNAL, "Image has no id");
	return find_missing_tools(ctx, sb->container_id, json_object_get_string(v), image_path(img),
				  missing, cap, e);
}

void sandbox_template_info_note(const char *image, json_object *img);

int sandbox_prepare_image(struct sandbox_ctx *ctx, struct sandbox *sb, json_object **img,
			  struct sp_err *e, int *pulled)
{
	if (docker_image_inspect(ctx->dk, sb->image, img, e) == 0) {
		if (sb->template_name[0] && !sb->server_id[0])
			sandbox_template_info_note(sb->image, *img);
		return 0;
	}
	if (e->code != SP_NOT_FOUND)
		return -1;
	log_info("sandbox %s: pulling %s", sb->id, sb->image);
	*pulled = 1;
	if (sb->status == SB_CREATING && sb->org[0]) {
		/* a pull may take long: the record says how long it may stay creating */
		char u[32];
		const char *kv[] = { "creatingUntil", u };
		struct sp_err ignore;
		sb->creating_until =
			now_ms() +
			(int64_t)(ctx->cfg->pull_timeout_s + ctx->cfg->create_timeout_s) * 1000;
		snprintf(u, sizeof(u), "%lld", (long long)sb->creating_until);
		store_sandbox_update(ctx->st, sb->org, sb->id, "creating", kv, 2, 0, &ignore);
	}
	if (docker_image_pull(ctx->dk, sb->image, ctx->cfg->pull_timeout_s, e) < 0) {
		char msg[sizeof(e->msg)];
		str_copy(msg, sizeof(msg), e->msg);
		if (e->code == SP_UNAVAILABLE)
			return -1;
		/* the built-in template images are built, not pulled */
		return sp_err_field(e, SP_BAD_REQUEST, "image", "Image %s is not available: %s%s",
				    sb->image, msg,
				    strncmp(sb->image, "sandpit/", 8) == 0
					    ? " (a template image: build it with make images)"
					    : "");
	}
	return docker_image_inspect(ctx->dk, sb->image, img, e);
}
