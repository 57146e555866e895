// Scale out (issue 7): two sandpitd instances behind one nginx upstream, and
// a Redis Sentinel failover while requests run. Each test starts its own
// stack; the Sentinel test also starts its own Redis topology on loopback
// ports (one master, one replica, three sentinels; quorum 2) and stops every
// process it started in after().
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startStack, waitFor } from './lib/stack.mjs';
import { docker } from './lib/docker.mjs';

const stacks = [];
const procs = [];
const dirs = [];
const labelPrefix = `spscale${process.pid}`;

after(async () => {
  for (const s of stacks) await s.stop().catch(() => {});
  // sandboxes a failed create may have left: all carry this file's label prefix
  const l = await docker('GET', `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ label: [`${labelPrefix}.sandbox`] }))}`);
  for (const c of l.json || []) await docker('DELETE', `/containers/${c.Id}?force=1`).catch(() => {});
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

function cli(port, ...args) {
  return new Promise((resolve) => {
    execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(port), '--no-raw', ...args], { timeout: 5000 },
      (err, stdout) => resolve(err ? '' : stdout));
  });
}
const cliRaw = (port, ...args) => new Promise((resolve) => {
  execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 5000 },
    (err, stdout) => resolve(err ? '' : stdout.trim()));
});

/** Starts redis-server with args; resolves once it answers PING. */
async function redis(port, args, logName, dir) {
  const p = spawn('redis-server', args, { stdio: ['ignore', fs.openSync(path.join(dir, logName), 'a'), 'inherit'] });
  procs.push(p);
  await waitFor(async () => (await cliRaw(port, 'PING')) === 'PONG', 10000, 100);
  return p;
}

/** Counts requests per upstream socket in nginx's access log, for lines matching re. */
async function upstreams(s, re) {
  const log = await readFile(path.join(s.dir, 'nginx', 'access.log'), 'utf8');
  const n = {};
  for (const line of log.split('\n')) {
    if (!re.test(line)) continue;
    const m = / ua=(.*?) rid=/.exec(line);
    if (!m) continue;
    const last = m[1].split(',').pop().trim(); // "a, b": a refused, b served
    n[path.basename(last)] = (n[path.basename(last)] || 0) + 1;
  }
  return n;
}

test('two sandpitd instances behind one upstream serve the same sandbox; one stops, the other carries on', async () => {
  const s = await startStack({ env: { SANDPIT_INSTANCES: '2' }, extraConf: `label_prefix = ${labelPrefix}` });
  stacks.push(s);
  const conf = await readFile(path.join(s.dir, 'nginx.conf'), 'utf8');
  // the pool: both instances' sockets; the reserved workers: both
  // instances' fast sockets, the pooled ones as backup. No server is ever
  // marked down (max_fails=0): nginx retries a refused one per request, and
  // a marked-down upstream answers 502 at once for fail_timeout (10 s) even
  // after every instance is back (a SIGSTOP of sandpitd, a Redis failover)
  assert.match(conf, /upstream sandpit_app \{[^}]*\n\s*server unix:\S+\/sandpitd\.sock max_fails=0;\s*server unix:\S+\/sandpitd-2\.sock max_fails=0;\s*\}/);
  assert.match(conf, new RegExp('upstream sandpit_fast \\{\\s*' +
    'server unix:\\S+/sandpitd-fast\\.sock max_fails=0;\\s*server unix:\\S+/sandpitd-2-fast\\.sock max_fails=0;\\s*' +
    'server unix:\\S+/sandpitd\\.sock max_fails=0 backup;\\s*server unix:\\S+/sandpitd-2\\.sock max_fails=0 backup;\\s*\\}'));
  // every fastcgi_pass in the main file goes through an upstream: healthz,
  // /session, /metrics, /_auth and /_auth_endpoint through the reserved workers'
  assert.ok((conf.match(/fastcgi_pass sandpit_fast;/g) || []).length >= 5, 'healthz, /session, /metrics and the auth subrequests use sandpit_fast');
  assert.deepEqual((conf.match(/fastcgi_pass (?!unix:)\S+;/g) || []).filter((x) => !/ sandpit_(app|fast);$/.test(x)), [],
    'no fastcgi_pass names another upstream');
  // the one that bypasses it is the scrape of one named instance (/metrics/NAME)
  assert.deepEqual(conf.match(/fastcgi_pass unix:\S+/g) || [], [`fastcgi_pass unix:${s.dir}/$sp_instance.sock;`],
    'no fastcgi_pass but /metrics/NAME bypasses the upstream');
  const a = await readFile(path.join(s.dir, 'sandpitd.conf'), 'utf8');
  const b = await readFile(path.join(s.dir, 'sandpitd-2.conf'), 'utf8');
  assert.equal(b, a.replace(/^listen = .*$/m, `listen = ${s.dir}/sandpitd-2.sock`), 'configs differ only in listen');

  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
  assert.equal(c.status, 200, c.text);
  const id = c.json.sandboxId;
  const mine = new RegExp(`sandbox\\.(one|exec)`);
  // exec runs on the pool, one (a read from the record) on the reserved workers
  const pooled = (n) => (n['sandpitd.sock'] || 0) + (n['sandpitd-2.sock'] || 0);
  const fast = (n) => (n['sandpitd-fast.sock'] || 0) + (n['sandpitd-2-fast.sock'] || 0);
  const inst = (n, i) => i === 1
    ? (n['sandpitd.sock'] || 0) + (n['sandpitd-fast.sock'] || 0)
    : (n['sandpitd-2.sock'] || 0) + (n['sandpitd-2-fast.sock'] || 0);
  for (let i = 0; i < 16; i++) {
    const r = i % 2
      ? await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } })
      : await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: `echo run-${i}` } });
    assert.equal(r.status, 200, r.text);
    if (i % 2 === 0) assert.equal(r.json.stdout, `run-${i}\n`);
  }
  const before = await waitFor(async () => {
    const n = await upstreams(s, mine);
    return pooled(n) + fast(n) === 16 && n;
  }, 5000, 100);
  assert.ok(inst(before, 1) > 0 && inst(before, 2) > 0, `both instances served one/exec: ${JSON.stringify(before)}`);
  assert.deepEqual([pooled(await upstreams(s, /sandbox\.exec/)), fast(await upstreams(s, /sandbox\.one/))], [8, 8],
    `exec on the pool, one on the reserved workers: ${JSON.stringify(before)}`);

  // instance 2 stops (SIGTERM: drain); every later request lands on instance 1
  const pid2 = Number(fs.readFileSync(path.join(s.dir, 'sandpitd-2.pid'), 'utf8'));
  process.kill(pid2, 'SIGTERM');
  const results = [];
  for (let i = 0; i < 12; i++) {
    const r = i % 2
      ? await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } })
      : await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: 'echo still' } });
    results.push(r.status);
  }
  assert.deepEqual(results, Array(12).fill(200));
  await waitFor(() => { try { process.kill(pid2, 0); return false; } catch { return true; } }, 20000);
  const log2 = await readFile(path.join(s.dir, 'sandpitd-2.log'), 'utf8');
  const served2 = [...log2.matchAll(/after (\d+) requests/g)].reduce((n, m) => n + Number(m[1]), 0);
  assert.ok(served2 > 0, `instance 2's workers report the requests they served:\n${log2}`);
  // (nginx writes a log line just after the answer: wait for the last one)
  const after2 = await waitFor(async () => {
    const n = await upstreams(s, mine);
    return pooled(n) + fast(n) === 16 + 12 && n;
  }, 5000, 100);
  // instance 2 drains: a request it had already accepted may still finish there
  assert.ok(inst(after2, 1) >= inst(before, 1) + 11, JSON.stringify({ before, after2 }));

  const k = await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: id } });
  assert.equal(k.status, 200, k.text);
  assert.equal(k.json.status, 'killed');
});

test('Sentinel failover while requests run: 503s only, no restart, no acknowledged record lost', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sp-sentinel-'));
  dirs.push(dir);
  const [pm, pr, ...ps] = await Promise.all([1, 2, 3, 4, 5].map(() => freePort()));
  const base = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'];
  await mkdir(path.join(dir, 'm'));
  await mkdir(path.join(dir, 'r'));
  const masterArgs = ['--port', String(pm), '--dir', path.join(dir, 'm'), ...base];
  const master = await redis(pm, masterArgs, 'master.log', dir);
  await redis(pr, ['--port', String(pr), '--dir', path.join(dir, 'r'), ...base,
    '--replicaof', '127.0.0.1', String(pm)], 'replica.log', dir);
  for (const [i, port] of ps.entries()) {
    const f = path.join(dir, `sentinel-${i}.conf`);
    await writeFile(f, [
      `port ${port}`, 'bind 127.0.0.1', `dir ${dir}`, 'protected-mode no',
      `sentinel monitor mymaster 127.0.0.1 ${pm} 2`,
      'sentinel down-after-milliseconds mymaster 1000',
      'sentinel failover-timeout mymaster 4000',
      'sentinel parallel-syncs mymaster 1', '',
    ].join('\n'));
    await redis(port, [f, '--sentinel'], `sentinel-${i}.log`, dir);
  }
  // the sentinels know the replica and each other before anything fails
  await waitFor(async () => {
    for (const port of ps) {
      if (!(await cliRaw(port, 'SENTINEL', 'replicas', 'mymaster')).includes(String(pr))) return false;
      const others = await cliRaw(port, 'SENTINEL', 'sentinels', 'mymaster');
      if (ps.filter((p) => p !== port && others.includes(String(p))).length < 2) return false;
    }
    return (await cliRaw(pr, 'ROLE')).includes('connected');
  }, 30000, 250);

  const s = await startStack({
    env: { REDIS_URL: '' },
    extraConf: [
      `redis_sentinels = ${ps.map((p) => `127.0.0.1:${p}`).join(',')}`,
      'redis_master_name = mymaster',
      'redis_wait_replicas = 1',
      'redis_wait_timeout_ms = 500',
      `label_prefix = ${labelPrefix}`,
    ],
  });
  stacks.push(s);
  assert.ok(!fs.existsSync(path.join(s.dir, 'redis.started')), 'stack.sh started no Redis of its own');
  assert.match(await readFile(s.config, 'utf8'), /redis_sentinels = /);

  // acknowledged before the failover
  const acked = [];
  for (let i = 0; i < 8; i++) {
    const r = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', name: `pre-${i}` } });
    assert.equal(r.status, 200, r.text);
    acked.push(r.json.sandboxId);
  }
  const sandpitdPid = fs.readFileSync(path.join(s.dir, 'sandpitd.pid'), 'utf8').trim();

  // requests keep running while the master dies
  const seen = [];
  let stop = false;
  const timed = async (kind, fn) => {
    const t = Date.now();
    let r;
    try { r = await fn(); } catch (e) { r = { status: 0, text: String(e) }; }
    seen.push({ kind, at: t, ms: Date.now() - t, status: r.status, text: r.text, id: r.json?.sandboxId });
    return r;
  };
  const readers = [0, 1, 2].map(async (n) => {
    for (let i = n; !stop; i++) {
      await timed('read', () => s.api('GET', '/api/sandbox.one', { query: { sandboxId: acked[i % acked.length] }, timeoutMs: 20000 }));
      await sleep(50);
    }
  });
  const writer = (async () => {
    for (let i = 0; !stop; i++) {
      await timed('create', () => s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', name: `during-${i}` }, timeoutMs: 20000 }));
      await sleep(100);
    }
  })();

  await sleep(1000);
  const killedAt = Date.now();
  master.kill('SIGKILL');
  // the sentinels promote the replica
  await waitFor(async () => (await cliRaw(ps[0], 'SENTINEL', 'get-master-addr-by-name', 'mymaster')).endsWith(String(pr)), 20000, 100);
  const promotedAt = Date.now();
  // reads come back without restarting sandpitd
  await waitFor(() => seen.some((x) => x.kind === 'read' && x.at > promotedAt && x.status === 200), 10000, 100);
  // the old master returns (as every failed node eventually does) and the
  // sentinels make it a replica, so writes get their WAIT 1 again
  await redis(pm, masterArgs, 'master-2.log', dir);
  await waitFor(async () => (await cliRaw(pm, 'ROLE')).startsWith('slave') &&
    Number((await cliRaw(pr, 'WAIT', '1', '200'))) >= 1, 20000, 200);
  const rejoinedAt = Date.now();
  await waitFor(() => seen.some((x) => x.kind === 'create' && x.at > rejoinedAt && x.status === 200), 15000, 100);
  await sleep(500);
  stop = true;
  await Promise.all([...readers, writer]);

  const during = seen.filter((x) => x.at + x.ms >= killedAt);
  const bad = during.filter((x) => x.status !== 200 && x.status !== 503);
  assert.deepEqual(bad.map((x) => `${x.kind} ${x.status} ${x.text}`), [], 'only 503 while the master changes, never 500');
  for (const x of during.filter((y) => y.status === 503)) {
    assert.match(x.text, /unavailable/i, x.text);
  }
  const slowest = Math.max(...during.map((x) => x.ms));
  assert.ok(slowest < 8000, `no request hangs (slowest ${slowest} ms)`);
  const firstOk = (kind) => during.find((x) => x.kind === kind && x.status === 200 && x.at > killedAt);
  const n503 = during.filter((x) => x.status === 503);
  const lastFail = Math.max(...during.filter((x) => x.status !== 200).map((x) => x.at + x.ms), killedAt);
  const readOk = firstOk('read');
  console.log(`# failover: sentinels promoted the replica ${promotedAt - killedAt} ms after SIGKILL; ` +
    `first read OK ${readOk.at + readOk.ms - killedAt} ms after; ` +
    `${n503.length} x 503 (${n503.filter((x) => x.kind === 'read').length} reads, ` +
    `${n503.filter((x) => x.kind === 'create').length} creates) of ${during.length} requests; ` +
    `last failure ended ${lastFail - killedAt} ms after; old master rejoined ${rejoinedAt - killedAt} ms after; ` +
    `slowest request ${slowest} ms; 503s before promotion: ${n503.filter((x) => x.at < promotedAt).length}, ` +
    `between promotion and rejoin (writes not confirmed by a replica): ${n503.filter((x) => x.at >= promotedAt && x.at < rejoinedAt).length}, ` +
    `after rejoin: ${n503.filter((x) => x.at >= rejoinedAt).length}; creates acknowledged during the switch: ` +
    `${during.filter((x) => x.kind === 'create' && x.status === 200).length}`);

  // sandpitd was never restarted; no worker crashed
  assert.equal(fs.readFileSync(path.join(s.dir, 'sandpitd.pid'), 'utf8').trim(), sandpitdPid);
  process.kill(Number(sandpitdPid), 0);
  const log = await readFile(path.join(s.dir, 'sandpitd.log'), 'utf8');
  assert.doesNotMatch(log, /crash/);
  assert.match(log, new RegExp(`redis master of mymaster is 127\\.0\\.0\\.1:${pr}`));

  // every record acknowledged before the failover (and during it) is there
  const ackedDuring = seen.filter((x) => x.kind === 'create' && x.status === 200).map((x) => x.id);
  for (const id of [...acked, ...ackedDuring]) {
    const r = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } });
    assert.equal(r.status, 200, `${id}: ${r.text}`);
  }
  const list = await s.api('GET', '/api/sandbox.list');
  assert.equal(list.status, 200);
  for (const id of acked) assert.ok(list.json.some((x) => x.sandboxId === id));

  // A switchover (SENTINEL FAILOVER): the master becomes a replica under the
  // workers' open connections; their next write meets READONLY and they
  // ask Sentinel again, without a restart.
  assert.equal(await cliRaw(ps[0], 'SENTINEL', 'failover', 'mymaster'), 'OK');
  await waitFor(async () => (await cliRaw(ps[0], 'SENTINEL', 'get-master-addr-by-name', 'mymaster')).endsWith(String(pm)) &&
    (await cliRaw(pm, 'ROLE')).startsWith('master') && (await cliRaw(pr, 'ROLE')).includes('connected'), 20000, 100);
  const switched = [];
  await waitFor(async () => {
    const r = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', name: 'after-switchover' }, timeoutMs: 20000 });
    switched.push(r.status);
    if (r.status === 200) ackedDuring.push(r.json.sandboxId);
    return r.status === 200;
  }, 15000, 100);
  assert.ok(switched.every((x) => x === 200 || x === 503), switched.join(','));
  assert.match(await readFile(path.join(s.dir, 'sandpitd.log'), 'utf8'), new RegExp(`redis master of mymaster is 127\\.0\\.0\\.1:${pm}`));
  console.log(`# switchover: creates answered ${switched.join(', ')}`);
  for (const id of [...acked, ...ackedDuring]) await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: id } });
});
