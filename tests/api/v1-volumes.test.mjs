// /v1 managed volumes (issue 17): createVolume, listVolumes, getVolume,
// deleteVolume (Docker named volumes, records in Redis), attached at
// createSandbox through features.managedVolumes: targets checked, one
// sandbox at a time (20 parallel creates: exactly one wins), written by
// one sandbox and read by the next after the first is deleted, kept
// across stop/start, refused to another organization (404), a delete of
// an attached volume refused (deletion_content_lease_held). On this
// (local, root) server a volume is a loop disk of volume_size_mb (64 here)
// in disk_dir/volumes: a write past it fails with ENOSPC, its data outlives
// the sandbox, and deleteVolume leaves no file and no loop device. Every /v1
// answer is validated against the seed's schema for its operation and
// status. Volumes and sandboxes made here are removed in after().
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startStack, waitFor } from './lib/stack.mjs';
import { dockerProxy } from './lib/dockerproxy.mjs';
import { noShImage, removeNoShImage } from './lib/docker.mjs';
import { v1Call, v1Checked } from './lib/v1seed.mjs';

let s, diskDir;
const v1 = (method, tmpl, params, o) => v1Call(s, method, tmpl, params, o);
const VOLS = '/v1/volumes';
const VOL = '/v1/volumes/{volume}';
const SBX = '/v1/sandboxes';
const ONE = '/v1/sandboxes/{sandbox}';

const volumes = new Set();
const sandboxes = new Set();
async function mkVolume(displayName = 'data', o = {}) {
  const r = await v1('POST', VOLS, {}, { body: { displayName }, ...o });
  assert.equal(r.status, 201, r.text);
  volumes.add(r.json.uid);
  return r.json;
}
async function mkSandbox(attachments, o = {}) {
  const r = await v1('POST', SBX, {}, { body: { image: 'images/alpine', features: { managedVolumes: { attachments } } }, ...o });
  if (r.status === 201) sandboxes.add(r.json.uid);
  return r;
}
const etagOf = async (tmpl, id) => (await v1('GET', tmpl, tmpl === VOL ? { volume: id } : { sandbox: id })).headers.etag;
async function rmSandbox(id) {
  const r = await v1('DELETE', ONE, { sandbox: id }, { headers: { 'if-match': await etagOf(ONE, id) } });
  assert.equal(r.status, 204, r.text);
  sandboxes.delete(id);
}
async function rmVolume(id) {
  const r = await v1('DELETE', VOL, { volume: id }, { headers: { 'if-match': await etagOf(VOL, id) } });
  assert.equal(r.status, 204, r.text);
  volumes.delete(id);
}
const exec = (id, cmd) => s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd } });
const dockerVolume = (uid) => s.docker('GET', `/volumes/sandpit-vol-${uid}`);
const volFile = (uid) => path.join(diskDir, 'volumes', `${uid}.img`);
// the loop devices whose backing file is a volume's
const loopsOf = (uid) => fs.readdirSync('/sys/block').filter((d) => {
  try { return fs.readFileSync(`/sys/block/${d}/loop/backing_file`, 'utf8').startsWith(volFile(uid)); } catch { return false; }
});

before(async () => {
  diskDir = await mkdtemp(path.join(os.tmpdir(), 'sandpit-voldisk-'));
  s = await startStack({ env: { SANDPIT_RATE: '200r/s', SANDPIT_BURST: '100' }, extraConf: [`disk_dir = ${diskDir}`, 'volume_size_mb = 64'] });
});
after(async () => {
  await removeNoShImage();
  for (const id of sandboxes) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  for (const id of volumes) {
    const g = await s?.api('GET', `/v1/volumes/${id}`).catch(() => null);
    if (g?.status === 200) await s.api('DELETE', `/v1/volumes/${id}`, { headers: { 'if-match': g.headers.etag } }).catch(() => {});
    // what the API could not remove (a failed test): by Docker directly
    await s?.docker('DELETE', `/volumes/sandpit-vol-${id}`).catch(() => {});
  }
  await s?.stop();
  await rm(diskDir, { recursive: true, force: true }).catch(() => {});
  assert.ok(v1Checked() > 0);
});

test('createVolume, getVolume, listVolumes, deleteVolume: answers, ETags, errors', { timeout: 120000 }, async () => {
  const a = await mkVolume('alpha');
  assert.equal(a.name, `volumes/${a.uid}`);
  assert.equal(a.displayName, 'alpha');
  assert.match(a.etag, /^"[^"]+"$/);
  // a loop disk's file of volume_size_mb, no Docker volume
  assert.equal(fs.statSync(volFile(a.uid)).size, 64 * 1024 * 1024);
  assert.equal((await dockerVolume(a.uid)).status, 404);

  let r = await v1('GET', VOL, { volume: a.uid });
  assert.equal(r.status, 200);
  assert.deepEqual(r.json, a);
  assert.equal(r.headers.etag, a.etag);
  r = await v1('GET', VOL, { volume: a.uid }, { headers: { 'if-none-match': a.etag } });
  assert.equal(r.status, 304);
  r = await v1('GET', VOL, { volume: 'nosuchvolume0000000a' });
  assert.equal(r.status, 404);
  assert.equal(r.json.code, 'notFound');
  r = await v1('GET', VOL, { volume: '..' });
  assert.ok([400, 404].includes(r.status), r.text);

  // createVolume's refusals
  for (const body of [{}, { displayName: '' }, { displayName: 'a/b' }, { displayName: '.' }, { displayName: '..' },
    { displayName: 'x'.repeat(257) }, { displayName: 'ok', size: 1 }, { displayName: 7 }]) {
    r = await v1('POST', VOLS, {}, { body });
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.json.code, 'invalidArgument');
  }

  // Idempotency-Key: one volume for one key; another payload is a 409
  const key = `vol-${Date.now()}`;
  const i1 = await v1('POST', VOLS, {}, { body: { displayName: 'idem' }, headers: { 'idempotency-key': key } });
  assert.equal(i1.status, 201, i1.text);
  volumes.add(i1.json.uid);
  const i2 = await v1('POST', VOLS, {}, { body: { displayName: 'idem' }, headers: { 'idempotency-key': key } });
  assert.equal(i2.status, 201, i2.text);
  assert.equal(i2.json.uid, i1.json.uid);
  const i3 = await v1('POST', VOLS, {}, { body: { displayName: 'other' }, headers: { 'idempotency-key': key } });
  assert.equal(i3.status, 409, i3.text);
  assert.equal(i3.json.code, 'failedPrecondition');

  // list: newest first, pages, filters, orderBy
  const b = await mkVolume('beta');
  const c = await mkVolume('beta');
  r = await v1('GET', VOLS);
  assert.equal(r.status, 200);
  const all = r.json.volumes.map((v) => v.uid);
  for (const id of [a.uid, b.uid, c.uid, i1.json.uid]) assert.ok(all.includes(id), id);
  assert.ok(all.indexOf(c.uid) < all.indexOf(a.uid), 'newest first');
  assert.equal(r.json.nextPageToken, '');
  const seen = [];
  let tok = '';
  for (let n = 0; n < 10; n++) {
    r = await v1('GET', VOLS, {}, { query: { pageSize: 1, pageToken: tok || undefined } });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.volumes.length <= 1);
    seen.push(...r.json.volumes.map((v) => v.uid));
    tok = r.json.nextPageToken;
    if (!tok) break;
  }
  assert.deepEqual(seen, all, 'pageSize 1 walks the same list once');
  r = await v1('GET', VOLS, {}, { query: { filter: 'display_name=beta' } });
  assert.deepEqual(r.json.volumes.map((v) => v.uid).sort(), [b.uid, c.uid].sort());
  r = await v1('GET', VOLS, {}, { query: { filter: `uid=${a.uid}` } });
  assert.deepEqual(r.json.volumes.map((v) => v.uid), [a.uid]);
  r = await v1('GET', VOLS, {}, { query: { filter: `name=volumes/${b.uid}` } });
  assert.deepEqual(r.json.volumes.map((v) => v.uid), [b.uid]);
  r = await v1('GET', VOLS, {}, { query: { orderBy: 'created_at asc' } });
  assert.ok(r.json.volumes.map((v) => v.uid).indexOf(a.uid) < r.json.volumes.map((v) => v.uid).indexOf(c.uid));
  r = await v1('GET', VOLS, {}, { query: { orderBy: 'name' } });
  const names = r.json.volumes.map((v) => v.name);
  assert.deepEqual(names, [...names].sort());
  for (const query of [{ filter: 'size=1' }, { filter: 'nope' }, { orderBy: 'size' }, { orderBy: 'name sideways' },
    { pageToken: 'bogus' }, { pageToken: `${tok}x` }]) {
    r = await v1('GET', VOLS, {}, { query });
    assert.equal(r.status, 400, `${JSON.stringify(query)}: ${r.text}`);
  }
  // a token is bound to its filter
  r = await v1('GET', VOLS, {}, { query: { pageSize: 1 } });
  assert.notEqual(r.json.nextPageToken, '');
  const t2 = await v1('GET', VOLS, {}, { query: { pageSize: 1, pageToken: r.json.nextPageToken, filter: 'display_name=beta' } });
  assert.equal(t2.status, 400);

  // deleteVolume: If-Match required (428), checked (412 with the current ETag), then 204, absent 204
  r = await v1('DELETE', VOL, { volume: b.uid });
  assert.equal(r.status, 428, r.text);
  assert.match(r.json.message, /^etag_required:/);
  r = await v1('DELETE', VOL, { volume: b.uid }, { headers: { 'if-match': '"stale"' } });
  assert.equal(r.status, 412, r.text);
  assert.match(r.json.message, /^etag_mismatch:/);
  assert.equal(r.json.details[0].currentEtag, b.etag);
  r = await v1('DELETE', VOL, { volume: b.uid }, { headers: { 'if-match': b.etag } });
  assert.equal(r.status, 204, r.text);
  volumes.delete(b.uid);
  assert.equal(fs.existsSync(volFile(b.uid)), false, 'its disk is gone');
  assert.equal((await v1('GET', VOL, { volume: b.uid })).status, 404);
  r = await v1('DELETE', VOL, { volume: b.uid }, { headers: { 'if-match': b.etag } });
  assert.equal(r.status, 204, 'an absent volume: 204');
  assert.ok(!(await v1('GET', VOLS)).json.volumes.some((v) => v.uid === b.uid));
});

test('permissions: volumesRead lists and reads, volumesWrite creates and deletes', { timeout: 60000 }, async () => {
  const org = `volperm-${Date.now()}`;
  await s.cli('roles', 'create', '--org', org, 'reader', '--perms', 'volumesRead');
  const reader = await s.newKey(org, 'reader');
  const owner = await s.newKey(org);
  let r = await v1('POST', VOLS, {}, { body: { displayName: 'x' }, key: reader });
  assert.equal(r.status, 403, r.text);
  r = await v1('POST', VOLS, {}, { body: { displayName: 'x' }, key: owner });
  assert.equal(r.status, 201, r.text);
  volumes.add(r.json.uid);
  const id = r.json.uid;
  r = await v1('GET', VOLS, {}, { key: reader });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.volumes.map((v) => v.uid), [id]);
  r = await v1('GET', VOL, { volume: id }, { key: reader });
  assert.equal(r.status, 200);
  r = await v1('DELETE', VOL, { volume: id }, { key: reader, headers: { 'if-match': r.json.etag } });
  assert.equal(r.status, 403, r.text);
  r = await v1('DELETE', VOL, { volume: id }, { key: owner, headers: { 'if-match': r.json?.etag ?? (await v1('GET', VOL, { volume: id }, { key: owner })).json.etag } });
  assert.equal(r.status, 204, r.text);
  volumes.delete(id);
});

test("another organization's volume is 404: not listed, not read, not deleted, not mounted", { timeout: 120000 }, async () => {
  const mine = await mkVolume('mine');
  const other = await s.newKey(`volother-${Date.now()}`);
  let r = await v1('GET', VOL, { volume: mine.uid }, { key: other });
  assert.equal(r.status, 404, r.text);
  r = await v1('GET', VOLS, {}, { key: other });
  assert.equal(r.status, 200);
  assert.ok(!r.json.volumes.some((v) => v.uid === mine.uid));
  r = await v1('DELETE', VOL, { volume: mine.uid }, { key: other, headers: { 'if-match': mine.etag } });
  assert.equal(r.status, 204, 'absent for them: 204, and nothing happened');
  assert.equal((await v1('GET', VOL, { volume: mine.uid })).status, 200);
  assert.ok(fs.existsSync(volFile(mine.uid)));
  r = await v1('POST', SBX, {}, { key: other, body: { image: 'images/alpine', features: { managedVolumes: { attachments: [{ volume: `volumes/${mine.uid}`, target: '/data' }] } } } });
  assert.equal(r.status, 404, r.text);
  assert.equal(r.json.code, 'notFound');
  assert.equal(r.json.details?.[0]?.fieldViolations?.[0]?.field ?? 'features.managedVolumes.attachments[0].volume', 'features.managedVolumes.attachments[0].volume');
  if (r.json.uid) sandboxes.add(r.json.uid);
  // and the owner can still attach it (the refused create claimed nothing)
  const c = await mkSandbox([{ volume: `volumes/${mine.uid}`, target: '/data' }]);
  assert.equal(c.status, 201, c.text);
  await rmSandbox(c.json.uid);
});

test('createSandbox checks the attachments before any effect', { timeout: 120000 }, async () => {
  const v = await mkVolume('checks');
  const w = await mkVolume('checks2');
  const V = `volumes/${v.uid}`;
  const before = (await s.api('GET', '/api/sandbox.list')).json.length;
  const bad = [
    [[{ volume: V, target: 'data' }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: '/' }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: '/data/' }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: '/a//b' }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: '/a/../etc' }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: '/a/./b' }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: '/proc' }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: '/proc/x' }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: '/sys/fs' }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: '/dev' }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: '/.sandpit' }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: '/.sandpit/p' }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: '/.sandpit-helper' }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: '/home/user' }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: '/tmp' }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: `/${'x'.repeat(300)}` }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: '/a\nb' }], 'features.managedVolumes.attachments[0].target'],
    [[{ volume: V, target: '/data' }, { volume: `volumes/${w.uid}`, target: '/data/sub' }], 'features.managedVolumes.attachments[1].target'],
    [[{ volume: V, target: '/data' }, { volume: `volumes/${w.uid}`, target: '/data' }], 'features.managedVolumes.attachments[1].target'],
    [[{ volume: V, target: '/data' }, { volume: V, target: '/mnt' }], 'features.managedVolumes.attachments'],
    [[{ volume: V, target: '/data', mode: 'shared' }], 'features.managedVolumes.attachments[0]'],
    [[{ volume: V, target: '/data', readOnly: true }], 'features.managedVolumes.attachments[0]'],
    [[{ volume: v.uid, target: '/data' }], 'features.managedVolumes.attachments[0]'],
    [[{ target: '/data' }], 'features.managedVolumes.attachments[0]'],
    [[], 'features.managedVolumes.attachments'],
  ];
  for (const [attachments, field] of bad) {
    const r = await mkSandbox(attachments);
    assert.equal(r.status, 400, `${JSON.stringify(attachments)}: ${r.text}`);
    assert.equal(r.json.code, 'invalidArgument');
    assert.equal(r.json.details[0].fieldViolations[0].field, field, JSON.stringify(attachments));
  }
  let r = await v1('POST', SBX, {}, { body: { image: 'images/alpine', features: { managedVolumes: { attachments: [{ volume: V, target: '/d' }], extra: 1 } } } });
  assert.equal(r.status, 400, r.text);
  r = await mkSandbox([{ volume: 'volumes/nosuchvolume0000000b', target: '/data' }]);
  assert.equal(r.status, 404, r.text);
  // the volumes are free still: nothing claimed them
  assert.equal((await s.api('GET', '/api/sandbox.list')).json.length, before);
  // below the workdir (the sandbox's own disk) and below a data folder is fine
  const x = await mkVolume('checks3');
  r = await mkSandbox([{ volume: V, target: '/data' }, { volume: `volumes/${w.uid}`, target: '/home/user/cache', mode: 'exclusive' },
    { volume: `volumes/${x.uid}`, target: '/mnt/x', mode: 'unspecified' }]);
  assert.equal(r.status, 201, r.text);
  assert.deepEqual(r.json.effectiveFeatures.managedVolumes.attachments, [
    { volume: V, volumeUid: v.uid, target: '/data', mode: 'exclusive' },
    { volume: `volumes/${w.uid}`, volumeUid: w.uid, target: '/home/user/cache', mode: 'exclusive' },
    { volume: `volumes/${x.uid}`, volumeUid: x.uid, target: '/mnt/x', mode: 'exclusive' },
  ]);
  const e = await exec(r.json.uid, 'for d in /data /home/user/cache /mnt/x; do echo $d > $d/f && cat $d/f; done; echo home > /home/user/h && cat /home/user/h');
  assert.equal(e.json.stdout, '/data\n/home/user/cache\n/mnt/x\nhome\n', e.text);
  assert.equal(e.json.exitCode, 0);
  const got = await v1('GET', ONE, { sandbox: r.json.uid });
  assert.deepEqual(got.json.effectiveFeatures.managedVolumes, r.json.effectiveFeatures.managedVolumes);
  // loop disks (volume_size_mb): the size is enforced, nothing is said not to be
  assert.equal(got.json.effectiveFeatures.managedVolumes.notEnforced, undefined);
  await rmSandbox(r.json.uid);
});

test('a volume written by one sandbox is read by the next after the first is deleted; deleting an attached volume is refused', { timeout: 180000 }, async () => {
  const v = await mkVolume('handoff');
  const V = `volumes/${v.uid}`;
  const a = await mkSandbox([{ volume: V, target: '/data' }]);
  assert.equal(a.status, 201, a.text);
  const A = a.json.uid;
  // the sandbox user writes the volume (its root is the user's)
  let r = await exec(A, 'id -u; stat -c %u:%g /data; echo from-a > /data/note && mkdir -p /data/d && echo deep > /data/d/f && cat /data/note');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.exitCode, 0, r.text);
  assert.equal(r.json.stdout, '1000\n1000:1000\nfrom-a\n');
  // it is the volume's loop disk, mounted read-write at /data
  const cid = (await s.api('GET', '/api/sandbox.one', { query: { sandboxId: A } })).json.containerId;
  const mounts = JSON.parse(execFileSync('docker', ['inspect', '-f', '{{json .Mounts}}', cid], { encoding: 'utf8' }));
  const m = mounts.find((x) => x.Destination === '/data');
  assert.ok(m, JSON.stringify(mounts));
  assert.equal(m.RW, true);
  assert.equal(loopsOf(v.uid).length, 1, JSON.stringify(mounts));

  // attached: a second sandbox may not have it, and it cannot be deleted
  r = await mkSandbox([{ volume: V, target: '/data' }]);
  assert.equal(r.status, 409, r.text);
  assert.equal(r.json.code, 'failedPrecondition');
  assert.match(r.json.message, /volume_attached/);
  r = await v1('DELETE', VOL, { volume: v.uid }, { headers: { 'if-match': v.etag } });
  assert.equal(r.status, 409, r.text);
  assert.equal(r.json.code, 'failedPrecondition');
  assert.match(r.json.message, /^deletion_content_lease_held: /);
  assert.equal((await v1('GET', VOL, { volume: v.uid })).status, 200);

  // the volume outlives its sandbox
  await rmSandbox(A);
  assert.equal((await v1('GET', VOL, { volume: v.uid })).status, 200);
  const b = await mkSandbox([{ volume: V, target: '/srv/state' }]);
  assert.equal(b.status, 201, b.text);
  r = await exec(b.json.uid, 'cat /srv/state/note /srv/state/d/f && echo from-b >> /srv/state/note && cat /srv/state/note');
  assert.equal(r.json.stdout, 'from-a\ndeep\nfrom-a\nfrom-b\n', r.text);
  await rmSandbox(b.json.uid);
  await rmVolume(v.uid);
  assert.equal((await dockerVolume(v.uid)).status, 404);
});

test('D8: a volume is a loop disk of volume_size_mb: ENOSPC past it, its data kept for the next sandbox, nothing left after deleteVolume', { timeout: 180000 }, async () => {
  const v = await mkVolume('sized');
  const V = `volumes/${v.uid}`;
  const a = await mkSandbox([{ volume: V, target: '/data' }]);
  assert.equal(a.status, 201, a.text);
  // 100 MiB into a 64 MiB volume: dd fails with ENOSPC at about 64 MiB
  let r = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: a.json.uid, cmd: 'echo kept > /data/note; dd if=/dev/zero of=/data/big bs=1M count=100 2>&1; echo "rc=$?"; stat -c %s /data/big', timeoutMs: 120000 }, timeoutMs: 180000 });
  assert.equal(r.status, 200, r.text);
  assert.match(r.json.stdout, /No space left on device/, r.text);
  const rc = Number(/rc=(\d+)/.exec(r.json.stdout)[1]);
  const bytes = Number(r.json.stdout.trim().split('\n').pop());
  assert.notEqual(rc, 0, r.text);
  assert.ok(bytes >= 40 * 1024 * 1024 && bytes <= 64 * 1024 * 1024, `wrote ${bytes} bytes`);
  // its disk: a file of 64 MiB in disk_dir/volumes, on a loop device of its own
  assert.equal(fs.statSync(volFile(v.uid)).size, 64 * 1024 * 1024);
  assert.equal(loopsOf(v.uid).length, 1);
  await rmSandbox(a.json.uid);
  // the next sandbox reads what the first wrote, and may free it
  const b = await mkSandbox([{ volume: V, target: '/srv/x' }]);
  assert.equal(b.status, 201, b.text);
  r = await exec(b.json.uid, 'cat /srv/x/note; stat -c %s /srv/x/big; rm /srv/x/big && echo 1 > /srv/x/small && echo ok');
  assert.equal(r.json.stdout, `kept\n${bytes}\nok\n`, r.text);
  await rmSandbox(b.json.uid);
  await rmVolume(v.uid);
  // no backing file, no loop device (a removed container's mount may take a moment)
  assert.equal(fs.existsSync(volFile(v.uid)), false);
  await waitFor(() => loopsOf(v.uid).length === 0, 30000);
});

test('exclusive under 20 parallel creates: exactly one wins; the volume is free again once it is deleted', { timeout: 300000 }, async () => {
  const v = await mkVolume('contended');
  const V = `volumes/${v.uid}`;
  const rs = await Promise.all(Array.from({ length: 20 }, () => mkSandbox([{ volume: V, target: '/data' }])));
  const won = rs.filter((r) => r.status === 201);
  assert.equal(won.length, 1, rs.map((r) => `${r.status} ${r.json?.message ?? ''}`).join('\n'));
  for (const r of rs.filter((x) => x.status !== 201)) {
    assert.equal(r.status, 409, r.text);
    assert.equal(r.json.code, 'failedPrecondition');
    assert.match(r.json.message, /volume_attached/);
  }
  // no loser left a container or a record behind
  const listed = (await v1('GET', SBX, {}, { query: { pageSize: 256 } })).json.sandboxes
    .filter((x) => x.effectiveFeatures.managedVolumes?.attachments.some((a) => a.volume === V));
  assert.deepEqual(listed.map((x) => x.uid), [won[0].json.uid]);
  // nor a loop device of the volume's disk: the winner's only
  assert.equal(loopsOf(v.uid).length, 1);
  await rmSandbox(won[0].json.uid);
  const again = await mkSandbox([{ volume: V, target: '/data' }]);
  assert.equal(again.status, 201, again.text);
  await rmSandbox(again.json.uid);
});

test('a volume survives stop and start; a failed holder does not keep it', { timeout: 180000 }, async () => {
  const v = await mkVolume('cycle');
  const V = `volumes/${v.uid}`;
  const a = await mkSandbox([{ volume: V, target: '/workspace' }]);
  assert.equal(a.status, 201, a.text);
  const A = a.json.uid;
  assert.equal((await exec(A, 'echo before > /workspace/f')).json.exitCode, 0);
  let r = await v1('POST', `${ONE}/stop`, { sandbox: A }, { body: {}, headers: { 'if-match': await etagOf(ONE, A) } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.core.status, 'stopped');
  assert.equal(r.json.effectiveFeatures.managedVolumes.attachments[0].target, '/workspace');
  // stopped still holds it
  r = await mkSandbox([{ volume: V, target: '/workspace' }]);
  assert.equal(r.status, 409, r.text);
  r = await v1('POST', `${ONE}/start`, { sandbox: A }, { body: {}, headers: { 'if-match': await etagOf(ONE, A) } });
  assert.equal(r.status, 200, r.text);
  r = await exec(A, 'cat /workspace/f && echo after >> /workspace/f && cat /workspace/f');
  assert.equal(r.json.stdout, 'before\nbefore\nafter\n', r.text);
  // a killed sandbox (failed) no longer holds it: the next create takes it over
  r = await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: A } });
  assert.equal(r.status, 200, r.text);
  const b = await mkSandbox([{ volume: V, target: '/workspace' }]);
  assert.equal(b.status, 201, b.text);
  r = await exec(b.json.uid, 'cat /workspace/f');
  assert.equal(r.json.stdout, 'before\nafter\n', r.text);
  await rmSandbox(b.json.uid);
  await rmSandbox(A);
  await rmVolume(v.uid);
});

test('a create that fails after claiming, or whose worker died, leaves the volume free', { timeout: 120000 }, async () => {
  const v = await mkVolume('leak');
  const V = `volumes/${v.uid}`;
  // the image lacks sh: the create fails after the claim, at the container's check
  let r = await v1('POST', SBX, {}, { body: { imageRef: await noShImage(), features: { managedVolumes: { attachments: [{ volume: V, target: '/data' }] } } } });
  assert.equal(r.status, 400, r.text);
  assert.match(r.json.message, /lacks sh/);
  const cli = (...a) => execFileSync('redis-cli', ['-s', `${s.dir}/redis.sock`, '--raw', ...a], { encoding: 'utf8', timeout: 10000 }).trim();
  const [key] = cli('--scan', '--pattern', `*:vol:${v.uid}`).split('\n');
  assert.ok(key, 'the record is in Redis');
  assert.equal(cli('HGET', key, 'holder'), '', 'nothing holds it');
  // a create whose worker died after the claim: its record is gone (or
  // reads failed), so the next create takes the volume over
  cli('HSET', key, 'holder', 'deadcreate0000000000');
  r = await mkSandbox([{ volume: V, target: '/data' }]);
  assert.equal(r.status, 201, r.text);
  assert.equal(cli('HGET', key, 'holder'), r.json.uid);
  await rmSandbox(r.json.uid);
  assert.equal(cli('HGET', key, 'holder'), '', 'deleteSandbox frees it');
  // a delete that died after marking it: taken over once the mark is stale
  cli('HSET', key, 'holder', `!del:${Date.now()}`);
  r = await mkSandbox([{ volume: V, target: '/data' }]);
  assert.equal(r.status, 409, r.text);
  assert.match(r.json.message, /volume_deleting/);
  cli('HSET', key, 'holder', `!del:${Date.now() - 120000}`);
  r = await mkSandbox([{ volume: V, target: '/data' }]);
  assert.equal(r.status, 201, r.text);
  await rmSandbox(r.json.uid);
  await rmVolume(v.uid);
});

test('stop_mode discard: the volume survives docker stop and start', { timeout: 180000 }, async () => {
  const d = await startStack({ env: { SANDPIT_RATE: '100r/s', SANDPIT_BURST: '50' }, extraConf: 'stop_mode = discard' });
  const made = [];
  let vid;
  try {
    const api = (m, p, o) => d.api(m, p, o);
    let r = await api('POST', VOLS, { body: { displayName: 'discard' } });
    assert.equal(r.status, 201, r.text);
    vid = r.json.uid;
    r = await api('POST', SBX, { body: { image: 'images/alpine', features: { managedVolumes: { attachments: [{ volume: `volumes/${vid}`, target: '/data' }] } } } });
    assert.equal(r.status, 201, r.text);
    const A = r.json.uid;
    made.push(A);
    assert.equal(r.json.effectiveFeatures.lifecycle.stopMemoryOutcome, 'discard');
    const ex = (cmd) => api('POST', '/api/sandbox.exec', { body: { sandboxId: A, cmd } });
    assert.equal((await ex('echo kept > /data/f')).json.exitCode, 0);
    const tag = async () => (await api('GET', `/v1/sandboxes/${A}`)).headers.etag;
    r = await api('POST', `/v1/sandboxes/${A}/stop`, { body: {}, headers: { 'if-match': await tag() } });
    assert.equal(r.status, 200, r.text);
    const cid = (await api('GET', '/api/sandbox.one', { query: { sandboxId: A } })).json.containerId;
    assert.equal(execFileSync('docker', ['inspect', '-f', '{{.State.Running}}', cid], { encoding: 'utf8' }).trim(), 'false');
    r = await api('POST', `/v1/sandboxes/${A}/start`, { body: {}, headers: { 'if-match': await tag() } });
    assert.equal(r.status, 200, r.text);
    r = await ex('cat /data/f');
    assert.equal(r.json.stdout, 'kept\n', r.text);
    r = await api('DELETE', `/v1/sandboxes/${A}`, { headers: { 'if-match': await tag() } });
    assert.equal(r.status, 204, r.text);
    made.pop();
    // the exited container (no AutoRemove) is removed by the delete or,
    // once its sandbox is gone, by deleteVolume
    const g = await api('GET', `${VOLS}/${vid}`);
    r = await api('DELETE', `${VOLS}/${vid}`, { headers: { 'if-match': g.headers.etag } });
    assert.equal(r.status, 204, r.text);
    vid = null;
  } finally {
    for (const id of made) await d.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
    if (vid) await d.docker('DELETE', `/volumes/sandpit-vol-${vid}`).catch(() => {});
    await d.stop();
  }
});

test('a holder past its expiry is caught up (its container ended) before the next sandbox takes the volume', { timeout: 120000 }, async () => {
  const v = await mkVolume('expiry');
  const V = `volumes/${v.uid}`;
  const a = await v1('POST', SBX, {}, { body: { image: 'images/alpine', features: { timeouts: { timeout: '15s' }, managedVolumes: { attachments: [{ volume: V, target: '/data' }] } } } });
  assert.equal(a.status, 201, a.text);
  sandboxes.add(a.json.uid);
  const cid = (await s.api('GET', '/api/sandbox.one', { query: { sandboxId: a.json.uid } })).json.containerId;
  // before its expiry it holds the volume
  let r = await mkSandbox([{ volume: V, target: '/data' }]);
  assert.equal(r.status, 409, r.text);
  // past its expiry by the record (createdAt + 15 s; nothing ran in it since)
  const wait = Date.parse(a.json.core.createdAt) + 16000 - Date.now();
  if (wait > 0) await new Promise((res) => setTimeout(res, wait));
  r = await mkSandbox([{ volume: V, target: '/data' }]);
  assert.equal(r.status, 201, r.text);
  // the first is failed now and its container gone: nothing else mounts it
  const st = await s.docker('GET', `/containers/${cid}/json`);
  assert.ok(st.status === 404 || st.json.State.Running === false, st.text);
  const g = await v1('GET', ONE, { sandbox: a.json.uid });
  assert.equal(g.json.core.status, 'failed', g.text);
  await rmSandbox(r.json.uid);
  await rmSandbox(a.json.uid);
  await rmVolume(v.uid);
});

// RELIABILITY H6 for the volume operations: hostile volume ids are a 4xx,
// never a 5xx, and on the wire (a recording proxy in front of the Docker
// socket) every volume request names only sandpit-vol-<20 [a-z0-9]> (or
// creates one), and none of the hostile strings reaches Docker.
test('H6: hostile volume ids get 4xx and never reach Docker; volume requests on the wire are the allowed ones', { timeout: 180000 }, async () => {
  assert.equal((await v1('GET', VOLS)).status, 200); // (after() wants one checked answer)
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sp-vol-h6-'));
  const proxy = await dockerProxy(dir);
  // disk_limit = off: named volumes (no loop disk), whose Docker requests are checked
  const d = await startStack({ env: { SANDPIT_DOCKER_HOST: `unix://${proxy.sock}`, SANDPIT_RATE: '2000r/s', SANDPIT_BURST: '2000' }, extraConf: 'disk_limit = off' });
  const made = [];
  let vid;
  try {
    let r = await d.api('POST', VOLS, { body: { displayName: 'wire' } });
    assert.equal(r.status, 201, r.text);
    vid = r.json.uid;
    r = await d.api('POST', SBX, { body: { image: 'images/alpine', features: { managedVolumes: { attachments: [{ volume: `volumes/${vid}`, target: '/data' }] } } } });
    assert.equal(r.status, 201, r.text);
    made.push(r.json.uid);
    const evil = ['../', '..', '../../etc', 'a?b=1', 'a#b', '%2F', '%2e%2e', '&force=1', '%00', 'a\nb', '\r\nHost: x', 'a b',
      'x'.repeat(10240), `${vid}/../x`, `${vid}?force=1`, `${vid}%2F..`, `sandpit-vol-${vid}`, `${vid.toUpperCase()}`, `${vid}x`];
    for (const e of evil) {
      for (const [m, o] of [['GET', {}], ['DELETE', { headers: { 'if-match': '"x"' } }]]) {
        const res = await d.api(m, `${VOLS}/${encodeURIComponent(e)}`, o);
        assert.ok(res.status >= 400 && res.status < 500 || (m === 'DELETE' && res.status === 204), `${m} ${JSON.stringify(e.slice(0, 40))}: ${res.status} ${res.text.slice(0, 200)}`);
      }
      const c = await d.api('POST', SBX, { body: { image: 'images/alpine', features: { managedVolumes: { attachments: [{ volume: `volumes/${e}`, target: '/data' }] } } } });
      assert.ok(c.status >= 400 && c.status < 500, `attach ${JSON.stringify(e.slice(0, 40))}: ${c.status} ${c.text.slice(0, 200)}`);
      const l = await d.api('GET', VOLS, { query: { filter: `uid=${e}` } });
      assert.ok(l.status === 200 || l.status === 400, l.text.slice(0, 200));
    }
    // the delete of the attached volume, the sandbox's, the volume's
    const tag = async (p) => (await d.api('GET', p)).headers.etag;
    r = await d.api('DELETE', `${VOLS}/${vid}`, { headers: { 'if-match': await tag(`${VOLS}/${vid}`) } });
    assert.equal(r.status, 409, r.text);
    r = await d.api('DELETE', `${SBX}/${made[0]}`, { headers: { 'if-match': await tag(`${SBX}/${made[0]}`) } });
    assert.equal(r.status, 204, r.text);
    made.pop();
    r = await d.api('DELETE', `${VOLS}/${vid}`, { headers: { 'if-match': await tag(`${VOLS}/${vid}`) } });
    assert.equal(r.status, 204, r.text);
    vid = null;
    const vols = proxy.log.filter((x) => /\/volumes(\/|$|\?)/.test(x.url.split('?')[0]) || /filters=.*volume/.test(decodeURIComponent(x.url)));
    assert.ok(vols.some((x) => x.method === 'POST'), 'the create went through the proxy');
    for (const x of vols) {
      const [p, q = ''] = x.url.split(/\?(.*)/s);
      const rest = p.replace(/^\/v1\.\d+(?=\/)/, '');
      const ok = (x.method === 'POST' && rest === '/volumes/create' && q === '') ||
        (['GET', 'DELETE'].includes(x.method) && /^\/volumes\/sandpit-vol-[a-z0-9]{20}$/.test(rest) && q === '') ||
        // the reaper's sweep: this installation's volumes
        (x.method === 'GET' && rest === '/volumes' && /^filters=[A-Za-z0-9%._~-]+$/.test(q) &&
          /^\{"label":\["sandpit\.install=[A-Za-z0-9]+"\]\}$/.test(decodeURIComponent(q.slice(8)))) ||
        (x.method === 'GET' && rest === '/containers/json' && /^all=1&filters=[A-Za-z0-9%._~-]+$/.test(q) &&
          /^\{"volume":\["sandpit-vol-[a-z0-9]{20}"\]\}$/.test(decodeURIComponent(q.split('filters=')[1])));
      assert.ok(ok, `${x.method} ${x.url.slice(0, 200)}`);
    }
    for (const x of proxy.log) {
      const u = decodeURIComponent(x.url);
      for (const e of ['../', 'a b', 'a#b', '\n', 'x'.repeat(100), 'Host: x']) assert.ok(!u.includes(e), `${x.method} ${x.url.slice(0, 200)} holds ${JSON.stringify(e)}`);
    }
    assert.ok(proxy.log.every((x) => x.status !== -1), 'Docker answered every request');
  } finally {
    for (const id of made) await d.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
    if (vid) await s.docker('DELETE', `/volumes/sandpit-vol-${vid}`).catch(() => {});
    await d.stop();
    await proxy.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test("the reaper removes this installation's Docker volumes and volume disks that no record names (a createVolume that died before its record), and only those", { timeout: 180000 }, async () => {
  assert.equal((await v1('GET', VOLS)).status, 200); // (after() wants one checked answer)
  // the sweep's age: create_timeout_s + 2 x docker_timeout_s = 5 + 10 s
  // disk_limit = off: named volumes, as where loop disks are not possible
  const dd = await mkdtemp(path.join(os.tmpdir(), 'sp-vol-sweep-'));
  const d = await startStack({ extraConf: ['create_timeout_s = 5', 'docker_timeout_s = 5', 'reaper_interval_s = 1', 'disk_limit = off', `disk_dir = ${dd}`] });
  const orphan = `orphan${Date.now().toString(36)}`.padEnd(20, '0').slice(0, 20);
  let kept;
  try {
    let r = await d.api('POST', VOLS, { body: { displayName: 'kept' } });
    assert.equal(r.status, 201, r.text);
    kept = r.json.uid;
    const labels = (await d.docker('GET', `/volumes/sandpit-vol-${kept}`)).json.Labels;
    // what a worker killed between Docker's create and the record leaves
    r = await d.docker('POST', '/volumes/create', { Name: `sandpit-vol-${orphan}`, Driver: 'local', Labels: { ...labels, 'sandpit.volumeId': orphan } });
    assert.equal(r.status, 201, r.text);
    // another installation's is never touched (its labels name another install)
    r = await d.docker('POST', '/volumes/create', { Name: `sandpit-vol-${orphan.slice(0, 19)}x`, Driver: 'local', Labels: { ...labels, 'sandpit.volumeId': `${orphan.slice(0, 19)}x`, 'sandpit.install': 'someoneelse' } });
    assert.equal(r.status, 201, r.text);
    // the same for volume disks (disk_dir/volumes/<uid>.img, whose xattr
    // user.sandpit names the installation and the org): the orphan's goes,
    // one with a record stays, another installation's stays
    const vd = path.join(dd, 'volumes');
    fs.mkdirSync(vd, { recursive: true });
    const plant = (id, install) => {
      const f = path.join(vd, `${id}.img`);
      fs.writeFileSync(f, 'x');
      execFileSync('python3', ['-c', 'import os,sys; os.setxattr(sys.argv[1], "user.sandpit", sys.argv[2].encode())', f, `${install} ${labels['sandpit.organizationId']}`]);
      return f;
    };
    const fOrphan = plant(orphan, labels['sandpit.install']);
    const fKept = plant(kept, labels['sandpit.install']);
    const fOther = plant(`${orphan.slice(0, 19)}x`, 'someoneelse');
    const t0 = Date.now();
    await waitFor(async () => (await d.docker('GET', `/volumes/sandpit-vol-${orphan}`)).status === 404, 90000, 1000);
    await waitFor(() => !fs.existsSync(fOrphan), 30000, 500);
    assert.ok(fs.existsSync(fKept), 'a volume disk with a record stays');
    assert.ok(fs.existsSync(fOther), "another installation's volume disk stays");
    assert.ok(Date.now() - t0 > 8000, 'not before its age');
    assert.equal((await d.docker('GET', `/volumes/sandpit-vol-${kept}`)).status, 200, 'a volume with a record stays');
    assert.equal((await d.docker('GET', `/volumes/sandpit-vol-${orphan.slice(0, 19)}x`)).status, 200, "another installation's stays");
    const g = await d.api('GET', `${VOLS}/${kept}`);
    assert.equal(g.status, 200);
    r = await d.api('DELETE', `${VOLS}/${kept}`, { headers: { 'if-match': g.headers.etag } });
    assert.equal(r.status, 204, r.text);
    kept = null;
  } finally {
    for (const n of [orphan, `${orphan.slice(0, 19)}x`, kept].filter(Boolean)) await d.docker('DELETE', `/volumes/sandpit-vol-${n}`).catch(() => {});
    await d.stop();
    await rm(dd, { recursive: true, force: true });
  }
});

test('at most 256 volumes per organization: the next is a 429 resourceExhausted and leaves no disk', { timeout: 300000 }, async () => {
  const files = () => fs.readdirSync(path.join(diskDir, 'volumes')).length;
  const before = files();
  const org = `volmax-${Date.now()}`;
  const key = await s.newKey(org);
  const mine = [];
  const batch = async (n) => (await Promise.all(Array.from({ length: n }, () => s.api('POST', VOLS, { key, body: { displayName: 'n' } }))));
  try {
    for (let i = 0; i < 256; i += 32) {
      for (const r of await batch(32)) {
        assert.equal(r.status, 201, r.text);
        mine.push(r.json.uid);
      }
    }
    const r = await v1('POST', VOLS, {}, { key, body: { displayName: 'one too many' } });
    assert.equal(r.status, 429, r.text);
    assert.equal(r.json.code, 'resourceExhausted');
    assert.equal(files(), before + 256, 'the refused one left no disk');
    const l = await v1('GET', VOLS, {}, { key, query: { pageSize: 1000 } });
    assert.equal(l.json.volumes.length, 256);
    assert.equal(l.json.nextPageToken, '');
  } finally {
    for (let i = 0; i < mine.length; i += 32)
      await Promise.all(mine.slice(i, i + 32).map(async (id) => {
        const g = await s.api('GET', `${VOLS}/${id}`, { key });
        if (g.status === 200) await s.api('DELETE', `${VOLS}/${id}`, { key, headers: { 'if-match': g.headers.etag } });
        await s.docker('DELETE', `/volumes/sandpit-vol-${id}`).catch(() => {});
      }));
  }
});
