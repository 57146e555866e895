/* Permission names and built-in roles. See perms.h. */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "perms.h"

/* sandpit's own names first, then the Docker Sandboxes API's (the
 * document's Permission enum, without "unspecified"): a custom role may be
 * given any of them. */
const char *const perms_known[] = {
	"sandbox:read",
	"sandbox:create",
	"sandbox:delete",
	"sandboxesRead",
	"sandboxesCreate",
	"sandboxesExec",
	"sandboxesFilesRead",
	"sandboxesFilesWrite",
	"imagesPull",
	"secretsWrite",
	"sandboxesDelete",
	"sandboxesLifecycle",
	"sandboxesKits",
	"sandboxesPorts",
	"sandboxesCredential",
	"sandboxesSsh",
	"imagesRead",
	"imagesWrite",
	"secretsRead",
	"networkPoliciesRead",
	"volumesRead",
	"volumesWrite",
	"snapshotsRead",
	"snapshotsWrite",
	"mcpRead",
	"mcpWrite",
	"credentialsExchange",
	"sandboxesRename",
	"secretsResolve",
	"operator",
	NULL,
};

/* The one table from sandpit's own permissions to the document's: a list
 * that holds the left one holds each name on the right (so the existing
 * roles and keys work on /v1 unchanged). The Dokploy procedures' rights
 * decide: sandbox:create also runs commands, writes files, changes
 * timeouts and kills (sandboxesExec, FilesWrite, Lifecycle), so it covers
 * what acts on a sandbox short of deleting it; sandbox:read reads records
 * and files. README "Keys, roles and quotas" shows this table. */
const struct perms_alias perms_aliases[] = {
	{ "sandbox:read", "sandboxesRead" },	     { "sandbox:read", "sandboxesFilesRead" },
	{ "sandbox:create", "sandboxesCreate" },     { "sandbox:create", "sandboxesExec" },
	{ "sandbox:create", "sandboxesFilesWrite" }, { "sandbox:create", "sandboxesLifecycle" },
	{ "sandbox:create", "sandboxesRename" },     { "sandbox:create", "sandboxesCredential" },
	{ "sandbox:delete", "sandboxesDelete" },     { NULL, NULL },
};

/* owner and admin: every known name (built once from perms_known). */
static char all_perms[PERMS_LIST_MAX];

const char *perms_builtin_role(const char *role)
{
	if (strcmp(role, "owner") == 0 || strcmp(role, "admin") == 0) {
		if (!all_perms[0]) {
			size_t used = 0;
			for (const char *const *k = perms_known; *k; k++) {
				int n = snprintf(all_perms + used, sizeof(all_perms) - used, "%s%s",
						 used ? "," : "", *k);
				if (n < 0 || (size_t)n >= sizeof(all_perms) - used)
					break; /* test_core checks that every name fits */
				used += (size_t)n;
			}
		}
		return all_perms;
	}
	if (strcmp(role, "member") == 0)
		return "";
	return NULL;
}

/* True when list holds exactly the name p[0..n). */
static int has_exact(const char *list, const char *p, size_t n)
{
	for (const char *q = list; q && *q;) {
		size_t seg = strcspn(q, ",");
		if (seg == n && memcmp(q, p, n) == 0)
			return 1;
		q += seg;
		if (*q == ',')
			q++;
	}
	return 0;
}

int perms_has(const char *list, const char *perm)
{
	if (!perm || !*perm)
		return 1;
	if (has_exact(list, perm, strlen(perm)))
		return 1;
	for (const struct perms_alias *a = perms_aliases; a->own; a++)
		if (strcmp(a->v1, perm) == 0 && has_exact(list, a->own, strlen(a->own)))
			return 1;
	return 0;
}

int perms_check_list(const char *list, char *bad, size_t cap)
{
	for (const char *p = list; *p;) {
		size_t seg = strcspn(p, ",");
		int known = 0;
		for (const char *const *k = perms_known; *k; k++)
			if (strlen(*k) == seg && memcmp(*k, p, seg) == 0)
				known = 1;
		if (!known || seg == 0) {
			snprintf(bad, cap, "%.*s", (int)seg, p);
			return -1;
		}
		/* a duplicate: the same name again later in the list */
		for (const char *q = p + seg; *q;) {
			size_t s2;
			if (*q == ',')
				q++;
			s2 = strcspn(q, ",");
			if (s2 == seg && memcmp(q, p, seg) == 0) {
				snprintf(bad, cap, "%.*s (twice)", (int)seg, p);
				return -1;
			}
			q += s2;
		}
		p += seg;
		if (*p == ',') {
			p++;
			if (!*p) {
				snprintf(bad, cap, "(empty)");
				return -1;
			}
		}
	}
	return 0;
}

int perms_valid_role_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 32 || !islower((unsigned char)name[0]) || perms_builtin_role(name))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)name[i]) && !isdigit((unsigned char)name[i]) &&
		    name[i] != '-' && name[i] != '_')
			return 0;
	return 1;
}
