// /v1 createImage and getImagePullSpec where the operator configured a
// registry (image_registry; issue 17): a private docker-registry on a free
// loopback port. getImagePullSpec of a snapshot's image pushes it (tag +
// push through the Engine API) and answers the registry's manifest digest
// and the reference `docker pull` takes; the registry's own API shows the
// repository and manifest, and a pull by that reference works with no
// local tag left. createImage (fromImage) answers 202 waitingForPush with a
// pushTarget; once the client pushed there the image reads completed with
// the registry's digest, its pull spec answers, deleteImage removes it.
// Another org sees none of it (404) and gets repositories of its own. Bad
// input is a 400 naming the field; a registry that is down is a 503
// unavailable (never a 500 or a hang) and the image works again once it is
// back. Without a registry both decline 501 (v1-snapshots.test.mjs).
// Every /v1 answer is validated against the seed's schema.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { ajv, seedValidator, v1Call, v1Checked } from './lib/v1seed.mjs';
import { startStack, waitFor } from './lib/stack.mjs';
import { htpasswdLine, startRegistry } from './lib/registry.mjs';
import { dockerProxy } from './lib/dockerproxy.mjs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import net from 'node:net';
import path from 'node:path';

let s, reg, checked = 0;
const made = [], snaps = [], localRefs = [];

const v1 = (method, tmpl, params, o) => v1Call(s, method, tmpl, params, o);
const IMAGES = '/v1/images';
const IMAGE = '/v1/images/{image}';
const PULL = '/v1/images/{image}/pull-spec';
const dk = (...args) => execFileSync('docker', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120000 });
const dkOk = (...args) => { try { dk(...args); return true; } catch { return false; } };
const MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json';

before(async () => {
  reg = await startRegistry();
  s = await startStack({ extraConf: [`image_registry = ${reg.host}/sandpit`] });
});
after(async () => {
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  for (const id of snaps) {
    const r = await s?.api('GET', `/v1/snapshots/${id}`).catch(() => null);
    if (r?.status === 200) await s.api('DELETE', `/v1/snapshots/${id}`, { headers: { 'if-match': r.headers.etag } }).catch(() => {});
    try { execFileSync('docker', ['rmi', '-f', `sandpit-snapshot:${id}`], { stdio: 'ignore' }); } catch { /* gone */ }
  }
  for (const ref of localRefs) try { execFileSync('docker', ['rmi', ref], { stdio: 'ignore' }); } catch { /* gone */ }
  await s?.stop();
  await reg?.stop();
  assert.ok(checked + v1Checked() > 0);
});

// "127.0.0.1:P/sandpit/<org key>/<id>" -> "sandpit/<org key>/<id>"
const repoPath = (ref) => ref.slice(reg.host.length + 1).replace(/[@:][^/]*$/, '');

test('getImagePullSpec pushes a snapshot\'s image: the registry has it, docker pull of the answer works', { timeout: 300000 }, async () => {
  const c = await v1('POST', '/v1/sandboxes', {}, { body: { image: 'images/alpine' } });
  assert.equal(c.status, 201, c.text);
  made.push(c.json.uid);
  const ex = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.uid, cmd: 'echo pushed-content > marker && pwd' }, timeoutMs: 60000 });
  assert.equal(ex.status, 200, ex.text);
  const W = ex.json.stdout.trim();
  const sn = await v1('POST', '/v1/sandboxes/{sandbox}/snapshots', { sandbox: c.json.uid }, { body: { displayName: 'to-push' } });
  assert.equal(sn.status, 202, sn.text);
  snaps.push(sn.json.uid);
  await waitFor(async () => (await v1('GET', '/v1/snapshots/{snapshot}', { snapshot: sn.json.uid })).json.status === 'ready', 120000, 200);
  const image = `snapshot-${sn.json.uid}`;

  const p = await v1('GET', PULL, { image });
  assert.equal(p.status, 200, p.text);
  assert.equal(p.headers['cache-control'], 'no-store');
  assert.match(p.json.manifestDigest, /^sha256:[0-9a-f]{64}$/);
  assert.equal(p.json.manifestMediaType, MANIFEST);
  const ref = p.json.imageRef;
  assert.match(ref, new RegExp(`^${reg.host.replace(/\./g, '\\.')}/sandpit/[0-9a-f]{24}/${image}@${p.json.manifestDigest}$`), ref);
  assert.ok(!JSON.stringify(p.json).includes('password'));

  // the registry's own API: the repository, its tag, the manifest's digest
  const repo = repoPath(ref);
  const tags = await reg.get(`/v2/${repo}/tags/list`);
  assert.equal(tags.status, 200, tags.text);
  assert.deepEqual(tags.json.tags, ['latest']);
  const man = await reg.get(`/v2/${repo}/manifests/latest`, { accept: MANIFEST });
  assert.equal(man.status, 200, man.text);
  assert.equal(man.headers['docker-content-digest'], p.json.manifestDigest);
  for (const l of man.json.layers) assert.equal((await reg.get(`/v2/${repo}/blobs/${l.digest}`)).status, 200);

  // sandpit left no tag of the registry's on the host (a snapshot's image
  // keeps one tag, so that its delete still meets the lease check)
  assert.ok(!dkOk('image', 'inspect', `${reg.host}/${repo}:latest`), 'no local registry tag');
  // docker pull by the answer's reference, then the content from it
  localRefs.push(ref);
  dk('pull', ref);
  assert.equal(dk('run', '--rm', '--network', 'none', '--entrypoint', 'cat', ref, `${W}/marker`).trim(), 'pushed-content');
  dk('rmi', ref);

  // more calls, three at once, push nothing new: the same digest (one
  // push of an image at a time; none meets another's untag)
  for (const again of await Promise.all([1, 2, 3].map(() => v1('GET', PULL, { image })))) {
    assert.equal(again.status, 200, again.text);
    assert.equal(again.json.manifestDigest, p.json.manifestDigest);
  }
  assert.ok(!dkOk('image', 'inspect', `${reg.host}/${repo}:latest`), 'no local registry tag');

  // another org: 404, before any word on support
  const other = await s.newKey(`other-${Date.now()}`);
  const o = await v1('GET', PULL, { image }, { key: other });
  assert.equal(o.status, 404, o.text);
  assert.equal(o.json.code, 'notFound');

  // a template is the operator's, not transferred
  const t = await v1('GET', PULL, { image: 'alpine' });
  assert.equal(t.status, 409, t.text);
  assert.equal(t.json.code, 'failedPrecondition');
  assert.match(t.json.message, /^image_is_template:/);
  assert.equal((await v1('GET', PULL, { image: 'nosuchimage' })).status, 404);

  // the registry down: the push's failure, which Docker reports inside a
  // 200 progress stream, is a 503 naming the registry; back, it works
  await reg.halt();
  try {
    const down = await v1('GET', PULL, { image });
    assert.equal(down.status, 503, down.text);
    assert.equal(down.json.code, 'unavailable');
    assert.match(down.json.message, new RegExp(`registry ${reg.host.replace(/\./g, '\\.')}/sandpit is unavailable: .*connection refused`), down.text);
    assert.ok(!dkOk('image', 'inspect', `${reg.host}/${repo}:latest`), 'no local registry tag after a failed push');
  } finally {
    await reg.start();
  }
  assert.equal((await v1('GET', PULL, { image })).status, 200);

  // the snapshot's delete still meets its lease check, then removes the image
  const g = await v1('GET', '/v1/snapshots/{snapshot}', { snapshot: sn.json.uid });
  const d = await v1('DELETE', '/v1/snapshots/{snapshot}', { snapshot: sn.json.uid }, { headers: { 'if-match': g.headers.etag } });
  assert.equal(d.status, 204, d.text);
  assert.ok(!dkOk('image', 'inspect', `sandpit-snapshot:${sn.json.uid}`));
});

test('createImage registers a push target: 202 waitingForPush, completed once pushed, pull spec, delete; another org is apart', { timeout: 300000 }, async () => {
  const c = await v1('POST', IMAGES, {}, { body: { displayName: 'pushed', description: 'by the client', startCmd: ['sh', '-c', 'sleep 1'], readyCmd: ['true'], fromImage: { captureMode: 'disk' } } });
  assert.equal(c.status, 202, c.text);
  assert.equal(c.headers['cache-control'], 'no-store');
  assert.equal(c.headers.etag, c.json.etag);
  assert.equal(c.json.status, 'waitingForPush');
  assert.equal(c.json.source, 'image');
  assert.equal(c.json.displayName, 'pushed');
  assert.deepEqual(c.json.startCmd, ['sh', '-c', 'sleep 1']);
  assert.match(c.json.uid, /^img-[a-z0-9]{20}$/);
  const target = c.json.pushTarget.imageRef;
  assert.match(target, new RegExp(`^${reg.host.replace(/\./g, '\\.')}/sandpit/[0-9a-f]{24}/${c.json.uid}:latest$`), target);
  assert.equal(c.json.pushTarget.accessToken, undefined, 'sandpit hands out no registry credential');
  const image = c.json.uid;

  const g = await v1('GET', IMAGE, { image });
  assert.equal(g.status, 200, g.text);
  assert.equal(g.json.status, 'waitingForPush');
  assert.equal(g.json.pushTarget, undefined, 'pushTarget only in the create answer');
  const np = await v1('GET', PULL, { image });
  assert.equal(np.status, 409, np.text);
  assert.match(np.json.message, /^image_not_pushed:/);

  // another org: its own repositories, none of ours
  const other = await s.newKey(`other-${Date.now()}`);
  assert.equal((await v1('GET', IMAGE, { image }, { key: other })).status, 404);
  assert.equal((await v1('GET', PULL, { image }, { key: other })).status, 404);
  assert.ok(!(await v1('GET', IMAGES, {}, { key: other })).json.images.some((i) => i.uid === image));
  assert.equal((await v1('DELETE', IMAGE, { image }, { key: other, headers: { 'if-match': g.json.etag } })).status, 204, 'absent for it');
  const oc = await v1('POST', IMAGES, {}, { key: other, body: { displayName: 'pushed', fromImage: {} } });
  assert.equal(oc.status, 202, oc.text);
  assert.notEqual(repoPath(oc.json.pushTarget.imageRef).split('/')[1], repoPath(target).split('/')[1], 'org keys differ');

  // the client pushes; then it reads completed with the registry's digest
  localRefs.push(target);
  dk('tag', 'sandpit-test/busybox', target);
  dk('push', target);
  dk('rmi', target);
  const done = await v1('GET', IMAGE, { image });
  assert.equal(done.status, 200, done.text);
  assert.equal(done.json.status, 'completed');
  assert.match(done.json.imageDigest, /^sha256:/);
  assert.equal(done.json.imageRef, `${target.replace(/:latest$/, '')}@${done.json.imageDigest}`);
  assert.notEqual(done.json.etag, g.json.etag);
  const l = await v1('GET', IMAGES, {}, { query: { filter: `uid=${image}` } });
  assert.equal(l.json.images.length, 1, l.text);
  assert.equal(l.json.images[0].status, 'completed');
  const p = await v1('GET', PULL, { image });
  assert.equal(p.status, 200, p.text);
  assert.equal(p.json.manifestDigest, done.json.imageDigest);
  assert.equal(p.json.imageRef, done.json.imageRef);
  localRefs.push(p.json.imageRef);
  dk('pull', p.json.imageRef);
  dk('rmi', p.json.imageRef);

  // registry down: 503 unavailable, within a bounded time; back: works again
  await reg.halt();
  try {
    const t0 = Date.now();
    const down = await v1('GET', PULL, { image });
    assert.equal(down.status, 503, down.text);
    assert.equal(down.json.code, 'unavailable');
    assert.ok(Date.now() - t0 < 60000);
    const rd = await v1('GET', IMAGE, { image });
    assert.equal(rd.status, 200, rd.text);
    assert.equal(rd.json.status, 'completed', 'what was pushed stays known');
    const sd = await v1('POST', IMAGES, {}, { body: { displayName: 'while-down', fromImage: {} } });
    assert.equal(sd.status, 202, sd.text);
  } finally {
    await reg.start();
  }
  assert.equal((await v1('GET', PULL, { image })).status, 200);

  const cur = await v1('GET', IMAGE, { image });
  assert.equal((await v1('DELETE', IMAGE, { image })).status, 428);
  assert.equal((await v1('DELETE', IMAGE, { image }, { headers: { 'if-match': '"old"' } })).status, 412);
  const del = await v1('DELETE', IMAGE, { image }, { headers: { 'if-match': cur.json.etag } });
  assert.equal(del.status, 204, del.text);
  assert.equal((await v1('GET', IMAGE, { image })).status, 404);
});

test('createImage Idempotency-Key: the same body answers the first 202 again, one image; another body is a 409', { timeout: 60000 }, async () => {
  const key = `img-idem-${Date.now()}`;
  const body = { displayName: 'idem', fromImage: {} };
  const a = await v1('POST', IMAGES, {}, { body, headers: { 'idempotency-key': key } });
  assert.equal(a.status, 202, a.text);
  const b = await v1('POST', IMAGES, {}, { body, headers: { 'idempotency-key': key } });
  assert.equal(b.status, 202, b.text);
  assert.equal(b.json.uid, a.json.uid);
  assert.equal(b.json.pushTarget.imageRef, a.json.pushTarget.imageRef);
  const c = await v1('POST', IMAGES, {}, { body: { ...body, displayName: 'other' }, headers: { 'idempotency-key': key } });
  assert.equal(c.status, 409, c.text);
  assert.equal(c.json.code, 'failedPrecondition');
  const l = await v1('GET', IMAGES, {}, { query: { filter: 'display_name=idem' } });
  assert.equal(l.json.images.length, 1, l.text);
  const g = await v1('GET', IMAGE, { image: a.json.uid });
  assert.equal((await v1('DELETE', IMAGE, { image: a.json.uid }, { headers: { 'if-match': g.json.etag } })).status, 204);
});

test('createImage: bad input is a 400 naming the field', { timeout: 60000 }, async () => {
  for (const [body, field] of [
    [{ displayName: 'x' }, 'fromImage'],
    [{ fromImage: {} }, 'displayName'],
    [{ displayName: 'a/b', fromImage: {} }, 'displayName'],
    [{ displayName: 'x', fromImage: { captureMode: 'all' } }, 'captureMode'],
    [{ displayName: 'x', fromImage: { bogus: 1 } }, 'bogus'],
    [{ displayName: 'x', fromImage: 'busybox' }, 'fromImage'],
    [{ displayName: 'x', startCmd: 'sh', fromImage: {} }, 'startCmd'],
    [{ displayName: 'x', readyCmd: [1], fromImage: {} }, 'readyCmd'],
    [{ displayName: 'x', fromImage: {}, fromSnapshot: 'y' }, 'fromSnapshot'],
  ]) {
    const r = await v1('POST', IMAGES, {}, { body });
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.json.code, 'invalidArgument');
    assert.ok(JSON.stringify(r.json).includes(field), `${JSON.stringify(body)} names ${field}: ${r.text}`);
  }
});

test('a registry that wants credentials: image_registry_auth_file goes to Docker as X-Registry-Auth, never into an answer or a log', { timeout: 300000 }, async (t) => {
  const PW = `canary-${Date.now()}-pw`;
  const areg = await startRegistry({ htpasswd: htpasswdLine('pusher', PW) });
  const adir = await mkdtemp(path.join(os.tmpdir(), 'sandpit-regauth-'));
  let st = null, proxy = null;
  const mine = [];
  t.after(async () => {
    for (const id of mine) await st?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
    await st?.stop().catch(() => {});
    await proxy?.close();
    await areg.stop();
    await rm(adir, { recursive: true, force: true });
  });
  // what sandpit sends to Docker, seen on the wire (RELIABILITY H6)
  proxy = await dockerProxy(adir);
  const authFile = path.join(adir, 'registry.auth');
  await writeFile(authFile, `pusher:${PW}\n`);
  await chmod(authFile, 0o600);
  st = await startStack({ env: { SANDPIT_DOCKER_HOST: `unix://${proxy.sock}` }, extraConf: [`image_registry = ${areg.host}/team`, `image_registry_auth_file = ${authFile}`] });
  const call = async (method, tmpl, params = {}, o = {}) => {
    let p = tmpl;
    for (const [k, v] of Object.entries(params)) p = p.replace(`{${k}}`, encodeURIComponent(v));
    const r = await st.api(method, p, { timeoutMs: 120000, ...o });
    const v = seedValidator(method, tmpl, r.status);
    if (v) checked++;
    if (v) assert.ok(v(r.json), `${method} ${p} ${r.status} breaks the seed's schema: ${ajv.errorsText(v.errors)}\n${r.text}`);
    assert.ok(!r.text.includes(PW), `${method} ${p} answers the registry password`);
    return r;
  };
  const c = await call('POST', '/v1/sandboxes', {}, { body: { image: 'images/alpine' } });
  assert.equal(c.status, 201, c.text);
  mine.push(c.json.uid);
  const sn = await call('POST', '/v1/sandboxes/{sandbox}/snapshots', { sandbox: c.json.uid }, { body: { displayName: 'auth' } });
  assert.equal(sn.status, 202, sn.text);
  snaps.push(sn.json.uid);
  await waitFor(async () => (await call('GET', '/v1/snapshots/{snapshot}', { snapshot: sn.json.uid })).json.status === 'ready', 120000, 200);
  const p = await call('GET', PULL, { image: `snapshot-${sn.json.uid}` });
  assert.equal(p.status, 200, p.text);
  const repo = p.json.imageRef.slice(areg.host.length + 1).replace(/@.*$/, '');
  assert.match(repo, /^team\/[0-9a-f]{24}\/snapshot-/);
  // the registry wants the credential; with it, it has the push
  assert.equal((await areg.get(`/v2/${repo}/tags/list`)).status, 401);
  const basic = { authorization: `Basic ${Buffer.from(`pusher:${PW}`).toString('base64')}` };
  const tags = await areg.get(`/v2/${repo}/tags/list`, basic);
  assert.equal(tags.status, 200, tags.text);
  assert.deepEqual(tags.json.tags, ['latest']);
  const man = await areg.get(`/v2/${repo}/manifests/latest`, { ...basic, accept: MANIFEST });
  assert.equal(man.headers['docker-content-digest'], p.json.manifestDigest);

  // createImage's look-ups go with the credential too
  const reg1 = await call('POST', IMAGES, {}, { body: { displayName: 'wire', fromImage: {} } });
  assert.equal(reg1.status, 202, reg1.text);
  assert.equal((await call('GET', IMAGE, { image: reg1.json.uid })).json.status, 'waitingForPush');

  // on the wire: the registry requests name only this org's repositories
  // under the configured prefix, and each push and look-up carries the
  // credential as Docker's X-Registry-Auth (base64url JSON)
  const esc = (x) => encodeURIComponent(x);
  const orgRepo = new RegExp(`^${esc(`${areg.host}/team/`).replace(/\./g, '\\.')}[0-9a-f]{24}${esc('/')}(snapshot|img)-[a-z0-9]{20}`);
  const regCalls = proxy.log.filter((x) => /^\/v[\d.]+\/(images\/[^/?]+\/(push|tag)|distribution\/)/.test(x.url));
  const pushes = regCalls.filter((x) => /\/push(\?|$)/.test(x.url));
  const looks = regCalls.filter((x) => x.url.includes('/distribution/'));
  assert.ok(pushes.length >= 1 && looks.length >= 2, JSON.stringify(regCalls.map((x) => x.url)));
  for (const x of [...pushes, ...looks]) {
    const target = x.url.replace(/^\/v[\d.]+\/(images|distribution)\//, '');
    assert.match(target, orgRepo, x.url);
    assert.ok(x.registryAuth, `${x.method} ${x.url} without X-Registry-Auth`);
    assert.deepEqual(JSON.parse(Buffer.from(x.registryAuth, 'base64url').toString()), { username: 'pusher', password: PW, serveraddress: areg.host });
  }
  const tagCalls = regCalls.filter((y) => /\/tag\?/.test(y.url));
  assert.ok(tagCalls.length >= 1);
  for (const x of tagCalls) {
    assert.match(x.url, /^\/v[\d.]+\/images\/sandpit-snapshot%3A[a-z0-9]{20}\/tag\?/, x.url);
    const q = new URLSearchParams(x.url.split('?')[1]);
    assert.match(q.get('repo'), new RegExp(`^${areg.host.replace(/\./g, '\\.')}/team/[0-9a-f]{24}/snapshot-[a-z0-9]{20}$`));
    assert.equal(x.registryAuth, undefined, 'a tag needs no credential');
  }

  // the registry stops taking that password: 503 unavailable, with the
  // registry's word and without the password
  await areg.halt();
  await areg.setHtpasswd(htpasswdLine('pusher', 'another-password'));
  await areg.start();
  const bad = await call('GET', PULL, { image: `snapshot-${sn.json.uid}` });
  assert.equal(bad.status, 503, bad.text);
  assert.equal(bad.json.code, 'unavailable');
  assert.match(bad.json.message, /registry/);
  // Docker's own word, read out of the 200 progress stream
  assert.match(bad.json.message, /unauthorized|authentication required/i, bad.text);

  // the header value sandpit sends (base64url of Docker's JSON) and the
  // password are in no log
  const header = Buffer.from(JSON.stringify({ username: 'pusher', password: PW, serveraddress: areg.host })).toString('base64url');
  for (const f of ['sandpitd.log', 'sandpit-stream.log', 'nginx/error.log', 'nginx/access.log']) {
    const text = await readFile(path.join(st.dir, f), 'utf8').catch(() => '');
    assert.ok(!text.includes(PW), `${f} holds the registry password`);
    assert.ok(!text.includes(header.slice(0, 40)), `${f} holds the X-Registry-Auth value`);
  }
});

test('a silent registry: 503 within a bound, a list asks it once, Docker\'s other calls go on meanwhile', { timeout: 240000 }, async (t) => {
  // takes connections and never answers
  const sockets = new Set();
  const silent = net.createServer((c) => { sockets.add(c); c.on('error', () => {}); });
  await new Promise((ok) => silent.listen(0, '127.0.0.1', ok));
  const host = `127.0.0.1:${silent.address().port}`;
  let st = null;
  t.after(async () => {
    await st?.stop().catch(() => {});
    for (const c of sockets) c.destroy();
    silent.close();
  });
  st = await startStack({ extraConf: [`image_registry = ${host}/quiet`] });
  const call = async (method, tmpl, params = {}, o = {}) => {
    let p = tmpl;
    for (const [k, v] of Object.entries(params)) p = p.replace(`{${k}}`, encodeURIComponent(v));
    const r = await st.api(method, p, { timeoutMs: 120000, ...o });
    const v = seedValidator(method, tmpl, r.status);
    if (v) checked++;
    if (v) assert.ok(v(r.json), `${method} ${p} ${r.status} breaks the seed's schema: ${ajv.errorsText(v.errors)}\n${r.text}`);
    return r;
  };
  const ids = [];
  for (let i = 0; i < 3; i++) {
    const c = await call('POST', IMAGES, {}, { body: { displayName: `quiet-${i}`, fromImage: {} } });
    assert.equal(c.status, 202, c.text);
    ids.push(c.json.uid);
  }
  // a pull spec waits on the registry (bounded: 10 s); meanwhile Docker's
  // other calls are answered (the look-up stays outside the stuck-server
  // guard; this stack's reaper also shows the daemon alive every 5 s, so
  // this passes without that exemption too: it does not pin it)
  const pending = call('GET', PULL, { image: ids[0] });
  await new Promise((ok) => setTimeout(ok, 6500));
  const tpl = await call('GET', IMAGE, { image: 'alpine' });
  assert.equal(tpl.status, 200, tpl.text);
  assert.equal(tpl.json.status, 'completed', tpl.text);
  const p = await pending;
  assert.equal(p.status, 503, p.text);
  assert.equal(p.json.code, 'unavailable');
  assert.match(p.json.message, /registry/);
  // a list asks the silent registry once for all three, not once each
  const t0 = Date.now();
  const l = await call('GET', IMAGES);
  assert.equal(l.status, 200, l.text);
  for (const id of ids) assert.equal(l.json.images.find((i) => i.uid === id)?.status, 'waitingForPush', l.text);
  assert.ok(Date.now() - t0 < 25000, `the list took ${Date.now() - t0} ms: one look-up of at most 10 s, not one per image`);
});
