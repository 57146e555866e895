/*
 * Process identities (proc.h): /proc/sys/kernel/random/boot_id, the
 * /proc/self/ns/pid link and field 22 (starttime) of /proc/PID/stat; the
 * resident set of /proc/self/statm. Never signals a process; a pid is only
 * looked at.
 */
#include "proc.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* The first line of path into out, without its newline; -1 when unreadable. */
static int read_line(const char *path, char *out, size_t cap)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -1;
	n = fread(out, 1, cap - 1, f);
	fclose(f);
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
	return n ? 0 : -1;
}

/* The start time (clock ticks after boot) of pid, as text; -1 when there
 * is no such process, or only its zombie (killed, not yet reaped). The
 * command name (field 2) may hold spaces and parentheses: fields are
 * counted from its last ')'. */
static int start_time(const char *pid, char *out, size_t cap)
{
	char path[64], stat[1024], *p;
	int field = 2;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	if (read_line(path, stat, sizeof(stat)) < 0 || !(p = strrchr(stat, ')')))
		return -1;
	if (p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
		return -1;
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (field != 22 || !*p)
		return -1;
	snprintf(out, cap, "%.*s", (int)strcspn(p, " "), p);
	return 0;
}

/* boot id and pid namespace: "boot:pidns" into out; -1 when unknown. */
static int where(char *out, size_t cap)
{
	char boot[64], ns[64];
	ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1);

	if (n <= 0 || read_line("/proc/sys/kernel/random/boot_id", boot, sizeof(boot)) < 0)
		return -1;
	ns[n] = '\0';
	/* "pid:[4026531836]": the inode number only */
	snprintf(out, cap, "%s:%.*s", boot,
		 (int)strspn(ns + strcspn(ns, "0123456789"), "0123456789"),
		 ns + strcspn(ns, "0123456789"));
	return 0;
}

void proc_identity(char *out, size_t cap)
{
	char here[160], pid[32], st[32];

	out[0] = '\0';
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	if (where(here, sizeof(here)) < 0 || start_time(pid, st, sizeof(st)) < 0)
		return;
	snprintf(out, cap, "%s:%s:%s", here, pid, st);
}

int proc_identity_gone(const char *id)
{
	char here[160], st[32], pid[32];
	const char *rest, *colon;
	size_t hl;
	long long n;

	if (!id || !*id || where(here, sizeof(here)) < 0)
		return 0;
	hl = strlen(here);
	if (strncmp(id, here, hl) != 0 || id[hl] != ':')
		return 0; /* another host or PID namespace: cannot say */
	rest = id + hl + 1;
	colon = strchr(rest, ':');
	if (!colon || (size_t)(colon - rest) >= sizeof(pid))
		return 0;
	memcpy(pid, rest, (size_t)(colon - rest));
	pid[colon - rest] = '\0';
	if (parse_ll(pid, 1, 1LL << 31, &n) < 0)
		return 0;
	if (start_time(pid, st, sizeof(st)) < 0)
		return 1; /* no such process */
	/* what follows the start time (":" and more) is the caller's */
	return strncmp(st, colon + 1, strlen(st)) != 0 ||
	       (colon[1 + strlen(st)] != '\0' && colon[1 + strlen(st)] != ':');
}

long long proc_rss_bytes(void)
{
	char line[128], *end;
	const char *p;
	long long pages;
	long psz = sysconf(_SC_PAGESIZE);

	if (psz <= 0 || read_line("/proc/self/statm", line, sizeof(line)) < 0)
		return -1;
	/* "size resident shared ...": the second field */
	p = strchr(line, ' ');
	if (!p)
		return -1;
	pages = strtoll(p + 1, &end, 10);
	if (end == p + 1 || pages < 0)
		return -1;
	return pages * psz;
}

int proc_rss_settle(long long max_bytes, long long *rss_out)
{
	long long rss = proc_rss_bytes();

	if (rss_out)
		*rss_out = rss;
	if (max_bytes <= 0 || rss < 0 || rss <= max_bytes)
		return 0;
	malloc_trim(0);
	rss = proc_rss_bytes();
	if (rss_out)
		*rss_out = rss;
	return rss > max_bytes ? 1 : 0;
}
