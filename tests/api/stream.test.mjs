// The streaming exec WebSocket (/sandbox-exec): a real WebSocket client
// (the ws package) through nginx, TLS verified against the stack's CA, the
// API key in x-api-key. Messages as the seed's table: ready, exec, stdout /
// stderr chunks as output arrives, exit, error; close codes 4000 / 4001 /
// 4003; 401/403 from nginx before the upgrade; A11 (disconnect kills the
// command); W5 (idle connections survive through pings, message size cap,
// backpressure for a slow reader, a stuck reader is dropped).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { startStack, waitFor } from './lib/stack.mjs';
import { dockerExec } from './lib/docker.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Opens /sandbox-exec?sandboxId=sid (no query when sid is undefined).
 * o.key: API key (default the stack's owner key; '' sends none);
 * o.headers: more request headers. The client object collects every
 * message (each with .at = arrival time) and counts pings.
 */
function connect(s, sid, o = {}) {
  const url = s.url.replace(/^https/, 'wss') + '/sandbox-exec' +
    (sid === undefined ? '' : `?sandboxId=${encodeURIComponent(sid)}`);
  const key = o.key === undefined ? s.key : o.key;
  const headers = { ...(key ? { 'x-api-key': key } : {}), ...(o.headers || {}) };
  const ws = new WebSocket(url, { ca: s.ca, headers });
  const c = { ws, msgs: [], pings: 0, bytes: 0 };
  c.opened = new Promise((resolve) => ws.once('open', resolve));
  c.closed = new Promise((resolve) => ws.once('close', (code, reason) =>
    resolve({ code, reason: reason.toString() })));
  c.response = new Promise((resolve) => ws.once('unexpected-response', (req, res) => {
    let body = '';
    res.on('data', (d) => { body += d; });
    res.on('end', () => { resolve({ status: res.statusCode, body }); req.destroy(); });
  }));
  ws.on('message', (data) => {
    c.bytes += data.length;
    const m = JSON.parse(data.toString());
    m.at = Date.now();
    if (o.onMessage) o.onMessage(m);
    else c.msgs.push(m);
  });
  ws.on('ping', () => { c.pings++; });
  ws.on('error', () => {}); // surfaces as close / unexpected-response
  /** The first message (from index `from`) that matches pred. */
  c.until = (pred, timeoutMs = 20000, from = 0) =>
    waitFor(() => c.msgs.slice(from).find(pred), timeoutMs, 10);
  c.send = (m) => ws.send(typeof m === 'string' ? m : JSON.stringify(m));
  /** Opens, waits for ready; resolves to c. */
  c.ready = async () => {
    const m = await c.until((x) => x.type === 'ready');
    assert.equal(m.sandboxId, sid);
    return c;
  };
  return c;
}

/** Runs one exec on a ready connection; resolves to { out, err, exit, chunks }. */
async function run(c, exec, timeoutMs = 30000) {
  const from = c.msgs.length;
  c.send({ type: 'exec', ...exec });
  const end = await c.until((m) => m.type === 'exit' || m.type === 'error', timeoutMs, from);
  const chunks = c.msgs.slice(from).filter((m) => m.type === 'stdout' || m.type === 'stderr');
  return {
    out: chunks.filter((m) => m.type === 'stdout').map((m) => m.data).join(''),
    err: chunks.filter((m) => m.type === 'stderr').map((m) => m.data).join(''),
    exit: end,
    chunks,
  };
}

/** Every process's command line in a container, one per line. */
async function processes(cid) {
  const r = await dockerExec(cid, ['sh', '-c',
    'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline 2>/dev/null; echo; done']);
  return r.stdout;
}

/** VmRSS in KiB of a pid, or 0. */
function rssKiB(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** The stream master's pid and its workers'. */
function streamPids(s) {
  const master = Number(fs.readFileSync(path.join(s.dir, 'sandpit-stream.pid'), 'utf8'));
  let workers = [];
  try {
    workers = execFileSync('pgrep', ['-P', String(master)], { encoding: 'utf8' })
      .split('\n').filter(Boolean).map(Number);
  } catch { /* none */ }
  return { master, workers };
}

let s, sb, otherKey, otherSb, silent, silentAt;

before(async () => {
  s = await startStack();
  const r = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
  assert.equal(r.status, 200, r.text);
  sb = r.json;
  otherKey = await s.newKey('stream-other-org');
  const o = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' }, key: otherKey });
  assert.equal(o.status, 200, o.text);
  otherSb = o.json;
  // W5: this connection stays silent while the other tests run; the last
  // test checks it is still alive after 60 s.
  silent = connect(s, sb.sandboxId);
  await silent.ready();
  silentAt = Date.now();
});

after(async () => {
  for (const x of [sb, otherSb]) {
    if (x) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: x.sandboxId }, key: x === otherSb ? otherKey : undefined });
  }
  silent?.ws.terminate();
  await s?.stop();
});

test('ready, then stdout chunks as the output arrives, then exit 0', async (t) => {
  const c = await connect(s, sb.sandboxId).ready();
  const r = await run(c, { cmd: 'for i in 1 2 3; do echo $i; sleep 1; done' });
  assert.deepEqual(r.exit, { type: 'exit', exitCode: 0, timedOut: false, at: r.exit.at });
  assert.equal(r.out, '1\n2\n3\n');
  assert.equal(r.chunks.length, 3, JSON.stringify(r.chunks));
  const gaps = [r.chunks[1].at - r.chunks[0].at, r.chunks[2].at - r.chunks[1].at];
  t.diagnostic(`message spacing: ${gaps.join(' ms, ')} ms`);
  for (const g of gaps) assert.ok(g >= 700, `messages ${g} ms apart: not streamed`);
  c.ws.close();
});

test('exit codes, stderr, cwd, env, and invalid UTF-8 as U+FFFD', async () => {
  const c = await connect(s, sb.sandboxId).ready();
  let r = await run(c, { cmd: 'echo oops >&2; exit 7' });
  assert.equal(r.exit.exitCode, 7);
  assert.equal(r.exit.timedOut, false);
  assert.equal(r.err, 'oops\n');
  r = await run(c, { cmd: 'pwd; echo "$GREETING"', cwd: '/tmp', env: { GREETING: 'hé' } });
  assert.equal(r.out, '/tmp\nhé\n');
  r = await run(c, { cmd: "printf 'a\\377b\\000c'" });
  assert.equal(r.out, 'a\uFFFDb\u0000c');
  c.ws.close();
});

test('timeoutMs kills the command: exit 124, timedOut true, within ~3 s', async () => {
  const c = await connect(s, sb.sandboxId).ready();
  const t0 = Date.now();
  const r = await run(c, { cmd: 'sleep 100', timeoutMs: 2000 });
  const took = Date.now() - t0;
  assert.equal(r.exit.type, 'exit', JSON.stringify(r.exit));
  assert.equal(r.exit.exitCode, 124);
  assert.equal(r.exit.timedOut, true);
  assert.ok(took >= 1900 && took < 4500, `took ${took} ms`);
  c.ws.close();
});

test('a second exec while one runs gets the busy error; the first one finishes', async () => {
  const c = await connect(s, sb.sandboxId).ready();
  const from = c.msgs.length;
  c.send({ type: 'exec', cmd: 'sleep 1; echo first' });
  c.send({ type: 'exec', cmd: 'echo second' });
  const busy = await c.until((m) => m.type === 'error', 5000, from);
  assert.equal(busy.message, 'A command is already running');
  const exit = await c.until((m) => m.type === 'exit', 10000, from);
  assert.equal(exit.exitCode, 0);
  const outs = c.msgs.slice(from).filter((m) => m.type === 'stdout').map((m) => m.data).join('');
  assert.equal(outs, 'first\n');
  // free again
  const r = await run(c, { cmd: 'echo third' });
  assert.equal(r.out, 'third\n');
  c.ws.close();
});

test('validation: the same rules as sandbox.exec, as error messages', async () => {
  const c = await connect(s, sb.sandboxId).ready();
  const cases = [
    [{}, /cmd/],
    [{ cmd: '' }, /cmd: must be at least 1/],
    [{ cmd: 'x'.repeat(65537) }, /cmd: must be at most 65536/],
    [{ cmd: 'true', cwd: 'relative' }, /cwd: Path must be absolute/],
    [{ cmd: 'true', env: { 'BAD-KEY': 'x' } }, /env/],
    [{ cmd: 'true', env: { OK: 1 } }, /env/],
    [{ cmd: 'true', timeoutMs: 999 }, /timeoutMs: must be between 1000 and 600000/],
    [{ cmd: 'true', timeoutMs: 600001 }, /timeoutMs/],
    [{ cmd: 'true', surprise: 1 }, /surprise/],
  ];
  for (const [body, re] of cases) {
    const r = await run(c, body, 5000);
    assert.equal(r.exit.type, 'error', JSON.stringify(body).slice(0, 80));
    assert.match(r.exit.message, re);
  }
  // a cwd under /proc, named lexically or through a symlink planted inside:
  // the same error as sandbox.exec's 400, and nothing runs (issue 12)
  const plant = await run(c, { cmd: 'ln -sf /proc/self /tmp/ps' });
  assert.equal(plant.exit.exitCode, 0, JSON.stringify(plant));
  for (const cwd of ['/proc/self', '/tmp/ps', '/tmp/ps/fd']) {
    const r = await run(c, { cmd: 'echo should not run', cwd }, 10000);
    assert.equal(r.exit.type, 'error', `${cwd}: ${JSON.stringify(r)}`);
    assert.equal(r.exit.message, 'cwd: may not be under /proc');
    assert.ok(!JSON.stringify(r).includes('should not run'), JSON.stringify(r));
  }
  c.ws.close();
});

// Regression (issue 14): an env value past the bound is the same error as
// sandbox.exec's 400 (exec.test.mjs), and nothing runs; one at the bound
// reaches the command whole.
test('an over-long env value: the error sandbox.exec gives, and nothing runs', async () => {
  const c = await connect(s, sb.sandboxId).ready();
  const big = await run(c, { cmd: 'echo should not run', env: { BIG: 'x'.repeat(131068) } }, 10000);
  assert.equal(big.exit.type, 'error', JSON.stringify(big).slice(0, 200));
  assert.equal(big.exit.message, 'env.BIG: KEY=value must be at most 131071 bytes');
  assert.equal(big.out, '');
  // (the total bound, 1 MiB, is past stream_max_message here: a 1009 close)
  const at = await run(c, { cmd: 'echo ${#BIG}', env: { BIG: 'x'.repeat(131067) } });
  assert.equal(at.exit.exitCode, 0, JSON.stringify(at.exit));
  assert.equal(at.out, '131067\n');
  c.ws.close();
});

test('invalid JSON, unknown types and binary messages get an error; the connection lives on', async () => {
  const c = await connect(s, sb.sandboxId).ready();
  const expect = async (send, re) => {
    const from = c.msgs.length;
    if (Buffer.isBuffer(send)) c.ws.send(send); else c.send(send);
    const m = await c.until((x) => x.type === 'error', 5000, from);
    assert.match(m.message, re);
  };
  await expect('{not json', /Invalid JSON/);
  await expect('[1,2]', /JSON object/);
  await expect({ type: 'nope' }, /Unknown message type 'nope'/);
  await expect({ cmd: 'echo' }, /type/);
  await expect(Buffer.from([1, 2, 3]), /Binary messages/);
  await expect('{"type":"exec","cmd":"x"} trailing', /Invalid JSON/);
  const r = await run(c, { cmd: 'echo still here' });
  assert.equal(r.out, 'still here\n');
  c.ws.close();
});

test('a message over stream_max_message closes with 1009', async () => {
  const c = await connect(s, sb.sandboxId).ready();
  c.send({ type: 'exec', cmd: 'x'.repeat(1024 * 1024 + 10) });
  const closed = await c.closed;
  assert.equal(closed.code, 1009);
});

test('no key → 401 and a key without sandbox:create → 403, both before the upgrade', async () => {
  const none = connect(s, sb.sandboxId, { key: '' });
  const r1 = await none.response;
  assert.equal(r1.status, 401);
  assert.equal(JSON.parse(r1.body).code, 'UNAUTHORIZED');
  const member = await s.newKey('default', 'member');
  const m = connect(s, sb.sandboxId, { key: member });
  const r2 = await m.response;
  assert.equal(r2.status, 403);
  assert.match(JSON.parse(r2.body).message, /sandbox:create/);
});

test('close 4000 without sandboxId', async () => {
  for (const sid of [undefined, '']) {
    const c = connect(s, sid);
    const closed = await c.closed;
    assert.equal(closed.code, 4000, `sandboxId=${sid}`);
    assert.match(closed.reason, /sandboxId/);
    assert.equal(c.msgs.length, 0);
  }
});

test("another org's sandbox, an unknown one and a killed one close with 4003", async () => {
  const other = connect(s, otherSb.sandboxId);
  let closed = await other.closed;
  assert.equal(closed.code, 4003);
  assert.equal(closed.reason, 'Sandbox not found');
  assert.equal(other.msgs.length, 0);
  // W2: a client-sent identity header changes nothing
  const spoof = connect(s, sb.sandboxId, { key: otherKey,
    headers: { 'x-sandpit-org': 'default', 'x-sandpit-perms': 'sandbox:create' } });
  closed = await spoof.closed;
  assert.equal(closed.code, 4003);
  const unknown = connect(s, 'nosuchsandbox00000000');
  assert.equal((await unknown.closed).code, 4003);
  const k = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
  assert.equal(k.status, 200, k.text);
  await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: k.json.sandboxId } });
  const dead = connect(s, k.json.sandboxId);
  closed = await dead.closed;
  assert.equal(closed.code, 4003);
  assert.match(closed.reason, /killed/);
  await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: k.json.sandboxId } });
});

test('A11: a client that disconnects mid-command gets its command killed', async () => {
  const c = await connect(s, sb.sandboxId).ready();
  c.send({ type: 'exec', cmd: 'echo started; sleep 4242; echo never' });
  await c.until((m) => m.type === 'stdout' && m.data.includes('started'));
  assert.match(await processes(sb.containerId), /sleep 4242/);
  c.ws.terminate();
  await waitFor(async () => !/sleep 4242/.test(await processes(sb.containerId)), 10000, 250);
  // the sandbox is still usable
  const d = await connect(s, sb.sandboxId).ready();
  assert.equal((await run(d, { cmd: 'echo ok' })).out, 'ok\n');
  d.ws.close();
});

test('W5: 50 MB to a slow reader — the daemon stays flat and every byte arrives', async (t) => {
  const TOTAL = 50_000_000;
  const line = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\n';
  const got = createHash('sha256');
  let n = 0, stdoutMsgs = 0, exit = null;
  const c = connect(s, sb.sandboxId, {
    onMessage: (m) => {
      if (m.type === 'stdout') { got.update(m.data); n += Buffer.byteLength(m.data); stdoutMsgs++; }
      else if (m.type === 'ready' || m.type === 'exit' || m.type === 'error') c.msgs.push(m);
    },
  });
  await c.ready();
  const { workers } = streamPids(s);
  assert.ok(workers.length >= 1);
  const base = Math.max(...workers.map(rssKiB));
  let peak = base;
  const sampler = setInterval(() => { for (const p of workers) peak = Math.max(peak, rssKiB(p)); }, 100);
  const t0 = Date.now();
  try {
    c.send({ type: 'exec', cmd: `yes ${line.trim()} | head -c ${TOTAL}`, timeoutMs: 120000 });
    // the reader stops for 3 s (the command must wait, not the daemon's memory
    // grow), then reads in short bursts with pauses between
    c.ws.pause();
    await sleep(3000);
    const pausedPeak = peak;
    while (!(exit = c.msgs.find((m) => m.type === 'exit' || m.type === 'error'))) {
      c.ws.resume();
      await sleep(40);
      c.ws.pause();
      await sleep(120);
      assert.ok(Date.now() - t0 < 110000, 'took too long');
    }
    c.ws.resume();
    t.diagnostic(`worker VmRSS: ${(base / 1024).toFixed(1)} MiB before, peak ${(peak / 1024).toFixed(1)} MiB ` +
      `(${(pausedPeak / 1024).toFixed(1)} MiB while the reader was stopped); ` +
      `${stdoutMsgs} stdout messages in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  } finally {
    clearInterval(sampler);
  }
  assert.equal(exit.type, 'exit', JSON.stringify(exit));
  assert.equal(exit.exitCode, 0);
  assert.equal(n, TOTAL);
  const want = createHash('sha256');
  const block = line.repeat(Math.floor((1 << 20) / line.length));
  let left = TOTAL;
  while (left > 0) { const k = Math.min(left, block.length); want.update(block.slice(0, k)); left -= k; }
  assert.equal(got.digest('hex'), want.digest('hex'), 'the bytes differ');
  assert.ok(peak < 64 * 1024, `worker RSS peaked at ${peak} KiB`);
  assert.ok(peak - base < 24 * 1024, `worker RSS grew by ${peak - base} KiB`);
  c.ws.close();
});

test('a reader stuck past stream_stuck_timeout_s is dropped and its command killed', async () => {
  const s2 = await startStack({ extraConf: 'stream_stuck_timeout_s = 2' });
  let sb2;
  try {
    const r = await s2.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
    assert.equal(r.status, 200, r.text);
    sb2 = r.json;
    const c = await connect(s2, sb2.sandboxId).ready();
    c.send({ type: 'exec', cmd: 'yes stuck-reader-4243' });
    await c.until((m) => m.type === 'stdout');
    c.ws.pause();
    await waitFor(async () => /reader took nothing/.test(await s2.logTail('sandpit-stream.log')), 20000, 250);
    await waitFor(async () => !/yes stuck-reader-4243/.test(await processes(sb2.containerId)), 10000, 250);
    c.ws.resume();
    const closed = await c.closed;
    assert.notEqual(closed.code, 1000);
  } finally {
    if (sb2) await s2.api('POST', '/api/sandbox.remove', { body: { sandboxId: sb2.sandboxId } });
    await s2.stop();
  }
});

test('stream_workers = 2: two workers serve; SIGTERM closes every connection with 1001, a running command too', async (t) => {
  const s2 = await startStack({ extraConf: 'stream_workers = 2' });
  let sb2;
  const conns = [];
  try {
    const r = await s2.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
    assert.equal(r.status, 200, r.text);
    sb2 = r.json;
    const { master, workers } = streamPids(s2);
    assert.equal(workers.length, 2, `stream workers: ${workers}`);
    const sockets = (pid) => fs.readdirSync(`/proc/${pid}/fd`).filter((f) => {
      try { return fs.readlinkSync(`/proc/${pid}/fd/${f}`).startsWith('socket:'); } catch { return false; }
    }).length;
    const base = Object.fromEntries(workers.map((p) => [p, sockets(p)]));
    for (let i = 0; i < 8; i++) conns.push(await connect(s2, sb2.sandboxId).ready());
    // every connection works (which worker accepts which is the kernel's
    // choice: both accept on the one socket, so one may take them all)
    for (const [i, c] of conns.entries()) assert.equal((await run(c, { cmd: `echo ${i}` })).out, `${i}\n`);
    t.diagnostic(`sockets per stream worker, idle -> with 8 connections: ${workers.map((p) => `${base[p]} -> ${sockets(p)}`).join(', ')}`);
    assert.equal(streamPids(s2).workers.length, 2);
    conns[0].send({ type: 'exec', cmd: 'sleep 5' });
    await waitFor(async () => /sleep 5/.test(await processes(sb2.containerId)), 10000, 100);
    process.kill(master, 'SIGTERM');
    const closed = await Promise.all(conns.map((c) => Promise.race([c.closed, sleep(60000).then(() => ({ code: 'still open' }))])));
    for (const c of closed) assert.equal(c.code, 1001, JSON.stringify(closed));
    assert.match(closed[1].reason, /shutting down/);
  } finally {
    for (const c of conns) c.ws.terminate();
    if (sb2) await s2.api('POST', '/api/sandbox.remove', { body: { sandboxId: sb2.sandboxId } });
    await s2.stop();
  }
});

// The connection opened in before() has said nothing since.
test('W5: an idle connection survives 60 s of silence (server pings)', async () => {
  assert.ok(silent, 'the idle connection was opened');
  const left = 60000 - (Date.now() - silentAt);
  if (left > 0) await sleep(left);
  assert.equal(silent.ws.readyState, WebSocket.OPEN);
  assert.ok(silent.pings >= 2, `${silent.pings} pings in 60 s`);
  const r = await run(silent, { cmd: 'echo awake' });
  assert.equal(r.out, 'awake\n');
  silent.ws.close();
});

// Last: it kills the worker that holds every connection.
test('the stream daemon is supervised: a killed worker is replaced', async () => {
  const { master, workers } = streamPids(s);
  assert.ok(workers.length >= 1);
  for (const p of workers) process.kill(p, 'SIGKILL');
  await waitFor(() => {
    const now = streamPids(s).workers;
    return now.length >= 1 && !now.some((p) => workers.includes(p));
  }, 10000);
  assert.equal(streamPids(s).master, master);
  const c = await connect(s, sb.sandboxId).ready();
  assert.equal((await run(c, { cmd: 'echo back' })).out, 'back\n');
  c.ws.close();
});
