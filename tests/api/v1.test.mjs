// /v1 sandboxes (issue 15): the Docker Sandboxes API's management plane on
// the same core and records as the Dokploy procedures. Every /v1 answer a
// test receives is validated against the seed document's own schema for
// that operation and status (tests/api/spec/docker-sandboxes-api.v1.yaml, a
// copy of ../shared/seeds/; ajv, JSON Schema 2020-12), so drift from the
// document fails here. Covers: the /v1 error shape (the app's and nginx's
// own: 401, 403, 404, 405, 413, 429), Authorization: Bearer, the
// permission matrix and the mapping of sandpit's own permissions, get /
// list (pages, tamper-proof tokens, filter, orderBy) / create / update /
// delete with their errors, ETags (If-Match 428/412, If-None-Match 304, one
// winner of two updates: RELIABILITY I3) and cross-face visibility.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { repoRoot, startStack, waitFor } from './lib/stack.mjs';
import { ajv, seed, seedValidator as validatorFor, v1Call, v1Checked } from './lib/v1seed.mjs';

let s, checked = 0;
// One /v1 request, its answer checked against the seed's schema for tmpl.
async function v1(method, tmpl, params = {}, o = {}) {
  // updateSandbox requires an Idempotency-Key: a fresh one unless given
  // (o.noKey sends none)
  if (method === 'PATCH' && !o.noKey && !o.headers?.['idempotency-key'])
    o = { ...o, headers: { ...o.headers, 'idempotency-key': `k-${Math.random().toString(36).slice(2)}` } };
  return v1Call(s, method, tmpl, params, o);
}
const SBX = '/v1/sandboxes';
const ONE = '/v1/sandboxes/{sandbox}';

const made = [];
async function createV1(body = {}) {
  const r = await v1('POST', SBX, {}, { body: { image: 'images/alpine', ...body } });
  assert.equal(r.status, 201, r.text);
  made.push(r.json.uid);
  return r;
}

before(async () => {
  s = await startStack({ env: { SANDPIT_RATE: '100r/s', SANDPIT_BURST: '50' } });
});
after(async () => {
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await s?.stop();
  assert.ok(checked + v1Checked() > 0);
});

test('the /v1 error shape: the app\'s and nginx\'s own answers, never Dokploy\'s', async () => {
  // 401 from /_auth (nginx's page): no key, a wrong key
  let r = await v1('GET', SBX, {}, { key: null });
  assert.equal(r.status, 401);
  assert.equal(r.json.code, 'unauthenticated');
  r = await v1('GET', SBX, {}, { key: 'sp_wrong' });
  assert.equal(r.status, 401);
  assert.equal(r.json.code, 'unauthenticated');
  // 404 and 405 from /_auth for what no route has
  r = await s.api('GET', '/v1/nothing-here');
  assert.equal(r.status, 404, r.text);
  assert.deepEqual(Object.keys(r.json).sort(), ['code', 'details', 'message']);
  assert.equal(r.json.code, 'notFound');
  r = await s.api('GET', '/v1');
  assert.equal(r.status, 404, r.text);
  assert.equal(r.json.code, 'notFound');
  r = await s.api('PUT', '/v1/sandboxes');
  assert.equal(r.status, 405, r.text);
  assert.equal(r.json.code, 'unimplemented');
  // 413 from nginx (client_max_body_size)
  r = await v1('POST', SBX, {}, { rawBody: Buffer.alloc(16 << 20, 0x20), headers: { 'content-type': 'application/json' } });
  assert.equal(r.status, 413);
  assert.equal(r.json.code, 'resourceExhausted');
  // the app's own: a 404 for a sandbox that is not there
  r = await v1('GET', ONE, { sandbox: 'nosuchsandbox' });
  assert.equal(r.status, 404);
  assert.equal(r.json.code, 'notFound');
  // 400 invalidArgument with a BadRequest detail naming the field
  r = await v1('POST', SBX, {}, { body: { bogus: 1 } });
  assert.equal(r.status, 400);
  assert.equal(r.json.code, 'invalidArgument');
  assert.equal(r.json.details[0]['@type'], 'type.googleapis.com/google.rpc.BadRequest');
  assert.equal(r.json.details[0].fieldViolations[0].field, 'bogus');
  r = await v1('POST', SBX, {}, { body: { resources: { cpus: 1, gpus: 2 } } });
  assert.equal(r.status, 400);
  assert.equal(r.json.details[0].fieldViolations[0].field, 'resources.gpus');
  r = await v1('POST', SBX, {}, { body: { resources: { memoryMib: 'lots' } } });
  assert.equal(r.status, 400);
  assert.equal(r.json.details[0].fieldViolations[0].field, 'resources.memoryMib');
  r = await v1('GET', SBX, {}, { query: { pageSize: -1 } });
  assert.equal(r.status, 400);
  assert.equal(r.json.details[0].fieldViolations[0].field, 'pageSize');
  // the Dokploy face keeps its own shape
  r = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: 'nosuchsandbox' } });
  assert.equal(r.json.code, 'NOT_FOUND');
});

test('429 from nginx in the /v1 shape (a key over its rate; others unaffected)', async () => {
  const junk = { key: null, headers: { authorization: 'Bearer sp_flooding_key' } };
  const rs = await Promise.all(Array.from({ length: 300 }, () => s.api('GET', SBX, junk)));
  const limited = rs.filter((r) => r.status === 429);
  assert.ok(limited.length > 0, `statuses: ${[...new Set(rs.map((r) => r.status))]}`);
  for (const r of limited) {
    assert.equal(r.json.code, 'resourceExhausted', r.text);
    assert.equal(r.headers['retry-after'], '1');
    assert.ok(validatorFor('GET', SBX, 429)(r.json));
  }
  assert.ok(rs.every((r) => r.status === 429 || r.status === 401));
  assert.equal((await v1('GET', SBX)).status, 200);
});

// A GET on the stack's local listener (no key: the socket's folder decides).
function localGet(p) {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: path.join(s.dir, 'local/sandpit.sock'), path: p, method: 'GET', headers: { host: 'local' } }, (res) => {
      let t = '';
      res.on('data', (c) => { t += c; });
      res.on('end', () => resolve({ status: res.statusCode, json: JSON.parse(t) }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('the local listener serves /v1 with its fixed identity, in the /v1 shape', async () => {
  let r = await localGet('/v1/sandboxes');
  assert.equal(r.status, 200);
  assert.ok(validatorFor('GET', SBX, 200)(r.json));
  checked++;
  for (const p of ['/v1', '/v1/nothing']) {
    r = await localGet(p);
    assert.equal(r.status, 404, p);
    assert.equal(r.json.code, 'notFound', p);
  }
});

test('Authorization: Bearer is accepted, x-api-key keeps working', async () => {
  let r = await v1('GET', SBX, {}, { key: null, headers: { authorization: `Bearer ${s.key}` } });
  assert.equal(r.status, 200, r.text);
  r = await v1('GET', SBX);
  assert.equal(r.status, 200, r.text);
  r = await v1('GET', SBX, {}, { key: null, headers: { authorization: 'Bearer sp_nope' } });
  assert.equal(r.status, 401);
});

test('createSandbox → 201 Sandbox; getSandbox with its ETag; If-None-Match → 304', async () => {
  const c = await createV1({ displayName: 'first_one', resources: { cpus: 1, memoryMib: '256' } });
  const sb = c.json;
  assert.equal(sb.name, `sandboxes/${sb.uid}`);
  assert.equal(sb.displayName, 'first_one');
  assert.equal(sb.core.status, 'running');
  assert.equal(sb.core.image, 'images/alpine');
  assert.deepEqual(sb.core.resources, { cpus: 1, memoryMib: '256' });
  assert.match(sb.core.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/);
  assert.equal(c.headers.etag, sb.core.etag);
  assert.equal(sb.effectiveFeatures.lifecycle.stopMemoryOutcome, 'preserve');

  const g = await v1('GET', ONE, { sandbox: sb.uid });
  assert.equal(g.status, 200);
  assert.equal(g.headers.etag, sb.core.etag);
  assert.deepEqual(g.json, sb);
  for (const inm of [sb.core.etag, `W/${sb.core.etag}`, '*', `"other", ${sb.core.etag}`]) {
    const n = await v1('GET', ONE, { sandbox: sb.uid }, { headers: { 'if-none-match': inm } });
    assert.equal(n.status, 304, `If-None-Match: ${inm}`);
    assert.equal(n.headers.etag, sb.core.etag);
  }
  for (const inm of ['"other"', 'garbage', sb.core.etag.slice(1)]) {
    const n = await v1('GET', ONE, { sandbox: sb.uid }, { headers: { 'if-none-match': inm } });
    assert.equal(n.status, 200, `If-None-Match: ${inm}`);
  }
  // the same record on the Dokploy face
  const d = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.uid } });
  assert.equal(d.status, 200, d.text);
  assert.equal(d.json.name, 'first_one');
  assert.equal(d.json.memoryMb, 256);
  assert.equal(d.json.template, 'alpine');
  // another organization does not see it
  const other = await s.newKey('v1-other');
  const x = await v1('GET', ONE, { sandbox: sb.uid }, { key: other });
  assert.equal(x.status, 404);
});

test('createSandbox refuses what it cannot honour, before any effect', async () => {
  const before = (await s.api('GET', '/api/sandbox.list')).json.length;
  const cases = [
    [{ kits: [{ name: 'x' }] }, 501, 'unimplemented', 'kits'],
    [{ pullPolicy: 'always' }, 501, 'unimplemented', 'pullPolicy'],
    [{ policyIds: ['p1'] }, 501, 'unimplemented', 'policyIds'],
    [{ networkPolicies: [{ mode: 'denyAll' }] }, 501, 'unimplemented', 'networkPolicies'],
    [{ features: { managedVolumes: { volumes: [] } } }, 400, 'invalidArgument', 'features.managedVolumes'],
    [{ features: { storedSecrets: {} } }, 501, 'unimplemented', 'features'],
    [{ features: { bogus: 1 } }, 400, 'invalidArgument', 'features'],
    [{ features: { timeouts: { timeout: '60s', onTimeout: 'keep' } } }, 501, 'unimplemented', 'features.timeouts.onTimeout'],
    [{ features: { timeouts: { autoResume: true } } }, 501, 'unimplemented', 'features.timeouts.autoResume'],
    [{ features: { timeouts: { onTimeout: 'unspecified' } } }, 400, 'invalidArgument', 'features.timeouts.onTimeout'],
    [{ features: { timeouts: { timeout: '60' } } }, 400, 'invalidArgument', 'features.timeouts.timeout'],
    [{ features: { timeouts: { timeout: '5s' } } }, 400, 'outOfRange', 'features.timeouts.timeout'],
    [{ features: { timeouts: { timeout: '86401s' } } }, 400, 'outOfRange', 'features.timeouts.timeout'],
    [{ features: { timeouts: { ttl: '60s' } } }, 400, 'invalidArgument', 'features.timeouts'],
    [{ environment: { '1A': 'b' } }, 400, 'invalidArgument', 'environment'],
    [{ environment: { A: 1 } }, 400, 'invalidArgument', 'environment'],
    [{ environment: { A: 'x'.repeat(131071) } }, 400, 'invalidArgument', 'environment'],
    [{ environment: 'A=b' }, 400, 'invalidArgument', 'environment'],
    [{ labels: { a: 1 } }, 400, 'invalidArgument', 'labels'],
    [{ labels: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) }, 400, 'invalidArgument', 'labels'],
    [{ labels: { a: 'x'.repeat(1025) } }, 400, 'invalidArgument', 'labels'],
    [{ labels: { '': 'v' } }, 400, 'invalidArgument', 'labels'],
    [{ startupExecution: { rawImage: {} } }, 501, 'unimplemented', 'startupExecution'],
    [{ platform: { os: 'windows', architecture: 'arm' } }, 501, 'unimplemented', 'platform'],
    [{ platform: { os: 'linux' } }, 400, 'invalidArgument', 'platform'],
    [{ agent: 'claude' }, 400, 'invalidArgument', 'agent'],
    [{ mcp: {} }, 501, 'unimplemented', 'mcp'],
    [{ image: 'images/alpine', imageRef: 'busybox' }, 400, 'invalidArgument', 'image'],
    [{ image: 'images/no-such-template' }, 404, 'notFound', null],
    [{ displayName: 'has space' }, 400, 'invalidArgument', 'displayName'],
    [{ displayName: 'a', displayNamePrefix: 'b' }, 400, 'invalidArgument', 'displayNamePrefix'],
    [{ resources: { cpus: 1.5 } }, 400, 'invalidArgument', 'resources.cpus'],
  ];
  for (const [body, status, code, field] of cases) {
    const r = await v1('POST', SBX, {}, { body });
    assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.json.code, code, JSON.stringify(body));
    if (status === 400) assert.equal(r.json.details[0].fieldViolations[0].field, field, JSON.stringify(body));
    else if (field) assert.match(r.json.message, new RegExp(`^${field}: `));
  }
  assert.equal((await s.api('GET', '/api/sandbox.list')).json.length, before);
});

test('createSandbox environment and labels: the container gets the variables (on both faces), both are shown back; Redis never holds a value in clear', async () => {
  const canary = `canary-${Math.random().toString(36).slice(2)}`;
  const environment = { GREETING: 'hello there', CANARY: canary, MULTI: 'a\nb "q" $x' };
  const labels = { team: 'infra', 'app.kubernetes.io/name': 'x y', empty: '' };
  const key = `env-${Date.now()}`;
  const c = await v1('POST', SBX, {}, { body: { image: 'images/alpine', environment, labels }, headers: { 'idempotency-key': key } });
  assert.equal(c.status, 201, c.text);
  made.push(c.json.uid);
  assert.deepEqual(c.json.core.environment, environment);
  assert.deepEqual(c.json.core.labels, labels);
  const g = await v1('GET', ONE, { sandbox: c.json.uid });
  assert.deepEqual(g.json.core.environment, environment);
  assert.deepEqual(g.json.core.labels, labels);
  assert.equal(g.json.core.etag, c.json.core.etag);
  const l = await v1('GET', SBX, {}, { query: { filter: `uid=${c.json.uid}` } });
  assert.deepEqual(l.json.sandboxes[0].core.labels, labels);
  assert.deepEqual(l.json.sandboxes[0].core.environment, environment);
  // the replay of the key is the first answer, environment included
  const again = await v1('POST', SBX, {}, { body: { image: 'images/alpine', environment, labels }, headers: { 'idempotency-key': key } });
  assert.deepEqual(again.json, c.json);
  // the Dokploy face's exec sees the variables, exactly
  const x = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.uid, cmd: 'printf "%s|%s|%s" "$GREETING" "$CANARY" "$MULTI"' } });
  assert.equal(x.status, 200, x.text);
  assert.equal(x.json.stdout, `hello there|${canary}|a\nb "q" $x`);
  // H7: nothing in Redis holds the canary in clear (the record, the ledger)
  const cli = (...a) => execFileSync('redis-cli', ['-s', path.join(s.dir, 'redis.sock'), '--raw', ...a], { encoding: 'utf8' });
  const keys = cli('--scan', '--pattern', '*').split('\n').filter(Boolean);
  assert.ok(keys.some((k) => k.includes(':idem:')), 'the ledger entry is there');
  for (const k of keys) {
    if (cli('TYPE', k).trim() !== 'hash') continue;
    assert.ok(!cli('HGETALL', k).includes(canary), `${k} holds the environment in clear`);
  }
  // a sandbox without them shows neither
  const p = await createV1();
  assert.equal(p.json.core.environment, undefined);
  assert.equal(p.json.core.labels, undefined);
});

test('a sandbox made on one face is read, renamed and deleted on the other', async () => {
  // Dokploy → /v1
  const d = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', name: 'from dokploy' } });
  assert.equal(d.status, 200, d.text);
  made.push(d.json.sandboxId);
  const id = d.json.sandboxId;
  let g = await v1('GET', ONE, { sandbox: id });
  assert.equal(g.status, 200);
  assert.equal(g.json.displayName, 'from dokploy');
  assert.equal(g.json.core.status, 'running');
  const u = await v1('PATCH', ONE, { sandbox: id }, { body: { displayName: 'renamed_on_v1' }, headers: { 'if-match': g.headers.etag } });
  assert.equal(u.status, 200, u.text);
  assert.equal((await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } })).json.name, 'renamed_on_v1');
  // a Dokploy kill is a visible change: a new ETag, status failed with its failure
  await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: id } });
  g = await v1('GET', ONE, { sandbox: id });
  assert.equal(g.json.core.status, 'failed');
  assert.equal(g.json.failure.code, 'aborted');
  assert.notEqual(g.json.core.etag, u.json.core.etag);
  const del = await v1('DELETE', ONE, { sandbox: id }, { headers: { 'if-match': g.headers.etag } });
  assert.equal(del.status, 204, del.text);
  assert.equal((await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } })).status, 404);

  // /v1 → Dokploy
  const c = await createV1({ displayName: 'from_v1' });
  const d2 = await s.api('GET', '/api/sandbox.list');
  assert.ok(d2.json.some((x) => x.sandboxId === c.json.uid && x.name === 'from_v1'));
  const rm = await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.uid } });
  assert.equal(rm.status, 200, rm.text);
  assert.equal((await v1('GET', ONE, { sandbox: c.json.uid })).status, 404);
});

test('updateSandbox: If-Match required (428), stale (412 EtagMismatch), of two concurrent updates exactly one wins (I3)', async () => {
  const c = await createV1({ displayName: 'upd' });
  const id = c.json.uid, tag = c.json.core.etag;
  let r = await v1('PATCH', ONE, { sandbox: id }, { body: { displayName: 'x' } });
  assert.equal(r.status, 428);
  assert.equal(r.json.code, 'failedPrecondition');
  assert.match(r.json.message, /^etag_required: /);
  r = await v1('PATCH', ONE, { sandbox: id }, { body: { displayName: 'x' }, headers: { 'if-match': '"stale"' } });
  assert.equal(r.status, 412);
  assert.equal(r.json.code, 'failedPrecondition');
  assert.match(r.json.message, /^etag_mismatch: /);
  assert.deepEqual(r.json.details, [{ '@type': 'type.googleapis.com/docker.sandboxes.v1.EtagMismatch', currentEtag: tag }]);
  r = await v1('PATCH', ONE, { sandbox: id }, { body: { displayName: 'x' }, headers: { 'if-match': 'W/"weak"' } });
  assert.equal(r.status, 400);
  r = await v1('PATCH', ONE, { sandbox: id }, { body: {}, headers: { 'if-match': tag } });
  assert.equal(r.status, 400);
  assert.equal(r.json.details[0].fieldViolations[0].field, 'displayName');
  r = await v1('PATCH', ONE, { sandbox: 'nosuchsandbox' }, { body: { displayName: 'x' }, headers: { 'if-match': tag } });
  assert.equal(r.status, 404);
  // two updates from the same observed version, at once: one 200, one 412
  for (let round = 0; round < 5; round++) {
    const cur = (await v1('GET', ONE, { sandbox: id })).headers.etag;
    const rs = await Promise.all(['a', 'b'].map((n) =>
      v1('PATCH', ONE, { sandbox: id }, { body: { displayName: `${n}${round}` }, headers: { 'if-match': cur } })));
    const st = rs.map((x) => x.status).sort();
    assert.deepEqual(st, [200, 412], rs.map((x) => x.text).join('\n'));
    const win = rs.find((x) => x.status === 200);
    const now = await v1('GET', ONE, { sandbox: id });
    assert.equal(now.json.displayName, win.json.displayName);
    assert.equal(now.headers.etag, win.headers.etag);
    assert.notEqual(now.headers.etag, cur);
  }
  // renaming back to an earlier name gives back that version's ETag (the
  // ETag is the visible state's, not a counter)
  r = await v1('PATCH', ONE, { sandbox: id }, { body: { displayName: 'upd' }, headers: { 'if-match': (await v1('GET', ONE, { sandbox: id })).headers.etag } });
  assert.equal(r.status, 200);
  assert.equal(r.headers.etag, tag);
});

test('deleteSandbox: 428 without If-Match, 412 stale, 204, and 204 again when absent', async () => {
  const c = await createV1();
  const id = c.json.uid;
  let r = await v1('DELETE', ONE, { sandbox: id });
  assert.equal(r.status, 428);
  r = await v1('DELETE', ONE, { sandbox: id }, { headers: { 'if-match': '"stale"' } });
  assert.equal(r.status, 412);
  const g = await v1('GET', ONE, { sandbox: id });
  assert.equal(g.status, 200);
  assert.equal(r.json.details[0].currentEtag, g.headers.etag);
  const cid = (await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } })).json.containerId;
  assert.match(cid, /^[0-9a-f]{64}$/);
  const ps = () => execFileSync('docker', ['ps', '-aq', '--no-trunc', '--filter', `id=${cid}`], { encoding: 'utf8' }).trim();
  assert.equal(ps(), cid);
  r = await v1('DELETE', ONE, { sandbox: id }, { headers: { 'if-match': g.headers.etag }, query: { force: true } });
  assert.equal(r.status, 204, r.text);
  assert.equal((await v1('GET', ONE, { sandbox: id })).status, 404);
  // removed, or on its way out (an AutoRemove container goes a moment after
  // its kill): gone within a generous cap
  await waitFor(() => ps() === '', 30000);
  r = await v1('DELETE', ONE, { sandbox: id }, { headers: { 'if-match': c.json.core.etag } });
  assert.equal(r.status, 204, r.text);
});

// Records only (no containers): killed records written into Redis the way
// the core writes them, so a list of thousands costs no Docker work.
function seedRecords(org, n, t0) {
  const sock = path.join(s.dir, 'redis.sock');
  const resp = (...a) => `*${a.length}\r\n${a.map((x) => `$${Buffer.byteLength(String(x))}\r\n${x}\r\n`).join('')}`;
  let out = '';
  const ids = [];
  for (let i = 0; i < n; i++) {
    const id = `pg${String(i).padStart(6, '0')}x${Math.random().toString(36).slice(2, 8)}`;
    ids.push(id);
    const created = t0 + i * 1000;
    out += resp('HSET', `sp:{${org}}:sb:${id}`, 'sandboxId', id, 'name', i % 2 ? 'odd' : 'even',
      'organizationId', org, 'serverId', '', 'image', 'sandpit-test/busybox:latest', 'template', 'alpine',
      'containerId', '', 'status', 'killed', 'cpu', '1', 'memoryMb', '512', 'pidsLimit', '256',
      'timeoutMs', '300000', 'maxLifetimeMs', '86400000', 'networkMode', 'isolated', 'workdir', '/home/user',
      'user', 'user', 'owner', '', 'pooled', '0', 'diskMb', '0', 'runtime', 'runc', 'createdAt', created,
      'expiresAt', created + 300000, 'deadlineAt', created + 86400000, 'lastActivityAt', created,
      'killedAt', created + 1, 'containerExpiresAt', '0', 'creatingUntil', '0', 'errorMessage', '');
    out += resp('ZADD', `sp:{${org}}:sbs`, created, id);
  }
  execFileSync('redis-cli', ['-s', sock, '--pipe'], { input: out, timeout: 60000 });
  return ids;
}

test('listSandboxes pages through 5,000 records exactly once each, newest first; filters; orderBy', { timeout: 300000 }, async () => {
  const org = 'v1-pages';
  const key = await s.newKey(org);
  const ids = seedRecords(org, 5000, Date.parse('2026-01-01T00:00:00Z'));
  const seen = [];
  let tok = '', pages = 0;
  do {
    const r = await v1('GET', SBX, {}, { key, query: { pageSize: 256, pageToken: tok || undefined } });
    assert.equal(r.status, 200, r.text);
    for (const x of r.json.sandboxes) seen.push(x.uid);
    tok = r.json.nextPageToken;
    pages++;
    assert.ok(pages < 100);
  } while (tok);
  assert.equal(seen.length, 5000);
  assert.deepEqual(seen, [...ids].reverse());
  // pageSize 0 is the default (50)
  let r = await v1('GET', SBX, {}, { key });
  assert.equal(r.json.sandboxes.length, 50);
  assert.notEqual(r.json.nextPageToken, '');
  const t = r.json.nextPageToken;
  // a tampered token, another org's, or one used with another filter: 400
  const flip = t.slice(0, -1) + (t.endsWith('0') ? '1' : '0');
  for (const [o, why] of [[{ key, query: { pageToken: flip } }, 'tampered'],
    [{ key, query: { pageToken: 'x'.repeat(40) } }, 'forged'],
    [{ query: { pageToken: t } }, "another org's"],
    [{ key, query: { pageToken: t, filter: 'status=failed' } }, 'another filter']]) {
    r = await v1('GET', SBX, {}, o);
    assert.equal(r.status, 400, `${why}: ${r.text}`);
    assert.equal(r.json.details[0].fieldViolations[0].field, 'pageToken');
  }
  // filters: exact terms on the portable fields
  r = await v1('GET', SBX, {}, { key, query: { filter: `uid=${ids[7]}` } });
  assert.deepEqual(r.json.sandboxes.map((x) => x.uid), [ids[7]]);
  assert.equal(r.json.nextPageToken, '');
  r = await v1('GET', SBX, {}, { key, query: { filter: ` uid = ${ids[7]} ` } });
  assert.deepEqual(r.json.sandboxes.map((x) => x.uid), [ids[7]]);
  r = await v1('GET', SBX, {}, { key, query: { filter: `name=sandboxes/${ids[8]},display_name=even` } });
  assert.deepEqual(r.json.sandboxes.map((x) => x.uid), [ids[8]]);
  r = await v1('GET', SBX, {}, { key, query: { filter: `name="sandboxes/${ids[8]}" , display_name = even` } });
  assert.deepEqual(r.json.sandboxes.map((x) => x.uid), [ids[8]]);
  r = await v1('GET', SBX, {}, { key, query: { filter: `name=sandboxes/${ids[8]},display_name=odd` } });
  assert.deepEqual(r.json.sandboxes, []);
  let odd = 0;
  tok = '';
  do {
    r = await v1('GET', SBX, {}, { key, query: { pageSize: 256, filter: 'display_name=odd,status=failed', pageToken: tok || undefined } });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.sandboxes.every((x) => x.displayName === 'odd' && x.core.status === 'failed'));
    odd += r.json.sandboxes.length;
    tok = r.json.nextPageToken;
  } while (tok);
  assert.equal(odd, 2500);
  r = await v1('GET', SBX, {}, { key, query: { filter: 'status=running' , pageSize: 256 } });
  assert.deepEqual(r.json.sandboxes, []);
  r = await v1('GET', SBX, {}, { key, query: { filter: 'agent=claude', pageSize: 10 } });
  assert.deepEqual(r.json.sandboxes, []);
  for (const [filter, why] of [['color=red', 'unknown field'], ['status', 'no ='], ['uid=a,uid=b', 'twice']]) {
    r = await v1('GET', SBX, {}, { key, query: { filter } });
    assert.equal(r.status, 400, `${why}: ${r.text}`);
    assert.equal(r.json.details[0].fieldViolations[0].field, 'filter');
  }
  // orderBy: the core's order (newest first) is all there is
  r = await v1('GET', SBX, {}, { key, query: { orderBy: 'created_at desc', pageSize: 3 } });
  assert.deepEqual(r.json.sandboxes.map((x) => x.uid), ids.slice(-3).reverse());
  for (const ob of ['created_at', 'created_at asc', 'name']) {
    r = await v1('GET', SBX, {}, { key, query: { orderBy: ob } });
    assert.equal(r.status, 501, `${ob}: ${r.text}`);
    assert.equal(r.json.code, 'unimplemented');
  }
  r = await v1('GET', SBX, {}, { key, query: { orderBy: 'colour' } });
  assert.equal(r.status, 400);
  assert.equal(r.json.details[0].fieldViolations[0].field, 'orderBy');
});

test('permissions: each operation needs its x-sbx-required-permissions; sandpit\'s own names map onto them', async () => {
  const c = await createV1({ displayName: 'perm' });
  const id = c.json.uid;
  const ops = [
    ['listSandboxes', 'GET', SBX, {}, {}],
    ['getSandbox', 'GET', ONE, { sandbox: id }, {}],
    ['createSandbox', 'POST', SBX, {}, { body: { bogus: 1 } }], // 400 once allowed: no container
    ['updateSandbox', 'PATCH', ONE, { sandbox: id }, { body: { displayName: 'perm' }, headers: { 'if-match': '"x"' } }],
    ['deleteSandbox', 'DELETE', ONE, { sandbox: id }, { headers: { 'if-match': '"x"' } }],
    ['renewSandboxTimeout', 'POST', '/v1/sandboxes/{sandbox}/renew-timeout', { sandbox: id }, { body: { timeout: '1s' } }],
    // a stale If-Match: 412 once allowed, nothing stopped
    ['stopSandbox', 'POST', '/v1/sandboxes/{sandbox}/stop', { sandbox: id }, { headers: { 'if-match': '"x"' } }],
    ['startSandbox', 'POST', '/v1/sandboxes/{sandbox}/start', { sandbox: id }, { headers: { 'if-match': '"x"' } }],
  ];
  const need = (opId) => {
    for (const [tmpl, item] of Object.entries(seed.paths))
      for (const op of Object.values(item))
        if (op?.operationId === opId) return { tmpl, perms: op['x-sbx-required-permissions'] };
    throw new Error(opId);
  };
  const all = ['sandboxesRead', 'sandboxesCreate', 'sandboxesRename', 'sandboxesDelete', 'sandboxesLifecycle'];
  for (const [opId, m, tmpl, params, o] of ops) {
    const { tmpl: t2, perms } = need(opId);
    assert.equal(t2, tmpl);
    assert.equal(perms.length, 1);
    // a role with everything but this permission: 403 permissionDenied
    const without = `no-${opId.toLowerCase()}`;
    await s.cli('roles', 'create', '--org', 'default', without, '--perms', all.filter((p) => p !== perms[0]).join(','));
    const k1 = await s.newKey('default', without);
    let r = await v1(m, tmpl, params, { ...o, key: k1 });
    assert.equal(r.status, 403, `${opId} without ${perms[0]}: ${r.text}`);
    assert.equal(r.json.code, 'permissionDenied');
    assert.ok(r.json.message.includes(perms[0]), r.json.message);
    // a role with only it: past the permission check
    const only = `only-${opId.toLowerCase()}`;
    await s.cli('roles', 'create', '--org', 'default', only, '--perms', perms[0]);
    const k2 = await s.newKey('default', only);
    r = await v1(m, tmpl, params, { ...o, key: k2 });
    assert.notEqual(r.status, 403, `${opId} with ${perms[0]}: ${r.text}`);
    assert.notEqual(r.status, 401);
  }
  // sandpit's own permissions: sandbox:read reads, does not create or delete
  await s.cli('roles', 'create', '--org', 'default', 'legacy-reader', '--perms', 'sandbox:read');
  const reader = await s.newKey('default', 'legacy-reader');
  assert.equal((await v1('GET', ONE, { sandbox: id }, { key: reader })).status, 200);
  assert.equal((await v1('GET', SBX, {}, { key: reader })).status, 200);
  assert.equal((await v1('POST', SBX, {}, { key: reader, body: {} })).status, 403);
  assert.equal((await v1('DELETE', ONE, { sandbox: id }, { key: reader, headers: { 'if-match': '"x"' } })).status, 403);
  // sandbox:create renames (sandboxesRename), sandbox:delete deletes
  await s.cli('roles', 'create', '--org', 'default', 'legacy-writer', '--perms', 'sandbox:create,sandbox:delete');
  const writer = await s.newKey('default', 'legacy-writer');
  assert.equal((await v1('PATCH', ONE, { sandbox: id }, { key: writer, body: { displayName: 'p' }, headers: { 'if-match': '"x"' } })).status, 412);
  assert.equal((await v1('DELETE', ONE, { sandbox: id }, { key: writer, headers: { 'if-match': '"x"' } })).status, 412);
  assert.equal((await v1('GET', ONE, { sandbox: id }, { key: writer })).status, 403);
  // a document name does not grant sandpit's own procedures
  const onlyRead = await s.newKey('default', 'only-getsandbox');
  assert.equal((await s.api('GET', '/api/sandbox.one', { key: onlyRead, query: { sandboxId: id } })).status, 403);
  // createSandbox's conditional permission: mcp needs mcpWrite as well
  const k3 = await s.newKey('default', 'only-createsandbox');
  const r = await v1('POST', SBX, {}, { key: k3, body: { mcp: {} } });
  assert.equal(r.status, 403, r.text);
  assert.equal(r.json.code, 'permissionDenied');
  assert.match(r.json.message, /mcpWrite/);
  // unknown names are refused when a role is made
  await assert.rejects(s.cli('roles', 'create', '--org', 'default', 'bad', '--perms', 'sandboxesFly'));
});

test('Idempotency-Key on createSandbox (I1): the same key and payload → the first answer and one container; another payload → 409', async () => {
  const count = async (key) => (await s.api('GET', '/api/sandbox.list', { key })).json.length;
  const n0 = await count();
  const key = `create-${Date.now()}`;
  const body = { image: 'images/alpine', displayName: 'idem' };
  const a = await v1('POST', SBX, {}, { body, headers: { 'idempotency-key': key } });
  assert.equal(a.status, 201, a.text);
  made.push(a.json.uid);
  const b = await v1('POST', SBX, {}, { body, headers: { 'idempotency-key': key } });
  assert.equal(b.status, 201, b.text);
  assert.deepEqual(b.json, a.json);
  assert.equal(b.headers.etag, a.headers.etag);
  assert.equal(await count(), n0 + 1);
  // another payload with the key: 409 failedPrecondition, nothing made
  const c = await v1('POST', SBX, {}, { body: { ...body, displayName: 'other' }, headers: { 'idempotency-key': key } });
  assert.equal(c.status, 409, c.text);
  assert.equal(c.json.code, 'failedPrecondition');
  assert.equal(c.json.message, 'The Idempotency-Key was already used with a different payload.');
  assert.equal(await count(), n0 + 1);
  // unknown fields are refused before the ledger is looked at
  const u = await v1('POST', SBX, {}, { body: { ...body, bogus: 1 }, headers: { 'idempotency-key': key } });
  assert.equal(u.status, 400);
  // a bad key is a 400 naming it
  const bad = await v1('POST', SBX, {}, { body, headers: { 'idempotency-key': 'x'.repeat(256) } });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.details[0].fieldViolations[0].field, 'Idempotency-Key');
  // keys are per organization: the same key elsewhere is a new create
  const other = await s.newKey('v1-idem-other');
  const o = await v1('POST', SBX, {}, { key: other, body, headers: { 'idempotency-key': key } });
  assert.equal(o.status, 201, o.text);
  assert.notEqual(o.json.uid, a.json.uid);
  await s.api('POST', '/api/sandbox.remove', { key: other, body: { sandboxId: o.json.uid } });
  // a failed first request keeps nothing: the retry runs again
  const k2 = `fail-${Date.now()}`;
  const f1 = await v1('POST', SBX, {}, { body: { image: 'images/no-such' }, headers: { 'idempotency-key': k2 } });
  assert.equal(f1.status, 404);
  const f2 = await v1('POST', SBX, {}, { body: { image: 'images/no-such' }, headers: { 'idempotency-key': k2 } });
  assert.equal(f2.status, 404);
});

test('Idempotency-Key: concurrent creates with one key make one container; the others wait out as 409 or replay it', async () => {
  const n0 = (await s.api('GET', '/api/sandbox.list')).json.length;
  const key = `race-${Date.now()}`;
  const body = { image: 'images/alpine', displayName: 'race' };
  const rs = await Promise.all(Array.from({ length: 4 }, () =>
    v1('POST', SBX, {}, { body, headers: { 'idempotency-key': key } })));
  const ok = rs.filter((r) => r.status === 201);
  assert.ok(ok.length >= 1, rs.map((r) => r.text).join('\n'));
  for (const r of ok) { assert.equal(r.json.uid, ok[0].json.uid); }
  made.push(ok[0].json.uid);
  for (const r of rs.filter((x) => x.status !== 201)) {
    assert.equal(r.status, 409, r.text);
    assert.match(r.json.message, /^idempotency_in_progress: /);
  }
  assert.equal((await s.api('GET', '/api/sandbox.list')).json.length, n0 + 1);
  const again = await v1('POST', SBX, {}, { body, headers: { 'idempotency-key': key } });
  assert.equal(again.json.uid, ok[0].json.uid);
});

test('Idempotency-Key on updateSandbox (required) and deleteSandbox: a retry gets the first answer', async () => {
  const c = await createV1({ displayName: 'idem_upd' });
  const id = c.json.uid;
  let r = await v1('PATCH', ONE, { sandbox: id }, { noKey: true, body: { displayName: 'x' }, headers: { 'if-match': c.json.core.etag } });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.details[0].fieldViolations[0].field, 'Idempotency-Key');
  const h = { 'if-match': c.json.core.etag, 'idempotency-key': `upd-${Date.now()}` };
  const u1 = await v1('PATCH', ONE, { sandbox: id }, { body: { displayName: 'y' }, headers: h });
  assert.equal(u1.status, 200, u1.text);
  // the retry's If-Match is stale now, yet it is the same request: replayed
  const u2 = await v1('PATCH', ONE, { sandbox: id }, { body: { displayName: 'y' }, headers: h });
  assert.equal(u2.status, 200, u2.text);
  assert.deepEqual(u2.json, u1.json);
  const u3 = await v1('PATCH', ONE, { sandbox: id }, { body: { displayName: 'z' }, headers: h });
  assert.equal(u3.status, 409, u3.text);
  const dh = { 'if-match': u1.json.core.etag, 'idempotency-key': `del-${Date.now()}` };
  assert.equal((await v1('DELETE', ONE, { sandbox: id }, { headers: dh })).status, 204);
  assert.equal((await v1('DELETE', ONE, { sandbox: id }, { headers: dh })).status, 204);
  // the same key on another sandbox is another payload
  const c2 = await createV1();
  r = await v1('DELETE', ONE, { sandbox: c2.json.uid }, { headers: { ...dh, 'if-match': c2.json.core.etag } });
  assert.equal(r.status, 409, r.text);
});

const RENEW = '/v1/sandboxes/{sandbox}/renew-timeout';
test('renewSandboxTimeout restarts the TTL at acceptance, never past the hard deadline (outOfRange)', async () => {
  const c = await createV1();
  const id = c.json.uid;
  assert.equal(c.json.effectiveFeatures.timeouts.onTimeout, 'delete');
  assert.equal(c.json.effectiveFeatures.timeouts.initialTimeout, '300s');
  const t0 = Date.now();
  let r = await v1('POST', RENEW, { sandbox: id }, { body: { timeout: '600s' } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.headers.etag, r.json.core.etag);
  assert.notEqual(r.json.core.etag, c.json.core.etag);
  const tm = r.json.effectiveFeatures.timeouts;
  assert.equal(tm.initialTimeout, '600s');
  const exp = Date.parse(tm.expiresAt);
  assert.ok(exp >= t0 + 600000 - 1000 && exp <= Date.now() + 600000 + 1000, tm.expiresAt);
  const d = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } });
  assert.equal(d.json.timeoutMs, 600000);
  assert.equal(Date.parse(d.json.expiresAt), exp);
  // fractions round up to the millisecond; bad values
  r = await v1('POST', RENEW, { sandbox: id }, { body: { timeout: '12.0001s' } });
  assert.equal(r.status, 200, r.text);
  for (const [timeout, status, code] of [['abc', 400, 'invalidArgument'], ['10', 400, 'invalidArgument'],
    ['1.5s', 400, 'outOfRange'], ['-1s', 400, 'outOfRange'], ['0s', 400, 'outOfRange'],
    ['90000s', 400, 'outOfRange']]) {
    r = await v1('POST', RENEW, { sandbox: id }, { body: { timeout } });
    assert.equal(r.status, status, `${timeout}: ${r.text}`);
    assert.equal(r.json.code, code, timeout);
    assert.equal(r.json.details[0].fieldViolations[0].field, 'timeout');
  }
  assert.match(r.json.message, /hard deadline .*at most \d+s from now/);
  r = await v1('POST', RENEW, { sandbox: id }, { body: {} });
  assert.equal(r.status, 400);
  // a Dokploy sandbox with a short lifetime: the limit is its own deadline
  const dk = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', maxLifetimeMs: 60000 } });
  assert.equal(dk.status, 200, dk.text);
  made.push(dk.json.sandboxId);
  r = await v1('POST', RENEW, { sandbox: dk.json.sandboxId }, { body: { timeout: '120s' } });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.code, 'outOfRange');
  assert.ok(r.json.message.includes(dk.json.deadlineAt), r.json.message);
  r = await v1('POST', RENEW, { sandbox: dk.json.sandboxId }, { body: { timeout: '20s' } });
  assert.equal(r.status, 200, r.text);
  // a killed sandbox: 409 failedPrecondition; an absent one: 404
  await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: dk.json.sandboxId } });
  r = await v1('POST', RENEW, { sandbox: dk.json.sandboxId }, { body: { timeout: '20s' } });
  assert.equal(r.status, 409, r.text);
  assert.equal(r.json.code, 'failedPrecondition');
  assert.equal(r.json.failure, undefined);
  r = await v1('POST', RENEW, { sandbox: 'nosuchsandbox' }, { body: { timeout: '20s' } });
  assert.equal(r.status, 404);
});

test('/v1/openapi.json: the implemented operations exactly as the seed states them, self-contained', async () => {
  let r = await s.api('GET', '/v1/openapi.json', { key: null });
  assert.equal(r.status, 401);
  assert.equal(r.json.code, 'unauthenticated');
  r = await s.api('GET', '/v1/openapi.json');
  assert.equal(r.status, 200, r.text);
  const doc = r.json;
  assert.equal(doc.openapi, seed.openapi);
  const ops = [];
  for (const [p, item] of Object.entries(doc.paths))
    for (const [m, op] of Object.entries(item)) {
      ops.push(`${m.toUpperCase()} ${p} ${op.operationId}`);
      assert.deepEqual(op, seed.paths[p][m], `${m} ${p} differs from the seed`);
    }
  assert.deepEqual(ops.sort(), [
    `DELETE ${ONE} deleteSandbox`, `GET ${ONE} getSandbox`, `GET ${SBX} listSandboxes`,
    `PATCH ${ONE} updateSandbox`, `POST ${RENEW} renewSandboxTimeout`, `POST ${SBX} createSandbox`,
    `POST ${ONE}/start startSandbox`, `POST ${ONE}/stop stopSandbox`,
    `POST ${ONE}/endpoint-credentials createEndpointCredential`,
    // ports (v1-ports.test.mjs)
    `GET ${ONE}/ports listPorts`, `POST ${ONE}/ports createPort`,
    `GET ${ONE}/ports/{port} getPort`, `DELETE ${ONE}/ports/{port} deletePort`,
    // the sandbox endpoint's (v1-process.test.mjs)
    'POST /v1/processes/exec exec', 'POST /v1/processes createProcess', 'GET /v1/processes listProcesses',
    'GET /v1/processes/{process} getProcess', 'GET /v1/processes/{process}/output readOutput',
    'POST /v1/processes/{process}/signal signal',
    // interact (v1-interact.test.mjs)
    'GET /v1/processes/{process}/interact interact',
    // and its files (v1-files.test.mjs; upload and download: v1-transfer.test.mjs)
    'POST /v1/files/upload upload', 'GET /v1/files/download download',
    'GET /v1/files list', 'DELETE /v1/files remove', 'GET /v1/files/stat stat',
    'GET /v1/files/content readFile', 'PUT /v1/files/content writeFile',
    'PUT /v1/files/directories mkdir', 'POST /v1/files/move move',
    // snapshots and images (v1-snapshots.test.mjs)
    'POST /v1/sandboxes/{sandbox}/snapshots createSnapshot', 'GET /v1/snapshots listSnapshots',
    'GET /v1/snapshots/{snapshot} getSnapshot', 'DELETE /v1/snapshots/{snapshot} deleteSnapshot',
    'POST /v1/snapshots/{snapshot}/restore restoreSnapshot', 'GET /v1/images listImages',
    'POST /v1/images createImage', 'GET /v1/images/{image} getImage',
    'DELETE /v1/images/{image} deleteImage', 'GET /v1/images/{image}/pull-spec getImagePullSpec',
    // the volumes (v1-volumes.test.mjs)
    'GET /v1/volumes listVolumes', 'POST /v1/volumes createVolume',
    'GET /v1/volumes/{volume} getVolume', 'DELETE /v1/volumes/{volume} deleteVolume',
  ].sort());
  for (const [kind, all] of Object.entries(doc.components))
    for (const [name, c] of Object.entries(all)) assert.deepEqual(c, seed.components[kind][name], `${kind}/${name}`);
  // every $ref resolves inside the served document
  const a2 = new Ajv2020({ strict: false, validateSchema: false });
  addFormats(a2);
  a2.addSchema(doc, 'served');
  const refs = new Set(JSON.stringify(doc.paths).match(/#\/components\/schemas\/[A-Za-z0-9_]+/g));
  for (const ref of refs) assert.doesNotThrow(() => a2.compile({ $ref: `served${ref}` }), ref);
  assert.ok(refs.size > 3);
});

// Last: it takes the stack's Redis and sandpitd down.
test("nginx's 5xx answers under /v1: auth unavailable (Redis down), backend unavailable (sandpitd down)", async () => {
  // nothing may be left that only Redis knows of
  for (const id of made.splice(0)) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } });
  try {
    execFileSync('redis-cli', ['-s', path.join(s.dir, 'redis.sock'), 'shutdown', 'nosave'], { timeout: 10000 });
  } catch { /* the connection closes as Redis goes */ }
  // a key no cache has seen: /_auth must ask Redis, cannot, and nginx answers
  let r = await v1('GET', SBX, {}, { key: 'sp_never_seen_before_key' });
  assert.equal(r.status, 503, r.text);
  assert.equal(r.json.code, 'unavailable');
  assert.equal(r.headers['retry-after'], '1');
  const pid = Number(fs.readFileSync(path.join(s.dir, 'sandpitd.pid'), 'utf8'));
  process.kill(pid, 'SIGTERM');
  await waitFor(async () => (await s.api('GET', '/healthz')).status >= 500, 30000);
  for (const key of [undefined, 'sp_another_unseen_key']) {
    r = await v1('GET', SBX, {}, { key });
    assert.equal(r.status, 503, r.text);
    assert.equal(r.json.code, 'unavailable');
  }
});
