// Tenancy on /v1 (RELIABILITY's tenancy cases, issue 26): another
// organization's key on every management operation that names a resource
// of the first (its sandbox, the sandbox's port, its snapshot, the
// snapshot's image, its volume) reads as absent — 404 notFound, or a
// delete's answer for an absent resource — and changes nothing: each
// resource and its ETag are as they were, the sandbox's files, expiry and
// status too, and the other organization's lists hold none of them.
// Every sandbox-endpoint operation with the other organization's
// credential (for its own sandbox) is refused at the first one's endpoint
// (401; interact 404, as its contract says; nothing done there), and a process id of the first sandbox names
// nothing at the second's. The tables must cover every operation the
// document has for those paths, so an operation added later without a
// case here fails this file. Runtime-independent: the runc pass only.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { seed, v1Call, v1Checked } from './lib/v1seed.mjs';
import { startStack, waitFor } from './lib/stack.mjs';
import { dockerExec } from './lib/docker.mjs';

let s, other;
let A;         // the first organization's sandbox (its record as created)
let snap, vol; // its snapshot (ready) and volume
let B;         // the other organization's sandbox
let procA;     // a process running in A
let tokA, tokB; // endpoint credentials with every endpoint permission
const made = [];
const ALL_EP = ['sandboxesExec', 'sandboxesFilesRead', 'sandboxesFilesWrite'];

const v1 = (method, tmpl, params = {}, o = {}) => v1Call(s, method, tmpl, params, o);
const ONE = '/v1/sandboxes/{sandbox}';
const SNAP = '/v1/snapshots/{snapshot}';
const VOL = '/v1/volumes/{volume}';
const PORT = '/v1/sandboxes/{sandbox}/ports/{port}';
const IMAGE = '/v1/images/{image}';
const W = '/home/user';

async function sh(id, cmd) {
  const r = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd }, timeoutMs: 60000 });
  assert.equal(r.status, 200, r.text);
  return r.json.stdout;
}
async function credential(id, key) {
  const r = await v1('POST', '/v1/sandboxes/{sandbox}/endpoint-credentials', { sandbox: id },
    { key, body: { permissions: ALL_EP } });
  assert.equal(r.status, 200, r.text);
  return r.json.token;
}
// the first organization's view of each of its resources (status, ETag)
async function owned() {
  const got = {};
  for (const [k, tmpl, params] of [['sandbox', ONE, { sandbox: A.uid }], ['snapshot', SNAP, { snapshot: snap.uid }],
    ['volume', VOL, { volume: vol.uid }], ['port', PORT, { sandbox: A.uid, port: 8080 }],
    ['image', IMAGE, { image: `snapshot-${snap.uid}` }]]) {
    const r = await v1('GET', tmpl, params);
    assert.equal(r.status, 200, `${k}: ${r.text}`);
    got[k] = { etag: r.headers.etag ?? null, status: r.json.status ?? r.json.core?.status ?? null };
  }
  const one = (await s.api('GET', '/api/sandbox.one', { query: { sandboxId: A.uid } })).json;
  got.expiresAt = one.expiresAt;
  // read past sandpit (a command through it is activity: the expiry moves)
  got.files = (await dockerExec(one.containerId, ['sh', '-c', `ls -A ${W}; cat ${W}/mine`])).stdout;
  return got;
}

before(async () => {
  s = await startStack({ env: { SANDPIT_RATE: '100r/s', SANDPIT_BURST: '50' } });
  other = await s.newKey(`v1-tenancy-other-${Date.now()}`);
  let r = await v1('POST', '/v1/sandboxes', {}, { body: { image: 'images/alpine', displayName: 'mine' } });
  assert.equal(r.status, 201, r.text);
  A = r.json;
  made.push([A.uid, s.key]);
  await sh(A.uid, `echo secret > ${W}/mine`);
  r = await v1('POST', '/v1/sandboxes/{sandbox}/ports', { sandbox: A.uid }, { body: { port: { number: 8080 } } });
  assert.equal(r.status, 201, r.text);
  r = await v1('POST', '/v1/sandboxes/{sandbox}/snapshots', { sandbox: A.uid }, { body: { displayName: 'mine' } });
  assert.equal(r.status, 202, r.text);
  snap = r.json;
  await waitFor(async () => (await v1('GET', SNAP, { snapshot: snap.uid })).json.status === 'ready', 120000, 250);
  r = await v1('POST', '/v1/volumes', {}, { body: { displayName: 'mine' } });
  assert.equal(r.status, 201, r.text);
  vol = r.json;
  r = await v1('POST', '/v1/sandboxes', {}, { key: other, body: { image: 'images/alpine', displayName: 'theirs' } });
  assert.equal(r.status, 201, r.text);
  B = r.json;
  made.push([B.uid, other]);
  tokA = await credential(A.uid, s.key);
  tokB = await credential(B.uid, other);
  r = await v1('POST', '/v1/processes', {}, { key: null, endpoint: A.uid, headers: { authorization: `Bearer ${tokA}` },
    body: { cmd: ['sleep', '600'] } });
  assert.equal(r.status, 201, r.text);
  procA = r.json;
});

after(async () => {
  for (const [id] of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  for (const [tmpl, params] of [[SNAP, { snapshot: snap?.uid }], [VOL, { volume: vol?.uid }]]) {
    if (!Object.values(params)[0]) continue;
    const g = await s.api('GET', tmpl.replace(/\{\w+\}/, Object.values(params)[0])).catch(() => null);
    if (g?.status === 200)
      await s.api('DELETE', tmpl.replace(/\{\w+\}/, Object.values(params)[0]), { headers: { 'if-match': g.headers.etag } }).catch(() => {});
  }
  await s?.stop();
  assert.ok(v1Checked() > 0);
});

test("another organization's key on every /v1 operation naming the first's resources: absent to it, nothing changed", { timeout: 180000 }, async (t) => {
  const was = await owned();
  // each If-Match the owner would send: the current ETag, so that only
  // the organization can stop the operation
  const etag = (k) => ({ 'if-match': was[k].etag });
  const sb = { sandbox: A.uid };
  // [operationId, method, path, params, options, what an absent resource answers]
  const cases = [
    ['getSandbox', 'GET', ONE, sb, {}, [404]],
    ['updateSandbox', 'PATCH', ONE, sb, { body: { displayName: 'taken' }, headers: { ...etag('sandbox'), 'idempotency-key': `t-${Date.now()}` } }, [404]],
    ['deleteSandbox', 'DELETE', ONE, sb, { headers: etag('sandbox') }, [404, 204]],
    ['renewSandboxTimeout', 'POST', '/v1/sandboxes/{sandbox}/renew-timeout', sb, { body: { timeout: '3600s' } }, [404]],
    ['stopSandbox', 'POST', '/v1/sandboxes/{sandbox}/stop', sb, { body: {}, headers: etag('sandbox') }, [404]],
    ['startSandbox', 'POST', '/v1/sandboxes/{sandbox}/start', sb, { body: {}, headers: etag('sandbox') }, [404]],
    ['createEndpointCredential', 'POST', '/v1/sandboxes/{sandbox}/endpoint-credentials', sb, { body: { permissions: ALL_EP } }, [404]],
    ['createSnapshot', 'POST', '/v1/sandboxes/{sandbox}/snapshots', sb, { body: { displayName: 'taken' } }, [404]],
    ['listPorts', 'GET', '/v1/sandboxes/{sandbox}/ports', sb, {}, [404]],
    ['createPort', 'POST', '/v1/sandboxes/{sandbox}/ports', sb, { body: { port: { number: 8081 } } }, [404]],
    ['getPort', 'GET', PORT, { ...sb, port: 8080 }, {}, [404]],
    ['deletePort', 'DELETE', PORT, { ...sb, port: 8080 }, { headers: etag('port') }, [404]],
    ['getSnapshot', 'GET', SNAP, { snapshot: snap.uid }, {}, [404]],
    ['deleteSnapshot', 'DELETE', SNAP, { snapshot: snap.uid }, { headers: etag('snapshot') }, [404, 204]],
    ['restoreSnapshot', 'POST', '/v1/snapshots/{snapshot}/restore', { snapshot: snap.uid }, { body: {} }, [404]],
    ['getImage', 'GET', IMAGE, { image: `snapshot-${snap.uid}` }, {}, [404]],
    ['deleteImage', 'DELETE', IMAGE, { image: `snapshot-${snap.uid}` }, { headers: etag('image') }, [404, 204]],
    // declined for every image (501), so it says nothing of whose it is
    ['getImagePullSpec', 'GET', '/v1/images/{image}/pull-spec', { image: `snapshot-${snap.uid}` }, {}, [404, 501]],
    ['getVolume', 'GET', VOL, { volume: vol.uid }, {}, [404]],
    ['deleteVolume', 'DELETE', VOL, { volume: vol.uid }, { headers: etag('volume') }, [404, 204]],
  ];
  // every operation the document has on a path naming one such resource,
  // that sandpit serves (its own /v1/openapi.json), has a case
  const served = (await s.api('GET', '/v1/openapi.json')).json.paths;
  const want = [];
  for (const [p, item] of Object.entries(served))
    if (/\{(sandbox|snapshot|volume|image|port)\}/.test(p))
      for (const op of Object.values(item)) if (op?.operationId) want.push(op.operationId);
  assert.deepEqual(cases.map((c) => c[0]).sort(), want.sort(), 'one case per served operation on a named resource');
  const seen = [];
  for (const [opId, m, tmpl, params, o, absent] of cases) {
    const r = await v1(m, tmpl, params, { key: other, ...o });
    seen.push(`${opId} ${r.status}`);
    assert.ok(absent.includes(r.status), `${opId}: ${r.status} ${r.text}`);
    if (r.status === 404) assert.equal(r.json.code, 'notFound', opId);
    if (r.status === 501) assert.equal(r.json.code, 'unimplemented', opId);
    if (r.status === 204) assert.equal(r.text, '', opId);
    // nothing of the first organization's resource in any answer
    assert.ok(!r.text.includes('secret'), `${opId}: ${r.text}`);
  }
  t.diagnostic(seen.join(', '));
  // nothing changed, nothing new: the same ETags, status, expiry and files
  assert.deepEqual(await owned(), was);
  // and the other organization's lists hold none of it
  for (const [tmpl, field, uid] of [['/v1/sandboxes', 'sandboxes', A.uid], ['/v1/snapshots', 'snapshots', snap.uid],
    ['/v1/volumes', 'volumes', vol.uid], ['/v1/images', 'images', snap.uid]]) {
    const r = await v1('GET', tmpl, {}, { key: other, query: { pageSize: 1000 } });
    assert.equal(r.status, 200, r.text);
    assert.ok(!r.text.includes(uid), `${tmpl} of the other organization names ${uid}: ${r.text.slice(0, 300)}`);
    if (field === 'sandboxes') assert.deepEqual(r.json.sandboxes.map((x) => x.uid), [B.uid]);
  }
  // a restore of the first's snapshot, and an attachment of its volume,
  // by name in the other's create: not found
  let r = await v1('POST', '/v1/sandboxes', {}, { key: other, body: { image: `images/snapshot-${snap.uid}` } });
  assert.equal(r.status, 404, r.text);
  if (r.json.uid) made.push([r.json.uid, other]);
  r = await v1('POST', '/v1/sandboxes', {}, { key: other, body: { image: 'images/alpine',
    features: { managedVolumes: { attachments: [{ volume: `volumes/${vol.uid}`, target: '/data' }] } } } });
  assert.equal(r.status, 404, r.text);
  if (r.json.uid) made.push([r.json.uid, other]);
});

test("every sandbox-endpoint operation with another organization's credential: refused at the first's endpoint (401; interact 404 before the upgrade), nothing done; a process id names nothing at another sandbox", { timeout: 180000 }, async () => {
  const was = await owned();
  const boundary = 'tenancyBoundary';
  const form = `--${boundary}\r\nContent-Disposition: form-data; name="metadata"\r\nContent-Type: application/json\r\n\r\n` +
    `${JSON.stringify({ path: `${W}/uploaded` })}\r\n--${boundary}\r\nContent-Disposition: form-data; name="content"\r\n` +
    `Content-Type: application/octet-stream\r\n\r\nx\r\n--${boundary}--\r\n`;
  const proc = { process: procA.uid };
  // [operationId, method, path, params, options]
  const cases = [
    ['list', 'GET', '/v1/files', {}, { query: { path: W } }],
    ['remove', 'DELETE', '/v1/files', {}, { query: { path: `${W}/mine` } }],
    ['readFile', 'GET', '/v1/files/content', {}, { query: { path: `${W}/mine` } }],
    ['writeFile', 'PUT', '/v1/files/content', {}, { query: { path: `${W}/written` }, rawBody: 'x', headers: { 'content-type': 'application/octet-stream' } }],
    ['mkdir', 'PUT', '/v1/files/directories', {}, { body: { path: `${W}/made` } }],
    ['download', 'GET', '/v1/files/download', {}, { query: { paths: `${W}/mine` } }],
    ['move', 'POST', '/v1/files/move', {}, { body: { from: `${W}/mine`, to: `${W}/moved` } }],
    ['stat', 'GET', '/v1/files/stat', {}, { query: { path: `${W}/mine` } }],
    ['upload', 'POST', '/v1/files/upload', {}, { rawBody: form, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }],
    ['listProcesses', 'GET', '/v1/processes', {}, {}],
    ['createProcess', 'POST', '/v1/processes', {}, { body: { cmd: ['touch', `${W}/by-process`] } }],
    ['exec', 'POST', '/v1/processes/exec', {}, { body: { cmd: ['touch', `${W}/by-exec`] } }],
    ['getProcess', 'GET', '/v1/processes/{process}', proc, {}],
    ['interact', 'GET', '/v1/processes/{process}/interact', proc, {}],
    ['readOutput', 'GET', '/v1/processes/{process}/output', proc, {}],
    ['signal', 'POST', '/v1/processes/{process}/signal', proc, { body: { signal: 'kill' } }],
  ];
  const want = [];
  for (const [p, item] of Object.entries(seed.paths))
    if (/^\/v1\/(processes|files)/.test(p)) for (const op of Object.values(item)) if (op?.operationId) want.push(op.operationId);
  assert.deepEqual(cases.map((c) => c[0]).sort(), want.sort(), 'one case per endpoint operation of the document');
  for (const [opId, m, tmpl, params, o] of cases) {
    // the other organization's credential (for its own sandbox B) at A's endpoint
    const r = await v1(m, tmpl, params, { ...o, key: null, endpoint: A.uid,
      headers: { ...o.headers, authorization: `Bearer ${tokB}` } });
    // interact's x-websocket contract: "404: The scoped credential does
    // not address this sandbox endpoint", before any upgrade
    const [status, code] = opId === 'interact' ? [404, 'notFound'] : [401, 'unauthenticated'];
    assert.equal(r.status, status, `${opId}: ${r.text}`);
    assert.equal(r.json.code, code, opId);
    assert.equal(r.json.message, 'This endpoint credential is for another sandbox', opId);
  }
  // nothing done in A: its files, and its process still running
  assert.deepEqual(await owned(), was);
  const g = await v1('GET', '/v1/processes/{process}', proc, { key: null, endpoint: A.uid, headers: { authorization: `Bearer ${tokA}` } });
  assert.equal(g.status, 200, g.text);
  assert.equal(g.json.state, 'running', g.text);
  // A's process id at B's own endpoint, with B's credential: no such process
  for (const [m, tmpl, o] of [['GET', '/v1/processes/{process}', {}], ['GET', '/v1/processes/{process}/output', {}],
    ['POST', '/v1/processes/{process}/signal', { body: { signal: 'kill' } }]]) {
    const r = await v1(m, tmpl, proc, { ...o, key: null, endpoint: B.uid, headers: { authorization: `Bearer ${tokB}` } });
    assert.equal(r.status, 404, `${m} ${tmpl} at the other sandbox: ${r.text}`);
    assert.equal(r.json.code, 'notFound');
  }
  const l = await v1('GET', '/v1/processes', {}, { key: null, endpoint: B.uid, headers: { authorization: `Bearer ${tokB}` } });
  assert.equal(l.status, 200, l.text);
  assert.ok(!l.text.includes(procA.uid), l.text);
  const still = await v1('GET', '/v1/processes/{process}', proc, { key: null, endpoint: A.uid, headers: { authorization: `Bearer ${tokA}` } });
  assert.equal(still.json.state, 'running', still.text);
});
