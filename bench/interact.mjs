// `make bench`'s interact row (bench/bench.sh): createProcess → the first
// output chunk on the process's interact WebSocket, beside a raw docker
// exec that attaches (create, then start hijacked, until its first output
// byte), interleaved, BENCH_INTERACT_N each, in one sandbox (template
// alpine). sandpit's side is what an agent does: POST /v1/processes on the
// sandbox endpoint (HTTPS, a fresh request), then a WSS upgrade to
// sandpit-stream, attach, and the first chunk frame; the command is `echo
// hi`, which may have ended before the attach (its retained output is
// replayed). Env: SANDPIT_URL, SANDPIT_KEY, SANDPIT_CA (the stack's env).
// Prints one table row. Needs the ws package (npm ci --prefix tests).
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { createRequire } from 'node:module';

const require = createRequire(new URL('../tests/package.json', import.meta.url));
const WebSocket = require('ws');

const { SANDPIT_URL: base, SANDPIT_KEY: key, SANDPIT_CA: caFile } = process.env;
const ca = fs.readFileSync(caFile);
const N = Number(process.env.BENCH_INTERACT_N || 30);

function req(url, o = {}) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const r = https.request(u, { method: o.method || 'GET', ca, servername: 'localhost', headers: o.headers || {}, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode, text, json: text ? JSON.parse(text) : undefined });
      });
    });
    r.on('error', reject);
    r.setTimeout(30000, () => r.destroy(new Error(`${url}: timeout`)));
    if (o.body) r.write(o.body);
    r.end();
  });
}
const api = (method, p, body, headers = {}) => req(`${base}${p}`, {
  method, body: body && JSON.stringify(body),
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
});

// Docker's Engine API on its socket; a hijacked start resolves at the
// first byte of output after the upgrade.
function docker(method, p, body) {
  return new Promise((resolve, reject) => {
    const r = http.request({ socketPath: '/var/run/docker.sock', path: p, method, headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, json: chunks.length ? JSON.parse(Buffer.concat(chunks)) : undefined }));
    });
    r.on('error', reject);
    r.end(body && JSON.stringify(body));
  });
}
function execFirstByte(eid) {
  return new Promise((resolve, reject) => {
    const r = http.request({
      socketPath: '/var/run/docker.sock', path: `/exec/${eid}/start`, method: 'POST',
      headers: { 'content-type': 'application/json', connection: 'Upgrade', upgrade: 'tcp' },
    });
    r.on('upgrade', (res, sock, head) => {
      const done = () => { sock.destroy(); resolve(); };
      if (head.length) done(); else sock.once('data', done);
    });
    r.on('response', (res) => reject(new Error(`exec start: ${res.statusCode}`)));
    r.on('error', reject);
    r.end(JSON.stringify({ Detach: false, Tty: false }));
  });
}
async function raw(cid) {
  const c = await docker('POST', `/containers/${cid}/exec`, { Cmd: ['echo', 'hi'], AttachStdout: true, AttachStderr: true, User: '1000:1000' });
  if (c.status !== 201) throw new Error(`exec create: ${c.status}`);
  await execFirstByte(c.json.Id);
}

async function viaSandpit(id, token) {
  const p = await req(`${base}/endpoints/${id}/v1/processes`, {
    method: 'POST', body: JSON.stringify({ cmd: ['echo', 'hi'] }),
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  });
  if (p.status !== 201) throw new Error(`createProcess: ${p.status} ${p.text}`);
  const url = `${base.replace(/^https:/, 'wss:')}/endpoints/${id}/v1/processes/${p.json.uid}/interact`;
  await new Promise((resolve, reject) => {
    const ws = new WebSocket(url, ['sandboxes.v1'], { ca, servername: 'localhost', headers: { authorization: `Bearer ${token}` } });
    const t = setTimeout(() => { ws.terminate(); reject(new Error('no chunk within 30 s')); }, 30000);
    ws.on('open', () => ws.send(JSON.stringify({ attach: { name: `processes/${p.json.uid}` } })));
    ws.on('message', (d) => {
      const f = JSON.parse(d.toString());
      if (f.chunk) { clearTimeout(t); ws.terminate(); resolve(); }
    });
    ws.on('error', (e) => { clearTimeout(t); reject(e); });
  });
}

const pct = (a, q) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(q * s.length))]; };
const ms = (t) => Number(process.hrtime.bigint() - t) / 1e6;

const c = await api('POST', '/v1/sandboxes', { image: 'images/alpine', resources: { cpus: 1 } });
if (c.status !== 201) throw new Error(`create: ${c.status} ${c.text}`);
const id = c.json.uid;
try {
  const cred = await api('POST', `/v1/sandboxes/${id}/endpoint-credentials`, { permissions: ['sandboxesExec'] });
  const one = await req(`${base}/api/sandbox.one?sandboxId=${id}`, { headers: { 'x-api-key': key } });
  const cid = one.json.containerId;
  const ts = [], tr = [];
  for (let i = 0; i < 3; i++) { await viaSandpit(id, cred.json.token); await raw(cid); }
  for (let i = 0; i < N; i++) {
    let t = process.hrtime.bigint();
    await viaSandpit(id, cred.json.token);
    ts.push(ms(t));
    t = process.hrtime.bigint();
    await raw(cid);
    tr.push(ms(t));
  }
  const f = (x) => x.toFixed(1);
  console.log(`| createProcess → first chunk on interact (\`echo hi\`; HTTPS POST, then WSS attach) vs raw docker exec create + hijacked start → first byte, ${N} each | ${f(pct(ts, 0.5))} | ${f(pct(ts, 0.95))} | ${f(pct(tr, 0.5))} | ${f(pct(tr, 0.95))} | ${(pct(ts, 0.5) / pct(tr, 0.5)).toFixed(2)}× | — | — |`);
} finally {
  const g = await api('GET', `/v1/sandboxes/${id}`);
  if (g.status === 200) await api('DELETE', `/v1/sandboxes/${id}`, undefined, { 'if-match': g.json.core.etag });
}
