// A /v1 sandbox's container still dies at its deadline with nothing of
// sandpit running (issue 15, "Lifecycle mapping"): the container enforces
// its own lifetime. Two deadlines, both read through /v1, then the whole
// stack (nginx, sandpitd, sandpit-stream, Redis) is stopped and each
// container must end on its own:
// - the /v1 timeout: createSandbox with features.timeouts.timeout (the
//   TTL; sandpit's timeout is an inactivity timeout, and with sandpit
//   stopped nothing is active), so the container's watcher ends it at
//   effectiveFeatures.timeouts.expiresAt;
// - the hard deadline: /v1 cannot set one (the document has no field for
//   it; it is /api's maxLifetimeMs, 24 h by default), so that sandbox is
//   created through /api/sandbox.create with a short maxLifetimeMs and a
//   long timeoutMs, and read through /v1 (the faces share the record).
// Containers are counted by label, as `docker ps -a --filter label=...`.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, waitFor } from './lib/stack.mjs';
import { docker } from './lib/docker.mjs';
import { ajv, seedValidator } from './lib/v1seed.mjs';

// a label prefix of its own: on a shared dockerd, another stack's reaper
// of containers without a record never takes these for its own
const prefix = `sp${process.pid}v1dl`;
let s, stopped = false;
const ids = [];
after(async () => {
  if (!stopped) await s?.stop().catch(() => {});
  for (const id of ids)
    for (const c of await byLabel(id).catch(() => []))
      await docker('DELETE', `/containers/${c.Id}?force=true`).catch(() => {});
});

async function byLabel(id) {
  const f = encodeURIComponent(JSON.stringify({ label: [`${prefix}.sandboxId=${id}`] }));
  return (await docker('GET', `/containers/json?all=1&filters=${f}`)).json;
}

function valid(method, tmpl, r) {
  const v = seedValidator(method, tmpl, r.status);
  assert.ok(v(r.json), `${method} ${tmpl} ${r.status} breaks the seed's schema: ${ajv.errorsText(v.errors)}\n${r.text}`);
}

test('/v1 sandboxes die at their deadline with sandpit stopped: the /v1 timeout, and the hard deadline', { timeout: 180000 }, async () => {
  s = await startStack({ extraConf: `label_prefix = ${prefix}` });
  // the /v1 timeout
  const c = await s.api('POST', '/v1/sandboxes', { body: { image: 'images/alpine', features: { timeouts: { timeout: '12s', onTimeout: 'delete' } } } });
  valid('POST', '/v1/sandboxes', c);
  assert.equal(c.status, 201, c.text);
  ids.push(c.json.uid);
  const to = c.json.effectiveFeatures.timeouts;
  assert.equal(to.initialTimeout, '12s');
  assert.equal(to.onTimeout, 'delete');
  const expires = Date.parse(to.expiresAt);
  assert.ok(Math.abs(expires - (Date.parse(c.json.core.createdAt) + 12000)) < 1000, to.expiresAt);
  // the hard deadline: set through /api, read through /v1
  const d = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', maxLifetimeMs: 15000, timeoutMs: 600000 } });
  assert.equal(d.status, 200, d.text);
  ids.push(d.json.sandboxId);
  const g = await s.api('GET', `/v1/sandboxes/${d.json.sandboxId}`);
  valid('GET', '/v1/sandboxes/{sandbox}', g);
  assert.equal(g.status, 200, g.text);
  assert.equal(g.json.core.status, 'running');
  const deadline = Date.parse(d.json.deadlineAt);
  assert.ok(Date.parse(g.json.effectiveFeatures.timeouts.expiresAt) <= deadline, 'the expiry never passes the hard deadline');
  for (const id of ids) assert.equal((await byLabel(id)).length, 1, `${id} has its container`);

  await s.stop();
  stopped = true;
  // both end on their own: the TTL's watcher checks every 5 s, the main
  // process sleeps to the deadline; generous caps, no timing assertion
  // beyond "not before its time"
  await waitFor(async () => (await byLabel(c.json.uid)).length === 0, 60000, 500);
  assert.ok(Date.now() >= expires - 1000, 'the /v1 timeout did not end it early');
  await waitFor(async () => (await byLabel(d.json.sandboxId)).length === 0, 60000, 500);
  assert.ok(Date.now() >= deadline - 1000, 'the hard deadline did not end it early');
});
