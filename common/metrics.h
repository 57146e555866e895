/*
 * Process-shared counters and latency histograms for GET /metrics. The
 * master maps one fixed table (MAP_SHARED) before it forks, so every worker
 * adds to the same numbers and any worker can render them all. Series are
 * found by name in fixed slots claimed on first use; updates are lock-free
 * atomic adds. Knows no HTTP and no Docker: callers name the series (an
 * operation and a status, an endpoint and a status) and render the text.
 * Without metrics_init (the CLI, unit tests; the process manager calls it
 * in sandpitd's and sandpit-stream's masters) every call is a no-op and
 * render writes nothing.
 */
#ifndef SANDPIT_METRICS_H
#define SANDPIT_METRICS_H

#include <stdint.h>

#include "buf.h"

/* The histogram buckets' upper bounds, in seconds (plus +Inf). */
#define METRICS_BUCKETS 15

enum metrics_family {
	METRICS_REQUEST, /* one request: operation id, HTTP status */
	METRICS_DOCKER,	 /* one Docker call: "METHOD /path/{template}", HTTP status (0 = none) */
	METRICS_FAMILIES
};

/* Gauges of sandpit-stream, kept per process so that a worker that dies
 * takes its share with it (a slot whose pid is gone is not counted). */
enum metrics_gauge {
	METRICS_WS_OPEN,    /* WebSocket connections upgraded and not closed */
	METRICS_WS_RUNNING, /* commands running on them */
	METRICS_GAUGES
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
int metrics_render(struct buf *out) BUF_MUST_CHECK;

/* Adds delta to gauge g of the calling process (its slot is claimed on
 * first use, by pid); METRICS_WS_OPEN with delta > 0 also counts
 * sandpit_ws_connections_total. Lock-free; may be called from any thread. */
void metrics_gauge_add(enum metrics_gauge g, int delta);

/* Appends sandpit_ws_connections, sandpit_ws_commands_running (the sums over
 * live processes) and sandpit_ws_connections_total. -1 past out's cap. */
int metrics_render_stream(struct buf *out) BUF_MUST_CHECK;

/* The instance name of a process listening on socket path listen: its
 * file name without ".sock" ("/run/sandpit/sandpitd-2.sock" →
 * "sandpitd-2"), what nginx's /metrics/NAME uses. */
void metrics_instance_name(const char *listen, char *out, size_t cap);

/* Copies the exposition text in[0..len) to out with the label
 * name="value" added to every sample line (value escaped), so that series
 * of several instances behind one nginx never mix. -1 past out's cap. */
int metrics_add_label(const char *in, size_t len, const char *name, const char *value,
		      struct buf *out) BUF_MUST_CHECK;

#endif
