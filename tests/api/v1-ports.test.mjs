// /v1 ports and preview URLs (issue 17): createPort, listPorts, getPort,
// deletePort and core.ports, each success and error answer validated
// against the seed's schemas; a small HTTP server and a WebSocket echo
// inside a sandbox reached through nginx's preview URL (path-based, and
// host-based with preview_domain), the port deleted mid-test (no request
// and no open WebSocket passes after the delete); another org's port is
// 404; a preview URL reaches only its own sandbox's port, never the host
// or another sandbox (RELIABILITY E3); a stopped sandbox's port answers
// 503 with a body; preview_require_key.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, waitFor } from './lib/stack.mjs';
import { v1Call, v1Checked } from './lib/v1seed.mjs';
import { echoServerPy, fetchPreview, nextMessage, openPreviewSocket } from './lib/preview.mjs';

let s;
const made = [];
// Under SANDPIT_TEST_RUNTIME=gvisor every /v1 sandbox is an isolated gVisor
// one, which has no network at all: only the refusal is tested then.
const GV = process.env.SANDPIT_TEST_RUNTIME === 'gvisor';
const rtest = (name, fn) => test(name, {
  skip: GV && 'an isolated gVisor sandbox has no network (runsc --network=none): the last test checks the refusal',
}, fn);

const call = (method, tmpl, params, o = {}) => v1Call(o.stack || s, method, tmpl, params, o);

const PORTS = '/v1/sandboxes/{sandbox}/ports';
const PORT = '/v1/sandboxes/{sandbox}/ports/{port}';
const createPort = (sandbox, body, o = {}) => call('POST', PORTS, { sandbox }, { body, ...o });
const getPort = (sandbox, port, o = {}) => call('GET', PORT, { sandbox, port }, o);
const deletePort = (sandbox, port, etag, o = {}) =>
  call('DELETE', PORT, { sandbox, port }, { headers: { 'if-match': etag }, ...o });

// createPort, 201 asserted, withdrawn after the test whatever happens
async function publish(t, id, number, stack = s) {
  const r = await createPort(id, { port: { number } }, { stack });
  assert.equal(r.status, 201, r.text);
  t.after(() => unpublish(id, number, stack));
  return r.json;
}
async function unpublish(id, number, stack = s) {
  const g = await stack.api('GET', `/v1/sandboxes/${id}/ports/${number}`).catch(() => ({}));
  if (g.status === 200)
    await stack.api('DELETE', `/v1/sandboxes/${id}/ports/${number}`, { headers: { 'if-match': g.json.etag } }).catch(() => {});
}

async function createSandbox(body, o = {}) {
  const r = await call('POST', '/v1/sandboxes', {}, { body, ...o });
  assert.equal(r.status, 201, r.text);
  made.push({ id: r.json.uid, stack: o.stack || s, key: o.key });
  return r.json;
}

async function token(id, stack = s) {
  const r = await call('POST', '/v1/sandboxes/{sandbox}/endpoint-credentials', { sandbox: id },
    { body: { permissions: ['sandboxesExec', 'sandboxesFilesWrite'] }, stack });
  assert.equal(r.status, 200, r.text);
  return r.json.token;
}

// Writes the echo server into sandbox id and starts it (a durable
// process) on port, answering as who; resolves once it answers inside.
async function serve(id, port, who, stack = s) {
  const t = await token(id, stack);
  const auth = { key: null, endpoint: id, stack, headers: { authorization: `Bearer ${t}` } };
  let r = await call('PUT', '/v1/files/content', {}, {
    ...auth, query: { path: '/tmp/echo.py' }, rawBody: echoServerPy,
    headers: { ...auth.headers, 'content-type': 'application/octet-stream' },
  });
  assert.equal(r.status, 200, r.text);
  r = await call('POST', '/v1/processes', {}, { ...auth, body: { cmd: ['python3', '/tmp/echo.py', String(port), who] } });
  assert.equal(r.status, 201, r.text);
  const probe = `import socket;socket.create_connection(('127.0.0.1', ${port}), 2).close()`;
  await waitFor(async () => {
    const x = await call('POST', '/v1/processes/exec', {}, { ...auth, body: { cmd: ['python3', '-c', probe] } });
    return x.status === 200 && (x.json.exitCode ?? 0) === 0;
  }, 30000, 300);
}

const sandboxEtag = async (id, stack = s) => {
  const r = await call('GET', '/v1/sandboxes/{sandbox}', { sandbox: id }, { stack });
  assert.equal(r.status, 200, r.text);
  return r.json.core.etag;
};

let A, B; // two python sandboxes, each serving its echo server on 8080
before(async () => {
  s = await startStack();
  if (GV) return;
  A = (await createSandbox({ imageRef: 'sandpit-test/python' })).uid;
  B = (await createSandbox({ imageRef: 'sandpit-test/python' })).uid;
  await serve(A, 8080, 'A');
  await serve(B, 8080, 'B');
});
after(async () => {
  for (const { id, stack, key } of made)
    await stack.api('POST', '/api/sandbox.remove', { body: { sandboxId: id }, key }).catch(() => {});
  await s?.stop();
  assert.ok(GV || v1Checked() > 0);
});

rtest('createPort → 201 Port with an unguessable path-based url; getPort, listPorts, core.ports agree', async (t) => {
  t.after(() => unpublish(A, 8080));
  const r = await createPort(A, { port: { number: 8080 } });
  assert.equal(r.status, 201, r.text);
  const p = r.json;
  assert.equal(p.number, 8080);
  assert.equal(p.protocol, 'tcp');
  assert.equal(p.name, `sandboxes/${A}/ports/8080`);
  assert.match(p.uid, /^[a-z0-9]{32}$/);
  assert.equal(p.url, `${s.url}/p/8080-${p.uid}/`);
  assert.equal(r.headers.etag, p.etag);
  let g = await getPort(A, 8080);
  assert.equal(g.status, 200, g.text);
  assert.deepEqual(g.json, p);
  g = await getPort(A, 8080, { headers: { 'if-none-match': p.etag } });
  assert.equal(g.status, 304);
  const l = await call('GET', PORTS, { sandbox: A });
  assert.equal(l.status, 200, l.text);
  assert.deepEqual(l.json.published, [p]);
  const sb = await call('GET', '/v1/sandboxes/{sandbox}', { sandbox: A });
  assert.deepEqual(sb.json.core.ports, [{ sandboxPort: 8080, protocol: 'tcp', url: p.url }]);
  // through nginx: the sandbox's own server, the path after the prefix
  const h = await fetchPreview(s, `${p.url}hello?x=1`, { headers: { cookie: 'sp_session=secret', 'x-api-key': s.key } });
  assert.equal(h.status, 200, h.text);
  assert.equal(h.json.who, 'A');
  assert.equal(h.json.path, '/hello?x=1');
  // sandpit's credentials and cookies never reach the sandbox, and the
  // page runs sandboxed on sandpit's origin
  assert.equal(h.json.apiKey, null);
  assert.equal(h.json.cookie, null);
  for (const [auth, seen] of [[`Bearer ${s.key}`, null], [`bearer  ${s.key}`, null], ['Bearer sbe1.x.y', null],
    ['Bearer app-token', 'Bearer app-token'], ['Basic dTpw', 'Basic dTpw']]) {
    const x = await fetchPreview(s, p.url, { headers: { authorization: auth } });
    assert.equal(x.json.authorization, seen, auth);
  }
  assert.equal(h.headers['set-cookie'], undefined);
  assert.match(h.headers['content-security-policy'] || '', /^sandbox /);
  assert.doesNotMatch(h.headers['content-security-policy'], /allow-same-origin/);
  const long = await fetchPreview(s, `${p.url}${'x'.repeat(12000)}`);
  assert.equal(long.status, 200, long.text.slice(0, 300));
  assert.equal(long.json.path, `/${'x'.repeat(12000)}`);
  const post = await fetchPreview(s, p.url, { method: 'POST', body: 'ping', headers: { 'content-type': 'text/plain' } });
  assert.equal(post.status, 200, post.text);
  assert.equal(post.json.body, 'ping');
  // a URL with another uid, or this uid with another number, is no port
  for (const bad of [`/p/8080-${'a'.repeat(32)}/`, `/p/8081-${p.uid}/`, `/p/8080-${p.uid.toUpperCase()}/`, '/p/', '/p/8080/'])
    assert.equal((await fetchPreview(s, bad)).status, 404, bad);
  assert.ok((await deletePort(A, 8080, p.etag)).status === 204);
});

rtest('createPort errors: 400 naming the field, 409 alreadyExists, 404 sandbox, Idempotency-Key replay and 409', async (t) => {
  for (const [body, field] of [
    [{}, 'port'],
    [{ port: {} }, 'number'],
    [{ port: { number: 0 } }, 'number'],
    [{ port: { number: 65536 } }, 'number'],
    [{ port: { number: 'x' } }, 'number'],
    [{ port: { number: 80, protocol: 'udp' } }, 'protocol'],
    [{ port: { number: 80, extra: 1 } }, 'extra'],
    [{ port: { number: 80 }, other: 1 }, 'other'],
  ]) {
    const r = await createPort(A, body);
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.match(r.text, new RegExp(field), r.text);
  }
  t.after(() => unpublish(A, 9000));
  t.after(() => unpublish(A, 9001));
  const r1 = await createPort(A, { port: { number: 9000, protocol: 'tcp' } }, { headers: { 'idempotency-key': 'k-9000' } });
  assert.equal(r1.status, 201, r1.text);
  const again = await createPort(A, { port: { number: 9000, protocol: 'tcp' } }, { headers: { 'idempotency-key': 'k-9000' } });
  assert.equal(again.status, 201, again.text);
  assert.deepEqual(again.json, r1.json);
  const other = await createPort(A, { port: { number: 9001 } }, { headers: { 'idempotency-key': 'k-9000' } });
  assert.equal(other.status, 409, other.text);
  assert.equal(other.json.code, 'failedPrecondition');
  const dup = await createPort(A, { port: { number: 9000 } });
  assert.equal(dup.status, 409, dup.text);
  assert.equal(dup.json.code, 'alreadyExists');
  const none = await createPort('nosuchsandbox', { port: { number: 80 } });
  assert.equal(none.status, 404, none.text);
  assert.equal(none.json.code, 'notFound');
  assert.equal((await deletePort(A, 9000, r1.json.etag)).status, 204);
});

rtest('getPort/deletePort errors: 404 unpublished, 428 without If-Match, 412 stale with EtagMismatch, 204 absent', async (t) => {
  let r = await getPort(A, 7777);
  assert.equal(r.status, 404, r.text);
  assert.equal(r.json.code, 'notFound');
  r = await getPort(A, 'abc');
  assert.equal(r.status, 400, r.text);
  const p = await publish(t, A, 7777);
  r = await deletePort(A, 7777, null);
  assert.equal(r.status, 428, r.text);
  assert.match(r.json.message, /^etag_required:/);
  r = await deletePort(A, 7777, '"stale"');
  assert.equal(r.status, 412, r.text);
  assert.match(r.json.message, /^etag_mismatch:/);
  assert.equal(r.json.details[0].currentEtag, p.etag);
  assert.equal((await getPort(A, 7777)).status, 200);
  r = await deletePort(A, 7777, p.etag);
  assert.equal(r.status, 204, r.text);
  r = await deletePort(A, 7777, p.etag); // absent: the same result
  assert.equal(r.status, 204, r.text);
  assert.equal((await getPort(A, 7777)).status, 404);
  assert.equal((await fetchPreview(s, p.url)).status, 404);
});

rtest("permissions, and another org's sandbox and port read as 404", async (t) => {
  const p = await publish(t, A, 8080);
  const other = await s.newKey('ports-other');
  for (const [m, t, params, o] of [
    ['GET', PORTS, { sandbox: A }, {}],
    ['POST', PORTS, { sandbox: A }, { body: { port: { number: 8081 } } }],
    ['GET', PORT, { sandbox: A, port: 8080 }, {}],
    ['DELETE', PORT, { sandbox: A, port: 8080 }, { headers: { 'if-match': p.etag } }],
  ]) {
    const r = await call(m, t, params, { key: other, ...o });
    assert.equal(r.status, 404, `${m} ${t}: ${r.text}`);
    assert.equal(r.json.code, 'notFound');
  }
  assert.equal((await getPort(A, 8080)).status, 200); // still there
  await s.cli('roles', 'create', '--org', 'default', 'portreader', '--perms', 'sandbox:read');
  const reader = await s.newKey('default', 'portreader');
  let r = await createPort(A, { port: { number: 8082 } }, { key: reader });
  assert.equal(r.status, 403, r.text);
  assert.match(r.json.message, /sandboxesPorts/);
  r = await deletePort(A, 8080, p.etag, { key: reader });
  assert.equal(r.status, 403, r.text);
  r = await getPort(A, 8080, { key: reader });
  assert.equal(r.status, 200, r.text);
  assert.equal((await deletePort(A, 8080, p.etag)).status, 204);
});

rtest('HTTP and a WebSocket echo through the preview URL; deleting the port stops both at once', async (t) => {
  const p = await publish(t, A, 8080);
  const ws = await openPreviewSocket(s, `${p.url}ws`);
  try {
    ws.send('hello');
    assert.equal(await nextMessage(ws), 'A:hello');
    ws.send(Buffer.alloc(70000, 7));
    const big = await nextMessage(ws);
    assert.equal(big.length, 'A:'.length + 70000);
    assert.equal((await fetchPreview(s, p.url)).json.who, 'A');
    const closed = new Promise((resolve) => ws.once('close', () => resolve(Date.now())));
    const d = await deletePort(A, 8080, p.etag);
    assert.equal(d.status, 204, d.text);
    const deletedAt = Date.now();
    // the next request is refused, and the open socket is cut (within a
    // second of the delete's answer: the cut happens before it)
    const h = await fetchPreview(s, p.url);
    assert.equal(h.status, 404, h.text);
    assert.equal(h.json.code, 'notFound');
    const at = await Promise.race([closed, new Promise((resolve) => setTimeout(() => resolve(null), 1000))]);
    assert.ok(at !== null, 'the WebSocket through the deleted port is still open 1 s after the delete');
    assert.ok(at - deletedAt < 1000);
    await assert.rejects(openPreviewSocket(s, `${p.url}ws`), /404/);
  } finally {
    ws.terminate();
  }
});

rtest('a preview URL reaches only its own sandbox port: never another sandbox, never the host (E3)', async (t) => {
  const pa = await publish(t, A, 8080);
  const pb = await publish(t, B, 8080);
  assert.notEqual(pa.uid, pb.uid);
  assert.equal((await fetchPreview(s, pa.url)).json.who, 'A');
  assert.equal((await fetchPreview(s, pb.url)).json.who, 'B');
  const label = `8080-${pa.uid}`;
  // whatever the request says, it goes to A's container, port 8080
  for (const [rawPath, host] of [
    [`/p/${label}//127.0.0.1:${s.port}/`, undefined],
    [`/p/${label}/%2e%2e/%2e%2e/p/8080-${pb.uid}/`, undefined],
    [`/p/${label}/http://127.0.0.1:${s.port}/v1/sandboxes`, undefined],
    [`/p/${label}/`, `127.0.0.1:${s.port}`],
  ]) {
    const r = await fetchPreview(s, rawPath, { rawPath, host });
    assert.equal(r.status, 200, `${rawPath} ${host}: ${r.text}`);
    assert.equal(r.json.who, 'A', `${rawPath} ${host}: ${r.text}`);
  }
  // B's label as the Host: the host-based server, which serves nothing
  // without preview_domain (and would serve B's own port with it)
  const hb = await fetchPreview(s, `/p/${label}/`, { host: `8080-${pb.uid}.example.test` });
  assert.equal(hb.status, 404, hb.text);
  // a label that is not exactly "<number>-<uid>" names no port
  for (const rawPath of [`/p/${label}@127.0.0.1:${s.port}/`, `/p/${label}:6379/`, `/p/${label}%2F/`, `/p/8080-${pa.uid}x/`])
    assert.equal((await fetchPreview(s, rawPath, { rawPath })).status, 404, rawPath);
  // publishing the number of a port the host listens on (nginx's own)
  // reaches the sandbox's address, where nothing listens: 502, never the host
  const ph = await publish(t, A, s.port);
  const r = await fetchPreview(s, ph.url);
  assert.equal(r.status, 502, r.text);
  assert.equal(r.json.code, 'unavailable');
  for (const [id, p] of [[A, pa], [B, pb], [A, ph]]) assert.equal((await deletePort(id, p.number, p.etag)).status, 204);
  // a deleted sandbox's preview URL is gone (its address may be another's by then)
  const C = (await createSandbox({ imageRef: 'sandpit-test/python' })).uid;
  await serve(C, 8080, 'C');
  const pc = await publish(t, C, 8080);
  assert.equal((await fetchPreview(s, pc.url)).json.who, 'C');
  const del = await call('DELETE', '/v1/sandboxes/{sandbox}', { sandbox: C }, { headers: { 'if-match': await sandboxEtag(C) } });
  assert.ok([202, 204].includes(del.status), del.text);
  await waitFor(async () => (await fetchPreview(s, pc.url)).status === 404, 30000, 200);
});

rtest('a stopped sandbox: its port answers 503 with a clear body at once, and again after start', async (t) => {
  const p = await publish(t, A, 8080);
  t.after(async () => { // a failure in between leaves A running for the next tests
    const g = await s.api('GET', `/v1/sandboxes/${A}`);
    if (g.json?.core?.status === 'stopped')
      await s.api('POST', `/v1/sandboxes/${A}/start`, { headers: { 'if-match': g.json.core.etag } });
  });
  let r = await call('POST', '/v1/sandboxes/{sandbox}/stop', { sandbox: A }, { headers: { 'if-match': await sandboxEtag(A) } });
  assert.equal(r.status, 200, r.text);
  const t0 = Date.now();
  const h = await fetchPreview(s, p.url, { timeoutMs: 10000 });
  assert.ok(Date.now() - t0 < 10000);
  assert.equal(h.status, 503, h.text);
  assert.equal(h.json.code, 'unavailable');
  assert.match(h.json.message, /stopped/);
  // the port stays published while stopped
  assert.equal((await getPort(A, 8080)).status, 200);
  r = await call('POST', '/v1/sandboxes/{sandbox}/start', { sandbox: A }, { headers: { 'if-match': await sandboxEtag(A) } });
  assert.equal(r.status, 200, r.text);
  assert.equal((await fetchPreview(s, p.url)).json.who, 'A');
  assert.equal((await deletePort(A, 8080, p.etag)).status, 204);
});

rtest('an isolated sandbox stays without egress with a published port (ingress only)', async (t) => {
  const p = await publish(t, A, 8080);
  const tok = await token(A);
  const probe = "import socket\ntry:\n socket.create_connection(('1.1.1.1', 53), 3); print('out')\nexcept Exception as e: print('blocked', e)";
  const r = await call('POST', '/v1/processes/exec', {}, { key: null, endpoint: A, headers: { authorization: `Bearer ${tok}` }, body: { cmd: ['python3', '-c', probe] } });
  assert.equal(r.status, 200, r.text);
  assert.match(Buffer.from(r.json.stdout || '', 'base64').toString(), /^blocked/);
  assert.equal((await fetchPreview(s, p.url)).json.who, 'A');
  assert.equal((await deletePort(A, 8080, p.etag)).status, 204);
});

rtest('a killed sandbox: createPort 409 sandbox_failed, core.ports empty, its preview URL 404; a deleted one the same', async (t) => {
  const D = (await createSandbox({ imageRef: 'sandpit-test/busybox' })).uid;
  const p = await publish(t, D, 80);
  const k = await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: D } });
  assert.equal(k.status, 200, k.text);
  let r = await createPort(D, { port: { number: 81 } });
  assert.equal(r.status, 409, r.text);
  assert.match(r.json.message, /^sandbox_failed: /);
  const g = await call('GET', '/v1/sandboxes/{sandbox}', { sandbox: D });
  assert.equal(g.json.core.status, 'failed');
  assert.deepEqual(g.json.core.ports, []);
  assert.deepEqual((await call('GET', PORTS, { sandbox: D })).json.published, []);
  assert.equal((await fetchPreview(s, p.url)).status, 404);
  const E = (await createSandbox({ imageRef: 'sandpit-test/busybox' })).uid;
  const q = await publish(t, E, 80);
  const del = await call('DELETE', '/v1/sandboxes/{sandbox}', { sandbox: E }, { headers: { 'if-match': await sandboxEtag(E) } });
  assert.ok([202, 204].includes(del.status), del.text);
  r = await createPort(E, { port: { number: 81 } });
  assert.ok([404, 409].includes(r.status), r.text);
  assert.equal((await fetchPreview(s, q.url)).status, 404);
});

rtest('host-based previews with preview_domain, and preview_require_key', async (t) => {
  const h = await startStack({ extraConf: ['preview_domain = preview.test', 'preview_require_key = 1'] });
  try {
    const X = (await createSandbox({ imageRef: 'sandpit-test/python' }, { stack: h })).uid;
    await serve(X, 8080, 'X', h);
    const p = await publish(t, X, 8080, h);
    assert.equal(p.url, `https://8080-${p.uid}.preview.test/`);
    const host = `8080-${p.uid}.preview.test:${h.port}`;
    let r = await fetchPreview(h, '/x', { host });
    assert.equal(r.status, 401, r.text);
    assert.equal(r.json.code, 'unauthenticated');
    r = await fetchPreview(h, '/x', { host, headers: { 'x-api-key': s.key } }); // another stack's key
    assert.equal(r.status, 401, r.text);
    const other = await h.newKey('hp-other');
    r = await fetchPreview(h, '/x', { host, headers: { 'x-api-key': other } });
    assert.equal(r.status, 401, r.text);
    r = await fetchPreview(h, '/x?q=2', { host, headers: { 'x-api-key': h.key, cookie: 'c=1' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.who, 'X');
    assert.equal(r.json.path, '/x?q=2');
    assert.equal(r.json.apiKey, null);
    assert.equal(r.json.cookie, 'c=1'); // its own origin: cookies pass
    // the path form (sandpit's own origin) is not served then; another
    // domain is no preview either
    r = await fetchPreview(h, `/p/8080-${p.uid}/y`, { headers: { 'x-api-key': h.key } });
    assert.equal(r.status, 404, r.text);
    r = await fetchPreview(h, '/x', { host: `8080-${p.uid}.elsewhere.test`, headers: { 'x-api-key': h.key } });
    assert.equal(r.status, 404, r.text);
    const ws = await openPreviewSocket(h, '/ws', { host, headers: { 'x-api-key': h.key } });
    ws.send('hi');
    assert.equal(await nextMessage(ws), 'X:hi');
    const closed = new Promise((resolve) => ws.once('close', resolve));
    assert.equal((await deletePort(X, 8080, p.etag, { stack: h })).status, 204);
    await Promise.race([closed, new Promise((_, rej) => setTimeout(() => rej(new Error('still open 1 s after the delete')), 1000))]);
    r = await fetchPreview(h, '/x', { host, headers: { 'x-api-key': h.key } });
    assert.equal(r.status, 404, r.text);
  } finally {
    for (const m of made.filter((x) => x.stack === h))
      await h.api('POST', '/api/sandbox.remove', { body: { sandboxId: m.id } }).catch(() => {});
    await h.stop();
  }
});

rtest('stop_mode discard: a stopped sandbox refuses a new port (no address), its port answers 503, and after start reaches the server again', async (t) => {
  const d = await startStack({ extraConf: 'stop_mode = discard' });
  try {
    const X = (await createSandbox({ imageRef: 'sandpit-test/python' }, { stack: d })).uid;
    await serve(X, 8080, 'X', d);
    const p = await publish(t, X, 8080, d);
    assert.equal((await fetchPreview(d, p.url)).json?.who, 'X');
    let r = await call('POST', '/v1/sandboxes/{sandbox}/stop', { sandbox: X }, { stack: d, headers: { 'if-match': await sandboxEtag(X, d) } });
    assert.equal(r.status, 200, r.text);
    r = await createPort(X, { port: { number: 9090 } }, { stack: d });
    assert.equal(r.status, 409, r.text);
    assert.match(r.json.message, /^sandbox_stopped: /);
    const h = await fetchPreview(d, p.url);
    assert.equal(h.status, 503, h.text);
    r = await call('POST', '/v1/sandboxes/{sandbox}/start', { sandbox: X }, { stack: d, headers: { 'if-match': await sandboxEtag(X, d) } });
    assert.equal(r.status, 200, r.text);
    // the container started again (its processes ended): nothing listens
    // until the server is started again, then the same URL reaches it
    await serve(X, 8080, 'X2', d);
    assert.equal((await fetchPreview(d, p.url)).json?.who, 'X2');
  } finally {
    for (const m of made.filter((x) => x.stack === d))
      await d.api('POST', '/api/sandbox.remove', { body: { sandboxId: m.id } }).catch(() => {});
    await d.stop();
  }
});

test('gVisor: an isolated sandbox (runsc --network=none) is refused with the reason; with internet its port is reached', async (t) => {
  const mk = async (networkMode) => {
    const r = await s.api('POST', '/api/sandbox.create', { body: { image: 'sandpit-test/python', runtime: 'gvisor', networkMode } });
    if (r.status === 400 && /gVisor is not available/.test(r.text)) return null;
    assert.equal(r.status, 200, r.text);
    made.push({ id: r.json.sandboxId, stack: s });
    return r.json.sandboxId;
  };
  const G = await mk('isolated');
  if (!G) return t.skip('runsc is not registered with dockerd');
  if (GV) {
    // a /v1 sandbox under the gVisor pass is the same: refused
    const V = (await createSandbox({ imageRef: 'sandpit-test/python' })).uid;
    const v = await createPort(V, { port: { number: 8080 } });
    assert.equal(v.status, 409, v.text);
    assert.match(v.json.message, /^no_network: /);
  }
  const r = await createPort(G, { port: { number: 8080 } });
  assert.equal(r.status, 409, r.text);
  assert.equal(r.json.code, 'failedPrecondition');
  assert.match(r.json.message, /^no_network: .*--network=none/);
  const N = await mk('internet');
  await serve(N, 8080, 'N');
  const p = await publish(t, N, 8080);
  const h = await fetchPreview(s, p.url);
  assert.equal(h.status, 200, h.text);
  assert.equal(h.json.who, 'N');
  assert.equal((await deletePort(N, 8080, p.etag)).status, 204);
});
