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
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "files.h"

#define PROC_ROOT "/.sandpit/p"
#define CHUNK_MAX 32768
#define LABEL_MAX 128
#define LIST_MAX 1000

/* exit statuses sandpit maps (sandbox/process.c) */
#define HX_OK 0
#define HX_ERROR 1
#define HX_USAGE 2
#define HX_NOT_FOUND 3
#define HX_DROPPED 4
#define HX_LABEL_TAKEN 5
#define HX_EXITED 6
#define HX_EXEC 7
#define HX_CWD 8

/* one retained chunk on disk: this header, then len bytes */
struct rec {
	uint64_t seq;
	uint32_t len;
	uint8_t stream; /* 1 stdout, 2 stderr (3 pty, later) */
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

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
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
	rc = write_all(fd, data, len);
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
		if (n <= 0 || write_all(nfd, buf, (size_t)n) < 0) {
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

/* The supervisor: runs argv with its output on pipes, keeps every read as a
 * chunk, then the exit status. ready gets "<pid>\n" once argv is running or
 * "E<errno>\n" when it could not be run. Never returns. */
static void supervise(const char *uid, uint64_t keep, char **argv, int ready)
{
	int out[2], err[2], ex[2], logfd, open_fds = 2, status = 0, reaped = 0;
	char p[256], msg[64];
	unsigned char buf[CHUNK_MAX];
	uint64_t seq = 0, since = 0;
	pid_t pid;
	struct pollfd pf[2];

	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || pipe2(ex, O_CLOEXEC) < 0)
		goto early;
	if (path_of(p, sizeof(p), uid, "out") < 0 ||
	    (logfd = open(p, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) < 0)
		goto early;
	pid = fork();
	if (pid < 0)
		goto early;
	if (pid == 0) {
		int e;
		int nul = open("/dev/null", O_RDONLY);
		setpgid(0, 0);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
			_exit(127);
		sig_default();
		unsetenv("SANDPIT_EXEC");
		execvp(argv[0], argv);
		e = errno;
		if (write(ex[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	setpgid(pid, pid);
	close(out[1]);
	close(err[1]);
	close(ex[1]);
	{
		int e = 0;
		ssize_t n;
		while ((n = read(ex[0], &e, sizeof(e))) < 0 && errno == EINTR)
			;
		close(ex[0]);
		if (n == (ssize_t)sizeof(e)) {
			snprintf(msg, sizeof(msg), "E%d\n", e);
			if (write(ready, msg, strlen(msg)) < 0)
				_exit(1);
			waitpid(pid, NULL, 0);
			_exit(0);
		}
	}
	snprintf(msg, sizeof(msg), "%d\n", (int)pid);
	put_file(uid, "pid", msg, strlen(msg));
	if (write(ready, msg, strlen(msg)) < 0)
		_exit(1);
	close(ready);
	pf[0].fd = out[0];
	pf[1].fd = err[0];
	pf[0].events = pf[1].events = POLLIN;
	while (open_fds > 0) {
		int n = poll(pf, 2, reaped ? 100 : 1000);
		if (n < 0 && errno != EINTR)
			break;
		if (!reaped && waitpid(pid, &status, WNOHANG) == pid)
			reaped = 1;
		if (n == 0 && reaped)
			break; /* its children keep the pipes: what they print later is lost */
		for (int i = 0; n > 0 && i < 2; i++) {
			ssize_t r;
			if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = read(pf[i].fd, buf, sizeof(buf));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				close(pf[i].fd);
				pf[i].fd = -1;
				open_fds--;
				continue;
			}
			{
				struct rec h = { ++seq, (uint32_t)r, (uint8_t)(i + 1), { 0 } };
				struct iovec v[2] = { { &h, sizeof(h) }, { buf, (size_t)r } };
				/* the tmpfs full: this chunk is lost, its number
				 * is reused */
				if (writev(logfd, v, 2) < 0)
					seq--;
				since += (uint64_t)r + sizeof(h);
			}
			if (since > 2 * keep) {
				logfd = log_compact(uid, logfd, keep);
				if (logfd < 0)
					_exit(1);
				since = (uint64_t)lseek(logfd, 0, SEEK_END);
			}
		}
	}
	if (!reaped)
		waitpid(pid, &status, 0);
	if (WIFSIGNALED(status))
		snprintf(msg, sizeof(msg), "%d signal %d\n", 128 + WTERMSIG(status),
			 WTERMSIG(status));
	else
		snprintf(msg, sizeof(msg), "%d exited\n", WEXITSTATUS(status));
	put_file(uid, "exit", msg, strlen(msg));
	_exit(0);
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

/* spawn UID RETENTION LABEL SESSION CWD ARGV...: {"uid","pid"} once ARGV
 * runs in CWD. */
static int cmd_spawn(int argc, char **argv)
{
	const char *uid = argv[0], *label = argv[2], *session = argv[3];
	char p[256], lp[300], hex[2 * LABEL_MAX + 1], line[64];
	uint64_t keep;
	int sync[2], fd;
	ssize_t n = 0, got = 0;
	pid_t pid;
	struct timespec ts;

	if (argc < 6 || !uid_ok(uid) || parse_u64(argv[1], &keep) < 0 || keep < 65536 ||
	    strlen(label) > LABEL_MAX)
		return fail(HX_USAGE, "usage: spawn UID RETENTION LABEL SESSION CWD ARGV...");
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
	if (write_all(fd, uid, strlen(uid)) < 0) {
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
	if (pid == 0) {
		int nul;
		setsid();
		if (fork() != 0)
			_exit(0);
		/* the supervisor: no descriptor of docker exec's, no terminal */
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
		supervise(uid, keep, argv + 5, sync[1]);
	}
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
		unlink(lp);
		path_of(lp, sizeof(lp), uid, NULL);
		{
			static const char *const files[] = { "label", "session", "created", "out",
							     "pid" };
			for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
				char f[256];
				if (path_of(f, sizeof(f), uid, files[i]) == 0)
					unlink(f);
			}
		}
		rmdir(lp);
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
	if (get_file(uid, "exit", ex, sizeof(ex)) < 0)
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
 * one, then about MAXBYTES of data; HX_DROPPED when chunks after FROM are
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
			if (n && bytes + h.len > max)
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
	if (get_file(argv[0], "exit", ex, sizeof(ex)) >= 0 ||
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

int main(int argc, char **argv)
{
	if (argc < 2)
		return fail(HX_USAGE, "usage: sandpit-helper spawn|get|list|read|signal ...");
	errno = 0;
	if (strcmp(argv[1], "spawn") == 0)
		return cmd_spawn(argc - 2, argv + 2);
	if (strcmp(argv[1], "get") == 0)
		return cmd_get(argc - 2, argv + 2);
	if (strcmp(argv[1], "list") == 0)
		return cmd_list();
	if (strcmp(argv[1], "read") == 0)
		return cmd_read(argc - 2, argv + 2);
	if (strcmp(argv[1], "signal") == 0)
		return cmd_signal(argc - 2, argv + 2);
	{
		int rc = files_main(argv[1], argc - 2, argv + 2);
		if (rc >= 0)
			return rc;
	}
	if (strcmp(argv[1], "version") == 0) {
		printf("{\"helper\":1}\n");
		return HX_OK;
	}
	return fail(HX_USAGE, "unknown operation");
}
