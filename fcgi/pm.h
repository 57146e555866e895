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

/* Runs in each worker after fork: serve requests on listen_fd until
 * pm_worker_should_stop() or max_requests, then return (the worker exits
 * 0). cfg is the configuration in force when the worker was forked. */
typedef void (*pm_worker_fn)(const struct config *cfg, int listen_fd);

/* Loads a configuration; the same function sandpitd -t uses. */
typedef int (*pm_load_fn)(const char *path, struct config *cfg, char *err, size_t errlen);

/* Runs the master until it has drained after SIGTERM/SIGINT; returns the
 * process exit status. cfg is the configuration already loaded from
 * cfg->path (the master keeps its own copy). Binds cfg->listen (removing a
 * stale socket file; refusing one that a live server still answers on). */
int pm_run(const struct config *cfg, pm_load_fn load, pm_worker_fn worker);

/* For workers: mark the start and end of a request (the master reads this
 * to grow the pool), and ask whether to stop after the current request. */
void pm_worker_busy(int busy);
int pm_worker_should_stop(void);

#endif
