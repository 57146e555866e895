/*
 * The fast path to the helper inside a sandbox (issue 16): where sandpit
 * can reach the sandbox's network namespace (the local server, runc
 * sandboxes: see sandbox_fast_possible), a command runs through the
 * helper's serving mode
 * (sandbox/helper/serve.c) over TCP to the container's bridge address
 * instead of through docker exec: one connection, no Docker call.
 * The runner (run/runner.c) tries it first and uses docker exec whenever it says
 * "not served" (nothing ran then), so answers are the same either way.
 *
 * The serving helper is started by one docker exec as the sandbox's user
 * (never anyone else: it has exactly the rights of the sandbox's code),
 * lazily when a connection finds none, or when a warm pool's container is
 * made (pool.c), with the sandbox's secret on its stdin. The secret is
 * HMAC-SHA-256(data_key, "sandpit fast path\n" + container id): any
 * worker of any sandpitd with the data key computes it; it is never
 * stored, logged or answered, and it differs for every container.
 *
 * The protocol (all integers big-endian; helper/proto.h names each part):
 *   helper: "SPH1", nonce_h (16), n (1), its uid:gid (n bytes)
 *   sandpit: nonce_c (16), HMAC(secret, "sandpit-fast-c" nonce_h nonce_c)
 *   helper: HMAC(secret, "sandpit-fast-s" nonce_h nonce_c uid:gid)
 *   sandpit: u32 length, then argv, env (as ExecCreate's Env: merged over
 *            the helper's own environment, the container's), cwd, each a
 *            u32 count of (u32 length, bytes); u8 has_stdin, u32 stdin
 *            length; then the stdin bytes
 *   helper: frames (type u8, u32 length, data): 'S' started (the
 *           command's pid u32 and start time u64, field 22 of its stat)
 *           or 'F' not started (nothing ran), then '1' stdout, '2'
 *           stderr, and 'X' the exit status (u32).
 * sandpit checks the helper's proof (so an address that came to belong to
 * another container is never talked to) and its uid:gid against the
 * sandbox's owner. Whatever a helper answers is the sandbox's own: it is
 * read like any input (frame sizes bounded, one fixed buffer, a frame of a
 * type out of order or unknown ends the command as lost, the whole under
 * the caller's deadline).
 *
 * The secret is written to the serving helper's stdin only after it said
 * it is not dumpable (HP_READY), and the binary it runs is execute-only
 * (helper.c), so no process of the sandbox's reads it (serve.c explains;
 * review D5): a peer that passes the handshake is sandpit's own helper,
 * and an exec's output through it is the command's. Where that cannot be
 * had (gVisor, which needs a readable binary), there is no fast path.
 *
 * Why no other sandbox reaches it: sandbox networks have inter-container
 * traffic off (docker/networks.c), so only the host reaches a container's
 * bridge address; and without the secret a peer gets nothing but the
 * hello. Why it gives the sandbox's code nothing new: it runs as that
 * code's user, in its namespaces and limits, and only what sandpit sends.
 *
 * Per worker, a small table remembers each container's address and when
 * the fast path last failed there (then docker exec only, for a minute);
 * the address is shared through Redis (store_fast_addr_*), so only the
 * first worker asks Docker for it (a warm container's is learnt as it is
 * made), and a stale one only fails the handshake, which looks again.
 * May call: spec.c (the keeper is never used here), helper.c (its path).
 */
#include "internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>

#include "../common/buf.h"
#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"
#include "helper/proto.h"
#include "run/handshake.h"
#include "run/run.h"

#define FAST_SLOTS 64
#define FAST_RETRY_MS 60000
#define FAST_CONNECT_MS 1000
#define FAST_FRAME_MAX (1u << 20)
#define FAST_KEEP_MS 10000
#define FAST_READY_MS 3000

struct fast_slot {
	char cid[65];
	char ip[INET_ADDRSTRLEN];
	int64_t bad_until; /* mono ms: docker exec only until then */
	int64_t used;	   /* mono ms, for eviction */
};

static struct fast_slot slots[FAST_SLOTS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

/* The slot of cid (a new one, the least recently used, when none). */
static struct fast_slot *slot_of(const char *cid)
{
	struct fast_slot *old = &slots[0];

	for (int i = 0; i < FAST_SLOTS; i++) {
		if (strcmp(slots[i].cid, cid) == 0)
			return &slots[i];
		if (slots[i].used < old->used)
			old = &slots[i];
	}
	memset(old, 0, sizeof(*old));
	str_copy(old->cid, sizeof(old->cid), cid);
	return old;
}

static void slot_get(const char *cid, char *ip, size_t cap, int64_t *bad_until)
{
	struct fast_slot *s;

	pthread_mutex_lock(&slots_lock);
	s = slot_of(cid);
	s->used = mono_ms();
	str_copy(ip, cap, s->ip);
	*bad_until = s->bad_until;
	pthread_mutex_unlock(&slots_lock);
}

static void slot_set(const char *cid, const char *ip, int64_t bad_until)
{
	struct fast_slot *s;

	pthread_mutex_lock(&slots_lock);
	s = slot_of(cid);
	if (ip)
		str_copy(s->ip, sizeof(s->ip), ip);
	s->bad_until = bad_until;
	pthread_mutex_unlock(&slots_lock);
}

int sandbox_fast_possible(const struct sandbox_ctx *ctx, const struct sandbox *sb)
{
	/* the local server only, and runc only: an isolated gVisor sandbox
	 * has no network the host could reach (runsc --network=none); an
	 * internet one served, but lost a connection mid-command now and then
	 * in tests (not understood yet), so gVisor keeps docker exec */
	return ctx->cfg->fast_path && ctx->cur == &ctx->conns[0] && ctx->dk &&
	       sb->container_id[0] && sb->status == SB_RUNNING &&
	       strcmp(sb->runtime, "gvisor") != 0;
}

static void fast_secret(const struct sandbox_ctx *ctx, const char *cid,
			unsigned char out[crypto_auth_hmacsha256_BYTES])
{
	static const char dom[] = "sandpit fast path\n";
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, ctx->cfg->data_key, sizeof(ctx->cfg->data_key));
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)dom, sizeof(dom) - 1);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)cid, strlen(cid));
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

/* The container's address on its sandbox network, from Docker. */
static int docker_ip(struct sandbox_ctx *ctx, const struct sandbox *sb, char *ip, size_t cap)
{
	json_object *info = NULL, *ns, *nets, *n, *a;
	char net[128];
	struct sp_err e;
	struct in_addr probe;
	int rc = -1;

	config_network_name(ctx->cfg, sb->network_mode, net, sizeof(net));
	if (docker_container_inspect(ctx->dk, sb->container_id, &info, &e) < 0)
		return -1;
	if (json_object_object_get_ex(info, "NetworkSettings", &ns) &&
	    json_object_object_get_ex(ns, "Networks", &nets) &&
	    json_object_object_get_ex(nets, net, &n) &&
	    json_object_object_get_ex(n, "IPAddress", &a) &&
	    json_object_is_type(a, json_type_string) &&
	    inet_pton(AF_INET, json_object_get_string(a), &probe) == 1) {
		str_copy(ip, cap, json_object_get_string(a));
		rc = 0;
	}
	json_object_put(info);
	return rc;
}

/* The address the fast path tries first: this worker's, then the one
 * another worker learnt (Redis), then Docker's (which it then shares). */
static int fast_lookup_ip(struct sandbox_ctx *ctx, const struct sandbox *sb, int ask_docker,
			  char *ip, size_t cap)
{
	struct in_addr probe;
	struct sp_err e;

	if (!ask_docker && store_fast_addr_get(ctx->st, sb->container_id, ip, cap, &e) == 1 &&
	    inet_pton(AF_INET, ip, &probe) == 1)
		return 0;
	if (docker_ip(ctx, sb, ip, cap) < 0)
		return -1;
	store_fast_addr_set(ctx->st, sb->container_id, ip, SB_MAX_LIFETIME_MS / 1000 + 3600, &e);
	return 0;
}

void sandbox_fast_prime(struct sandbox_ctx *ctx, const struct sandbox *sb)
{
	char ip[INET_ADDRSTRLEN];

	if (fast_lookup_ip(ctx, sb, 1, ip, sizeof(ip)) == 0)
		slot_set(sb->container_id, ip, 0);
}

/* --- the socket ---------------------------------------------------------------- */

/* Waits for events on fd until the mono deadline; 1 ready, 0 not. */
static int wait_fd(int fd, short events, int64_t until)
{
	for (;;) {
		struct pollfd pf = { fd, events, 0 };
		int64_t left = until - mono_ms();
		int r;
		if (left <= 0)
			return 0;
		r = poll(&pf, 1, (int)left);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return 0;
	}
}

static int recv_all(int fd, void *p, size_t n, int64_t until)
{
	char *c = p;

	while (n) {
		ssize_t r = recv(fd, c, n, MSG_DONTWAIT);
		if (r > 0) {
			c += r;
			n -= (size_t)r;
		} else if (r == 0 || (errno != EAGAIN && errno != EINTR) ||
			   !wait_fd(fd, POLLIN, until)) {
			return -1;
		}
	}
	return 0;
}

static int send_all(int fd, const void *p, size_t n, int64_t until)
{
	const char *c = p;

	while (n) {
		ssize_t w = send(fd, c, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0) {
			c += w;
			n -= (size_t)w;
		} else if ((w < 0 && errno != EAGAIN && errno != EINTR) ||
			   !wait_fd(fd, POLLOUT, until)) {
			return -1;
		}
	}
	return 0;
}

enum { FAST_REFUSED = -2, FAST_FAILED = -1 };

/* Connects to the helper at ip and runs the handshake: the connected
 * socket, FAST_REFUSED when nothing listens there (no helper yet), or
 * FAST_FAILED (not answering, a wrong proof, another user). */
static int fast_connect(const struct sandbox_ctx *ctx, const struct sandbox *sb, const char *ip)
{
	unsigned char secret[HP_SECRET_LEN], hello[HP_HELLO_LEN + HP_NONCE_LEN + 1 + HP_OWNER_MAX];
	unsigned char mine[HP_NONCE_LEN + HP_MAC_LEN], mac[HP_MAC_LEN], proof[HP_MAC_LEN];
	const unsigned char *nonce_h = hello + HP_HELLO_LEN;
	char *owner = (char *)hello + HP_HELLO_LEN + HP_NONCE_LEN + 1;
	struct sockaddr_in a;
	int64_t until = mono_ms() + FAST_CONNECT_MS;
	int fd, on = 1, err = 0;
	socklen_t elen = sizeof(err);
	size_t olen;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(SANDBOX_FAST_PORT);
	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1)
		return FAST_FAILED;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return FAST_FAILED;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (errno != EINPROGRESS || !wait_fd(fd, POLLOUT, until) ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err) {
			close(fd);
			return err == ECONNREFUSED ? FAST_REFUSED : FAST_FAILED;
		}
	}
	if (recv_all(fd, hello, HP_HELLO_LEN + HP_NONCE_LEN + 1, until) < 0 ||
	    memcmp(hello, HP_HELLO, HP_HELLO_LEN) != 0 ||
	    hello[HP_HELLO_LEN + HP_NONCE_LEN] > HP_OWNER_MAX ||
	    recv_all(fd, owner, hello[HP_HELLO_LEN + HP_NONCE_LEN], until) < 0)
		goto fail;
	olen = hello[HP_HELLO_LEN + HP_NONCE_LEN];
	/* the helper runs as the sandbox's user, or it is not the one */
	if (sb->owner[0] && (strlen(sb->owner) != olen || memcmp(sb->owner, owner, olen) != 0))
		goto fail;
	fast_secret(ctx, sb->container_id, secret);
	randombytes_buf(mine, HP_NONCE_LEN);
	run_fast_proof(secret, HP_LABEL_C, nonce_h, mine, NULL, 0, mine + HP_NONCE_LEN);
	if (send_all(fd, mine, sizeof(mine), until) < 0 ||
	    recv_all(fd, mac, sizeof(mac), until) < 0)
		goto fail;
	run_fast_proof(secret, HP_LABEL_S, nonce_h, mine, owner, olen, proof);
	sodium_memzero(secret, sizeof(secret));
	if (sodium_memcmp(mac, proof, sizeof(proof)) != 0)
		goto fail;
	return fd;
fail:
	sodium_memzero(secret, sizeof(secret));
	close(fd);
	return FAST_FAILED;
}

/* The start of a serving helper: its secret goes to its stdin only once it
 * said, with HP_READY on its stdout, that it is not dumpable (serve.c
 * explains why); until then peek offers nothing. A helper that does not
 * say it within FAST_READY_MS (an older helper, one the sandbox's code
 * stopped) never gets the secret. */
struct fast_boot {
	char line[2 * crypto_auth_hmacsha256_BYTES + 2];
	size_t sent;
	int ready, other;
	int64_t give_up; /* mono ms */
};

static int boot_out(void *arg, int stream, const char *data, size_t len)
{
	struct fast_boot *b = arg;

	if (stream != 1 || !len)
		return 0;
	/* exactly one byte, HP_READY, before the secret; anything else and
	 * the secret is never sent */
	if (!b->ready && !b->other && len == 1 && data[0] == HP_READY)
		b->ready = 1;
	else
		b->other = 1;
	return b->other ? -1 : 0;
}

static size_t boot_peek(void *arg, const char **p)
{
	struct fast_boot *b = arg;

	if (!b->ready || b->other)
		return 0;
	*p = b->line + b->sent;
	return sizeof(b->line) - 1 - b->sent;
}

static void boot_consume(void *arg, size_t n)
{
	struct fast_boot *b = arg;

	b->sent += n;
}

static int boot_stop(void *arg)
{
	const struct fast_boot *b = arg;

	return !b->ready && mono_ms() >= b->give_up;
}

int sandbox_fast_start(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	unsigned char secret[crypto_auth_hmacsha256_BYTES];
	struct fast_boot boot;
	struct docker_input in = { boot_peek, boot_consume, -1, &boot };
	char port[16];
	const char *argv[] = { sandbox_helper_path(sb), HC_SERVE, port, NULL };
	/* the sandbox's user, never the keeper (the container's own) */
	struct sb_cmd cmd = { .argv = argv, .who = SB_AS_USER };
	struct sb_run_io io = { .timeout_ms = 10000,
				.on_output = boot_out,
				.should_stop = boot_stop,
				.arg = &boot,
				.live = &in,
				.inspect = 1,
				.unmapped = 1 };
	struct sb_run_res res;
	int code = -1;
	struct sp_err e;

	snprintf(port, sizeof(port), "%d", SANDBOX_FAST_PORT);
	memset(&boot, 0, sizeof(boot));
	fast_secret(ctx, sb->container_id, secret);
	sodium_bin2hex(boot.line, sizeof(boot.line) - 1, secret, sizeof(secret));
	sodium_memzero(secret, sizeof(secret));
	boot.line[sizeof(boot.line) - 2] = '\n';
	boot.line[sizeof(boot.line) - 1] = '\0';
	boot.give_up = mono_ms() + FAST_READY_MS;
	if (run_start(ctx, sb, &cmd, &io, &res, &e) == 0 && !res.timed_out && boot.ready &&
	    !boot.other && !res.running)
		code = res.code;
	if (code < 0)
		log_debug("sandbox %s: fast path: the serving helper did not start (%s)", sb->id,
			  boot.other	? "it wrote something else than it is ready"
			  : !boot.ready ? "it never said it is ready"
					: "its exec failed");
	sodium_memzero(boot.line, sizeof(boot.line));
	/* 9: the port is taken (a helper already serves, or the sandbox's own
	 * program holds it: the handshake tells) */
	return code == H_OK || code == HS_BUSY ? 0 : -1;
}

/* A connected, authenticated socket to sb's helper, starting it when none
 * serves yet; -1 when the fast path is not to be used now. */
static int fast_open(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	char ip[INET_ADDRSTRLEN];
	int64_t bad_until;
	int fd;

	slot_get(sb->container_id, ip, sizeof(ip), &bad_until);
	if (bad_until > mono_ms())
		return -1;
	if (!ip[0]) {
		if (fast_lookup_ip(ctx, sb, 0, ip, sizeof(ip)) < 0) {
			slot_set(sb->container_id, NULL, mono_ms() + FAST_RETRY_MS);
			return -1;
		}
		slot_set(sb->container_id, ip, 0);
	}
	fd = fast_connect(ctx, sb, ip);
	if (fd == FAST_FAILED) {
		/* the address may have changed (a stop and start): look once more */
		char now_ip[INET_ADDRSTRLEN];
		if (fast_lookup_ip(ctx, sb, 1, now_ip, sizeof(now_ip)) == 0 &&
		    strcmp(now_ip, ip) != 0) {
			str_copy(ip, sizeof(ip), now_ip);
			slot_set(sb->container_id, ip, 0);
			fd = fast_connect(ctx, sb, ip);
		}
	}
	if (fd == FAST_REFUSED && sandbox_fast_start(ctx, sb) == 0)
		fd = fast_connect(ctx, sb, ip);
	if (fd < 0) {
		log_debug("sandbox %s: fast path: no helper answers at %s (%s); docker exec for "
			  "%d s",
			  sb->id, ip, fd == FAST_REFUSED ? "refused" : "no handshake",
			  FAST_RETRY_MS / 1000);
		slot_set(sb->container_id, NULL, mono_ms() + FAST_RETRY_MS);
		return -1;
	}
	return fd;
}

/* --- a command --------------------------------------------------------------- */

static int put_u32(struct buf *b, uint32_t v)
{
	unsigned char c[4] = { (unsigned char)(v >> 24), (unsigned char)(v >> 16),
			       (unsigned char)(v >> 8), (unsigned char)v };
	return buf_append(b, c, 4);
}

static int put_str(struct buf *b, const char *s, size_t n)
{
	return n > UINT32_MAX || put_u32(b, (uint32_t)n) < 0 || buf_append(b, s, n) < 0 ? -1 : 0;
}

/* A NULL-terminated argv; -1 over 65536 strings (the helper's bound:
 * docker exec answers that). */
static int put_argv(struct buf *b, const char *const *argv)
{
	size_t n = 0;

	while (argv && argv[n])
		n++;
	if (n > 65536 || put_u32(b, (uint32_t)n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (put_str(b, argv[i], strlen(argv[i])) < 0)
			return -1;
	return 0;
}

/* An array of strings of Env (missing: none); -1 for what the helper
 * would refuse (a NUL, over 65536 strings): docker exec answers that. */
static int put_strings(struct buf *b, json_object *arr)
{
	size_t n = arr && json_object_is_type(arr, json_type_array) ? json_object_array_length(arr)
								    : 0;

	if (n > HP_STRINGS_MAX || put_u32(b, (uint32_t)n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(arr, i);
		const char *t = json_object_get_string(s);
		size_t len = (size_t)json_object_get_string_len(s);
		if (!t || memchr(t, '\0', len) || put_str(b, t, len) < 0)
			return -1;
	}
	return 0;
}

/* What the watcher does for a process of docker exec's, for a fast-path
 * command (which it does not see): once the container's expiry is within
 * FAST_KEEP_MS, it is moved to now + the sandbox's timeout (at least 5 s)
 * + FAST_KEEP_MS, as the keeper. Short commands never cost a write; a
 * long one one per timeout. *next_try rate-limits failed writes. */
static void keep_alive(struct sandbox_ctx *ctx, struct sandbox *sb, int64_t *next_try)
{
	int64_t now = now_ms(), mono = mono_ms();
	struct sp_err e;

	if (sb->timeout_stop || sb->container_expires_at - now > FAST_KEEP_MS ||
	    sb->container_expires_at >= sb->deadline_at || mono < *next_try)
		return;
	if (sandbox_arm_expiry(ctx, sb,
			       now + (sb->timeout_ms > 5000 ? sb->timeout_ms : 5000) + FAST_KEEP_MS,
			       &e) < 0) {
		log_warn("sandbox %s: fast path: could not move its expiry: %s", sb->id, e.msg);
		*next_try = mono + 5000;
	}
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The request of cmd into req (helper/proto.h): a u32 length, then argv,
 * env, cwd, whether stdin comes and its length. -1 when it does not fit
 * HP_REQ_MAX. */
static int fast_request(struct buf *req, const struct sb_cmd *cmd, int has_in, size_t in_len)
{
	const char *wd = cmd->cwd ? cmd->cwd : "/";
	unsigned char *p;
	uint32_t n;

	if (put_u32(req, 0) < 0 || put_argv(req, cmd->argv) < 0 || put_strings(req, cmd->env) < 0 ||
	    put_u32(req, 1) < 0 || put_str(req, wd, strlen(wd)) < 0 ||
	    buf_append(req, has_in ? "\1" : "\0", 1) < 0 || put_u32(req, (uint32_t)in_len) < 0 ||
	    req->len - 4 > HP_REQ_MAX)
		return -1;
	n = (uint32_t)(req->len - 4);
	p = (unsigned char *)req->data;
	p[0] = (unsigned char)(n >> 24), p[1] = (unsigned char)(n >> 16);
	p[2] = (unsigned char)(n >> 8), p[3] = (unsigned char)n;
	return 0;
}

/* What comes after a frame: more frames, the end (res says how), or the
 * helper's "not started" (nothing ran: docker exec gives the answer). */
enum fast_next { NEXT_MORE, NEXT_END, NEXT_REFUSED };

/* One frame of type t, n bytes at data, in its order: 'S' or 'F' first
 * (*started once 'S' came), then output and the exit. A frame out of
 * order, of a wrong size or of no known type ends the command as lost. */
static enum fast_next fast_frame(const struct sandbox *sb, const struct sandbox_fast_io *io,
				 struct sandbox_fast_result *res, char t, const char *data,
				 uint32_t n, int *started)
{
	const unsigned char *u = (const unsigned char *)data;

	if (*started != (t != HP_STARTED && t != HP_NOT_STARTED)) {
		res->lost = 1;
		return NEXT_END;
	}
	switch (t) {
	case HP_NOT_STARTED:
		log_debug("sandbox %s: fast path: not started (%.*s)", sb->id,
			  (int)(n < 200 ? n : 200), data);
		return NEXT_REFUSED;
	case HP_STARTED:
		if (n != HP_STARTED_LEN)
			break;
		res->pid = (int)be32(u);
		res->start = (uint64_t)be32(u + 4) << 32 | be32(u + 8);
		*started = 1;
		return NEXT_MORE;
	case HP_EXIT:
		if (n != HP_EXIT_LEN)
			break;
		res->code = (int)be32(u);
		return NEXT_END;
	case HP_STDOUT:
	case HP_STDERR:
		if (n && io->on_data(io->arg, t == HP_STDERR ? 2 : 1, data, n) < 0) {
			res->stopped = 1;
			return NEXT_END;
		}
		return NEXT_MORE;
	default:
		break; /* no such frame: not the helper's protocol */
	}
	res->lost = 1;
	return NEXT_END;
}

int sandbox_fast_exec(struct sandbox_ctx *ctx, struct sandbox *sb, const struct sb_cmd *cmd,
		      const struct sandbox_fast_io *io, struct sandbox_fast_result *res)
{
	struct buf req;
	const char *in = io->in;
	size_t in_left = io->in ? io->in_len : 0;
	int64_t until = mono_ms() + io->timeout_ms;
	int64_t next_try = 0;
	int fd, started = 0;
	enum fast_next next = NEXT_MORE;
	unsigned char hdr[HP_FRAME_HDR];
	size_t hgot = 0;
	char *data = NULL;

	memset(res, 0, sizeof(*res));
	res->code = -1;
	if (!sandbox_fast_possible(ctx, sb) || in_left > UINT32_MAX || cmd->who != SB_AS_USER)
		return 0;
	buf_init(&req, HP_REQ_MAX + 4);
	if (fast_request(&req, cmd, io->in != NULL, in_left) < 0 || (fd = fast_open(ctx, sb)) < 0) {
		buf_free(&req);
		return 0;
	}
	if (send_all(fd, req.data, req.len, mono_ms() + FAST_CONNECT_MS) < 0) {
		buf_free(&req);
		close(fd);
		return 0; /* nothing was read: nothing ran */
	}
	buf_free(&req);
	data = malloc(FAST_FRAME_MAX);
	if (!data) {
		close(fd);
		return 0;
	}
	/* frames in, stdin out, until the exit, the timeout or the caller
	 * going away */
	while (next == NEXT_MORE) {
		struct pollfd pf = { fd, (short)(POLLIN | (started && in_left ? POLLOUT : 0)), 0 };
		int64_t left = until - mono_ms();
		ssize_t r;
		uint32_t n;

		if (io->keep_alive)
			keep_alive(ctx, sb, &next_try);
		if (io->should_stop && io->should_stop(io->arg)) {
			res->stopped = 1;
			break;
		}
		if (left <= 0) {
			res->timed_out = 1;
			break;
		}
		r = poll(&pf, 1, (int)(left < 100 ? left : 100));
		if (r < 0 && errno != EINTR) {
			res->lost = 1;
			break;
		}
		if (r <= 0)
			continue;
		if (pf.revents & POLLOUT) {
			ssize_t w = send(fd, in, in_left < 65536 ? in_left : 65536,
					 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (w > 0) {
				in += w;
				in_left -= (size_t)w;
			}
		}
		if (!(pf.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = recv(fd, hdr + hgot, sizeof(hdr) - hgot, MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r <= 0) {
			res->lost = 1;
			break;
		}
		hgot += (size_t)r;
		if (hgot < sizeof(hdr))
			continue;
		hgot = 0;
		n = be32(hdr + 1);
		if (n > FAST_FRAME_MAX || recv_all(fd, data, n, until) < 0) {
			res->lost = 1;
			break;
		}
		next = fast_frame(sb, io, res, (char)hdr[0], data, n, &started);
	}
	free(data);
	close(fd);
	if (res->lost) {
		log_warn("sandbox %s: fast path: the helper went away mid-command", sb->id);
		slot_set(sb->container_id, NULL, 0);
	}
	/* sent and not refused: it ran, or may have (a lost helper) */
	return next == NEXT_REFUSED ? 0 : 1;
}
