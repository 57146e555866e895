/*
 * The process manager: the master binds the FastCGI socket, keeps a pool of
 * preforked workers alive, grows it while every worker is busy, shrinks it
 * when workers sit idle, backs off when workers crash in a loop, reloads its
 * configuration on SIGHUP and drains on SIGTERM. Beside the pool, a fixed
 * set of reserved workers accepts on a second socket (listen_fast) that
 * nginx uses only for the routes that need no Docker, so they answer while
 * every pooled worker is busy. It talks to its workers
 * only through a shared-memory scoreboard (one slot per worker) and signals.
 * The master never serves a request, never calls into libfcgi's request
 * API, and does nothing in a signal handler but set a flag and write a byte
 * to the self-pipe.
 */
#include "pm.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "../common/log.h"
#include "../common/metrics.h"
#include "../common/util.h"

#define PM_TICK_MS 100
#define PM_BACKLOG 1024
#define PM_BACKOFF_MIN_MS 1000
#define PM_BACKOFF_MAX_MS 30000

enum pm_state { PM_FREE = 0, PM_IDLE, PM_BUSY };

/* Why the master asked a worker to stop; PM_RUN while it has not. */
enum pm_stop { PM_RUN = 0, PM_STOP_IDLE, PM_STOP_RELOAD, PM_STOP_SHUTDOWN };

/* One scoreboard slot, in memory shared by the master and all workers. The
 * master writes pid and resets the slot before fork; afterwards only the
 * worker that owns the slot writes state, requests and since_ms. */
struct pm_slot {
	_Atomic int pid;
	_Atomic int state;
	_Atomic unsigned long requests;
	_Atomic long long since_ms; /* mono_ms() of the last state change */
	_Atomic int reserved;	    /* accepts on listen_fast, outside the pool */
	/* the organization (pm_org_hash) of the long request in hand, 0 none */
	_Atomic unsigned long long long_org;
};

/* What only the master knows about a worker, indexed like the scoreboard. */
struct pm_child {
	pid_t pid;
	enum pm_stop stop;
	int killed;   /* SIGKILLed by the master at the drain deadline */
	int reserved; /* one of the workers_reserved on listen_fast */
};

static struct {
	struct config cfg;
	struct config scratch; /* reload target; too large for the stack */
	pm_load_fn load;
	pm_worker_fn worker;
	pid_t master_pid;
	int listen_fd;
	int fast_fd; /* listen_fast, -1 without reserved workers */
	int self_pipe[2];
	struct pm_slot *board;
	struct pm_child child[PM_WORKERS_HARD_MAX];
	int draining;
	int64_t drain_deadline_ms;
	int killed_all;
	int64_t crash_window_start_ms;
	int crashes;
	int64_t backoff_ms;
	int64_t spawn_after_ms;
} pm = { .listen_fd = -1, .fast_fd = -1, .self_pipe = { -1, -1 } };

static volatile sig_atomic_t pm_got_term;
static volatile sig_atomic_t pm_got_hup;

/* Worker-side state, set in the child after fork. */
static struct pm_slot *pm_me;
static volatile sig_atomic_t pm_stop_flag;
static int pm_dead_fd = -1;

static const char *pm_stop_names[] = { "exited on its own", "idle", "replaced after reload",
				       "shutdown" };

/* Master signal handler: records the signal and wakes the loop. */
static void pm_master_signal(int signo)
{
	int saved = errno;
	char c = (char)signo;

	if (signo == SIGTERM || signo == SIGINT || signo == SIGQUIT)
		pm_got_term = 1;
	else if (signo == SIGHUP)
		pm_got_hup = 1;
	if (write(pm.self_pipe[1], &c, 1) < 0) {
		/* A full pipe already holds a wake-up; nothing to do. */
	}
	errno = saved;
}

/* Tells this worker to stop: the flag, libfcgi's own flag, and the listen
 * descriptor swapped for an unconnected socket so that an accept() that is
 * about to start, or is restarted after this handler, fails at once. Only
 * async-signal-safe calls. */
static void pm_worker_stop_now(void)
{
	pm_stop_flag = 1;
	FCGX_ShutdownPending();
	if (pm_dead_fd >= 0 && pm.listen_fd >= 0)
		dup2(pm_dead_fd, pm.listen_fd);
}

static void pm_worker_signal(int signo)
{
	int saved = errno;

	(void)signo;
	pm_worker_stop_now();
	errno = saved;
}

static int pm_sigaction(int signo, void (*fn)(int), int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	if (sigaction(signo, &sa, NULL) < 0) {
		log_error("sigaction(%d): %s", signo, strerror(errno));
		return -1;
	}
	return 0;
}

/* Clamps the pool bounds to what the scoreboard holds. */
static void pm_normalise(struct config *cfg)
{
	if (cfg->workers_max > PM_WORKERS_HARD_MAX)
		cfg->workers_max = PM_WORKERS_HARD_MAX;
	if (cfg->workers_max < 1)
		cfg->workers_max = 1;
	if (cfg->workers_min < 1)
		cfg->workers_min = 1;
	if (cfg->workers_min > cfg->workers_max)
		cfg->workers_min = cfg->workers_max;
}

/* Binds and listens on the unix socket at path with the given file mode.
 * A socket file that nobody answers on is removed; one that answers, or a
 * path that is not a socket, is refused. Returns the descriptor or -1. */
static int pm_bind(const char *path, int mode)
{
	struct sockaddr_un sun;
	struct stat st;
	mode_t old_mask;
	int fd = -1, probe, rc;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (str_copy(sun.sun_path, sizeof(sun.sun_path), path) < 0) {
		log_error("listen %s: path longer than %zu bytes", path, sizeof(sun.sun_path) - 1);
		return -1;
	}
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_error("listen %s: exists and is not a socket; refusing to remove it",
				  path);
			return -1;
		}
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe < 0) {
			log_error("socket: %s", strerror(errno));
			return -1;
		}
		rc = connect(probe, (struct sockaddr *)&sun, sizeof(sun));
		close(probe);
		if (rc == 0) {
			log_error("listen %s: socket in use (another server answers on it)", path);
			return -1;
		}
		if (errno != ECONNREFUSED) {
			log_error("connect %s: %s", path, strerror(errno));
			return -1;
		}
		if (unlink(path) < 0) {
			log_error("unlink stale socket %s: %s", path, strerror(errno));
			return -1;
		}
		log_info("removed stale socket %s", path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_error("socket: %s", strerror(errno));
		return -1;
	}
	old_mask = umask((mode_t)(~mode & 0777));
	rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old_mask);
	if (rc < 0) {
		log_error("bind %s: %s", path, strerror(errno));
		goto fail;
	}
	if (chmod(path, (mode_t)mode) < 0) {
		log_error("chmod %s %04o: %s", path, (unsigned)mode, strerror(errno));
		goto fail_unlink;
	}
	if (listen(fd, PM_BACKLOG) < 0) {
		log_error("listen %s: %s", path, strerror(errno));
		goto fail_unlink;
	}
	return fd;
fail_unlink:
	unlink(path);
fail:
	close(fd);
	return -1;
}

/* The child side of a fork: resets signals, arms parent-death, runs the
 * worker function on its socket (listen, or listen_fast for a reserved
 * worker) and exits. Never returns. */
__attribute__((noreturn)) static void pm_worker_main(int slot, const sigset_t *mask)
{
	pm_me = &pm.board[slot];
	if (pm_me->reserved) {
		close(pm.listen_fd);
		pm.listen_fd = pm.fast_fd;
	} else if (pm.fast_fd >= 0) {
		close(pm.fast_fd);
	}
	pm.fast_fd = -1;
	close(pm.self_pipe[0]);
	close(pm.self_pipe[1]);
	pm.self_pipe[0] = pm.self_pipe[1] = -1;

	if (pm_sigaction(SIGTERM, pm_worker_signal, SA_RESTART) < 0 ||
	    pm_sigaction(SIGQUIT, pm_worker_signal, SA_RESTART) < 0 ||
	    pm_sigaction(SIGINT, pm_worker_signal, SA_RESTART) < 0 ||
	    pm_sigaction(SIGHUP, SIG_IGN, 0) < 0 || pm_sigaction(SIGCHLD, SIG_DFL, 0) < 0 ||
	    pm_sigaction(SIGPIPE, SIG_IGN, 0) < 0)
		exit(1);
	pm_dead_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (pm_dead_fd < 0) {
		log_error("worker socket: %s", strerror(errno));
		exit(1);
	}
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
		log_warn("prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
	if (getppid() != pm.master_pid)
		exit(0); /* the master died before prctl took effect */
	sigprocmask(SIG_SETMASK, mask, NULL);

	pm.worker(&pm.cfg, pm.listen_fd);
	exit(0);
}

/* Forks one worker into a free slot, a reserved one (listen_fast) when
 * reserved. Returns 0, or -1 when no slot is free or fork fails (logged). */
static int pm_spawn(int reserved)
{
	sigset_t all, old;
	struct pm_slot *s;
	pid_t pid;
	int i;

	for (i = 0; i < PM_WORKERS_HARD_MAX; i++)
		if (pm.child[i].pid == 0)
			break;
	if (i == PM_WORKERS_HARD_MAX) {
		log_warn("no free worker slot (%d in use)", PM_WORKERS_HARD_MAX);
		return -1;
	}
	s = &pm.board[i];
	s->pid = 0;
	s->state = PM_IDLE;
	s->requests = 0;
	s->since_ms = mono_ms();
	s->reserved = reserved;
	s->long_org = 0;

	/* Block every signal so the child cannot run the master's handlers
	 * before it has installed its own. */
	fflush(NULL); /* or the child would write the master's buffered output again */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	pid = fork();
	if (pid == 0)
		pm_worker_main(i, &old);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		log_error("fork: %s", strerror(errno));
		s->state = PM_FREE;
		return -1;
	}
	s->pid = pid;
	pm.child[i].pid = pid;
	pm.child[i].stop = PM_RUN;
	pm.child[i].killed = 0;
	pm.child[i].reserved = reserved;
	log_info("worker %d started (slot %d%s)", (int)pid, i, reserved ? ", reserved" : "");
	return 0;
}

/* Asks worker i to stop after its current request, for the given reason. */
static void pm_stop_child(int i, enum pm_stop why, int signo)
{
	pm.child[i].stop = why;
	if (kill(pm.child[i].pid, signo) < 0 && errno != ESRCH)
		log_warn("kill(%d, %d): %s", (int)pm.child[i].pid, signo, strerror(errno));
}

/* Records one crash; past crash_limit within crash_window_s, delays the
 * next respawn, doubling the delay each time from 1 s up to 30 s. */
static void pm_note_crash(int64_t now)
{
	int64_t window = (int64_t)pm.cfg.crash_window_s * 1000;

	if (now - pm.crash_window_start_ms >= window) {
		if (pm.crashes <= pm.cfg.crash_limit)
			pm.backoff_ms = 0; /* a calm window forgives */
		pm.crash_window_start_ms = now;
		pm.crashes = 0;
	}
	pm.crashes++;
	if (pm.crashes <= pm.cfg.crash_limit || pm.spawn_after_ms > now)
		return;
	pm.backoff_ms = pm.backoff_ms ? pm.backoff_ms * 2 : PM_BACKOFF_MIN_MS;
	if (pm.backoff_ms > PM_BACKOFF_MAX_MS)
		pm.backoff_ms = PM_BACKOFF_MAX_MS;
	pm.spawn_after_ms = now + pm.backoff_ms;
	log_warn("%d worker crashes within %d s (limit %d): backing off, next respawn in %lld ms",
		 pm.crashes, pm.cfg.crash_window_s, pm.cfg.crash_limit, (long long)pm.backoff_ms);
}

/* Collects every exited worker, logs why it went, frees its slot. */
static void pm_reap(int64_t now)
{
	char how[64];
	pid_t pid;
	int status, i, crash;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (i = 0; i < PM_WORKERS_HARD_MAX; i++)
			if (pm.child[i].pid == pid)
				break;
		if (i == PM_WORKERS_HARD_MAX)
			continue; /* not a worker (a grandchild re-parented to us) */
		if (WIFSIGNALED(status)) {
			snprintf(how, sizeof(how), "killed by signal %d (%s)", WTERMSIG(status),
				 strsignal(WTERMSIG(status)));
			crash = !pm.child[i].killed;
		} else {
			snprintf(how, sizeof(how), "exited with status %d", WEXITSTATUS(status));
			crash = WEXITSTATUS(status) != 0;
		}
		if (crash) {
			log_warn("worker %d (slot %d) %s after %lu requests: crash", (int)pid, i,
				 how, (unsigned long)pm.board[i].requests);
			if (!pm.draining)
				pm_note_crash(now);
		} else {
			const char *why = pm_stop_names[pm.child[i].stop];

			if (pm.child[i].stop == PM_RUN && pm.cfg.max_requests > 0 &&
			    pm.board[i].requests >= (unsigned long)pm.cfg.max_requests)
				why = "recycled after max_requests";
			log_info("worker %d (slot %d) %s after %lu requests: %s", (int)pid, i, how,
				 (unsigned long)pm.board[i].requests, why);
		}
		memset(&pm.child[i], 0, sizeof(pm.child[i]));
		pm.board[i].pid = 0;
		pm.board[i].long_org = 0; /* a killed worker's long request ends with it */
		pm.board[i].state = PM_FREE;
	}
	if (pid < 0 && errno != ECHILD && errno != EINTR)
		log_warn("waitpid: %s", strerror(errno));
}

/* Keeps workers_min alive, grows while all are busy, shrinks surplus idle. */
static void pm_maintain(int64_t now)
{
	int live = 0, busy = 0, idle_long = 0, oldest = -1, reserved = 0;
	int64_t idle_limit = (int64_t)pm.cfg.idle_timeout_s * 1000;
	long long oldest_since = 0;

	for (int i = 0; i < PM_WORKERS_HARD_MAX; i++) {
		long long since;

		if (pm.child[i].pid == 0 || pm.child[i].stop != PM_RUN)
			continue;
		if (pm.child[i].reserved) {
			reserved++;
			continue;
		}
		live++;
		if (pm.board[i].state == PM_BUSY) {
			busy++;
			continue;
		}
		since = pm.board[i].since_ms;
		if (now - since > idle_limit) {
			idle_long++;
			if (oldest < 0 || since < oldest_since) {
				oldest = i;
				oldest_since = since;
			}
		}
	}
	if (now >= pm.spawn_after_ms) {
		while (pm.fast_fd >= 0 && reserved < pm.cfg.workers_reserved && pm_spawn(1) == 0)
			reserved++;
		while (live < pm.cfg.workers_min && pm_spawn(0) == 0)
			live++;
		if (live > 0 && busy == live && live < pm.cfg.workers_max && pm_spawn(0) == 0)
			log_info("all %d workers busy: growing the pool to %d", live, live + 1);
	}
	if (live > pm.cfg.workers_min && idle_long > pm.cfg.workers_min && oldest >= 0) {
		log_info("worker %d idle for %lld ms: shrinking the pool to %d",
			 (int)pm.child[oldest].pid, (long long)(now - oldest_since), live - 1);
		pm_stop_child(oldest, PM_STOP_IDLE, SIGQUIT);
	}
}

/* SIGHUP: loads the configuration into a scratch copy; on success adopts
 * it and replaces every worker gracefully, on failure changes nothing. */
static void pm_reload(void)
{
	struct config *nc = &pm.scratch;
	enum log_level level;
	char err[1024];
	int replaced = 0;

	memset(nc, 0, sizeof(*nc));
	err[0] = '\0';
	if (pm.load(pm.cfg.path, nc, err, sizeof(err)) < 0) {
		log_error("configuration reload failed, keeping the old one: %s", err);
		config_wipe(nc);
		return;
	}
	if (nc->path[0] == '\0')
		str_copy(nc->path, sizeof(nc->path), pm.cfg.path);
	pm_normalise(nc);
	if (strcmp(nc->listen, pm.cfg.listen) != 0) {
		log_warn("reload: listen changed from %s to %s; rebinding is not supported on "
			 "reload, still listening on %s (restart to move it)",
			 pm.cfg.listen, nc->listen, pm.cfg.listen);
		str_copy(nc->listen, sizeof(nc->listen), pm.cfg.listen);
	}
	if (strcmp(nc->listen_fast, pm.cfg.listen_fast) != 0) {
		log_warn("reload: listen_fast changed; still on %s (restart to move it)",
			 pm.cfg.listen_fast);
		str_copy(nc->listen_fast, sizeof(nc->listen_fast), pm.cfg.listen_fast);
	}
	if (nc->listen_mode != pm.cfg.listen_mode &&
	    chmod(pm.cfg.listen, (mode_t)nc->listen_mode) < 0)
		log_warn("chmod %s %04o: %s", pm.cfg.listen, (unsigned)nc->listen_mode,
			 strerror(errno));
	if (log_level_parse(nc->log_level, &level) == 0)
		log_setup(NULL, level, nc->log_json);
	memcpy(&pm.cfg, nc, sizeof(pm.cfg));
	config_wipe(nc);

	/* A new configuration may cure a crash loop: start counting afresh. */
	pm.crashes = 0;
	pm.backoff_ms = 0;
	pm.spawn_after_ms = 0;
	for (int i = 0; i < PM_WORKERS_HARD_MAX; i++) {
		if (pm.child[i].pid == 0 || pm.child[i].stop != PM_RUN)
			continue;
		pm_stop_child(i, PM_STOP_RELOAD, SIGQUIT);
		replaced++;
	}
	log_info("configuration reloaded from %s: replacing %d workers (workers %d..%d)",
		 pm.cfg.path, replaced, pm.cfg.workers_min, pm.cfg.workers_max);
}

/* SIGTERM: stops accepting (unlinks the socket), tells every worker to
 * finish the request in hand and exit, and arms the drain deadline. */
static void pm_drain_begin(int64_t now)
{
	int n = 0;

	pm.draining = 1;
	pm.drain_deadline_ms = now + (int64_t)pm.cfg.drain_timeout_s * 1000;
	if (unlink(pm.cfg.listen) < 0 && errno != ENOENT)
		log_warn("unlink %s: %s", pm.cfg.listen, strerror(errno));
	close(pm.listen_fd);
	pm.listen_fd = -1;
	if (pm.fast_fd >= 0) {
		if (unlink(pm.cfg.listen_fast) < 0 && errno != ENOENT)
			log_warn("unlink %s: %s", pm.cfg.listen_fast, strerror(errno));
		close(pm.fast_fd);
		pm.fast_fd = -1;
	}
	for (int i = 0; i < PM_WORKERS_HARD_MAX; i++) {
		if (pm.child[i].pid == 0)
			continue;
		pm_stop_child(i, PM_STOP_SHUTDOWN, SIGTERM);
		n++;
	}
	log_info("shutting down: draining %d workers (at most %d s)", n, pm.cfg.drain_timeout_s);
}

static int pm_count_children(void)
{
	int n = 0;

	for (int i = 0; i < PM_WORKERS_HARD_MAX; i++)
		if (pm.child[i].pid != 0)
			n++;
	return n;
}

/* At the drain deadline: SIGKILLs every worker still running. */
static void pm_drain_kill(void)
{
	for (int i = 0; i < PM_WORKERS_HARD_MAX; i++) {
		if (pm.child[i].pid == 0)
			continue;
		log_warn("worker %d still busy after %d s: SIGKILL", (int)pm.child[i].pid,
			 pm.cfg.drain_timeout_s);
		pm.child[i].killed = 1;
		kill(pm.child[i].pid, SIGKILL);
	}
	pm.killed_all = 1;
}

/* Sleeps until a signal byte arrives or one tick has passed. */
static void pm_wait_tick(void)
{
	struct pollfd pfd = { .fd = pm.self_pipe[0], .events = POLLIN };
	char buf[64];

	if (poll(&pfd, 1, PM_TICK_MS) > 0)
		while (read(pm.self_pipe[0], buf, sizeof(buf)) > 0)
			;
}

static int pm_setup_master(void)
{
	size_t len = sizeof(struct pm_slot) * PM_WORKERS_HARD_MAX;
	void *p;

	if (pipe2(pm.self_pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
		log_error("pipe2: %s", strerror(errno));
		return -1;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		log_error("mmap scoreboard (%zu bytes): %s", len, strerror(errno));
		return -1;
	}
	pm.board = p;
	memset(pm.board, 0, len);
	/* GET /metrics: counters every worker adds to, shared like the board */
	if (metrics_init() < 0)
		log_warn("mmap metrics: %s (metrics stay empty)", strerror(errno));
	if (pm_sigaction(SIGTERM, pm_master_signal, SA_RESTART) < 0 ||
	    pm_sigaction(SIGINT, pm_master_signal, SA_RESTART) < 0 ||
	    pm_sigaction(SIGQUIT, pm_master_signal, SA_RESTART) < 0 ||
	    pm_sigaction(SIGHUP, pm_master_signal, SA_RESTART) < 0 ||
	    pm_sigaction(SIGCHLD, pm_master_signal, SA_RESTART | SA_NOCLDSTOP) < 0 ||
	    pm_sigaction(SIGPIPE, SIG_IGN, 0) < 0)
		return -1;
	return 0;
}

static void pm_cleanup(void)
{
	if (pm.listen_fd >= 0) {
		close(pm.listen_fd);
		pm.listen_fd = -1;
	}
	if (pm.fast_fd >= 0) {
		close(pm.fast_fd);
		pm.fast_fd = -1;
	}
	for (int i = 0; i < 2; i++) {
		if (pm.self_pipe[i] >= 0)
			close(pm.self_pipe[i]);
		pm.self_pipe[i] = -1;
	}
	if (pm.board) {
		munmap(pm.board, sizeof(struct pm_slot) * PM_WORKERS_HARD_MAX);
		pm.board = NULL;
	}
	config_wipe(&pm.cfg);
}

int pm_run(const struct config *cfg, pm_load_fn load, pm_worker_fn worker)
{
	int64_t now;

	memcpy(&pm.cfg, cfg, sizeof(pm.cfg));
	pm_normalise(&pm.cfg);
	pm.load = load;
	pm.worker = worker;
	pm.master_pid = getpid();

	if (pm_setup_master() < 0)
		goto fail;
	pm.listen_fd = pm_bind(pm.cfg.listen, pm.cfg.listen_mode);
	if (pm.listen_fd < 0)
		goto fail;
	if (pm.cfg.workers_reserved > 0 && pm.cfg.listen_fast[0]) {
		pm.fast_fd = pm_bind(pm.cfg.listen_fast, pm.cfg.listen_mode);
		if (pm.fast_fd < 0)
			goto fail;
	}
	log_info("master listening on %s (mode %04o), workers %d..%d, max_requests %d; "
		 "%d reserved on %s",
		 pm.cfg.listen, (unsigned)pm.cfg.listen_mode, pm.cfg.workers_min,
		 pm.cfg.workers_max, pm.cfg.max_requests,
		 pm.fast_fd >= 0 ? pm.cfg.workers_reserved : 0,
		 pm.fast_fd >= 0 ? pm.cfg.listen_fast : "-");

	for (;;) {
		now = mono_ms();
		if (pm_got_term && !pm.draining)
			pm_drain_begin(now);
		if (pm_got_hup) {
			pm_got_hup = 0;
			if (!pm.draining)
				pm_reload();
		}
		pm_reap(now);
		if (!pm.draining) {
			pm_maintain(now);
		} else {
			if (pm_count_children() == 0)
				break;
			if (!pm.killed_all && now >= pm.drain_deadline_ms)
				pm_drain_kill();
		}
		pm_wait_tick();
	}
	log_info("all workers gone; master exits");
	pm_cleanup();
	return 0;
fail:
	pm_cleanup();
	return 1;
}

void pm_worker_busy(int busy)
{
	if (!pm_me)
		return;
	/* The time first: the master must never see a fresh state with a
	 * stale time (it would take a worker that just finished for one idle
	 * since before its request). */
	pm_me->since_ms = mono_ms();
	if (busy) {
		pm_me->state = PM_BUSY;
	} else {
		unsigned long n = ++pm_me->requests;

		pm_me->state = PM_IDLE;
		if (pm.cfg.max_requests > 0 && n >= (unsigned long)pm.cfg.max_requests)
			pm_worker_stop_now();
	}
}

void pm_worker_background(int on)
{
	static long long idle_since;

	if (!pm_me)
		return;
	if (on) {
		idle_since = pm_me->since_ms;
		pm_me->since_ms = mono_ms();
		pm_me->state = PM_BUSY;
	} else {
		/* the idle time counts on from before: background work does not
		 * keep a worker the pool could shed */
		pm_me->since_ms = idle_since;
		pm_me->state = PM_IDLE;
	}
}

int pm_worker_should_stop(void)
{
	if (!pm_me)
		return 0;
	return pm_stop_flag || getppid() != pm.master_pid;
}

int pm_worker_reserved(void)
{
	return pm_me && pm_me->reserved;
}

void pm_worker_retire(void)
{
	if (pm_me)
		pm_worker_stop_now();
}

unsigned long long pm_org_hash(const char *org)
{
	unsigned long long h = 1469598103934665603ULL; /* FNV-1a 64 */

	for (const unsigned char *c = (const unsigned char *)org; *c; c++) {
		h ^= *c;
		h *= 1099511628211ULL;
	}
	return h ? h : 1;
}

int pm_worker_long_begin(const char *org, int share, int *held, int *total)
{
	unsigned long long h = pm_org_hash(org);
	int n_org = 0, n_all = 0;

	if (held)
		*held = 0;
	if (total)
		*total = 0;
	if (!pm_me || pm_me->reserved)
		return 0;
	if (share < 1)
		share = 1;
	/* announce first, then count: two workers admitting at once each see
	 * the other, so the bound is never passed (at worst both refuse) */
	pm_me->long_org = h;
	for (int i = 0; i < PM_WORKERS_HARD_MAX; i++) {
		unsigned long long o;

		if (pm.board[i].pid == 0 || pm.board[i].reserved)
			continue;
		o = pm.board[i].long_org;
		if (!o)
			continue;
		n_all++;
		if (o == h)
			n_org++;
	}
	if (held)
		*held = n_org - 1;
	if (total)
		*total = n_all - 1;
	if (n_org <= share || n_all <= pm.cfg.workers_max - share)
		return 0;
	pm_me->long_org = 0;
	return 1;
}

void pm_worker_long_end(void)
{
	if (pm_me)
		pm_me->long_org = 0;
}
