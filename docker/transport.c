/*
 * How a handle reaches its daemon: a unix socket, TCP with TLS client
 * certificates, or ssh running `docker system dial-stdio` on the far side.
 * Over ssh, libcurl talks HTTP to a local unix socket served by a small
 * bridge process of the worker, which runs one `ssh … docker system
 * dial-stdio` per connection. libcurl keeps its connection open across
 * requests like any other, and ssh's ControlMaster makes each further
 * connection (an exec stream, a reconnect) a channel of the one
 * authenticated ssh connection instead of a fresh handshake. Never passes a value to ssh that
 * parse_endpoint has not checked, and never through a shell.
 */
#include "docker_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "../common/log.h"

/* The ControlMaster socket's name: 40 hex digits of a hash over everything
 * that decides what the ssh connection may do (destination, port, key,
 * known_hosts), not only ssh's %C (user, host, port): two servers at one
 * endpoint with different keys or host keys never share an authenticated
 * connection, so a server with a wrong key or an unknown host key is
 * refused even while another's master is up. */
static void control_name(const struct docker_client *c, char out[41])
{
	unsigned char h[20];
	crypto_generichash_state st;
	const char *parts[] = { c->ssh_dest, c->ssh_port, c->ssh_key, c->ssh_known_hosts };

	crypto_generichash_init(&st, NULL, 0, sizeof(h));
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		crypto_generichash_update(&st, (const unsigned char *)parts[i],
					  strlen(parts[i]) + 1); /* the NUL separates them */
	crypto_generichash_final(&st, h, sizeof(h));
	sodium_bin2hex(out, 41, h, sizeof(h));
}

/* Fills argv with the ssh command line for c (dial-stdio on the far side). */
static void ssh_argv(struct docker_client *c, char **argv, char *timeout, size_t tcap, char *khosts,
		     size_t kcap, char *ctl_path, size_t ccap)
{
	static char persist[] = "ControlPersist=120";
	int n = 0;

	snprintf(timeout, tcap, "ConnectTimeout=%d", (c->connect_timeout_ms + 999) / 1000);
	argv[n++] = "ssh";
	argv[n++] = "-T";
	argv[n++] = "-o";
	argv[n++] = "BatchMode=yes";
	argv[n++] = "-o";
	argv[n++] = timeout;
	argv[n++] = "-o";
	argv[n++] = "ServerAliveInterval=15";
	argv[n++] = "-p";
	argv[n++] = c->ssh_port;
	if (c->ssh_key[0]) {
		argv[n++] = "-i";
		argv[n++] = c->ssh_key;
		argv[n++] = "-o";
		argv[n++] = "IdentitiesOnly=yes";
	}
	if (c->ssh_known_hosts[0]) {
		snprintf(khosts, kcap, "UserKnownHostsFile=%s", c->ssh_known_hosts);
		argv[n++] = "-o";
		argv[n++] = khosts;
		argv[n++] = "-o";
		argv[n++] = "StrictHostKeyChecking=yes";
	}
	if (c->pooled && c->ssh_control_dir[0]) {
		char name[41];
		control_name(c, name);
		snprintf(ctl_path, ccap, "ControlPath=%s/%s", c->ssh_control_dir, name);
		argv[n++] = "-o";
		argv[n++] = "ControlMaster=auto";
		argv[n++] = "-o";
		argv[n++] = ctl_path;
		argv[n++] = "-o";
		argv[n++] = persist;
	} else {
		argv[n++] = "-o";
		argv[n++] = "ControlMaster=no";
		argv[n++] = "-o";
		argv[n++] = "ControlPath=none";
	}
	argv[n++] = "--";
	argv[n++] = c->ssh_dest;
	argv[n++] = "docker";
	argv[n++] = "system";
	argv[n++] = "dial-stdio";
	argv[n] = NULL;
}

/* The bridge process: accepts connections on lfd and runs one
 * `ssh … docker system dial-stdio` per connection with the connection as
 * its stdin and stdout. With ControlMaster each of those is a channel of
 * one authenticated ssh connection. Dies with the worker. */
static void bridge_main(struct docker_client *c, int lfd, pid_t parent)
{
	char timeout[64], khosts[4200], ctl[1100], *argv[40];

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(0);
	signal(SIGCHLD, SIG_IGN); /* ssh children are reaped by the kernel */
	signal(SIGPIPE, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	/* keep only the listening socket, as fd 3 */
	if (lfd != 3 && dup2(lfd, 3) == 3)
		lfd = 3;
	close_range(lfd + 1, ~0U, 0);
	ssh_argv(c, argv, timeout, sizeof(timeout), khosts, sizeof(khosts), ctl, sizeof(ctl));
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), devnull;
		pid_t pid;
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			_exit(1);
		}
		pid = fork();
		if (pid == 0) {
			dup2(fd, STDIN_FILENO);
			dup2(fd, STDOUT_FILENO);
			devnull = open("/dev/null", O_WRONLY);
			if (devnull >= 0)
				dup2(devnull, STDERR_FILENO);
			close_range(3, ~0U, 0);
			execvp("ssh", argv);
			_exit(127);
		}
		close(fd);
	}
}

/* Starts the client's bridge if it is not running; its socket path goes
 * into c->sock. -1 when it cannot (the request then fails as unreachable). */
static int bridge_ensure(struct docker_client *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	pid_t parent = getpid(), pid;
	int lfd;

	if (c->bridge_pid > 0 && c->bridge_owner == parent &&
	    waitpid(c->bridge_pid, NULL, WNOHANG) == 0)
		return 0; /* still running */
	if (c->ssh_control_dir[0])
		mkdir(c->ssh_control_dir, 0700);
	snprintf(c->sock, sizeof(c->sock), "%s/b%d-%lx.sock",
		 c->ssh_control_dir[0] ? c->ssh_control_dir : "/tmp", (int)parent,
		 (unsigned long)(uintptr_t)c & 0xffffff);
	if (strlen(c->sock) >= sizeof(sa.sun_path)) {
		log_error("docker ssh: bridge socket path %s is too long", c->sock);
		return -1;
	}
	memcpy(sa.sun_path, c->sock, strlen(c->sock) + 1);
	unlink(c->sock);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 64) < 0) {
		log_error("docker ssh: bridge socket %s: %m", c->sock);
		if (lfd >= 0)
			close(lfd);
		return -1;
	}
	chmod(c->sock, 0600);
	pid = fork();
	if (pid < 0) {
		log_error("docker ssh: fork: %m");
		close(lfd);
		return -1;
	}
	if (pid == 0)
		bridge_main(c, lfd, parent);
	close(lfd);
	c->bridge_pid = pid;
	c->bridge_owner = parent;
	return 0;
}

void docker_transport_close(struct docker_client *c)
{
	if (c->bridge_pid > 0 && c->bridge_owner == getpid()) {
		kill(c->bridge_pid, SIGTERM);
		waitpid(c->bridge_pid, NULL, 0);
		unlink(c->sock);
	}
	c->bridge_pid = 0;
}

void docker_transport_apply(struct docker_client *c, CURL *h)
{
	switch (c->transport) {
	case DT_UNIX:
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->sock);
		curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
		break;
	case DT_TCP:
		curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->tls_cert);
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->tls_key);
		curl_easy_setopt(h, CURLOPT_CAINFO, c->tls_ca);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
		/* A full handshake on every new connection: a TLS front that
		 * checks client certificates without a session id context (socat,
		 * some proxies) fails a resumed session with "internal error".
		 * Connections are kept alive, so this costs little. */
		curl_easy_setopt(h, CURLOPT_SSL_SESSIONID_CACHE, 0L);
		break;
	case DT_SSH:
		/* HTTP over the bridge's local socket; a dead bridge is restarted */
		bridge_ensure(c);
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->sock);
		curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
		break;
	}
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_timeout_ms);
	if (!c->pooled)
		curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
}
