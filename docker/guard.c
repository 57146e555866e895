/*
 * The stuck-server guard (RELIABILITY L2): a Docker server that stops
 * answering must not take every worker with it. Each server (by endpoint)
 * has a slot in memory shared by all the workers of one sandpitd (mapped by
 * docker_shared_init before the master forks; without it, per process)
 * holding how many calls wait for its first answer byte and when it last
 * showed life. A call waits for a free place while at most inflight_max
 * calls wait already, as long as the server keeps answering; it fails at
 * once, with a retryable SP_UNAVAILABLE, while the server has said nothing
 * for stuck_ms with calls waiting, or for GUARD_WAIT_MS with every place
 * taken. It never blocks longer than the call's own bound, and it holds no
 * lock: the slot is a few atomics.
 */
#include "docker_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "../common/util.h"

#define GUARD_SLOTS 64
#define GUARD_WAITERS 32      /* the most calls one server may have waiting */
#define GUARD_WAIT_MS 2500    /* a full server silent this long: no more waiting */
#define GUARD_SUSPECT_MS 1000 /* calls waiting this long unanswered: skip optional calls */
#define GUARD_POLL_NS (10 * 1000 * 1000)

struct docker_guard {
	uint64_t hash;	 /* the endpoint's; 0 = free */
	int64_t life_ms; /* mono ms: the last answer, or when calls started waiting */
	/* the calls sent that have had no answer byte yet, by process: a
	 * worker killed mid-call leaves its place, which the next refusal
	 * finds dead and frees */
	int waiter[GUARD_WAITERS];
};

static struct docker_guard local_slots[GUARD_SLOTS];
static struct docker_guard *slots = local_slots;

int docker_shared_init(void)
{
	void *p = mmap(NULL, sizeof(local_slots), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	memset(p, 0, sizeof(local_slots));
	slots = p;
	return 0;
}

/* FNV-1a of the endpoint's identity, never 0. */
static uint64_t endpoint_hash(const struct docker_client *c)
{
	const char *parts[3] = { c->base, c->sock, c->ssh_dest };
	uint64_t h = 1469598103934665603ULL;

	if (c->transport == DT_SSH)
		parts[1] = c->ssh_port; /* the bridge socket is per worker */
	for (int i = 0; i < 3; i++) {
		for (const char *s = parts[i]; *s; s++)
			h = (h ^ (unsigned char)*s) * 1099511628211ULL;
		h = (h ^ 0xff) * 1099511628211ULL;
	}
	return h ? h : 1;
}

/* The client's slot, claimed on first use. With every slot taken (64
 * endpoints), the last one is shared: a stricter guard, never none. */
static struct docker_guard *guard_of(struct docker_client *c)
{
	uint64_t h;
	unsigned i0;

	if (c->guard)
		return c->guard;
	h = endpoint_hash(c);
	i0 = (unsigned)(h % GUARD_SLOTS);
	for (unsigned k = 0; k < GUARD_SLOTS; k++) {
		struct docker_guard *g = &slots[(i0 + k) % GUARD_SLOTS];
		uint64_t want = 0;
		if (__atomic_load_n(&g->hash, __ATOMIC_ACQUIRE) == h ||
		    __atomic_compare_exchange_n(&g->hash, &want, h, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE) ||
		    want == h) {
			c->guard = g;
			return g;
		}
	}
	c->guard = &slots[GUARD_SLOTS - 1];
	return c->guard;
}

void docker_client_set_guard(struct docker_client *c, int inflight_max, int stuck_ms)
{
	if (inflight_max > GUARD_WAITERS)
		inflight_max = GUARD_WAITERS;
	c->inflight_max = inflight_max > 0 ? inflight_max : 0;
	c->stuck_ms = stuck_ms > 0 ? stuck_ms : 0;
}

/* How many calls wait; with reap, places of dead processes are freed first. */
static int waiting(struct docker_guard *g, int reap)
{
	int n = 0;

	for (int i = 0; i < GUARD_WAITERS; i++) {
		int pid = __atomic_load_n(&g->waiter[i], __ATOMIC_ACQUIRE);
		if (!pid)
			continue;
		if (reap && kill(pid, 0) < 0 && errno == ESRCH &&
		    __atomic_compare_exchange_n(&g->waiter[i], &pid, 0, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			continue;
		n++;
	}
	return n;
}

int docker_client_suspect(struct docker_client *c)
{
	struct docker_guard *g;

	if (!c || c->inflight_max <= 0)
		return 0;
	g = guard_of(c);
	return mono_ms() - __atomic_load_n(&g->life_ms, __ATOMIC_ACQUIRE) >= GUARD_SUSPECT_MS &&
	       waiting(g, 0) > 0;
}

/* Takes a free place for pid: its index, or -1 when none is free. *was is
 * how many calls waited before. */
static int take_place(struct docker_guard *g, int cap, int pid, int *was)
{
	*was = waiting(g, 0);
	if (*was >= cap)
		return -1;
	for (int i = 0; i < GUARD_WAITERS; i++) {
		int zero = 0;
		if (__atomic_compare_exchange_n(&g->waiter[i], &zero, pid, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return i;
	}
	return -1;
}

int docker_guard_enter(struct docker_client *c, struct docker_req *r, int64_t bound_ms,
		       struct sp_err *e)
{
	struct docker_guard *g;
	int64_t start = mono_ms();
	int pid = (int)getpid(), reaped = 0;

	r->guard_place = -1;
	if (c->inflight_max <= 0)
		return 0;
	g = guard_of(c);
	r->guard_client = c;
	for (;;) {
		int64_t now = mono_ms(),
			quiet = now - __atomic_load_n(&g->life_ms, __ATOMIC_ACQUIRE);
		struct timespec ts = { 0, GUARD_POLL_NS };
		int was, place,
			stuck = c->stuck_ms > 0 && quiet >= c->stuck_ms && waiting(g, 0) > 0;

		place = stuck ? -1 : take_place(g, c->inflight_max, pid, &was);
		if (place >= 0) {
			if (was == 0) /* the silence is counted from now */
				__atomic_store_n(&g->life_ms, now, __ATOMIC_RELEASE);
			r->guard_place = place;
			return 0;
		}
		if (!reaped) { /* before refusing: are the waiters alive? */
			reaped = 1;
			if (waiting(g, 1) < (stuck ? 1 : c->inflight_max))
				continue;
		}
		if (stuck)
			return sp_err_set(e, SP_UNAVAILABLE,
					  "%sDocker has not answered for %lld s; retry later",
					  c->label, (long long)(quiet / 1000));
		if (quiet >= GUARD_WAIT_MS || now - start >= bound_ms)
			return sp_err_set(
				e, SP_UNAVAILABLE,
				"%sDocker is not answering (%d calls waiting); retry later",
				c->label, c->inflight_max);
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
}

void docker_guard_answered(struct docker_req *r)
{
	if (r->guard_place < 0 || !r->guard_client)
		return;
	__atomic_store_n(&guard_of(r->guard_client)->life_ms, mono_ms(), __ATOMIC_RELEASE);
	docker_guard_leave(r);
}

void docker_guard_leave(struct docker_req *r)
{
	if (r->guard_place < 0 || !r->guard_client)
		return;
	__atomic_store_n(&guard_of(r->guard_client)->waiter[r->guard_place], 0, __ATOMIC_RELEASE);
	r->guard_place = -1;
}
