/*
 * The shared metrics table (see metrics.h). One anonymous MAP_SHARED
 * mapping made by the master before fork; workers claim a slot for a new
 * series with a compare-and-swap and update it with relaxed atomic adds.
 * It must never take a lock (a worker killed mid-update would hold it) and
 * never allocate on the update path.
 */
#include "metrics.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define METRICS_SLOTS 192
#define METRICS_NAME 64

enum { SLOT_FREE = 0, SLOT_CLAIMING, SLOT_READY };

struct metrics_slot {
	_Atomic uint32_t state;
	int32_t status;
	char name[METRICS_NAME];
	_Atomic uint64_t sum_us;
	_Atomic uint64_t bucket[METRICS_BUCKETS + 1]; /* not cumulative; last = +Inf */
};

#define METRICS_PROCS 128

struct metrics_proc {
	_Atomic int32_t pid; /* 0 = free */
	_Atomic int64_t gauge[METRICS_GAUGES];
};

struct metrics_table {
	struct metrics_slot slot[METRICS_FAMILIES][METRICS_SLOTS];
	struct metrics_proc proc[METRICS_PROCS];
	_Atomic uint64_t ws_total;
};

/* Upper bounds in microseconds and as Prometheus prints them. */
static const uint64_t bound_us[METRICS_BUCKETS] = {
	500,	1000,	2500,	 5000,	  10000,   25000,    50000,    100000,
	250000, 500000, 1000000, 2500000, 5000000, 10000000, 60000000,
};
static const char *const bound_txt[METRICS_BUCKETS] = {
	"0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
	"0.25",	  "0.5",   "1",	     "2.5",   "5",    "10",    "60",
};

static struct metrics_table *table;

int metrics_init(void)
{
	void *p;

	if (table)
		return 0;
	p = mmap(NULL, sizeof(*table), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	memset(p, 0, sizeof(*table));
	table = p;
	return 0;
}

static int slot_is(struct metrics_slot *s, const char *name, int status)
{
	return s->status == status && strncmp(s->name, name, METRICS_NAME - 1) == 0;
}

/* The slot of (name, status): found, or claimed in the first free place. */
static struct metrics_slot *slot_find(struct metrics_slot *v, const char *name, int status)
{
	for (int i = 0; i < METRICS_SLOTS; i++) {
		struct metrics_slot *s = &v[i];
		uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);

		while (st == SLOT_CLAIMING) /* another worker is naming it right now */
			st = atomic_load_explicit(&s->state, memory_order_acquire);
		if (st == SLOT_READY) {
			if (slot_is(s, name, status))
				return s;
			continue;
		}
		st = SLOT_FREE;
		if (atomic_compare_exchange_strong(&s->state, &st, SLOT_CLAIMING)) {
			size_t n = strnlen(name, METRICS_NAME - 1);
			memcpy(s->name, name, n);
			s->name[n] = '\0';
			s->status = status;
			atomic_store_explicit(&s->state, SLOT_READY, memory_order_release);
			return s;
		}
		/* lost the race: look at what the winner wrote */
		i--;
	}
	return NULL;
}

void metrics_observe(enum metrics_family f, const char *name, int status, int64_t us)
{
	struct metrics_slot *s;
	uint64_t u = us > 0 ? (uint64_t)us : 0;
	int b = 0;

	if (!table || f < 0 || f >= METRICS_FAMILIES || !name)
		return;
	s = slot_find(table->slot[f], name, status);
	if (!s)
		s = slot_find(table->slot[f], "other", status);
	if (!s)
		return;
	while (b < METRICS_BUCKETS && u > bound_us[b])
		b++;
	atomic_fetch_add_explicit(&s->bucket[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->sum_us, u, memory_order_relaxed);
}

/* Appends s as a label value: backslash, quote and newline escaped. */
static int put_label(struct buf *out, const char *s)
{
	for (; *s; s++) {
		int rc;
		if (*s == '\\' || *s == '"')
			rc = buf_printf(out, "\\%c", *s);
		else if (*s == '\n')
			rc = buf_puts(out, "\\n");
		else
			rc = buf_append(out, s, 1);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int render_family(struct buf *out, struct metrics_slot *v, const char *counter,
			 const char *hist, const char *label, const char *help)
{
	if (buf_printf(out, "# HELP %s %s, by %s and status.\n# TYPE %s counter\n", counter, help,
		       label, counter) < 0)
		return -1;
	/* One snapshot of each slot so the counter and the histogram agree. */
	static uint64_t snap[METRICS_SLOTS][METRICS_BUCKETS + 2];
	int ready[METRICS_SLOTS];

	for (int i = 0; i < METRICS_SLOTS; i++) {
		uint64_t n = 0;
		ready[i] = atomic_load_explicit(&v[i].state, memory_order_acquire) == SLOT_READY;
		if (!ready[i])
			continue;
		for (int b = 0; b <= METRICS_BUCKETS; b++) {
			snap[i][b] = atomic_load_explicit(&v[i].bucket[b], memory_order_relaxed);
			n += snap[i][b];
		}
		snap[i][METRICS_BUCKETS + 1] =
			atomic_load_explicit(&v[i].sum_us, memory_order_relaxed);
		if (buf_printf(out, "%s{%s=\"", counter, label) < 0 ||
		    put_label(out, v[i].name) < 0 ||
		    buf_printf(out, "\",status=\"%d\"} %llu\n", (int)v[i].status,
			       (unsigned long long)n) < 0)
			return -1;
	}
	if (buf_printf(out,
		       "# HELP %s %s: latency in seconds, by %s and status.\n"
		       "# TYPE %s histogram\n",
		       hist, help, label, hist) < 0)
		return -1;
	for (int i = 0; i < METRICS_SLOTS; i++) {
		uint64_t cum = 0;
		if (!ready[i])
			continue;
		for (int b = 0; b <= METRICS_BUCKETS; b++) {
			cum += snap[i][b];
			if (buf_printf(out, "%s_bucket{%s=\"", hist, label) < 0 ||
			    put_label(out, v[i].name) < 0 ||
			    buf_printf(out, "\",status=\"%d\",le=\"%s\"} %llu\n", (int)v[i].status,
				       b < METRICS_BUCKETS ? bound_txt[b] : "+Inf",
				       (unsigned long long)cum) < 0)
				return -1;
		}
		uint64_t sum = snap[i][METRICS_BUCKETS + 1];
		if (buf_printf(out, "%s_sum{%s=\"", hist, label) < 0 ||
		    put_label(out, v[i].name) < 0 ||
		    buf_printf(out, "\",status=\"%d\"} %llu.%06llu\n", (int)v[i].status,
			       (unsigned long long)(sum / 1000000),
			       (unsigned long long)(sum % 1000000)) < 0 ||
		    buf_printf(out, "%s_count{%s=\"", hist, label) < 0 ||
		    put_label(out, v[i].name) < 0 ||
		    buf_printf(out, "\",status=\"%d\"} %llu\n", (int)v[i].status,
			       (unsigned long long)cum) < 0)
			return -1;
	}
	return 0;
}

int metrics_render(struct buf *out)
{
	if (!table)
		return 0;
	if (render_family(out, table->slot[METRICS_REQUEST], "sandpit_requests_total",
			  "sandpit_request_duration_seconds", "operation",
			  "Requests answered") < 0 ||
	    render_family(out, table->slot[METRICS_DOCKER], "sandpit_docker_requests_total",
			  "sandpit_docker_request_duration_seconds", "endpoint",
			  "Docker Engine API calls") < 0)
		return -1;
	return 0;
}

/* 1 while pid runs (a reused pid is counted as the old one: rare, and only
 * until that process ends). */
static int pid_alive(int32_t pid)
{
	return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* The calling process's gauge slot: the one holding its pid, else a free
 * one or one whose process is gone, claimed with a compare-and-swap. */
static struct metrics_proc *proc_slot(void)
{
	static _Thread_local int32_t cached_pid;
	static _Thread_local int cached = -1;
	int32_t me = (int32_t)getpid();

	if (cached >= 0 && cached_pid == me &&
	    atomic_load_explicit(&table->proc[cached].pid, memory_order_relaxed) == me)
		return &table->proc[cached];
	for (int i = 0; i < METRICS_PROCS; i++)
		if (atomic_load_explicit(&table->proc[i].pid, memory_order_acquire) == me) {
			cached = i;
			cached_pid = me;
			return &table->proc[i];
		}
	for (int i = 0; i < METRICS_PROCS; i++) {
		int32_t p = atomic_load_explicit(&table->proc[i].pid, memory_order_acquire);
		if (p != 0 && pid_alive(p))
			continue;
		if (atomic_compare_exchange_strong(&table->proc[i].pid, &p, me)) {
			for (int g = 0; g < METRICS_GAUGES; g++)
				atomic_store_explicit(&table->proc[i].gauge[g], 0,
						      memory_order_relaxed);
			cached = i;
			cached_pid = me;
			return &table->proc[i];
		}
	}
	return NULL;
}

void metrics_gauge_add(enum metrics_gauge g, int delta)
{
	struct metrics_proc *p;

	if (!table || g < 0 || g >= METRICS_GAUGES)
		return;
	p = proc_slot();
	if (p)
		atomic_fetch_add_explicit(&p->gauge[g], delta, memory_order_relaxed);
	if (g == METRICS_WS_OPEN && delta > 0)
		atomic_fetch_add_explicit(&table->ws_total, (uint64_t)delta, memory_order_relaxed);
}

int metrics_render_stream(struct buf *out)
{
	int64_t sum[METRICS_GAUGES] = { 0 };

	if (!table)
		return 0;
	for (int i = 0; i < METRICS_PROCS; i++) {
		int32_t p = atomic_load_explicit(&table->proc[i].pid, memory_order_acquire);
		if (!pid_alive(p))
			continue;
		for (int g = 0; g < METRICS_GAUGES; g++)
			sum[g] += atomic_load_explicit(&table->proc[i].gauge[g],
						       memory_order_relaxed);
	}
	return buf_printf(
		out,
		"# HELP sandpit_ws_connections WebSocket connections open (/sandbox-exec).\n"
		"# TYPE sandpit_ws_connections gauge\nsandpit_ws_connections %lld\n"
		"# HELP sandpit_ws_commands_running Commands running on WebSocket "
		"connections.\n"
		"# TYPE sandpit_ws_commands_running gauge\nsandpit_ws_commands_running %lld\n"
		"# HELP sandpit_ws_connections_total WebSocket connections upgraded.\n"
		"# TYPE sandpit_ws_connections_total counter\n"
		"sandpit_ws_connections_total %llu\n",
		(long long)sum[METRICS_WS_OPEN], (long long)sum[METRICS_WS_RUNNING],
		(unsigned long long)atomic_load_explicit(&table->ws_total, memory_order_relaxed));
}

int metrics_add_label(const char *in, size_t len, const char *name, const char *value,
		      struct buf *out)
{
	size_t i = 0;

	while (i < len) {
		const char *nl = memchr(in + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - in) : len, sp = i;

		if (in[i] == '#' || end == i) {
			if (buf_append(out, in + i, end - i) < 0)
				return -1;
		} else {
			/* the metric name ends at '{' (labels follow) or at ' ' */
			while (sp < end && in[sp] != '{' && in[sp] != ' ')
				sp++;
			if (buf_append(out, in + i, sp - i) < 0 ||
			    buf_printf(out, "{%s=\"", name) < 0 || put_label(out, value) < 0 ||
			    buf_puts(out, "\"") < 0)
				return -1;
			if (sp < end && in[sp] == '{') {
				sp++;
				if (sp < end && in[sp] != '}' && buf_puts(out, ",") < 0)
					return -1;
			} else if (buf_puts(out, "}") < 0) {
				return -1;
			}
			if (buf_append(out, in + sp, end - sp) < 0)
				return -1;
		}
		if (nl && buf_puts(out, "\n") < 0)
			return -1;
		i = end + 1;
	}
	return 0;
}

void metrics_instance_name(const char *listen, char *out, size_t cap)
{
	const char *b = strrchr(listen, '/');
	size_t n;

	b = b ? b + 1 : listen;
	n = strlen(b);
	if (n > 5 && strcmp(b + n - 5, ".sock") == 0)
		n -= 5;
	if (cap == 0)
		return;
	if (n >= cap)
		n = cap - 1;
	memcpy(out, b, n);
	out[n] = '\0';
}
