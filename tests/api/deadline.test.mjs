// The deadline is never late (README "Lifecycle"): a sandbox's container
// ends at deadlineAt or before it (up to 1 s early where `date` has no %N,
// as busybox's), never after it, whatever fraction of a second it started
// in. The creates are timed so that a container computing its sleep from
// whole seconds would end about half a second late: sent at .55 s of a
// second with maxLifetimeMs 10500, deadlineAt falls early in its second
// while the container starts late in its own.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack } from './lib/stack.mjs';
import { diedAt, exitWatch } from './lib/docker.mjs';

let s;
after(async () => { await s?.stop().catch(() => {}); });

// The end is containerd's exit time of the container's main process (the
// shim's reap: lib/docker.mjs exitWatch), not Docker's "die" event, which
// follows dockerd's own cleanup and on a loaded host came 200-500 ms late
// for a container that had ended on time. This much later than deadlineAt
// still counts as on time (the shim's wake-up on a busy host); anything
// the deadline arithmetic gets wrong (whole seconds: up to 1 s) is
// well above it.
const EVENT_SLACK_MS = 200;
// the main process aims this much before deadlineAt (sandbox/sh/sleepto.sh:
// the start of sleep and the runtime's teardown; under gVisor 500 ms more,
// sandbox_deadline_aim)
const LEAD_MS = 250 + (process.env.SANDPIT_TEST_RUNTIME === 'gvisor' ? 500 : 0);

async function createAtFraction(template, fracMs) {
  await new Promise((r) => setTimeout(r, (fracMs - (Date.now() % 1000) + 1000) % 1000));
  const c = await s.api('POST', '/api/sandbox.create', { body: { template, maxLifetimeMs: 10500, timeoutMs: 60000 } });
  assert.equal(c.status, 200, c.text);
  return c.json;
}

test('the container ends at deadlineAt or up to 1 s before it, never after (busybox date has no %N; GNU date has)', async (t) => {
  // a label prefix of its own: on a shared dockerd, another stack's reaper
  // of containers without a record never takes these for its own
  s = await startStack({ extraConf: `label_prefix = sp${process.pid}dl` });
  const exits = exitWatch();
  const made = [];
  const t0 = Date.now();
  let ends, dies;
  try {
    for (const template of ['alpine', 'alpine', 'python']) made.push({ template, sb: await createAtFraction(template, 550) });
    [ends, dies] = await Promise.all([
      Promise.all(made.map(({ sb }) => exits.until(sb.containerId, 40000))),
      Promise.all(made.map(({ sb }) => diedAt(sb.containerId, t0, 40000))),
    ]);
  } finally {
    exits.stop();
  }
  const off = ends.map((end, i) => end - Date.parse(made[i].sb.deadlineAt));
  t.diagnostic(`ended relative to deadlineAt (ms): ${made.map(({ template }, i) => `${template} ${off[i]}`).join(', ')}; ` +
    `Docker's die event that much later: ${dies.map((d, i) => d - ends[i]).join(', ')}`);
  for (const [i, ms] of off.entries()) {
    assert.ok(ms <= EVENT_SLACK_MS, `${made[i].template}: ended ${ms} ms after deadlineAt`);
    assert.ok(ms > -1000 - LEAD_MS - EVENT_SLACK_MS, `${made[i].template}: ended ${-ms} ms before deadlineAt`);
  }
});
