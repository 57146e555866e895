/* Permission names and built-in roles. See perms.h. */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "perms.h"

const char *const perms_known[] = { "sandbox:read", "sandbox:create", "sandbox:delete", NULL };

#define ALL_SANDBOX "sandbox:read,sandbox:create,sandbox:delete"

const char *perms_builtin_role(const char *role)
{
	if (strcmp(role, "owner") == 0 || strcmp(role, "admin") == 0)
		return ALL_SANDBOX;
	if (strcmp(role, "member") == 0)
		return "";
	return NULL;
}

int perms_has(const char *list, const char *perm)
{
	size_t n;

	if (!perm || !*perm)
		return 1;
	n = strlen(perm);
	for (const char *p = list; p && *p;) {
		size_t seg = strcspn(p, ",");
		if (seg == n && memcmp(p, perm, n) == 0)
			return 1;
		p += seg;
		if (*p == ',')
			p++;
	}
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
