/*
 * The fast path's serving mode (issue 16; the host side is
 * sandbox/fastpath.c, which states the protocol in full).
 *
 * `sandpit-helper serve PORT` is started by sandpit through one docker
 * exec as the sandbox's user, with the sandbox's secret (64 hex digits
 * and a newline) on stdin: never in argv or the environment, which
 * `docker inspect` and /proc/PID/environ show. It binds 0.0.0.0:PORT in
 * the sandbox's network namespace, detaches (its own session, stdio on
 * /dev/null) and exits 0, so the exec ends; 9 when the port is taken
 * (another serving helper, or the sandbox's own program: then sandpit
 * uses docker exec).
 *
 * The secret must never be where the sandbox's uid can read it. A
 * process of the sandbox's (the same uid, no CAP_SYS_PTRACE) can open
 * /proc/PID/fd/0 of a dumpable helper and read its stdin, and a helper is
 * dumpable from runc's execve until its prctl(PR_SET_DUMPABLE, 0): a red
 * team won that race 3 times in 4 (review D5). Two things close it. The
 * binary is execute-only in its volume (mode 0111, helper.c): an execve
 * of a file its caller cannot read leaves the process non-dumpable from
 * the first instruction (the kernel's would_dump), for root too, whose
 * capabilities sandpit drops. And the secret is not in the pipe until
 * this process is non-dumpable: main() calls prctl first, then this one
 * says so with one byte, HP_READY, on stdout, and sandpit writes the
 * secret only after that byte (fastpath.c). Where the runtime needs read
 * permission to execute (gVisor) the fast path is off. The sandbox's code
 * can still kill this process; sandpit then starts another or uses
 * docker exec.
 *
 * Each connection is served by a child of its own, at most MAX_CONNS at
 * once (more are closed at once). A peer must prove it knows the secret
 * within AUTH_MS (an HMAC-SHA-256 over both sides' nonces; the secret
 * itself never travels), and the helper proves it back, with its uid:gid
 * under the MAC; a peer that fails is closed without a byte more. Then one
 * request: a command (argv, the whole environment, the working folder,
 * optional stdin), run exactly as docker exec would run it (the
 * environment as given, stdin /dev/null unless given, a fresh session,
 * default signals, no descriptors but 0-2), its output in frames, then
 * its exit status as the runtime reports it (128+N for a signal); the
 * output is read on for at most DRAIN_MS after the process ends, as
 * dockerd waits on its streams. A command that could not start (the
 * folder, the program, fork) is reported as not started: nothing ran, and
 * sandpit runs it through docker exec instead. The started frame
 * carries the command's pid and start time: when sandpit goes away
 * mid-command (a timeout) it kills the marked processes itself and checks
 * by them that the command ended, as it asks Docker for an exec's.
 *
 * Nothing here has more rights than the sandbox's code: the same uid, the
 * same namespaces and limits; it only runs what sandpit sends.
 */
#define _GNU_SOURCE
#include "serve.h"
#include "hmac.h"
#include "io.h"
#include "proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 16
#define AUTH_S 2
#define REQ_S 10
#define DRAIN_MS 2000

extern char **environ;

static int same(const unsigned char *a, const unsigned char *b, size_t n)
{
	unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= a[i] ^ b[i];
	return d == 0;
}

/* --- I/O ---------------------------------------------------------------------- */

static unsigned char secret[HP_SECRET_LEN];

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static int frame(int fd, char type, const void *data, uint32_t len)
{
	unsigned char h[HP_FRAME_HDR];

	h[0] = (unsigned char)type;
	put_be32(h + 1, len);
	return io_write_all(fd, h, HP_FRAME_HDR) < 0 || (len && io_write_all(fd, data, len) < 0)
		       ? -1
		       : 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- one connection --------------------------------------------------------- */

/* The handshake: 0 when the peer proved the secret (and got the proof). */
static int authenticate(int fd)
{
	unsigned char hello[HP_HELLO_LEN + HP_NONCE_LEN + 1 + HP_OWNER_MAX];
	unsigned char peer[HP_NONCE_LEN + HP_MAC_LEN], mac[HP_MAC_LEN];
	unsigned char *nonce = hello + HP_HELLO_LEN;
	char owner[HP_OWNER_MAX];
	int ufd, on = 1, n;
	size_t olen;

	n = snprintf(owner, sizeof(owner), "%u:%u", (unsigned)getuid(), (unsigned)getgid());
	if (n < 0 || (size_t)n >= sizeof(owner))
		return -1;
	olen = (size_t)n;
	memcpy(hello, HP_HELLO, HP_HELLO_LEN);
	ufd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (ufd < 0 || io_read_all(ufd, nonce, HP_NONCE_LEN) < 0)
		return -1;
	close(ufd);
	nonce[HP_NONCE_LEN] = (unsigned char)olen;
	memcpy(nonce + HP_NONCE_LEN + 1, owner, olen);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	if (io_write_all(fd, hello, HP_HELLO_LEN + HP_NONCE_LEN + 1 + olen) < 0 ||
	    io_read_all(fd, peer, sizeof(peer)) < 0)
		return -1;
	hmac_proof(secret, HP_LABEL_C, nonce, peer, NULL, 0, mac);
	if (!same(mac, peer + HP_NONCE_LEN, HP_MAC_LEN))
		return -1;
	hmac_proof(secret, HP_LABEL_S, nonce, peer, owner, olen, mac);
	return io_write_all(fd, mac, HP_MAC_LEN);
}

struct req {
	unsigned char *hdr;
	char **argv, **env;
	char *cwd;
	int has_in;
	uint32_t in_len;
};

/* Splits n strings out of the header at *at; NULL-terminated, NUL-free. */
static char **strings(struct req *r, uint32_t len, uint32_t *at, char **one)
{
	uint32_t count;
	char **v;

	if (len - *at < 4)
		return NULL;
	count = be32(r->hdr + *at);
	*at += 4;
	if (count > HP_STRINGS_MAX || (one && count != 1))
		return NULL;
	v = calloc((size_t)count + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t n;
		if (len - *at < 4)
			return NULL;
		n = be32(r->hdr + *at);
		/* each string is followed by the next length (or the flag): the
		 * byte after it can be made its NUL once it is read */
		if (n > len - *at - 4 || memchr(r->hdr + *at + 4, 0, n))
			return NULL;
		memmove(r->hdr + *at, r->hdr + *at + 4, n);
		r->hdr[*at + n] = '\0';
		v[i] = (char *)r->hdr + *at;
		*at += 4 + n;
	}
	if (one)
		*one = v[0];
	return v;
}

static int read_req(int fd, struct req *r)
{
	unsigned char l[4];
	uint32_t len, at = 0;

	if (io_read_all(fd, l, 4) < 0 || (len = be32(l)) > HP_REQ_MAX || len < 12)
		return -1;
	r->hdr = malloc(len);
	if (!r->hdr || io_read_all(fd, r->hdr, len) < 0)
		return -1;
	if (!(r->argv = strings(r, len, &at, NULL)) || !r->argv[0] ||
	    !(r->env = strings(r, len, &at, NULL)) || !strings(r, len, &at, &r->cwd) ||
	    len - at != 5)
		return -1;
	r->has_in = r->hdr[at] != 0;
	r->in_len = be32(r->hdr + at + 1);
	return r->has_in || r->in_len == 0 ? 0 : -1;
}

static void close_above2(int keep)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int fds[1024], n = 0;

	if (!d) {
		for (int fd = 3; fd < 1024; fd++)
			if (fd != keep)
				close(fd);
		return;
	}
	while ((de = readdir(d)) && n < 1024) {
		char *end;
		long v = strtol(de->d_name, &end, 10);
		if (!*end && v > 2 && v < 1 << 20 && v != keep && v != dirfd(d))
			fds[n++] = (int)v;
	}
	closedir(d);
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

static size_t key_len(const char *kv)
{
	const char *eq = strchr(kv, '=');

	return eq ? (size_t)(eq - kv) : strlen(kv);
}

/* The environment docker exec gives: the helper's own (the container's,
 * as docker exec made it for the helper) with each of over replacing the
 * variable of its name in place or appended; a name without '=' removes
 * it (dockerd's ReplaceOrAppendEnvValues). NULL when out of memory. */
static char **merged_env(char **over)
{
	size_t nb = 0, no = 0, n = 0;
	char **out;

	while (environ && environ[nb])
		nb++;
	while (over[no])
		no++;
	out = calloc(nb + no + 1, sizeof(*out));
	if (!out)
		return NULL;
	for (size_t i = 0; i < nb; i++)
		out[n++] = environ[i];
	for (size_t k = 0; k < no; k++) {
		size_t kl = key_len(over[k]), i;
		int set = over[k][kl] == '=';
		for (i = 0; i < n; i++)
			if (key_len(out[i]) == kl && strncmp(out[i], over[k], kl) == 0)
				break;
		if (i < n && set) {
			out[i] = over[k];
		} else if (i < n) {
			memmove(out + i, out + i + 1, (n - i) * sizeof(*out));
			n--;
		} else if (set) {
			out[n++] = over[k];
		}
	}
	out[n] = NULL;
	return out;
}

/* The command's process: never returns. st is the CLOEXEC pipe that
 * carries errno when the folder or the program fails. */
static void child(struct req *r, int in, int out, int err, int st)
{
	struct sigaction sa;
	sigset_t none;
	int e;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int i = 1; i < NSIG; i++)
		sigaction(i, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		goto fail;
	if (chdir(r->cwd) < 0)
		goto fail;
	for (int fd = 3; fd < 1024; fd++)
		if (fd != st)
			close(fd);
	if (!(environ = merged_env(r->env)))
		goto fail;
	execvp(r->argv[0], r->argv);
fail:
	e = errno;
	io_write_all(st, &e, sizeof(e));
	_exit(127);
}

/* Field 22 of /proc/PID/stat (after the command name, which may hold
 * anything: read from its last ')'); 0 when unreadable. */
static unsigned long long proc_start(pid_t pid)
{
	char p[64], b[1024], *c;
	int fd, field = 2;
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	b[n] = '\0';
	c = strrchr(b, ')');
	if (!c)
		return 0;
	for (c++; *c && field < 22; c++)
		if (*c == ' ')
			field++;
	return field == 22 ? strtoull(c, NULL, 10) : 0;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Starts r's command with its stdout, stderr and stdin on pipes (po, pe:
 * the read ends; pi[1] the write end of its stdin, -1 without one) and
 * says so to sandpit (HP_STARTED: its pid and start time). Its pid; 0
 * when it did not start (HP_NOT_STARTED said why); -1 when it started
 * and sandpit went away. */
static pid_t start(int fd, struct req *r, int po[2], int pe[2], int pi[2])
{
	int ps[2], e = 0;
	pid_t pid;

	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0 || pipe2(ps, O_CLOEXEC) < 0 ||
	    (r->has_in ? pipe2(pi, O_CLOEXEC) : (pi[0] = open("/dev/null", O_RDONLY | O_CLOEXEC))) <
		    0)
		return frame(fd, HP_NOT_STARTED, "pipe", 4), 0;
	pid = fork();
	if (pid < 0)
		return frame(fd, HP_NOT_STARTED, "fork", 4), 0;
	if (pid == 0)
		child(r, pi[0], po[1], pe[1], ps[1]);
	close(po[1]);
	close(pe[1]);
	close(ps[1]);
	close(pi[0]);
	if (io_read_all(ps[0], &e, sizeof(e)) == 0) {
		waitpid(pid, NULL, 0);
		return frame(fd, HP_NOT_STARTED, strerror(e), (uint32_t)strlen(strerror(e))), 0;
	}
	close(ps[0]);
	{
		/* its pid and start time (in clock ticks after boot, field 22
		 * of its stat): sandpit tells by them whether it still runs
		 * after a kill, as it asks Docker for an exec's */
		unsigned char id[HP_STARTED_LEN];
		unsigned long long t = proc_start(pid);
		put_be32(id, (uint32_t)pid);
		put_be32(id + 4, (uint32_t)(t >> 32));
		put_be32(id + 8, (uint32_t)t);
		if (frame(fd, HP_STARTED, id, sizeof(id)) < 0)
			return -1;
	}
	return pid;
}

/* A wait status as an exit code: the code, or 128 + the signal. */
static uint32_t exit_code(int status)
{
	return WIFEXITED(status)     ? (uint32_t)WEXITSTATUS(status)
	       : WIFSIGNALED(status) ? 128u + (uint32_t)WTERMSIG(status)
				     : 255u;
}

/* One read of the command's stdout or stderr (*p, which revents says is
 * ready) sent to sandpit as a frame of type t; *p closed (-1) at its end.
 * -1 when sandpit went away. */
static int relay_out(int fd, short revents, int *p, char t, char *buf, size_t cap)
{
	ssize_t n;

	if (*p < 0 || !(revents & (POLLIN | POLLHUP | POLLERR)))
		return 0;
	n = read(*p, buf, cap);
	if (n > 0)
		return frame(fd, t, buf, (uint32_t)n) < 0 ? -1 : 0;
	if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
		close(*p);
		*p = -1;
	}
	return 0;
}

/* Writes what is held of stdin (ib from *io to *ih) to the command's
 * stdin *pi1; when the command closed it, the rest is read and dropped. */
static void feed(int *pi1, const char *ib, size_t *ih, size_t *io)
{
	ssize_t n = write(*pi1, ib + *io, *ih - *io);

	if (n > 0) {
		*io += (size_t)n;
		if (*io == *ih)
			*ih = *io = 0;
	} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
		close(*pi1);
		*pi1 = -1;
		*ih = *io = 0;
	}
}

/* Runs the request, streaming its output to fd; the connection's exit. */
static int run(int fd, struct req *r)
{
	int po[2], pe[2], pi[2] = { -1, -1 }, status = 0, exited = 0;
	uint32_t in_left = r->in_len;
	static char ib[65536], ob[65536];
	size_t ih = 0, io = 0;
	int64_t drain_until = 0;
	pid_t pid;

	pid = start(fd, r, po, pe, pi);
	if (pid == 0)
		return 1;
	if (pid < 0)
		goto gone;
	if (pi[1] >= 0 && in_left == 0) {
		close(pi[1]);
		pi[1] = -1;
	}
	if (pi[1] >= 0)
		set_nonblock(pi[1]);
	for (;;) {
		struct pollfd pf[4];
		int np = 0, ixo = -1, ixe = -1, ixs = -1, ixi = -1;
		ssize_t n;

		if (!exited && po[0] < 0 && pe[0] < 0 && pi[1] < 0) {
			/* its output is closed: only its end is left to wait for */
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			break;
		}
		if (!exited && waitpid(pid, &status, WNOHANG) == pid) {
			exited = 1;
			drain_until = now_ms() + DRAIN_MS;
		}
		if ((po[0] < 0 && pe[0] < 0 && exited) || (exited && now_ms() >= drain_until))
			break;
		if (po[0] >= 0)
			pf[ixo = np++] = (struct pollfd){ po[0], POLLIN, 0 };
		if (pe[0] >= 0)
			pf[ixe = np++] = (struct pollfd){ pe[0], POLLIN, 0 };
		/* the socket: stdin while some is owed, else only its end */
		if (!ih)
			pf[ixs = np++] = (struct pollfd){ fd, POLLIN, 0 };
		if (ih && pi[1] >= 0)
			pf[ixi = np++] = (struct pollfd){ pi[1], POLLOUT, 0 };
		if (poll(pf, (nfds_t)np, exited ? 20 : 100) < 0) {
			if (errno == EINTR)
				continue;
			goto gone;
		}
		if (relay_out(fd, ixo < 0 ? 0 : pf[ixo].revents, &po[0], HP_STDOUT, ob,
			      sizeof(ob)) < 0 ||
		    relay_out(fd, ixe < 0 ? 0 : pf[ixe].revents, &pe[0], HP_STDERR, ob,
			      sizeof(ob)) < 0)
			goto gone;
		if (ixs >= 0 && (pf[ixs].revents & (POLLIN | POLLHUP | POLLERR))) {
			if (!in_left) {
				/* nothing more is owed: sandpit went away, unless the
				 * wake-up was spurious (nothing to read yet) */
				char c;
				ssize_t k = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
				if (k < 0 && (errno == EAGAIN || errno == EINTR))
					continue;
				goto gone;
			}
			n = read(fd, ib, in_left < sizeof(ib) ? in_left : sizeof(ib));
			if (n <= 0 && !(n < 0 && errno == EINTR))
				goto gone;
			if (n > 0) {
				ih = (size_t)n;
				io = 0;
				in_left -= (uint32_t)n;
			}
		}
		if (ixi >= 0 && (pf[ixi].revents & (POLLOUT | POLLERR | POLLHUP)))
			feed(&pi[1], ib, &ih, &io);
		if (pi[1] < 0 && ih)
			ih = io = 0;
		if (pi[1] >= 0 && !in_left && !ih) {
			close(pi[1]);
			pi[1] = -1;
		}
	}
	{
		unsigned char c[HP_EXIT_LEN];
		put_be32(c, exit_code(status));
		frame(fd, HP_EXIT, c, HP_EXIT_LEN);
	}
	return 0;
gone:
	/* sandpit went away mid-command (a timeout, its caller gone): the
	 * command is left as docker exec leaves it, to sandpit's kill of the
	 * marked processes and its check that the command ended */
	return 1;
}

static void serve_conn(int fd)
{
	struct req r;

	memset(&r, 0, sizeof(r));
	signal(SIGPIPE, SIG_IGN);
	alarm(AUTH_S);
	if (authenticate(fd) < 0)
		_exit(1);
	alarm(REQ_S);
	if (read_req(fd, &r) < 0)
		_exit(1);
	alarm(0);
	_exit(run(fd, &r));
}

/* --- the listener ------------------------------------------------------------ */

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int serve_main(int argc, char **argv)
{
	char line[2 * HP_SECRET_LEN + 2];
	const char ready = HP_READY;
	struct sockaddr_in a;
	int ls, one = 1, conns = 0;
	long port;
	char *end;
	pid_t pid;

	/* main() made this process non-dumpable first thing; again here, so
	 * the promise below never depends on the caller: from here on no
	 * process of the sandbox's opens this one's memory or descriptors,
	 * the stdin the secret comes on among them */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return fprintf(stderr, "serve: prctl: %s\n", strerror(errno)), 1;
	if (argc < 1)
		return fprintf(stderr, "usage: serve PORT\n"), H_USAGE;
	port = strtol(argv[0], &end, 10);
	if (*end || port < 1024 || port > 65535)
		return fprintf(stderr, "serve: a bad port\n"), H_USAGE;
	/* only now may the secret come: sandpit waits for this byte */
	if (io_write_all(1, &ready, 1) < 0)
		return 1;
	if (io_read_all(0, line, sizeof(line) - 1) < 0 || line[2 * HP_SECRET_LEN] != '\n')
		return fprintf(stderr, "serve: no secret on stdin\n"), H_USAGE;
	for (int i = 0; i < HP_SECRET_LEN; i++) {
		int h = hexval(line[2 * i]), l = hexval(line[2 * i + 1]);
		if (h < 0 || l < 0)
			return fprintf(stderr, "serve: a bad secret\n"), H_USAGE;
		secret[i] = (unsigned char)(h << 4 | l);
	}
	memset(line, 0, sizeof(line));
	ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0)
		return fprintf(stderr, "serve: socket: %s\n", strerror(errno)), 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(ls, MAX_CONNS) < 0) {
		int busy = errno == EADDRINUSE;
		fprintf(stderr, "serve: port %ld: %s\n", port, strerror(errno));
		return busy ? HS_BUSY : 1;
	}
	pid = fork();
	if (pid < 0)
		return fprintf(stderr, "serve: fork: %s\n", strerror(errno)), 1;
	if (pid > 0) {
		int st = 0;
		waitpid(pid, &st, 0);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	/* the middle process: a session of its own, then the server forks off
	 * and this one ends (the server is nobody's child but init's) */
	setsid();
	pid = fork();
	if (pid != 0)
		_exit(pid < 0 ? 1 : 0);
	{
		int dn = open("/dev/null", O_RDWR);
		if (dn >= 0) {
			dup2(dn, 0);
			dup2(dn, 1);
			dup2(dn, 2);
			if (dn > 2)
				close(dn);
		}
	}
	close_above2(ls);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	for (;;) {
		struct pollfd pf = { ls, POLLIN, 0 };
		int c;
		while (conns > 0 && waitpid(-1, NULL, WNOHANG) > 0)
			conns--;
		if (poll(&pf, 1, 500) <= 0)
			continue;
		c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		if (conns >= MAX_CONNS) {
			close(c);
			continue;
		}
		pid = fork();
		if (pid == 0) {
			close(ls);
			serve_conn(c);
		}
		if (pid > 0)
			conns++;
		close(c);
	}
}
