// Issue 24, D8: the host's free-space floor (disk_reserve_mb) has no way
// around it. The stack's floor is set 1200 MiB under what the host has free
// now (its own disk_dir, so only this stack's loop disks count), and:
// - sparse loop disks may not promise more than disk_overcommit_pct (100)
//   of the free space above the floor plus what they use: a second 800 MiB
//   disk beside a first is refused, on the Dokploy face and on /v1, each in
//   its own shape (503, naming disk_overcommit_pct);
// - a managed volume is a loop disk of volume_size_mb (1024): a
//   createVolume past disk_overcommit_pct is refused (503) and leaves no
//   file, and a volume's file counts against later creates while it is
//   not attached;
// - a snapshot whose workdir's used bytes would take the host below the
//   floor is refused at once (429 resourceExhausted, naming the floor);
// - a snapshot of a sparse file (no blocks used, so it passes that check)
//   stops once its copy passes what the floor leaves, and fails naming it.
// Nothing here fills the host: each case writes at most 800 MiB.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startStack, waitFor } from './lib/stack.mjs';

const MiB = 1024 * 1024;
const DOCKER_ROOT = '/var/lib/docker';
const HEADROOM = 1200;
const freeMb = (p) => { const st = fs.statfsSync(p); return Math.floor((st.bavail * st.bsize) / MiB); };

let s, diskDir, floorMb;
const made = [];
const snaps = [];
const vols = [];

before(async () => {
  diskDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandpit-floor-'));
  floorMb = Math.min(freeMb(DOCKER_ROOT), freeMb(diskDir)) - HEADROOM;
  assert.ok(floorMb > 0, `the host needs more than ${HEADROOM} MiB free for this test`);
  s = await startStack({ extraConf: [`disk_dir = ${diskDir}`, `disk_reserve_mb = ${floorMb}`] });
});
after(async () => {
  for (const id of snaps) {
    const t0 = Date.now();
    let r;
    do {
      r = await s?.api('GET', `/v1/snapshots/${id}`).catch(() => null);
      if (r?.json?.status === 'creating') await new Promise((ok) => setTimeout(ok, 500));
    } while (r?.json?.status === 'creating' && Date.now() - t0 < 300000);
    if (r?.status === 200) await s.api('DELETE', `/v1/snapshots/${id}`, { headers: { 'if-match': r.headers.etag } }).catch(() => {});
    try { execFileSync('docker', ['rmi', '-f', `sandpit-snapshot:${id}`], { stdio: 'ignore' }); } catch { /* gone */ }
  }
  for (const id of made) await remove(id).catch(() => {});
  for (const id of vols) {
    const g = await s?.api('GET', `/v1/volumes/${id}`).catch(() => null);
    if (g?.status === 200) await s.api('DELETE', `/v1/volumes/${id}`, { headers: { 'if-match': g.headers.etag } }).catch(() => {});
  }
  await s?.stop();
  fs.rmSync(diskDir, { recursive: true, force: true });
});

async function remove(id) {
  await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } });
  // its loop disk goes with its container
  await waitFor(() => !fs.readdirSync('/sys/block').some((d) => {
    try { return fs.readFileSync(`/sys/block/${d}/loop/backing_file`, 'utf8').includes(id); } catch { return false; }
  }), 30000);
}
async function create(body) {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', memoryMb: 256, ...body } });
  assert.equal(c.status, 200, c.text);
  made.push(c.json.sandboxId);
  return c.json.sandboxId;
}
async function sh(id, cmd) {
  const r = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd, timeoutMs: 120000 }, timeoutMs: 180000 });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.exitCode, 0, r.text);
  return r.json.stdout;
}

test('D8: sparse disks may not promise more than disk_overcommit_pct of the free space above the floor', async () => {
  const a = await create({ diskMb: 800 });
  // a second 800 MiB disk: 1600 MiB promised where 1200 are free above the floor
  const dk = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', diskMb: 800 } });
  if (dk.status === 200) made.push(dk.json.sandboxId);
  assert.equal(dk.status, 503, dk.text);
  assert.match(dk.json.message, /disk_overcommit_pct/, dk.text);
  // /v1 (its default disk, 1024 MiB), in its own shape
  const v1 = await s.api('POST', '/v1/sandboxes', { body: { image: 'images/alpine' } });
  if (v1.status === 201) made.push(v1.json.uid);
  assert.equal(v1.status, 503, v1.text);
  assert.equal(v1.json.code, 'unavailable', v1.text);
  assert.match(v1.json.message, /disk_overcommit_pct/, v1.text);
  // a small one still fits
  const small = await create({ diskMb: 64 });
  await remove(small);
  await remove(a);
});

test('D8: a managed volume is a disk of volume_size_mb: createVolume past disk_overcommit_pct is refused, its file counts against creates', async () => {
  const volDir = path.join(diskDir, 'volumes');
  const files = () => (fs.existsSync(volDir) ? fs.readdirSync(volDir) : []);
  const a = await create({ diskMb: 800 });
  // 800 + 1024 MiB promised where 1200 are free above the floor
  let r = await s.api('POST', '/v1/volumes', { body: { displayName: 'too much' } });
  if (r.status === 201) vols.push(r.json.uid);
  assert.equal(r.status, 503, r.text);
  assert.equal(r.json.code, 'unavailable', r.text);
  assert.match(r.json.message, /disk_overcommit_pct/, r.text);
  assert.deepEqual(files(), [], 'the refused one left no file');
  await remove(a);
  // alone it fits; unattached, its 1024 MiB leave no room for an 800 MiB disk
  r = await s.api('POST', '/v1/volumes', { body: { displayName: 'fits' } });
  assert.equal(r.status, 201, r.text);
  const vid = r.json.uid;
  vols.push(vid);
  assert.deepEqual(files(), [`${vid}.img`]);
  const dk = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', diskMb: 800 } });
  if (dk.status === 200) made.push(dk.json.sandboxId);
  assert.equal(dk.status, 503, dk.text);
  assert.match(dk.json.message, /disk_overcommit_pct/, dk.text);
  // deleted: no file, and the disk fits again
  const g = await s.api('GET', `/v1/volumes/${vid}`);
  r = await s.api('DELETE', `/v1/volumes/${vid}`, { headers: { 'if-match': g.headers.etag } });
  assert.equal(r.status, 204, r.text);
  vols.pop();
  assert.deepEqual(files(), []);
  await remove(await create({ diskMb: 800 }));
});

test('D8: a snapshot whose workdir\'s used bytes would take the host below the floor is refused', async () => {
  const b = await create({ diskMb: 1024 });
  // 800 MiB written: 400 MiB left above the floor, less than a capture takes
  await sh(b, 'head -c 838860800 /dev/zero > real && sync');
  const r = await s.api('POST', `/v1/sandboxes/${b}/snapshots`, { body: { displayName: 'too big' } });
  if (r.status === 202) snaps.push(r.json.uid);
  assert.equal(r.status, 429, r.text);
  assert.equal(r.json.code, 'resourceExhausted', r.text);
  assert.match(r.json.message, /disk_reserve_mb/, r.text);
  // nothing was made: no snapshot record
  const list = await s.api('GET', '/v1/snapshots');
  assert.equal(list.status, 200, list.text);
  assert.equal((list.json.snapshots ?? []).length, 0, list.text);
  await remove(b);
});

test('D8: a snapshot of a sparse file stops once its copy passes what the floor leaves', { timeout: 300000 }, async () => {
  const c = await create({ diskMb: 1024 });
  await sh(c, 'truncate -s 3000M sparse && echo small > f');
  const r = await s.api('POST', `/v1/sandboxes/${c}/snapshots`, { body: { displayName: 'sparse' } });
  assert.equal(r.status, 202, r.text);
  snaps.push(r.json.uid);
  let last;
  await waitFor(async () => {
    last = await s.api('GET', `/v1/snapshots/${r.json.uid}`);
    return last.json?.status !== 'creating';
  }, 240000, 500);
  assert.equal(last.json.status, 'failed', last.text);
  assert.match(JSON.stringify(last.json), /disk_reserve_mb/, last.text);
  // the host is above its floor again, the source runs on
  assert.ok(freeMb(DOCKER_ROOT) > floorMb, `${freeMb(DOCKER_ROOT)} MiB free, floor ${floorMb}`);
  assert.equal((await sh(c, 'cat f')).trim(), 'small');
  await remove(c);
});
