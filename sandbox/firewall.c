/*
 * The local server's deny rules (RELIABILITY.md N2, N4). Docker adds no rule
 * between a bridge and the host itself, and forwards an internet network's
 * traffic anywhere, so sandpit drops, for packets that come in on a sandbox
 * bridge:
 *   - everything addressed to the host itself (INPUT), except replies to
 *     connections the host opened (conntrack ESTABLISHED,RELATED);
 *   - everything forwarded to link-local 169.254.0.0/16 (the cloud metadata
 *     address) and to each range of deny_cidrs (DOCKER-USER, or FORWARD when
 *     Docker has no DOCKER-USER chain).
 * The rules live in two chains named after the network prefix, <PREFIX>-INPUT
 * and <PREFIX>-FORWARD, reached by one jump each at the top of INPUT and
 * DOCKER-USER. Every rule is checked (-C) before it is added, so applying
 * again adds nothing; nothing in sandpit removes them. iptables is run
 * directly (no shell), with -w so that concurrent runs wait for the lock.
 * The binary is the one whose tables hold Docker's chains (iptables, else
 * iptables-legacy).
 */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/util.h"

extern char **environ;

#define LINK_LOCAL "169.254.0.0/16"

/* Runs argv (argv[0] an absolute path) with no shell, stdin and stdout on
 * /dev/null, the first bytes of stderr into err. The exit status, or -1. */
static int run(const char *const argv[], char *err, size_t cap)
{
	posix_spawn_file_actions_t fa;
	int pfd[2], status = 0, rc = -1;
	pid_t pid;

	if (err && cap)
		err[0] = '\0';
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
	if (posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	{
		size_t got = 0;
		char tmp[256];
		ssize_t n;
		while ((n = read(pfd[0], tmp, sizeof(tmp))) > 0 || (n < 0 && errno == EINTR)) {
			size_t k = n > 0 ? (size_t)n : 0;
			if (err && got + 1 < cap) {
				size_t room = cap - 1 - got;
				memcpy(err + got, tmp, k < room ? k : room);
				got += k < room ? k : room;
				err[got] = '\0';
			}
		}
	}
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(status))
		rc = WEXITSTATUS(status);
	if (err)
		for (char *p = err; *p; p++)
			if (*p == '\n' || *p == '\r')
				*p = ' ';
	return rc;
}

static int find_bin(const char *name, char *out, size_t cap)
{
	static const char *const dirs[] = { "/usr/sbin", "/sbin", "/usr/bin", "/bin" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(out, cap, "%s/%s", dirs[i], name);
		if (access(out, X_OK) == 0)
			return 0;
	}
	return -1;
}

/* The iptables that holds Docker's chains, and whether DOCKER-USER exists
 * there. Remembered per process once found. Not locked: network set-up
 * for create only, never reached from sandpit-stream's threads. */
static char ipt_bin[64];
static int ipt_docker_user;

static int pick_iptables(struct sp_err *e)
{
	static const char *const names[] = { "iptables", "iptables-legacy" };
	char path[64], first[64] = "";

	if (ipt_bin[0])
		return 0;
	if (geteuid() != 0)
		return sp_err_set(e, SP_UNAVAILABLE, "sandpitd does not run as root");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (find_bin(names[i], path, sizeof(path)) < 0)
			continue;
		if (!first[0])
			str_copy(first, sizeof(first), path);
		if (run((const char *const[]){ path, "-w", "5", "-n", "-L", "DOCKER-USER", NULL },
			NULL, 0) == 0) {
			str_copy(ipt_bin, sizeof(ipt_bin), path);
			ipt_docker_user = 1;
			return 0;
		}
	}
	/* Docker runs without iptables: use the first one that works */
	if (first[0] && run((const char *const[]){ first, "-w", "5", "-n", "-L", "INPUT", NULL },
			    NULL, 0) == 0) {
		str_copy(ipt_bin, sizeof(ipt_bin), first);
		ipt_docker_user = 0;
		return 0;
	}
	return sp_err_set(e, SP_UNAVAILABLE,
			  "no working iptables found in /usr/sbin, /sbin, /usr/bin");
}

/* iptables -w 5 ACTION ...rule; ACTION is -C, -A or -I (with "1"). */
static int ipt(const char *action, const char *const rule[], int n, char *err, size_t cap)
{
	const char *argv[24];
	int k = 0;

	argv[k++] = ipt_bin;
	argv[k++] = "-w";
	argv[k++] = "5";
	argv[k++] = action;
	for (int i = 0; i < n && k < 23; i++)
		argv[k++] = rule[i];
	argv[k] = NULL;
	return run(argv, err, cap);
}

/* Adds the rule unless it is there. chain is rule[0]; at_top inserts it
 * first in its chain instead of appending. */
static int ensure_rule(const char *const rule[], int n, int at_top, struct sp_err *e)
{
	char err[256];
	const char *r2[24];

	if (ipt("-C", rule, n, NULL, 0) == 0)
		return 0;
	if (at_top) {
		r2[0] = rule[0];
		r2[1] = "1";
		for (int i = 1; i < n && i < 22; i++)
			r2[i + 1] = rule[i];
		if (ipt("-I", r2, n + 1, err, sizeof(err)) == 0)
			return 0;
	} else if (ipt("-A", rule, n, err, sizeof(err)) == 0) {
		return 0;
	}
	return sp_err_set(e, SP_UNAVAILABLE, "iptables %s %s: %s", at_top ? "-I" : "-A", rule[0],
			  err[0] ? err : "failed");
}

static int ensure_chain(const char *chain, struct sp_err *e)
{
	char err[256];

	if (run((const char *const[]){ ipt_bin, "-w", "5", "-n", "-L", chain, NULL }, NULL, 0) == 0)
		return 0;
	if (run((const char *const[]){ ipt_bin, "-w", "5", "-N", chain, NULL }, err, sizeof(err)) ==
	    0)
		return 0;
	/* a racing worker made it meanwhile */
	if (run((const char *const[]){ ipt_bin, "-w", "5", "-n", "-L", chain, NULL }, NULL, 0) == 0)
		return 0;
	return sp_err_set(e, SP_UNAVAILABLE, "iptables -N %s: %s", chain, err[0] ? err : "failed");
}

void firewall_bridge_name(const struct config *cfg, const char *mode, char *out, size_t cap)
{
	const char *sfx = strcmp(mode, "internet") == 0 ? "net" : "iso";
	const char *p = cfg->network_prefix;
	uint32_t h = 2166136261u;

	if (strlen(p) <= 11) {
		snprintf(out, cap, "%s-%s", p, sfx);
		return;
	}
	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	snprintf(out, cap, "sp%08x-%s", (unsigned)h, sfx);
}

void firewall_chain_names(const struct config *cfg, char *in, char *fwd, size_t cap)
{
	char up[32];
	size_t i;

	for (i = 0; cfg->network_prefix[i] && i + 1 < sizeof(up); i++)
		up[i] = (char)toupper((unsigned char)cfg->network_prefix[i]);
	up[i] = '\0';
	snprintf(in, cap, "%s-INPUT", up);
	snprintf(fwd, cap, "%s-FORWARD", up);
}

int firewall_apply(const struct config *cfg, const char *const bridges[], int nb, struct sp_err *e)
{
	char in[48], fwd[48], comment[96];
	const char *jump_from;

	if (pick_iptables(e) < 0)
		return -1;
	firewall_chain_names(cfg, in, fwd, sizeof(in));
	snprintf(comment, sizeof(comment), "sandpit %s", cfg->network_prefix);
	jump_from = ipt_docker_user ? "DOCKER-USER" : "FORWARD";
	if (ensure_chain(in, e) < 0 || ensure_chain(fwd, e) < 0)
		return -1;
	for (int b = 0; b < nb; b++) {
		const char *br = bridges[b];
		const char *est[] = { in,
				      "-i",
				      br,
				      "-m",
				      "conntrack",
				      "--ctstate",
				      "ESTABLISHED,RELATED",
				      "-m",
				      "comment",
				      "--comment",
				      comment,
				      "-j",
				      "RETURN" };
		const char *drop[] = { in,	    "-i",    br,   "-m",  "comment",
				       "--comment", comment, "-j", "DROP" };
		if (!br || !br[0])
			continue;
		if (ensure_rule(est, 13, 0, e) < 0 || ensure_rule(drop, 9, 0, e) < 0)
			return -1;
		{
			char list[sizeof(cfg->deny_cidrs) + 32];
			const char *p;
			snprintf(list, sizeof(list), "%s,%s", LINK_LOCAL, cfg->deny_cidrs);
			p = list;
			while (*p) {
				size_t n = strcspn(p, ", \t");
				if (n > 0 && n < 64) {
					char cidr[64];
					const char *fr[] = { fwd,     "-i", br,	       "-d",
							     cidr,    "-m", "comment", "--comment",
							     comment, "-j", "DROP" };
					memcpy(cidr, p, n);
					cidr[n] = '\0';
					if (ensure_rule(fr, 11, 0, e) < 0)
						return -1;
				}
				p += n;
				while (*p == ',' || *p == ' ' || *p == '\t')
					p++;
			}
		}
	}
	/* the jumps last: a chain is complete before traffic goes through it */
	if (ensure_rule((const char *const[]){ "INPUT", "-j", in }, 3, 1, e) < 0 ||
	    ensure_rule((const char *const[]){ jump_from, "-j", fwd }, 3, 1, e) < 0)
		return -1;
	return 0;
}

int sandbox_firewall_init(const struct config *cfg, struct sp_err *e)
{
	char iso[16], net[16];
	const char *br[2] = { iso, net };

	firewall_bridge_name(cfg, "isolated", iso, sizeof(iso));
	firewall_bridge_name(cfg, "internet", net, sizeof(net));
	if (firewall_apply(cfg, br, 2, e) < 0)
		return -1;
	log_info("local server: deny rules in place for bridges %s and %s", iso, net);
	return 0;
}
