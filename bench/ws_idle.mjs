// Idle WebSocket connections: what 1000 ready-but-silent /sandbox-exec
// connections cost in resident memory. Starts its own stack
// (deploy/stack.sh, like the API tests), creates one sandbox, opens N
// connections through nginx (TLS, x-api-key), waits for "ready" on each,
// then reads VmRSS of sandpit-stream's processes and, separately, of
// nginx's workers. Target: sandpit-stream < 50 MB in total for 1000.
//
//   make bench-ws                 (N=1000)
//   N=2000 node bench/ws_idle.mjs
//
// Needs a built tree (make), dockerd, the local test images, and the ws
// package (npm ci --prefix tests).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { startStack } from '../tests/api/lib/stack.mjs';

const require = createRequire(new URL('../tests/package.json', import.meta.url));
const WebSocket = require('ws');

const N = Number(process.env.N || 1000);
const PARALLEL = 100;

function rssKiB(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

function children(pid) {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function measure(s) {
  const sm = Number(fs.readFileSync(path.join(s.dir, 'sandpit-stream.pid'), 'utf8'));
  const nm = Number(fs.readFileSync(path.join(s.dir, 'nginx.pid'), 'utf8'));
  const stream = [sm, ...children(sm)].map((p) => ({ pid: p, kib: rssKiB(p) }));
  const nginx = children(nm).map((p) => ({ pid: p, kib: rssKiB(p) }));
  const sum = (a) => a.reduce((t, x) => t + x.kib, 0);
  return { stream, nginx, streamKiB: sum(stream), nginxKiB: sum(nginx) };
}

const mib = (kib) => (kib / 1024).toFixed(1) + ' MiB';

function open(s, sid) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${s.url.replace(/^https/, 'wss')}/sandbox-exec?sandboxId=${sid}`,
      { ca: s.ca, headers: { 'x-api-key': s.key } });
    const timer = setTimeout(() => reject(new Error('no ready within 30 s')), 30000);
    ws.on('message', (d) => {
      if (JSON.parse(d.toString()).type === 'ready') {
        clearTimeout(timer);
        resolve(ws);
      }
    });
    ws.on('close', (code, reason) => reject(new Error(`closed ${code} ${reason}`)));
    ws.on('error', reject);
    ws.on('unexpected-response', (req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
}

const s = await startStack({ env: { SANDPIT_RATE: '100000r/s', SANDPIT_BURST: '100000' } });
const conns = [];
let sid;
try {
  const r = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
  if (r.status !== 200) throw new Error(`create: ${r.status} ${r.text}`);
  sid = r.json.sandboxId;
  const before = measure(s);
  const t0 = Date.now();
  for (let i = 0; i < N; i += PARALLEL) {
    const batch = [];
    for (let k = i; k < Math.min(N, i + PARALLEL); k++) batch.push(open(s, sid));
    conns.push(...await Promise.all(batch));
  }
  const openMs = Date.now() - t0;
  await new Promise((r) => setTimeout(r, 2000));
  const after = measure(s);
  const alive = conns.filter((w) => w.readyState === WebSocket.OPEN).length;
  console.log(`ws_idle: ${alive}/${N} connections ready and idle (opened in ${(openMs / 1000).toFixed(1)} s)`);
  console.log(`sandpit-stream: ${mib(before.streamKiB)} before, ${mib(after.streamKiB)} with ${N} idle ` +
    `connections (${((after.streamKiB - before.streamKiB) / N).toFixed(1)} KiB each); ` +
    after.stream.map((p) => `pid ${p.pid} ${mib(p.kib)}`).join(', '));
  console.log(`nginx workers:  ${mib(before.nginxKiB)} before, ${mib(after.nginxKiB)} with ${N} idle ` +
    `connections (${((after.nginxKiB - before.nginxKiB) / N).toFixed(1)} KiB each); ` +
    after.nginx.map((p) => `pid ${p.pid} ${mib(p.kib)}`).join(', '));
  const limit = 50 * 1024;
  console.log(`target: sandpit-stream < 50 MiB in total for 1000 idle connections: ` +
    (after.streamKiB < limit ? 'met' : 'MISSED'));
  if (after.streamKiB >= limit && N <= 1000) process.exitCode = 1;
} finally {
  for (const w of conns) w.terminate();
  if (sid) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: sid } }).catch(() => {});
  await s.stop();
}
