/*
 * The file commands of sandpit-helper (issue 16), the core of the /v1
 * file operations (sandbox/files_v1.c). Each runs as the sandbox's user,
 * so a planted symlink or a swap race (RELIABILITY F2, F3) reaches only
 * what that user could reach anyway; on top of that the operations that
 * the document defines on the path itself never follow its last
 * component: stat and list classify with lstat (a link that resolves is
 * reported as its target's type, one that does not as symlink), move is
 * one rename(2) (never a copy), remove unlinks a link and walks a tree
 * with openat(O_NOFOLLOW|O_DIRECTORY) from the directory it opened, so a
 * directory swapped for a link mid-walk is unlinked, never entered.
 * There is no umask: the mode given is the mode set (fchmod after the
 * create). Answers are one JSON object on stdout (cat: the raw bytes); a
 * refusal is an exit status (HF_*) with one line on stderr.
 */
#define _GNU_SOURCE
#include "files.h"
#include "io.h"
#include "proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define LIST_MAX 100000
#define REMOVE_SHOWN 1000
#define COPY_BUF 65536
#define XFER_BUF (256 * 1024)

static int ffail(int code, const char *what, int err)
{
	fprintf(stderr, "%s%s%s\n", what, err ? ": " : "", err ? strerror(err) : "");
	return code;
}

/* The HF_ status of a failed call's errno. */
static int errno_code(int err)
{
	switch (err) {
	case ENOENT:
		return HF_NOT_FOUND;
	case EACCES:
	case EPERM:
	case EROFS:
		return HF_DENIED;
	case ENOTDIR:
		return HF_NOT_DIR;
	case EISDIR:
		return HF_IS_DIR;
	case ENOTEMPTY:
	case EEXIST:
		return HF_NOT_EMPTY;
	case EXDEV:
		return HF_XDEV;
	case ENOSPC:
	case EDQUOT:
		return HF_NO_SPACE;
	case ELOOP:
	case ENAMETOOLONG:
	case EINVAL:
	case EBUSY:
		return HF_INVALID;
	case ENXIO:
	case ENODEV:
		return HF_NONREG;
	default:
		return HF_ERROR;
	}
}

static int efail(const char *what)
{
	int err = errno;

	return ffail(errno_code(err), what, err);
}

/* A larger pipe where fd is one (stdin, stdout through docker exec):
 * fewer round trips between this process and the runtime's copier. Best
 * effort: a kernel or runtime that refuses keeps its size. */
static void pipe_grow(int fd)
{
#ifdef F_SETPIPE_SZ
	(void)fcntl(fd, F_SETPIPE_SZ, 1 << 20);
#else
	(void)fd;
#endif
}

static void jstr(const char *s)
{
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

/* One FileInfo for path, whose lstat is ls. A link is reported as the
 * type of what it resolves to (stat, as this user), or as symlink with
 * its readlink text when it does not resolve. sandpit checks and
 * re-encodes every member (and the path's UTF-8). */
static void info_print(const char *path, const struct stat *ls)
{
	struct stat st = *ls;
	const char *type = "other";
	char target[PATH_MAX + 1] = "";

	if (S_ISLNK(ls->st_mode)) {
		if (stat(path, &st) < 0) {
			ssize_t n = readlink(path, target, sizeof(target) - 1);
			target[n > 0 ? n : 0] = '\0';
			st = *ls;
		}
	}
	if (S_ISLNK(st.st_mode))
		type = "symlink";
	else if (S_ISREG(st.st_mode))
		type = "regular";
	else if (S_ISDIR(st.st_mode))
		type = "directory";
	printf("{\"path\":");
	jstr(path);
	printf(",\"size\":%lld,\"mode\":%u,\"type\":\"%s\",\"linkTarget\":", (long long)st.st_size,
	       (unsigned)(st.st_mode & 0777), type);
	jstr(target);
	/* the entry's own change time of its data, in ms (the Dokploy face's
	 * modifiedAt; the /v1 FileInfo has none) */
	printf(",\"mtime\":%lld}",
	       (long long)ls->st_mtim.tv_sec * 1000 + ls->st_mtim.tv_nsec / 1000000);
}

static int parse_num(const char *s, unsigned long long *v)
{
	char *end;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end ? -1 : 0;
}

/* stat PATH */
static int cmd_stat(int argc, char **argv)
{
	struct stat ls;

	if (argc != 1)
		return ffail(HF_USAGE, "usage: stat PATH", 0);
	if (lstat(argv[0], &ls) < 0)
		return efail("stat");
	printf("{\"info\":");
	info_print(argv[0], &ls);
	printf("}\n");
	return HF_OK;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ls PATH SKIP MAX: the entries by name (bytewise), MAX of them after the
 * first SKIP, then {"more":true} when some follow. */
static int cmd_ls(int argc, char **argv)
{
	unsigned long long skip, max;
	char **names = NULL, full[PATH_MAX];
	size_t n = 0, cap = 0;
	struct dirent *d;
	DIR *dir;
	int dfd;

	if (argc != 3 || parse_num(argv[1], &skip) < 0 || parse_num(argv[2], &max) < 0)
		return ffail(HF_USAGE, "usage: ls PATH SKIP MAX", 0);
	dfd = open(argv[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return efail("list");
	dir = fdopendir(dfd);
	if (!dir)
		return efail("list");
	while ((d = readdir(dir))) {
		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		if (n == LIST_MAX)
			return ffail(HF_TOO_BIG, "the directory has over 100000 entries", 0);
		if (n == cap) {
			char **nn = realloc(names, (cap ? cap * 2 : 256) * sizeof(*names));
			if (!nn)
				return ffail(HF_ERROR, "out of memory", 0);
			names = nn;
			cap = cap ? cap * 2 : 256;
		}
		names[n] = strdup(d->d_name);
		if (!names[n])
			return ffail(HF_ERROR, "out of memory", 0);
		n++;
	}
	qsort(names, n, sizeof(*names), name_cmp);
	printf("{\"entries\":[");
	for (size_t i = (size_t)skip, k = 0; i < n && k < max; i++, k++) {
		struct stat ls;
		const char *sep = argv[0][strlen(argv[0]) - 1] == '/' ? "" : "/";
		if ((size_t)snprintf(full, sizeof(full), "%s%s%s", argv[0], sep, names[i]) >=
		    sizeof(full))
			continue;
		if (fstatat(dfd, names[i], &ls, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone since readdir */
		if (k)
			putchar(',');
		info_print(full, &ls);
	}
	printf("],\"more\":%s}\n", skip + max < n ? "true" : "false");
	return HF_OK;
}

/* cat PATH CAP: a regular file of at most CAP bytes: its size as 8
 * big-endian bytes, then exactly that many bytes, so sandpit can send an
 * exact Content-Length before the bytes and stream them. A FIFO or device
 * is refused before it is read (O_NONBLOCK, fstat), so none hangs the
 * call; a file over CAP is refused whole. Bytes appended after the open
 * are not sent (the size is the one at the open); a file that shrinks
 * while read ends with HF_CHANGED after what was read, which sandpit
 * turns into a cut answer, never a short one that looks whole. */
static int cmd_cat(int argc, char **argv)
{
	unsigned long long cap, left;
	static char buf[XFER_BUF];
	unsigned char h[8];
	struct stat st;
	int fd;

	if (argc != 2 || parse_num(argv[1], &cap) < 0)
		return ffail(HF_USAGE, "usage: cat PATH CAP", 0);
	fd = open(argv[0], O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return efail("readFile");
	if (fstat(fd, &st) < 0)
		return efail("readFile");
	if (S_ISDIR(st.st_mode))
		return ffail(HF_IS_DIR, "the path is a directory", 0);
	if (!S_ISREG(st.st_mode))
		return ffail(HF_NONREG, "the path is not a regular file", 0);
	if ((unsigned long long)st.st_size > cap)
		return ffail(HF_TOO_BIG, "the file is over the unary cap", 0);
	left = (unsigned long long)st.st_size;
	pipe_grow(1);
	for (int i = 0; i < 8; i++)
		h[i] = (unsigned char)(left >> (56 - 8 * i));
	if (io_write_all(1, h, 8) < 0)
		return ffail(HF_ERROR, "write", errno);
	while (left) {
		ssize_t r = read(fd, buf, left < sizeof(buf) ? (size_t)left : sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return efail("readFile");
		if (r == 0)
			return ffail(HF_CHANGED, "the file shrank while it was read", 0);
		if (io_write_all(1, buf, (size_t)r) < 0)
			return ffail(HF_ERROR, "write", errno);
		left -= (unsigned long long)r;
	}
	return HF_OK;
}

/* put PATH MODE LEN: exactly LEN bytes from stdin replace the regular
 * file at PATH (created when absent), which then has mode MODE & 0777
 * (0644 when that is 0), umask aside. An existing non-regular object is
 * refused before anything is written (O_NONBLOCK: a FIFO without a
 * reader is ENXIO, never a hang). */
static int cmd_put(int argc, char **argv)
{
	unsigned long long mode, len, left;
	static char buf[XFER_BUF];
	struct stat st;
	int fd;

	if (argc != 3 || parse_num(argv[1], &mode) < 0 || parse_num(argv[2], &len) < 0)
		return ffail(HF_USAGE, "usage: put PATH MODE LEN", 0);
	mode &= 0777;
	pipe_grow(0);
	if (!mode)
		mode = 0644;
	fd = open(argv[0], O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, (mode_t)mode);
	if (fd < 0)
		return efail("writeFile");
	if (fstat(fd, &st) < 0)
		return efail("writeFile");
	if (!S_ISREG(st.st_mode))
		return ffail(HF_NONREG, "the path is not a regular file", 0);
	if (ftruncate(fd, 0) < 0 || fchmod(fd, (mode_t)mode) < 0)
		return efail("writeFile");
	for (left = len; left;) {
		size_t want = left < sizeof(buf) ? (size_t)left : sizeof(buf);
		ssize_t r = read(0, buf, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return ffail(HF_ERROR, "the body ended early", 0);
		if (io_write_all(fd, buf, (size_t)r) < 0)
			return efail("writeFile");
		left -= (unsigned long long)r;
	}
	if (fstat(fd, &st) < 0 || close(fd) < 0)
		return efail("writeFile");
	printf("{\"info\":");
	info_print(argv[0], &st);
	printf("}\n");
	return HF_OK;
}

/* One mkdir with the exact mode (umask aside: chmod after). 0 made, 1 a
 * directory was there (left unchanged), -1 errno set. */
static int mkdir_one(const char *path, mode_t mode)
{
	struct stat st;

	if (mkdir(path, mode) == 0)
		return chmod(path, mode) < 0 ? -1 : 0;
	if (errno != EEXIST)
		return -1;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return 1;
	errno = EEXIST;
	return -1;
}

/* mkdir PATH MODE PARENTS(0|1): the leaf gets MODE & 0777 (0755 when 0);
 * missing parents, with PARENTS, get 0755. A leaf already a directory
 * converges (its mode unchanged); anything else there is refused. */
static int cmd_mkdir(int argc, char **argv)
{
	unsigned long long mode;
	char path[PATH_MAX];
	size_t n;

	if (argc != 3 || parse_num(argv[1], &mode) < 0 ||
	    (strcmp(argv[2], "0") != 0 && strcmp(argv[2], "1") != 0))
		return ffail(HF_USAGE, "usage: mkdir PATH MODE PARENTS", 0);
	mode &= 0777;
	if (!mode)
		mode = 0755;
	n = strlen(argv[0]);
	if (n >= sizeof(path))
		return ffail(HF_INVALID, "path too long", 0);
	memcpy(path, argv[0], n + 1);
	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	if (argv[2][0] == '1') {
		for (char *p = path + 1; *p; p++) {
			if (*p != '/')
				continue;
			*p = '\0';
			if (mkdir_one(path, 0755) < 0) {
				int err = errno;
				if (err == EEXIST)
					return ffail(HF_NOT_DIR, "a parent is not a directory", 0);
				return ffail(errno_code(err), "mkdir", err);
			}
			*p = '/';
		}
	}
	if (mkdir_one(path, (mode_t)mode) < 0) {
		int err = errno;
		if (err == EEXIST)
			return ffail(HF_EXISTS, "the path exists and is not a directory", 0);
		return ffail(errno_code(err), "mkdir", err);
	}
	printf("{}\n");
	return HF_OK;
}

/* mv FROM TO: one rename(2), never a copy. A file onto a directory and a
 * directory onto anything are refused; a directory moves with
 * RENAME_NOREPLACE where the kernel has it, so a path made at TO meanwhile
 * is not replaced. */
static int cmd_mv(int argc, char **argv)
{
	struct stat fs, ts;
	int to_exists;

	if (argc != 2)
		return ffail(HF_USAGE, "usage: mv FROM TO", 0);
	if (lstat(argv[0], &fs) < 0)
		return efail("move: from");
	to_exists = lstat(argv[1], &ts) == 0;
	if (!to_exists && errno != ENOENT)
		return efail("move: to");
	if (to_exists && S_ISDIR(fs.st_mode))
		return ffail(HF_OCCUPIED, "", 0);
	if (to_exists && S_ISDIR(ts.st_mode))
		return ffail(HF_DEST_DIR, "", 0);
	if (S_ISDIR(fs.st_mode)) {
#ifdef SYS_renameat2
		if (syscall(SYS_renameat2, AT_FDCWD, argv[0], AT_FDCWD, argv[1], 1u) == 0)
			goto done;
		if (errno == EEXIST || errno == ENOTEMPTY)
			return ffail(HF_OCCUPIED, "", 0);
		if (errno != ENOSYS && errno != EINVAL)
			return efail("move");
#endif
	}
	if (rename(argv[0], argv[1]) < 0) {
		if (errno == EISDIR)
			return ffail(HF_DEST_DIR, "", 0);
		if (errno == ENOTEMPTY || errno == EEXIST)
			return ffail(HF_OCCUPIED, "", 0);
		return efail("move");
	}
#ifdef SYS_renameat2
done:
#endif
	printf("{}\n");
	return HF_OK;
}

struct rm_state {
	unsigned long long count;
	int failed;
	char failed_path[PATH_MAX];
};

static void rm_done(struct rm_state *s, const char *path)
{
	if (s->count < REMOVE_SHOWN) {
		putchar(s->count ? ',' : '[');
		jstr(path);
	}
	s->count++;
}

static void rm_fail(struct rm_state *s, const char *path, int err)
{
	s->failed = 1;
	snprintf(s->failed_path, sizeof(s->failed_path), "%s", path);
	fprintf(stderr, "%s: %s\n", path, strerror(err));
}

/* Removes the entries of the directory dfd (opened O_NOFOLLOW, the path
 * it had is `path`), depth first, then nothing else: the caller removes
 * the directory itself. Stops at the first failure. */
static void rm_tree(int dfd, const char *path, struct rm_state *s, int depth)
{
	DIR *dir = fdopendir(dfd);
	struct dirent *d;
	char full[PATH_MAX];

	if (!dir) {
		rm_fail(s, path, errno);
		close(dfd);
		return;
	}
	while (!s->failed && (d = readdir(dir))) {
		struct stat st;
		const char *sep = path[strlen(path) - 1] == '/' ? "" : "/";
		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(full, sizeof(full), "%s%s%s", path, sep, d->d_name) >=
		    sizeof(full)) {
			rm_fail(s, path, ENAMETOOLONG);
			break;
		}
		if (fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			rm_fail(s, full, errno);
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			int sub;
			if (depth > 4096) {
				rm_fail(s, full, ELOOP);
				break;
			}
			sub = openat(dirfd(dir), d->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				rm_fail(s, full, errno);
				break;
			}
			rm_tree(sub, full, s, depth + 1);
			if (s->failed)
				break;
			if (unlinkat(dirfd(dir), d->d_name, AT_REMOVEDIR) < 0) {
				rm_fail(s, full, errno);
				break;
			}
		} else if (unlinkat(dirfd(dir), d->d_name, 0) < 0) {
			if (errno == ENOENT)
				continue;
			rm_fail(s, full, errno);
			break;
		}
		rm_done(s, full);
		/* entries removed: readdir goes on from where it was */
	}
	closedir(dir);
}

/* rm PATH RECURSIVE(0|1): an absent path is fine; a link is unlinked,
 * never followed; a directory without RECURSIVE must be empty. A
 * recursive removal that stops answers OK with failedPath. */
static int cmd_rm(int argc, char **argv)
{
	struct rm_state s = { 0, 0, "" };
	struct stat st;

	if (argc != 2 || (strcmp(argv[1], "0") != 0 && strcmp(argv[1], "1") != 0))
		return ffail(HF_USAGE, "usage: rm PATH RECURSIVE", 0);
	if (strcmp(argv[0], "/") == 0)
		return ffail(HF_INVALID, "the root cannot be removed", 0);
	if (lstat(argv[0], &st) < 0) {
		if (errno == ENOENT) {
			printf("{\"completedPaths\":[],\"completedCount\":0,\"failedPath\":\"\"}\n");
			return HF_OK;
		}
		return efail("remove");
	}
	if (!S_ISDIR(st.st_mode)) {
		if (unlink(argv[0]) < 0 && errno != ENOENT)
			return efail("remove");
	} else if (argv[1][0] == '0') {
		if (rmdir(argv[0]) < 0) {
			if (errno == ENOTEMPTY || errno == EEXIST)
				return ffail(HF_NOT_EMPTY, "", 0);
			return efail("remove");
		}
	} else {
		int dfd = open(argv[0], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		printf("{\"completedPaths\":");
		if (dfd < 0)
			rm_fail(&s, argv[0], errno);
		else
			rm_tree(dfd, argv[0], &s, 0);
		if (!s.failed && rmdir(argv[0]) < 0 && errno != ENOENT)
			rm_fail(&s, argv[0], errno);
		if (!s.failed)
			rm_done(&s, argv[0]);
		printf("%s,\"completedCount\":%llu,\"failedPath\":", s.count ? "]" : "[]", s.count);
		jstr(s.failed_path);
		printf("}\n");
		return HF_OK;
	}
	printf("{\"completedPaths\":[");
	jstr(argv[0]);
	printf("],\"completedCount\":1,\"failedPath\":\"\"}\n");
	return HF_OK;
}

/* --- upload and download: framed streams -------------------------------- */

#define XFER_PIECE_MAX HU_DATA_MAX

static void be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* stdin, read in large pieces */
static struct {
	unsigned char buf[XFER_BUF];
	size_t have, off;
} in;

/* Reads exactly n bytes from stdin into p (NULL: into fd, -1 = drop); 0,
 * -1 at its end or on an error (errno 0 for the end). */
static int in_read(void *p, size_t n, int fd)
{
	unsigned char *o = p;

	while (n) {
		size_t k;
		if (in.off == in.have) {
			ssize_t r = read(0, in.buf, sizeof(in.buf));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				if (r == 0)
					errno = 0;
				return -1;
			}
			in.have = (size_t)r;
			in.off = 0;
		}
		k = in.have - in.off < n ? in.have - in.off : n;
		if (o) {
			memcpy(o, in.buf + in.off, k);
			o += k;
		} else if (fd >= 0 && io_write_all(fd, in.buf + in.off, k) < 0) {
			return -2;
		}
		in.off += k;
		n -= k;
	}
	return 0;
}

/* A refusal of item idx: "IDX message" on stderr, the status. */
static int item_fail(int code, long long idx, const char *what, int err)
{
	fprintf(stderr, "%lld %s%s%s\n", idx, what, err ? ": " : "", err ? strerror(err) : "");
	return code;
}

struct upload_item {
	char target[PATH_MAX], tmp[PATH_MAX + 64];
	int fd;
	mode_t mode;
};

/* Where item's bytes go: the path itself, or, when it names a regular file
 * through symlinks, that file (resolved as this user). The bytes land in a
 * temporary file beside it, renamed over it at the commit, so an item cut
 * short never replaces anything. An existing non-regular object (a
 * directory, FIFO, device, socket) is refused. */
static int upload_start(struct upload_item *it, const char *path, mode_t mode, long long idx)
{
	struct stat st;
	const char *slash;
	size_t dlen;

	it->fd = -1;
	it->mode = mode;
	if (stat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode))
			return item_fail(HF_NONREG, idx, "the path is not a regular file", 0);
		if (!realpath(path, it->target))
			return item_fail(errno_code(errno), idx, "upload", errno);
		/* replacing it needs the right to write it, as writeFile does
		 * (a rename alone would need only the directory's) */
		it->fd = open(it->target, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (it->fd < 0)
			return item_fail(errno_code(errno), idx, "upload", errno);
		close(it->fd);
		it->fd = -1;
	} else {
		if (errno != ENOENT)
			return item_fail(errno_code(errno), idx, "upload", errno);
		if (strlen(path) >= sizeof(it->target))
			return item_fail(HF_INVALID, idx, "path too long", 0);
		memcpy(it->target, path, strlen(path) + 1);
	}
	slash = strrchr(it->target, '/');
	if (!slash || !slash[1])
		return item_fail(HF_INVALID, idx, "the path names no file", 0);
	dlen = (size_t)(slash - it->target);
	snprintf(it->tmp, sizeof(it->tmp), "%.*s/.sandpit-upload.%ld.%lld", (int)dlen, it->target,
		 (long)getpid(), idx);
	it->fd = open(it->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (it->fd < 0)
		return item_fail(errno_code(errno), idx, "upload", errno);
	if (fchmod(it->fd, mode) < 0) {
		int err = errno;
		close(it->fd);
		unlink(it->tmp);
		it->fd = -1;
		return item_fail(errno_code(err), idx, "upload", err);
	}
	return HF_OK;
}

static void upload_drop(struct upload_item *it)
{
	if (it->fd >= 0) {
		close(it->fd);
		unlink(it->tmp);
		it->fd = -1;
	}
}

static int upload_commit(struct upload_item *it, long long idx)
{
	int fd = it->fd;

	it->fd = -1;
	if (close(fd) < 0 || rename(it->tmp, it->target) < 0) {
		int err = errno;
		unlink(it->tmp);
		if (err == EISDIR || err == ENOTEMPTY || err == EEXIST)
			return item_fail(HF_NONREG, idx, "the path is not a regular file", 0);
		return item_fail(errno_code(err), idx, "upload", err);
	}
	return HF_OK;
}

/* upload CAP: frames on stdin, big-endian lengths:
 *   'F' mode:u32 len:u32 path[len]   a file starts
 *   'D' len:u32 bytes[len]           its bytes (len at most 1 MiB)
 *   'C'                              it is complete: it replaces the path
 *   'Q'                              the end: {"filesWritten":N}
 * At most CAP bytes of content in all. A refusal names the item (its
 * index, from 0) on stderr; what was committed before it stays. Input
 * that ends without 'Q' drops the item under way (HF_TRUNCATED). */
static int upload_loop(unsigned long long cap, unsigned long long *writtenp);

static int cmd_upload(int argc, char **argv)
{
	unsigned long long cap, written = 0;
	int rc;

	if (argc != 1 || parse_num(argv[0], &cap) < 0)
		return ffail(HF_USAGE, "usage: upload CAP", 0);
	signal(SIGPIPE, SIG_IGN);
	pipe_grow(0);
	rc = upload_loop(cap, &written);
	printf("{\"filesWritten\":%llu}\n", written);
	return rc;
}

static int upload_loop(unsigned long long cap, unsigned long long *writtenp)
{
	static struct upload_item it;
	unsigned long long total = 0, written = 0;
	long long idx = -1;
	char path[PATH_MAX + 1];
	unsigned char h[8];
	int rc;

	it.fd = -1;
	for (;;) {
		unsigned char t;
		if (in_read(&t, 1, -1) < 0)
			break;
		switch (t) {
		case HU_FILE: {
			uint32_t mode, len;
			if (it.fd >= 0 || in_read(h, 8, -1) < 0)
				goto bad;
			mode = rd32(h) & 0777;
			len = rd32(h + 4);
			if (len == 0 || len > PATH_MAX || in_read(path, len, -1) < 0)
				goto bad;
			path[len] = '\0';
			if (memchr(path, '\0', len) || path[0] != '/')
				goto bad;
			idx++;
			rc = upload_start(&it, path, mode ? (mode_t)mode : 0644, idx);
			if (rc != HF_OK)
				return rc;
			break;
		}
		case HU_DATA: {
			uint32_t len;
			if (it.fd < 0 || in_read(h, 4, -1) < 0)
				goto bad;
			len = rd32(h);
			if (len > XFER_PIECE_MAX)
				goto bad;
			total += len;
			if (total > cap) {
				upload_drop(&it);
				return item_fail(HF_TOO_BIG, idx, "over the streamed cap", 0);
			}
			rc = in_read(NULL, len, it.fd);
			if (rc == -2) {
				int err = errno;
				upload_drop(&it);
				return item_fail(errno_code(err), idx, "upload", err);
			}
			if (rc < 0)
				goto cut;
			break;
		}
		case HU_COMMIT:
			if (it.fd < 0)
				goto bad;
			rc = upload_commit(&it, idx);
			if (rc != HF_OK)
				return rc;
			*writtenp = ++written;
			break;
		case HU_END:
			if (it.fd >= 0)
				goto bad;
			return HF_OK;
		default:
			goto bad;
		}
	}
cut:
	upload_drop(&it);
	return item_fail(HF_TRUNCATED, idx, "the stream ended before its end", 0);
bad:
	upload_drop(&it);
	return item_fail(HF_USAGE, idx, "malformed upload stream", 0);
}

/* Writes one frame: tag, then (len >= 0) a big-endian u32 len and len
 * bytes of p. -1 when stdout is gone. */
static int frame(unsigned char tag, const void *p, long len)
{
	unsigned char h[5] = { tag, 0, 0, 0, 0 };
	struct iovec v[2] = { { h, 1 }, { (void *)p, len > 0 ? (size_t)len : 0 } };
	size_t want;

	if (len >= 0) {
		be32(h + 1, (uint32_t)len);
		v[0].iov_len = 5;
	}
	want = v[0].iov_len + v[1].iov_len;
	for (;;) {
		ssize_t w = writev(1, v, 2);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if ((size_t)w == want)
			return 0;
		/* a short write: the rest, plainly */
		if ((size_t)w < v[0].iov_len)
			return io_write_all(1, h + w, v[0].iov_len - (size_t)w) < 0 ||
					       io_write_all(1, p, v[1].iov_len) < 0
				       ? -1
				       : 0;
		return io_write_all(1, (const char *)p + ((size_t)w - v[0].iov_len),
				    want - (size_t)w) < 0
			       ? -1
			       : 0;
	}
}

/* An error frame ('E' for an item, 'X' for the stream): code, then the
 * message. */
static int frame_err(unsigned char tag, int code, const char *what, int err)
{
	char msg[300];
	int n = snprintf(msg + 1, sizeof(msg) - 1, "%s%s%s", what, err ? ": " : "",
			 err ? strerror(err) : "");

	msg[0] = (char)code;
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(msg) - 2)
		n = (int)sizeof(msg) - 2;
	return frame(tag, msg, n + 1);
}

/* download CAP PATH...: for each path in order, frames on stdout:
 *   'H' len=4 mode:u32     the file starts
 *   'D' len bytes          its bytes
 *   'Z'                    its end
 * or 'E' len code:u8 message, when it cannot be read (absent, not a
 * regular file, not this user's to read, over what is left of CAP). A
 * failure once its bytes have started ends the stream with 'X' (same
 * shape). A FIFO or device is refused before it is read (O_NONBLOCK,
 * fstat), so none hangs the call. */
static int cmd_download(int argc, char **argv)
{
	static unsigned char buf[XFER_BUF];
	unsigned long long cap, total = 0;

	if (argc < 2 || parse_num(argv[0], &cap) < 0)
		return ffail(HF_USAGE, "usage: download CAP PATH...", 0);
	signal(SIGPIPE, SIG_IGN);
	pipe_grow(1);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		unsigned char m[4];
		int fd = open(argv[i], O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		int rc = 0;
		if (fd < 0) {
			rc = frame_err(HD_ITEM, errno_code(errno), "download", errno);
		} else if (fstat(fd, &st) < 0) {
			rc = frame_err(HD_ITEM, errno_code(errno), "download", errno);
		} else if (!S_ISREG(st.st_mode)) {
			rc = frame_err(HD_ITEM, HF_NONREG, "the path is not a regular file", 0);
		} else if ((unsigned long long)st.st_size > cap - total) {
			rc = frame_err(HD_ITEM, HF_TOO_BIG,
				       "the file is over what is left of the cap", 0);
		} else {
			be32(m, (uint32_t)(st.st_mode & 0777));
			if (frame(HD_HEAD, m, 4) < 0)
				return HF_ERROR;
			for (;;) {
				ssize_t r = read(fd, buf, sizeof(buf));
				if (r < 0 && errno == EINTR)
					continue;
				if (r < 0) {
					frame_err(HD_FAIL, errno_code(errno), "download", errno);
					return HF_ERROR;
				}
				if (r == 0)
					break;
				total += (unsigned long long)r;
				if (total > cap) {
					frame_err(HD_FAIL, HF_TOO_BIG, "the file grew over the cap",
						  0);
					return HF_ERROR;
				}
				if (frame(HD_DATA, buf, r) < 0)
					return HF_ERROR;
			}
			rc = frame(HD_END, NULL, -1);
		}
		if (fd >= 0)
			close(fd);
		if (rc < 0)
			return HF_ERROR;
	}
	return HF_OK;
}

int files_main(const char *op, int argc, char **argv)
{
	umask(0);
	if (strcmp(op, HC_STAT) == 0)
		return cmd_stat(argc, argv);
	if (strcmp(op, HC_LS) == 0)
		return cmd_ls(argc, argv);
	if (strcmp(op, HC_CAT) == 0)
		return cmd_cat(argc, argv);
	if (strcmp(op, HC_PUT) == 0)
		return cmd_put(argc, argv);
	if (strcmp(op, HC_MKDIR) == 0)
		return cmd_mkdir(argc, argv);
	if (strcmp(op, HC_MV) == 0)
		return cmd_mv(argc, argv);
	if (strcmp(op, HC_RM) == 0)
		return cmd_rm(argc, argv);
	if (strcmp(op, HC_UPLOAD) == 0)
		return cmd_upload(argc, argv);
	if (strcmp(op, HC_DOWNLOAD) == 0)
		return cmd_download(argc, argv);
	return -1;
}
