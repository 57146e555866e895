// RELIABILITY A9 on its own (it runs 500 commands, about a minute and a
// half on 2 cores): commands that orphan children leave no zombies behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sandboxStack } from './lib/suite.mjs';
import { procs } from './lib/docker.mjs';

// a rate limit out of the way: through the fast path 8 lanes run faster
// than a test stack's 50 requests a second
const { create, exec } = sandboxStack(undefined, { env: { SANDPIT_RATE: '2000r/s', SANDPIT_BURST: '2000' } });


test('A9: after 500 commands that orphan children, no zombies remain', async (t) => {
  const sb = await create({ template: 'alpine' });
  const t0 = Date.now();
  let next = 0, failed = 0;
  const lane = async () => {
    while (next < 500) {
      next++;
      const r = await exec(sb.sandboxId, "sh -c 'sleep 0.1 &'; (sleep 0.05 &) ; echo x");
      if (r.status !== 200 || r.json.exitCode !== 0 || r.json.stdout !== 'x\n') { failed++; if (failed <= 3) t.diagnostic(`failed: ${r.status} ${r.text.slice(0, 300)}`); }
    }
  };
  await Promise.all(Array.from({ length: 8 }, lane));
  t.diagnostic(`500 commands in ${Date.now() - t0} ms`);
  assert.equal(failed, 0);
  await new Promise((r) => setTimeout(r, 500));
  const ps = await procs(sb.containerId);
  assert.deepEqual(ps.filter((p) => p.state === 'Z'), [], 'no zombies');
  assert.deepEqual(ps.filter((p) => p.marked), [], 'nothing of the commands runs on');
  assert.ok(ps.length < 10, `${ps.length} processes left`);
});

