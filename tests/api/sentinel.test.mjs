// README "Redis Sentinel": "Requests during the switch succeed or get 503
// with Retry-After; reads and idempotent writes are sent again once, a
// conditional write (kill, revoke, role delete) never twice."
//
// Real redis-server processes and real sentinels (`redis-server
// --sentinel`) on free loopback ports in a temp folder; every process is
// stopped in after().
//   1. A failover: the master is SIGKILLed under traffic and the sentinels
//      (down-after 10 s, so the switch takes several seconds) promote the
//      replica. Every answer meanwhile is 200 or 503, every 503 carries
//      Retry-After: 1 and SERVICE_UNAVAILABLE, requests sent in the first
//      second after the kill get 503 (the sentinels still name the dead
//      master), and once the replica is master requests succeed again with
//      the same sandpitd.
//   2. A write in flight when the connection breaks: the sentinel names a
//      TCP relay in front of the master (the one part not real: it stands
//      for the network, and loses one answer on purpose: it passes the
//      command on, lets Redis run it, then closes both sides instead of
//      passing the reply back). The master's own MONITOR counts what Redis
//      ran. A conditional write (setTimeout's and kill's status
//      compare-and-set, keys revoke, roles delete) whose answer was lost ran
//      exactly once and the caller was told 503 / "Redis is unavailable";
//      a read whose answer was lost ran twice (sent again once) and
//      answered 200. The record after recovery shows the write applied once.
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
const servers = [];
const labelPrefix = `spsentinel${process.pid}`;

after(async () => {
  for (const s of stacks) await s.stop().catch(() => {});
  const l = await docker('GET', `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ label: [`${labelPrefix}.sandbox`] }))}`);
  for (const c of l.json || []) await docker('DELETE', `/containers/${c.Id}?force=1`).catch(() => {});
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  for (const x of servers) x.close();
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

const base = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'];

/** Sentinels on ports ps watching mymaster at 127.0.0.1:masterPort. */
async function sentinels(dir, ps, masterPort, quorum, downAfterMs) {
  for (const [i, port] of ps.entries()) {
    const f = path.join(dir, `sentinel-${i}.conf`);
    await writeFile(f, [
      `port ${port}`, 'bind 127.0.0.1', `dir ${dir}`, 'protected-mode no',
      `sentinel monitor mymaster 127.0.0.1 ${masterPort} ${quorum}`,
      `sentinel down-after-milliseconds mymaster ${downAfterMs}`,
      'sentinel failover-timeout mymaster 10000',
      'sentinel parallel-syncs mymaster 1', '',
    ].join('\n'));
    await redis(port, [f, '--sentinel'], `sentinel-${i}.log`, dir);
  }
}

async function sentinelStack(ps, extra = []) {
  const s = await startStack({
    env: { REDIS_URL: '' },
    extraConf: [
      `redis_sentinels = ${ps.map((p) => `127.0.0.1:${p}`).join(',')}`,
      'redis_master_name = mymaster',
      `label_prefix = ${labelPrefix}`,
      ...extra,
    ],
  });
  stacks.push(s);
  assert.ok(!fs.existsSync(path.join(s.dir, 'redis.started')), 'stack.sh started no Redis of its own');
  return s;
}

test('Sentinel failover: every answer meanwhile is 200 or 503 with Retry-After: 1, then requests succeed again without a restart', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sp-sentinel-'));
  dirs.push(dir);
  const [pm, pr, ...ps] = await Promise.all([1, 2, 3, 4, 5].map(() => freePort()));
  await mkdir(path.join(dir, 'm'));
  await mkdir(path.join(dir, 'r'));
  const master = await redis(pm, ['--port', String(pm), '--dir', path.join(dir, 'm'), ...base], 'master.log', dir);
  await redis(pr, ['--port', String(pr), '--dir', path.join(dir, 'r'), ...base,
    '--replicaof', '127.0.0.1', String(pm)], 'replica.log', dir);
  // down-after 10 s: the sentinels name the dead master for at least 9 s
  // after the kill, longer than a command's 3 s search for a master (a
  // request may make more than one such search: 6 s was seen)
  await sentinels(dir, ps, pm, 2, 10000);
  await waitFor(async () => {
    for (const port of ps) {
      if (!(await cliRaw(port, 'SENTINEL', 'replicas', 'mymaster')).includes(String(pr))) return false;
      const others = await cliRaw(port, 'SENTINEL', 'sentinels', 'mymaster');
      if (ps.filter((p) => p !== port && others.includes(String(p))).length < 2) return false;
    }
    return (await cliRaw(pr, 'ROLE')).includes('connected');
  }, 30000, 250);

  const s = await sentinelStack(ps);
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' }, timeoutMs: 60000 });
  assert.equal(c.status, 200, c.text);
  const id = c.json.sandboxId;
  const pid = fs.readFileSync(path.join(s.dir, 'sandpitd.pid'), 'utf8').trim();

  // reads (one, list) and a conditional write (setTimeout) run throughout
  const seen = [];
  let stop = false;
  const send = async (kind, fn) => {
    const at = Date.now();
    let r;
    try { r = await fn(); } catch (e) { r = { status: 0, headers: {}, text: String(e) }; }
    seen.push({ kind, at, end: Date.now(), status: r.status, retry: r.headers['retry-after'], code: r.json?.code, text: r.text });
  };
  const loop = async (kind, fn) => {
    while (!stop) {
      await send(kind, fn);
      await sleep(100);
    }
  };
  const o = { timeoutMs: 30000 };
  const loops = [
    loop('one', () => s.api('GET', '/api/sandbox.one', { query: { sandboxId: id }, ...o })),
    loop('list', () => s.api('GET', '/api/sandbox.list', o)),
    loop('setTimeout', () => s.api('POST', '/api/sandbox.setTimeout', { body: { sandboxId: id, timeoutMs: 300000 }, ...o })),
  ];
  try {
    await sleep(1000);
    const killedAt = Date.now();
    master.kill('SIGKILL');
    // fresh requests just after the kill (the loops' own are in flight)
    await sleep(100);
    const probeAt = Date.now();
    const probes = Promise.all([
      send('probe one', () => s.api('GET', '/api/sandbox.one', { query: { sandboxId: id }, ...o })),
      send('probe list', () => s.api('GET', '/api/sandbox.list', o)),
      send('probe setTimeout', () => s.api('POST', '/api/sandbox.setTimeout', { body: { sandboxId: id, timeoutMs: 300000 }, ...o })),
    ]);
    await waitFor(async () => (await cliRaw(ps[0], 'SENTINEL', 'get-master-addr-by-name', 'mymaster')).endsWith(String(pr)), 30000, 100);
    const promotedAt = Date.now();
    // every kind succeeds again after the promotion
    await waitFor(() => ['one', 'list', 'setTimeout'].every((k) => seen.some((x) => x.kind === k && x.at > promotedAt && x.status === 200)), 20000, 100);
    stop = true;
    await Promise.all([...loops, probes]);

    const during = seen.filter((x) => x.end >= killedAt);
    const bad = during.filter((x) => x.status !== 200 && x.status !== 503);
    assert.deepEqual(bad.map((x) => `${x.kind} ${x.status} ${x.text}`), [], 'only 200 or 503 while the master changes');
    const n503 = during.filter((x) => x.status === 503);
    for (const x of n503) {
      assert.equal(x.retry, '1', `a 503 carries Retry-After: 1 (${x.kind}: ${x.text})`);
      assert.equal(x.code, 'SERVICE_UNAVAILABLE', x.text);
      // a worker's answer, or nginx's when the key check itself met Redis down
      assert.match(x.text, /"Redis is unavailable"|"Authorization service unavailable"/, x.text);
    }
    // sent just after the kill: the sentinels still name the dead master
    // when the request's 3 s search for one ends
    const early = seen.filter((x) => x.kind.startsWith('probe'));
    assert.ok(probeAt - killedAt < 1000, `the probes went out ${probeAt - killedAt} ms after the kill`);
    const why = `promoted ${promotedAt - killedAt} ms after the kill; ` +
      `probes: ${JSON.stringify(early.map((x) => ({ ...x, at: x.at - killedAt, end: x.end - killedAt, text: x.text.slice(0, 80) })))}`;
    assert.equal(early.length, 3);
    // each got 503, or succeeded only once the sentinels had a new master
    // (the test sees that by polling them: up to a poll late)
    for (const x of early) assert.ok(x.status === 503 || x.end >= promotedAt - 1000, why);
    assert.ok(early.some((x) => x.status === 503), `a request sent just after the kill got 503 (${why})`);
    const slowest = Math.max(...during.map((x) => x.end - x.at));
    assert.ok(slowest < 20000, `no request hangs (slowest ${slowest} ms)`);
    assert.equal(fs.readFileSync(path.join(s.dir, 'sandpitd.pid'), 'utf8').trim(), pid, 'sandpitd was not restarted');
    process.kill(Number(pid), 0);
    assert.match(await readFile(path.join(s.dir, 'sandpitd.log'), 'utf8'), new RegExp(`redis master of mymaster is 127\\.0\\.0\\.1:${pr}`));
    console.log(`# failover: promoted ${promotedAt - killedAt} ms after SIGKILL; ${n503.length} x 503 ` +
      `(${['one', 'list', 'setTimeout'].map((k) => `${k} ${n503.filter((x) => x.kind === k).length}`).join(', ')}) ` +
      `of ${during.length} requests; slowest ${slowest} ms`);
  } finally {
    stop = true;
    await Promise.all(loops);
  }
  const k = await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: id }, timeoutMs: 60000 });
  assert.equal(k.status, 200, k.text);
});

/**
 * A TCP relay to 127.0.0.1:upstream on a free port. relay.loseAnswer(pred)
 * arms it once: the first client->server piece for which pred(text) holds
 * (text: what that connection sent since arming) is passed on, and when
 * Redis's answer to it comes back, both sides are closed instead (the
 * command ran; its answer is lost). relay.lost says whether that happened.
 */
async function relay(upstream) {
  const conns = new Set();
  const r = { armed: null, lost: false, port: 0 };
  const server = net.createServer((client) => {
    const up = net.connect(upstream, '127.0.0.1');
    const c = { sent: '', cut: false };
    conns.add(c);
    const end = () => { client.destroy(); up.destroy(); conns.delete(c); };
    client.on('data', (d) => {
      c.sent = (c.sent + d.toString('latin1')).slice(-65536);
      if (r.armed && r.armed(c.sent)) {
        r.armed = null;
        c.cut = true;
      }
      up.write(d);
    });
    up.on('data', (d) => {
      if (c.cut) {
        r.lost = true;
        end();
        return;
      }
      client.write(d);
    });
    client.on('error', end);
    up.on('error', end);
    client.on('close', end);
    up.on('close', end);
  });
  servers.push(server);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.port = server.address().port;
  r.loseAnswer = (pred) => {
    for (const c of conns) c.sent = '';
    r.lost = false;
    r.armed = pred;
  };
  return r;
}

/** Every command the Redis at port runs, as MONITOR prints it. */
function monitor(port) {
  const p = spawn('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'MONITOR'], { stdio: ['ignore', 'pipe', 'inherit'] });
  procs.push(p);
  const m = { lines: [] };
  let buf = '';
  p.stdout.setEncoding('utf8');
  p.stdout.on('data', (d) => {
    buf += d;
    for (let i; (i = buf.indexOf('\n')) >= 0;) {
      m.lines.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  });
  // commands a client sent (not those a script ran: "[0 lua]")
  m.count = (re) => m.lines.filter((l) => /^\d+\.\d+ \[\d+ [\d.]+:\d+\] /.test(l) && re.test(l)).length;
  return m;
}

test('a conditional write whose answer was lost is not sent again (503, ran once); a read is (200, ran twice)', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sp-sentinel-cas-'));
  dirs.push(dir);
  const [pm, ps] = await Promise.all([freePort(), freePort()]);
  await mkdir(path.join(dir, 'm'));
  await redis(pm, ['--port', String(pm), '--dir', path.join(dir, 'm'), ...base], 'master.log', dir);
  const rl = await relay(pm);
  // one sentinel, watching the master through the relay, which it then
  // names to sandpit; nothing fails over here (down-after 60 s)
  await sentinels(dir, [ps], rl.port, 1, 60000);
  await waitFor(async () => (await cliRaw(ps, 'SENTINEL', 'get-master-addr-by-name', 'mymaster')).endsWith(String(rl.port)), 10000, 100);
  const mon = monitor(pm);
  await waitFor(() => mon.lines.includes('OK'), 10000, 50);
  // no reaper: its pass reads records too (a client HGETALL of a sandbox
  // whose container it did not list), which the counts below must not see
  const s = await sentinelStack([ps], ['reaper_interval_s = 0']);
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' }, timeoutMs: 60000 });
  assert.equal(c.status, 200, c.text);
  const id = c.json.sandboxId;
  const esc = (x) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const sbKey = new RegExp(`"[^"]*:sb:${esc(id)}"`);
  // MONITOR prints a moment after Redis ran the command: settle, then count
  const settled = async (fn) => { await sleep(500); return fn(); };

  // a read: sandbox.one's HGETALL of the record, answer lost once
  const hgetall = new RegExp(`\\] "HGETALL" ${sbKey.source}`);
  const nb = await settled(() => mon.count(hgetall));
  const one0 = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } });
  assert.equal(one0.status, 200, one0.text);
  const n0 = await settled(() => mon.count(hgetall));
  assert.ok(n0 > nb, 'MONITOR sees sandbox.one read the record');
  rl.loseAnswer((t) => t.includes('HGETALL') && t.includes(`:sb:${id}`));
  const one1 = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id }, timeoutMs: 30000 });
  assert.ok(rl.lost, 'the relay lost the read\'s answer');
  assert.equal(one1.status, 200, `a read whose answer was lost is sent again: ${one1.text}`);
  const n1 = await settled(() => mon.count(hgetall));
  assert.equal(n1 - n0, n0 - nb + 1, `the read was sent again once (an uncut sandbox.one: ${n0 - nb}, this one: ${n1 - n0}; ` +
    `the reads MONITOR saw: ${mon.lines.filter((l) => hgetall.test(l)).slice(-6).join(' | ')})`);

  // setTimeout's compare-and-set (status still running), answer lost
  // a Lua program runs as EVALSHA <its digest> <number of keys> <keys> <args>
  const evalsha = '\\] "EVALSHA" "[0-9a-f]{40}"';
  const cas = (ms) => new RegExp(`${evalsha} "1" ${sbKey.source} "running" "0" "timeoutMs" "${ms}"`);
  const t0 = await s.api('POST', '/api/sandbox.setTimeout', { body: { sandboxId: id, timeoutMs: 600000 } });
  assert.equal(t0.status, 200, t0.text);
  assert.equal(await settled(() => mon.count(cas(600000))), 1, 'an uncut setTimeout runs its compare-and-set once');
  rl.loseAnswer((t) => t.includes('EVAL') && t.includes(`:sb:${id}`) && t.includes('timeoutMs') && t.includes('610000'));
  const t1 = await s.api('POST', '/api/sandbox.setTimeout', { body: { sandboxId: id, timeoutMs: 610000 }, timeoutMs: 30000 });
  assert.ok(rl.lost, 'the relay lost the compare-and-set\'s answer');
  assert.equal(t1.status, 503, `a conditional write whose answer was lost is not sent again: ${t1.text}`);
  assert.equal(t1.headers['retry-after'], '1');
  assert.equal(t1.json?.code, 'SERVICE_UNAVAILABLE', t1.text);
  assert.equal(await settled(() => mon.count(cas(610000))), 1, 'the compare-and-set ran once');
  // after recovery: the record has the write, applied once
  const one2 = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } });
  assert.equal(one2.status, 200, one2.text);
  assert.equal(one2.json.timeoutMs, 610000, 'the write the lost answer was for is in the record');

  // revoke (keys revoke) and roles delete through the CLI, answers lost
  const k = await s.cli('keys', 'create', '--org', 'cas-org', '--role', 'admin');
  const key = k.stdout.trim();
  const keyId = k.stderr.match(/key id (\S+)/)[1];
  assert.equal((await s.api('GET', '/api/sandbox.list', { key })).status, 200);
  // an uncut revoke first: Redis has the revoke's program after it, so
  // the cut one below is the revoke itself, not its first NOSCRIPT
  const k0 = await s.cli('keys', 'create', '--org', 'cas-org', '--role', 'admin');
  await s.cli('keys', 'revoke', k0.stderr.match(/key id (\S+)/)[1]);
  rl.loseAnswer((t) => t.includes('EVAL') && t.includes(`keyid:${keyId}`));
  const rv = await s.cli('keys', 'revoke', keyId).then(() => null, (e) => e);
  assert.ok(rl.lost, 'the relay lost the revoke\'s answer');
  assert.ok(rv, 'keys revoke failed');
  assert.match(rv.stderr, /Redis is unavailable/, rv.stderr);
  assert.doesNotMatch(rv.stderr, /No key/, 'not sent twice (a second run answers "No key with id")');
  const revokes = new RegExp(`${evalsha} "1" "[^"]*:keyid:${esc(keyId)}"`);
  assert.equal(await settled(() => mon.count(revokes)), 1, 'the revoke ran once');
  assert.ok(!(await s.cli('keys', 'list', '--org', 'cas-org')).stdout.includes(keyId), 'the key is revoked');
  await waitFor(async () => (await s.api('GET', '/api/sandbox.list', { key })).status === 401, 10000, 200);

  await s.cli('roles', 'create', '--org', 'cas-org', 'viewer', '--perms', 'sandbox:read');
  rl.loseAnswer((t) => t.includes('HDEL') && t.includes('{cas-org}:roles') && t.includes('viewer'));
  const rd = await s.cli('roles', 'delete', '--org', 'cas-org', 'viewer').then(() => null, (e) => e);
  assert.ok(rl.lost, 'the relay lost the role delete\'s answer');
  assert.ok(rd, 'roles delete failed');
  assert.match(rd.stderr, /Redis is unavailable/, rd.stderr);
  assert.doesNotMatch(rd.stderr, /No role/, 'not sent twice (a second run answers "No role")');
  assert.equal(await settled(() => mon.count(/\] "HDEL" "[^"]*\{cas-org\}:roles" "viewer"/)), 1, 'the role delete ran once');
  assert.doesNotMatch((await s.cli('roles', 'list', '--org', 'cas-org')).stdout, /viewer/);

  // kill: its compare-and-set running -> killed, answer lost. The container
  // is gone either way, so kill answers 200 killed; Redis ran it once.
  const killCas = new RegExp(`${evalsha} "1" ${sbKey.source} "running" .*"status" "killed"`);
  rl.loseAnswer((t) => t.includes('EVAL') && t.includes(`:sb:${id}`) && t.includes('killed'));
  const kl = await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: id }, timeoutMs: 60000 });
  assert.ok(rl.lost, 'the relay lost the kill\'s answer');
  assert.equal(kl.status, 200, kl.text);
  assert.equal(kl.json.status, 'killed');
  assert.equal(await settled(() => mon.count(killCas)), 1, 'the kill\'s compare-and-set ran once');
  const one3 = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } });
  assert.equal(one3.json.status, 'killed');
});
