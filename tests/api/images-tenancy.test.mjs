// An image reference never reaches another organization's image
// (RELIABILITY T1, issue 24 D1). Org A snapshots a sandbox holding a canary;
// org B then names that snapshot's image every way Docker resolves one —
// its tag sandpit-snapshot:<id>, sha256:<id>, the bare ID, its prefixes of
// 1 to 12 hex characters and each one-character prefix 0..f — on both faces
// (Dokploy `image`, /v1 `imageRef`): every one is a 400 naming the field,
// and B never gets a container. The same image under a name B may use (an
// allow-listed tag) is refused on its labels, and so is an image labelled as
// another installation's snapshot. A's own snapshot by its tag, a template
// and an allow-listed image still work; an unknown name is refused without
// dockerd ever being asked to pull (the Docker socket proxy's log), and an
// allow-list entry scoped to one organization serves that one only.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startStack, waitFor } from './lib/stack.mjs';
import { docker } from './lib/docker.mjs';
import { dockerProxy } from './lib/dockerproxy.mjs';

const ORG_A = `imga${process.pid}`, ORG_B = `imgb${process.pid}`;
const CANARY = `canary-${process.pid}-${Math.random().toString(36).slice(2)}`;
const ALLOWED = `sandpit-test/imgt-allowed-${process.pid}:latest`;
const RELABELLED = `sandpit-test/imgt-relabel-${process.pid}:latest`;
const FOREIGN = `sandpit-test/imgt-foreign-${process.pid}:latest`;
const SCOPED = `sandpit-scoped/imgt-${process.pid}:latest`;

let s, proxy, dir, keyA, keyB, snap, imageId;
const made = []; // [key, sandboxId]
const images = [ALLOWED, RELABELLED, FOREIGN, SCOPED];

const dk = (...args) => execFileSync('docker', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
const v1 = (key, method, p, body) => s.api(method, p, { body, key });

async function dokployCreate(st, key, body) {
  const r = await st.api('POST', '/api/sandbox.create', { body, key, timeoutMs: 120000 });
  if (r.json?.sandboxId) made.push([st, key, r.json.sandboxId]);
  return r;
}
async function v1Create(st, key, body) {
  const r = await st.api('POST', '/v1/sandboxes', { body, key, timeoutMs: 120000 });
  if (r.json?.uid) made.push([st, key, r.json.uid]);
  return r;
}
async function containersOf(org) {
  const r = await docker('GET', '/containers/json?all=1&filters=' + encodeURIComponent(JSON.stringify({ label: [`sandpit.organizationId=${org}`] })));
  assert.equal(r.status, 200, r.text);
  return r.json;
}
// a commit of the busybox fixture under name, with Docker --change lines
function commitImage(name, changes = []) {
  const c = `imgt-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  dk('create', '--name', c, 'sandpit-test/busybox:latest', 'true');
  try {
    dk('commit', ...changes.flatMap((x) => ['--change', x]), c, name);
  } finally {
    dk('rm', '-f', c);
  }
}
const pullsSeen = () => proxy.log.filter((e) => /\/images\/create\b/.test(e.url) || /\/distribution\//.test(e.url));

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sp-imgt-'));
  proxy = await dockerProxy(dir);
  s = await startStack({ env: { SANDPIT_DOCKER_HOST: `unix://${proxy.sock}`, SANDPIT_RATE: '2000r/s', SANDPIT_BURST: '2000' } });
  keyA = await s.newKey(ORG_A);
  keyB = await s.newKey(ORG_B);
  // org A: a sandbox with a canary in its workdir, snapshotted
  const c = await dokployCreate(s, keyA, { template: 'alpine' });
  assert.equal(c.status, 200, c.text);
  const w = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: `echo ${CANARY} > /home/user/canary` }, key: keyA });
  assert.equal(w.status, 200, w.text);
  const sn = await v1(keyA, 'POST', `/v1/sandboxes/${c.json.sandboxId}/snapshots`, { displayName: 'secret' });
  assert.equal(sn.status, 202, sn.text);
  snap = sn.json.uid;
  await waitFor(async () => {
    const g = await v1(keyA, 'GET', `/v1/snapshots/${snap}`);
    assert.equal(g.status, 200, g.text);
    assert.notEqual(g.json.status, 'failed', g.text);
    return g.json.status === 'ready';
  }, 120000, 200);
  imageId = dk('image', 'inspect', '-f', '{{.Id}}', `sandpit-snapshot:${snap}`);
  assert.match(imageId, /^sha256:[0-9a-f]{64}$/);
  // the snapshot's image under a name the allow-list lets anyone use, and
  // an image labelled as B's snapshot on another installation
  dk('tag', `sandpit-snapshot:${snap}`, RELABELLED);
  commitImage(FOREIGN, ['LABEL sandpit.snapshotId=x1', `LABEL sandpit.organizationId=${ORG_B}`, 'LABEL sandpit.snapshotInstall=another-installation']);
  commitImage(ALLOWED);
  commitImage(SCOPED);
});

after(async () => {
  for (const [st, key, id] of made) await st.api('POST', '/api/sandbox.remove', { body: { sandboxId: id }, key }).catch(() => {});
  for (const img of images) try { dk('rmi', '-f', img); } catch { /* gone */ }
  if (snap && s) {
    const g = await v1(keyA, 'GET', `/v1/snapshots/${snap}`).catch(() => null);
    if (g?.headers?.etag) await s.api('DELETE', `/v1/snapshots/${snap}`, { headers: { 'if-match': g.headers.etag }, key: keyA }).catch(() => {});
  }
  await s?.stop();
  await proxy?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test("another organization names A's snapshot image every way Docker resolves one: each a 400 naming the field, never a container", async () => {
  const hex = imageId.slice(7);
  const forms = [`sandpit-snapshot:${snap}`, imageId, hex, `sandpit-snapshot@${imageId}`];
  for (let n = 1; n <= 12; n++) forms.push(hex.slice(0, n));
  for (const ch of '0123456789abcdef') forms.push(ch);
  const t0 = Date.now();
  for (const ref of [...new Set(forms)]) {
    const d = await dokployCreate(s, keyB, { image: ref });
    assert.equal(d.status, 400, `Dokploy image ${ref}: ${d.text}`);
    assert.match(d.json.message, /^image: /, `Dokploy image ${ref}: ${d.text}`);
    assert.ok(!d.json.sandboxId, d.text);
    const v = await v1Create(s, keyB, { imageRef: ref });
    assert.equal(v.status, 400, `/v1 imageRef ${ref}: ${v.text}`);
    assert.match(v.text, /imageRef/, `/v1 imageRef ${ref}: ${v.text}`);
    assert.ok(!v.json.uid, v.text);
  }
  // refused on the name, before Docker: quick even on a loaded machine
  assert.ok(Date.now() - t0 < 60000, `${forms.length * 2} refusals took ${Date.now() - t0} ms`);
  assert.deepEqual(await containersOf(ORG_B), [], 'org B got a container');
});

test('the same image under a name B may use is refused on its labels; so is another installation\'s snapshot', async () => {
  for (const ref of [RELABELLED, FOREIGN]) {
    const d = await dokployCreate(s, keyB, { image: ref });
    assert.equal(d.status, 400, `${ref}: ${d.text}`);
    assert.match(d.json.message, /^image: .*snapshot of another organization or installation/, d.text);
    const v = await v1Create(s, keyB, { imageRef: ref });
    assert.equal(v.status, 400, `${ref}: ${v.text}`);
    assert.match(v.text, /imageRef: .*snapshot of another organization or installation/, v.text);
  }
  assert.deepEqual(await containersOf(ORG_B), [], 'org B got a container');
});

test("A's own snapshot by its tag, a template and an allow-listed image still work", async () => {
  const own = await v1Create(s, keyA, { imageRef: `sandpit-snapshot:${snap}` });
  assert.equal(own.status, 201, own.text);
  const r = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: own.json.uid, cmd: 'cat /home/user/canary' }, key: keyA });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.stdout.trim(), CANARY);
  for (const body of [{ template: 'alpine' }, { image: 'sandpit-test/busybox:latest' }, { image: ALLOWED }]) {
    const d = await dokployCreate(s, keyB, body);
    assert.equal(d.status, 200, `${JSON.stringify(body)}: ${d.text}`);
  }
  for (const body of [{ image: 'images/alpine' }, { imageRef: 'sandpit-test/busybox' }, { imageRef: ALLOWED }]) {
    const v = await v1Create(s, keyB, body);
    assert.equal(v.status, 201, `${JSON.stringify(body)}: ${v.text}`);
  }
});

test('an unknown name is a 400 without a pull: never allowed, or allowed but pulls are off', async () => {
  const before = pullsSeen().length;
  const cases = [
    [`nosuch-${process.pid}/image:1`, /not an image this organization may use/],
    [`sandpit-test/imgt-nosuch-${process.pid}:1`, /not on this server, and pulls are off \(image_pull\)/],
    ['docker.io/library/alpine:latest', /not an image this organization may use/],
  ];
  for (const [ref, why] of cases) {
    const t0 = Date.now();
    const d = await dokployCreate(s, keyB, { image: ref });
    assert.equal(d.status, 400, `${ref}: ${d.text}`);
    assert.match(d.json.message, /^image: /);
    assert.match(d.json.message, why);
    const v = await v1Create(s, keyB, { imageRef: ref });
    assert.equal(v.status, 400, `${ref}: ${v.text}`);
    assert.match(v.text, why);
    assert.ok(Date.now() - t0 < 20000, `${ref}: ${Date.now() - t0} ms`);
  }
  assert.deepEqual(pullsSeen().slice(before), [], 'sandpit asked dockerd to pull');
});

test('an allow-list entry scoped to one organization serves that one only', async (t) => {
  const st = await startStack({ extraConf: `image_allow = sandpit-test/* ${ORG_A}=sandpit-scoped/*` });
  t.after(() => st.stop());
  const a = await st.newKey(ORG_A), b = await st.newKey(ORG_B);
  const no = await dokployCreate(st, b, { image: SCOPED });
  assert.equal(no.status, 400, no.text);
  assert.match(no.json.message, /^image: .*not an image this organization may use/);
  const yes = await dokployCreate(st, a, { image: SCOPED });
  assert.equal(yes.status, 200, yes.text);
  await st.api('POST', '/api/sandbox.remove', { body: { sandboxId: yes.json.sandboxId }, key: a });
});
