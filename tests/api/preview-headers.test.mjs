// A sandbox's web server cannot steer nginx or set cookies on sandpit's
// origin (RELIABILITY T4, issue 24 D4). A responder in the sandbox answers
// the headers the request's path names: X-Accel-Redirect to each internal
// location (nginx must not follow it: the body stays the sandbox's), the
// other X-Accel-* headers, and Set-Cookie / Clear-Site-Data / Refresh and
// the other origin-wide headers, which the path form (sandpit's own
// origin) drops. A victim with a live dashboard session who opens another
// organization's preview URL still reads its own organization afterwards.
// With preview_domain the path form is refused and the host form (an
// origin of its own) ignores X-Accel-* as well.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, waitFor } from './lib/stack.mjs';
import { fetchPreview } from './lib/preview.mjs';

// Serves argv[1]'s port; a request for /h/<base64url of header lines>
// answers 200 "hello from sandbox" with those header lines (python3-minimal:
// no json, no http).
const responderPy = String.raw`
import base64, socket, sys, threading
BODY = b'hello from sandbox'
def one(c):
    try:
        buf = b''
        while b'\r\n\r\n' not in buf:
            x = c.recv(65536)
            if not x:
                return
            buf += x
        path = buf.split(b' ', 2)[1].decode('latin-1')
        extra = b''
        if path.startswith('/h/'):
            enc = path[3:].split('?')[0]
            extra = base64.urlsafe_b64decode(enc + '=' * (-len(enc) % 4)).replace(b'\n', b'\r\n') + b'\r\n'
        c.sendall(b'HTTP/1.1 200 OK\r\n' + extra + b'Content-Type: text/html\r\nConnection: close\r\nContent-Length: ' + str(len(BODY)).encode() + b'\r\n\r\n' + BODY)
    except Exception:
        pass
    finally:
        c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', int(sys.argv[1])))
s.listen(64)
while True:
    c, _ = s.accept()
    threading.Thread(target=one, args=(c,), daemon=True).start()
`;

const GV = process.env.SANDPIT_TEST_RUNTIME === 'gvisor';
const skip = GV && 'an isolated gVisor sandbox has no network; v1-ports.test.mjs checks the refusal';

// the path of a request whose answer carries these header lines
const hdrPath = (lines) => `h/${Buffer.from(lines.join('\n')).toString('base64url')}`;

// A python sandbox of key's org serving the responder on 8080, published:
// resolves to the port's URL.
async function serveResponder(st, key) {
  let r = await st.api('POST', '/v1/sandboxes', { key, body: { imageRef: 'sandpit-test/python' } });
  assert.equal(r.status, 201, r.text);
  const id = r.json.uid;
  made.push({ st, id, key });
  r = await st.api('POST', `/v1/sandboxes/${id}/endpoint-credentials`, { key, body: { permissions: ['sandboxesExec', 'sandboxesFilesWrite'] } });
  assert.equal(r.status, 200, r.text);
  const ep = { key: null, headers: { authorization: `Bearer ${r.json.token}` } };
  r = await st.api('PUT', `/endpoints/${id}/v1/files/content`, {
    ...ep, query: { path: '/tmp/resp.py' }, rawBody: responderPy,
    headers: { ...ep.headers, 'content-type': 'application/octet-stream' },
  });
  assert.equal(r.status, 200, r.text);
  r = await st.api('POST', `/endpoints/${id}/v1/processes`, { ...ep, body: { cmd: ['python3', '/tmp/resp.py', '8080'] } });
  assert.equal(r.status, 201, r.text);
  r = await st.api('POST', `/v1/sandboxes/${id}/ports`, { key, body: { port: { number: 8080 } } });
  assert.equal(r.status, 201, r.text);
  const url = r.json.url;
  return { id, url };
}

// A dashboard session of key: the __Host-sandpit cookie's value.
async function signIn(st, key) {
  const r = await st.api('POST', '/session', { key: null, headers: { origin: st.url }, body: { apiKey: key } });
  assert.equal(r.status, 200, r.text);
  return /__Host-sandpit=([a-z0-9]+)/.exec(r.headers['set-cookie'])[1];
}

// What a browser's cookie jar does with an answer's Set-Cookie and
// Clear-Site-Data for sandpit's origin (only the session cookie matters).
function applyToJar(jar, headers) {
  for (const c of [].concat(headers['set-cookie'] || [])) {
    const m = /^\s*__Host-sandpit=([^;]*)/.exec(c);
    if (m) jar.session = m[1];
  }
  if (/cookies|\*/.test(headers['clear-site-data'] || '')) jar.session = '';
}

const INTERNAL = ['/healthz', '/_auth', '/_auth_preview_path', '/_auth_preview_host', '/_auth_endpoint',
  '/metrics', '/metrics/sandpitd', '/ui/index.html', '/v1/sandboxes', '/session', '@sp_preview_denied'];

let s;
const stacks = [];
const made = [];
before(async () => {
  s = await startStack();
  stacks.push(s);
});
after(async () => {
  for (const { st, id, key } of made)
    await st.api('POST', '/api/sandbox.remove', { key, body: { sandboxId: id } }).catch(() => {});
  for (const st of stacks) await st.stop();
});

test('path form: X-Accel-* of the sandbox is never obeyed, origin-wide headers never pass, a victim keeps its own session', { skip, timeout: 120000 }, async () => {
  const attackerKey = await s.newKey('evilcorp');
  const attacker = await signIn(s, attackerKey);
  const victim = { session: await signIn(s, s.key) };
  const { url } = await serveResponder(s, attackerKey);
  assert.match(url, /\/p\/8080-[a-z0-9]{32}\/$/);
  await waitFor(async () => (await fetchPreview(s, url)).text === 'hello from sandbox', 30000, 300);

  for (const loc of INTERNAL) {
    const lines = [`X-Accel-Redirect: ${loc}`,
      `Set-Cookie: __Host-sandpit=${attacker}; Path=/; Secure; HttpOnly; SameSite=Strict`];
    const r = await fetchPreview(s, `${url}${hdrPath(lines)}`, { headers: { cookie: `__Host-sandpit=${victim.session}`, 'x-api-key': s.key } });
    assert.equal(r.status, 200, `${loc}: ${r.status} ${r.text.slice(0, 200)}`);
    assert.equal(r.text, 'hello from sandbox', `${loc}: nginx followed the sandbox's X-Accel-Redirect`);
    for (const h of ['x-sandpit-target', 'x-sandpit-org', 'x-sandpit-error', 'x-accel-redirect', 'set-cookie'])
      assert.equal(r.headers[h], undefined, `${loc}: ${h}: ${r.headers[h]}`);
    applyToJar(victim, r.headers);
  }
  // every origin-wide header the sandbox sends is dropped on sandpit's origin
  const wide = [
    `Set-Cookie: __Host-sandpit=${attacker}; Path=/; Secure; HttpOnly; SameSite=Strict`,
    'Set-Cookie: other=1; Path=/',
    'Clear-Site-Data: "cookies", "storage"',
    'Refresh: 0; url=https://evil.example/',
    'NEL: {"report_to":"x","max_age":86400}',
    'Report-To: {"group":"x","max_age":86400,"endpoints":[{"url":"https://evil.example/r"}]}',
    'Strict-Transport-Security: max-age=63072000; includeSubDomains',
    'Alt-Svc: h3=":443"',
    'Accept-CH: Sec-CH-UA-Full-Version-List',
    'X-Accel-Charset: koi8-r',
    'X-Accel-Expires: 3600',
    'X-Accel-Limit-Rate: 1',
  ];
  const t0 = Date.now();
  const r = await fetchPreview(s, `${url}${hdrPath(wide)}`, { headers: { cookie: `__Host-sandpit=${victim.session}` } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.text, 'hello from sandbox');
  assert.ok(Date.now() - t0 < 5000, `X-Accel-Limit-Rate obeyed: ${Date.now() - t0} ms`);
  assert.equal(r.headers['content-type'], 'text/html', 'X-Accel-Charset obeyed');
  for (const h of ['set-cookie', 'clear-site-data', 'refresh', 'nel', 'report-to', 'strict-transport-security', 'alt-svc', 'accept-ch'])
    assert.equal(r.headers[h], undefined, `${h} passed: ${r.headers[h]}`);
  applyToJar(victim, r.headers);

  // the victim's jar still holds its own session, of its own org
  assert.ok(victim.session, 'the victim was signed out');
  const who = await s.api('GET', '/session', { key: null, headers: { cookie: `__Host-sandpit=${victim.session}` } });
  assert.equal(who.status, 200, who.text);
  assert.equal(who.json.org, 'default', who.text);
});

test('host form (preview_domain): X-Accel-* ignored there too; the path form on sandpit\'s origin is refused', { skip, timeout: 120000 }, async () => {
  const h = await startStack({ extraConf: 'preview_domain = preview.test' });
  stacks.push(h);
  const { url } = await serveResponder(h, h.key);
  const u = new URL(url);
  assert.match(u.hostname, /^8080-[a-z0-9]{32}\.preview\.test$/);
  const host = `${u.hostname}:${h.port}`;
  await waitFor(async () => (await fetchPreview(h, '/', { host })).text === 'hello from sandbox', 30000, 300);
  for (const loc of INTERNAL) {
    const r = await fetchPreview(h, `/${hdrPath([`X-Accel-Redirect: ${loc}`])}`, { host });
    assert.equal(r.status, 200, `${loc}: ${r.text.slice(0, 200)}`);
    assert.equal(r.text, 'hello from sandbox', `${loc}: nginx followed the sandbox's X-Accel-Redirect`);
  }
  // its own origin: the app's cookies pass (sandpit's __Host- cookie is
  // never sent to, nor settable from, another host)
  const c = await fetchPreview(h, `/${hdrPath(['Set-Cookie: app=1; Path=/'])}`, { host });
  assert.equal(c.headers['set-cookie']?.[0], 'app=1; Path=/');
  // the same port under /p/ on sandpit's origin: 404
  const label = u.hostname.split('.')[0];
  const p = await fetchPreview(h, `/p/${label}/`);
  assert.equal(p.status, 404, p.text);
  assert.equal(p.json.code, 'notFound');
  assert.match(p.json.message, /preview_domain/);
});
