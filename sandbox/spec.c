/*
 * The container spec of a sandbox: the body of Docker's container create
 * (image, the main process sandbox/sh/main.sh with its lifetimes, the
 * keeper as its user, env, labels, HostConfig with the whole security
 * model: CapDrop ALL, no-new-privileges, no privilege, private cgroup and
 * IPC namespaces, the state tmpfs, the network, the disk, the managed
 * volumes), its CPU, memory
 * and pids limits (also for an update of a warm container), its runtime
 * (runc or gVisor, and whether the server has it), and the env it starts
 * with (the template's, the envVars .env lines). Cold creates and warm
 * pools make their containers from this one spec. Never puts a caller
 * value into User or Privileged.
 * May call: disk.c (the disk's HostConfig). Reads and writes no record.
 */
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/util.h"
#include "../docker/docker.h"
#include "sh_programs.h"

#define STATE_DIR ".sandpit"
#define STATE_TMPFS_BYTES 65536

void sandbox_keeper_user(const struct config *cfg, char *out, size_t cap)
{
	snprintf(out, cap, "%d:%d", cfg->keeper_uid, cfg->keeper_uid);
}

/* The dockerd runtime a sandbox runs under: "" for Docker's default (runc),
 * else the configured gVisor runtime of its network mode. */
static const char *docker_runtime(const struct config *cfg, const struct sandbox *sb)
{
	if (strcmp(sb->runtime, "gvisor") != 0)
		return "";
	return strcmp(sb->network_mode, "internet") == 0 ? cfg->gvisor_runtime_internet
							 : cfg->gvisor_runtime_isolated;
}

/*
 * The cgroup pids limit Docker sets. Under gVisor it counts the host threads
 * of the sandbox's kernel, not the processes inside: runsc 20221219 on the
 * ptrace platform uses about 52 threads idle and about 8 more per process
 * inside (measured). A limit of pidsLimit processes then needs this much;
 * when it is hit, the sandbox's kernel cannot clone and the sandbox dies
 * (killed) instead of fork failing with EAGAIN as under runc.
 */
#define GVISOR_PIDS_BASE 64
#define GVISOR_PIDS_PER_PROCESS 8
static int64_t host_pids_limit(const struct config *cfg, const struct sandbox *sb)
{
	if (!docker_runtime(cfg, sb)[0])
		return sb->pids_limit;
	return sb->pids_limit * GVISOR_PIDS_PER_PROCESS + GVISOR_PIDS_BASE;
}

void sandbox_limits_json(const struct config *cfg, const struct sandbox *sb, json_object *o)
{
	json_object_object_add(o, "NanoCpus",
			       json_object_new_int64((int64_t)(sb->cpu * 1e9 + 0.5)));
	json_object_object_add(o, "Memory", json_object_new_int64(sb->memory_mb * 1024 * 1024));
	json_object_object_add(o, "MemorySwap", json_object_new_int64(sb->memory_mb * 1024 * 1024));
	json_object_object_add(o, "PidsLimit", json_object_new_int64(host_pids_limit(cfg, sb)));
}

/* Whether the daemon has runtime `name` registered. The list (GET /info) is
 * kept per worker and server; a name it lacks is asked again at most every
 * 10 s, so registering runsc later needs no restart of sandpit. */
static int runtime_registered(struct sandbox_ctx *ctx, const char *name, struct sp_err *e)
{
	struct server_conn *sc = ctx->cur;
	char want[80];

	snprintf(want, sizeof(want), "%s\n", name);
	for (int pass = 0; pass < 2; pass++) {
		const char *p = sc->runtimes;
		if (sc->runtimes_at) {
			/* names are whole lines */
			while ((p = strstr(p, want)) && p != sc->runtimes && p[-1] != '\n')
				p++;
			if (p)
				return 1;
		}
		if (pass == 1 || (sc->runtimes_at && mono_ms() - sc->runtimes_at < 10000))
			break;
		if (docker_runtimes(ctx->dk, sc->runtimes, sizeof(sc->runtimes), e) < 0)
			return -1;
		sc->runtimes_at = mono_ms();
	}
	return 0;
}

/* 0 when the sandbox's runtime can run on the current server; else -1 with
 * a 400 naming `runtime` (or why the daemon could not be asked). */
int sandbox_runtime_ok(struct sandbox_ctx *ctx, const struct sandbox *sb, struct sp_err *e)
{
	const char *name = docker_runtime(ctx->cfg, sb);
	int reg;

	if (!name[0])
		return 0;
	reg = runtime_registered(ctx, name, e);
	if (reg < 0)
		return -1;
	if (reg == 0)
		return sp_err_field(
			e, SP_BAD_REQUEST, "runtime",
			"runtime: gVisor is not available on this server: register runsc "
			"with dockerd (see README); runtime '%s' is missing",
			name);
	return 0;
}

/* Parses a .env body into Docker's "K=V" list. Lines may be blank, start
 * with '#', or with "export "; values may be quoted with ' or ". */
int sandbox_env_lines(const char *s, size_t len, json_object *env, struct sp_err *e)
{
	size_t i = 0;
	int lineno = 0;

	while (i < len) {
		size_t end = i, ks, ke, vs, ve;
		struct buf kv;
		lineno++;
		while (end < len && s[end] != '\n')
			end++;
		ks = i;
		ve = end;
		if (ve > ks && s[ve - 1] == '\r')
			ve--;
		while (ks < ve && isspace((unsigned char)s[ks]))
			ks++;
		i = end + 1;
		if (ks == ve || s[ks] == '#')
			continue;
		if (ve - ks > 7 && memcmp(s + ks, "export ", 7) == 0)
			ks += 7;
		ke = ks;
		while (ke < ve && s[ke] != '=')
			ke++;
		if (ke == ve)
			return sp_err_field(e, SP_BAD_REQUEST, "envVars",
					    "envVars: line %d is not KEY=value", lineno);
		vs = ke + 1;
		while (ke > ks && isspace((unsigned char)s[ke - 1]))
			ke--;
		if (ke == ks || !(isalpha((unsigned char)s[ks]) || s[ks] == '_'))
			return sp_err_field(e, SP_BAD_REQUEST, "envVars",
					    "envVars: line %d has an invalid name", lineno);
		for (size_t k = ks; k < ke; k++)
			if (!isalnum((unsigned char)s[k]) && s[k] != '_')
				return sp_err_field(e, SP_BAD_REQUEST, "envVars",
						    "envVars: line %d has an invalid name", lineno);
		if (ve - vs >= 2 && (s[vs] == '"' || s[vs] == '\'') && s[ve - 1] == s[vs]) {
			vs++;
			ve--;
		}
		if (memchr(s + vs, '\0', ve - vs))
			return sp_err_field(e, SP_BAD_REQUEST, "envVars",
					    "envVars: line %d holds a NUL byte", lineno);
		buf_init(&kv, 70000);
		if (buf_append(&kv, s + ks, ke - ks) < 0 || buf_append(&kv, "=", 1) < 0 ||
		    buf_append(&kv, s + vs, ve - vs) < 0) {
			buf_free(&kv);
			return sp_err_set(e, SP_INTERNAL, "out of memory");
		}
		json_object_array_add(env, json_object_new_string_len(kv.data, (int)kv.len));
		buf_wipe(&kv);
	}
	return 0;
}

/* HOME is the workdir (as in Dokploy: /home/user unless the create names
 * another), then the template's extra env ("K=V\n" lines, "~" = the home). */
void sandbox_template_env(const struct template_conf *t, const char *home, json_object *env)
{
	const char *p = t ? t->env : "";
	char line[1200];

	snprintf(line, sizeof(line), "HOME=%s", home);
	json_object_array_add(env, json_object_new_string(line));
	while (*p) {
		size_t n = strcspn(p, "\n");
		const char *tilde = memchr(p, '~', n);
		if (tilde)
			snprintf(line, sizeof(line), "%.*s%s%.*s", (int)(tilde - p), p, home,
				 (int)(n - (size_t)(tilde - p) - 1), tilde + 1);
		else
			snprintf(line, sizeof(line), "%.*s", (int)n, p);
		if (n)
			json_object_array_add(env, json_object_new_string(line));
		p += n;
		if (*p)
			p++;
	}
}

static json_object *str_array(const char *const *v)
{
	json_object *a = json_object_new_array();

	for (; *v; v++)
		json_object_array_add(a, json_object_new_string(*v));
	return a;
}

/* The container's labels: sandbox, its id and org, the operator's
 * container_label pairs, the installation and the deadline. A new
 * object. */
static json_object *spec_labels(const struct sandbox_ctx *ctx, const struct sandbox *sb)
{
	const struct config *cfg = ctx->cfg;
	json_object *labels = json_object_new_object();
	char lname[160], at[32];

	config_label(cfg, "sandbox", lname, sizeof(lname));
	json_object_object_add(labels, lname, json_object_new_string("true"));
	config_label(cfg, "sandboxId", lname, sizeof(lname));
	json_object_object_add(labels, lname, json_object_new_string(sb->id));
	config_label(cfg, "organizationId", lname, sizeof(lname));
	json_object_object_add(labels, lname, json_object_new_string(sb->org));
	/* container_label: KEY=VALUE pairs, checked by config_load */
	for (const char *p = cfg->container_label + strspn(cfg->container_label, " \t"); *p;
	     p += strspn(p, " \t")) {
		size_t n = strcspn(p, " \t"), k = strcspn(p, "=");
		snprintf(lname, sizeof(lname), "%.*s", (int)k, p);
		json_object_object_add(labels, lname,
				       json_object_new_string_len(p + k + 1, (int)(n - k - 1)));
		p += n;
	}
	/* the installation that made it: the only one whose reaper touches it */
	snprintf(lname, sizeof(lname), "%s.install", cfg->label_prefix);
	json_object_object_add(labels, lname, json_object_new_string(ctx->install_id));
	/* the reaper ends a container past this even without a record */
	snprintf(lname, sizeof(lname), "%s.deadlineAt", cfg->label_prefix);
	snprintf(at, sizeof(at), "%lld", (long long)sb->deadline_at);
	json_object_object_add(labels, lname, json_object_new_string(at));
	/* no AutoRemove: whoever ends it removes it (state.c, reaper.c) */
	if (sb->discard) {
		snprintf(lname, sizeof(lname), "%s.stopMode", cfg->label_prefix);
		json_object_object_add(labels, lname, json_object_new_string("discard"));
	}
	return labels;
}

/* The container's HostConfig: the security model (no capabilities,
 * no-new-privileges, not privileged, private cgroup and IPC namespaces,
 * an init), the limits, the state tmpfs, the runtime, no restart, a
 * bounded log, the disk and network net. A new object. */
static json_object *spec_host_config(const struct config *cfg, const struct sandbox *sb,
				     const char *net)
{
	json_object *hc = json_object_new_object(), *lc, *lcc, *ep;
	char opts[160];
	static const char *const capdrop[] = { "ALL", NULL };
	static const char *const secopt[] = { "no-new-privileges", NULL };

	json_object_object_add(hc, "CapDrop", str_array(capdrop));
	json_object_object_add(hc, "SecurityOpt", str_array(secopt));
	json_object_object_add(hc, "Init", json_object_new_boolean(1));
	sandbox_limits_json(cfg, sb, hc);
	/* a discard-mode sandbox keeps its container (and disk) across a
	 * docker stop: the reaper removes it once the sandbox has ended */
	json_object_object_add(hc, "AutoRemove", json_object_new_boolean(!sb->discard));
	json_object_object_add(hc, "Privileged", json_object_new_boolean(0));
	json_object_object_add(hc, "CgroupnsMode", json_object_new_string("private"));
	json_object_object_add(hc, "IpcMode", json_object_new_string("private"));
	/* the state folder: the keeper's alone (the expiry and the timeout);
	 * inside it a folder anyone may write, for the markers of commands */
	snprintf(opts, sizeof(opts), "rw,noexec,nosuid,nodev,size=%d,mode=0755,uid=%d,gid=%d",
		 STATE_TMPFS_BYTES, cfg->keeper_uid, cfg->keeper_uid);
	ep = json_object_new_object();
	json_object_object_add(ep, "/" STATE_DIR, json_object_new_string(opts));
	snprintf(opts, sizeof(opts), "rw,noexec,nosuid,nodev,size=%d,mode=1777", STATE_TMPFS_BYTES);
	json_object_object_add(ep, "/" STATE_DIR "/x", json_object_new_string(opts));
	/* the durable processes' output and status (helper.c, process.c):
	 * memory, counted against the sandbox's, a quarter of it at most */
	snprintf(opts, sizeof(opts), "rw,noexec,nosuid,nodev,size=%lldm,mode=1777",
		 (long long)(sb->memory_mb / 4 > 16 ? sb->memory_mb / 4 : 16));
	json_object_object_add(ep, "/" STATE_DIR "/p", json_object_new_string(opts));
	json_object_object_add(hc, "Tmpfs", ep);
	if (docker_runtime(cfg, sb)[0])
		json_object_object_add(hc, "Runtime",
				       json_object_new_string(docker_runtime(cfg, sb)));
	ep = json_object_new_object();
	json_object_object_add(ep, "Name", json_object_new_string("no"));
	json_object_object_add(hc, "RestartPolicy", ep);
	lc = json_object_new_object();
	lcc = json_object_new_object();
	json_object_object_add(lc, "Type", json_object_new_string("json-file"));
	json_object_object_add(lcc, "max-size", json_object_new_string("10m"));
	json_object_object_add(lcc, "max-file", json_object_new_string("1"));
	json_object_object_add(lc, "Config", lcc);
	json_object_object_add(hc, "LogConfig", lc);
	/* the disk limit (disk.c): the workdir on its own filesystem, the
	 * image read-only, /tmp and /var/tmp bounded; or StorageOpt */
	sandbox_disk_hostconfig(cfg, sb, hc);
	/* the helper, read-only, from its per-server volume */
	sandbox_helper_mount(hc);
	sandbox_volumes_mounts(cfg, sb, hc);
	json_object_object_add(hc, "NetworkMode", json_object_new_string(net));
	return hc;
}

void sandbox_volumes_mounts(const struct config *cfg, const struct sandbox *sb, json_object *hc)
{
	json_object *list = sb->volumes[0] ? json_tokener_parse(sb->volumes) : NULL, *mounts;

	if (!list || !json_object_is_type(list, json_type_array)) {
		json_object_put(list);
		return;
	}
	if (!json_object_object_get_ex(hc, "Mounts", &mounts)) {
		mounts = json_object_new_array();
		json_object_object_add(hc, "Mounts", mounts);
	}
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *a = json_object_array_get_idx(list, i), *v, *t, *m, *vo;
		char name[64];
		if (!json_object_object_get_ex(a, "volume", &v) ||
		    !json_object_object_get_ex(a, "target", &t))
			continue;
		/* a volume's loop disk (disk.c), attached for this create */
		if (i < SB_VOLUME_ATTACH_MAX && sb->disk.vols[i].dev[0]) {
			json_object_array_add(mounts,
					      sandbox_disk_mount(cfg, sb, sb->disk.vols[i].dev,
								 json_object_get_string(t)));
			continue;
		}
		snprintf(name, sizeof(name), SB_VOLUME_DOCKER_PREFIX "%s",
			 json_object_get_string(v));
		m = json_object_new_object();
		vo = json_object_new_object();
		json_object_object_add(m, "Type", json_object_new_string("volume"));
		json_object_object_add(m, "Source", json_object_new_string(name));
		json_object_object_add(m, "Target", json_object_get(t));
		json_object_object_add(m, "ReadOnly", json_object_new_boolean(0));
		json_object_object_add(vo, "NoCopy", json_object_new_boolean(1));
		json_object_object_add(m, "VolumeOptions", vo);
		json_object_array_add(mounts, m);
	}
	json_object_put(list);
}

int64_t sandbox_deadline_aim(const struct sandbox *sb)
{
	return sb->deadline_at - (strcmp(sb->runtime, "gvisor") == 0 ? DEADLINE_GVISOR_LEAD_MS : 0);
}

json_object *sandbox_container_spec(const struct sandbox_ctx *ctx, const struct sandbox *sb,
				    json_object *env)
{
	const struct config *cfg = ctx->cfg;
	json_object *o = json_object_new_object(), *cmd, *nc, *ep;
	char deadline[32], remaining[32], expires[32], tsec[32], kuid[32], keeper[48], net[128];

	snprintf(deadline, sizeof(deadline), "%lld", (long long)(sandbox_deadline_aim(sb) / 1000));
	snprintf(remaining, sizeof(remaining), "%03lld",
		 (long long)(sandbox_deadline_aim(sb) % 1000));
	/* an onTimeout-stop sandbox's container expires at its deadline */
	snprintf(expires, sizeof(expires), "%lld",
		 (long long)(((sb->timeout_stop ? sb->deadline_at : sb->expires_at) + 999) / 1000));
	snprintf(tsec, sizeof(tsec), "%lld", (long long)((sb->timeout_ms + 999) / 1000));
	snprintf(kuid, sizeof(kuid), "%d", cfg->keeper_uid);
	sandbox_keeper_user(cfg, keeper, sizeof(keeper));
	json_object_object_add(o, "Image", json_object_new_string(sb->image));
	json_object_object_add(o, "Entrypoint", json_object_new_array());
	cmd = json_object_new_array();
	json_object_array_add(cmd, json_object_new_string("sh"));
	json_object_array_add(cmd, json_object_new_string("-c"));
	json_object_array_add(cmd, json_object_new_string(sh_main));
	json_object_array_add(cmd, json_object_new_string("sandpit"));
	json_object_array_add(cmd, json_object_new_string(deadline));
	json_object_array_add(cmd, json_object_new_string(remaining));
	json_object_array_add(cmd, json_object_new_string(expires));
	json_object_array_add(cmd, json_object_new_string(tsec));
	json_object_array_add(cmd, json_object_new_string(kuid));
	json_object_object_add(o, "Cmd", cmd);
	/* the keeper runs PID 1, the main sleep and the watcher; the sandbox
	 * user is named on every exec */
	json_object_object_add(o, "User", json_object_new_string(keeper));
	json_object_object_add(o, "WorkingDir", json_object_new_string(sb->workdir));
	json_object_object_add(o, "Env", json_object_get(env));
	json_object_object_add(o, "Hostname", json_object_new_string("sandbox"));
	json_object_object_add(o, "Labels", spec_labels(ctx, sb));
	config_network_name(cfg, sb->network_mode, net, sizeof(net));
	json_object_object_add(o, "HostConfig", spec_host_config(cfg, sb, net));
	nc = json_object_new_object();
	ep = json_object_new_object();
	json_object_object_add(ep, net, json_object_new_object());
	json_object_object_add(nc, "EndpointsConfig", ep);
	json_object_object_add(o, "NetworkingConfig", nc);
	return o;
}
