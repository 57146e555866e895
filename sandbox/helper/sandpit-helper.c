/*
 * sandpit-helper: the small static program inside every sandbox (issue 16).
 * It is mounted read-only from a per-server volume named by its content
 * hash (sandbox/helper.c) at /.sandpit-helper/sandpit-helper and run by
 * sandpit through docker exec, one exec per operation, always as the
 * sandbox's user: it never has more rights than the sandbox's own code.
 *
 * It supervises durable processes. `spawn` double-forks a supervisor
 * (its own session) that owns the process's pipes, keeps its exit status
 * and its output, each read a chunk with a sequence number (one counter
 * per process, from 1), in PROC_ROOT/<uid>/ on the sandbox's process
 * tmpfs (counted against the sandbox's memory). Output past the process's
 * retention is dropped oldest first, whole chunks; the file is rewritten
 * when it holds twice the retention, so at least `retention` recent bytes
 * (and at most about twice that) are kept. Nothing here is trusted by
 * sandpit: the files are the sandbox user's, and sandpit checks every
 * answer it parses (sandbox/process.c).
 *
 * Answers are one JSON object on stdout; a refusal is an exit status
 * (HX_*) with one line on stderr. Built with musl, statically, so that it
 * runs in any image; no allocation beyond a few fixed buffers per call.
 * The seam for stdin and a PTY is the `ios` set-up in supervise().
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "files.h"
#include "io.h"
#include "proto.h"
#include "serve.h"

#define PROC_ROOT "/.sandpit/p"
#define CHUNK_MAX 32768
#define LABEL_MAX 128
#define LIST_MAX 1000
/* a read's page holds at most this many chunks, so that sandpit parses it
 * within a fixed budget (sandbox/process.c) */
#define READ_CHUNKS_MAX 4096

/* one retained chunk on disk: this header, then len bytes */
struct rec {
	uint64_t seq;
	uint32_t len;
	uint8_t stream; /* 1 stdout, 2 stderr, 3 a PTY */
	uint8_t pad[3];
};

static int fail(int code, const char *what)
{
	fprintf(stderr, "%s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
	return code;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* A process uid sandpit chose: [a-z0-9], 1..32. */
static int uid_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 32)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

static int path_of(char *out, size_t cap, const char *uid, const char *file)
{
	int n = snprintf(out, cap, PROC_ROOT "/%s%s%s", uid, file ? "/" : "", file ? file : "");

	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* Writes a small file whole, through a temporary name and a rename. */
static int put_file(const char *uid, const char *name, const void *data, size_t len)
{
	char p[256], tmp[280];
	int fd, rc;

	if (path_of(p, sizeof(p), uid, name) < 0)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	rc = io_write_all(fd, data, len);
	if (close(fd) < 0)
		rc = -1;
	return rc < 0 ? -1 : rename(tmp, p);
}

/* Reads a small file into buf (NUL-terminated); its length, -1 if absent. */
static ssize_t get_file(const char *uid, const char *name, char *buf, size_t cap)
{
	char p[256];
	ssize_t n, got = 0;
	int fd;

	if (path_of(p, sizeof(p), uid, name) < 0 || (fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	while ((size_t)got + 1 < cap && (n = read(fd, buf + got, cap - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	return got;
}

/* --- JSON out ------------------------------------------------------------- */

static void json_str(const char *s, size_t n)
{
	putchar('"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_b64(const unsigned char *p, size_t n)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i;

	putchar('"');
	for (i = 0; i + 2 < n; i += 3) {
		putchar(t[p[i] >> 2]);
		putchar(t[((p[i] & 3) << 4) | (p[i + 1] >> 4)]);
		putchar(t[((p[i + 1] & 15) << 2) | (p[i + 2] >> 6)]);
		putchar(t[p[i + 2] & 63]);
	}
	if (i < n) {
		putchar(t[p[i] >> 2]);
		if (i + 1 < n) {
			putchar(t[((p[i] & 3) << 4) | (p[i + 1] >> 4)]);
			putchar(t[(p[i + 1] & 15) << 2]);
		} else {
			putchar(t[(p[i] & 3) << 4]);
			putchar('=');
		}
		putchar('=');
	}
	putchar('"');
}

/* --- the output log ------------------------------------------------------- */

struct span {
	uint64_t first, last; /* sequence of the first and last retained chunk; 0 = none */
	uint64_t bytes;	      /* data bytes retained */
	off_t size;	      /* file bytes */
};

/* Scans the log at fd (a trailing partial record is ignored). */
static void log_scan(int fd, struct span *s)
{
	struct rec h;
	off_t at = 0;

	memset(s, 0, sizeof(*s));
	while (pread(fd, &h, sizeof(h), at) == (ssize_t)sizeof(h)) {
		struct stat st;
		if (fstat(fd, &st) < 0 || at + (off_t)sizeof(h) + h.len > st.st_size)
			break;
		if (!s->first)
			s->first = h.seq;
		s->last = h.seq;
		s->bytes += h.len;
		at += (off_t)sizeof(h) + h.len;
	}
	s->size = at;
}

/* Rewrites the log keeping the newest chunks that hold at least keep bytes
 * of data; returns the new descriptor (append mode), or fd on failure. */
static int log_compact(const char *uid, int fd, uint64_t keep)
{
	char p[256], tmp[280], buf[CHUNK_MAX];
	struct span s;
	struct rec h;
	off_t at = 0, from = 0;
	uint64_t dropped = 0;
	int nfd;

	log_scan(fd, &s);
	if (s.bytes <= keep)
		return fd;
	while (pread(fd, &h, sizeof(h), at) == (ssize_t)sizeof(h) && h.len <= CHUNK_MAX) {
		if (s.bytes - dropped - h.len < keep)
			break;
		dropped += h.len;
		at += (off_t)sizeof(h) + h.len;
	}
	from = at;
	if (path_of(p, sizeof(p), uid, "out") < 0)
		return fd;
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	nfd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (nfd < 0)
		return fd;
	for (at = from; at < s.size;) {
		ssize_t n = pread(fd, buf, sizeof(buf), at);
		if (n <= 0 || io_write_all(nfd, buf, (size_t)n) < 0) {
			close(nfd);
			unlink(tmp);
			return fd;
		}
		at += n;
	}
	if (rename(tmp, p) < 0) {
		close(nfd);
		unlink(tmp);
		return fd;
	}
	close(fd);
	close(nfd);
	nfd = open(p, O_RDWR | O_APPEND | O_CLOEXEC);
	return nfd;
}

/* --- spawn and supervise --------------------------------------------------- */

static void hex_of(const char *s, size_t n, char *out)
{
	static const char x[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = x[(unsigned char)s[i] >> 4];
		out[2 * i + 1] = x[(unsigned char)s[i] & 15];
	}
	out[2 * n] = '\0';
}

static void sig_default(void)
{
	struct sigaction sa;
	sigset_t none;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int i = 1; i < NSIG; i++)
		sigaction(i, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Closes every descriptor above 2 but keep. */
static void close_from3(int keep)
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
		uint64_t v;
		if (parse_u64(de->d_name, &v) == 0 && v > 2 && (int)v != keep && (int)v != dirfd(d))
			fds[n++] = (int)v;
	}
	closedir(d);
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* --- the control socket ------------------------------------------------------
 * PROC_ROOT/<uid>/ctl, a unix stream socket the supervisor listens on while
 * the process runs. A client (an `attach`) sends commands, each a header
 * line and for I its bytes:
 *   I <len>\n<len bytes>   bytes for the process's stdin (len 1..CMD_DATA_MAX)
 *   E\n                    close stdin (a PTY: one VEOF character instead)
 *   R <rows> <cols>\n      the terminal's size (a PTY only; else ignored)
 * and reads one byte ('n') whenever output was added to the log (a byte
 * already pending says the same: none is queued twice). The supervisor
 * closes every client when it ends, after the exit file is written. Any
 * code of the sandbox's user can connect: it gains nothing, the process
 * is that user's. */

#define CMD_DATA_MAX 65536
#define CMD_BUF (CMD_DATA_MAX + 64)
#define CLIENTS_MAX 8
#define STDIN_BUF (4 * CMD_BUF)

struct client {
	int fd;
	size_t have;
	char buf[CMD_BUF];
};

struct sup {
	const char *uid;
	int pty;	   /* 1: master is a PTY's */
	int in_fd;	   /* the process's stdin (a pipe's write end, or the master); -1 closed */
	int close_in;	   /* a pipe's stdin is closed once what is pending has gone */
	unsigned char eof; /* the PTY's VEOF character */
	size_t in_len;
	unsigned char in[STDIN_BUF];
	int lfd; /* the control socket; -1 none */
	struct client cl[CLIENTS_MAX];
};

static int parse_num(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 10)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

/* One command at p[0..n): its length when whole (*kind, the numbers, the
 * data's offset set), 0 when more bytes are needed, -1 when malformed. */
static ssize_t cmd_parse(const char *p, size_t n, char *kind, uint64_t *a, uint64_t *b,
			 size_t *data)
{
	const char *nl = memchr(p, '\n', n < 40 ? n : 40);
	const char *sp;

	if (!nl)
		return n >= 40 ? -1 : 0;
	*kind = p[0];
	*a = *b = 0;
	*data = (size_t)(nl - p) + 1;
	switch (p[0]) {
	case 'E':
		return nl == p + 1 ? (ssize_t)*data : -1;
	case 'I':
		if (p[1] != ' ' || parse_num(p + 2, (size_t)(nl - p - 2), CMD_DATA_MAX, a) < 0 ||
		    *a == 0)
			return -1;
		return n - *data >= *a ? (ssize_t)(*data + *a) : 0;
	case 'R':
		sp = p[1] == ' ' ? memchr(p + 2, ' ', (size_t)(nl - p - 2)) : NULL;
		if (!sp || parse_num(p + 2, (size_t)(sp - p - 2), 65535, a) < 0 ||
		    parse_num(sp + 1, (size_t)(nl - sp - 1), 65535, b) < 0)
			return -1;
		return (ssize_t)*data;
	default:
		return -1;
	}
}

static void set_winsize(int fd, unsigned rows, unsigned cols)
{
	struct winsize ws;

	memset(&ws, 0, sizeof(ws));
	ws.ws_row = (unsigned short)rows;
	ws.ws_col = (unsigned short)cols;
	ioctl(fd, TIOCSWINSZ, &ws);
}

/* Runs the whole commands in a client's buffer (they fit: a client is read
 * only while STDIN_BUF has room for a buffer's worth). */
static void sup_commands(struct sup *s, struct client *c)
{
	size_t off = 0;

	for (;;) {
		char kind;
		uint64_t a, b;
		size_t data;
		ssize_t n = cmd_parse(c->buf + off, c->have - off, &kind, &a, &b, &data);
		if (n == 0)
			break;
		if (n < 0) {
			close(c->fd); /* not our protocol: that client goes */
			c->fd = -1;
			return;
		}
		if (kind == 'I' && s->in_fd >= 0 && !s->close_in &&
		    s->in_len + a <= sizeof(s->in)) {
			memcpy(s->in + s->in_len, c->buf + off + data, a);
			s->in_len += a;
		} else if (kind == 'E' && s->in_fd >= 0) {
			if (s->pty) {
				if (s->in_len < sizeof(s->in))
					s->in[s->in_len++] = s->eof;
			} else {
				s->close_in = 1;
			}
		} else if (kind == 'R' && s->pty && s->in_fd >= 0) {
			set_winsize(s->in_fd, (unsigned)a, (unsigned)b);
		}
		off += (size_t)n;
	}
	memmove(c->buf, c->buf + off, c->have - off);
	c->have -= off;
}

/* Writes what stdin can take now; closes a pipe's stdin when asked and
 * nothing is pending. A process that closed its stdin drops the rest. */
static void sup_stdin(struct sup *s)
{
	while (s->in_fd >= 0 && s->in_len) {
		ssize_t w = write(s->in_fd, s->in, s->in_len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return;
		if (w <= 0) {
			s->in_len = 0; /* EPIPE: nobody reads it any more */
			break;
		}
		memmove(s->in, s->in + w, s->in_len - (size_t)w);
		s->in_len -= (size_t)w;
	}
	if (s->close_in && !s->pty && s->in_fd >= 0 && !s->in_len) {
		close(s->in_fd);
		s->in_fd = -1;
	}
}

static void sup_notify(struct sup *s)
{
	for (int i = 0; i < CLIENTS_MAX; i++)
		if (s->cl[i].fd >= 0 && write(s->cl[i].fd, "n", 1) < 0 && errno != EAGAIN) {
			close(s->cl[i].fd);
			s->cl[i].fd = -1;
		}
}

static void sup_accept(struct sup *s)
{
	int fd;

	while ((fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		int i;
		for (i = 0; i < CLIENTS_MAX && s->cl[i].fd >= 0; i++)
			;
		if (i == CLIENTS_MAX) {
			close(fd); /* full: that attach falls back to reading the log */
			continue;
		}
		s->cl[i].fd = fd;
		s->cl[i].have = 0;
	}
}

static int sup_listen(const char *uid)
{
	struct sockaddr_un a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	if (path_of(a.sun_path, sizeof(a.sun_path), uid, "ctl") < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	unlink(a.sun_path);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, CLIENTS_MAX) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The supervised process (a child of the supervisor's): on the PTY whose
 * slave is named (a session of its own), else on the pipes in, out and
 * err (a process group of its own). An exec that fails writes its errno
 * to ex. Never returns. */
static void sup_child(const char *slave, int in, int out, int err, char **argv, int ex)
{
	int e;

	if (slave) {
		int sl;
		setsid();
		sl = open(slave, O_RDWR);
		if (sl < 0)
			_exit(127);
		/* the open made it the controlling terminal already on
		 * Linux (EPERM then); gVisor (runsc 20221219) refuses
		 * the ioctl with EINVAL, and the process runs on the PTY
		 * without a controlling terminal (no ^C signals): neither
		 * is fatal */
		if (ioctl(sl, TIOCSCTTY, 0) < 0 && errno != EPERM && errno != EINVAL)
			_exit(127);
		if (dup2(sl, 0) < 0 || dup2(sl, 1) < 0 || dup2(sl, 2) < 0)
			_exit(127);
		if (sl > 2)
			close(sl);
	} else {
		setpgid(0, 0);
		if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(127);
	}
	sig_default();
	unsetenv("SANDPIT_EXEC");
	execvp(argv[0], argv);
	e = errno;
	if (write(ex, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* After the fork: an errno on ex (the exec failed) goes to ready as
 * "E<errno>", and the supervisor ends; else "<pid>" goes to ready and the
 * pid file. */
static void sup_started(const char *uid, pid_t pid, int ex, int ready)
{
	char msg[64];
	int e = 0;
	ssize_t n;

	while ((n = read(ex, &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(ex);
	if (n == (ssize_t)sizeof(e)) {
		snprintf(msg, sizeof(msg), "E%d\n", e);
		if (write(ready, msg, strlen(msg)) < 0)
			_exit(1);
		waitpid(pid, NULL, 0);
		_exit(0);
	}
	snprintf(msg, sizeof(msg), "%d\n", (int)pid);
	put_file(uid, "pid", msg, strlen(msg));
	if (write(ready, msg, strlen(msg)) < 0)
		_exit(1);
	close(ready);
}

/* One read of client c's commands; c closed at its end. */
static void sup_client_read(struct sup *s, struct client *c)
{
	ssize_t r = read(c->fd, c->buf + c->have, sizeof(c->buf) - c->have);

	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (r <= 0) {
		close(c->fd);
		c->fd = -1;
		return;
	}
	c->have += (size_t)r;
	sup_commands(s, c);
}

/* The output log: every read a chunk (struct rec, then the bytes),
 * numbered; compacted to the last keep bytes once twice that came. */
struct sup_log {
	const char *uid;
	int fd;
	uint64_t seq, since, keep;
};

static void sup_log(struct sup_log *lg, uint8_t stream, const unsigned char *b, size_t n)
{
	struct rec h = { ++lg->seq, (uint32_t)n, stream, { 0 } };
	struct iovec v[2] = { { &h, sizeof(h) }, { (void *)b, n } };

	/* the tmpfs full: this chunk is lost, its number is reused */
	if (writev(lg->fd, v, 2) < 0)
		lg->seq--;
	lg->since += (uint64_t)n + sizeof(h);
	if (lg->since > 2 * lg->keep) {
		lg->fd = log_compact(lg->uid, lg->fd, lg->keep);
		if (lg->fd < 0)
			_exit(1);
		lg->since = (uint64_t)lseek(lg->fd, 0, SEEK_END);
	}
}

/* One read of the process's output at pf (ready as its revents say),
 * kept as a chunk of stream and told to the clients. 1 when that output
 * ended (pf->fd then -1), else 0. */
static int sup_output(struct sup *s, struct sup_log *lg, struct pollfd *pf, uint8_t stream)
{
	static unsigned char buf[CHUNK_MAX];
	ssize_t r;

	if (pf->fd < 0 || !(pf->revents & (POLLIN | POLLHUP | POLLERR)))
		return 0;
	r = read(pf->fd, buf, sizeof(buf));
	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (r <= 0) {
		/* a PTY's master reads EIO once no slave is open */
		if (pf->fd == s->in_fd)
			s->in_fd = -1;
		close(pf->fd);
		pf->fd = -1;
		return 1;
	}
	sup_log(lg, stream, buf, (size_t)r);
	sup_notify(s);
	return 0;
}

/* The events of the poll set (see supervise: pf[0], pf[1] the output,
 * pf[2] the control socket), then stdin's writes (a pipe's; a PTY's
 * master is both, its writes wait with its reads), then the clients that
 * may send a command now (at[i] the index of client i's, else -1). The
 * count. */
static size_t sup_poll_set(struct sup *s, struct pollfd *pf, int *at)
{
	size_t k = 3;

	pf[0].events = pf[1].events = POLLIN;
	pf[2].fd = s->lfd;
	pf[2].events = POLLIN;
	if (s->in_len && !s->pty) {
		pf[k].fd = s->in_fd;
		pf[k++].events = POLLOUT;
	} else if (s->in_len && s->pty) {
		pf[0].events |= POLLOUT;
	}
	for (int i = 0; i < CLIENTS_MAX; i++) {
		at[i] = -1;
		if (s->cl[i].fd < 0 || s->in_len + CMD_BUF > sizeof(s->in))
			continue;
		at[i] = (int)k;
		pf[k].fd = s->cl[i].fd;
		pf[k++].events = POLLIN;
	}
	return k;
}

/* The process ended with status: its exit file, the control socket gone,
 * the clients let go (they read the rest of the log, then the exit).
 * Never returns. */
static void sup_exit(struct sup *s, int status)
{
	char p[256], msg[64];

	if (WIFSIGNALED(status))
		snprintf(msg, sizeof(msg), "%d signal %d\n", 128 + WTERMSIG(status),
			 WTERMSIG(status));
	else
		snprintf(msg, sizeof(msg), "%d exited\n", WEXITSTATUS(status));
	put_file(s->uid, "exit", msg, strlen(msg));
	if (path_of(p, sizeof(p), s->uid, "ctl") == 0)
		unlink(p);
	for (int i = 0; i < CLIENTS_MAX; i++)
		if (s->cl[i].fd >= 0)
			close(s->cl[i].fd);
	_exit(0);
}

/* The supervisor: runs argv with its stdin, stdout and stderr on pipes, or
 * all three on a PTY of rows x cols (rows 0: pipes), keeps every read as a
 * chunk, takes commands on the control socket, then keeps the exit status.
 * ready gets "<pid>\n" once argv is running or "E<errno>\n" when it could
 * not be run. Never returns. */
static void supervise(const char *uid, uint64_t keep, unsigned rows, unsigned cols, char **argv,
		      int ready)
{
	static struct sup s;
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, in[2] = { -1, -1 }, ex[2];
	int open_fds, status = 0, reaped = 0, master = -1;
	char p[256], msg[64], slave[64];
	struct sup_log lg = { uid, -1, 0, 0, keep };
	pid_t pid;
	struct pollfd pf[3 + CLIENTS_MAX];

	s.uid = uid;
	s.pty = rows > 0;
	s.lfd = -1;
	for (int i = 0; i < CLIENTS_MAX; i++)
		s.cl[i].fd = -1;
	if (pipe2(ex, O_CLOEXEC) < 0)
		goto early;
	if (s.pty) {
		struct termios t;
		master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
		    ptsname_r(master, slave, sizeof(slave)) != 0)
			goto early;
		set_winsize(master, rows, cols);
		s.eof = tcgetattr(master, &t) == 0 && t.c_cc[VEOF] ? t.c_cc[VEOF] : 4;
	} else if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
		   pipe2(in, O_CLOEXEC) < 0) {
		goto early;
	}
	if (path_of(p, sizeof(p), uid, "out") < 0 ||
	    (lg.fd = open(p, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) < 0)
		goto early;
	if (s.pty && put_file(uid, "pty", "1\n", 2) < 0)
		goto early;
	s.lfd = sup_listen(uid);
	pid = fork();
	if (pid < 0)
		goto early;
	if (pid == 0)
		sup_child(s.pty ? slave : NULL, in[0], out[1], err[1], argv, ex[1]);
	if (!s.pty) {
		setpgid(pid, pid);
		close(out[1]);
		close(err[1]);
		close(in[0]);
		s.in_fd = in[1];
	} else {
		s.in_fd = master;
	}
	fcntl(s.in_fd, F_SETFL, fcntl(s.in_fd, F_GETFL) | O_NONBLOCK);
	close(ex[1]);
	sup_started(uid, pid, ex[0], ready);
	/* pf[0], pf[1]: the output (stdout, stderr; or the master alone);
	 * pf[2]: the control socket; then stdin's writes; then the clients */
	pf[0].fd = s.pty ? master : out[0];
	pf[1].fd = s.pty ? -1 : err[0];
	open_fds = s.pty ? 1 : 2;
	for (;;) {
		size_t k;
		int n, at[CLIENTS_MAX];
		if (open_fds <= 0)
			break;
		k = sup_poll_set(&s, pf, at);
		n = poll(pf, (nfds_t)k, reaped ? 100 : 1000);
		if (n < 0 && errno != EINTR)
			break;
		if (!reaped && waitpid(pid, &status, WNOHANG) == pid)
			reaped = 1;
		if (n == 0 && reaped)
			break; /* its children keep the output open: what they print later is lost */
		if (n <= 0)
			continue;
		if (pf[2].fd >= 0 && (pf[2].revents & POLLIN))
			sup_accept(&s);
		for (int i = 0; i < CLIENTS_MAX; i++)
			if (at[i] >= 0 && (pf[at[i]].revents & (POLLIN | POLLHUP | POLLERR)))
				sup_client_read(&s, &s.cl[i]);
		sup_stdin(&s);
		for (int i = 0; i < 2; i++)
			open_fds -= sup_output(&s, &lg, &pf[i], (uint8_t)(s.pty ? 3 : i + 1));
	}
	if (!reaped)
		waitpid(pid, &status, 0);
	sup_exit(&s, status);
early:
	snprintf(msg, sizeof(msg), "E%d\n", errno);
	if (write(ready, msg, strlen(msg)) < 0)
		_exit(1);
	_exit(1);
}

/* Enters dir ("": stays) as the kernel resolves it (symlinks followed):
 * never /proc. */
static int enter(const char *dir)
{
	char cwd[PATH_MAX];

	if ((dir[0] && chdir(dir) < 0) || !getcwd(cwd, sizeof(cwd)))
		return -1;
	if (strcmp(cwd, "/proc") == 0 || strncmp(cwd, "/proc/", 6) == 0)
		return -1;
	return 0;
}

/* The supervisor's start (a child of spawn's): a session of its own,
 * forked again so that spawn's wait ends, no descriptor of docker exec's
 * and no terminal. Never returns. */
static void spawn_supervisor(const char *uid, uint64_t keep, unsigned rows, unsigned cols,
			     char **argv, int sync[2])
{
	int nul;

	setsid();
	if (fork() != 0)
		_exit(0);
	close(sync[0]);
	nul = open("/dev/null", O_RDWR);
	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		if (nul > 2)
			close(nul);
	}
	close_from3(sync[1]);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	supervise(uid, keep, rows, cols, argv, sync[1]);
}

/* A process that never ran: its label's claim lp and its folder go. */
static void spawn_undo(const char *uid, const char *lp)
{
	static const char *const files[] = { "label", "session", "created", "out",
					     "pid",   "pty",	 "ctl" };
	char f[256];

	unlink(lp);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (path_of(f, sizeof(f), uid, files[i]) == 0)
			unlink(f);
	if (path_of(f, sizeof(f), uid, NULL) == 0)
		rmdir(f);
}

/* start UID RETENTION LABEL SESSION CWD TTY ARGV...: {"uid","pid"} once
 * ARGV runs in CWD; TTY is "-" (stdin, stdout and stderr on pipes, stdin
 * open until closed through the control socket) or ROWSxCOLS (a PTY of that
 * size). spawn is start with TTY "-" and stdin open as well. */
static int cmd_spawn(int argc, char **argv, int has_tty)
{
	uint64_t rows = 0, cols = 0;
	const char *uid = argv[0], *label = argv[2], *session = argv[3];
	char p[256], lp[300], hex[2 * LABEL_MAX + 1], line[64];
	uint64_t keep;
	int sync[2], fd;
	ssize_t n = 0, got = 0;
	pid_t pid;
	struct timespec ts;

	if (has_tty && argc < 7)
		return fail(HX_USAGE, "usage: start UID RETENTION LABEL SESSION CWD TTY ARGV...");
	if (has_tty && strcmp(argv[5], "-") != 0) {
		const char *x = strchr(argv[5], 'x');
		if (!x || parse_num(argv[5], (size_t)(x - argv[5]), 65535, &rows) < 0 ||
		    parse_num(x + 1, strlen(x + 1), 65535, &cols) < 0 || rows == 0 || cols == 0)
			return fail(HX_USAGE, "TTY: - or ROWSxCOLS");
	}
	if (has_tty) {
		for (int i = 5; i > 0; i--)
			argv[i] = argv[i - 1];
		argv++;
		argc--;
	}
	if (argc < 6 || !uid_ok(uid) || parse_u64(argv[1], &keep) < 0 || keep < 65536 ||
	    strlen(label) > LABEL_MAX)
		return fail(HX_USAGE, "usage: start UID RETENTION LABEL SESSION CWD TTY ARGV...");
	mkdir(PROC_ROOT, 01777);
	if (path_of(p, sizeof(p), uid, NULL) < 0 || mkdir(p, 0700) < 0)
		return fail(HX_ERROR, "cannot make the process folder");
	hex_of(label, strlen(label), hex);
	snprintf(lp, sizeof(lp), PROC_ROOT "/L%s", hex);
	fd = open(lp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = errno;
		rmdir(p);
		errno = 0;
		return e == EEXIST ? fail(HX_LABEL_TAKEN, "label taken")
				   : (errno = e, fail(HX_ERROR, "cannot claim the label"));
	}
	if (io_write_all(fd, uid, strlen(uid)) < 0) {
		close(fd);
		return fail(HX_ERROR, "cannot claim the label");
	}
	close(fd);
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(line, sizeof(line), "%lld%09ld\n", (long long)ts.tv_sec, ts.tv_nsec);
	if (put_file(uid, "label", label, strlen(label)) < 0 ||
	    put_file(uid, "session", session, strlen(session)) < 0 ||
	    put_file(uid, "created", line, strlen(line)) < 0)
		return fail(HX_ERROR, "cannot write the process record");
	if (pipe2(sync, O_CLOEXEC) < 0)
		return fail(HX_ERROR, "pipe");
	if (enter(argv[4]) < 0) {
		errno = 0;
		line[0] = '\0';
		got = -1;
		goto refused;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return fail(HX_ERROR, "fork");
	if (pid == 0)
		spawn_supervisor(uid, keep, (unsigned)rows, (unsigned)cols, argv + 5, sync);
	close(sync[1]);
	waitpid(pid, NULL, 0);
	while ((size_t)got + 1 < sizeof(line) &&
	       ((n = read(sync[0], line + got, sizeof(line) - 1 - (size_t)got)) > 0 ||
		(n < 0 && errno == EINTR)))
		if (n > 0)
			got += n;
	line[got] = '\0';
refused:
	if (got <= 0 || line[0] == 'E') {
		uint64_t e = 0;
		line[strcspn(line, "\n")] = '\0';
		if (got > 0)
			parse_u64(line + 1, &e);
		/* nothing runs: no process */
		spawn_undo(uid, lp);
		if (got < 0) {
			errno = 0;
			return fail(HX_CWD, "workingDir: cannot enter it, or it is under /proc");
		}
		errno = (int)e;
		return fail(HX_EXEC, "cannot run cmd[0]");
	}
	line[strcspn(line, "\n")] = '\0';
	printf("{\"uid\":\"%s\",\"pid\":%s}\n", uid, line);
	return HX_OK;
}

/* The exit of uid into ex, as get_file. A process whose supervisor was
 * killed (the sandbox's code can: same user) has no exit written and
 * never will: its control socket is left with no one listening. Once its
 * process is gone too, that is written as its exit, 255 "lost", so that
 * every reader sees it ended; while the process still runs it is running. */
static ssize_t exit_of(const char *uid, char *ex, size_t cap)
{
	static const char lost[] = "255 lost: its supervisor was killed inside the sandbox\n";
	struct sockaddr_un a;
	char pid[32];
	ssize_t n = get_file(uid, "exit", ex, cap);
	long long cpid;
	int fd, refused;

	if (n >= 0)
		return n;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	if (path_of(a.sun_path, sizeof(a.sun_path), uid, "ctl") < 0 ||
	    (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	refused = connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno == ECONNREFUSED;
	close(fd);
	if (!refused)
		return -1; /* listening, or not yet (or no longer: the exit is next) */
	/* a supervisor that just wrote the exit and went */
	if ((n = get_file(uid, "exit", ex, cap)) >= 0)
		return n;
	cpid = get_file(uid, "pid", pid, sizeof(pid)) >= 0 ? strtoll(pid, NULL, 10) : 0;
	if (cpid > 0 && (kill((pid_t)cpid, 0) == 0 || errno != ESRCH))
		return -1;
	put_file(uid, "exit", lost, sizeof(lost) - 1);
	return get_file(uid, "exit", ex, cap);
}

/* One process's report: {"uid","pid","label","session","created","first",
 * "last","exit":{"code","reason"}}; -1 when uid names none. */
static int report(const char *uid)
{
	char label[LABEL_MAX + 2], session[4096], pid[32], created[32], ex[64], p[256];
	struct span s = { 0, 0, 0, 0 };
	ssize_t ln, sn;
	int fd;

	if (!uid_ok(uid) || (ln = get_file(uid, "label", label, sizeof(label))) < 0)
		return -1;
	sn = get_file(uid, "session", session, sizeof(session));
	if (get_file(uid, "pid", pid, sizeof(pid)) < 0)
		pid[0] = '\0';
	if (get_file(uid, "created", created, sizeof(created)) < 0)
		created[0] = '\0';
	/* the exit first: once it is there, all the output is in the log */
	if (exit_of(uid, ex, sizeof(ex)) < 0)
		ex[0] = '\0';
	if (path_of(p, sizeof(p), uid, "out") == 0 && (fd = open(p, O_RDONLY | O_CLOEXEC)) >= 0) {
		log_scan(fd, &s);
		close(fd);
	}
	printf("{\"uid\":\"%s\",\"label\":", uid);
	json_str(label, (size_t)ln);
	printf(",\"session\":");
	json_str(session, sn < 0 ? 0 : (size_t)sn);
	printf(",\"pid\":%lld,\"created\":%lld,\"first\":%llu,\"last\":%llu",
	       (long long)strtoll(pid, NULL, 10), (long long)strtoll(created, NULL, 10),
	       (unsigned long long)s.first, (unsigned long long)s.last);
	if (ex[0]) {
		char *sp = strchr(ex, ' ');
		ex[strcspn(ex, "\n")] = '\0';
		printf(",\"exit\":{\"code\":%lld,\"reason\":", (long long)strtoll(ex, NULL, 10));
		json_str(sp ? sp + 1 : "", sp ? strlen(sp + 1) : 0);
		putchar('}');
	}
	putchar('}');
	return 0;
}

static int cmd_get(int argc, char **argv)
{
	if (argc < 1)
		return fail(HX_USAGE, "usage: get UID");
	if (report(argv[0]) < 0) {
		errno = 0;
		return fail(HX_NOT_FOUND, "no such process");
	}
	putchar('\n');
	return HX_OK;
}

/* list: {"processes":[report...]} in creation order (sandpit sorts by
 * created, the order the folder lists them in is the tmpfs's). */
static int cmd_list(void)
{
	DIR *d = opendir(PROC_ROOT);
	struct dirent *de;
	int n = 0;

	printf("{\"processes\":[");
	while (d && (de = readdir(d)) && n < LIST_MAX) {
		if (!uid_ok(de->d_name))
			continue;
		if (n)
			putchar(',');
		if (report(de->d_name) == 0)
			n++;
		else if (n)
			printf("null");
	}
	if (d)
		closedir(d);
	printf("]}\n");
	return HX_OK;
}

/* read UID FROM MAXBYTES: the chunks after sequence FROM, whole, at least
 * one, then about MAXBYTES of data in at most READ_CHUNKS_MAX; HX_DROPPED when chunks after FROM are
 * no longer kept. */
static int cmd_read(int argc, char **argv)
{
	char p[256];
	uint64_t from, max;
	static unsigned char buf[CHUNK_MAX];
	struct span s;
	struct rec h;
	off_t at = 0;
	uint64_t bytes = 0;
	int fd, n = 0;

	if (argc < 3 || !uid_ok(argv[0]) || parse_u64(argv[1], &from) < 0 ||
	    parse_u64(argv[2], &max) < 0)
		return fail(HX_USAGE, "usage: read UID FROM MAXBYTES");
	if (path_of(p, sizeof(p), argv[0], "label") < 0 || access(p, F_OK) < 0) {
		errno = 0;
		return fail(HX_NOT_FOUND, "no such process");
	}
	if (report(argv[0]) < 0)
		return fail(HX_NOT_FOUND, "no such process");
	path_of(p, sizeof(p), argv[0], "out");
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		printf("\n{\"chunks\":[]}\n");
		return HX_OK;
	}
	log_scan(fd, &s);
	if (s.first && from + 1 < s.first) {
		close(fd);
		errno = 0;
		fprintf(stderr, "%llu %llu\n", (unsigned long long)s.first,
			(unsigned long long)s.last);
		return HX_DROPPED;
	}
	printf("\n{\"chunks\":[");
	while (at < s.size && pread(fd, &h, sizeof(h), at) == (ssize_t)sizeof(h) &&
	       h.len <= CHUNK_MAX) {
		at += (off_t)sizeof(h);
		if (h.seq > from) {
			if (n && (bytes + h.len > max || n >= READ_CHUNKS_MAX))
				break;
			if (pread(fd, buf, h.len, at) != (ssize_t)h.len)
				break;
			printf("%s{\"seq\":%llu,\"stream\":%u,\"data\":", n ? "," : "",
			       (unsigned long long)h.seq, h.stream);
			json_b64(buf, h.len);
			putchar('}');
			bytes += h.len;
			n++;
		}
		at += h.len;
	}
	close(fd);
	printf("]}\n");
	return HX_OK;
}

/* signal UID NUMBER: to the process's group (its own, made at the start),
 * else to the process. */
static int cmd_signal(int argc, char **argv)
{
	char pidtxt[32], ex[64];
	uint64_t sig, pid;

	if (argc < 2 || !uid_ok(argv[0]) || parse_u64(argv[1], &sig) < 0 || sig < 1 || sig > 64)
		return fail(HX_USAGE, "usage: signal UID NUMBER");
	if (get_file(argv[0], "label", ex, sizeof(ex)) < 0) {
		errno = 0;
		return fail(HX_NOT_FOUND, "no such process");
	}
	if (exit_of(argv[0], ex, sizeof(ex)) >= 0 ||
	    get_file(argv[0], "pid", pidtxt, sizeof(pidtxt)) < 0) {
		errno = 0;
		return fail(HX_EXITED, "the process has exited");
	}
	pidtxt[strcspn(pidtxt, "\n")] = '\0';
	if (parse_u64(pidtxt, &pid) < 0 || pid < 2 || pid > INT_MAX)
		return fail(HX_ERROR, "bad pid file");
	if (kill(-(pid_t)pid, (int)sig) < 0 && kill((pid_t)pid, (int)sig) < 0) {
		if (errno == ESRCH) {
			errno = 0;
			return fail(HX_EXITED, "the process has exited");
		}
		return fail(HX_ERROR, "kill");
	}
	printf("{}\n");
	return HX_OK;
}

/* --- attach ----------------------------------------------------------------- */

static void say(const char *s, size_t n)
{
	if (io_write_all(1, s, n) < 0)
		_exit(HX_ERROR); /* sandpit went away */
}

/* Sends the log's chunks after *cursor as "C <seq> <stream> <len>\n" and
 * the bytes; reopens the log when it was compacted (a new file). 0, or
 * HX_DROPPED after "D <first> <last>\n" when chunks after *cursor are no
 * longer kept. */
static int log_pump(const char *uid, int *fd, off_t *at, uint64_t *cursor)
{
	static unsigned char data[CHUNK_MAX];
	char p[256], hdr[96];
	struct stat a, b;
	struct rec h;

	if (path_of(p, sizeof(p), uid, "out") < 0 || stat(p, &a) < 0)
		return 0;
	if (*fd < 0 || fstat(*fd, &b) < 0 || a.st_ino != b.st_ino) {
		uint64_t first = 0;
		if (*fd >= 0)
			close(*fd);
		*fd = open(p, O_RDONLY | O_CLOEXEC);
		*at = 0;
		if (*fd < 0)
			return 0;
		while (pread(*fd, &h, sizeof(h), *at) == (ssize_t)sizeof(h) && h.len <= CHUNK_MAX) {
			if (!first)
				first = h.seq;
			if (h.seq > *cursor)
				break;
			*at += (off_t)sizeof(h) + h.len;
		}
		if (first && *cursor + 1 < first) {
			struct span sp;
			int n;
			log_scan(*fd, &sp);
			n = snprintf(hdr, sizeof(hdr), "D %llu %llu\n",
				     (unsigned long long)sp.first, (unsigned long long)sp.last);
			say(hdr, (size_t)n);
			return HX_DROPPED;
		}
	}
	for (;;) {
		int n;
		if (fstat(*fd, &b) < 0 || pread(*fd, &h, sizeof(h), *at) != (ssize_t)sizeof(h) ||
		    h.len > CHUNK_MAX || *at + (off_t)sizeof(h) + h.len > b.st_size)
			return 0; /* the end, or a record still being written */
		if (h.seq > *cursor) {
			if (pread(*fd, data, h.len, *at + (off_t)sizeof(h)) != (ssize_t)h.len)
				return 0;
			n = snprintf(hdr, sizeof(hdr), "C %llu %u %u\n", (unsigned long long)h.seq,
				     h.stream, h.len);
			say(hdr, (size_t)n);
			say((const char *)data, h.len);
			*cursor = h.seq;
		}
		*at += (off_t)sizeof(h) + h.len;
	}
}

static int ctl_connect(const char *uid)
{
	struct sockaddr_un a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	if (path_of(a.sun_path, sizeof(a.sun_path), uid, "ctl") < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

/* attach UID FROM: one interaction (sandpit-stream, one docker exec per
 * WebSocket). Writes "H <pty 0|1>\n", then the retained chunks after FROM
 * and every new one as it comes (log_pump), then "X <code> <reason>\n"
 * once the process has exited and all its output is out; "N\n" when UID
 * names no process, "D ..." when output after FROM is no longer kept.
 * Reads control-socket commands (I, E, R) on stdin and passes them to the
 * supervisor; R for a process without a PTY answers "F <why>\n" (sandpit
 * refuses it). Ends when stdin ends: the process goes on. */
static int cmd_attach(int argc, char **argv)
{
	static char ib[CMD_BUF], ob[CMD_BUF];
	size_t ih = 0, oh = 0;
	const char *uid;
	char p[256], ex[64], hdr[96];
	uint64_t cursor;
	off_t at = 0;
	int fd = -1, ctl, pty, n;

	if (argc < 2 || !uid_ok(argv[0]) || parse_u64(argv[1], &cursor) < 0)
		return fail(HX_USAGE, "usage: attach UID FROM");
	uid = argv[0];
	signal(SIGPIPE, SIG_IGN);
	if (path_of(p, sizeof(p), uid, "label") < 0 || access(p, F_OK) < 0) {
		say("N\n", 2);
		return HX_NOT_FOUND;
	}
	pty = get_file(uid, "pty", ex, sizeof(ex)) >= 0;
	n = snprintf(hdr, sizeof(hdr), "H %d\n", pty);
	say(hdr, (size_t)n);
	ctl = ctl_connect(uid);
	for (;;) {
		struct pollfd pf[2];
		int exited = (ctl < 0 ? exit_of(uid, ex, sizeof(ex))
				      : get_file(uid, "exit", ex, sizeof(ex))) >= 0,
		    rc;
		ssize_t r;

		/* the exit first: once it is there, all the output is in the log */
		if ((rc = log_pump(uid, &fd, &at, &cursor)) != 0)
			return rc;
		if (exited) {
			char *sp = strchr(ex, ' ');
			ex[strcspn(ex, "\n")] = '\0';
			n = snprintf(hdr, sizeof(hdr), "X %lld %s\n",
				     (long long)strtoll(ex, NULL, 10), sp ? sp + 1 : "");
			say(hdr, (size_t)n);
			return HX_OK;
		}
		pf[0].fd = oh ? -1 : 0;
		pf[0].events = POLLIN;
		pf[1].fd = ctl;
		pf[1].events = (short)(POLLIN | (oh ? POLLOUT : 0));
		/* without the socket (the supervisor ending, or full) the log is
		 * read every 200 ms */
		if (poll(pf, 2, ctl < 0 ? 200 : 1000) < 0 && errno != EINTR)
			return fail(HX_ERROR, "poll");
		if (ctl >= 0 && (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			char junk[256];
			r = read(ctl, junk, sizeof(junk));
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
				close(ctl);
				ctl = -1;
				oh = 0;
			}
		}
		if (ctl >= 0 && oh && (pf[1].revents & POLLOUT)) {
			r = write(ctl, ob, oh);
			if (r > 0) {
				memmove(ob, ob + r, oh - (size_t)r);
				oh -= (size_t)r;
			}
		}
		if (pf[0].fd >= 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			size_t off = 0;
			r = read(0, ib + ih, sizeof(ib) - ih);
			if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
				return HX_OK; /* sandpit went away: the process goes on */
			if (r < 0)
				continue;
			ih += (size_t)r;
			for (;;) {
				char kind;
				uint64_t a, b;
				size_t data;
				ssize_t k = cmd_parse(ib + off, ih - off, &kind, &a, &b, &data);
				if (k == 0)
					break;
				if (k < 0)
					return fail(HX_USAGE, "attach: a malformed command");
				if (kind == 'R' && !pty) {
					static const char f[] =
						"F resize: the process has no terminal (it was "
						"created without pty)\n";
					say(f, sizeof(f) - 1);
				} else if (ctl >= 0) {
					/* oh is 0 here: one buffer's worth always fits */
					memcpy(ob + oh, ib + off, (size_t)k);
					oh += (size_t)k;
				}
				off += (size_t)k;
			}
			memmove(ib, ib + off, ih - off);
			ih -= off;
		}
	}
}

int main(int argc, char **argv)
{
	/* Not dumpable, first thing, in every command: a process of the
	 * sandbox's (the same uid, no CAP_SYS_PTRACE) can then neither open
	 * this one's /proc/PID/fd (write into the stdout sandpit parses, read
	 * the secret `serve` is given) nor its memory. Under runc the binary
	 * is installed execute-only (mode 0111, helper.c), which already makes
	 * execve leave the process non-dumpable from its first instruction:
	 * this call is what holds where the runtime needs read permission to
	 * execute (gVisor runs a readable copy), and it narrows the window
	 * there to the few instructions before it. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (argc < 2)
		return fail(HX_USAGE, "usage: sandpit-helper spawn|get|list|read|signal ...");
	errno = 0;
	if (strcmp(argv[1], HC_SPAWN) == 0)
		return cmd_spawn(argc - 2, argv + 2, 0);
	if (strcmp(argv[1], HC_START) == 0)
		return cmd_spawn(argc - 2, argv + 2, 1);
	if (strcmp(argv[1], HC_ATTACH) == 0)
		return cmd_attach(argc - 2, argv + 2);
	if (strcmp(argv[1], HC_GET) == 0)
		return cmd_get(argc - 2, argv + 2);
	if (strcmp(argv[1], HC_LIST) == 0)
		return cmd_list();
	if (strcmp(argv[1], HC_READ) == 0)
		return cmd_read(argc - 2, argv + 2);
	if (strcmp(argv[1], HC_SIGNAL) == 0)
		return cmd_signal(argc - 2, argv + 2);
	if (strcmp(argv[1], HC_SERVE) == 0)
		return serve_main(argc - 2, argv + 2);
	{
		int rc = files_main(argv[1], argc - 2, argv + 2);
		if (rc >= 0)
			return rc;
	}
	{
		int rc = clock_main(argv[1], argc - 2, argv + 2);
		if (rc >= 0)
			return rc;
	}
	if (strcmp(argv[1], HC_VERSION) == 0) {
		printf("{\"helper\":1}\n");
		return HX_OK;
	}
	return fail(HX_USAGE, "unknown operation");
}
