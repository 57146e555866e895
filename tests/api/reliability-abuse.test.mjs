// RELIABILITY A1, A2, A12: a fork bomb, a memory bomb and a CPU hog inside
// one sandbox. The limit holds (read back in the container's cgroup on the
// host, cgroup v1) and the sandbox beside it keeps being served. Latency
// is a benchmark here, not a timed assertion: each figure is compared with
// a baseline measured in the same test, with a generous margin (3 x the
// baseline, or 2 s, whichever is larger), so that it holds on a loaded
// 2-core machine; the figures go to the test's diagnostics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { waitFor } from './lib/stack.mjs';
import { sandboxStack } from './lib/suite.mjs';
import { docker } from './lib/docker.mjs';

let s;
const { create, exec } = sandboxStack((stack) => { s = stack; });

const cg = (ctl, cid, file) => fs.readFileSync(`/sys/fs/cgroup/${ctl}/docker/${cid}/${file}`, 'utf8').trim();
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
// the margin every "stays normal" claim gets
const normal = (during, before) => during <= Math.max(3 * before, 2000);

// n round trips of fn (each must succeed); their median in ms
async function p50(n, fn) {
  const ms = [];
  for (let i = 0; i < n; i++) {
    const t0 = Date.now();
    await fn();
    ms.push(Date.now() - t0);
  }
  return median(ms);
}
const execOk = async (id) => {
  const r = await exec(id, 'echo ok', { timeoutMs: 20000 });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.stdout, 'ok\n');
};

test('A1: a fork bomb fills its pids limit and no more; another sandbox\'s exec p50 stays normal', { timeout: 180000 }, async (t) => {
  const victim = await create({ template: 'alpine' });
  // half a core: the bomb spins, and the test files beside it need the rest
  const bomber = await create({ template: 'python', pidsLimit: 64, cpu: 0.5 });
  const cid = bomber.containerId;
  assert.equal((await docker('GET', `/containers/${cid}/json`)).json.HostConfig.PidsLimit, 64);
  assert.equal(cg('pids', cid, 'pids.max'), '64');
  await execOk(victim.sandboxId);
  const before = await p50(9, () => execOk(victim.sandboxId));
  const refused = () => Number(/max (\d+)/.exec(cg('pids', cid, 'pids.events'))[1]);
  const refused0 = refused();
  // every process forks forever and survives a refused fork: the pids stay
  // at the limit and forks keep being refused (a shell bomb, b | b &, dies
  // out within a second at the limit: a shell exits when it cannot fork)
  const bomb = exec(bomber.sandboxId,
    'python3 -c "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass" 2>/dev/null', { timeoutMs: 12000 });
  // the bomb reaches the limit and keeps hitting it
  await waitFor(() => Number(cg('pids', cid, 'pids.current')) >= 60, 10000, 50);
  await waitFor(() => refused() > refused0 + 100, 10000, 50);
  let peak = 0;
  const refusedAtStart = refused();
  const during = await p50(9, async () => {
    await execOk(victim.sandboxId);
    peak = Math.max(peak, Number(cg('pids', cid, 'pids.current')));
  });
  const current = Number(cg('pids', cid, 'pids.current'));
  const fails = refused() - refused0, failsDuring = refused() - refusedAtStart;
  t.diagnostic(`victim exec p50 ${before} ms before, ${during} ms beside the bomb; bomb peak ${peak} pids of 64, ${fails} forks refused, ${failsDuring} of them during the measurement`);
  assert.ok(peak <= 64, `peak ${peak} pids`);
  // the bomb ran through the whole measurement: still at the limit after it
  assert.ok(current >= 60, `the bomb still held ${current} pids after the measurement`);
  // and kept hitting it: forks were refused while the victim was measured
  // (how many depends on the half core it gets on a loaded host)
  assert.ok(failsDuring > 0, `${failsDuring} forks refused during the measurement (${fails} in all)`);
  assert.ok(normal(during, before), `victim exec p50 ${before} ms -> ${during} ms`);
  const r = await bomb;
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.timedOut, true, r.text);
  assert.equal(r.json.exitCode, 124);
  // the bomber is cleaned up or reads killed; the victim was never touched
  const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: bomber.sandboxId } });
  assert.ok(['running', 'killed'].includes(one.json.status), one.text);
  const v = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: victim.sandboxId } });
  assert.equal(v.json.status, 'running');
  await execOk(victim.sandboxId);
});

test('A2: a memory bomb dies with 137 at its memory limit; the sandbox stays usable', { timeout: 120000 }, async (t) => {
  const sb = await create({ template: 'python', memoryMb: 64 });
  const cid = sb.containerId;
  assert.equal(Number(cg('memory', cid, 'memory.limit_in_bytes')), 64 << 20);
  // swap is part of the limit (Memory = MemorySwap), so nothing spills to it
  assert.equal(Number(cg('memory', cid, 'memory.memsw.limit_in_bytes')), 64 << 20);
  const kills = () => Number(/oom_kill (\d+)/.exec(cg('memory', cid, 'memory.oom_control'))?.[1] ?? 0);
  const k0 = kills();
  const t0 = Date.now();
  const r = await exec(sb.sandboxId,
    'python3 -c "a = []\nwhile True: a.append(bytearray(8 << 20))"', { timeoutMs: 30000 });
  const ms = Date.now() - t0;
  t.diagnostic(`memory bomb ended in ${ms} ms; max usage ${cg('memory', cid, 'memory.max_usage_in_bytes')} bytes of ${64 << 20}`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.exitCode, 137, r.text);
  assert.equal(r.json.timedOut, false, 'the kernel killed it, not the timeout');
  assert.ok(kills() > k0, 'the cgroup OOM killer ran');
  assert.ok(Number(cg('memory', cid, 'memory.max_usage_in_bytes')) <= 64 << 20);
  // usable afterwards: the container, its record and new commands
  const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.sandboxId } });
  assert.equal(one.json.status, 'running', one.text);
  assert.equal((await docker('GET', `/containers/${cid}/json`)).json.State.Running, true);
  await execOk(sb.sandboxId);
  const w = await s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: sb.sandboxId, path: '/tmp/after', content: 'still here' } });
  assert.equal(w.status, 200, w.text);
  const c = await exec(sb.sandboxId, 'cat /tmp/after');
  assert.equal(c.json.stdout, 'still here');
});

test('A12: a CPU hog is held to its cpu limit; other sandboxes\' API latency stays normal', { timeout: 180000 }, async (t) => {
  const victim = await create({ template: 'alpine' });
  const hog = await create({ template: 'alpine', cpu: 0.5 });
  const cid = hog.containerId;
  assert.equal(Number(cg('cpu', cid, 'cpu.cfs_quota_us')) / Number(cg('cpu', cid, 'cpu.cfs_period_us')), 0.5);
  const api = async () => {
    await execOk(victim.sandboxId);
    const o = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: victim.sandboxId } });
    assert.equal(o.status, 200);
    const l = await s.api('GET', '/api/sandbox.list');
    assert.equal(l.status, 200);
  };
  await api();
  const before = await p50(7, api);
  // three busy loops: uncapped they would take every core of the machine
  const hogging = exec(hog.sandboxId, 'for i in 1 2 3; do (while :; do :; done) & done; wait', { timeoutMs: 10000 });
  await waitFor(async () => (await exec(victim.sandboxId, 'true')).status === 200 &&
    Number(cg('cpuacct', cid, 'cpuacct.usage')) > 2e8, 10000, 100);
  const u0 = Number(cg('cpuacct', cid, 'cpuacct.usage')), w0 = process.hrtime.bigint();
  const during = await p50(7, api);
  await new Promise((r) => setTimeout(r, Math.max(0, 2000 - Number(process.hrtime.bigint() - w0) / 1e6)));
  const cores = (Number(cg('cpuacct', cid, 'cpuacct.usage')) - u0) / Number(process.hrtime.bigint() - w0);
  const throttled = Number(/nr_throttled (\d+)/.exec(cg('cpu', cid, 'cpu.stat'))[1]);
  t.diagnostic(`hog used ${(cores * 100).toFixed(0)} % of one core (limit 50 %), throttled ${throttled} periods; ` +
    `victim exec+one+list p50 ${before} ms before, ${during} ms beside the hog`);
  assert.ok(cores <= 0.5 * 1.3, `the hog used ${cores.toFixed(2)} cores`);
  assert.ok(cores > 0.05, 'the hog ran while the victim was measured');
  // (throttled periods are a figure, not a check: on a busy machine the
  // hog may get less than its quota and never be throttled)
  assert.ok(normal(during, before), `victim p50 ${before} ms -> ${during} ms`);
  const r = await hogging;
  assert.equal(r.json.timedOut, true, r.text);
  assert.equal(r.json.exitCode, 124);
});
