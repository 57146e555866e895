// The web tier (nginx) answers every error in the JSON shape of the /api
// face, {"message","code"}, with the right status, on both listeners: the
// TLS port and the local unix socket. Malformed request lines are sent with
// raw sockets, since no HTTP client sends them. W1: one key's connections
// are bounded (SANDPIT_CONN_PER_KEY), and so is a request's whole time
// (SANDPIT_REQUEST_TIMEOUT, nginx/reqtime.conf; sandpitd's
// transfer_min_kbps for the streamed upload), on a stack of its own with a
// 4 s bound.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { readFile } from 'node:fs/promises';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { startStack, waitFor } from './lib/stack.mjs';
import { bytesOf, formData, streamRequest } from './lib/transfer.mjs';
import { ajv, seedValidator } from './lib/v1seed.mjs';
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

test('W1: a key trickling bodies holds at most SANDPIT_CONN_PER_KEY connections; other keys are served', { timeout: 90000 }, async () => {
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

// --- W1: a bound on a request's whole time (nginx/reqtime.conf) -----------
// A stack of its own with a short bound (SANDPIT_REQUEST_TIMEOUT=4): each
// trickled byte comes well inside client_body_timeout (30 s), so only the
// whole-request bound can end these requests.
const BOUND_S = 4;
let q, qsb, qtok;
before(async () => {
  q = await startStack({ env: { SANDPIT_REQUEST_TIMEOUT: String(BOUND_S) } });
  const r = await q.api('POST', '/v1/sandboxes', { body: { imageRef: 'sandpit-test/busybox' } });
  assert.equal(r.status, 201, r.text);
  qsb = r.json.uid;
  const c = await q.api('POST', `/v1/sandboxes/${qsb}/endpoint-credentials`,
    { body: { permissions: ['sandboxesExec', 'sandboxesFilesRead', 'sandboxesFilesWrite'] } });
  assert.equal(c.status, 200, c.text);
  qtok = c.json.token;
});
after(async () => {
  if (qsb) await q.api('POST', '/api/sandbox.remove', { body: { sandboxId: qsb } }).catch(() => {});
  await q?.stop();
});

/** The answer in raw bytes t: { status, headers, body, json }. */
function parseAnswer(t) {
  const i = t.indexOf('\r\n\r\n');
  const head = (i < 0 ? t : t.slice(0, i)).split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0] || '');
  const headers = {};
  for (const l of head.slice(1)) { const k = l.indexOf(':'); headers[l.slice(0, k).toLowerCase()] = l.slice(k + 1).trim(); }
  const body = i < 0 ? '' : t.slice(i + 4);
  let json;
  try { json = JSON.parse(body); } catch { json = undefined; }
  return { status: m ? Number(m[1]) : 0, headers, body, json, text: t.slice(0, 400) };
}

/** Writes head on a fresh connection to q (TLS, or its local socket), then
 * one byte every gapMs, the first half a gap in, until the server answers
 * or closes it or capMs pass. Resolves to the answer (parseAnswer) with
 * closed (whether the server closed it) and ms (from the first byte to the
 * close). The half-gap offset keeps every byte half a second from the
 * whole-request bound (a whole number of seconds): a byte written just
 * as nginx answers and closes meets a closed socket (EPIPE), and the
 * client drops the answer it had not yet read. */
function trickle(head, { local = false, gapMs = 1000, capMs = 20000 } = {}) {
  return new Promise((resolve) => {
    const chunks = [];
    let t0 = 0, closedAt = 0, timer, done = false;
    const c = local ? net.connect(path.join(q.dir, 'local', 'sandpit.sock'))
      : tls.connect({ host: '127.0.0.1', port: q.port, ca: q.ca, servername: 'localhost' });
    const finish = () => {
      if (done) return;
      done = true;
      clearInterval(timer);
      clearTimeout(cap);
      c.destroy();
      const t = Buffer.concat(chunks).toString('latin1');
      resolve({ ...parseAnswer(t), closed: closedAt > 0, ms: (closedAt || Date.now()) - t0 });
    };
    const cap = setTimeout(finish, capMs);
    c.once(local ? 'connect' : 'secureConnect', () => {
      t0 = Date.now();
      c.write(head);
      const tick = () => { if (!c.destroyed && !chunks.length) c.write('x'); };
      timer = setTimeout(() => { tick(); timer = setInterval(tick, gapMs); }, gapMs / 2);
    });
    c.on('data', (d) => { chunks.push(d); clearInterval(timer); });
    c.on('error', () => {});
    c.on('close', () => { closedAt = Date.now(); finish(); });
  });
}
const appLines = (re) => readFileSync(path.join(q.dir, 'sandpitd.log'), 'utf8').split('\n').filter((l) => re.test(l)).length;

test('W1: a valid key trickling a body is cut at the whole-request bound with its face\'s JSON 408, and sandpitd never sees the request', { timeout: 120000 }, async () => {
  // (an endpoint credential names its origin: the Host with the port)
  const body = (p, auth) => `POST ${p} HTTP/1.1\r\nHost: 127.0.0.1:${q.port}\r\n${auth}` +
    'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{';
  const cases = [
    ['/api (dokploy)', body('/api/sandbox.create', `x-api-key: ${q.key}\r\n`), {}, 'dokploy', / POST \/api\/sandbox\.create /],
    ['/v1', body('/v1/sandboxes', `x-api-key: ${q.key}\r\n`), {}, 'v1', / POST \/v1\/sandboxes /],
    ['the sandbox endpoint', body(`/endpoints/${qsb}/v1/processes/exec`, `Authorization: Bearer ${qtok}\r\n`), {}, 'v1', / POST \/endpoints\//],
    ['the local socket, /api', body('/api/sandbox.create', ''), { local: true }, 'dokploy', / POST \/api\/sandbox\.create /],
    ['the local socket, /v1', body('/v1/sandboxes', ''), { local: true }, 'v1', / POST \/v1\/sandboxes /],
  ];
  const t0 = Date.now();
  const rs = await Promise.all(cases.map(([, head, o]) => trickle(head, o)));
  for (const [i, [what, , , face, route]] of cases.entries()) {
    const r = rs[i];
    assert.ok(r.closed, `${what}: still open after ${r.ms} ms: ${r.text}`);
    assert.equal(r.status, 408, `${what}: ${r.text}`);
    assert.match(r.headers['content-type'] || '', /^application\/json/, `${what}: ${r.text}`);
    assert.match(r.headers['x-request-id'] || '', /^[0-9a-f]{32}$/, `${what}: ${r.text}`);
    if (face === 'v1') assert.deepEqual(r.json, { code: 'deadlineExceeded', message: 'The request came too slowly', details: [] }, what);
    else assert.deepEqual(r.json, { message: 'The request came too slowly', code: 'TIMEOUT' }, what);
    // not before the bound (each byte came 1 s after the last)
    assert.ok(r.ms >= BOUND_S * 1000 - 200, `${what}: cut after ${r.ms} ms`);
    // never passed to sandpitd (its /_auth subrequest was, before the body)
    const rid = r.headers['x-request-id'];
    assert.equal(appLines(new RegExp(`${rid}${route.source}`)), 0, `${what}: sandpitd logged ${rid}`);
    // nginx logged the cut: a warning naming it, and the access log's 408
    const err = readFileSync(path.join(q.dir, 'nginx', 'error.log'), 'utf8');
    assert.match(err, new RegExp(`W1: request not in within ${BOUND_S} s .*rid=${rid}`), what);
    const acc = readFileSync(path.join(q.dir, 'nginx', 'access.log'), 'utf8');
    assert.match(acc, new RegExp(`" 408 \\d+ .*rid=${rid}`), what);
  }
  console.log(`5 trickled bodies cut after ${rs.map((r) => r.ms).join(', ')} ms (bound ${BOUND_S} s; all within ${Date.now() - t0} ms)`);
});

test('W1: a trickled request line and header block are closed at the bound, unanswered, and never reach sandpitd', { timeout: 120000 }, async () => {
  const before = appLines(/ (GET|POST) \/(api|v1)\//);
  const cases = [
    ['a header block', `POST /api/sandbox.create HTTP/1.1\r\nHost: localhost\r\nx-api-key: ${q.key}\r\nX-Slow: `, {}],
    ['a request line', 'GET /v1/sandboxes', {}],
    ['a header block, local socket', 'POST /api/sandbox.create HTTP/1.1\r\nHost: localhost\r\nX-Slow: ', { local: true }],
  ];
  const rs = await Promise.all(cases.map(([, head, o]) => trickle(head, o)));
  for (const [i, [what]] of cases.entries()) {
    const r = rs[i];
    assert.ok(r.closed, `${what}: still open after ${r.ms} ms`);
    // nginx has nothing to answer a request it has no header block of
    assert.equal(r.status, 0, `${what}: ${r.text}`);
    assert.ok(r.ms >= BOUND_S * 1000 - 200, `${what}: closed after ${r.ms} ms`);
  }
  assert.equal(appLines(/ (GET|POST) \/(api|v1)\//), before, 'sandpitd logged a request for them');
  // the access log shows each as a 408 with nothing sent
  const acc = readFileSync(path.join(q.dir, 'nginx', 'access.log'), 'utf8').split('\n');
  assert.ok(acc.filter((l) => / 408 0 /.test(l)).length >= cases.length, acc.slice(-5).join('\n'));
  console.log(`trickled headers closed after ${rs.map((r) => r.ms).join(', ')} ms`);
});

test('W1: under the short bound a 10 MiB writeFile and a paced 256 MiB streamed upload still pass', { timeout: 240000 }, async () => {
  const bin = Buffer.alloc(10 << 20, 7);
  const w = await q.api('POST', '/api/sandbox.writeFile', {
    body: { sandboxId: qsb, path: '/home/user/ten.bin', content: bin.toString('base64'), encoding: 'base64' }, timeoutMs: 120000 });
  assert.equal(w.status, 200, w.text.slice(0, 300));
  assert.equal(w.json.size, 10 << 20);
  // the upload streams to sandpitd (no whole-request bound there): paced
  // so that it takes longer than the bound
  const N = 256 << 20;
  async function* paced() {
    for await (const piece of formData([{ path: '/home/user/up.bin', mode: 0o644, data: bytesOf(N, 3) }], 'rtBoundary')) {
      yield piece;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const t0 = Date.now();
  const r = await streamRequest(q, 'POST', `/endpoints/${qsb}/v1/files/upload`, {
    headers: { authorization: `Bearer ${qtok}`, 'content-type': 'multipart/form-data; boundary=rtBoundary' },
    body: paced(), timeoutMs: 200000 });
  const ms = Date.now() - t0;
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.filesWritten, 1, r.text);
  assert.ok(ms > BOUND_S * 1000, `the upload took ${ms} ms: not longer than the bound, nothing shown`);
  const sz = await q.api('POST', '/api/sandbox.exec', { body: { sandboxId: qsb, cmd: 'wc -c < up.bin; rm -f up.bin ten.bin' } });
  assert.equal(sz.json.stdout.trim(), String(N), sz.text);
  console.log(`10 MiB writeFile ${w.status}; 256 MiB upload in ${ms} ms under a ${BOUND_S} s bound`);
});

test('W1: a trickled streamed upload is cut by sandpitd past request_timeout plus 1 s per transfer_min_kbps KiB: 408 deadlineExceeded, the item not written', { timeout: 120000 }, async () => {
  const B = 'rtSlowBoundary';
  const head = `POST /endpoints/${qsb}/v1/files/upload HTTP/1.1\r\nHost: 127.0.0.1:${q.port}\r\n` +
    `Authorization: Bearer ${qtok}\r\nContent-Type: multipart/form-data; boundary=${B}\r\nContent-Length: 100000\r\n\r\n` +
    `--${B}\r\nContent-Disposition: form-data; name="metadata"\r\nContent-Type: application/json\r\n\r\n` +
    `{"path":"/home/user/slow.bin"}\r\n--${B}\r\nContent-Disposition: form-data; name="content"; filename="f"\r\n` +
    'Content-Type: application/octet-stream\r\n\r\n';
  const r = await trickle(head);
  assert.ok(r.closed, `still open after ${r.ms} ms: ${r.text}`);
  assert.equal(r.status, 408, r.text);
  const v = seedValidator('POST', '/v1/files/upload', 408);
  assert.ok(v(r.json), `${ajv.errorsText(v.errors)}: ${r.text}`);
  assert.equal(r.json.code, 'deadlineExceeded', r.text);
  assert.match(r.json.message, /transfer_min_kbps \(64 KiB\/s\) after its first request_timeout \(4 s\)/, r.text);
  assert.ok(r.ms >= BOUND_S * 1000 - 200, `cut after ${r.ms} ms`);
  const ls = await q.api('POST', '/api/sandbox.exec', { body: { sandboxId: qsb, cmd: '[ -e slow.bin ] && echo there; ls -a | grep sandpit-upload; true' } });
  assert.equal(ls.json.stdout, '', ls.text);
  console.log(`a trickled upload cut after ${r.ms} ms`);
});

test('W1: SANDPIT_REQUEST_TIMEOUT must be 1..3600 s, and start refuses without nginx\'s Lua module', { timeout: 60000 }, async () => {
  const stackSh = path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'deploy', 'stack.sh');
  const start = (env) => new Promise((resolve) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sp-rt-'));
    execFile('bash', [stackSh, 'start', dir], { env: { ...process.env, ...env }, timeout: 50000 }, (err, stdout, stderr) => {
      execFile('bash', [stackSh, 'stop', dir], () => { rmSync(dir, { recursive: true, force: true }); resolve({ code: err ? err.code : 0, stderr }); });
    });
  });
  for (const v of ['0', 'abc', '3601']) {
    const r = await start({ SANDPIT_REQUEST_TIMEOUT: v });
    assert.notEqual(r.code, 0, v);
    assert.match(r.stderr, /SANDPIT_REQUEST_TIMEOUT must be a number of seconds, 1 to 3600/, v);
  }
  const r = await start({ SANDPIT_NGINX_MODULES: '/nonexistent' });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /nginx's Lua module is missing .*libnginx-mod-http-lua/);
});
