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

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* exit statuses sandbox/files_v1.c maps */
#define HF_OK 0
#define HF_ERROR 1
#define HF_USAGE 2
#define HF_NOT_FOUND 20
#define HF_NONREG 21
#define HF_TOO_BIG 22
#define HF_DENIED 23
#define HF_DEST_DIR 24
#define HF_OCCUPIED 25
#define HF_XDEV 26
#define HF_NOT_EMPTY 27
#define HF_EXISTS 28
#define HF_NOT_DIR 29
#define HF_IS_DIR 30
#define HF_INVALID 31
#define HF_NO_SPACE 32

#define LIST_MAX 100000
#define REMOVE_SHOWN 1000
#define COPY_BUF 65536

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

static int write_out(int fd, const void *p, size_t n)
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
	putchar('}');
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

/* cat PATH CAP: the raw bytes of a regular file of at most CAP bytes. A
 * FIFO or device is refused before it is read (O_NONBLOCK, fstat), so
 * none hangs the call; a file over CAP, or one that grows past it while
 * read, is refused whole, never cut short. */
static int cmd_cat(int argc, char **argv)
{
	unsigned long long cap, total = 0;
	static char buf[COPY_BUF];
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
	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return efail("readFile");
		if (r == 0)
			break;
		total += (unsigned long long)r;
		if (total > cap)
			return ffail(HF_TOO_BIG, "the file is over the unary cap", 0);
		if (write_out(1, buf, (size_t)r) < 0)
			return ffail(HF_ERROR, "write", errno);
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
	static char buf[COPY_BUF];
	struct stat st;
	int fd;

	if (argc != 3 || parse_num(argv[1], &mode) < 0 || parse_num(argv[2], &len) < 0)
		return ffail(HF_USAGE, "usage: put PATH MODE LEN", 0);
	mode &= 0777;
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
		if (write_out(fd, buf, (size_t)r) < 0)
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

int files_main(const char *op, int argc, char **argv)
{
	umask(0);
	if (strcmp(op, "stat") == 0)
		return cmd_stat(argc, argv);
	if (strcmp(op, "ls") == 0)
		return cmd_ls(argc, argv);
	if (strcmp(op, "cat") == 0)
		return cmd_cat(argc, argv);
	if (strcmp(op, "put") == 0)
		return cmd_put(argc, argv);
	if (strcmp(op, "mkdir") == 0)
		return cmd_mkdir(argc, argv);
	if (strcmp(op, "mv") == 0)
		return cmd_mv(argc, argv);
	if (strcmp(op, "rm") == 0)
		return cmd_rm(argc, argv);
	return -1;
}
