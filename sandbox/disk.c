/*
 * Disk limits (RELIABILITY A3): each sandbox's writes are bounded in bytes
 * and inodes, and creates stop while the host runs low.
 *
 * How a server limits diskMb (decided per server, see README "Disk limits"):
 * - loop (the local server, sandpitd root on the Docker host): a sparse
 *   file of diskMb MiB in disk_dir, formatted ext4 (one inode per 16 KiB),
 *   attached to a loop device of our own (LOOP_CONFIGURE with AUTOCLEAR)
 *   and given to Docker's local volume driver as an anonymous volume at the
 *   workdir. The image's own files are read-only (ReadonlyRootfs); /tmp and
 *   /var/tmp are tmpfs bounded in size and inodes (charged to memory). The
 *   backing file is unlinked once the container runs, so the kernel frees
 *   everything when the container ends (unmount → loop detaches → file
 *   gone) with nothing of sandpit running; AutoRemove takes the volume.
 * - storage-opt: HostConfig.StorageOpt size, where the daemon's storage
 *   driver can take it (overlay2 or vfs on xfs with pquota, btrfs, zfs,
 *   devicemapper).
 * - none: the server cannot limit; an explicit diskMb there is a 400, and
 *   disk_require_limit refuses every create there.
 * The host floor (disk_reserve_mb, disk_reserve_inodes) is checked on the
 * local server at each create, on Docker's root dir and on disk_dir; the
 * sparse loop disks' sizes together are bounded by disk_overcommit_pct of
 * the free space above it (plus what they use); a snapshot checks the
 * floor with the workdir's used bytes and bounds its copy by it.
 * A managed volume (/v1, volume.c) made where loop disks are possible is
 * one too, of volume_size_mb: a file disk_dir/volumes/<id>.img made and
 * formatted once at createVolume (the floor and the overcommit bound
 * checked for it), kept across sandboxes, attached to a loop device of
 * its own at each create that attaches the volume, mounted like the
 * workdir's, and removed by deleteVolume once no loop device holds it.
 * The volume files count in the overcommit bound whether attached or not.
 *
 * Must never: hand a container a loop device it did not attach for that
 * sandbox, leave a loop device attached after a failed create, or put a
 * caller value on a command line other than numbers it formatted itself.
 * May call: owner.c (whose the disk's root is).
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"
#include "../docker/docker.h"

extern char **environ;

#define DISK_BYTES_PER_INODE 16384
#define DISK_MOUNT_OPTS "nosuid,nodev,noinit_itable"
#define DISK_SWEEP_MS 60000
#define DISK_INFO_MS 60000

/* What each server can do, per worker: asked once a minute at most.
 * Not locked: create and the reaper's sweep only, never reached from
 * sandpit-stream's threads (README, "Threads"). */
static struct {
	char server[65];
	int how;
	char root_dir[1024]; /* DockerRootDir (local server only) */
	int64_t at;	     /* mono ms, 0 = never */
} caps[SB_MAX_SERVERS];
static int64_t swept_at;

static const char *const tools_dirs[] = { "/usr/sbin", "/sbin", "/usr/bin", "/bin", NULL };

/* The absolute path of an e2fsprogs tool, or NULL. */
static const char *tool_path(const char *name, char *out, size_t cap)
{
	for (int i = 0; tools_dirs[i]; i++) {
		snprintf(out, cap, "%s/%s", tools_dirs[i], name);
		if (access(out, X_OK) == 0)
			return out;
	}
	return NULL;
}

static int is_local(const struct sandbox_ctx *ctx)
{
	return ctx->cur == &ctx->conns[0];
}

/* 1 when this process can make loop disks: root with /dev/loop-control,
 * mke2fs and debugfs. */
static int loop_possible(void)
{
	char p[64];

	return access("/dev/loop-control", R_OK | W_OK) == 0 && tool_path("mke2fs", p, sizeof(p)) &&
	       tool_path("debugfs", p, sizeof(p));
}

static int storage_opt_possible(const struct docker_storage *st)
{
	static const char *const sized[] = { "btrfs", "zfs", "devicemapper", "windowsfilter",
					     NULL };

	for (int i = 0; sized[i]; i++)
		if (strcmp(st->driver, sized[i]) == 0)
			return 1;
	/* overlay2 and vfs take a size only on xfs mounted with pquota; the
	 * mount option cannot be seen from here: Docker's refusal names it */
	return (strcmp(st->driver, "overlay2") == 0 || strcmp(st->driver, "vfs") == 0) &&
	       strcmp(st->backing_fs, "xfs") == 0;
}

/* Finds or refreshes the current server's entry in caps. */
static int server_caps(struct sandbox_ctx *ctx, int *how, const char **root_dir, struct sp_err *e)
{
	const struct config *cfg = ctx->cfg;
	const char *id = ctx->cur ? ctx->cur->id : "local";
	int slot = -1, oldest = 0;
	struct docker_storage st;

	for (int i = 0; i < SB_MAX_SERVERS; i++) {
		if (caps[i].at && strcmp(caps[i].server, id) == 0) {
			slot = i;
			break;
		}
		if (caps[i].at < caps[oldest].at)
			oldest = i;
	}
	if (slot >= 0 && mono_ms() - caps[slot].at < DISK_INFO_MS) {
		*how = caps[slot].how;
		*root_dir = caps[slot].root_dir;
		return 0;
	}
	if (slot < 0)
		slot = oldest;
	if (docker_storage(ctx->dk, &st, e) < 0)
		return -1;
	str_copy(caps[slot].server, sizeof(caps[slot].server), id);
	caps[slot].root_dir[0] = '\0';
	if (is_local(ctx))
		str_copy(caps[slot].root_dir, sizeof(caps[slot].root_dir), st.root_dir);
	if (strcmp(cfg->disk_limit, "off") == 0)
		caps[slot].how = SB_DISK_NONE;
	else if (is_local(ctx) && strcmp(cfg->disk_limit, "storage-opt") != 0 && loop_possible())
		caps[slot].how = SB_DISK_LOOP;
	else if (strcmp(cfg->disk_limit, "loop") != 0 && storage_opt_possible(&st))
		caps[slot].how = SB_DISK_STORAGE_OPT;
	else
		caps[slot].how = SB_DISK_NONE;
	if (caps[slot].how == SB_DISK_NONE && strcmp(cfg->disk_limit, "loop") == 0 && is_local(ctx))
		log_warn("disk_limit = loop, but this process cannot make loop disks (root, "
			 "/dev/loop-control, mke2fs and debugfs are needed): disk is not limited");
	caps[slot].at = mono_ms();
	*how = caps[slot].how;
	*root_dir = caps[slot].root_dir;
	return 0;
}

/* -1 with a 503 naming the reserve when path's filesystem is below it.
 * need_mb: space the create takes from it now (preallocation). */
static int floor_ok(const struct config *cfg, const char *path, int64_t need_mb, struct sp_err *e)
{
	struct statvfs v;
	int64_t free_mb;

	if (!path[0] || statvfs(path, &v) < 0)
		return 0; /* not visible from here: nothing to check */
	free_mb = (int64_t)((unsigned long long)v.f_bavail * v.f_frsize / (1024 * 1024));
	if (free_mb - need_mb < cfg->disk_reserve_mb)
		return sp_err_set(e, SP_UNAVAILABLE,
				  "The host is low on disk space: %lld MiB free at %s%s, below "
				  "disk_reserve_mb (%d); creates are refused until space is freed",
				  (long long)free_mb, path,
				  need_mb ? " before this sandbox's disk" : "",
				  cfg->disk_reserve_mb);
	if (v.f_files > 0 && (int64_t)v.f_favail < cfg->disk_reserve_inodes)
		return sp_err_set(
			e, SP_UNAVAILABLE,
			"The host is low on inodes: %llu free at %s, below "
			"disk_reserve_inodes (%d); creates are refused until files are freed",
			(unsigned long long)v.f_favail, path, cfg->disk_reserve_inodes);
	return 0;
}

/* The loop disks of disk_dir now attached: their sizes (what they
 * promise) and the bytes their filesystems use (already taken from the
 * host), in MiB. A disk whose mount sandpit cannot see counts as unused. */
static void loops_promised(const struct config *cfg, int64_t *size_mb, int64_t *used_mb)
{
	DIR *dir = opendir("/sys/block");
	struct dirent *de;
	size_t dlen = strlen(cfg->disk_dir);
	int64_t size = 0, used = 0;

	*size_mb = *used_mb = 0;
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		char p[300], back[1200], line[4096], dev[64], mnt[4096];
		unsigned long long sectors = 0;
		FILE *f;
		size_t n;
		if (strncmp(de->d_name, "loop", 4) != 0)
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", de->d_name);
		f = fopen(p, "re");
		if (!f)
			continue;
		n = fread(back, 1, sizeof(back) - 1, f);
		fclose(f);
		back[n] = '\0';
		if (!dlen || strncmp(back, cfg->disk_dir, dlen) != 0 || back[dlen] != '/')
			continue;
		/* a volume's: its file is counted below, attached or not */
		if (strncmp(back + dlen + 1, SB_VOLUME_DISK_DIR "/", sizeof(SB_VOLUME_DISK_DIR)) ==
		    0)
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s/size", de->d_name);
		f = fopen(p, "re");
		if (!f)
			continue;
		if (fscanf(f, "%llu", &sectors) != 1)
			sectors = 0;
		fclose(f);
		size += (int64_t)(sectors * 512);
		/* its mount on the host (the volume's folder): how much it holds */
		snprintf(dev, sizeof(dev), " /dev/%s ", de->d_name);
		f = fopen("/proc/self/mountinfo", "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			const char *sep = strstr(line, " - ");
			struct statvfs v;
			if (!sep || !strstr(sep, dev) ||
			    sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
				continue;
			if (statvfs(mnt, &v) == 0 && v.f_blocks >= v.f_bfree)
				used += (int64_t)((unsigned long long)(v.f_blocks - v.f_bfree) *
						  v.f_frsize);
			break;
		}
		fclose(f);
	}
	closedir(dir);
	/* the managed volumes' files: their sizes, and the blocks they hold */
	{
		char vdir[1100];
		snprintf(vdir, sizeof(vdir), "%s/" SB_VOLUME_DISK_DIR, cfg->disk_dir);
		dir = dlen ? opendir(vdir) : NULL;
		while (dir && (de = readdir(dir))) {
			struct stat st;
			size_t n = strlen(de->d_name);
			if (n < 5 || strcmp(de->d_name + n - 4, ".img") != 0 ||
			    fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISREG(st.st_mode))
				continue;
			size += (int64_t)st.st_size;
			used += (int64_t)st.st_blocks * 512;
		}
		if (dir)
			closedir(dir);
	}
	*size_mb = size >> 20;
	*used_mb = used >> 20;
}

/* -1 (503 naming disk_overcommit_pct) when a loop disk of need_mb more
 * would make the local server's disks promise more than the bound. */
static int overcommit_ok(const struct config *cfg, const char *path, int64_t need_mb,
			 struct sp_err *e)
{
	struct statvfs v;
	int64_t free_mb, size_mb, used_mb, bound;

	if (!cfg->disk_overcommit_pct || !path[0] || statvfs(path, &v) < 0)
		return 0;
	free_mb = (int64_t)((unsigned long long)v.f_bavail * v.f_frsize / (1024 * 1024));
	loops_promised(cfg, &size_mb, &used_mb);
	bound = (free_mb - cfg->disk_reserve_mb + used_mb) * cfg->disk_overcommit_pct / 100;
	if (size_mb + need_mb > bound)
		return sp_err_set(
			e, SP_UNAVAILABLE,
			"The host's disk is promised: this server's sandbox disks hold %lld MiB "
			"and this one asks %lld MiB more, past disk_overcommit_pct (%d%%) of the "
			"%lld MiB free above disk_reserve_mb (%d) plus the %lld MiB they use; "
			"creates with a disk are refused until sandboxes end",
			(long long)size_mb, (long long)need_mb, cfg->disk_overcommit_pct,
			(long long)(free_mb - cfg->disk_reserve_mb), cfg->disk_reserve_mb,
			(long long)used_mb);
	return 0;
}

int sandbox_disk_plan(struct sandbox_ctx *ctx, struct sandbox *sb, int64_t rq_mb, struct sp_err *e)
{
	const struct config *cfg = ctx->cfg;
	const char *root_dir = "";
	int how;

	memset(&sb->disk, 0, sizeof(sb->disk));
	sb->disk_mb = 0;
	if (rq_mb > cfg->disk_max_mb)
		return sp_err_field(e, SP_BAD_REQUEST, "diskMb",
				    "diskMb: at most %d on this service (disk_max_mb)",
				    cfg->disk_max_mb);
	if (server_caps(ctx, &how, &root_dir, e) < 0)
		return -1;
	if (how == SB_DISK_NONE) {
		const char *srv = sb->server_id[0] ? sb->server_id : "local";
		if (rq_mb > 0)
			return sp_err_field(
				e, SP_BAD_REQUEST, "diskMb",
				"diskMb: server %s cannot limit disk (its storage driver "
				"takes no size and sandpit cannot make loop disks there); "
				"leave diskMb out or choose another server",
				srv);
		if (cfg->disk_require_limit && strcmp(cfg->disk_limit, "off") != 0)
			return sp_err_set(
				e, SP_UNAVAILABLE,
				"Server %s cannot limit disk and disk_require_limit is set", srv);
	} else {
		sb->disk_mb = rq_mb > 0 ? rq_mb : cfg->disk_default_mb;
	}
	if (how == SB_DISK_LOOP && strcmp(sb->workdir, "/") == 0)
		return sp_err_field(e, SP_BAD_REQUEST, "workdir",
				    "workdir: '/' cannot hold the sandbox's disk; choose a folder");
	sb->disk.how = how;
	if (is_local(ctx)) {
		int64_t need = how == SB_DISK_LOOP && cfg->disk_preallocate ? sb->disk_mb : 0;
		if (floor_ok(cfg, root_dir, 0, e) < 0 || floor_ok(cfg, cfg->disk_dir, need, e) < 0)
			return -1;
		/* a sparse disk takes its space later: what all of them promise
		 * is bounded (a preallocated one took it above) */
		if (how == SB_DISK_LOOP && !cfg->disk_preallocate &&
		    overcommit_ok(cfg, cfg->disk_dir, sb->disk_mb, e) < 0)
			return -1;
		if (mono_ms() - swept_at > DISK_SWEEP_MS || !swept_at) {
			swept_at = mono_ms();
			sandbox_disk_sweep(ctx);
		}
	}
	return 0;
}

int sandbox_disk_snapshot_room(struct sandbox_ctx *ctx, const char *wd_src, int64_t *limit,
			       struct sp_err *e)
{
	const struct config *cfg = ctx->cfg;
	const char *root_dir = "";
	struct statvfs v;
	int64_t used = 0, room;
	int how;

	if (limit)
		*limit = 0;
	if (!is_local(ctx))
		return 0;
	if (server_caps(ctx, &how, &root_dir, e) < 0)
		return -1;
	if (!root_dir[0] || statvfs(root_dir, &v) < 0)
		return 0; /* not visible from here: nothing to check */
	if (wd_src && wd_src[0]) {
		struct statvfs w;
		/* used blocks, not the files' apparent sizes: a sparse file's
		 * zeros are written out whole, and the copy's limit stops
		 * them */
		if (statvfs(wd_src, &w) == 0 && w.f_blocks >= w.f_bfree)
			used = (int64_t)((unsigned long long)(w.f_blocks - w.f_bfree) * w.f_frsize);
	}
	room = (int64_t)((unsigned long long)v.f_bavail * v.f_frsize) -
	       (int64_t)cfg->disk_reserve_mb * 1024 * 1024;
	if (room - used < 0)
		return sp_err_set(e, SP_QUOTA,
				  "The host is low on disk space: %lld MiB free at %s, and a "
				  "snapshot of this sandbox (%lld MiB used) would take it below "
				  "disk_reserve_mb (%d); delete snapshots or sandboxes first",
				  (long long)((unsigned long long)v.f_bavail * v.f_frsize >> 20),
				  root_dir, (long long)(used >> 20), cfg->disk_reserve_mb);
	if (limit)
		*limit = room / 2 > 1 ? room / 2 : 1;
	return 0;
}

/* Runs argv[0] (an absolute path) with stdout and stderr into a pipe;
 * waits for it. 0 when it exited 0; else -1 with its first output line. */
static int run_tool(char *const argv[], struct sp_err *e)
{
	posix_spawn_file_actions_t fa;
	int p[2], status = 0, rc;
	pid_t pid;
	char out[512];
	size_t n = 0;
	ssize_t r;

	if (pipe2(p, O_CLOEXEC) < 0)
		return sp_err_set(e, SP_INTERNAL, "pipe: %s", strerror(errno));
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (rc != 0) {
		close(p[0]);
		return sp_err_set(e, SP_INTERNAL, "%s: %s", argv[0], strerror(rc));
	}
	while ((r = read(p[0], out + n, sizeof(out) - 1 - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		n += (size_t)r;
		if (n == sizeof(out) - 1) {
			char sink[4096];
			while (read(p[0], sink, sizeof(sink)) > 0)
				;
			break;
		}
	}
	close(p[0]);
	out[n] = '\0';
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return sp_err_set(e, SP_INTERNAL, "%s: waitpid: %s", argv[0],
					  strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	out[strcspn(out, "\n")] = '\0';
	return sp_err_set(e, SP_INTERNAL, "%s failed (status %d): %s", argv[0], status, out);
}

/* Runs debugfs -w with the commands in cmds (lines) on target (a file or
 * the loop device). The commands go through a file next to the images. */
static int debugfs_run(const struct config *cfg, const char *id, const char *target,
		       const char *cmds, struct sp_err *e)
{
	char tool[64], req[1200];
	int fd, rc;
	size_t len = strlen(cmds);

	if (!tool_path("debugfs", tool, sizeof(tool)))
		return sp_err_set(e, SP_INTERNAL, "debugfs is not installed (e2fsprogs)");
	snprintf(req, sizeof(req), "%s/%s.cmd", cfg->disk_dir, id);
	fd = open(req, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sp_err_set(e, SP_INTERNAL, "open %s: %s", req, strerror(errno));
	rc = write(fd, cmds, len) == (ssize_t)len ? 0 : -1;
	close(fd);
	if (rc < 0) {
		unlink(req);
		return sp_err_set(e, SP_INTERNAL, "write %s: %s", req, strerror(errno));
	}
	{
		char *argv[] = { tool, "-w", "-f", req, (char *)target, NULL };
		rc = run_tool(argv, e);
	}
	unlink(req);
	return rc;
}

/* Attaches file fd to a free loop device, with AUTOCLEAR unless told
 * otherwise; its fd into *lfd. */
static int loop_attach(int ffd, const char *id, int autoclear, char *dev, size_t cap, int *lfd,
		       struct sp_err *e)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);

	if (ctl < 0)
		return sp_err_set(e, SP_INTERNAL, "open /dev/loop-control: %s", strerror(errno));
	for (int attempt = 0; attempt < 16; attempt++) {
		struct loop_config lc;
		int n = ioctl(ctl, LOOP_CTL_GET_FREE), fd;
		if (n < 0) {
			close(ctl);
			return sp_err_set(e, SP_UNAVAILABLE, "No free loop device: %s",
					  strerror(errno));
		}
		snprintf(dev, cap, "/dev/loop%d", n);
		fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			close(ctl);
			return sp_err_set(e, SP_INTERNAL, "open %s: %s", dev, strerror(errno));
		}
		memset(&lc, 0, sizeof(lc));
		lc.fd = (unsigned)ffd;
		lc.info.lo_flags = autoclear ? LO_FLAGS_AUTOCLEAR : 0;
		snprintf((char *)lc.info.lo_file_name, sizeof(lc.info.lo_file_name), "sandpit:%s",
			 id);
		if (ioctl(fd, LOOP_CONFIGURE, &lc) == 0) {
			close(ctl);
			*lfd = fd;
			return 0;
		}
		close(fd);
		if (errno != EBUSY) {
			close(ctl);
			return sp_err_set(e, SP_INTERNAL, "LOOP_CONFIGURE %s: %s", dev,
					  strerror(errno));
		}
		/* another process took it between GET_FREE and CONFIGURE */
	}
	close(ctl);
	return sp_err_set(e, SP_UNAVAILABLE, "No free loop device after 16 attempts");
}

/* mkdir -p: the parents 0755, disk_dir itself 0700. */
static int make_dir(const char *dir)
{
	char p[1024];

	if (str_copy(p, sizeof(p), dir) < 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *q = p + 1; *q; q++)
		if (*q == '/') {
			*q = '\0';
			if (mkdir(p, 0755) < 0 && errno != EEXIST)
				return -1;
			*q = '/';
		}
	return mkdir(p, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

/* Makes file (O_EXCL) a formatted ext4 disk of mb MiB whose root is
 * uid:gid (mode 01777: the sticky folder of sandbox_owner) without
 * lost+found; its fd open read-write into *ffd (NULL: closed). On failure
 * the file is gone. id names the debugfs command file. */
static int make_fs(const struct config *cfg, const char *file, int64_t mb, unsigned uid,
		   unsigned gid, unsigned mode, const char *id, int *ffd, struct sp_err *e)
{
	char tool[64], size[32], inodes[32], opts[160], cmds[128];
	int fd;

	if (!tool_path("mke2fs", tool, sizeof(tool)))
		return sp_err_set(e, SP_INTERNAL, "mke2fs is not installed (e2fsprogs)");
	fd = open(file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		/* EEXIST: another create of this id holds it (a caller-chosen id) */
		return sp_err_set(e, errno == EEXIST ? SP_CONFLICT : SP_INTERNAL, "open %s: %s",
				  file, strerror(errno));
	if (ftruncate(fd, (off_t)mb * 1024 * 1024) < 0 ||
	    (cfg->disk_preallocate &&
	     (errno = posix_fallocate(fd, 0, (off_t)mb * 1024 * 1024)) != 0)) {
		sp_err_set(e, errno == ENOSPC ? SP_UNAVAILABLE : SP_INTERNAL,
			   "The disk (%lld MiB) could not be made: %s", (long long)mb,
			   strerror(errno));
		goto fail;
	}
	snprintf(size, sizeof(size), "%lldk", (long long)mb * 1024);
	snprintf(inodes, sizeof(inodes), "%d", DISK_BYTES_PER_INODE);
	snprintf(opts, sizeof(opts),
		 "nodiscard,lazy_itable_init=1,lazy_journal_init=1,root_owner=%u:%u", uid, gid);
	{
		char *argv[] = { tool,	 "-q", "-F",	  "-t",		"ext4", "-b",
				 "4096", "-m", "0",	  "-i",		inodes, "-E",
				 opts,	 "-L", "sandpit", (char *)file, size,	NULL };
		if (run_tool(argv, e) < 0)
			goto fail;
	}
	/* lost+found would show in the workdir; the root's mode for a user
	 * sandpit could not name (see sandbox_owner) */
	snprintf(cmds, sizeof(cmds), "rmdir lost+found\n%s",
		 mode == 01777 ? "sif / mode 041777\n" : "");
	if (debugfs_run(cfg, id, file, cmds, e) < 0)
		goto fail;
	if (ffd)
		*ffd = fd;
	else
		close(fd);
	return 0;
fail:
	close(fd);
	unlink(file);
	return -1;
}

/* A managed volume's file. */
static void volume_file(const struct config *cfg, const char *vid, char *out, size_t cap)
{
	snprintf(out, cap, "%s/" SB_VOLUME_DISK_DIR "/%s.img", cfg->disk_dir, vid);
}

static void detach_backing(const char *path);

/* 1 when a loop device is backed by path (its file). */
static int backing_held(const char *path)
{
	DIR *dir = opendir("/sys/block");
	struct dirent *de;
	size_t plen = strlen(path);
	int held = 0;

	if (!dir)
		return 0;
	while (!held && (de = readdir(dir))) {
		char p[300], back[1200];
		FILE *f;
		size_t n;
		if (strncmp(de->d_name, "loop", 4) != 0)
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", de->d_name);
		f = fopen(p, "re");
		if (!f)
			continue;
		n = fread(back, 1, sizeof(back) - 1, f);
		fclose(f);
		back[n] = '\0';
		back[strcspn(back, "\n")] = '\0';
		held = strncmp(back, path, plen) == 0 && (back[plen] == '\0' || back[plen] == ' ');
	}
	closedir(dir);
	return held;
}

/* 1 when no loop device holds path, within wait_ms: one that nothing
 * mounts is detached, a mounted one detaches at its unmount (a container
 * Docker is still removing). */
static int backing_free(const char *path, int64_t wait_ms)
{
	int64_t until = mono_ms() + wait_ms;

	for (;;) {
		struct timespec ts = { 0, 200 * 1000 * 1000 };
		detach_backing(path);
		if (!backing_held(path))
			return 1;
		if (mono_ms() > until)
			return 0;
		nanosleep(&ts, NULL);
	}
}

/* The loop devices of sb's attachments that are volume disks (vols[i]
 * with a size, from the claim): each volume's file attached to a device
 * of its own, refused while a loop device from an earlier sandbox still
 * holds it (two would corrupt it). */
static int volumes_attach(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	const struct config *cfg = ctx->cfg;
	for (int i = 0; i < SB_VOLUME_ATTACH_MAX; i++) {
		struct sandbox_vol_disk *v = &sb->disk.vols[i];
		char file[1200], field[96];
		int ffd, rc;
		if (!v->size_mb)
			continue;
		snprintf(field, sizeof(field), "features.managedVolumes.attachments[%d].volume", i);
		volume_file(cfg, v->id, file, sizeof(file));
		/* a device nobody mounts (a discard-mode holder that ended, a
		 * worker that died) goes; a mounted one detaches at its unmount */
		if (!backing_free(file, 5000))
			return sp_err_field(e, SP_PRECONDITION, field,
					    "volume_attached: volumes/%s is still mounted by an "
					    "ended sandbox's container; retry shortly",
					    v->id);
		ffd = open(file, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (ffd < 0)
			return sp_err_field(e, SP_PRECONDITION, field,
					    "volume_missing: volumes/%s: its disk %s: %s", v->id,
					    file, strerror(errno));
		/* a discard-mode sandbox's volume outlives the unmount of a
		 * docker stop, like its disk */
		rc = loop_attach(ffd, v->id, !sb->discard, v->dev, sizeof(v->dev), &v->fd, e);
		close(ffd);
		if (rc < 0) {
			v->dev[0] = '\0';
			return -1;
		}
	}
	return 0;
}

int sandbox_disk_prepare(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	const struct config *cfg = ctx->cfg;
	struct sandbox_disk *d = &sb->disk;
	int ffd = -1;

	if (volumes_attach(ctx, sb, e) < 0)
		return -1;
	if (d->how != SB_DISK_LOOP)
		return 0;
	if (make_dir(cfg->disk_dir) < 0)
		return sp_err_set(e, SP_INTERNAL, "mkdir %s: %s", cfg->disk_dir, strerror(errno));
	snprintf(d->file, sizeof(d->file), "%s/%s.img", cfg->disk_dir, sb->id);
	sandbox_owner(sb, &d->uid, &d->gid, &d->mode);
	if (make_fs(cfg, d->file, sb->disk_mb, d->uid, d->gid, d->mode, sb->id, &ffd, e) < 0) {
		d->file[0] = '\0';
		return -1;
	}
	/* a discard-mode sandbox's disk outlives the unmount of a docker
	 * stop: detached when its container is removed (state.c) */
	if (loop_attach(ffd, sb->id, !sb->discard, d->dev, sizeof(d->dev), &d->fd, e) < 0) {
		close(ffd);
		unlink(d->file);
		d->file[0] = '\0';
		d->dev[0] = '\0';
		return -1;
	}
	close(ffd);
	return 0;
}

int sandbox_disk_volume_plan(struct sandbox_ctx *ctx, int64_t *size_mb, struct sp_err *e)
{
	const struct config *cfg = ctx->cfg;
	const char *root_dir = "";
	int how;

	*size_mb = 0;
	if (!is_local(ctx) || server_caps(ctx, &how, &root_dir, e) < 0)
		return is_local(ctx) ? -1 : 0;
	if (how != SB_DISK_LOOP)
		return 0;
	if (floor_ok(cfg, cfg->disk_dir, cfg->disk_preallocate ? cfg->volume_size_mb : 0, e) < 0 ||
	    (!cfg->disk_preallocate &&
	     overcommit_ok(cfg, cfg->disk_dir, cfg->volume_size_mb, e) < 0))
		return -1;
	*size_mb = cfg->volume_size_mb;
	return 0;
}

int sandbox_disk_volume_make(struct sandbox_ctx *ctx, const char *vid, const char *org,
			     int64_t size_mb, struct sp_err *e)
{
	const struct config *cfg = ctx->cfg;
	char dir[1100], file[1200], tag[200];

	snprintf(dir, sizeof(dir), "%s/" SB_VOLUME_DISK_DIR, cfg->disk_dir);
	if (make_dir(dir) < 0)
		return sp_err_set(e, SP_INTERNAL, "mkdir %s: %s", dir, strerror(errno));
	volume_file(cfg, vid, file, sizeof(file));
	/* root's for now: each create gives its root to its sandbox's owner */
	if (make_fs(cfg, file, size_mb, 0, 0, 0755, vid, NULL, e) < 0)
		return -1;
	/* whose it is, for the sweep of a create that died before its record */
	snprintf(tag, sizeof(tag), "%s %s", ctx->install_id, org);
	if (setxattr(file, SB_VOLUME_DISK_XATTR, tag, strlen(tag), 0) < 0)
		log_warn("volume %s: setxattr %s: %s (the sweep will not know it)", vid, file,
			 strerror(errno));
	return 0;
}

int sandbox_disk_volume_remove(struct sandbox_ctx *ctx, const char *vid, struct sp_err *e)
{
	char file[1200];

	volume_file(ctx->cfg, vid, file, sizeof(file));
	if (!backing_free(file, 5000))
		return sp_err_set(e, SP_PRECONDITION,
				  "deletion_content_lease_held: volumes/%s is still mounted "
				  "by a container that is being removed; retry shortly",
				  vid);
	if (unlink(file) < 0 && errno != ENOENT)
		return sp_err_set(e, SP_INTERNAL, "unlink %s: %s", file, strerror(errno));
	return 0;
}

void sandbox_disk_volume_detach(const struct config *cfg, const char *vid)
{
	char file[1200];

	volume_file(cfg, vid, file, sizeof(file));
	detach_backing(file);
}

json_object *sandbox_disk_mount(const struct config *cfg, const struct sandbox *sb, const char *dev,
				const char *target)
{
	json_object *m, *vo, *dc, *o, *labels;
	char lname[160];

	o = json_object_new_object();
	json_object_object_add(o, "type", json_object_new_string("ext4"));
	json_object_object_add(o, "device", json_object_new_string(dev));
	json_object_object_add(o, "o", json_object_new_string(DISK_MOUNT_OPTS));
	dc = json_object_new_object();
	json_object_object_add(dc, "Name", json_object_new_string("local"));
	json_object_object_add(dc, "Options", o);
	labels = json_object_new_object();
	snprintf(lname, sizeof(lname), "%s.sandboxId", cfg->label_prefix);
	json_object_object_add(labels, lname, json_object_new_string(sb->id));
	vo = json_object_new_object();
	json_object_object_add(vo, "DriverConfig", dc);
	json_object_object_add(vo, "Labels", labels);
	/* a volume's disk keeps its files: nothing of the image is copied in */
	if (strcmp(target, sb->workdir) != 0)
		json_object_object_add(vo, "NoCopy", json_object_new_boolean(1));
	m = json_object_new_object();
	json_object_object_add(m, "Type", json_object_new_string("volume"));
	json_object_object_add(m, "Target", json_object_new_string(target));
	json_object_object_add(m, "VolumeOptions", vo);
	return m;
}

void sandbox_disk_hostconfig(const struct config *cfg, const struct sandbox *sb, json_object *hc)
{
	const struct sandbox_disk *d = &sb->disk;
	json_object *mounts, *o, *tmpfs;
	char opts[192], v[32];
	static const char *const tmp_dirs[] = { "/tmp", "/var/tmp", NULL };
	int64_t tmp_mb;

	if (d->how == SB_DISK_STORAGE_OPT) {
		o = json_object_new_object();
		snprintf(v, sizeof(v), "%lldM", (long long)sb->disk_mb);
		json_object_object_add(o, "size", json_object_new_string(v));
		json_object_object_add(hc, "StorageOpt", o);
		return;
	}
	if (d->how != SB_DISK_LOOP || !d->dev[0])
		return;
	mounts = json_object_new_array();
	json_object_array_add(mounts, sandbox_disk_mount(cfg, sb, d->dev, sb->workdir));
	json_object_object_add(hc, "Mounts", mounts);
	if (!cfg->disk_readonly_rootfs)
		return;
	json_object_object_add(hc, "ReadonlyRootfs", json_object_new_boolean(1));
	/* /tmp and /var/tmp: memory, bounded like the disk and by memoryMb;
	 * exec (Docker's tmpfs default is noexec): programs are built and run
	 * there */
	if (!json_object_object_get_ex(hc, "Tmpfs", &tmpfs)) {
		tmpfs = json_object_new_object();
		json_object_object_add(hc, "Tmpfs", tmpfs);
	}
	tmp_mb = sb->disk_mb < sb->memory_mb ? sb->disk_mb : sb->memory_mb;
	snprintf(opts, sizeof(opts), "rw,exec,nosuid,nodev,size=%lldm,nr_inodes=%lld,mode=1777",
		 (long long)tmp_mb, (long long)sb->disk_mb * (1024 * 1024 / DISK_BYTES_PER_INODE));
	for (int i = 0; tmp_dirs[i]; i++)
		if (strcmp(sb->workdir, tmp_dirs[i]) != 0)
			json_object_object_add(tmpfs, tmp_dirs[i], json_object_new_string(opts));
}

int sandbox_disk_owner(struct sandbox_ctx *ctx, struct sandbox *sb, struct sp_err *e)
{
	struct sandbox_disk *d = &sb->disk;
	unsigned uid, gid, mode;
	char cmds[160];

	sandbox_owner(sb, &uid, &gid, &mode);
	/* the volumes' roots, as volume.c gives a named volume's */
	snprintf(cmds, sizeof(cmds), "sif / uid %u\nsif / gid %u\nsif / mode 0%o\n", uid, gid,
		 040000u | mode);
	for (int i = 0; i < SB_VOLUME_ATTACH_MAX; i++)
		if (d->vols[i].dev[0] && debugfs_run(ctx->cfg, sb->id, d->vols[i].dev, cmds, e) < 0)
			return -1;
	if (d->how != SB_DISK_LOOP || !d->dev[0])
		return 0;
	/* Always, not only when the owner changed since mke2fs: Docker's
	 * create copies the image's folder at the target onto a new volume
	 * (copy-up, ownership and mode included), and for a workdir the
	 * image lacks it first makes that folder itself, root's and 0755,
	 * as the WorkingDir: the volume's root is then 0:0 0755 whatever
	 * root_owner said. The container exists but has not started:
	 * nothing has the filesystem mounted; through the device, so its
	 * cache stays true. */
	snprintf(cmds, sizeof(cmds), "sif / uid %u\nsif / gid %u\nsif / mode 0%o\n", uid, gid,
		 040000u | (mode == 01777 ? 01777u : 0755u));
	if (debugfs_run(ctx->cfg, sb->id, d->dev, cmds, e) < 0)
		return -1;
	d->uid = uid;
	d->gid = gid;
	d->mode = mode;
	return 0;
}

void sandbox_disk_started(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	struct sandbox_disk *d = &sb->disk;

	(void)ctx;
	/* the volumes' devices: freed by the kernel when the container ends */
	for (int i = 0; i < SB_VOLUME_ATTACH_MAX; i++)
		if (d->vols[i].dev[0]) {
			close(d->vols[i].fd);
			d->vols[i].dev[0] = '\0';
		}
	if (d->how != SB_DISK_LOOP)
		return;
	/* the container's mount holds the device now: from here the kernel
	 * frees the device and the file when the container ends */
	if (d->file[0] && unlink(d->file) < 0 && errno != ENOENT)
		log_warn("sandbox %s: unlink %s: %s", sb->id, d->file, strerror(errno));
	d->file[0] = '\0';
	if (d->dev[0])
		close(d->fd);
	d->dev[0] = '\0';
}

void sandbox_disk_abort(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	struct sandbox_disk *d = &sb->disk;

	(void)ctx;
	/* the volumes' devices; their files stay (the volume's data) */
	for (int i = 0; i < SB_VOLUME_ATTACH_MAX; i++)
		if (d->vols[i].dev[0]) {
			ioctl(d->vols[i].fd, LOOP_CLR_FD, 0);
			close(d->vols[i].fd);
			d->vols[i].dev[0] = '\0';
		}
	if (d->how != SB_DISK_LOOP)
		return;
	if (d->dev[0]) {
		/* nothing mounts it any more (the container is gone or never
		 * started): detach now rather than at the last close */
		ioctl(d->fd, LOOP_CLR_FD, 0);
		close(d->fd);
	}
	if (d->file[0])
		unlink(d->file);
	d->file[0] = '\0';
	d->dev[0] = '\0';
}

void sandbox_disk_refused(const struct sandbox *sb, struct sp_err *e)
{
	char msg[sizeof(e->msg)];

	if (sb->disk.how != SB_DISK_LOOP || !strstr(e->msg, "no space left on device"))
		return;
	str_copy(msg, sizeof(msg), e->msg);
	sp_err_field(e, SP_BAD_REQUEST, "diskMb",
		     "diskMb: the image's files at the workdir (%s) do not fit in %lld MiB: %.300s",
		     sb->workdir, (long long)sb->disk_mb, msg);
}

/* Detaches a loop device whose backing file is path (AUTOCLEAR would do it
 * at its last close; this covers a device nobody holds). */
static void detach_backing(const char *path)
{
	DIR *dir = opendir("/sys/block");
	struct dirent *de;
	size_t plen = strlen(path);

	if (!dir)
		return;
	while ((de = readdir(dir))) {
		char p[300], back[1200], dev[300];
		FILE *f;
		size_t n;
		if (strncmp(de->d_name, "loop", 4) != 0)
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", de->d_name);
		f = fopen(p, "re");
		if (!f)
			continue;
		n = fread(back, 1, sizeof(back) - 1, f);
		fclose(f);
		back[n] = '\0';
		back[strcspn(back, "\n")] = '\0';
		/* " (deleted)" follows once the file is unlinked */
		if (strncmp(back, path, plen) == 0 && (back[plen] == '\0' || back[plen] == ' ')) {
			int fd;
			snprintf(dev, sizeof(dev), "/dev/%s", de->d_name);
			fd = open(dev, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				if (ioctl(fd, LOOP_CLR_FD, 0) < 0 && errno != ENXIO)
					log_info("disk: %s (%s) still in use: %s; it detaches when "
						 "unmounted",
						 dev, path, strerror(errno));
				close(fd);
			}
		}
	}
	closedir(dir);
}

int sandbox_disk_backs(const struct config *cfg, const char *dev, const char *sandbox_id,
		       const char *volume_id)
{
	char p[300], back[1200], want[1200];
	FILE *f;
	size_t n;
	unsigned num;
	char tail;

	if (sscanf(dev, "/dev/loop%u%c", &num, &tail) != 1)
		return 0;
	snprintf(p, sizeof(p), "/sys/block/loop%u/loop/backing_file", num);
	if (volume_id)
		volume_file(cfg, volume_id, want, sizeof(want));
	else
		snprintf(want, sizeof(want), "%s/%s.img", cfg->disk_dir, sandbox_id);
	f = fopen(p, "re");
	if (!f)
		return 0;
	n = fread(back, 1, sizeof(back) - 1, f);
	fclose(f);
	back[n] = '\0';
	back[strcspn(back, "\n")] = '\0';
	n = strlen(want);
	/* " (deleted)" follows once the file is unlinked */
	return strncmp(back, want, n) == 0 &&
	       (back[n] == '\0' || strcmp(back + n, " (deleted)") == 0);
}

int sandbox_disk_release(struct sandbox_ctx *ctx, const char *sandbox_id)
{
	char file[1100];

	if (!sandbox_id || strlen(sandbox_id) != SANDBOX_ID_LEN || strchr(sandbox_id, '/') ||
	    sandbox_id[0] == '.')
		return -1;
	snprintf(file, sizeof(file), "%s/%s.img", ctx->cfg->disk_dir, sandbox_id);
	detach_backing(file);
	if (unlink(file) < 0 && errno != ENOENT)
		return -1;
	snprintf(file, sizeof(file), "%s/%s.cmd", ctx->cfg->disk_dir, sandbox_id);
	unlink(file);
	return 0;
}

void sandbox_disk_sweep(struct sandbox_ctx *ctx)
{
	DIR *dir = opendir(ctx->cfg->disk_dir);
	struct dirent *de;
	int64_t now = now_ms() / 1000;

	if (!dir)
		return;
	while ((de = readdir(dir))) {
		char id[SANDBOX_ID_LEN + 1];
		struct stat st;
		size_t n = strlen(de->d_name);
		/* files of a create that is over: it unlinks its own when the
		 * container starts, so only a create that died leaves one */
		if (n != SANDBOX_ID_LEN + 4 || (strcmp(de->d_name + SANDBOX_ID_LEN, ".img") != 0 &&
						strcmp(de->d_name + SANDBOX_ID_LEN, ".cmd") != 0))
			continue;
		if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    now - (int64_t)st.st_mtime < ctx->cfg->create_timeout_s + 60)
			continue;
		memcpy(id, de->d_name, SANDBOX_ID_LEN);
		id[SANDBOX_ID_LEN] = '\0';
		log_info("disk: removing the leftover disk of sandbox %s", id);
		sandbox_disk_release(ctx, id);
	}
	closedir(dir);
}
