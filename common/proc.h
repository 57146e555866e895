/*
 * Who a process is, in a form another process can check later: the
 * host's boot, the PID namespace, the pid and the process's start time,
 * so that a reused pid or another host is never taken for the same
 * process. Used by the Idempotency-Key ledger to know that the worker of
 * a first request is gone. And a process's own resident memory, so that a
 * worker gives back what a large request made it take. Reads /proc only;
 * never signals anything.
 */
#ifndef SANDPIT_PROC_H
#define SANDPIT_PROC_H

#include <stddef.h>

#define PROC_IDENTITY_MAX 128

/* This process's identity ("boot:pidns:pid:start") into out (at least
 * PROC_IDENTITY_MAX); "" when /proc cannot say. */
void proc_identity(char *out, size_t cap);
/* 1 when id names a process of this host and PID namespace that no longer
 * runs (its pid is free, or held by a process started at another time);
 * 0 when it runs, or when that cannot be known here (another host or
 * namespace, an empty or malformed id). id may go on after the identity
 * with ':' and anything (a nonce). */
int proc_identity_gone(const char *id);

/* This process's resident set in bytes (/proc/self/statm, one small read);
 * -1 when /proc cannot say. */
long long proc_rss_bytes(void);
/* For a worker after it answered: when the resident set is over max_bytes
 * (> 0), gives freed heap back to the kernel (malloc_trim(0)) and looks
 * again. Returns 1 when it is still over (the caller retires), 0 when it
 * is within the bound (or /proc cannot say, or max_bytes is 0). *rss_out,
 * when not NULL, receives the last figure read (-1 unknown). */
int proc_rss_settle(long long max_bytes, long long *rss_out);

#endif
