// The web tier (nginx) answers every error in the JSON shape of the /api
// face, {"message","code"}, with the right status, on both listeners: the
// TLS port and the local unix socket. Malformed request lines are sent with
// raw sockets, since no HTTP client sends them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { readFile } from 'node:fs/promises';
import { startStack, waitFor } from './lib/stack.mjs';
import { docker } from './lib/docker.mjs';

let s, sock;
before(async () => {
  // a small rate so that a burst is over it
  s = await startStack({ env: { SANDPIT_RATE: '5r/s', SANDPIT_BURST: '10', SANDPIT_CONN_PER_KEY: '8' } });
  sock = path.join(s.dir, 'local', 'sandpit.sock');
});
after(async () => { await s?.stop(); });

/** Sends raw bytes on a fresh connection (TLS to the port, or the local
 * socket) and resolves to { status, headers, body, json } of the answer. */
function raw(bytes, { local = false } = {}) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    const c = local ? net.connect(sock) : tls.connect({ host: '127.0.0.1', port: s.port, ca: s.ca, servername: 'localhost' });
    c.once(local ? 'connect' : 'secureConnect', () => c.write(bytes));
    c.on('data', (d) => chunks.push(d));
    c.on('end', () => c.destroy());
    c.on('close', () => {
      const t = Buffer.concat(chunks).toString('latin1');
      const i = t.indexOf('\r\n\r\n');
      const head = t.slice(0, i).split('\r\n');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0] || '');
      const headers = {};
      for (const l of head.slice(1)) { const k = l.indexOf(':'); headers[l.slice(0, k).toLowerCase()] = l.slice(k + 1).trim(); }
      const body = t.slice(i + 4);
      let json;
      try { json = JSON.parse(body); } catch { json = undefined; }
      resolve({ status: m ? Number(m[1]) : 0, headers, body, json, text: t.slice(0, 300) });
    });
    c.on('error', reject);
    c.setTimeout(15000, () => c.destroy(new Error('no answer within 15 s')));
  });
}

/** One request on the local socket: { status, headers, json, text }. */
function local(method, p, { headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request({ socketPath: sock, method, path: p, agent: false,
      headers: { ...(data ? { 'content-type': 'application/json', 'content-length': data.length } : {}), ...headers } }, (res) => {
      const ch = [];
      res.on('data', (c) => ch.push(c));
      res.on('end', () => {
        const text = Buffer.concat(ch).toString();
        let json;
        try { json = JSON.parse(text); } catch { json = undefined; }
        resolve({ status: res.statusCode, headers: res.headers, json, text });
      });
    });
    req.on('error', reject);
    req.setTimeout(60000, () => req.destroy(new Error(`${p}: no answer within 60 s`)));
    if (data) req.write(data);
    req.end();
  });
}

function assertJsonError(r, status, what) {
  assert.equal(r.status, status, `${what}: ${r.text}`);
  assert.match(r.headers['content-type'] || '', /^application\/json/, `${what}: ${r.text}`);
  assert.ok(r.json && typeof r.json.message === 'string' && typeof r.json.code === 'string', `${what}: ${r.text}`);
}

const CRLF = '\r\n';
const lines = [
  ['GET *', `GET * HTTP/1.1${CRLF}Host: x${CRLF}${CRLF}`, 400],
  ['/api/%00', `GET /api/%00 HTTP/1.1${CRLF}Host: x${CRLF}${CRLF}`, 400],
  ['a raw space in the path', `GET /api/sandbox.one x HTTP/1.1${CRLF}Host: x${CRLF}${CRLF}`, 400],
  ['a control byte in the method', `G\x01T /api/sandbox.list HTTP/1.1${CRLF}Host: x${CRLF}${CRLF}`, 400],
  ['a path above the root', `GET /api/../../etc/passwd HTTP/1.1${CRLF}Host: x${CRLF}${CRLF}`, 400],
  ['no Host', `GET /api/sandbox.list HTTP/1.1${CRLF}${CRLF}`, 400],
  ['a 70 KB request line', `GET /api/${'a'.repeat(70 * 1024)} HTTP/1.1${CRLF}Host: x${CRLF}${CRLF}`, 414],
  ['HTTP/9.9', `GET /api/sandbox.list HTTP/9.9${CRLF}Host: x${CRLF}${CRLF}`, 505],
  ['an unknown transfer coding', `POST /api/sandbox.create HTTP/1.1${CRLF}Host: x${CRLF}Transfer-Encoding: gzip${CRLF}${CRLF}`, 501],
  ['a 20 KB header', `GET /api/sandbox.list HTTP/1.1${CRLF}Host: x${CRLF}X-Big: ${'a'.repeat(20 * 1024)}${CRLF}${CRLF}`, 431],
  ['an unknown path', `GET /nope HTTP/1.1${CRLF}Host: x${CRLF}Connection: close${CRLF}${CRLF}`, 404],
];

// The same refusals of a request line that names the /v1 face: in /v1's
// shape ({code, message, details}), also before any location is chosen
// (a path that climbs above the root).
const v1lines = [
  ['/v1, a path above the root', `GET /v1/../../etc/passwd HTTP/1.1${CRLF}Host: x${CRLF}${CRLF}`, 400, 'invalidArgument'],
  ['/endpoints, a path above the root', `GET /endpoints/x/../../../v1/sandboxes HTTP/1.1${CRLF}Host: x${CRLF}${CRLF}`, 400, 'invalidArgument'],
  ['/v1, no Host', `GET /v1/sandboxes HTTP/1.1${CRLF}${CRLF}`, 400, 'invalidArgument'],
  ['/v1, a 70 KB request line', `GET /v1/${'a'.repeat(70 * 1024)} HTTP/1.1${CRLF}Host: x${CRLF}${CRLF}`, 414, 'invalidArgument'],
  ['/v1, HTTP/9.9', `GET /v1/sandboxes HTTP/9.9${CRLF}Host: x${CRLF}${CRLF}`, 505, 'invalidArgument'],
  ['/v1, a 20 KB header', `GET /v1/sandboxes HTTP/1.1${CRLF}Host: x${CRLF}X-Big: ${'a'.repeat(20 * 1024)}${CRLF}${CRLF}`, 431, 'invalidArgument'],
];
function assertV1Error(r, status, code, what) {
  assertJsonError(r, status, what);
  assert.equal(r.json.code, code, `${what}: ${r.text}`);
  assert.ok(Array.isArray(r.json.details), `${what}: not /v1's shape: ${r.text}`);
  assert.match(r.headers['x-request-id'] || '', /^[0-9a-f]{32}$/, `${what}: ${r.text}`);
}

test('malformed request lines naming /v1: /v1-shaped JSON errors, on the TLS port and the local socket', async () => {
  for (const [what, bytes, status, code] of v1lines) {
    assertV1Error(await raw(bytes), status, code, `TLS, ${what}`);
    assertV1Error(await raw(bytes, { local: true }), status, code, `local, ${what}`);
  }
});

test('malformed request lines on the TLS port: JSON errors with their status, never HTML', async () => {
  for (const [what, bytes, status] of lines) assertJsonError(await raw(bytes), status, `TLS, ${what}`);
});

test('the same on the local socket', async () => {
  for (const [what, bytes, status] of lines) assertJsonError(await raw(bytes, { local: true }), status, `local, ${what}`);
});

test('local socket: a burst over the rate gets JSON 429 with Retry-After, not 500', async () => {
  const rs = await Promise.all(Array.from({ length: 60 }, () => local('GET', '/api/sandbox.templates')));
  const by = {};
  for (const r of rs) by[r.status] = (by[r.status] || 0) + 1;
  assert.deepEqual(Object.keys(by).sort(), ['200', '429'], JSON.stringify(by));
  for (const r of rs.filter((x) => x.status === 429)) {
    assertJsonError(r, 429, 'local burst');
    assert.equal(r.json.code, 'TOO_MANY_REQUESTS');
    assert.equal(r.headers['retry-after'], '1');
  }
  await new Promise((r) => setTimeout(r, 2500)); // let the bucket refill
});

test('local socket: an unknown path, an unknown procedure, a 20 KB header', async () => {
  assertJsonError(await local('GET', '/nope'), 404, 'unknown path');
  assertJsonError(await local('GET', '/api/sandbox.nope'), 404, 'unknown procedure');
  assertJsonError(await local('GET', '/api/sandbox.list', { headers: { 'x-big': 'a'.repeat(20 * 1024) } }), 431, '20 KB header');
});

test('local socket: a worker that dies mid-request is a JSON 503, not 500', { timeout: 120000 }, async () => {
  const c = await local('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
  assert.equal(c.status, 200, c.text);
  const id = c.json.sandboxId;
  try {
    const pending = local('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: 'sleep 17' } });
    // the command runs, so a worker is inside the request
    await waitFor(async () => {
      const top = await docker('GET', `/containers/${c.json.containerId}/top`);
      return top.json?.Processes?.some((p) => p.join(' ').includes('sleep 17'));
    }, 20000, 100);
    // every worker of this stack's sandpitd (never anything else)
    const master = (await readFile(path.join(s.dir, 'sandpitd.pid'), 'utf8')).trim();
    const kids = await new Promise((resolve) => execFile('pgrep', ['-P', master], (e, out) => resolve(out.split('\n').filter(Boolean))));
    assert.ok(kids.length > 0, 'sandpitd has workers');
    for (const k of kids) process.kill(Number(k), 'SIGKILL');
    const r = await pending;
    assertJsonError(r, 503, 'worker killed');
    assert.equal(r.json.code, 'SERVICE_UNAVAILABLE');
  } finally {
    await local('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  }
});

test('MCP: each tool call of a batch counts against the key rate; a batch over what is left runs none', async () => {
  // this stack: 5 r/s, bursts of 10 (11 at once), for requests at nginx and tool calls in sandpitd
  await new Promise((r) => setTimeout(r, 2500)); // a full bucket
  const batch = (n, from) => Array.from({ length: n }, (_, i) =>
    ({ jsonrpc: '2.0', id: from + i, method: 'tools/call', params: { name: 'sandbox-templates', arguments: {} } }));
  const post = (body) => s.api('POST', '/mcp', { rawBody: JSON.stringify(body),
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } });
  // 20 creates' worth in one request: refused whole, nothing charged
  let r = await post(batch(20, 1));
  assert.equal(r.status, 429, r.text);
  assert.ok(Number(r.headers['retry-after']) >= 1, JSON.stringify(r.headers));
  assert.match(r.json.error.message, /each call of a batch counts/);
  // 8 fit
  r = await post(batch(8, 100));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.length, 8);
  assert.ok(r.json.every((m) => m.result && m.result.isError === false), r.text.slice(0, 300));
  // 8 more right away do not (3 or so left): none runs
  r = await post(batch(8, 200));
  assert.equal(r.status, 429, r.text);
  // single calls count too, down to the bucket's floor
  const singles = [];
  for (let i = 0; i < 6; i++) singles.push((await post(batch(1, 300 + i)[0])).status);
  assert.ok(singles.includes(429), singles.join(','));
  // once the bucket refills, a batch runs again
  await new Promise((res) => setTimeout(res, 2500));
  r = await post(batch(8, 400));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.length, 8);
});

test('a key trickling bodies holds at most SANDPIT_CONN_PER_KEY connections; other keys are served', { timeout: 90000 }, async () => {
  await new Promise((r) => setTimeout(r, 2500)); // a full rate bucket
  const key = await s.newKey('default');
  const conns = [];
  const head = `POST /api/sandbox.create HTTP/1.1\r\nHost: localhost\r\nx-api-key: ${key}\r\n` +
    'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{';
  try {
    for (let i = 0; i < 12; i++) {
      const c = { data: '', closed: false };
      c.sock = tls.connect({ host: '127.0.0.1', port: s.port, ca: s.ca, servername: 'localhost' }, () => c.sock.write(head));
      c.sock.on('data', (d) => { c.data += d.toString('latin1'); });
      c.sock.on('close', () => { c.closed = true; });
      c.sock.on('error', () => {});
      conns.push(c);
    }
    // one byte every 5 s (each read well inside client_body_timeout)
    const started = Date.now();
    while (Date.now() - started < 11000) {
      await new Promise((r) => setTimeout(r, 5000));
      for (const c of conns) if (!c.closed) c.sock.write(' ');
    }
    const refused = conns.filter((c) => c.data.startsWith('HTTP/1.1 429'));
    const open = conns.filter((c) => !c.closed && !c.data);
    assert.equal(open.length, 8, `open: ${open.length}; answers: ${conns.map((c) => c.data.split('\r\n')[0] || (c.closed ? 'closed' : 'open')).join(' | ')}`);
    assert.equal(refused.length, 4);
    for (const c of refused) assert.match(c.data, /"code":"TOO_MANY_REQUESTS"/);
    // the key is at its limit; another key is served as usual
    const more = await s.api('GET', '/api/sandbox.templates', { key });
    assert.equal(more.status, 429, more.text);
    const other = await s.api('GET', '/api/sandbox.templates');
    assert.equal(other.status, 200, other.text);
  } finally {
    for (const c of conns) c.sock.destroy();
  }
  // the slots come back once the connections are gone
  await new Promise((r) => setTimeout(r, 1500));
  const again = await s.api('GET', '/api/sandbox.templates', { key });
  assert.equal(again.status, 200, again.text);
});
