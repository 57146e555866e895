// RELIABILITY L1: dockerd stopped and started again, idle and in the middle
// of an exec, against a private dockerd of this file
// (lib/dockerd.mjs), never the shared one.
//   - while it is down, whatever needs Docker answers a retryable 503 (JSON,
//     Retry-After) within a bounded time, and a command in flight answers
//     too; nothing hangs and no worker dies;
//   - once it is back, requests succeed again by themselves, and records and
//     containers converge: a record reads running exactly when its container
//     runs (dockerd without live-restore ends the containers), and no
//     labelled container is left without a running record (no orphans).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { startStack, waitFor } from './lib/stack.mjs';
import { startDockerd } from './lib/dockerd.mjs';

let s, d, prefix;
const made = [];
before(async () => {
  d = await startDockerd();
  await d.load('sandpit-test/busybox:latest');
  s = await startStack({ env: { SANDPIT_DOCKER_HOST: d.host, SANDPIT_RATE: '2000r/s', SANDPIT_BURST: '2000' } });
  prefix = /^label_prefix\s*=\s*(\S+)/m.exec(fs.readFileSync(s.config, 'utf8'))?.[1] || 'sandpit';
});
after(async () => {
  if (s) {
    await d?.start().catch(() => {});
    for (const id of made) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
    await s.stop();
  }
  await d?.destroy();
});

// the private daemon's API
function dd(method, p) {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: d.sock, method, path: `/v1.41${p}` }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let json;
        try { json = JSON.parse(text); } catch { json = undefined; }
        resolve({ status: res.statusCode, json, text });
      });
    });
    req.on('error', reject);
    req.end();
  });
}
const create = async () => {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' }, timeoutMs: 60000 });
  assert.equal(c.status, 200, c.text);
  made.push(c.json.sandboxId);
  return c.json;
};
const exec = (id, cmd, o = {}) => s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd, ...o }, timeoutMs: 90000 });
const timed = async (fn) => { const t0 = Date.now(); const r = await fn(); return { ...r, ms: Date.now() - t0 }; };
function workers() {
  return fs.readFileSync(path.join(s.dir, 'sandpitd.pid'), 'utf8').trim();
}

// While Docker is down: everything that needs it answers a retryable 503
// in bounded time; the record reads need no Docker. A sandbox whose
// container was seen ending (killed: dockerd stops the containers as it
// shuts down, and an exec in flight saw its own go) reads killed instead:
// its operations are 412 "Sandbox is killed".
async function whileDown(t, id, { killed = false } = {}) {
  const got = {
    exec: await timed(() => exec(id, 'echo hi')),
    create: await timed(() => s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' }, timeoutMs: 90000 })),
    writeFile: await timed(() => s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: id, path: '/tmp/x', content: 'x' }, timeoutMs: 90000 })),
    readFile: await timed(() => s.api('GET', '/api/sandbox.readFile', { query: { sandboxId: id, path: '/tmp/x' }, timeoutMs: 90000 })),
  };
  t.diagnostic(`while dockerd is down: ${Object.entries(got).map(([k, r]) => `${k} ${r.status} in ${r.ms} ms`).join(', ')}`);
  for (const [k, r] of Object.entries(got)) {
    if (killed && k !== 'create') {
      assert.equal(r.status, 412, `${k}: ${r.status} ${r.text}`);
      assert.equal(r.json?.message, 'Sandbox is killed', `${k}: ${r.text}`);
      continue;
    }
    assert.equal(r.status, 503, `${k}: ${r.status} ${r.text}`);
    assert.equal(r.json?.code, 'SERVICE_UNAVAILABLE', `${k}: ${r.text}`);
    assert.equal(r.headers['retry-after'], '1', k);
    assert.ok(r.ms < 35000, `${k} took ${r.ms} ms`);
  }
  if (got.create.json?.sandboxId) made.push(got.create.json.sandboxId);
  // the records are still read
  const one = await timed(() => s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } }));
  assert.equal(one.status, 200, one.text);
  const list = await timed(() => s.api('GET', '/api/sandbox.list'));
  assert.equal(list.status, 200, list.text);
  const health = await s.api('GET', '/healthz');
  t.diagnostic(`one ${one.status} in ${one.ms} ms, list ${list.status} in ${list.ms} ms, healthz ${health.status}`);
}

// Records and containers agree, and no labelled container lacks a running
// record; waits (60 s at most) for sandpit to notice what Docker did.
async function converged(t) {
  let last = '';
  await waitFor(async () => {
    const recs = (await s.api('GET', '/api/sandbox.list')).json;
    const q = encodeURIComponent(JSON.stringify({ label: [`${prefix}.sandbox=true`] }));
    const cs = (await dd('GET', `/containers/json?all=1&filters=${q}`)).json;
    const running = new Set(cs.filter((c) => c.State === 'running').map((c) => c.Id));
    const wrong = [];
    for (const r of recs) {
      if (r.status === 'running' && !running.has(r.containerId)) wrong.push(`${r.sandboxId} reads running, its container does not run`);
      if (r.status !== 'running' && running.has(r.containerId)) wrong.push(`${r.sandboxId} reads ${r.status}, its container runs`);
    }
    const live = new Set(recs.filter((r) => r.status === 'running').map((r) => r.containerId));
    for (const c of cs) if (!live.has(c.Id)) wrong.push(`orphan ${c.Id.slice(0, 12)} (${c.State})`);
    last = `${recs.map((r) => `${r.sandboxId}:${r.status}`).join(' ')} | containers ${cs.map((c) => `${c.Id.slice(0, 12)}:${c.State}`).join(' ')} | ${wrong.join('; ')}`;
    return wrong.length === 0;
  }, 60000, 1000).catch((e) => { throw new Error(`${e.message}: ${last}`); });
  t.diagnostic(`converged: ${last}`);
}

test('L1: dockerd stopped while idle: 503 while down, then records and containers converge, no orphans', { timeout: 300000 }, async (t) => {
  const a = await create();
  const b = await create();
  assert.equal((await exec(a.sandboxId, 'echo ok')).json.stdout, 'ok\n');
  const master = workers();
  await d.stop('SIGTERM');
  await whileDown(t, a.sandboxId);
  await d.start();
  const back = Date.now();
  // by themselves: no restart of sandpit, the next create works
  const c = await waitFor(async () => {
    const r = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' }, timeoutMs: 60000 });
    if (r.status === 200) made.push(r.json.sandboxId);
    return r.status === 200 && r.json;
  }, 30000, 500);
  t.diagnostic(`create answered 200 ${Date.now() - back} ms after dockerd was back`);
  assert.equal((await exec(c.sandboxId, 'echo ok')).json.stdout, 'ok\n');
  await converged(t);
  // the sandboxes whose containers dockerd ended read so, and refuse work
  for (const sb of [a, b]) {
    const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.sandboxId } });
    if (one.json.status !== 'running') assert.equal((await exec(sb.sandboxId, 'true')).status, 412);
    else assert.equal((await exec(sb.sandboxId, 'echo ok')).json.stdout, 'ok\n');
  }
  assert.equal(workers(), master, 'the same sandpitd master');
});

test('L1: dockerd restarted in the middle of an exec: the exec answers, 503 while down, then convergence, no orphans', { timeout: 300000 }, async (t) => {
  const a = await create();
  const master = workers();
  const t0 = Date.now();
  const inflight = timed(() => exec(a.sandboxId, 'sleep 30; echo late', { timeoutMs: 60000 }));
  // the command runs
  await waitFor(async () => (await dd('GET', `/containers/${a.containerId}/top`)).json?.Processes?.some((p) => p.join(' ').includes('sleep 30')), 10000, 100);
  const killedAt = Date.now();
  await d.stop('SIGTERM');
  const r = await inflight;
  t.diagnostic(`the exec in flight answered ${r.status} ${r.text.slice(0, 160)} ${Date.now() - killedAt} ms after dockerd was told to stop`);
  assert.ok(Date.now() - killedAt < 40000, 'answered in bounded time');
  assert.ok(Date.now() - t0 < 45000);
  if (r.status === 200) assert.ok(!r.json.stdout.includes('late'), r.text);
  else assert.equal(r.status, 503, r.text);
  // when the exec saw its container end before dockerd went (sandbox/exec.c
  // container_ended), it answered 137 and the sandbox reads killed from
  // then on; when dockerd went first, it reads running until Docker answers
  const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: a.sandboxId } });
  const killed = one.json.status === 'killed';
  if (killed) assert.ok(r.status === 200 && r.json.exitCode === 137, r.text);
  else assert.equal(one.json.status, 'running', one.text);
  await whileDown(t, a.sandboxId, { killed });
  await d.start();
  const c = await waitFor(async () => {
    const x = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' }, timeoutMs: 60000 });
    if (x.status === 200) made.push(x.json.sandboxId);
    return x.status === 200 && x.json;
  }, 30000, 500);
  assert.equal((await exec(c.sandboxId, 'echo ok')).json.stdout, 'ok\n');
  await converged(t);
  assert.equal(workers(), master, 'the same sandpitd master');
  assert.doesNotMatch(await s.logTail('sandpitd.log', 3000), /SIGSEGV|SIGABRT|signal 11|crashed/i);
});
