// Warm pools (issue 8): started containers kept ready per template; a
// create that fits claims one (never the same twice), gets the request's
// limits, env and lifetimes, and still ends on time with nothing of
// sandpit running. Pools refill; a request that no pool fits is served cold.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, waitFor, poolReady } from './lib/stack.mjs';
import { docker, dockerExec, diedAt } from './lib/docker.mjs';

let s;
// a label prefix of this file's own, so its pool is told apart from any
// other stack's and cleaned up at the end
const L = 'sptpool' + Math.random().toString(36).slice(2, 8);
const byLabel = (v) => '/containers/json?all=1&filters=' + encodeURIComponent(JSON.stringify({ label: [v] }));
async function pooled() {
  const r = await docker('GET', byLabel(`${L}.pool`));
  return r.json.filter((c) => c.State === 'running' && c.Labels[`${L}.organizationId`] === '');
}
const timing = (r) => r.headers['server-timing'] || '';

before(async () => {
  s = await startStack({ extraConf: ['warm_pool = template=alpine size=3 ttl=600', `label_prefix = ${L}`] });
  await waitFor(async () => await poolReady(s, 'alpine') >= 3, 30000, 250);
});
after(async () => {
  await s?.stop();
  for (const c of (await docker('GET', byLabel(`${L}.sandbox=true`))).json)
    await docker('DELETE', `/containers/${c.Id}?force=true`);
});

test('a create that fits claims a warm container, with the request applied', async () => {
  const t0 = Date.now();
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', cpu: 0.5, memoryMb: 128, pidsLimit: 64, envVars: 'SECRET=pooled-canary\nX=1' } });
  assert.equal(c.status, 200, c.text);
  assert.match(timing(c), /^pool;/);
  const info = (await docker('GET', `/containers/${c.json.containerId}/json`)).json;
  assert.ok(Date.parse(info.Created) < t0, 'the container was made before the create: it came from the pool');
  // the request's limits, the full security model, its sandbox id
  assert.equal(info.HostConfig.NanoCpus, 0.5e9);
  assert.equal(info.HostConfig.Memory, 128 * 1024 * 1024);
  assert.equal(info.HostConfig.MemorySwap, 128 * 1024 * 1024);
  assert.equal(info.HostConfig.PidsLimit, 64);
  assert.deepEqual(info.HostConfig.CapDrop, ['ALL']);
  assert.ok(info.HostConfig.SecurityOpt.includes('no-new-privileges'));
  assert.equal(info.HostConfig.Init, true);
  assert.equal(info.HostConfig.AutoRemove, true);
  assert.equal(info.Config.User, '65533:65533'); // the keeper; commands name 1000:1000
  assert.equal(info.Config.Labels[`${L}.sandboxId`], c.json.sandboxId);
  assert.ok(!info.Config.Env.some((e) => e.includes('pooled-canary')), 'envVars are not in the container config');
  // envVars reach every command; the main process sleeps until the deadline
  const e = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: 'echo $SECRET $X; id -u; cat /sys/fs/cgroup/pids/pids.max' } });
  assert.equal(e.status, 200, e.text);
  assert.equal(e.json.stdout, 'pooled-canary 1\n1000\n64\n');
  const ps = await dockerExec(c.json.containerId, ['ps']);
  // (the default 24 h, less the leads that keep it before deadlineAt:
  // 1 s for a default arming, up to 1 s for busybox's date, 250 ms)
  assert.match(ps.stdout, /sleep 8639[6-9]/);
  await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } });
});

test('concurrent creates never share a container; the pool refills', async () => {
  const rs = await Promise.all(Array.from({ length: 6 }, () => s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } })));
  for (const r of rs) assert.equal(r.status, 200, r.text);
  const ids = rs.map((r) => r.json.containerId);
  assert.equal(new Set(ids).size, 6, 'six distinct containers');
  assert.ok(rs.filter((r) => /^pool;/.test(timing(r))).length >= 1);
  for (const r of rs) {
    const e = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: r.json.sandboxId, cmd: 'echo ok' } });
    assert.equal(e.json.stdout, 'ok\n');
  }
  await waitFor(async () => await poolReady(s, 'alpine') >= 3, 30000, 250);
  for (const r of rs) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: r.json.sandboxId } });
});

test('a request no pool fits is served cold', async () => {
  for (const body of [{ template: 'alpine', workdir: '/srv' }, { template: 'python' }, { template: 'alpine', networkMode: 'internet' }]) {
    const c = await s.api('POST', '/api/sandbox.create', { body });
    assert.equal(c.status, 200, c.text);
    assert.doesNotMatch(timing(c), /^pool;/, JSON.stringify(body));
    await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } });
  }
});

// The warm containers waiting in the pool: running, made for the pool (no
// organization on their labels) and backing none of the given sandboxes.
async function idle(inUse = []) {
  return new Set((await pooled()).map((c) => c.Id).filter((id) => !inUse.includes(id)));
}

// A create that claimed a warm container and then failed: the container
// is back in the pool at once (the pool's count stays its size, nothing
// was made for it), and the next create gets that very container.
async function failsLate(body, key, inUse, want) {
  await waitFor(async () => await poolReady(s, 'alpine') >= 3, 30000, 250);
  await new Promise((r) => setTimeout(r, 500)); // any fill under way is done
  const before = await idle(inUse);
  assert.equal(before.size, 3, 'three warm containers wait');
  const claims = async () => Number((/^sandpit_pool_claims_total\{[^}]*template="alpine"[^}]*\} (\d+)$/m.exec((await s.api('GET', '/metrics', { key: null })).text) || [])[1] || 0);
  const claimed = await claims();
  const r = await s.api('POST', '/api/sandbox.create', { body, key });
  want(r);
  assert.ok(await claims() > claimed, 'the create claimed a warm container before it failed');
  const t0 = Date.now();
  assert.equal(await poolReady(s, 'alpine'), 3, 'the claimed container is back in the pool when the answer comes');
  await new Promise((res) => setTimeout(res, 1000));
  assert.deepEqual(await idle(inUse), before, `no container idles outside the pool, none was made for it (${Date.now() - t0} ms after)`);
  assert.equal(await poolReady(s, 'alpine'), 3);
  return before;
}

test('a create that fails after its claim (a bad envVars line) puts the warm container back', async () => {
  const before = await failsLate({ template: 'alpine', envVars: 'GOOD=1\nNOT A PAIR' }, undefined, [], (r) => {
    assert.equal(r.status, 400, r.text);
    assert.match(r.json.message, /envVars: line 2 is not KEY=value/);
  });
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
  assert.equal(c.status, 200, c.text);
  assert.match(timing(c), /^pool;/);
  assert.ok(before.has(c.json.containerId), 'the next create gets one of the same warm containers');
  const e = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: 'echo ok; id -u' } });
  assert.equal(e.json.stdout, 'ok\n1000\n');
  await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } });
});

test('a create refused by its quota after its claim puts the warm container back', async () => {
  await s.cli('orgs', 'create', 'pool-quota-org');
  await s.cli('quota', 'set', '--org', 'pool-quota-org', '--sandboxes', '1');
  const key = await s.newKey('pool-quota-org');
  const first = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' }, key });
  assert.equal(first.status, 200, first.text);
  const before = await failsLate({ template: 'alpine' }, key, [first.json.containerId], (r) => {
    assert.equal(r.status, 429, r.text);
    assert.equal(r.json.code, 'QUOTA_EXCEEDED');
  });
  // with room again, the returned container serves the next create
  await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: first.json.sandboxId }, key });
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' }, key });
  assert.equal(c.status, 200, c.text);
  assert.match(timing(c), /^pool;/);
  assert.ok(before.has(c.json.containerId));
  const e = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: 'echo ok' }, key });
  assert.equal(e.json.stdout, 'ok\n');
  await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId }, key });
});

test('a pooled sandbox ends at its deadline and its timeout with nothing of sandpit running', async () => {
  await waitFor(async () => await poolReady(s, 'alpine') >= 2, 30000, 250);
  const d = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', maxLifetimeMs: 10000, timeoutMs: 60000 } });
  const i = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', timeoutMs: 10000 } });
  assert.equal(d.status, 200, d.text);
  assert.equal(i.status, 200, i.text);
  assert.match(timing(d), /^pool;/);
  assert.match(timing(i), /^pool;/);
  await s.stop();
  s = null;
  const since = Date.now() - 60000;
  const gone = (cid) => diedAt(cid, since, 30000);
  const [dg, ig] = await Promise.all([gone(d.json.containerId), gone(i.json.containerId)]);
  // at deadlineAt or up to 1 s before it (busybox date) and 250 ms more
  // (the main process's lead), never after it (200 ms: Docker's die event
  // comes a little after the end; deadline.test.mjs)
  const late = dg - Date.parse(d.json.deadlineAt);
  assert.ok(late <= 200 && late > -1450, `deadline: ended ${late} ms after deadlineAt`);
  assert.ok(ig - Date.parse(i.json.expiresAt) > -1000 && ig - Date.parse(i.json.expiresAt) < 7000, `timeout: ${ig - Date.parse(i.json.expiresAt)} ms`);
});
