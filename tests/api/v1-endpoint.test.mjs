// /v1 sandbox endpoints and endpoint credentials (issue 15; RELIABILITY
// I4): createEndpointCredential (fields, no-store, ttl clamping, the
// permissions asked for and held, a failed sandbox, another org's), the
// endpoint <origin>/endpoints/<uid> behind /_auth (a credential answers
// after auth: 404 notFound where no endpoint operation is (the processes
// are v1-process.test.mjs's and v1-interact.test.mjs's, the files
// v1-files.test.mjs's and v1-transfer.test.mjs's); an API
// key, another sandbox's credential, an expired or edited one: 401), the
// per-sandbox rate at the endpoint (more credentials buy no more
// requests), and that no credential is logged or stored (nginx's logs and
// auth cache, sandpitd's log, Redis). Every /v1 answer is validated
// against the seed document's schema for that operation and status (ajv,
// JSON Schema 2020-12), as v1.test.mjs does; the endpoint's answers
// against the Error schema of the data-plane operations.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot, startStack } from './lib/stack.mjs';
import { ajv, seedValidator as validatorFor, v1Call, v1Checked } from './lib/v1seed.mjs';


let s;
const CRED = '/v1/sandboxes/{sandbox}/endpoint-credentials';
const ONE = '/v1/sandboxes/{sandbox}';
const tokens = [];

// One request, its answer checked against the seed's schema for tmpl
// (a management path, or a data-plane one such as /v1/processes, whose
// Error schema an endpoint answer must meet). o.endpoint: the sandbox uid
// whose endpoint the data-plane path is under.
async function call(method, tmpl, params = {}, o = {}) {
  const r = await v1Call(s, method, tmpl, params, o);
  if (r.json?.token) tokens.push(r.json.token);
  return r;
}
const cred = (id, body, o = {}) => call('POST', CRED, { sandbox: id }, { body, ...o });
// A data-plane request with a credential (and no API key).
// Every operation of the seed's endpoint is served, so the default path is
// one under the endpoint's /v1 that no operation has: past auth it is 404.
async function atEndpoint(id, token, method = 'GET', rest = '/v1/none', o = {}) {
  const r = await s.api(method, `/endpoints/${id}${rest}`, { key: null, ...o, headers: { authorization: `Bearer ${token}`, ...o.headers } });
  if (r.status >= 400) {
    const v = validatorFor('GET', '/v1/processes', r.status); // the data plane's Error
    assert.ok(v(r.json), `${method} ${rest} ${r.status}: ${ajv.errorsText(v.errors)}\n${r.text}`);
  }
  return r;
}

const made = [];
async function createV1() {
  const r = await call('POST', '/v1/sandboxes', {}, { body: { image: 'images/alpine' } });
  assert.equal(r.status, 201, r.text);
  made.push(r.json.uid);
  return r.json.uid;
}

let A, B; // two running sandboxes of the default org
before(async () => {
  s = await startStack({ env: { SANDPIT_RATE: '50r/s', SANDPIT_BURST: '40' } });
  A = await createV1();
  B = await createV1();
});
after(async () => {
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await s?.stop();
  assert.ok(v1Checked() > 0);
});

test('createEndpointCredential: 200 EndpointCredential, no-store, default ttl 300s, audience = the endpoint URI', async () => {
  const t0 = Date.now();
  const r = await cred(A, { permissions: ['sandboxesExec', 'sandboxesFilesRead'] });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.headers['cache-control'], 'no-store');
  assert.deepEqual(Object.keys(r.json).sort(), ['audience', 'expireTime', 'permissions', 'sandbox', 'token']);
  assert.equal(r.json.sandbox, `sandboxes/${A}`);
  assert.equal(r.json.audience, `${s.url}/endpoints/${A}`);
  assert.deepEqual(r.json.permissions, ['sandboxesExec', 'sandboxesFilesRead']);
  assert.match(r.json.expireTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/);
  const exp = Date.parse(r.json.expireTime);
  assert.ok(exp >= t0 + 299000 && exp <= Date.now() + 301000, r.json.expireTime);
  // each credential is new (nothing is replayed)
  const r2 = await cred(A, { permissions: ['sandboxesExec', 'sandboxesFilesRead'] });
  assert.notEqual(r2.json.token, r.json.token);
  // the management key does not open the credential's path with a credential
  const x = await cred(A, { permissions: ['sandboxesExec'] }, { key: null, headers: { authorization: `Bearer ${r.json.token}` } });
  assert.equal(x.status, 401);
  assert.equal(x.json.code, 'unauthenticated');
  // every answer of the operation is no-store, nginx's own errors included
  assert.equal(x.headers['cache-control'], 'no-store');
  const bad = await cred(A, { permissions: [] });
  assert.equal(bad.status, 400);
  assert.equal(bad.headers['cache-control'], 'no-store');
});

test('createEndpointCredential: ttl is clamped to 1s..300s; a malformed or negative one is a 400 naming ttl', async () => {
  for (const [ttl, want] of [['60s', 60000], ['1.5s', 1500], ['0.2s', 1000], ['0s', 1000], ['9999s', 300000], ['300.000000001s', 300000]]) {
    const t0 = Date.now();
    const r = await cred(A, { permissions: ['sandboxesExec'], ttl });
    assert.equal(r.status, 200, `${ttl}: ${r.text}`);
    const left = Date.parse(r.json.expireTime) - t0;
    assert.ok(left >= want - 1000 && left <= want + (Date.now() - t0) + 1000, `${ttl}: ${left} ms`);
  }
  for (const ttl of ['5 minutes', '300', 's', '1.0000000001s', '-5s', 300]) {
    const r = await cred(A, { permissions: ['sandboxesExec'], ttl });
    assert.equal(r.status, 400, `${JSON.stringify(ttl)}: ${r.text}`);
    assert.equal(r.json.code, 'invalidArgument');
    assert.equal(r.json.details[0].fieldViolations[0].field, 'ttl', r.text);
  }
});

test('createEndpointCredential: bad permissions or fields are a 400 naming the field', async () => {
  const cases = [
    [{}, 'permissions'],
    [{ permissions: [] }, 'permissions'],
    [{ permissions: 'sandboxesExec' }, 'permissions'],
    [{ permissions: ['sandboxesRead'] }, 'permissions'],
    [{ permissions: ['sandboxesExec', 'sandboxesExec'] }, 'permissions'],
    [{ permissions: [7] }, 'permissions'],
    [{ permissions: null }, 'permissions'],
    [{ permissions: ['sandboxesExec'], audience: 'elsewhere' }, 'audience'],
  ];
  for (const [body, field] of cases) {
    const r = await cred(A, body);
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.json.code, 'invalidArgument');
    assert.equal(r.json.details[0].fieldViolations[0].field, field, `${JSON.stringify(body)}: ${r.text}`);
  }
  const r = await call('POST', CRED, { sandbox: A }, { rawBody: 'not json', headers: { 'content-type': 'application/json' } });
  assert.equal(r.status, 400);
});

test('createEndpointCredential: 404 for another org\'s or no sandbox; 409 for a failed one', async () => {
  const other = await s.newKey('ep-other');
  let r = await cred(A, { permissions: ['sandboxesExec'] }, { key: other });
  assert.equal(r.status, 404, r.text);
  assert.equal(r.json.code, 'notFound');
  r = await cred('nosuchsandbox', { permissions: ['sandboxesExec'] });
  assert.equal(r.status, 404);
  const d = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
  assert.equal(d.status, 200, d.text);
  made.push(d.json.sandboxId);
  assert.equal((await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: d.json.sandboxId } })).status, 200);
  r = await cred(d.json.sandboxId, { permissions: ['sandboxesExec'] });
  assert.equal(r.status, 409, r.text);
  assert.equal(r.json.code, 'failedPrecondition');
});

test('permissions: createEndpointCredential needs sandboxesCredential, and each permission asked for must be held', async () => {
  const all = ['sandboxesRead', 'sandboxesCreate', 'sandboxesExec', 'sandboxesFilesRead', 'sandboxesFilesWrite', 'sandboxesLifecycle', 'sandboxesDelete'];
  await s.cli('roles', 'create', '--org', 'default', 'ep-nocred', '--perms', all.join(','));
  const k1 = await s.newKey('default', 'ep-nocred');
  let r = await cred(A, { permissions: ['sandboxesExec'] }, { key: k1 });
  assert.equal(r.status, 403, r.text);
  assert.equal(r.json.code, 'permissionDenied');
  assert.match(r.json.message, /sandboxesCredential/);
  assert.equal(r.headers['cache-control'], 'no-store');
  // sandboxesCredential and sandboxesFilesRead: that one only
  await s.cli('roles', 'create', '--org', 'default', 'ep-reader', '--perms', 'sandboxesCredential,sandboxesFilesRead');
  const k2 = await s.newKey('default', 'ep-reader');
  r = await cred(A, { permissions: ['sandboxesFilesRead'] }, { key: k2 });
  assert.equal(r.status, 200, r.text);
  for (const p of [['sandboxesExec'], ['sandboxesFilesRead', 'sandboxesFilesWrite']]) {
    r = await cred(A, { permissions: p }, { key: k2 });
    assert.equal(r.status, 403, `${p}: ${r.text}`);
    assert.equal(r.json.code, 'permissionDenied');
    assert.match(r.json.message, /sandboxesExec|sandboxesFilesWrite/);
  }
  // sandpit's own names: sandbox:create grants sandboxesCredential and
  // sandboxesExec/FilesWrite, sandbox:read sandboxesFilesRead
  await s.cli('roles', 'create', '--org', 'default', 'ep-legacy', '--perms', 'sandbox:create');
  const k3 = await s.newKey('default', 'ep-legacy');
  r = await cred(A, { permissions: ['sandboxesExec', 'sandboxesFilesWrite'] }, { key: k3 });
  assert.equal(r.status, 200, r.text);
  r = await cred(A, { permissions: ['sandboxesFilesRead'] }, { key: k3 });
  assert.equal(r.status, 403, r.text);
});

test('the endpoint: a credential gets past auth (404 notFound where no endpoint operation is); core.endpoint advertises the ones there are', async () => {
  const t = (await cred(A, { permissions: ['sandboxesExec', 'sandboxesFilesRead', 'sandboxesFilesWrite'] })).json.token;
  for (const [m, rest] of [['GET', '/v1/none'], ['POST', '/v1/processes/p0/nothing'], ['GET', '/v1/files/nothing']]) {
    const r = await atEndpoint(A, t, m, rest, {});
    assert.equal(r.status, 404, `${m} ${rest}: ${r.text}`);
    assert.equal(r.json.code, 'notFound');
    assert.match(r.json.message, /^No endpoint operation at \/endpoints\//);
  }
  // a path under the prefix that is not the /v1 API, and the bare prefix
  let r = await s.api('GET', `/endpoints/${A}/other`, { key: null, headers: { authorization: `Bearer ${t}` } });
  assert.equal(r.status, 404);
  assert.equal(r.json.code, 'notFound');
  r = await s.api('GET', '/endpoints', { key: null });
  assert.equal(r.status, 404);
  assert.equal(r.json.code, 'notFound');
  // a raw path that reaches the other location only once nginx has
  // normalised it is no path of either: the management API is not
  // reached through the endpoint's prefix, nor the endpoint through /v1
  for (const [p, o] of [
    [`/endpoints/${A}/%2e%2e/%2e%2e/v1/sandboxes`, {}],
    [`/endpoints/${A}/../../v1/sandboxes`, {}],
    [`/v1/%2e%2e/endpoints/${A}/v1/processes`, { key: null, headers: { authorization: `Bearer ${t}` } }],
    // no sandbox id in the first segment
    ['/endpoints/a%20b/v1/processes', { key: null, headers: { authorization: `Bearer ${t}` } }],
    ['/endpoints//v1/processes', { key: null, headers: { authorization: `Bearer ${t}` } }],
  ]) {
    r = await s.api('GET', p, o);
    assert.equal(r.status, 404, `${p}: ${r.text}`);
    assert.equal(r.json.code, 'notFound', p);
  }
  // SandboxEndpoint: the operations served (the processes and the files)
  const g = await call('GET', ONE, { sandbox: A });
  assert.equal(g.status, 200);
  assert.deepEqual([...g.json.core.endpoint.capabilities].sort(),
    ['createProcess', 'download', 'exec', 'getProcess', 'interact', 'list', 'listProcesses', 'mkdir', 'move', 'readFile', 'readOutput', 'remove', 'signal', 'stat', 'upload', 'writeFile']);
  assert.equal(g.json.core.endpoint.sandboxUid, A);
  assert.match(g.json.core.endpoint.uri, new RegExp(`/endpoints/${A}$`));
});

test('the endpoint refuses API keys, missing, edited, foreign and expired credentials (401 unauthenticated)', async () => {
  const { token } = (await cred(A, { permissions: ['sandboxesExec'] })).json;
  const refused = async (headers, why, id = A) => {
    const r = await call('GET', '/v1/processes', {}, { key: null, endpoint: id, headers });
    assert.equal(r.status, 401, `${why}: ${r.text}`);
    assert.equal(r.json.code, 'unauthenticated', why);
    return r;
  };
  let r = await refused({ 'x-api-key': s.key }, 'x-api-key');
  assert.match(r.json.message, /API key is not accepted/);
  r = await refused({ authorization: `Bearer ${s.key}` }, 'the key as Bearer');
  assert.match(r.json.message, /API key is not accepted/);
  // a credential with a key beside it: the key is refused all the same
  await refused({ authorization: `Bearer ${token}`, 'x-api-key': s.key }, 'credential + key');
  r = await refused({}, 'no credential');
  assert.match(r.json.message, /^Missing endpoint credential/);
  await refused({ authorization: token }, 'no Bearer');
  // edited: each part of it
  const [tag, payload, mac] = token.split('.');
  const flip = (x, i) => x.slice(0, i) + (x[i] === '0' ? '1' : '0') + x.slice(i + 1);
  const forged = [
    `${tag}.${payload}.${flip(mac, 10)}`,
    `${tag}.${flip(payload, payload.length - 1)}.${mac}`, // the expiry
    `${tag}.${payload}.${mac.slice(0, -2)}`,
    `${tag}.${payload}`,
    `sbe2.${payload}.${mac}`,
    `${token}x`,
    'garbage',
  ];
  // the permission bits raised (1 = exec only → 7 = all)
  const plain = Buffer.from(payload, 'hex').toString('utf8').split('\n');
  plain[2] = '7';
  forged.push(`${tag}.${Buffer.from(plain.join('\n')).toString('hex')}.${mac}`);
  // the same claims for sandbox B: another audience, the MAC breaks
  const forB = Buffer.from(payload, 'hex').toString('utf8').split('\n');
  forB[1] = B;
  forged.push(`${tag}.${Buffer.from(forB.join('\n')).toString('hex')}.${mac}`);
  for (const f of forged) {
    r = await refused({ authorization: `Bearer ${f}` }, `forged ${f.slice(0, 40)}`, f.includes(Buffer.from(B).toString('hex')) ? B : A);
    assert.equal(r.json.message, 'Invalid endpoint credential', f);
  }
  // A's genuine credential at B's endpoint
  r = await refused({ authorization: `Bearer ${token}` }, 'another sandbox', B);
  assert.equal(r.json.message, 'This endpoint credential is for another sandbox');
  // the credential still works where it belongs
  assert.equal((await atEndpoint(A, token)).status, 404);
  // expired: ttl 1s, then wait
  const short = (await cred(A, { permissions: ['sandboxesExec'], ttl: '1s' })).json;
  assert.equal((await atEndpoint(A, short.token)).status, 404);
  await new Promise((res) => setTimeout(res, Math.max(0, Date.parse(short.expireTime) - Date.now()) + 300));
  r = await refused({ authorization: `Bearer ${short.token}` }, 'expired');
  assert.equal(r.json.message, 'The endpoint credential has expired');
  // a credential is no API key on the management API
  r = await call('GET', '/v1/sandboxes', {}, { key: null, headers: { authorization: `Bearer ${token}` } });
  assert.equal(r.status, 401);
  assert.equal(r.json.code, 'unauthenticated');
});

test('the endpoint\'s rate is per sandbox: more credentials buy no more requests (429 resourceExhausted), another sandbox is unaffected', async () => {
  const C = await createV1();
  // 12 credentials, 30 requests each at once: no credential reaches nginx's
  // per-credential burst (40), the sandbox's bucket (50/s, burst 40)
  // overflows. At most burst + rate * elapsed get through.
  const toks = [];
  for (let i = 0; i < 12; i++) toks.push((await cred(C, { permissions: ['sandboxesExec'] })).json.token);
  const t0 = Date.now();
  const rs = await Promise.all(toks.flatMap((t) => Array.from({ length: 30 }, () => atEndpoint(C, t))));
  const elapsed = (Date.now() - t0) / 1000;
  const through = rs.filter((r) => r.status === 404).length;
  const limited = rs.filter((r) => r.status === 429);
  assert.ok(rs.every((r) => r.status === 429 || r.status === 404), `${[...new Set(rs.map((r) => r.status))]}`);
  assert.ok(limited.length > 0, `no 429 in ${rs.length} requests (${elapsed} s)`);
  assert.ok(through <= 40 + 50 * elapsed + 5, `${through} of ${rs.length} got through in ${elapsed} s`);
  for (const r of limited) {
    assert.equal(r.json.code, 'resourceExhausted', r.text);
    assert.equal(r.headers['retry-after'], '1');
  }
  // B's endpoint has a bucket of its own
  const tb = (await cred(B, { permissions: ['sandboxesExec'] })).json.token;
  assert.equal((await atEndpoint(B, tb)).status, 404);
});

test('Idempotency-Key is not taken: a credential never enters the replay ledger', async () => {
  const h = { 'idempotency-key': `cred-${Date.now()}` };
  const a = await cred(A, { permissions: ['sandboxesExec'] }, { headers: h });
  const b = await cred(A, { permissions: ['sandboxesExec'] }, { headers: h });
  assert.equal(a.status, 200, a.text);
  assert.equal(b.status, 200, b.text);
  assert.notEqual(a.json.token, b.json.token);
  const keys = execFileSync('redis-cli', ['-s', path.join(s.dir, 'redis.sock'), '--raw', '--scan', '--pattern', '*idem*createEndpointCredential*'], { encoding: 'utf8' });
  assert.equal(keys.trim(), '');
});

// Last: reads everything the stack wrote.
test('no credential is ever logged or stored: nginx\'s logs and auth cache, sandpitd\'s log, Redis', async () => {
  assert.ok(tokens.length > 20, `${tokens.length} credentials made`);
  // each credential's MAC (its secret part) and the whole token
  const needles = tokens.flatMap((t) => [t, t.split('.')[2]]);
  const files = ['nginx/access.log', 'nginx/error.log', 'sandpitd.log', 'sandpit-stream.log'].map((f) => path.join(s.dir, f));
  const cacheDir = fs.readFileSync(path.join(s.dir, 'auth-cache.path'), 'utf8').trim();
  const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]);
  files.push(...walk(cacheDir));
  let bytes = 0;
  for (const f of files) {
    if (!fs.existsSync(f)) continue;
    const text = fs.readFileSync(f, 'latin1');
    bytes += text.length;
    for (const n of needles) assert.ok(!text.includes(n), `${f} holds a credential`);
  }
  assert.ok(bytes > 0);
  assert.match(fs.readFileSync(path.join(s.dir, 'nginx/access.log'), 'utf8'), /endpoint-credentials/);
  // Redis: every value of every key
  const cli = (...a) => execFileSync('redis-cli', ['-s', path.join(s.dir, 'redis.sock'), '--raw', ...a], { encoding: 'latin1', maxBuffer: 64 << 20 });
  let dump = '';
  for (const k of cli('--scan').split('\n').filter(Boolean)) {
    const type = cli('TYPE', k).trim();
    dump += k + '\n' + ({
      string: () => cli('GET', k), hash: () => cli('HGETALL', k), set: () => cli('SMEMBERS', k),
      zset: () => cli('ZRANGE', k, '0', '-1'), list: () => cli('LRANGE', k, '0', '-1'),
    }[type]?.() ?? '');
  }
  assert.ok(dump.length > 0);
  for (const n of needles) assert.ok(!dump.includes(n), 'Redis holds a credential');
});
