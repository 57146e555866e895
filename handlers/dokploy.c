/*
 * The Dokploy face's renderings of the core's structs: the sandbox record,
 * the template list, a directory listing, as the /api/sandbox.* procedures
 * (and MCP, which calls the same handlers) answer them. The JSON is
 * Dokploy's exactly (dokploy-reference.md); the core knows nothing of it,
 * so another face can render the same structs its own way.
 */
#include "handlers.h"

#include <stdio.h>
#include <string.h>

#include "../common/util.h"

static json_object *str_or_null(const char *s)
{
	return s && *s ? json_object_new_string(s) : NULL;
}

static json_object *time_or_null(int64_t ms)
{
	char iso[40];

	if (ms <= 0)
		return NULL;
	iso8601_ms(ms, iso, sizeof(iso));
	return json_object_new_string(iso);
}

json_object *dk_sandbox_json(const struct sandbox *sb)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "sandboxId", json_object_new_string(sb->id));
	json_object_object_add(o, "name", str_or_null(sb->name));
	json_object_object_add(o, "organizationId", json_object_new_string(sb->org));
	json_object_object_add(o, "serverId", str_or_null(sb->server_id));
	json_object_object_add(o, "image", json_object_new_string(sb->image));
	json_object_object_add(o, "template", str_or_null(sb->template_name));
	json_object_object_add(o, "containerId", str_or_null(sb->container_id));
	json_object_object_add(o, "status",
			       json_object_new_string(sandbox_status_name(sb->status)));
	json_object_object_add(o, "cpu", json_object_new_double(sb->cpu));
	json_object_object_add(o, "memoryMb", json_object_new_int64(sb->memory_mb));
	json_object_object_add(o, "pidsLimit", json_object_new_int64(sb->pids_limit));
	json_object_object_add(o, "diskMb", json_object_new_int64(sb->disk_mb));
	json_object_object_add(o, "timeoutMs", json_object_new_int64(sb->timeout_ms));
	json_object_object_add(o, "maxLifetimeMs", json_object_new_int64(sb->max_lifetime_ms));
	json_object_object_add(o, "networkMode", json_object_new_string(sb->network_mode));
	json_object_object_add(o, "workdir", json_object_new_string(sb->workdir));
	json_object_object_add(o, "user", str_or_null(sb->user));
	json_object_object_add(o, "runtime", json_object_new_string(sb->runtime));
	json_object_object_add(o, "createdAt", time_or_null(sb->created_at));
	json_object_object_add(o, "expiresAt", time_or_null(sb->expires_at));
	json_object_object_add(o, "deadlineAt", time_or_null(sb->deadline_at));
	json_object_object_add(o, "lastActivityAt", time_or_null(sb->last_activity_at));
	json_object_object_add(o, "killedAt", time_or_null(sb->killed_at));
	json_object_object_add(o, "errorMessage", str_or_null(sb->error_message));
	json_object_object_add(o, "createdByKey", str_or_null(sb->created_by));
	return o;
}

json_object *dk_templates_json(const struct sandbox_template *t, size_t n)
{
	json_object *arr = json_object_new_array();

	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_new_object(), *env = json_object_new_object();
		const char *p = t[i].env;
		json_object_object_add(o, "name", json_object_new_string(t[i].name));
		json_object_object_add(o, "image", json_object_new_string(t[i].image));
		json_object_object_add(o, "user", json_object_new_string(t[i].user));
		json_object_object_add(o, "workdir", json_object_new_string(t[i].workdir));
		json_object_object_add(o, "description", json_object_new_string(t[i].description));
		json_object_object_add(o, "version", str_or_null(t[i].version));
		json_object_object_add(o, "imagePresent",
				       t[i].image_present < 0
					       ? NULL
					       : json_object_new_boolean(t[i].image_present));
		while (*p) {
			size_t len = strcspn(p, "\n"), eq = strcspn(p, "=");
			if (eq < len) {
				char k[128];
				snprintf(k, sizeof(k), "%.*s", (int)eq, p);
				json_object_object_add(env, k,
						       json_object_new_string_len(
							       p + eq + 1, (int)(len - eq - 1)));
			}
			p += len;
			if (*p)
				p++;
		}
		json_object_object_add(o, "env", env);
		json_object_array_add(arr, o);
	}
	return arr;
}

static const char *type_name(enum sandbox_file_type t)
{
	switch (t) {
	case SB_FILE_REGULAR:
		return "file";
	case SB_FILE_DIRECTORY:
		return "directory";
	case SB_FILE_SYMLINK:
		return "symlink";
	default:
		return "other";
	}
}

json_object *dk_file_list_json(const struct sandbox_file_list *l)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();

	for (size_t i = 0; i < l->n; i++) {
		const struct sandbox_file_entry *f = &l->entries[i];
		json_object *x = json_object_new_object();
		json_object_object_add(x, "name", json_object_new_string(f->name));
		json_object_object_add(x, "type", json_object_new_string(type_name(f->type)));
		if (f->has_stat) {
			char iso[40];
			iso8601_ms(f->modified_at, iso, sizeof(iso));
			json_object_object_add(x, "size", json_object_new_int64(f->size));
			json_object_object_add(x, "mode", json_object_new_string(f->mode));
			json_object_object_add(x, "modifiedAt", json_object_new_string(iso));
		} else {
			json_object_object_add(x, "size", NULL);
			json_object_object_add(x, "mode", NULL);
			json_object_object_add(x, "modifiedAt", NULL);
		}
		json_object_array_add(arr, x);
	}
	json_object_object_add(o, "path", json_object_new_string(l->path));
	json_object_object_add(o, "entries", arr);
	return o;
}
