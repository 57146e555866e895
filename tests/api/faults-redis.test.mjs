// RELIABILITY L3: the stack's own redis-server (deploy/stack.sh starts one
// per test stack, so no other test shares it) is SIGKILLed under traffic
// and started again; then shut down and started again slowly (LOADING).
//   - while it is down every answer is a clean, retryable failure: a JSON
//     503 with Retry-After, never a 500/502/504, never a hang; no worker
//     dies;
//   - once it is back, the workers' connections are rebuilt by themselves:
//     requests succeed again within a bounded time;
//   - LOADING (the dataset still being read) is waited out: a request sent
//     then answers 200, not an error;
//   - records are intact afterwards (AOF), and no create that failed left
//     a container without a record behind.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startStack, waitFor } from './lib/stack.mjs';
import { docker } from './lib/docker.mjs';

let s, key, org, prefix;
const made = [];
before(async () => {
  // a few hundred requests a second at times: above the default per-key rate
  s = await startStack({ env: { SANDPIT_RATE: '2000r/s', SANDPIT_BURST: '2000' } });
  // an organization of this file alone, so its containers can be counted
  org = `l3-${process.pid}`;
  key = await s.newKey(org);
  prefix = /^label_prefix\s*=\s*(\S+)/m.exec(fs.readFileSync(s.config, 'utf8'))?.[1] || 'sandpit';
});
after(async () => {
  if (s) {
    for (const id of made) await api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
    await s.stop();
  }
});
const api = (method, p, o = {}) => s.api(method, p, { key, timeoutMs: 60000, ...o });

const redisSock = () => path.join(s.dir, 'redis.sock');
const redisPid = () => Number(fs.readFileSync(path.join(s.dir, 'redis.pid'), 'utf8').trim());
const cli = (...a) => spawnSync('redis-cli', ['-s', redisSock(), ...a], { encoding: 'utf8', timeout: 10000 }).stdout.trim();
// as deploy/stack.sh starts it, and more options
function startRedis(...extra) {
  execFileSync('redis-server', ['--port', '0', '--unixsocket', redisSock(), '--unixsocketperm', '700',
    '--dir', path.join(s.dir, 'redis'), '--appendonly', 'yes', '--daemonize', 'yes',
    '--pidfile', path.join(s.dir, 'redis.pid'), '--logfile', path.join(s.dir, 'redis.log'), ...extra]);
}
function gone(pid) {
  try { process.kill(pid, 0); return false; } catch { return true; }
}
function workerPids() {
  const master = fs.readFileSync(path.join(s.dir, 'sandpitd.pid'), 'utf8').trim();
  return { master, workers: spawnSync('pgrep', ['-P', master], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean) };
}
const snapshot = async () => {
  const l = await api('GET', '/api/sandbox.list');
  assert.equal(l.status, 200, l.text);
  return l.json.map((x) => `${x.sandboxId} ${x.status} ${x.containerId} ${x.timeoutMs}`).sort();
};

// Traffic until stop(): four clients, reads and writes of every kind;
// every answer recorded with its time.
function traffic(ids) {
  const log = [];
  let stopped = false, creates = 0;
  const one = async (k) => {
    for (let i = 0; !stopped; i++) {
      const id = ids[(k + i) % ids.length];
      let kind = ['one', 'list', 'exec', 'setTimeout', 'create'][(k + i) % 5];
      // a few creates (each makes a container), the rest reads and writes
      if (kind === 'create' && creates++ >= 12) kind = 'one';
      const t0 = Date.now();
      let r;
      try {
        if (kind === 'one') r = await api('GET', '/api/sandbox.one', { query: { sandboxId: id } });
        else if (kind === 'list') r = await api('GET', '/api/sandbox.list');
        else if (kind === 'exec') r = await api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: 'echo ok' } });
        else if (kind === 'setTimeout') r = await api('POST', '/api/sandbox.setTimeout', { body: { sandboxId: id, timeoutMs: 300000 } });
        else r = await api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
      } catch (e) {
        r = { status: 0, text: e.message, headers: {} };
      }
      if (kind === 'create' && r.status === 200) made.push(r.json.sandboxId);
      log.push({ kind, status: r.status, ms: Date.now() - t0, at: t0, text: r.text?.slice(0, 200), json: r.json, retryAfter: r.headers?.['retry-after'], requestId: r.headers?.['x-request-id'] });
      await new Promise((res) => setTimeout(res, 20));
    }
  };
  const all = Promise.all([0, 1, 2, 3].map(one));
  return { log, stop: async () => { stopped = true; await all; } };
}

test('L3: Redis SIGKILLed under traffic and started again: clean 503s, connections rebuilt, records intact', { timeout: 240000 }, async (t) => {
  const ids = [];
  for (let i = 0; i < 6; i++) {
    const c = await api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
    assert.equal(c.status, 200, c.text);
    made.push(c.json.sandboxId);
    ids.push(c.json.sandboxId);
  }
  const procsBefore = workerPids();
  const tr = traffic(ids);
  await waitFor(() => tr.log.filter((x) => x.status === 200).length >= 10, 30000, 50);
  const pid = redisPid();
  const killedAt = Date.now();
  process.kill(pid, 'SIGKILL');
  await waitFor(() => gone(pid), 5000, 20);
  // down for 3 s, under traffic
  await new Promise((r) => setTimeout(r, 3000));
  startRedis();
  const restartedAt = Date.now();
  await waitFor(() => cli('ping') === 'PONG', 10000, 50);
  // back by themselves: the next requests succeed
  await waitFor(() => tr.log.filter((x) => x.at > restartedAt + 200 && x.status === 200).length >= 10, 30000, 100);
  await tr.stop();

  const down = tr.log.filter((x) => x.at > killedAt + 100 && x.at + x.ms < restartedAt);
  const byStatus = {};
  for (const x of tr.log) byStatus[`${x.kind} ${x.status}`] = (byStatus[`${x.kind} ${x.status}`] || 0) + 1;
  const recovered = tr.log.filter((x) => x.at > restartedAt).find((x) => x.status === 200);
  t.diagnostic(`${tr.log.length} requests, ${down.length} while Redis was down; ${JSON.stringify(byStatus)}; ` +
    `first 200 ${recovered.at + recovered.ms - restartedAt} ms after the restart; slowest answer ${Math.max(...tr.log.map((x) => x.ms))} ms`);
  assert.ok(down.length >= 8, `only ${down.length} requests while Redis was down`);
  for (const x of tr.log) {
    assert.ok([200, 503].includes(x.status), `${x.kind}: ${x.status} ${x.text}`);
    assert.ok(x.ms < 30000, `${x.kind} took ${x.ms} ms`);
    if (x.status === 503) {
      assert.equal(x.json?.code, 'SERVICE_UNAVAILABLE', x.text);
      assert.equal(x.retryAfter, '1', `${x.kind}: ${x.text}`);
      // every answer names its request, nginx's own 503s too
      assert.match(x.requestId ?? '', /^[0-9a-f]{32}$/, `${x.kind}: ${x.text}`);
    }
  }
  // the failures are Redis's: while it was down, nothing that needs it succeeded
  assert.ok(down.filter((x) => x.status === 503).length >= down.length / 2, 'mostly 503 while Redis was down');
  // no worker died (the master and its workers are the same processes, or
  // recycled by max_requests, never by a crash)
  assert.equal(workerPids().master, procsBefore.master);
  assert.doesNotMatch(await s.logTail('sandpitd.log', 2000), /worker \d+ (died|crashed|killed)|signal 11|SIGSEGV|SIGABRT/i);

  // records intact, and every sandbox made before works
  const after = await snapshot();
  for (const id of ids) assert.ok(after.some((l) => l.startsWith(`${id} running `)), `${id} is still running: ${after.join('; ')}`);
  for (const id of ids) assert.equal((await api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: 'echo ok' } })).json?.stdout, 'ok\n');
  // every container of this organization has its record (a create that
  // failed removed what it had made), within the creates' own grace
  const records = new Set((await api('GET', '/api/sandbox.list')).json.map((x) => x.containerId));
  await waitFor(async () => {
    const q = encodeURIComponent(JSON.stringify({ label: [`${prefix}.sandbox=true`, `${prefix}.organizationId=${org}`] }));
    const cs = (await docker('GET', `/containers/json?all=1&filters=${q}`)).json;
    const orphans = cs.filter((c) => !records.has(c.Id));
    if (orphans.length) t.diagnostic(`containers without a record: ${orphans.map((c) => c.Id.slice(0, 12)).join(' ')}`);
    return orphans.length === 0;
  }, 60000, 1000);
});

test('L3: Redis restarted and still LOADING its data: requests wait it out and answer 200', { timeout: 180000 }, async (t) => {
  const c = await api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
  assert.equal(c.status, 200, c.text);
  made.push(c.json.sandboxId);
  const before = await snapshot();
  // filler keys (not sandpit's prefix) in the AOF's RDB base, so that
  // loading takes a while: 8,000 keys x 100 us of key-load-delay, ~2 s
  const fill = Array.from({ length: 8000 }, (_, i) => `SET l3filler:${i} ${'x'.repeat(32)}\r\n`).join('');
  spawnSync('redis-cli', ['-s', redisSock(), '--pipe'], { input: fill, timeout: 30000 });
  assert.equal(cli('bgrewriteaof').includes('rewriting'), true);
  await waitFor(() => /aof_rewrite_in_progress:0/.test(cli('info', 'persistence')) &&
    /aof_rewrite_scheduled:0/.test(cli('info', 'persistence')), 30000, 100);
  const pid = redisPid();
  cli('shutdown');
  await waitFor(() => gone(pid), 10000, 50);
  startRedis('--key-load-delay', '100', '--loading-process-events-interval-bytes', '1024');
  await waitFor(() => /^LOADING/.test(cli('get', 'l3filler:1')), 5000, 20);
  const t0 = Date.now();
  const answers = await Promise.all([
    api('GET', '/api/sandbox.one', { query: { sandboxId: c.json.sandboxId } }),
    api('GET', '/api/sandbox.list'),
    api('POST', '/api/sandbox.setTimeout', { body: { sandboxId: c.json.sandboxId, timeoutMs: 300000 } }),
  ]);
  const ms = Date.now() - t0;
  const stillLoading = /^LOADING/.test(cli('get', 'l3filler:1'));
  const loadedIn = /Done loading RDB|DB loaded from/.test(fs.readFileSync(path.join(s.dir, 'redis.log'), 'utf8'));
  t.diagnostic(`three requests sent while Redis was LOADING answered ${answers.map((a) => a.status).join(', ')} in ${ms} ms`);
  for (const a of answers) assert.equal(a.status, 200, a.text);
  assert.ok(loadedIn && !stillLoading, 'Redis finished loading');
  assert.ok(ms >= 300, `answered in ${ms} ms: were they sent while it was loading?`);
  assert.equal(answers[0].json.status, 'running');
  assert.equal(cli('get', 'l3filler:7999'), 'x'.repeat(32));
  assert.deepEqual(await snapshot(), before);
});

test('Redis forgets its Lua programs (SCRIPT FLUSH) under traffic: every request still answers, the programs are loaded again', { timeout: 180000 }, async (t) => {
  const ids = [];
  for (let i = 0; i < 2; i++) {
    const c = await api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
    assert.equal(c.status, 200, c.text);
    made.push(c.json.sandboxId);
    ids.push(c.json.sandboxId);
  }
  const cached = () => Number(/number_of_cached_scripts:(\d+)/.exec(cli('info', 'memory'))?.[1]);
  assert.ok(cached() > 0, 'the store runs its programs by EVALSHA: Redis has them');
  const tr = traffic(ids);
  await waitFor(() => tr.log.filter((x) => x.status === 200).length >= 10, 30000, 50);
  const flushedAt = Date.now();
  for (let i = 0; i < 3; i++) {
    assert.equal(cli('script', 'flush'), 'OK');
    await new Promise((r) => setTimeout(r, 400));
  }
  await waitFor(() => tr.log.filter((x) => x.at > flushedAt + 1200 && x.status === 200).length >= 10, 30000, 100);
  await tr.stop();
  const byStatus = {};
  for (const x of tr.log) byStatus[`${x.kind} ${x.status}`] = (byStatus[`${x.kind} ${x.status}`] || 0) + 1;
  t.diagnostic(`${tr.log.length} requests around 3 SCRIPT FLUSHes: ${JSON.stringify(byStatus)}`);
  for (const x of tr.log) {
    if (x.kind === 'create') assert.ok(x.status > 0 && x.status < 500, `create answered ${x.status}: ${x.text}`);
    else assert.equal(x.status, 200, `${x.kind} answered ${x.status}: ${x.text}`);
  }
  assert.ok(cached() > 0, 'the programs were loaded again');
  assert.match(fs.readFileSync(path.join(s.dir, 'sandpitd.log'), 'utf8'), /Lua program \w+ not loaded there; loading it/);
});
