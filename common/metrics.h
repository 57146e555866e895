/*
 * Process-shared counters and latency histograms for GET /metrics. The
 * master maps one fixed table (MAP_SHARED) before it forks, so every worker
 * adds to the same numbers and any worker can render them all. Series are
 * found by name in fixed slots claimed on first use; updates are lock-free
 * atomic adds. Knows no HTTP and no Docker: callers name the series (an
 * operation and a status, an endpoint and a status) and render the text.
 * Without metrics_init (the CLI, sandpit-stream, unit tests) every call is
 * a no-op and render writes nothing.
 */
#ifndef SANDPIT_METRICS_H
#define SANDPIT_METRICS_H

#include <stdint.h>

#include "buf.h"

/* The histogram buckets' upper bounds, in seconds (plus +Inf). */
#define METRICS_BUCKETS 15

enum metrics_family {
	METRICS_REQUEST, /* one request: operation id, HTTP status */
	METRICS_DOCKER,  /* one Docker call: "METHOD /path/{template}", HTTP status (0 = none) */
	METRICS_FAMILIES
};

/* Maps the shared table (anonymous, MAP_SHARED) once; call in the master
 * before forking. Idempotent. -1 when mmap fails (metrics stay off). The
 * mapping lives until the process exits. */
int metrics_init(void);

/* Adds one observation of us microseconds to the series (name, status) of
 * family f. name is copied (at most 63 bytes are kept). When every slot is
 * taken the observation goes to the series ("other", status). */
void metrics_observe(enum metrics_family f, const char *name, int status, int64_t us);

/* Appends the Prometheus text exposition of both families to out:
 * sandpit_requests_total / sandpit_request_duration_seconds (labels
 * operation, status) and sandpit_docker_requests_total /
 * sandpit_docker_request_duration_seconds (labels endpoint, status).
 * Buckets are cumulative and the _count equals the +Inf bucket. -1 when
 * out's cap is crossed. */
int metrics_render(struct buf *out);

#endif
