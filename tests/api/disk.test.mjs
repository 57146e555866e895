// RELIABILITY A3 (issue 12): a sandbox's disk is bounded in bytes and inodes
// (diskMb: the workdir on a loop-backed ext4 of its own, the image read-only,
// /tmp and /var/tmp bounded tmpfs), what a disk leaves on the host is gone
// when the sandbox ends or its create fails, and creates are refused (503
// naming the reserve) while the host is below its floor. Runs under runc and
// under gVisor (SANDPIT_TEST_RUNTIME=gvisor).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack, waitFor } from './lib/stack.mjs';
import { docker, noShImage, removeNoShImage } from './lib/docker.mjs';

const GVISOR = process.env.SANDPIT_TEST_RUNTIME === 'gvisor';
const MiB = 1024 * 1024;
const DOCKER_ROOT = '/var/lib/docker';
const freeMb = (p) => { const s = fs.statfsSync(p); return Math.floor((s.bavail * s.bsize) / MiB); };

let s, diskDir, floorMb;
const made = [];
before(async () => {
  diskDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandpit-disk-'));
  // the floor 3 GiB under what the host has free now: a sandbox that could
  // write past its limit would take the host through it in this test
  floorMb = Math.min(freeMb(DOCKER_ROOT), freeMb(diskDir)) - 3072;
  assert.ok(floorMb > 0, 'the host needs more than 3 GiB free for this test');
  s = await startStack({ extraConf: [`disk_dir = ${diskDir}`, `disk_reserve_mb = ${floorMb}`] });
});
after(async () => {
  await removeNoShImage();
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await s?.stop();
  fs.rmSync(diskDir, { recursive: true, force: true });
});

async function create(body) {
  const c = await s.api('POST', '/api/sandbox.create', { body });
  assert.equal(c.status, 200, c.text);
  made.push(c.json.sandboxId);
  return c.json;
}
const exec = (id, cmd, o = {}) => s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd, timeoutMs: 120000, ...o } });
const inspect = async (cid) => (await docker('GET', `/containers/${cid}/json`)).json;
// the loop devices whose backing file is in dir
function loopsIn(dir) {
  const out = [];
  for (const d of fs.readdirSync('/sys/block').filter((n) => n.startsWith('loop'))) {
    try {
      const b = fs.readFileSync(`/sys/block/${d}/loop/backing_file`, 'utf8').trim();
      if (b.startsWith(dir + '/')) out.push(`${d} ${b}`);
    } catch { /* not attached */ }
  }
  return out;
}

test('A3: the record and the container show the disk: a loop ext4 at the workdir, the image read-only, /tmp bounded', async () => {
  // alpine (busybox): runsc 20221219 answers coreutils' statx with EINVAL
  const sb = await create({ template: 'alpine', diskMb: 64 });
  assert.equal(sb.diskMb, 64);
  const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.sandboxId } });
  assert.equal(one.json.diskMb, 64);
  const hc = (await inspect(sb.containerId)).HostConfig;
  assert.equal(hc.ReadonlyRootfs, true);
  // the disk, and the helper's volume, read-only (v1-process.test.mjs)
  assert.deepEqual(hc.Mounts.map((x) => x.Target).sort(), ['/.sandpit-helper', '/home/user']);
  assert.equal(hc.Mounts.find((x) => x.Target === '/.sandpit-helper').ReadOnly, true);
  const m = hc.Mounts.find((x) => x.Target === '/home/user');
  assert.equal(m.Type, 'volume');
  assert.equal(m.Target, '/home/user');
  assert.equal(m.VolumeOptions.DriverConfig.Name, 'local');
  assert.equal(m.VolumeOptions.DriverConfig.Options.type, 'ext4');
  assert.match(m.VolumeOptions.DriverConfig.Options.device, /^\/dev\/loop\d+$/);
  assert.match(m.VolumeOptions.DriverConfig.Options.o, /nosuid/);
  assert.match(m.VolumeOptions.DriverConfig.Options.o, /nodev/);
  assert.match(hc.Tmpfs['/tmp'], /size=64m/);
  assert.match(hc.Tmpfs['/var/tmp'], /size=64m/);
  // the workdir is the sandbox user's, with no lost+found; the backing file
  // is already unlinked (the kernel frees it when the container ends)
  const r = await exec(sb.sandboxId, 'stat -c "%u:%g %a" .; ls -A; df -k . | tail -1');
  assert.equal(r.status, 200, r.text);
  const [owner, ...rest] = r.json.stdout.trim().split('\n');
  assert.equal(owner, '1000:1000 755');
  assert.ok(!rest.join('\n').includes('lost+found'), r.json.stdout);
  const sizeK = Number(rest.at(-1).trim().split(/\s+/)[1]);
  assert.ok(sizeK > 40 * 1024 && sizeK <= 64 * 1024, `workdir filesystem of ${sizeK} KiB`);
  assert.deepEqual(fs.readdirSync(diskDir), []);
  const dev = path.basename(m.VolumeOptions.DriverConfig.Options.device);
  assert.match(fs.readFileSync(`/sys/block/${dev}/loop/backing_file`, 'utf8'), /\(deleted\)/);
});

test('A3: a write past diskMb gets ENOSPC, the sandbox stays usable and the host stays above its floor', async () => {
  const sb = await create({ template: 'alpine', diskMb: 64, memoryMb: 256 });
  const before = freeMb(DOCKER_ROOT);
  // 4 GiB asked: more than the 3 GiB between the host's free space and the
  // floor (dd stops at the first failed write; a writer that goes on after
  // ENOSPC only spends its own CPU)
  const r = await exec(sb.sandboxId, 'dd if=/dev/zero of=big bs=1M count=4096; echo "rc=$?"; wc -c <big');
  assert.equal(r.status, 200, r.text);
  assert.match(r.json.stdout, /^rc=1\n/);
  assert.match(r.json.stderr, /No space left on device/);
  const size = Number(r.json.stdout.split('\n')[1]);
  assert.ok(size > 40 * MiB && size <= 64 * MiB, `the file reached ${size} bytes`);
  const after = freeMb(DOCKER_ROOT);
  assert.ok(after >= floorMb, `host free ${after} MiB, floor ${floorMb} MiB`);
  assert.ok(before - after < 512, `the host lost ${before - after} MiB`);
  // /tmp and /var/tmp are bounded too, and the image's own files are read-only
  const t = await exec(sb.sandboxId, 'dd if=/dev/zero of=/tmp/big bs=1M count=1024 2>/dev/null; echo "rc=$?"; wc -c </tmp/big; rm /tmp/big; dd if=/dev/zero of=/var/tmp/big bs=1M count=1024 2>/dev/null; echo "rc=$?"; rm /var/tmp/big');
  assert.equal(t.status, 200, t.text);
  const [rc1, tsize, rc2] = (t.json.stdout ?? '').trim().split('\n');
  assert.equal(rc1, 'rc=1');
  assert.ok(Number(tsize) <= 64 * MiB, `/tmp took ${tsize} bytes: ${t.text}`);
  assert.equal(rc2, 'rc=1');
  assert.ok(freeMb(DOCKER_ROOT) >= floorMb);
  // usable again once the caller frees its space
  const u = await exec(sb.sandboxId, 'rm big && echo again > f && cat f');
  assert.equal(u.json.stdout, 'again\n', u.text);
  const w = await s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: sb.sandboxId, path: '/home/user/w.txt', content: 'x' } });
  assert.equal(w.status, 200, w.text);
});

test('A3: an image whose user is root cannot write outside the workdir, /tmp and /var/tmp either', async () => {
  const sb = await create({ image: 'sandpit-test/busybox:latest', diskMb: 32, workdir: '/work' });
  assert.equal(sb.diskMb, 32);
  const r = await exec(sb.sandboxId, 'id -u; for p in /etc/x /usr/x /x /root/x; do echo y > $p 2>/dev/null && echo "wrote $p"; done; echo in > /work/a && echo > /tmp/a && cat /work/a');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.stdout, '0\nin\n');
  const st = await exec(sb.sandboxId, 'stat -c "%u:%g" /work; df -k /work | tail -1');
  assert.match(st.json.stdout, /^0:0\n/);
});

test('A3: a named image user gets the disk\'s root folder (owner resolved after create)', async () => {
  const base = await docker('POST', '/containers/create', { Image: 'sandpit-test/busybox:latest', Cmd: ['true'] });
  assert.equal(base.status, 201, base.text);
  const commit = await docker('POST', `/commit?container=${base.json.Id}&repo=sandpit-test/busybox-disknamed&tag=latest&changes=${encodeURIComponent('USER user')}`);
  assert.equal(commit.status, 201, commit.text);
  await docker('DELETE', `/containers/${base.json.Id}`);
  let sb;
  try {
    sb = await create({ image: 'sandpit-test/busybox-disknamed:latest', workdir: '/work', diskMb: 32 });
    const r = await exec(sb.sandboxId, 'id -u; stat -c "%u:%g %a" /work; echo x > /work/f && cat /work/f');
    assert.equal(r.json.stdout, '1000\n1000:1000 755\nx\n', r.text);
  } finally {
    if (sb) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: sb.sandboxId } });
    await docker('DELETE', '/images/sandpit-test/busybox-disknamed:latest?force=1');
  }
});

test('A3: a custom workdir the image lacks is writable by the sandbox user (Docker made it root\'s before its copy-up)', async () => {
  // Docker creates a WorkingDir missing from the image as root's 0755 and
  // its volume copy-up then gives the disk's root that owner; sandpit sets
  // the root's owner after create. A template, a numeric and a named user.
  const imgs = [];
  for (const [user, tag] of [['1000:1000', 'numeric'], ['user', 'named']]) {
    const base = await docker('POST', '/containers/create', { Image: 'sandpit-test/busybox:latest', Cmd: ['true'] });
    assert.equal(base.status, 201, base.text);
    const commit = await docker('POST', `/commit?container=${base.json.Id}&repo=sandpit-test/busybox-disk${tag}&tag=latest&changes=${encodeURIComponent(`USER ${user}`)}`);
    await docker('DELETE', `/containers/${base.json.Id}`);
    assert.equal(commit.status, 201, commit.text);
    imgs.push(`sandpit-test/busybox-disk${tag}:latest`);
  }
  const ids = [];
  try {
    for (const body of [{ template: 'alpine' }, { image: imgs[0] }, { image: imgs[1] }]) {
      const c = await s.api('POST', '/api/sandbox.create', { body: { ...body, workdir: '/srv/work', diskMb: 32 } });
      assert.equal(c.status, 200, c.text);
      ids.push(c.json.sandboxId);
      const r = await exec(c.json.sandboxId, 'id -u; stat -c "%u:%g %a" /srv/work; cd && pwd && echo x > f && cat f && df -k . | tail -1');
      assert.equal(r.status, 200, r.text);
      assert.match(r.json.stdout, /^1000\n1000:1000 755\n\/srv\/work\nx\n/, `${JSON.stringify(body)}: ${r.text}`);
      // and the folder is the disk, not the read-only image
      assert.match(r.json.stdout, /\/srv\/work\n$/, r.text);
    }
  } finally {
    for (const id of ids) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } });
    for (const img of imgs) await docker('DELETE', `/images/${img}?force=1`);
  }
});

test('A3: an inode fill (many small files) stops at the disk\'s inode count', async () => {
  const sb = await create({ template: 'python', diskMb: 32 }); // 32 MiB / 16 KiB = 2048 inodes
  const fill = (dir) => `mkdir -p ${dir} && cd ${dir} && i=0; while [ $i -lt 100000 ]; do true > f$i 2>/dev/null || break; i=$((i+1)); done; echo $i`;
  const r = await exec(sb.sandboxId, fill('/home/user/many'));
  assert.equal(r.status, 200, r.text);
  const n = Number(r.json.stdout.trim());
  assert.ok(n > 1900 && n < 2048, `${n} files made in the workdir: ${r.text}`);
  if (!GVISOR) {
    // gVisor's tmpfs does not take nr_inodes: there /tmp's files count
    // against memoryMb instead (README "Disk limits")
    const t = await exec(sb.sandboxId, fill('/tmp/many'));
    const m = Number(t.json.stdout.trim());
    assert.ok(m > 1900 && m < 2048, `${m} files made in /tmp`);
  }
  const u = await exec(sb.sandboxId, 'rm -r /home/user/many && echo ok > g && cat g');
  assert.equal(u.json.stdout, 'ok\n', u.text);
});

test('A3: cleanup: when the sandbox ends, its loop device, file and volume are gone', async () => {
  const sb = await create({ template: 'python', diskMb: 32 });
  const m = (await inspect(sb.containerId)).HostConfig.Mounts.find((x) => x.Target === '/home/user');
  const dev = path.basename(m.VolumeOptions.DriverConfig.Options.device);
  const vols = await docker('GET', `/volumes?filters=${encodeURIComponent(JSON.stringify({ label: [`sandpit.sandboxId=${sb.sandboxId}`] }))}`);
  assert.equal(vols.json.Volumes.length, 1);
  const k = await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: sb.sandboxId } });
  assert.equal(k.status, 200, k.text);
  await waitFor(async () => (await docker('GET', `/containers/${sb.containerId}/json`)).status === 404, 30000);
  await waitFor(() => {
    try { return !fs.readFileSync(`/sys/block/${dev}/loop/backing_file`, 'utf8').includes(sb.sandboxId); } catch { return true; }
  }, 30000);
  await waitFor(async () => {
    const v = await docker('GET', `/volumes?filters=${encodeURIComponent(JSON.stringify({ label: [`sandpit.sandboxId=${sb.sandboxId}`] }))}`);
    return v.json.Volumes.length === 0;
  }, 30000);
  assert.deepEqual(fs.readdirSync(diskDir), []);
  assert.ok(!loopsIn(diskDir).some((l) => l.includes(sb.sandboxId)));
});

test('A3: a create that fails after its disk was made leaves no loop device and no file', async () => {
  const loops = loopsIn(diskDir);
  // an image without sh: refused after the container exists
  const c = await s.api('POST', '/api/sandbox.create', { body: { image: await noShImage(), diskMb: 32 } });
  assert.equal(c.status, 400, c.text);
  assert.match(c.json.message, /lacks sh/);
  assert.deepEqual(fs.readdirSync(diskDir), []);
  // none new (one of an earlier sandbox may have gone meanwhile)
  assert.deepEqual(loopsIn(diskDir).filter((l) => !loops.includes(l)), []);
});

test('A3: diskMb is validated: the default, disk_max_mb, the range, workdir "/"', async () => {
  const d = await create({ template: 'python' });
  assert.equal(d.diskMb, 1024);
  const df = await exec(d.sandboxId, 'df -k . | tail -1');
  assert.equal(df.status, 200, df.text);
  const sizeK = Number(df.json.stdout.trim().split(/\s+/)[1]);
  assert.ok(sizeK > 900 * 1024 && sizeK <= 1024 * 1024, `default disk of ${sizeK} KiB`);
  for (const [body, field, re] of [
    [{ template: 'python', diskMb: 16385 }, 'diskMb', /disk_max_mb/],
    [{ template: 'python', diskMb: 8 }, 'diskMb', /diskMb/],
    [{ template: 'python', diskMb: 'x' }, 'diskMb', /diskMb/],
    [{ image: 'sandpit-test/busybox:latest', workdir: '/' }, 'workdir', /workdir/],
    // the image's files at the workdir are copied into the disk at create
    [{ image: 'sandpit-test/python:latest', workdir: '/usr/lib', diskMb: 16 }, 'diskMb', /do not fit in 16 MiB/],
  ]) {
    const r = await s.api('POST', '/api/sandbox.create', { body });
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.match(r.json.message, re);
    assert.match(r.text, new RegExp(field));
  }
});

test('A3: the host floor: below disk_reserve_mb or disk_reserve_inodes, creates get 503 naming the reserve', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandpit-disk-'));
  const big = await startStack({ extraConf: [`disk_dir = ${dir}`, `disk_reserve_mb = ${freeMb(DOCKER_ROOT) + 1024 * 1024}`] });
  try {
    const r = await big.api('POST', '/api/sandbox.create', { body: { template: 'python' } });
    assert.equal(r.status, 503, r.text);
    assert.match(r.json.message, /disk_reserve_mb/);
    const l = await big.api('GET', '/api/sandbox.list');
    assert.equal(l.json.length, 0, 'no record is left by a refused create');
  } finally { await big.stop(); }
  const inodes = fs.statfsSync(DOCKER_ROOT).ffree;
  const many = await startStack({ extraConf: [`disk_dir = ${dir}`, `disk_reserve_inodes = ${Math.min(inodes * 2, 2 ** 30)}`] });
  try {
    const r = await many.api('POST', '/api/sandbox.create', { body: { template: 'python' } });
    assert.equal(r.status, 503, r.text);
    assert.match(r.json.message, /disk_reserve_inodes/);
  } finally {
    await many.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('A3: disk_preallocate: each disk is taken from the host at create, and the floor counts it', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandpit-disk-'));
  const reserve = freeMb(dir) - 512;
  const pre = await startStack({ extraConf: [`disk_dir = ${dir}`, 'disk_preallocate = yes', `disk_reserve_mb = ${reserve}`] });
  try {
    const r = await pre.api('POST', '/api/sandbox.create', { body: { template: 'alpine', diskMb: 1024 } });
    assert.equal(r.status, 503, r.text);
    assert.match(r.json.message, /before this sandbox's disk.*disk_reserve_mb/);
    const c = await pre.api('POST', '/api/sandbox.create', { body: { template: 'alpine', diskMb: 64 } });
    assert.equal(c.status, 200, c.text);
    const dd = await pre.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: 'dd if=/dev/zero of=f bs=1M count=100 2>&1' } });
    assert.match(dd.json.stdout, /No space left on device/);
    await pre.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } });
  } finally {
    await pre.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('A3: a server that cannot limit disk refuses an explicit diskMb and records 0 otherwise', async () => {
  // the local daemon is overlay2 on ext4: StorageOpt size is not possible
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandpit-disk-'));
  const so = await startStack({ extraConf: [`disk_dir = ${dir}`, 'disk_limit = storage-opt'] });
  try {
    const r = await so.api('POST', '/api/sandbox.create', { body: { template: 'python', diskMb: 64 } });
    assert.equal(r.status, 400, r.text);
    assert.match(r.json.message, /diskMb: server local cannot limit disk/);
    const c = await so.api('POST', '/api/sandbox.create', { body: { template: 'python' } });
    assert.equal(c.status, 200, c.text);
    assert.equal(c.json.diskMb, 0);
    await so.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } });
  } finally {
    await so.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
