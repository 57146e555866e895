/*
 * Published ports and the targets of their preview URLs (the /v1 ports,
 * README "Ports and preview URLs"). Nothing is published on the host:
 * Docker cannot add PortBindings to a running container, so a port is a
 * line in the sandbox record ("ports": "<number>,<uid>,<ip>,<created>"
 * entries joined by ';', written only here, by compare-and-set) plus an
 * index entry uid -> "<org> <sandbox>"; nginx asks for each request where
 * it goes (sandbox_port_resolve), and the answer is only ever the
 * sandbox's own container address (Docker's answer for its container id,
 * asked on every request) and the published number. A port is ingress only: nothing here
 * changes what the container may reach. Only the local server's sandboxes
 * can publish (nginx reaches the local bridges; a remote server's
 * connection is not forwarded yet).
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"

extern char **environ;

#define PORT_CAS_TRIES 8

static int uid_ok(const char *s, size_t n)
{
	if (n != SB_PORT_UID_LEN)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

/* One entry "<number>,<uid>,<ip>,<created>" of len bytes; 0 or -1. */
static int entry_parse(const char *s, size_t len, struct sandbox_port *p)
{
	char tmp[160], *f[4], *c;
	long long v;
	int k = 0;

	if (len == 0 || len >= sizeof(tmp))
		return -1;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	f[k++] = tmp;
	for (c = tmp; *c; c++)
		if (*c == ',') {
			if (k == 4)
				return -1;
			*c = '\0';
			f[k++] = c + 1;
		}
	if (k != 4 || parse_ll(f[0], 1, 65535, &v) < 0)
		return -1;
	p->number = (int)v;
	if (!uid_ok(f[1], strlen(f[1])) || str_copy(p->uid, sizeof(p->uid), f[1]) < 0)
		return -1;
	if (!f[2][0] || strspn(f[2], "0123456789.:abcdef") != strlen(f[2]) ||
	    str_copy(p->ip, sizeof(p->ip), f[2]) < 0)
		return -1;
	if (parse_ll(f[3], 0, INT64_MAX, &v) < 0)
		return -1;
	p->created_at = v;
	return 0;
}

int sandbox_ports_parse(const struct sandbox *sb, struct sandbox_port *out, int max)
{
	const char *s = sb->ports;
	int n = 0;

	while (*s && n < max) {
		size_t len = strcspn(s, ";");
		struct sandbox_port p;
		if (entry_parse(s, len, &p) == 0) {
			int at = n;
			/* number order (the list's), by insertion */
			while (at > 0 && out[at - 1].number > p.number) {
				out[at] = out[at - 1];
				at--;
			}
			out[at] = p;
			n++;
		}
		s += len;
		if (*s == ';')
			s++;
	}
	return n;
}

/* The text of ports[0..n) into out (SB_PORTS_TEXT_MAX + 1); -1 if over. */
static int ports_text(const struct sandbox_port *p, int n, char *out, size_t cap)
{
	size_t used = 0;

	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		int w = snprintf(out + used, cap - used, "%s%d,%s,%s,%lld", i ? ";" : "",
				 p[i].number, p[i].uid, p[i].ip, (long long)p[i].created_at);
		if (w < 0 || (size_t)w >= cap - used)
			return -1;
		used += (size_t)w;
	}
	return 0;
}

/* The container's address on its one sandbox network, from an inspect. */
static int container_ip(json_object *ins, char *out, size_t cap)
{
	json_object *ns, *nets;

	out[0] = '\0';
	if (!json_object_object_get_ex(ins, "NetworkSettings", &ns) ||
	    !json_object_object_get_ex(ns, "Networks", &nets) ||
	    !json_object_is_type(nets, json_type_object))
		return -1;
	json_object_object_foreach(nets, name, net)
	{
		json_object *ip;
		(void)name;
		if (json_object_object_get_ex(net, "IPAddress", &ip) &&
		    json_object_is_type(ip, json_type_string) && json_object_get_string_len(ip) > 0)
			return str_copy(out, cap, json_object_get_string(ip));
	}
	return -1;
}

/* State.Running / State.Paused of an inspect. */
static void container_state(json_object *ins, int *running, int *paused)
{
	json_object *st, *v;

	*running = *paused = 0;
	if (!json_object_object_get_ex(ins, "State", &st))
		return;
	if (json_object_object_get_ex(st, "Running", &v))
		*running = json_object_get_boolean(v);
	if (json_object_object_get_ex(st, "Paused", &v))
		*paused = json_object_get_boolean(v);
}

/* Why sb cannot publish a port (-1 with e set), or 0. */
static int port_refusal(const struct sandbox *sb, struct sp_err *e)
{
	if (sb->status == SB_KILLED || sb->status == SB_ERROR)
		return sp_err_set(e, SP_PRECONDITION,
				  "sandbox_failed: the sandbox has failed; nothing of it "
				  "can be published");
	if (sb->status == SB_CREATING)
		return sp_err_set(e, SP_PRECONDITION,
				  "sandbox_creating: the sandbox is still creating; publish "
				  "its port once it is running");
	if (sb->server_id[0])
		return sp_err_set(
			e, SP_PRECONDITION,
			"remote_server: the sandbox runs on server %s; preview URLs reach "
			"only the local server's sandboxes in this version",
			sb->server_id);
	if (strcmp(sb->runtime, "gvisor") == 0 && strcmp(sb->network_mode, "isolated") == 0)
		return sp_err_set(e, SP_PRECONDITION,
				  "no_network: an isolated gVisor sandbox has no network at "
				  "all (runsc --network=none), so no port of it can be "
				  "reached; create it with networkMode internet or under runc");
	return 0;
}

int sandbox_port_create(struct sandbox_ctx *ctx, const char *org, const char *id, int number,
			struct sandbox_port *out, struct sp_err *e)
{
	struct sandbox sb;
	struct sandbox_port ports[SB_PORTS_MAX + 1];
	char text[SB_PORTS_TEXT_MAX + 1], ip[48] = "", idx[200];
	json_object *ins = NULL;
	int n, rc;

	if (number < 1 || number > 65535)
		return sp_err_field(e, SP_BAD_REQUEST, "port.number", "port.number: 1 to 65535");
	/* the fast path's helper (fastpath.c): never behind a preview URL */
	if (number == SANDBOX_FAST_PORT)
		return sp_err_field(e, SP_BAD_REQUEST, "port.number",
				    "port.number: %d is the sandbox helper's (reserved)",
				    SANDBOX_FAST_PORT);
	for (int attempt = 0; attempt < PORT_CAS_TRIES; attempt++) {
		const char *expect[2], *kv[2];
		if (sandbox_get(ctx, org, id, &sb, e) < 0)
			return -1;
		if (port_refusal(&sb, e) < 0)
			return -1;
		n = sandbox_ports_parse(&sb, ports, SB_PORTS_MAX);
		for (int i = 0; i < n; i++)
			if (ports[i].number == number)
				return sp_err_set(e, SP_CONFLICT,
						  "The sandbox already publishes port %d", number);
		if (n >= SB_PORTS_MAX)
			return sp_err_set(e, SP_PRECONDITION,
					  "too_many_ports: a sandbox publishes at most %d ports",
					  SB_PORTS_MAX);
		if (!ip[0] || attempt == 0) {
			if (!ctx->dk)
				return sp_err_set(e, SP_UNAVAILABLE, "%s", ctx->server_err.msg);
			if (docker_container_inspect(ctx->dk, sb.container_id, &ins, e) < 0)
				return -1;
			rc = container_ip(ins, ip, sizeof(ip));
			json_object_put(ins);
			ins = NULL;
			if (rc < 0 && sb.status != SB_RUNNING)
				return sp_err_set(
					e, SP_PRECONDITION,
					"sandbox_stopped: the sandbox's container is stopped "
					"(stop_mode discard) and has no address; start it, then "
					"publish the port");
			if (rc < 0)
				return sp_err_set(
					e, SP_PRECONDITION,
					"no_network: the sandbox's container has no network "
					"address");
		}
		memset(&ports[n], 0, sizeof(ports[n]));
		ports[n].number = number;
		crypto_random_id(ports[n].uid, SB_PORT_UID_LEN);
		str_copy(ports[n].ip, sizeof(ports[n].ip), ip);
		ports[n].created_at = now_ms();
		if (ports_text(ports, n + 1, text, sizeof(text)) < 0)
			return sp_err_set(e, SP_INTERNAL, "ports over %d bytes", SB_PORTS_TEXT_MAX);
		/* the index first: a port the record names is always found; an
		 * index entry without its port finds nothing (resolve checks the
		 * record) */
		snprintf(idx, sizeof(idx), "%s %s", org, sb.id);
		if (store_preview_set(ctx->st, ports[n].uid, idx, sandbox_record_ttl(ctx->cfg, &sb),
				      e) < 0)
			return -1;
		expect[0] = "ports";
		expect[1] = sb.ports;
		kv[0] = "ports";
		kv[1] = text;
		rc = store_sandbox_update_if(ctx->st, org, id, expect, 2, kv, 2, e);
		if (rc < 0)
			return -1;
		if (rc == 0) {
			*out = ports[n];
			return 0;
		}
		/* another change came first: read again */
		store_preview_del(ctx->st, ports[n].uid, e);
		sp_err_clear(e);
	}
	return sp_err_set(e, SP_UNAVAILABLE, "the sandbox's ports kept changing; retry");
}

/* Cuts the host's open connections to ip:port (nginx's, to the sandbox):
 * a deleted port stops carrying an open WebSocket too. ss -K needs
 * CAP_NET_ADMIN and a kernel with INET_DIAG_DESTROY; without them the
 * connections last until they close (logged). */
static void cut_connections(const char *ip, int port)
{
	static const char *const paths[] = { "/usr/bin/ss", "/bin/ss", "/usr/sbin/ss", "/sbin/ss" };
	char dport[16];
	const char *ss = NULL;
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status = 0;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && !ss; i++)
		if (access(paths[i], X_OK) == 0)
			ss = paths[i];
	if (!ss) {
		log_warn("ports: no ss: open connections to %s:%d stay", ip, port);
		return;
	}
	snprintf(dport, sizeof(dport), ":%d", port);
	{
		const char *argv[] = { ss, "-K", "-t", "-n", "dst", ip, "dport", "=", dport, NULL };
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
		if (posix_spawn(&pid, ss, &fa, NULL, (char *const *)argv, environ) != 0) {
			posix_spawn_file_actions_destroy(&fa);
			log_warn("ports: ss: %s", strerror(errno));
			return;
		}
		posix_spawn_file_actions_destroy(&fa);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		log_warn("ports: ss -K for %s:%d failed (status %d): open connections stay", ip,
			 port, status);
}

int sandbox_port_delete(struct sandbox_ctx *ctx, const char *org, const char *id, int number,
			struct sp_err *e)
{
	struct sandbox sb;
	struct sandbox_port ports[SB_PORTS_MAX], gone = { 0 };
	char text[SB_PORTS_TEXT_MAX + 1];

	for (int attempt = 0; attempt < PORT_CAS_TRIES; attempt++) {
		const char *expect[2], *kv[2];
		int n, k = 0, found = 0, rc;
		if (sandbox_load(ctx, org, id, &sb, e) < 0)
			return -1;
		n = sandbox_ports_parse(&sb, ports, SB_PORTS_MAX);
		for (int i = 0; i < n; i++) {
			if (ports[i].number == number) {
				gone = ports[i];
				found = 1;
				continue;
			}
			ports[k++] = ports[i];
		}
		if (!found)
			return 0;
		if (ports_text(ports, k, text, sizeof(text)) < 0)
			return sp_err_set(e, SP_INTERNAL, "ports over %d bytes", SB_PORTS_TEXT_MAX);
		expect[0] = "ports";
		expect[1] = sb.ports;
		kv[0] = "ports";
		kv[1] = text;
		rc = store_sandbox_update_if(ctx->st, org, id, expect, 2, kv, 2, e);
		if (rc < 0)
			return -1;
		if (rc == 1)
			continue;
		/* from here no new request is let through (resolve reads the
		 * record); the index entry is only a lookup aid */
		if (store_preview_del(ctx->st, gone.uid, e) < 0) {
			log_warn("ports: index entry of %s left (expires with the record): %s",
				 gone.uid, e->msg);
			sp_err_clear(e);
		}
		cut_connections(gone.ip, gone.number);
		/* and at its address now, when Docker gave it another since */
		if (ctx->dk) {
			json_object *ins = NULL;
			char ip[48];
			struct sp_err ie;
			if (docker_container_inspect(ctx->dk, sb.container_id, &ins, &ie) == 0 &&
			    container_ip(ins, ip, sizeof(ip)) == 0 && strcmp(ip, gone.ip) != 0)
				cut_connections(ip, gone.number);
			json_object_put(ins);
		}
		return 1;
	}
	return sp_err_set(e, SP_UNAVAILABLE, "the sandbox's ports kept changing; retry");
}

/* What Docker said of a running container lately: its address, kept
 * RUNNING_CACHE_MS per worker, so a burst of preview requests costs one
 * inspect a second, not one each. Only "running, not paused" is kept: a
 * stop, a delete or a container gone is seen by the record check first
 * (every request) or by the next inspect. Docker hands a freed address
 * out again only after going round its subnet, so a second is safe.
 * Called only from the request loop (handlers/v1_ports.c): no lock. */
#define RUNNING_CACHE_MS 1000
#define RUNNING_CACHE_SLOTS 32
static struct {
	char container[65];
	char ip[48];
	int64_t until; /* mono ms */
} running_cache[RUNNING_CACHE_SLOTS];

static unsigned cache_slot(const char *container)
{
	unsigned h = 5381;

	for (const char *c = container; *c; c++)
		h = h * 33 + (unsigned char)*c;
	return h % RUNNING_CACHE_SLOTS;
}

int sandbox_port_resolve(struct sandbox_ctx *ctx, const char *label, char *target, size_t cap,
			 char *org, size_t org_cap, struct sp_err *e)
{
	const char *dash = strchr(label, '-');
	char num[8], uid[SB_PORT_UID_LEN + 1], idx[200], ip[48];
	struct sandbox sb;
	struct sandbox_port ports[SB_PORTS_MAX], *p = NULL;
	json_object *ins = NULL;
	long long number;
	int n, running, paused, rc;
	unsigned slot;
	const char *sp;
	int64_t now = now_ms();

	if (!dash || dash == label || (size_t)(dash - label) >= sizeof(num) ||
	    !uid_ok(dash + 1, strlen(dash + 1)))
		return sp_err_set(e, SP_NOT_FOUND, "No published port here");
	memcpy(num, label, (size_t)(dash - label));
	num[dash - label] = '\0';
	if (strspn(num, "0123456789") != strlen(num) || parse_ll(num, 1, 65535, &number) < 0)
		return sp_err_set(e, SP_NOT_FOUND, "No published port here");
	str_copy(uid, sizeof(uid), dash + 1);
	rc = store_preview_get(ctx->st, uid, idx, sizeof(idx), e);
	if (rc < 0)
		return -1;
	sp = rc ? strchr(idx, ' ') : NULL;
	if (!sp || (size_t)(sp - idx) >= org_cap)
		return sp_err_set(e, SP_NOT_FOUND, "No published port here");
	memcpy(org, idx, (size_t)(sp - idx));
	org[sp - idx] = '\0';
	if (sandbox_load(ctx, org, sp + 1, &sb, e) < 0) {
		if (e->code == SP_NOT_FOUND)
			sp_err_set(e, SP_NOT_FOUND, "No published port here");
		return -1;
	}
	n = sandbox_ports_parse(&sb, ports, SB_PORTS_MAX);
	for (int i = 0; i < n && !p; i++)
		if (ports[i].number == (int)number && strcmp(ports[i].uid, uid) == 0)
			p = &ports[i];
	if (!p)
		return sp_err_set(e, SP_NOT_FOUND, "No published port here");
	if (sb.status == SB_KILLED || sb.status == SB_ERROR ||
	    (sb.deadline_at > 0 && now >= sb.deadline_at))
		return sp_err_set(e, SP_NOT_FOUND,
				  "The sandbox of this preview URL has ended; its ports are gone");
	slot = cache_slot(sb.container_id);
	if (sb.status != SB_RUNNING) {
		/* a start after this one asks Docker again (a discard-mode
		 * start may give the container another address) */
		running_cache[slot].until = 0;
		return sp_err_set(e, SP_UNAVAILABLE,
				  "The sandbox is %s: its port %d answers again once it is "
				  "started",
				  sandbox_status_name(sb.status), p->number);
	}
	if (!ctx->dk)
		return sp_err_set(e, SP_UNAVAILABLE, "%s", ctx->server_err.msg);
	if (running_cache[slot].until > mono_ms() &&
	    strcmp(running_cache[slot].container, sb.container_id) == 0) {
		rc = snprintf(target, cap, "%s:%d", running_cache[slot].ip, p->number);
		return rc < 0 || (size_t)rc >= cap
			       ? sp_err_set(e, SP_INTERNAL, "target over its buffer")
			       : 0;
	}
	/* Docker is the truth: the sandbox's own container, running, at the
	 * address Docker reports for it (never a recorded one, which could be
	 * another sandbox's by now) */
	if (docker_container_inspect(ctx->dk, sb.container_id, &ins, e) < 0) {
		if (e->code == SP_NOT_FOUND)
			sp_err_set(e, SP_NOT_FOUND,
				   "The sandbox of this preview URL has ended; its ports are gone");
		return -1;
	}
	container_state(ins, &running, &paused);
	rc = container_ip(ins, ip, sizeof(ip));
	json_object_put(ins);
	if (paused)
		return sp_err_set(e, SP_UNAVAILABLE,
				  "The sandbox is stopped: its port %d answers again once it is "
				  "started",
				  p->number);
	if (!running)
		return sp_err_set(e, SP_NOT_FOUND,
				  "The sandbox of this preview URL has ended; its ports are gone");
	/* its address now (a discard-mode start may give it another one):
	 * Docker's answer for this container id, so never another's */
	if (rc < 0)
		return sp_err_set(e, SP_PRECONDITION,
				  "The sandbox's container has no network address");
	if (str_copy(running_cache[slot].container, sizeof(running_cache[slot].container),
		     sb.container_id) == 0 &&
	    str_copy(running_cache[slot].ip, sizeof(running_cache[slot].ip), ip) == 0)
		running_cache[slot].until = mono_ms() + RUNNING_CACHE_MS;
	rc = snprintf(target, cap, "%s:%d", ip, p->number);
	if (rc < 0 || (size_t)rc >= cap)
		return sp_err_set(e, SP_INTERNAL, "target over its buffer");
	return 0;
}
