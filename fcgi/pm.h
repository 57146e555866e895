/*
 * The process manager: a master that binds the FastCGI socket, forks
 * workers, and serves no requests itself. Workers are respawned when they
 * die (with a back-off when they crash too often), the pool grows toward
 * workers_max while every worker is busy and shrinks back to workers_min
 * when idle, a worker is recycled after max_requests, SIGHUP re-reads the
 * configuration (a broken one is refused and the old one kept) and replaces
 * the workers gracefully, SIGTERM/SIGINT drain: workers finish the request
 * in hand and exit; the master exits when all are gone (or SIGKILLs them
 * after drain_timeout_s). Signal handlers only set flags.
 */
#ifndef SANDPIT_PM_H
#define SANDPIT_PM_H

#include "../common/config.h"

/* Hard cap on workers: the scoreboard is sized for this many slots up
 * front so that a reload may raise workers_max; a larger workers_max is
 * clamped to it. */
#define PM_WORKERS_HARD_MAX 1024

/* Runs in each worker after fork: serve requests on listen_fd until
 * pm_worker_should_stop() or max_requests, then return (the worker exits
 * 0). cfg is the configuration in force when the worker was forked.
 *
 * The loop is: while (!pm_worker_should_stop()) { FCGX_Accept_r;
 * pm_worker_busy(1); answer; FCGX_Finish_r; pm_worker_busy(0); }.
 * Finish the request before pm_worker_busy(0): the answer must be flushed
 * before the worker may be told it is done. Once the worker is told to stop
 * (SIGTERM/SIGQUIT/SIGINT, max_requests, or the master died),
 * FCGX_ShutdownPending() has been called and listen_fd has been replaced by
 * an unconnected socket, so a pending or later accept() on it fails at once
 * instead of waiting for the next connection. Signal handlers are installed
 * with SA_RESTART so that a stop signal never breaks the I/O of the request
 * in hand; sleeps and poll() still return EINTR and must resume. */
typedef void (*pm_worker_fn)(const struct config *cfg, int listen_fd);

/* Loads a configuration; the same function sandpitd -t uses. */
typedef int (*pm_load_fn)(const char *path, struct config *cfg, char *err, size_t errlen);

/* Runs the master until it has drained after SIGTERM/SIGINT/SIGQUIT;
 * returns the process exit status (0 after a drain, 1 when it could not
 * start). cfg is the configuration already loaded from cfg->path (the master
 * keeps its own copy; the caller's is not touched). Binds cfg->listen
 * (removing a stale socket file; refusing one that a live server still
 * answers on, and any path that is not a socket). On SIGHUP calls
 * load(cfg->path, scratch, ...) and, if it succeeds, replaces every worker;
 * the listen path is not rebound on reload. The socket file is unlinked when
 * the drain starts, so new connections fail fast instead of queueing on a
 * socket that no worker will accept from again. Call once per process. */
int pm_run(const struct config *cfg, pm_load_fn load, pm_worker_fn worker);

/* For workers: mark the start and end of a request (the master reads this
 * to grow and shrink the pool), and ask whether to stop after the current
 * request. pm_worker_busy(0) counts the request; when the count reaches
 * cfg->max_requests (if > 0) it sets the stop flag, so the worker_fn need not
 * count. pm_worker_should_stop() is also true once the master has died.
 * Both are no-ops / false outside a worker. */
void pm_worker_busy(int busy);
/* For workers: mark work done outside a request (between requests or
 * while idle). The master counts the worker busy meanwhile, so a worker
 * held there (by a Docker server that stopped answering, RELIABILITY L2)
 * is not taken for one that can accept, and the pool grows past it. It
 * counts no request and keeps the idle time from before. */
void pm_worker_background(int on);
int pm_worker_should_stop(void);
/* For workers: 1 in a reserved worker (listen_fast: the routes without
 * Docker; it runs no background work). */
int pm_worker_reserved(void);
/* For workers: stop after the request in hand (the master starts another
 * as needed); used when a worker's memory stays over worker_max_rss_mb. */
void pm_worker_retire(void);

/* A fair share of the workers (RELIABILITY T2). A worker about to run a
 * long request (an exec, a file transfer, a capture) of org calls
 * pm_worker_long_begin; it is admitted (0) while org holds at most share
 * of this instance's pooled workers with long requests, or while the
 * long requests of all organizations together leave share workers of
 * workers_max for the others; else refused (1: answer 429). held and
 * total (may be NULL) get what org and everyone held before this one. An
 * admitted request calls pm_worker_long_end when it is done; a worker
 * that dies ends its own (the master clears its slot). Reserved workers
 * and processes outside the pool are always admitted. */
int pm_worker_long_begin(const char *org, int share, int *held, int *total);
void pm_worker_long_end(void);
/* A 64-bit hash of an organization's name, never 0. */
unsigned long long pm_org_hash(const char *org);

#endif
