/*
 * A sandbox as a Redis record, both directions side by side so a field
 * cannot be added to one and forgotten in the other. (The API's JSON of a
 * record is the faces' business: handlers/dokploy.c.)
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/util.h"

static const char *const status_names[SB_STATUS_COUNT] = { "creating", "running", "killed",
							   "error",    "stopped", "stopping" };

const char *sandbox_status_name(enum sandbox_status s)
{
	return status_names[s];
}

static int status_parse(const char *s, enum sandbox_status *out)
{
	for (int i = 0; i < SB_STATUS_COUNT; i++)
		if (s && strcmp(s, status_names[i]) == 0) {
			*out = (enum sandbox_status)i;
			return 0;
		}
	return -1;
}

static int64_t rec_i64(const struct store_rec *r, const char *name)
{
	const char *v = store_rec_get(r, name);
	long long n = 0;

	if (v && parse_ll(v, -(1LL << 62), 1LL << 62, &n) == 0)
		return n;
	return 0;
}

static void rec_str(const struct store_rec *r, const char *name, char *out, size_t cap)
{
	const char *v = store_rec_get(r, name);
	str_copy(out, cap, v ? v : "");
}

int sandbox_from_rec(const struct store_rec *r, struct sandbox *sb)
{
	double cpu = 0;

	memset(sb, 0, sizeof(*sb));
	rec_str(r, "sandboxId", sb->id, sizeof(sb->id));
	rec_str(r, "name", sb->name, sizeof(sb->name));
	rec_str(r, "organizationId", sb->org, sizeof(sb->org));
	rec_str(r, "serverId", sb->server_id, sizeof(sb->server_id));
	rec_str(r, "image", sb->image, sizeof(sb->image));
	rec_str(r, "template", sb->template_name, sizeof(sb->template_name));
	rec_str(r, "containerId", sb->container_id, sizeof(sb->container_id));
	if (status_parse(store_rec_get(r, "status"), &sb->status) < 0)
		return -1;
	if (store_rec_get(r, "cpu"))
		parse_double(store_rec_get(r, "cpu"), &cpu);
	sb->cpu = cpu;
	sb->memory_mb = rec_i64(r, "memoryMb");
	sb->pids_limit = rec_i64(r, "pidsLimit");
	sb->timeout_ms = rec_i64(r, "timeoutMs");
	sb->max_lifetime_ms = rec_i64(r, "maxLifetimeMs");
	rec_str(r, "networkMode", sb->network_mode, sizeof(sb->network_mode));
	rec_str(r, "workdir", sb->workdir, sizeof(sb->workdir));
	rec_str(r, "user", sb->user, sizeof(sb->user));
	rec_str(r, "owner", sb->owner, sizeof(sb->owner));
	sb->pooled = rec_i64(r, "pooled") == 1;
	/* records older than the field are preserve */
	sb->discard = store_rec_get(r, "stopMode") &&
		      strcmp(store_rec_get(r, "stopMode"), "discard") == 0;
	sb->disk_mb = rec_i64(r, "diskMb");
	rec_str(r, "runtime", sb->runtime, sizeof(sb->runtime));
	rec_str(r, "createdBy", sb->created_by, sizeof(sb->created_by));
	sb->created_at = rec_i64(r, "createdAt");
	sb->expires_at = rec_i64(r, "expiresAt");
	sb->deadline_at = rec_i64(r, "deadlineAt");
	sb->last_activity_at = rec_i64(r, "lastActivityAt");
	sb->killed_at = rec_i64(r, "killedAt");
	sb->container_expires_at = rec_i64(r, "containerExpiresAt");
	sb->creating_until = rec_i64(r, "creatingUntil");
	rec_str(r, "errorMessage", sb->error_message, sizeof(sb->error_message));
	rec_str(r, "labels", sb->labels, sizeof(sb->labels));
	/* read only: ports.c alone writes it (a compare-and-set), so whole
	 * rewrites of the record never carry a stale copy */
	rec_str(r, "ports", sb->ports, sizeof(sb->ports));
	sb->has_environment = store_rec_get(r, "environment") != NULL;
	sb->timeout_stop =
		store_rec_get(r, "onTimeout") && strcmp(store_rec_get(r, "onTimeout"), "stop") == 0;
	rec_str(r, "volumes", sb->volumes, sizeof(sb->volumes));
	return 0;
}

/* Number fields are formatted into nums; kv points into sb and nums. */
int sandbox_to_kv(const struct sandbox *sb, char nums[][32], const char **kv)
{
	int n = 0, k = 0;

	/* a field added without growing SB_RECORD_FIELDS must not write past
	 * the caller's tables: stop at the first test that writes a record */
#define KV(name, val) \
	(n + 2 > 2 * SB_RECORD_FIELDS ? abort() : (void)0, kv[n++] = (name), kv[n++] = (val))
#define NUM(name, fmt, val)                                                             \
	(k + 1 > SB_RECORD_FIELDS ? abort() : (void)0, snprintf(nums[k], 32, fmt, val), \
	 KV(name, nums[k]), k++)
	KV("sandboxId", sb->id);
	KV("name", sb->name);
	KV("organizationId", sb->org);
	KV("serverId", sb->server_id);
	KV("image", sb->image);
	KV("template", sb->template_name);
	KV("containerId", sb->container_id);
	KV("status", sandbox_status_name(sb->status));
	NUM("cpu", "%.17g", sb->cpu);
	NUM("memoryMb", "%lld", (long long)sb->memory_mb);
	NUM("pidsLimit", "%lld", (long long)sb->pids_limit);
	NUM("timeoutMs", "%lld", (long long)sb->timeout_ms);
	NUM("maxLifetimeMs", "%lld", (long long)sb->max_lifetime_ms);
	KV("networkMode", sb->network_mode);
	KV("workdir", sb->workdir);
	KV("user", sb->user);
	KV("owner", sb->owner);
	NUM("pooled", "%d", sb->pooled);
	KV("stopMode", sb->discard ? "discard" : "preserve");
	NUM("diskMb", "%lld", (long long)sb->disk_mb);
	KV("runtime", sb->runtime);
	KV("createdBy", sb->created_by);
	NUM("createdAt", "%lld", (long long)sb->created_at);
	NUM("expiresAt", "%lld", (long long)sb->expires_at);
	NUM("deadlineAt", "%lld", (long long)sb->deadline_at);
	NUM("lastActivityAt", "%lld", (long long)sb->last_activity_at);
	NUM("killedAt", "%lld", (long long)sb->killed_at);
	NUM("containerExpiresAt", "%lld", (long long)sb->container_expires_at);
	NUM("creatingUntil", "%lld", (long long)sb->creating_until);
	KV("errorMessage", sb->error_message);
	KV("labels", sb->labels);
	KV("onTimeout", sb->timeout_stop ? "stop" : "delete");
	KV("volumes", sb->volumes);
#undef KV
#undef NUM
	return n;
}
