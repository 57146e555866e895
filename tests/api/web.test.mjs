// The web tier (RELIABILITY W1): oversize bodies and headers are refused by
// nginx (413, 431, JSON) before any worker sees them, and slow clients are
// cut by nginx after 30 s (client_header_timeout, client_body_timeout)
// without holding a worker: 48 of them at once while normal traffic keeps
// passing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import { startStack, waitFor } from './lib/stack.mjs';

let s;
before(async () => { s = await startStack({ env: { SANDPIT_RATE: '1000r/s', SANDPIT_BURST: '1000' } }); });
after(async () => { await s?.stop(); });

function workerPids() {
  const master = fs.readFileSync(path.join(s.dir, 'sandpitd.pid'), 'utf8').trim();
  return spawnSync('pgrep', ['-P', master], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number);
}
const syscallOf = (p) => { try { return fs.readFileSync(`/proc/${p}/syscall`, 'utf8').split(' ')[0]; } catch { return null; } };
// the syscalls an idle worker waits in, learnt from an idle stack: accept()
// (43 on x86-64; the reserved workers, and pooled ones without idle work),
// and ppoll() (271 on x86-64) on the listening socket for the pooled
// workers that run the reaper and the pools (fcgi/sandpitd.c
// connection_waiting); a worker waiting on Docker uses poll() (7)
const idleSyscall = () => waitFor(() => {
  const seen = new Set(workerPids().map(syscallOf));
  if (seen.has(null) || seen.has('running')) return null;
  if (seen.size === 1 || [...seen].every((n) => n === '43' || n === '271')) return seen;
  return null;
}, 30000, 100);
const requestLines = () => fs.readFileSync(path.join(s.dir, 'sandpitd.log'), 'utf8').split('\n')
  .filter((l) => / (GET|POST) \/api\//.test(l)).length;

function connect() {
  return new Promise((resolve, reject) => {
    const c = tls.connect({ host: '127.0.0.1', port: s.port, servername: 'localhost', ca: s.ca }, () => resolve(c));
    c.on('error', reject);
  });
}

test('W1: an oversize body gets 413 and oversize headers 431, as JSON, and no worker sees them', async () => {
  const lines = requestLines();
  const big = await s.api('POST', '/api/sandbox.create', { rawBody: Buffer.alloc(16 * 1024 * 1024, 'x'), headers: { 'content-type': 'application/json' } });
  assert.equal(big.status, 413, big.text);
  assert.equal(big.json.code, 'PAYLOAD_TOO_LARGE');
  // one header over the 16 KiB buffer, then many headers over 4 x 16 KiB
  const hdr = await s.api('GET', '/api/sandbox.list', { headers: { 'x-big': 'y'.repeat(17 * 1024) } });
  assert.equal(hdr.status, 431, hdr.text);
  assert.equal(hdr.json.code, 'REQUEST_HEADER_FIELDS_TOO_LARGE');
  const many = {};
  for (let i = 0; i < 8; i++) many[`x-h${i}`] = 'z'.repeat(9000);
  const hs = await s.api('GET', '/api/sandbox.list', { headers: many });
  assert.equal(hs.status, 431, hs.text);
  assert.equal(requestLines(), lines, 'sandpitd logged a request for them');
});

test('W1: 48 slow clients are cut by nginx after 30 s, hold no worker, and normal traffic keeps passing', async (t) => {
  const idle = await idleSyscall();
  const socks = [];
  t.after(() => { for (const c of socks) c.destroy(); });
  const closed = [];
  const t0 = Date.now();
  for (let i = 0; i < 48; i++) {
    const c = await connect();
    socks.push(c);
    c.on('error', () => {});
    c.on('close', () => closed.push(Date.now() - t0));
    if (i % 2) {
      // half send an unfinished header ...
      c.write(`POST /api/sandbox.create HTTP/1.1\r\nHost: localhost\r\nx-api-key: ${s.key}\r\n`);
    } else {
      // ... half the whole header and 10 bytes of a 1000-byte body
      c.write(`POST /api/sandbox.create HTTP/1.1\r\nHost: localhost\r\nx-api-key: ${s.key}\r\n` +
        'content-type: application/json\r\ncontent-length: 1000\r\n\r\n{"name":"x');
    }
  }
  // while they hang: 100 normal requests all answered, no worker ever busy
  // with them (bodies are buffered whole by nginx; workers see only
  // complete requests)
  let busySeen = 0;
  const poll = setInterval(() => {
    busySeen = Math.max(busySeen, workerPids().filter((p) => { const n = syscallOf(p); return n !== null && !idle.has(n); }).length);
  }, 50);
  try {
    for (let i = 0; i < 10; i++) {
      const rs = await Promise.all(Array.from({ length: 10 }, () => s.api('GET', '/api/sandbox.templates', { timeoutMs: 30000 })));
      for (const r of rs) assert.equal(r.status, 200, r.text);
    }
  } finally {
    clearInterval(poll);
  }
  t.diagnostic(`100 requests answered beside 48 slow clients; most workers seen busy at once: ${busySeen}`);
  // once the traffic stops, no worker is busy: the slow clients hold none
  await waitFor(() => workerPids().every((p) => idle.has(syscallOf(p))), 10000, 100);
  const idleAt = Date.now() - t0;
  assert.ok(idleAt < 29000, `the normal traffic took until ${idleAt} ms: nothing shown about the slow clients`);
  assert.equal(closed.length, 0, 'every slow client is still connected while all workers are idle');
  // nginx closes each of them after its 30 s timeout (cap 90 s)
  await waitFor(() => closed.length === 48, 90000, 250);
  closed.sort((a, b) => a - b);
  t.diagnostic(`closed by nginx after ${closed[0]}..${closed.at(-1)} ms`);
  assert.ok(closed[0] >= 29000, `cut after ${closed[0]} ms, before the 30 s timeout`);
  // and the stack still answers
  assert.equal((await s.api('GET', '/api/sandbox.list')).status, 200);
});
