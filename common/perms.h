/*
 * Permissions: "resource:action" names, the built-in roles, and the
 * checks on a comma-separated list. One table, so the CLI, /_auth and the
 * route table agree on what exists.
 */
#ifndef SANDPIT_PERMS_H
#define SANDPIT_PERMS_H

/* The longest permission list, its NUL included: the auth cache, the
 * X-Sandpit-Perms header and sandpit-stream hold one in a buffer of this
 * size. A valid list (known names, no duplicates) is at most every known
 * name once; tests/unit/test_core.c checks that this fits. */
#define PERMS_LIST_MAX 1024

/* Every permission sandpit knows, NULL-terminated: its own
 * ("sandbox:read") and the Docker Sandboxes API's ("sandboxesRead"). */
extern const char *const perms_known[];
/* sandpit's own permission `own` grants the document's `v1` (perms.c holds
 * the table, NULL-terminated). */
struct perms_alias {
	const char *own, *v1;
};
extern const struct perms_alias perms_aliases[];
/* The permissions of a built-in role (owner, admin: every known name;
 * member: none), or NULL when role is not built in. Not for threads: the
 * owner list is built on first use (sandpitd's workers and the CLI). */
const char *perms_builtin_role(const char *role);
/* True when list (comma separated) holds perm, or holds one of sandpit's
 * own names that perms_aliases maps onto perm. */
int perms_has(const char *list, const char *perm);
/* Checks a comma-separated list: every item known, no duplicates. On
 * failure writes the offending item into bad (cap bytes) and returns -1. */
int perms_check_list(const char *list, char *bad, size_t cap);
/* Role names: [a-z][a-z0-9_-]{0,31}, not a built-in name. */
int perms_valid_role_name(const char *name);

#endif
