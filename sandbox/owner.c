/*
 * Who owns a sandbox's files, from its container: a named image user
 * resolved through the container's /etc/passwd before it starts, and the
 * workdir seeded for that owner before the container starts (skipped when
 * the image has it so, remembered per image). The numbers themselves are
 * base/owner.c's sandbox_owner.
 */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/util.h"
#include "../docker/docker.h"

/* owned_cache is shared by sandpit-stream's threads: read and written
 * under owned_mu, held for the look-up or the store only, never across a
 * Docker call. */
static pthread_mutex_t owned_mu = PTHREAD_MUTEX_INITIALIZER;

/* Resolves the image's named user ("app" or "app:group") to numbers
 * through the container's /etc/passwd, before it starts, so files the API
 * creates belong to it. Leaves owner empty when it cannot. */
void sandbox_resolve_owner(struct sandbox_ctx *ctx, struct sandbox *sb)
{
	struct buf tar, passwd;
	struct sp_err e;
	char name[64], *colon, *line;
	long long n;

	str_copy(sb->owner, sizeof(sb->owner), "");
	str_copy(name, sizeof(name), sb->user);
	colon = strchr(name, ':');
	if (colon)
		*colon = '\0';
	if (!name[0] || strcmp(name, "root") == 0) {
		str_copy(sb->owner, sizeof(sb->owner), "0:0");
		return;
	}
	if (parse_ll(name, 0, 0x7fffffff, &n) == 0 &&
	    (!colon || parse_ll(colon + 1, 0, 0x7fffffff, &n) == 0)) {
		snprintf(sb->owner, sizeof(sb->owner), "%s%s%s", name, colon ? ":" : "",
			 colon ? colon + 1 : "");
		return;
	}
	buf_init(&tar, 4 * 1024 * 1024);
	buf_init(&passwd, 4 * 1024 * 1024);
	if (docker_archive_get(ctx->dk, sb->container_id, "/etc/passwd", &tar, &e) < 0 ||
	    docker_tar_first_file(tar.data, tar.len, &passwd, &e) < 0 || !passwd.data)
		goto out;
	for (line = passwd.data; line && *line; line = colon) {
		char *f[4] = { 0 }, *p = line;
		int k = 0;
		colon = strchr(line, '\n');
		if (colon)
			*colon++ = '\0';
		/* name:x:uid:gid:... (fields may be empty) */
		while (k < 4 && p) {
			f[k++] = p;
			p = strchr(p, ':');
			if (p)
				*p++ = '\0';
		}
		if (k == 4 && strcmp(f[0], name) == 0 && parse_ll(f[2], 0, 0x7fffffff, &n) == 0 &&
		    parse_ll(f[3], 0, 0x7fffffff, &n) == 0) {
			snprintf(sb->owner, sizeof(sb->owner), "%s:%s", f[2], f[3]);
			break;
		}
	}
out:
	buf_free(&tar);
	buf_free(&passwd);
}

/* Folders of the image already owned as the sandbox needs them, by image
 * id: an image is immutable, so one look per image and worker. Under
 * owned_mu. */
static struct {
	char key[160];
	int ok;
} owned_cache[32];
static unsigned owned_next;

/* 1 when path exists in the created container as a directory of uid:gid
 * with the owner's full access (or world-writable and sticky for mode
 * 01777); 0 when it has to be made. */
static int already_owned(struct sandbox_ctx *ctx, const struct sandbox *sb, const char *image_id,
			 const char *path, unsigned uid, unsigned gid, unsigned mode)
{
	struct docker_owner o;
	struct sp_err e;
	char key[160];
	unsigned i;
	int ok = -1;

	snprintf(key, sizeof(key), "%.80s %u:%u:%o %s", image_id, uid, gid, mode, path);
	pthread_mutex_lock(&owned_mu);
	for (i = 0; i < sizeof(owned_cache) / sizeof(owned_cache[0]) && ok < 0; i++)
		if (strcmp(owned_cache[i].key, key) == 0)
			ok = owned_cache[i].ok;
	pthread_mutex_unlock(&owned_mu);
	if (ok >= 0)
		return ok;
	if (docker_archive_owner(ctx->dk, sb->container_id, path, &o, &e) < 0) {
		if (e.code != SP_NOT_FOUND)
			return 0; /* not known: seed, and ask again next time */
		ok = 0;
	} else if (mode == 01777) {
		ok = o.type == '5' && (o.mode & 01777) == 01777;
	} else {
		ok = o.type == '5' && o.uid == uid && o.gid == gid && (o.mode & 0700) == 0700;
	}
	pthread_mutex_lock(&owned_mu);
	i = owned_next++ % (sizeof(owned_cache) / sizeof(owned_cache[0]));
	str_copy(owned_cache[i].key, sizeof(owned_cache[i].key), key);
	owned_cache[i].ok = ok;
	pthread_mutex_unlock(&owned_mu);
	return ok;
}

/* Makes the workdir (which is also HOME) the sandbox user's before the
 * container starts: one archive PUT, skipped when the image has it so. */
static int seed_files(struct sandbox_ctx *ctx, const struct sandbox *sb, const char *image_id,
		      struct sp_err *e)
{
	struct docker_tar_entry ents[1];
	struct buf tar;
	unsigned uid, gid, mode;
	size_t n = 0;
	int64_t t = now_ms() / 1000;
	int rc;

	sandbox_owner(sb, &uid, &gid, &mode);
	/* a loop disk's root is the workdir, made for the owner (disk.c); the
	 * image around it is read-only: nothing to seed */
	if (sb->disk.how == SB_DISK_LOOP && ctx->cfg->disk_readonly_rootfs)
		return 0;
	if (strcmp(sb->workdir, "/") != 0 && sb->disk.how != SB_DISK_LOOP &&
	    !already_owned(ctx, sb, image_id, sb->workdir, uid, gid, mode))
		ents[n++] =
			(struct docker_tar_entry){ sb->workdir + 1, 1, mode, uid, gid, NULL, 0, t };
	if (n == 0)
		return 0;
	buf_init(&tar, 64 * 1024);
	rc = docker_tar_build(ents, n, &tar, e);
	if (rc == 0)
		rc = docker_archive_put(ctx->dk, sb->container_id, "/", tar.data, tar.len, e);
	buf_free(&tar);
	return rc;
}

int sandbox_seed_files(struct sandbox_ctx *ctx, const struct sandbox *sb, json_object *img,
		       struct sp_err *e)
{
	json_object *v;

	if (!json_object_object_get_ex(img, "Id", &v))
		return sp_err_set(e, SP_INTERNAL, "Image has no id");
	return seed_files(ctx, sb, json_object_get_string(v), e);
}
