// RELIABILITY L2: a Docker daemon that stops answering (SIGSTOP) takes only
// a bounded share of the workers. Calls to it fail fast once it is known
// to be silent, and the routes that need no Docker answer (/_auth,
// healthz, templates) or can answer from the record (list, one) keep
// answering meanwhile; after SIGCONT it is used again. Runs against a
// private dockerd (tests/api/lib/dockerd.mjs), never the shared one.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, waitFor } from './lib/stack.mjs';
import { startDockerd } from './lib/dockerd.mjs';

let d, s;
before(async () => {
  d = await startDockerd();
  await d.load('sandpit-test/busybox:latest');
  // 16 workers at most (deploy/stack.sh), so at most 4 wait on one server;
  // a call blocked on the stopped daemon gives up after 20 s
  s = await startStack({ env: { SANDPIT_DOCKER_HOST: d.host }, extraConf: ['docker_timeout_s = 20'] });
});
after(async () => {
  d?.resume();
  await s?.stop().catch(() => {});
  await d?.destroy();
});

const timed = async (fn) => { const t0 = Date.now(); const r = await fn(); return { ...r, ms: Date.now() - t0 }; };

test('L2: dockerd SIGSTOPped: Docker calls fail fast, other routes keep answering, recovery after SIGCONT', { timeout: 150000 }, async () => {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', name: 'l2' } });
  assert.equal(c.status, 200, c.text);
  const id = c.json.sandboxId;
  try {
    const warm = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: 'echo ok' } });
    assert.equal(warm.status, 200, warm.text);

    d.pause();
    const stoppedAt = Date.now();
    // 24 commands at once against the stopped daemon: more than there are workers
    const execs = Array.from({ length: 24 }, () => timed(() =>
      s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: 'echo late' }, timeoutMs: 60000 })));
    // while they wait: every route that needs no Docker answer, each second for 12 s
    const probes = [];
    while (Date.now() - stoppedAt < 12000) {
      const round = await Promise.all([
        timed(() => s.api('GET', '/healthz', { key: null, timeoutMs: 30000 })).then((r) => ({ route: 'healthz', ...r })),
        timed(() => s.api('GET', '/api/sandbox.templates', { timeoutMs: 30000 })).then((r) => ({ route: 'templates', ...r })),
        timed(() => s.api('GET', '/api/sandbox.list', { timeoutMs: 30000 })).then((r) => ({ route: 'list', ...r })),
        timed(() => s.api('GET', '/api/sandbox.one', { query: { sandboxId: id }, timeoutMs: 30000 })).then((r) => ({ route: 'one', ...r })),
      ]);
      probes.push(...round.map((r) => ({ ...r, at: Date.now() - stoppedAt })));
      await new Promise((r) => setTimeout(r, 1000));
    }
    const bad = probes.filter((p) => p.status !== 200 || p.ms > 4500);
    assert.deepEqual(bad.map((p) => `${p.route} at ${p.at} ms: ${p.status} in ${p.ms} ms ${p.text.slice(0, 120)}`), [],
      `routes without Docker must keep answering while dockerd is stopped (${probes.length} probes)`);
    // one and list answer from the record: still running, not killed
    for (const p of probes.filter((x) => x.route === 'one')) assert.equal(p.json.status, 'running');
    for (const p of probes.filter((x) => x.route === 'list'))
      assert.equal(p.json.find((x) => x.sandboxId === id)?.status, 'running');

    d.resume();
    const rs = await Promise.all(execs);
    // the calls that found the daemon silent failed as retryable 503s, and
    // those past the org's fair share of the workers as 429s (fairness.test.mjs);
    // the few that held a place waited (and ran once it came back, or timed out)
    for (const r of rs) assert.ok(r.status === 200 || r.status === 503 || r.status === 429, `${r.status} ${r.text}`);
    const fast = rs.filter((r) => (r.status === 503 && /not answer/.test(r.json?.message || '')) || r.status === 429);
    assert.ok(fast.length >= 16, `at least 16 of 24 execs refused fast (${rs.map((r) => `${r.status}/${r.ms}ms`).join(' ')})`);

    // recovery: commands run again
    const back = await waitFor(async () => {
      const r = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: 'echo back' }, timeoutMs: 30000 });
      return r.status === 200 && r.json.stdout === 'back\n' && r;
    }, 40000, 500);
    assert.equal(back.json.exitCode, 0);
    const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } });
    assert.equal(one.json.status, 'running');
  } finally {
    d.resume();
    await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: id }, timeoutMs: 60000 }).catch(() => {});
  }
});
