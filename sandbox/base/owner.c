/*
 * Who owns a sandbox's files, as arithmetic on its record: the numbers
 * that the disk, the volumes and the workdir seeding all use. No Docker
 * (resolving a named user through the container is box/'s owner.c).
 * Calls nothing in sandbox/.
 */
#include "base.h"

#include <string.h>

#include "../../common/util.h"

void sandbox_owner(const struct sandbox *sb, unsigned *uid, unsigned *gid, unsigned *mode)
{
	long long u = 0, g = 0;
	char tmp[64];
	char *colon;

	*uid = *gid = 0;
	*mode = 0755;
	str_copy(tmp, sizeof(tmp), sb->owner[0] ? sb->owner : sb->user);
	colon = strchr(tmp, ':');
	if (colon)
		*colon = '\0';
	if (!tmp[0] || strcmp(tmp, "root") == 0)
		return;
	if (parse_ll(tmp, 0, 0x7fffffff, &u) == 0) {
		*uid = (unsigned)u;
		*gid = (unsigned)u;
		if (colon && parse_ll(colon + 1, 0, 0x7fffffff, &g) == 0)
			*gid = (unsigned)g;
		return;
	}
	*mode = 01777; /* a user we could not resolve: let it use the folder */
}
