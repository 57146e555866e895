// sandbox.writeFile, readFile, listFiles (issue #3): the seed's examples on
// the python (GNU find) and the busybox image, RELIABILITY F1, F2, F4, F5,
// F6 and H4, the error texts, and which operations count as activity.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { sandboxStack } from './lib/suite.mjs';
import { dockerExec } from './lib/docker.mjs';
import { waitFor } from './lib/stack.mjs';

let s;
const { create, exec } = sandboxStack((stack) => { s = stack; });
const write = (id, path, content, o = {}) => s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: id, path, content, ...o } });
const read = (id, path, o = {}) => s.api('GET', '/api/sandbox.readFile', { query: { sandboxId: id, path, ...o } });
const list = (id, path) => s.api('GET', '/api/sandbox.listFiles', { query: { sandboxId: id, path } });
const sha = (x) => createHash('sha256').update(x).digest('hex');
// The gVisor pass (SANDPIT_TEST_RUNTIME=gvisor, tests/run.sh): Debian's runsc
// (20221219) refuses statx() with AT_NO_AUTOMOUNT, which coreutils 9.1 `stat`
// and `ls` always pass, so GNU find -printf reads the same fields there
// (busybox stat works as it is).
const GVISOR = process.env.SANDPIT_TEST_RUNTIME === 'gvisor';
function statCmd(fmt, ...paths) {
  if (!GVISOR) return ['stat', '-c', fmt, ...paths];
  const ffmt = fmt.replace(/%([ugaUn])/g, (m, c) => ({ u: '%U', g: '%G', a: '%m', U: '%u', n: '%p' })[c]);
  return ['sh', '-c', 'f=$1 g=$2; shift 2; stat -c "$f" "$@" 2>/dev/null || find "$@" -maxdepth 0 -printf "$g\\n"',
    'sh', fmt, ffmt, ...paths];
}
const MiB10 = 10485760;
// How many temporary files of writeFile are left in each dir (a shell glob:
// coreutils ls fails under gVisor, see statCmd).
async function tempsLeft(containerId, ...dirs) {
  const r = await dockerExec(containerId, ['sh', '-c',
    'for d in "$@"; do n=0; for f in "$d"/.sandpit-write-*; do [ -e "$f" ] && n=$((n+1)); done; echo $n; done', 'sh', ...dirs], { user: '0' });
  return r.stdout;
}

for (const [template, gnu] of [['python', true], ['alpine', false]]) {
  test(`seed "Write and read files" on ${template} (${gnu ? 'GNU find' : 'busybox'})`, async () => {
    const sb = await create({ template });
    const id = sb.sandboxId;
    const w = await write(id, '/home/user/app/main.py', 'print("hi")\n');
    assert.equal(w.status, 200, w.text);
    assert.deepEqual(w.json, { path: '/home/user/app/main.py', size: 12 });

    // binary content, base64 as `base64 < data.bin` prints it (76-column
    // lines, the newlines escaped in the JSON) and as `base64 -w0`
    const data = randomBytes(3000);
    const wrapped = data.toString('base64').replace(/.{76}/g, '$&\n') + '\n';
    const b = await write(id, '/home/user/data.bin', wrapped, { encoding: 'base64' });
    assert.deepEqual(b.json, { path: '/home/user/data.bin', size: 3000 });
    const b0 = await write(id, '/home/user/data0.bin', data.toString('base64'), { encoding: 'base64' });
    assert.deepEqual(b0.json, { path: '/home/user/data0.bin', size: 3000 });
    const sums = await exec(id, 'sha256sum data.bin data0.bin');
    assert.equal(sums.json.stdout, `${sha(data)}  data.bin\n${sha(data)}  data0.bin\n`);

    const r = await read(id, '/home/user/app/main.py');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { path: '/home/user/app/main.py', size: 12, encoding: 'utf8', content: 'print("hi")\n' });
    const rb = await read(id, '/home/user/data.bin', { encoding: 'base64' });
    assert.deepEqual(rb.json, { path: '/home/user/data.bin', size: 3000, encoding: 'base64', content: data.toString('base64') });

    const l = await list(id, '/home/user/app');
    assert.equal(l.status, 200, l.text);
    assert.equal(l.json.path, '/home/user/app');
    assert.equal(l.json.entries.length, 1);
    const e = l.json.entries[0];
    assert.equal(e.name, 'main.py');
    assert.equal(e.type, 'file');
    // GNU find gives the metadata; where the image's find cannot (busybox),
    // the helper inside the sandbox does (the seed's answer there is null)
    assert.equal(e.size, 12);
    assert.equal(e.mode, '644');
    assert.match(e.modifiedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(Math.abs(Date.parse(e.modifiedAt) - Date.now()) < 60000, e.modifiedAt);
  });

  test(`listFiles on ${template}: directories first, every type, hidden files, default path the workdir`, async () => {
    const sb = await create({ template });
    const id = sb.sandboxId;
    const mk = await exec(id, 'mkdir -p d/zz b .hid && : > a.txt && printf 12345 > .dot && ln -s a.txt ln && ln -s /nowhere dangling && mkfifo fifo && chmod 600 a.txt');
    assert.equal(mk.json.exitCode, 0, mk.json.stderr);
    const l = await list(id);
    assert.equal(l.status, 200, l.text);
    assert.equal(l.json.path, '/home/user');
    const got = l.json.entries.map((x) => [x.name, x.type]);
    assert.deepEqual(got, [
      ['.hid', 'directory'], ['b', 'directory'], ['d', 'directory'],
      ['.dot', 'file'], ['a.txt', 'file'], ['dangling', 'symlink'], ['fifo', 'other'], ['ln', 'symlink'],
    ]);
    const by = Object.fromEntries(l.json.entries.map((x) => [x.name, x]));
    assert.equal(by['.dot'].size, 5);
    assert.equal(by['a.txt'].mode, '600');
    assert.equal(by.d.mode, '755');
    for (const x of l.json.entries) assert.equal(typeof x.modifiedAt, 'string', `${x.name}: ${JSON.stringify(x)}`);
    const empty = await list(id, '/home/user/b');
    assert.deepEqual(empty.json, { path: '/home/user/b', entries: [] });
  });
}

test('F1: a relative path, a NUL or more than 4096 bytes → 400 naming path', async () => {
  const sb = await create({ template: 'alpine' });
  const id = sb.sandboxId;
  const bad = [
    ['home/user/x', 'path: Path must be absolute'],
    ['', 'path: Path must be absolute'],
    ['/home/user/a\u0000b', 'path: must not contain NUL bytes'],
    ['/' + 'a'.repeat(4096), 'path: must be at most 4096 bytes'],
  ];
  for (const [path, message] of bad) {
    for (const r of [await write(id, path, 'x'), await read(id, path), await list(id, path)]) {
      assert.equal(r.status, 400, `${JSON.stringify(path).slice(0, 40)}: ${r.text}`);
      assert.equal(r.json.message, message);
      assert.deepEqual(r.json.issues[0].path, ['path']);
    }
  }
  // 4096 bytes passes validation, and the filesystem then has its say
  // (PATH_MAX counts the NUL): a clean refusal, not a 5xx; 4095 works
  const deep = '/home/user/' + Array.from({ length: 16 }, () => 'd'.repeat(250)).join('/') + '/';
  const p4096 = deep + 'f'.repeat(4096 - deep.length), p4095 = p4096.slice(0, -1);
  assert.equal(Buffer.byteLength(p4096), 4096);
  const w6 = await write(id, p4096, 'deep');
  assert.ok(w6.status >= 400 && w6.status < 500, w6.text.slice(0, 200));
  const w = await write(id, p4095, 'deep');
  assert.equal(w.status, 200, w.text.slice(0, 200));
  const r = await read(id, p4095);
  assert.equal(r.json.content, 'deep');
});

test('F2: planted symlinks do not let the API act on files the sandbox user could not', async () => {
  const sb = await create({ template: 'python' });
  const id = sb.sandboxId;
  const before = await dockerExec(sb.containerId, ['sha256sum', '/etc/passwd', '/etc/shadow'], { user: '0' });
  const mk = await exec(id, 'ln -s /etc x && ln -s /etc/shadow s && ln -s /etc/passwd p && ln -s / root');
  assert.equal(mk.json.exitCode, 0);

  const w = await write(id, '/home/user/x/passwd', 'evil::0:0::/:/bin/sh\n');
  assert.equal(w.status, 403, w.text);
  assert.match(w.json.message, /^Unable to write \/home\/user\/x\/passwd/);
  const w2 = await write(id, '/home/user/root/etc/passwd', 'evil\n');
  // gVisor (runsc 20221219) resolves a path through a symlink to "/" as "/"
  // itself, so there the target reads as a directory: 400, still not written
  if (GVISOR) assert.ok([400, 403].includes(w2.status), w2.text);
  else assert.equal(w2.status, 403, w2.text);
  const w3 = await write(id, '/home/user/x/cron.d/evil', 'evil\n');
  assert.ok([400, 403].includes(w3.status), w3.text);
  // writing to a symlink to a file replaces the link, never the target
  const w4 = await write(id, '/home/user/p', 'mine\n');
  assert.equal(w4.status, 200, w4.text);
  const lp = await exec(id, '[ -L p ] && echo link || cat p');
  assert.equal(lp.json.stdout, 'mine\n');

  const r = await read(id, '/home/user/s');
  assert.equal(r.status, 403, r.text);
  assert.ok(!('content' in r.json));
  assert.ok(!r.text.includes('root:'), 'no shadow content');
  // read and list resolve the path with readlink -f first, so under gVisor
  // too root/root is /root (which the user may not list), never "/"
  const r2 = await read(id, '/home/user/root/etc/shadow');
  assert.equal(r2.status, 403, r2.text);
  assert.ok(!r2.text.includes('root:'), 'no shadow content');
  const l = await list(id, '/home/user/root/root');
  assert.equal(l.status, 403, l.text);
  assert.equal(l.json.message, 'Unable to list files');
  const lr = await list(id, '/home/user/root/etc');
  assert.equal(lr.status, 200, lr.text);
  assert.ok(lr.json.entries.some((x) => x.name === 'passwd') && !lr.json.entries.some((x) => x.name === 'usr'), lr.text);

  const after = await dockerExec(sb.containerId, ['sha256sum', '/etc/passwd', '/etc/shadow'], { user: '0' });
  assert.equal(after.stdout, before.stdout);
  const etc = await dockerExec(sb.containerId, ['sh', '-c', GVISOR
    ? "[ -e /etc/cron.d/evil ] || echo 'No such file'" : 'ls /etc/cron.d/evil 2>&1; stat -c %U /etc/passwd']);
  assert.match(etc.stdout, /No such file|cannot access/);
});

test('F4: exactly 10 MiB works both ways; one byte more → 413; FIFOs, /dev/zero and huge sparse files do not hang', async (t) => {
  const sb = await create({ template: 'python' });
  const id = sb.sandboxId;
  const big = 'a'.repeat(MiB10 - 4) + '\u20AC\n'; // multibyte: the cap counts bytes
  assert.equal(Buffer.byteLength(big), MiB10);
  let t0 = Date.now();
  const w = await write(id, '/home/user/big.txt', big);
  const wMs = Date.now() - t0;
  assert.equal(w.status, 200, w.text.slice(0, 200));
  assert.deepEqual(w.json, { path: '/home/user/big.txt', size: MiB10 });
  t0 = Date.now();
  const r = await read(id, '/home/user/big.txt');
  const rMs = Date.now() - t0;
  assert.equal(r.status, 200, r.text.slice(0, 200));
  assert.equal(r.json.size, MiB10);
  assert.equal(r.json.content, big);
  const bin = randomBytes(MiB10);
  const wb = await write(id, '/home/user/big.bin', bin.toString('base64'), { encoding: 'base64' });
  assert.deepEqual(wb.json, { path: '/home/user/big.bin', size: MiB10 });
  const rb = await read(id, '/home/user/big.bin', { encoding: 'base64' });
  assert.equal(rb.json.size, MiB10);
  assert.ok(Buffer.from(rb.json.content, 'base64').equals(bin));
  t.diagnostic(`10 MiB utf8 write ${wMs} ms, read ${rMs} ms`);

  const tooBig = 'File exceeds the 10485760 byte limit';
  const w1 = await write(id, '/home/user/over.txt', big + 'x');
  assert.equal(w1.status, 413, w1.text.slice(0, 200));
  assert.equal(w1.json.message, tooBig);
  const w2 = await write(id, '/home/user/over.bin', randomBytes(MiB10 + 1).toString('base64'), { encoding: 'base64' });
  assert.equal(w2.status, 413);
  assert.equal(w2.json.message, tooBig);
  // 11 MiB as base64 (14.7 MiB of JSON string) is the promised 413 too, not
  // a 400 on content's length (issue 13)
  const w3 = await write(id, '/home/user/over.bin', randomBytes(11 * 1024 * 1024).toString('base64'), { encoding: 'base64' });
  assert.equal(w3.status, 413, w3.text.slice(0, 200));
  assert.equal(w3.json.message, tooBig);
  const gone = await exec(id, 'ls over.txt over.bin 2>&1 | wc -l');
  assert.equal(gone.json.stdout, '2\n', 'nothing written');
  assert.equal(await tempsLeft(sb.containerId, '/home/user'), '0\n', 'no temporary file left');

  const mk = await exec(id, 'head -c 10485761 /dev/zero > over.dat && mkfifo fifo && truncate -s 100G sparse && ln -s /dev/zero zero');
  assert.equal(mk.json.exitCode, 0, mk.json.stderr);
  t0 = Date.now();
  const r1 = await read(id, '/home/user/over.dat');
  assert.equal(r1.status, 413);
  assert.equal(r1.json.message, tooBig);
  for (const p of ['/home/user/fifo', '/dev/zero', '/home/user/zero', '/dev/urandom', '/home/user']) {
    const x = await read(id, p, { encoding: 'base64' });
    assert.equal(x.status, 400, `${p}: ${x.text}`);
    assert.equal(x.json.message, 'Path is not a regular file');
  }
  const sp = await read(id, '/home/user/sparse', { encoding: 'base64' });
  assert.equal(sp.status, 413);
  assert.equal(sp.json.message, tooBig);
  const ms = Date.now() - t0;
  t.diagnostic(`10 MiB + 1, FIFO, /dev/zero, /dev/urandom, a directory and a 100 GB sparse file refused in ${ms} ms`);
  assert.ok(ms < 15000, `the refusals took ${ms} ms`);
  // a writer blocked on the FIFO was never started; the sandbox is fine
  const ok = await exec(id, 'echo ok');
  assert.equal(ok.json.stdout, 'ok\n');
});

test('F5: written files and the folders created for them are owned by the sandbox user', async () => {
  for (const template of ['python', 'alpine']) {
    const sb = await create({ template });
    const w = await write(sb.sandboxId, '/home/user/new/deeper/f.txt', 'x');
    assert.equal(w.status, 200, w.text);
    const w2 = await write(sb.sandboxId, '/tmp/t/f.txt', 'y');
    assert.equal(w2.status, 200, w2.text);
    const st = await dockerExec(sb.containerId, statCmd('%u:%g %a %n', '/home/user/new', '/home/user/new/deeper', '/home/user/new/deeper/f.txt', '/tmp/t/f.txt'));
    assert.equal(st.stdout, '1000:1000 755 /home/user/new\n1000:1000 755 /home/user/new/deeper\n1000:1000 644 /home/user/new/deeper/f.txt\n1000:1000 644 /tmp/t/f.txt\n');
    // overwriting a file keeps the owner
    const again = await write(sb.sandboxId, '/home/user/new/deeper/f.txt', 'z', { mode: 0o600 });
    assert.equal(again.status, 200);
    const st2 = await dockerExec(sb.containerId, statCmd('%u:%g %a', '/home/user/new/deeper/f.txt'));
    assert.equal(st2.stdout, '1000:1000 600\n');
  }
});

test('F6: random bytes written through the API read back the same through exec and readFile', async () => {
  for (const template of ['python', 'alpine']) {
    const sb = await create({ template });
    const id = sb.sandboxId;
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const data = Buffer.concat([all, randomBytes(65536), all, Buffer.from('\n\r\0\0')]);
    const w = await write(id, '/home/user/rand.bin', data.toString('base64'), { encoding: 'base64' });
    assert.deepEqual(w.json, { path: '/home/user/rand.bin', size: data.length });
    const od = await exec(id, 'od -An -v -tx1 rand.bin | tr -d " \\n"');
    assert.equal(od.json.stdout, data.toString('hex'));
    const sum = await exec(id, 'sha256sum rand.bin; wc -c < rand.bin');
    assert.equal(sum.json.stdout, `${sha(data)}  rand.bin\n${data.length}\n`);
    // cat of a text file through exec gives the exact characters back
    const text = 'héllo\tworld\n€ 𝄞 \\ "quoted"\r\n';
    await write(id, '/home/user/t.txt', text);
    const cat = await exec(id, 'cat t.txt');
    assert.equal(cat.json.stdout, text);
    const rb = await read(id, '/home/user/rand.bin', { encoding: 'base64' });
    assert.ok(Buffer.from(rb.json.content, 'base64').equals(data));
    assert.equal(rb.json.size, data.length);
  }
});

// writeFile is one exec that reads the content on stdin (head -c N) into a
// temporary file beside the target and renames it into place
test('writeFile through stdin: 10 MiB of random bytes and empty files arrive exactly; nothing is staged in /.sandpit', async () => {
  for (const template of ['python', 'alpine']) {
    const sb = await create({ template });
    const id = sb.sandboxId;
    const bin = randomBytes(MiB10);
    const w = await write(id, '/home/user/r.bin', bin.toString('base64'), { encoding: 'base64' });
    assert.equal(w.status, 200, w.text.slice(0, 200));
    assert.deepEqual(w.json, { path: '/home/user/r.bin', size: MiB10 });
    const sum = await exec(id, 'sha256sum r.bin; wc -c < r.bin');
    assert.equal(sum.json.stdout.replace(/ +(\d+\n)$/, '$1'), `${sha(bin)}  r.bin\n${MiB10}\n`);
    // overwritten by an empty file, and an empty file made anew, both ways
    for (const [p, o] of [['/home/user/r.bin', { encoding: 'base64' }], ['/home/user/e.txt', {}], ['/home/user/e.bin', { encoding: 'base64' }]]) {
      const e = await write(id, p, '', o);
      assert.deepEqual(e.json, { path: p, size: 0 }, e.text);
    }
    const sizes = await exec(id, 'wc -c < r.bin; wc -c < e.txt; wc -c < e.bin');
    assert.equal(sizes.json.stdout.replace(/ /g, ''), '0\n0\n0\n');
    const re = await read(id, '/home/user/r.bin', { encoding: 'base64' });
    assert.deepEqual(re.json, { path: '/home/user/r.bin', size: 0, encoding: 'base64', content: '' });
    assert.equal(await tempsLeft(sb.containerId, '/home/user', '/.sandpit/up'), '0\n0\n', 'no temporary file, nothing staged');
  }
});

test('writeFile: a directory as the target → 400 and untouched; a symlink as the target is replaced, never followed', async () => {
  const sb = await create({ template: 'python' });
  const id = sb.sandboxId;
  const mk = await exec(id, 'mkdir -p d/sub && echo keep > d/f && ln -s /etc/passwd pw && ln -s d ld && ln -s /etc etc');
  assert.equal(mk.json.exitCode, 0, mk.json.stderr);
  const before = await dockerExec(sb.containerId, ['sha256sum', '/etc/passwd'], { user: '0' });
  for (const p of ['/home/user/d', '/home/user/d/sub', '/home/user/d/sub/.']) {
    const w = await write(id, p, 'x');
    assert.equal(w.status, 400, `${p}: ${w.text}`);
    assert.equal(w.json.message, 'Path must point to a file');
    assert.deepEqual(w.json.issues[0].path, ['path']);
  }
  // a link to /etc/passwd (a file the user cannot write): the link is replaced
  const pw = await write(id, '/home/user/pw', 'mine\n');
  assert.equal(pw.status, 200, pw.text);
  // a link to a directory: the link is replaced too, nothing lands inside it
  const ld = await write(id, '/home/user/ld', 'link\n');
  assert.equal(ld.status, 200, ld.text);
  // through a link into /etc: the user may not write there (and the image's
  // own files are read-only under the disk limit, README "Disk limits")
  const ep = await write(id, '/home/user/etc/passwd', 'evil::0:0::/:/bin/sh\n');
  assert.equal(ep.status, 403, ep.text);
  assert.match(ep.json.message, /^Unable to write \/home\/user\/etc\/passwd: (Permission denied|Read-only file system)$/);
  const st = await exec(id, 'for f in pw ld; do if [ -L $f ]; then echo $f link; else echo $f $(cat $f); fi; done; cd d && echo .* * && cat f');
  assert.equal(st.json.stdout, 'pw mine\nld link\n. .. f sub\nkeep\n');
  const after = await dockerExec(sb.containerId, ['sha256sum', '/etc/passwd'], { user: '0' });
  assert.equal(after.stdout, before.stdout);
  assert.equal(await tempsLeft(sb.containerId, '/etc', '/home/user', '/home/user/d'), '0\n0\n0\n');
});

test('writeFile: a failed write leaves no temporary file and the old content whole', async () => {
  const sb = await create({ template: 'alpine' });
  const id = sb.sandboxId;
  // a read-only folder: nothing can be made in it
  const mk = await exec(id, 'mkdir ro && echo old > ro/f && chmod 555 ro');
  assert.equal(mk.json.exitCode, 0, mk.json.stderr);
  const w = await write(id, '/home/user/ro/f', 'new');
  assert.equal(w.status, 403, w.text);
  assert.match(w.json.message, /^Unable to write \/home\/user\/ro\/f: Permission denied$/);
  const w2 = await write(id, '/home/user/ro/g', randomBytes(1 << 20).toString('base64'), { encoding: 'base64' });
  assert.equal(w2.status, 403, w2.text);
  // a name longer than NAME_MAX: the temporary file is made and written,
  // the rename is refused, and the temporary file goes
  const w3 = await write(id, `/home/user/${'n'.repeat(256)}`, randomBytes(1 << 20).toString('base64'), { encoding: 'base64' });
  assert.equal(w3.status, 403, w3.text);
  assert.match(w3.json.message, /^Unable to write \/home\/user\/n+: /);
  // a sticky folder whose target belongs to root: the same after the
  // rename is refused (runsc 20221219 does not apply the sticky bit to a
  // rename, so under gVisor the user may replace that file). In /tmp: the
  // image's own folders are read-only under the disk limit
  if (!GVISOR) {
    await dockerExec(sb.containerId, ['sh', '-c', 'mkdir -p /tmp/sticky && chmod 1777 /tmp/sticky && echo root > /tmp/sticky/f && chmod 666 /tmp/sticky/f'], { user: '0' });
    const w4 = await write(id, '/tmp/sticky/f', randomBytes(1 << 20).toString('base64'), { encoding: 'base64' });
    assert.equal(w4.status, 403, w4.text);
    assert.match(w4.json.message, /^Unable to write \/tmp\/sticky\/f: /);
    const st = await dockerExec(sb.containerId, ['sh', '-c', 'cd /tmp/sticky && echo .* * && cat f'], { user: '0' });
    assert.equal(st.stdout, '. .. f\nroot\n');
  }
  const ls = await dockerExec(sb.containerId, ['sh', '-c', 'cd /home/user/ro && echo .* * && cat f'], { user: '0' });
  assert.equal(ls.stdout, '. .. f\nold\n');
  assert.equal(await tempsLeft(sb.containerId, '/home/user'), '0\n');
});

test('H4: files written through the API never keep setuid or setgid', async () => {
  const sb = await create({ template: 'python' });
  const id = sb.sandboxId;
  const cases = [[0o6755, '755'], [0o4755, '755'], [0o2755, '755'], [0o7777, '777'], [0o1644, '644'], [0o755, '755'], [0o600, '600'], [0, '0']];
  for (const [mode, want] of cases) {
    const p = `/home/user/m${mode.toString(8)}`;
    const w = await write(id, p, '#!/bin/sh\nid -u\n', { mode });
    assert.equal(w.status, 200, w.text);
    const st = await dockerExec(sb.containerId, statCmd('%a', p));
    assert.equal(st.stdout, `${want}\n`, `mode ${mode.toString(8)}`);
  }
  // overwriting an existing setuid file (made by the user) drops the bits too
  await exec(id, ': > su && chmod 4755 su');
  const w = await write(id, '/home/user/su', 'x', { mode: 0o4755 });
  assert.equal(w.status, 200);
  const st = await dockerExec(sb.containerId, statCmd('%a', '/home/user/su'));
  assert.equal(st.stdout, '755\n');
  const bad = await write(id, '/home/user/m', 'x', { mode: 0o10000 });
  assert.equal(bad.status, 400);
  assert.deepEqual(bad.json.issues[0].path, ['mode']);
});

test('file error texts', async () => {
  const sb = await create({ template: 'python' });
  const id = sb.sandboxId;
  const expect = async (p, status, message, field) => {
    const r = await p;
    assert.equal(r.status, status, r.text);
    if (message instanceof RegExp) assert.match(r.json.message, message);
    else assert.equal(r.json.message, message);
    if (field) assert.deepEqual(r.json.issues?.[0]?.path, [field], r.text);
    return r;
  };
  await expect(read(id, '/home/user/missing.txt'), 404, 'File not found', 'path');
  await expect(read(id, '/home/user'), 400, 'Path is not a regular file', 'path');
  await expect(write(id, '/home/user', 'x'), 400, 'Path must point to a file', 'path');
  await expect(write(id, '/home/user/dir/', 'x'), 400, 'Path must point to a file', 'path');
  await expect(write(id, '/home/user/..', 'x'), 400, 'Path must point to a file', 'path');
  await expect(write(id, '/', 'x'), 400, 'Path must point to a file', 'path');
  await expect(write(id, '/etc/newdir/x', 'x'), 400, 'Unable to create directory /etc/newdir', 'path');
  await expect(write(id, '/etc/hosts.new', 'x'), 403, /^Unable to write \/etc\/hosts\.new/, 'path');
  await write(id, '/home/user/plain', 'x');
  await expect(write(id, '/home/user/plain/x', 'x'), 400, 'Unable to create directory /home/user/plain', 'path');
  await expect(write(id, '/home/user/b.bin', 'not*base64!', { encoding: 'base64' }), 400, 'content: not valid base64', 'content');
  await expect(write(id, '/home/user/b.bin', 'x', { encoding: 'hex' }), 400, /^encoding: expected one of/, 'encoding');
  await expect(write(id, '/home/user/b.bin', undefined), 400, 'content: Required', 'content');
  await exec(id, "printf 'ok\\377\\376' > latin1.txt; chmod 000 latin1.txt; printf 'ok\\377' > bin.txt; mkdir locked; chmod 000 locked");
  await expect(read(id, '/home/user/bin.txt'), 422, 'File is not valid UTF-8; read it with encoding base64', 'encoding');
  const b = await read(id, '/home/user/bin.txt', { encoding: 'base64' });
  assert.equal(b.json.content, Buffer.from('ok\xff', 'latin1').toString('base64'));
  await expect(read(id, '/home/user/latin1.txt'), 403, /^Unable to read \/home\/user\/latin1\.txt/, 'path');
  // a folder the user cannot search hides what is in it
  await expect(read(id, '/home/user/locked/x'), 404, 'File not found', 'path');
  await expect(list(id, '/home/user/nope'), 404, 'Directory not found', 'path');
  await expect(list(id, '/home/user/plain'), 400, 'Path is not a directory', 'path');
  await expect(list(id, '/home/user/locked'), 403, 'Unable to list files', 'path');
  await expect(read('nosuchsandbox0000000', '/etc/hosts'), 404, 'Sandbox not found');
  // an empty file is fine both ways
  const e = await write(id, '/home/user/empty', '');
  assert.deepEqual(e.json, { path: '/home/user/empty', size: 0 });
  const re = await read(id, '/home/user/empty');
  assert.deepEqual(re.json, { path: '/home/user/empty', size: 0, encoding: 'utf8', content: '' });
  await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: id } });
  await expect(write(id, '/home/user/x', 'x'), 412, 'Sandbox is killed');
  await expect(read(id, '/home/user/empty'), 412, 'Sandbox is killed');
  await expect(list(id, '/home/user'), 412, 'Sandbox is killed');
});

test('activity: exec, writeFile and listFiles move expiresAt and the container expiry; readFile does not', async () => {
  const sb = await create({ template: 'alpine', timeoutMs: 60000 });
  const id = sb.sandboxId;
  const state = async () => {
    const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } });
    const f = await dockerExec(sb.containerId, ['cat', '/.sandpit/expires']);
    return { expiresAt: Date.parse(one.json.expiresAt), last: one.json.lastActivityAt, file: Number(f.stdout.trim()) };
  };
  await write(id, '/home/user/f.txt', 'hello');
  const pause = () => new Promise((r) => setTimeout(r, 1200));
  // sandpit moves the container's copy (as the keeper) after the answer,
  // when it no longer covers the record's, leading it by up to 3 s so a
  // burst costs one write: it covers expiresAt and leads by at most 4 s
  const covers = (x) => x.file * 1000 >= x.expiresAt - 999 && x.file * 1000 <= x.expiresAt + 4000;
  let prev = await waitFor(async () => { const x = await state(); return covers(x) && x; }, 5000, 100);

  await pause();
  const r = await read(id, '/home/user/f.txt');
  assert.equal(r.json?.content, 'hello', r.text);
  const afterRead = await state();
  assert.deepEqual(afterRead, prev, 'readFile is not activity');

  for (const [name, op] of [
    ['exec', () => exec(id, 'true')],
    ['writeFile', () => write(id, '/home/user/g.txt', 'x')],
    ['listFiles', () => list(id, '/home/user')],
  ]) {
    await pause();
    const t0 = Date.now();
    const x = await op();
    assert.equal(x.status, 200, `${name}: ${x.text}`);
    const now = await waitFor(async () => { const y = await state(); return covers(y) && y; }, 5000, 100)
      .catch(async () => state());
    assert.ok(now.expiresAt >= t0 + 60000 - 50 && now.expiresAt <= Date.now() + 60000 + 50,
      `${name}: expiresAt ${now.expiresAt - t0} ms after the call started`);
    assert.ok(now.expiresAt >= prev.expiresAt + 1000, `${name} moved expiresAt`);
    assert.ok(covers(now), `${name}: /.sandpit/expires follows (${now.file} vs ${Math.ceil(now.expiresAt / 1000)})`);
    assert.notEqual(now.last, prev.last);
    prev = now;
  }
  // a running command counts as activity while it runs: expiresAt covers its timeout
  const long = exec(id, 'sleep 2', { timeoutMs: 120000 });
  await new Promise((r2) => setTimeout(r2, 1000));
  const during = await state();
  assert.ok(during.expiresAt >= Date.now() + 60000 + 100000, 'expiresAt covers the running command');
  await long;
  const done = await state();
  assert.ok(Math.abs(done.expiresAt - (Date.now() + 60000)) < 2000, 'back to timeoutMs after it ends');
});

test('writeFile while the sandbox deletes the target folder: a 4xx naming path, never a 5xx (issue 12)', { timeout: 180000 }, async (t) => {
  const sb = await create({ template: 'alpine' });
  const id = sb.sandboxId;
  // inside: the target folder removed and made again, as fast as it goes, for 60 s at most
  const bg = await exec(id, "(end=$(( $(date +%s) + 60 )); while [ $(date +%s) -lt $end ]; do rm -rf /home/user/race; mkdir -p /home/user/race/sub; done) >/dev/null 2>&1 &");
  assert.equal(bg.status, 200, bg.text);
  const by = {};
  const odd = []; // every answer that is neither 200 nor a 4xx naming path
  for (let round = 0; round < 25; round++) {
    // (a 429 of the per-key rate limit is waited out: through the fast
    // path 200 writes come faster than the stack's 50 r/s)
    const paced = async (i) => {
      for (let k = 0; ; k++) {
        const r = await write(id, `/home/user/race/sub/f${i}.txt`, 'x'.repeat(1000 + i));
        if (r.status !== 429 || k >= 10) return r;
        await new Promise((res) => setTimeout(res, 1000));
      }
    };
    const rs = await Promise.all(Array.from({ length: 8 }, (_, i) => paced(i)));
    for (const r of rs) {
      by[r.status] = (by[r.status] || 0) + 1;
      const named = [400, 409].includes(r.status) && r.json?.issues?.some((x) => x.path[0] === 'path');
      if (r.status !== 200 && !named) odd.push(`round ${round}: ${r.status} ${r.text.slice(0, 300)}`);
    }
  }
  t.diagnostic(`answers: ${JSON.stringify(by)}`);
  for (const o of odd.slice(0, 5)) t.diagnostic(o);
  assert.deepEqual(odd.slice(0, 5), [], `${odd.length} of 200 writes got neither 200 nor a 400/409 naming path`);
  await exec(id, "pkill -f 'rm -rf /home/user/race' 2>/dev/null; true");
});
