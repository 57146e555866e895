/*
 * The ceiling for `make bench`: a FastCGI hello-world with libfcgi, the same
 * library and socket kind sandpitd uses, preforked like sandpitd's workers.
 * It answers every request with a fixed small JSON body and does nothing
 * else: no Redis, no Docker, no auth. Usage:
 *   hello_fcgi SOCKET_PATH WORKERS PIDFILE
 * Runs in the foreground until SIGTERM, then stops its workers.
 */
#include <fcgiapp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void serve(int fd)
{
	static const char answer[] = "Status: 200 OK\r\nContent-Type: application/json\r\n"
				     "Content-Length: 18\r\n\r\n{\"hello\":\"world\"}\n";
	FCGX_Request rq;

	signal(SIGTERM, SIG_DFL);
	FCGX_InitRequest(&rq, fd, 0);
	while (FCGX_Accept_r(&rq) >= 0) {
		FCGX_PutStr(answer, (int)sizeof(answer) - 1, rq.out);
		FCGX_Finish_r(&rq);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	long long n;
	pid_t kids[256];
	int fd;
	FILE *f;

	if (argc != 4 || parse_ll(argv[2], 1, 256, &n) < 0) {
		fprintf(stderr, "usage: hello_fcgi SOCKET_PATH WORKERS PIDFILE\n");
		return 2;
	}
	if (FCGX_Init() != 0)
		return 1;
	unlink(argv[1]);
	fd = FCGX_OpenSocket(argv[1], 1024);
	if (fd < 0) {
		fprintf(stderr, "hello_fcgi: cannot listen on %s\n", argv[1]);
		return 1;
	}
	chmod(argv[1], 0660);
	for (long long i = 0; i < n; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			serve(fd);
	}
	f = fopen(argv[3], "w");
	if (f) {
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	while (!stop)
		pause();
	for (long long i = 0; i < n; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGTERM);
	while (wait(NULL) > 0)
		;
	unlink(argv[1]);
	return 0;
}
