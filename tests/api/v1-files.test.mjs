// /v1 files at the sandbox endpoint (issue 16): list, stat, readFile,
// writeFile, mkdir, move, remove, through the helper's file commands
// (sandbox/helper/files.c) as the sandbox user: each operation's success
// and error answers, validated against the seed document's schemas;
// FileInfo types from lstat, modes without umask, mkdir with and without
// parents, move never copies, remove's partial results, readFile of a
// 10 MiB binary file byte-exact with its Content-Length, one byte more
// refused; planted symlinks (F2) and a swap race beside 200 writes (F3)
// reach nothing the sandbox user could not; both faces agree; the
// permissions per operation. gVisor: SANDPIT_TEST_RUNTIME=gvisor.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { docker, repoRoot, startStack, waitFor } from './lib/stack.mjs';
import { v1Call, v1Checked } from './lib/v1seed.mjs';

const run = promisify(execFile);

let s;
const made = [];
const tokens = new Map();

const call = (method, tmpl, params, o) => v1Call(s, method, tmpl, params, o);

async function token(id, perms = ['sandboxesExec', 'sandboxesFilesRead', 'sandboxesFilesWrite']) {
  const k = `${id} ${perms}`;
  const t = tokens.get(k);
  if (t && t.exp > Date.now() + 60000) return t.token;
  const r = await call('POST', '/v1/sandboxes/{sandbox}/endpoint-credentials', { sandbox: id }, { body: { permissions: perms } });
  assert.equal(r.status, 200, r.text);
  tokens.set(k, { token: r.json.token, exp: Date.parse(r.json.expireTime) });
  return r.json.token;
}

// A request at sandbox id's endpoint with an endpoint credential.
async function ep(id, method, tmpl, params = {}, o = {}) {
  const t = o.token ?? await token(id, o.perms);
  return call(method, tmpl, params, { key: null, endpoint: id, ...o, headers: { authorization: `Bearer ${t}`, ...o.headers } });
}

async function createSandbox(imageRef = 'sandpit-test/busybox') {
  const r = await call('POST', '/v1/sandboxes', {}, { body: { imageRef } });
  assert.equal(r.status, 201, r.text);
  made.push(r.json.uid);
  return r.json;
}

const b64 = (x) => Buffer.from(x ?? '', 'base64').toString('utf8');
const exec = async (id, cmd) => {
  const r = await ep(id, 'POST', '/v1/processes/exec', {}, { body: { cmd } });
  assert.equal(r.status, 200, r.text);
  return { out: b64(r.json.stdout), err: b64(r.json.stderr), code: r.json.exitCode ?? 0 };
};
const sh = (id, script) => exec(id, ['sh', '-c', script]);
const F = (id, method, tmpl, o = {}) => ep(id, method, `/v1/files${tmpl}`, {}, o);
const write = (id, p, data, mode, o = {}) =>
  F(id, 'PUT', '/content', { query: { path: p, mode }, rawBody: data, headers: { 'content-type': 'application/octet-stream' }, ...o });
const read = (id, p, o = {}) => F(id, 'GET', '/content', { query: { path: p }, ...o });
const stat = (id, p) => F(id, 'GET', '/stat', { query: { path: p } });
const mkdir = (id, body, o = {}) => F(id, 'PUT', '/directories', { body, ...o });
const move = (id, from, to, o = {}) => F(id, 'POST', '/move', { body: { from, to }, ...o });
const remove = (id, p, recursive, o = {}) => F(id, 'DELETE', '', { query: { path: p, recursive }, ...o });

let A, D, W, WD; // busybox and Debian sandboxes, their workdirs
before(async () => {
  s = await startStack();
  A = (await createSandbox('sandpit-test/busybox')).uid;
  D = (await createSandbox('sandpit-test/debian')).uid;
  W = (await exec(A, ['pwd'])).out.trim();
  WD = (await exec(D, ['pwd'])).out.trim();
  assert.match(W, /^\//);
});
after(async () => {
  for (const id of made) await s?.api('DELETE', `/v1/sandboxes/${id}`, { headers: { 'if-match': null } }).catch(() => {});
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await s?.stop();
  assert.ok(v1Checked() > 0);
});

test('writeFile/readFile: raw bytes both ways, exact Content-Length, mode without umask, FileInfo after', async () => {
  const data = Buffer.from([0, 1, 2, 255, 254, 10, 13, 0x80, 0xc3]);
  let r = await write(A, `${W}/a.bin`, data, 0o600);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.info, { path: `${W}/a.bin`, size: '9', mode: 0o600, isDir: false, type: 'regular', linkTarget: '' });
  r = await read(A, `${W}/a.bin`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.headers['content-type'], 'application/octet-stream');
  assert.equal(r.headers['content-length'], '9');
  assert.equal(r.headers['transfer-encoding'], undefined);
  assert.deepEqual(r.raw, data);
  // mode 0 is 0644; 0777 is 0777 (no umask); bits beyond 0777 are dropped
  assert.equal((await write(A, `${W}/m0`, 'x', 0)).json.info.mode, 0o644);
  assert.equal((await write(A, `${W}/m0`, 'x')).json.info.mode, 0o644);
  assert.equal((await write(A, `${W}/m7`, 'x', 0o777)).json.info.mode, 0o777);
  assert.equal((await write(A, `${W}/m7`, 'x', 0o4755)).json.info.mode, 0o755);
  assert.equal((await sh(A, `stat -c %a ${W}/m7`)).out.trim(), '755');
  // replaces the whole file; an empty body makes an empty file
  r = await write(A, `${W}/a.bin`, '');
  assert.equal(r.json.info.size, '0');
  r = await read(A, `${W}/a.bin`);
  assert.equal(r.headers['content-length'], '0');
  assert.equal(r.raw.length, 0);
  // owned by the sandbox user (F5), same bytes through cat (F6)
  await write(A, `${W}/f6`, 'hello\n');
  assert.equal((await sh(A, `cat ${W}/f6; [ -O ${W}/f6 ] && echo mine`)).out, 'hello\nmine\n');
  // errors
  r = await read(A, `${W}/nope`);
  assert.equal(r.status, 404, r.text);
  r = await read(A, W);
  assert.equal(r.status, 409, r.text);
  assert.equal(r.json.code, 'failedPrecondition');
  r = await write(A, W, 'x');
  assert.equal(r.status, 409, r.text);
  r = await write(A, `${W}/no/such/dir/f`, 'x');
  assert.equal(r.status, 404, r.text);
  r = await read(A, 'relative');
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.code, 'invalidArgument');
  r = await write(A, `${W}/x`, 'x', -1);
  assert.equal(r.status, 400, r.text);
  // a FIFO and a device: refused, never a hang
  await sh(A, `mkfifo ${W}/fifo`);
  for (const p of [`${W}/fifo`, '/dev/zero']) {
    r = await read(A, p);
    assert.equal(r.status, 409, r.text);
    assert.match(r.json.message, /^path_authority_nonregular_object: /);
  }
  r = await write(A, `${W}/fifo`, 'x');
  assert.equal(r.status, 409, r.text);
  assert.match(r.json.message, /^path_authority_nonregular_object: /);
});

test('readFile of a 10 MiB binary file is byte-exact; one byte more is refused whole, pointing at download; writeFile the same', async () => {
  const big = Buffer.alloc(10 * 1024 * 1024);
  for (let i = 0; i < big.length; i += 4) big.writeUInt32LE((i * 2654435761) >>> 0, i);
  let r = await write(A, `${W}/big`, big, 0o644, { timeoutMs: 120000 });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.info.size, String(big.length));
  r = await read(A, `${W}/big`, { timeoutMs: 120000 });
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-length'], String(big.length));
  assert.ok(r.raw.equals(big), 'the bytes read are the bytes written');
  assert.equal((await sh(A, `md5sum < ${W}/big`)).out.split(' ')[0],
    (await import('node:crypto')).createHash('md5').update(big).digest('hex'));
  await sh(A, `printf x >> ${W}/big`);
  r = await read(A, `${W}/big`);
  assert.equal(r.status, 413, r.text);
  assert.equal(r.json.code, 'resourceExhausted');
  assert.match(r.json.message, /download/);
  r = await write(A, `${W}/big2`, Buffer.concat([big, Buffer.from('x')]), 0o644, { timeoutMs: 120000 });
  assert.equal(r.status, 413, r.text);
  assert.equal((await stat(A, `${W}/big2`)).status, 404);
  await remove(A, `${W}/big`);
});

test('stat and list: FileInfo types from lstat, a link that resolves as its target, one that does not as symlink; list pages by path', async () => {
  await sh(A, `mkdir -p ${W}/l/sub && printf abc > ${W}/l/f && ln -s f ${W}/l/ln && ln -s /nowhere ${W}/l/dangling && mkfifo ${W}/l/p && chmod 751 ${W}/l/sub`);
  let r = await stat(A, `${W}/l/f`);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.info, { path: `${W}/l/f`, size: '3', mode: 0o644 & ~0o022 | 0o644 & 0o644, isDir: false, type: 'regular', linkTarget: '' });
  assert.equal((await stat(A, `${W}/l/sub`)).json.info.type, 'directory');
  assert.equal((await stat(A, `${W}/l/sub`)).json.info.isDir, true);
  assert.equal((await stat(A, `${W}/l/sub`)).json.info.mode, 0o751);
  assert.equal((await stat(A, `${W}/l/ln`)).json.info.type, 'regular');
  assert.deepEqual((await stat(A, `${W}/l/dangling`)).json.info,
    { path: `${W}/l/dangling`, size: '8', mode: 0o777, isDir: false, type: 'symlink', linkTarget: '/nowhere' });
  assert.equal((await stat(A, `${W}/l/p`)).json.info.type, 'other');
  assert.equal((await stat(A, `${W}/l/none`)).status, 404);
  r = await F(A, 'GET', '', { query: { path: `${W}/l` } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.entries.map((e) => [e.path, e.type]), [
    [`${W}/l/dangling`, 'symlink'], [`${W}/l/f`, 'regular'], [`${W}/l/ln`, 'regular'], [`${W}/l/p`, 'other'], [`${W}/l/sub`, 'directory']]);
  assert.equal(r.json.nextPageToken, '');
  // pages of 2
  const seen = [];
  let tok = '';
  for (let i = 0; i < 10; i++) {
    r = await F(A, 'GET', '', { query: { path: `${W}/l`, pageSize: 2, pageToken: tok || undefined } });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.entries.length <= 2);
    seen.push(...r.json.entries.map((e) => e.path));
    tok = r.json.nextPageToken;
    if (!tok) break;
  }
  assert.equal(seen.length, 5);
  assert.equal((await F(A, 'GET', '', { query: { path: `${W}/l`, orderBy: 'path' } })).status, 200);
  assert.equal((await F(A, 'GET', '', { query: { path: `${W}/l`, orderBy: 'size' } })).status, 400);
  assert.equal((await F(A, 'GET', '', { query: { path: `${W}/l`, pageToken: 'zz' } })).status, 400);
  assert.equal((await F(A, 'GET', '', { query: { path: `${W}/l/f` } })).status, 409);
  assert.equal((await F(A, 'GET', '', { query: { path: `${W}/nope` } })).status, 404);
  assert.equal((await F(A, 'GET', '', {})).status, 400);
});

test('mkdir: the mode given (no umask), parents or NOT_FOUND, a repeated mkdir converges with its mode unchanged', async () => {
  let r = await mkdir(A, { path: `${W}/d1`, mode: 0o700 });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, {});
  assert.equal((await stat(A, `${W}/d1`)).json.info.mode, 0o700);
  r = await mkdir(A, { path: `${W}/d1`, mode: 0o777 });
  assert.equal(r.status, 200, r.text);
  assert.equal((await stat(A, `${W}/d1`)).json.info.mode, 0o700);
  r = await mkdir(A, { path: `${W}/d0` });
  assert.equal((await stat(A, `${W}/d0`)).json.info.mode, 0o755);
  r = await mkdir(A, { path: `${W}/p1/p2/p3`, mode: 0o777 });
  assert.equal(r.status, 404, r.text);
  assert.equal((await stat(A, `${W}/p1`)).status, 404, 'nothing made without parents');
  r = await mkdir(A, { path: `${W}/p1/p2/p3`, mode: 0o777, parents: true });
  assert.equal(r.status, 200, r.text);
  assert.equal((await stat(A, `${W}/p1/p2/p3`)).json.info.mode, 0o777);
  assert.equal((await stat(A, `${W}/p1/p2`)).json.info.mode, 0o755);
  await write(A, `${W}/file1`, 'x');
  r = await mkdir(A, { path: `${W}/file1` });
  assert.equal(r.status, 409, r.text);
  r = await mkdir(A, { path: `${W}/file1/sub`, parents: true });
  assert.ok(r.status === 409 || r.status === 400, r.text);
  for (const body of [{}, { path: 'rel' }, { path: `${W}/x`, other: 1 }, { path: `${W}/x`, parents: 'yes' }]) {
    r = await mkdir(A, body);
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
  }
});

test('move: exact destination, a file replaced, directory destinations refused, never a copy across filesystems', async () => {
  await write(A, `${W}/mv1`, 'one');
  await write(A, `${W}/mv2`, 'two');
  let r = await move(A, `${W}/mv1`, `${W}/mv2`);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, {});
  assert.equal((await read(A, `${W}/mv2`)).text, 'one');
  assert.equal((await stat(A, `${W}/mv1`)).status, 404);
  await mkdir(A, { path: `${W}/mvd` });
  r = await move(A, `${W}/mv2`, `${W}/mvd`);
  assert.equal(r.status, 409, r.text);
  assert.match(r.json.message, /^move_destination_is_directory: /);
  await mkdir(A, { path: `${W}/mvd2` });
  r = await move(A, `${W}/mvd2`, `${W}/mvd`);
  assert.equal(r.status, 409, r.text);
  assert.match(r.json.message, /^move_destination_occupied: /);
  r = await move(A, `${W}/mvd2`, `${W}/mv2`);
  assert.match(r.json.message, /^move_destination_occupied: /);
  r = await move(A, `${W}/mvd2`, `${W}/mvd3`);
  assert.equal(r.status, 200, r.text);
  assert.equal((await stat(A, `${W}/mvd3`)).json.info.type, 'directory');
  assert.equal((await move(A, `${W}/none`, `${W}/x`)).status, 404);
  // another filesystem: a writable one whose device differs from the workdir's
  const devs = (await sh(A, `for d in ${W} /tmp /dev/shm /.sandpit/p; do [ -w $d ] && echo "$d $(stat -c %d $d)"; done`)).out.trim().split('\n').map((l) => l.split(' '));
  const other = devs.find(([d, dev]) => d !== W && dev !== devs[0][1]);
  assert.ok(other, `no other filesystem: ${JSON.stringify(devs)}`);
  r = await move(A, `${W}/mv2`, `${other[0]}/mv2`);
  assert.equal(r.status, 409, r.text);
  assert.match(r.json.message, /^move_crosses_filesystem: /);
  assert.equal((await read(A, `${W}/mv2`)).text, 'one', 'the source stays');
  assert.equal((await stat(A, `${other[0]}/mv2`)).status, 404, 'nothing copied');
  for (const body of [{ from: `${W}/a` }, { from: 'a', to: `${W}/b` }, { from: `${W}/a`, to: `${W}/b`, x: 1 }]) {
    r = await F(A, 'POST', '/move', { body });
    assert.equal(r.status, 400, r.text);
  }
});

test('remove: absent is fine, a link is removed not followed, nonrecursive on a nonempty directory refused unchanged, recursive with its partial result', async () => {
  let r = await remove(A, `${W}/absent`);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { completedPaths: [], completedCount: 0, failedPath: '' });
  await write(A, `${W}/rm1`, 'x');
  r = await remove(A, `${W}/rm1`);
  assert.deepEqual(r.json, { completedPaths: [`${W}/rm1`], completedCount: 1, failedPath: '' });
  await sh(A, `mkdir -p ${W}/rt/a/b ${W}/keep && echo k > ${W}/keep/k && touch ${W}/rt/a/b/f ${W}/rt/g && ln -s ${W}/keep ${W}/rt/link`);
  r = await remove(A, `${W}/rt`);
  assert.equal(r.status, 409, r.text);
  assert.equal(r.json.code, 'failedPrecondition');
  assert.equal((await stat(A, `${W}/rt/a/b/f`)).status, 200, 'unchanged');
  r = await remove(A, `${W}/rt`, true);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.failedPath, '');
  assert.equal(r.json.completedCount, 6);
  assert.deepEqual([...r.json.completedPaths].sort(), [`${W}/rt`, `${W}/rt/a`, `${W}/rt/a/b`, `${W}/rt/a/b/f`, `${W}/rt/g`, `${W}/rt/link`].sort());
  assert.equal(r.json.completedPaths.at(-1), `${W}/rt`);
  assert.equal((await read(A, `${W}/keep/k`)).text, 'k\n', 'the link was removed, its target kept');
  // a removal that stops partway: a directory the user cannot write
  await sh(A, `mkdir -p ${W}/rp/z/locked && touch ${W}/rp/z/locked/f && chmod 555 ${W}/rp/z/locked`);
  r = await remove(A, `${W}/rp`, true);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.failedPath, `${W}/rp/z/locked/f`);
  assert.equal(r.json.completedCount, r.json.completedPaths.length);
  assert.equal((await stat(A, `${W}/rp/z/locked/f`)).status, 200);
  await sh(A, `chmod 755 ${W}/rp/z/locked`);
  // over 1000 removed: completedPaths holds the first 1000, completedCount all
  await sh(A, `mkdir ${W}/many && cd ${W}/many && i=0; while [ $i -lt 1100 ]; do : > f$i; i=$((i+1)); done`);
  r = await remove(A, `${W}/many`, true);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.completedPaths.length, 1000);
  assert.equal(r.json.completedCount, 1101);
  assert.equal((await remove(A, '/')).status, 400);
  assert.equal((await remove(A, 'rel')).status, 400);
});

test('F2: planted symlinks to /etc and to another user\'s files reach nothing the sandbox user could not, for every file operation', async () => {
  // another user's private file and directory (docker exec as uid 4242):
  // the sandbox's user (root without capabilities, or not root) cannot
  // reach them, so neither can the API through a link
  const C = `sandpit-${D}`;
  await run('docker', ['exec', '-u', '4242', C, 'sh', '-c',
    'umask 077; mkdir -p /tmp/o4242 && echo secret > /tmp/o4242/f && echo secret > /tmp/s4242']);
  const passwd = (await sh(D, 'cat /etc/passwd')).out;
  const etc = (await sh(D, 'ls -la /etc /tmp/o4242 2>&1 | md5sum')).out;
  await sh(D, `ln -s /etc ${WD}/etc && ln -s /tmp/s4242 ${WD}/s && ln -s /etc/passwd ${WD}/pw && ln -s /tmp/o4242 ${WD}/o && echo mine > ${WD}/mine`);
  // what the sandbox user itself can do through the same links
  assert.notEqual((await sh(D, `cat ${WD}/s`)).code, 0, 'the user cannot read it');
  assert.notEqual((await sh(D, `echo x > ${WD}/pw`)).code, 0, 'the user cannot write /etc/passwd');
  let r;
  const refused = async (x, what) => {
    r = x;
    assert.equal(r.status, 403, `${what}: ${r.text}`);
    assert.equal(r.json.code, 'permissionDenied');
  };
  await refused(await write(D, `${WD}/etc/passwd`, 'owned\n'), 'write through a dir link');
  await refused(await write(D, `${WD}/pw`, 'owned\n'), 'write through a file link');
  await refused(await write(D, `${WD}/etc/new`, 'x'), 'create through a link');
  await refused(await write(D, `${WD}/o/new`, 'x'), 'create in another user\'s dir');
  await refused(await write(D, `${WD}/s`, 'x'), 'write another user\'s file');
  await refused(await read(D, `${WD}/s`), 'read another user\'s file');
  await refused(await read(D, `${WD}/o/f`), 'read in another user\'s dir');
  await refused(await mkdir(D, { path: `${WD}/etc/newdir` }), 'mkdir through a link');
  await refused(await mkdir(D, { path: `${WD}/o/a/b`, parents: true }), 'mkdir -p through a link');
  // a move is refused by the user's rights or, first, by crossing from the
  // workdir's filesystem (the rootfs and /tmp are others): either way not done
  for (const [from, to] of [[`${WD}/mine`, `${WD}/etc/mine`], [`${WD}/mine`, `${WD}/o/mine`], [`${WD}/etc/passwd`, `${WD}/stolen`], [`${WD}/o/f`, `${WD}/o/g`]]) {
    r = await move(D, from, to);
    assert.ok(r.status === 403 || (r.status === 409 && /^move_crosses_filesystem: /.test(r.json.message)), `move ${from} ${to}: ${r.text}`);
  }
  assert.equal((await read(D, `${WD}/mine`)).text, 'mine\n');
  await refused(await remove(D, `${WD}/etc/passwd`), 'remove through a link');
  await refused(await remove(D, `${WD}/o/f`), 'remove in another user\'s dir');
  assert.notEqual((await stat(D, `${WD}/o/f`)).status, 200, 'stat through it is refused too');
  r = await remove(D, `${WD}/o/`, true);
  assert.ok(r.status === 403 || r.json.failedPath, r.text);
  // the link itself goes, never what it names
  for (const l of ['etc', 'o', 'pw', 's']) {
    r = await remove(D, `${WD}/${l}`, true);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.completedPaths, [`${WD}/${l}`]);
  }
  assert.equal((await sh(D, 'cat /etc/passwd')).out, passwd);
  assert.equal((await sh(D, 'ls -la /etc /tmp/o4242 2>&1 | md5sum')).out, etc);
  assert.equal((await run('docker', ['exec', '-u', '4242', C, 'cat', '/tmp/o4242/f', '/tmp/s4242'])).stdout, 'secret\nsecret\n');
  assert.equal((await sh(D, '[ -e /stolen ] || [ -e /etc/mine ] || [ -e /etc/new ] || echo none')).out, 'none\n');
});

test('F3: a symlink/directory swap race beside 200 writes and the other operations lands nothing outside the intended path', { timeout: 600000 }, async () => {
  await run('docker', ['exec', '-u', '4242', `sandpit-${D}`, 'sh', '-c', 'umask 077; mkdir -p /tmp/r4242']);
  const etc = (await sh(D, 'ls -la /etc /root 2>&1 | md5sum')).out;
  // the sandbox's own code swaps race between a directory and a link to
  // /etc or to another user's directory
  const p = await ep(D, 'POST', '/v1/processes', {}, {
    body: { cmd: ['sh', '-c', `cd ${WD} && i=0; while [ $i -lt 200000 ]; do rm -rf race; mkdir race; rm -rf race; ln -s /etc race; rm -f race; mkdir race; rm -rf race; ln -s /tmp/r4242 race; rm -f race; i=$((i+1)); done`] },
  });
  assert.equal(p.status, 201, p.text);
  let ok = 0, refused = 0;
  try {
    for (let i = 0; i < 200; i++) {
      const r = await write(D, `${WD}/race/passwd`, `x${i}\n`);
      if (r.status === 200) ok++; else refused++;
      assert.ok([200, 403, 404, 409].includes(r.status), r.text);
    }
    for (let i = 0; i < 20; i++) {
      for (const r of [
        await read(D, `${WD}/race/shadow`),
        await mkdir(D, { path: `${WD}/race/d${i}`, parents: true }),
        await move(D, `${WD}/race/passwd`, `${WD}/race/group`),
        await remove(D, `${WD}/race/hosts`),
        await remove(D, `${WD}/race`, true),
        await stat(D, `${WD}/race/passwd`),
      ]) assert.ok([200, 403, 404, 409].includes(r.status), r.text);
    }
  } finally {
    await ep(D, 'POST', '/v1/processes/{process}/signal', { process: p.json.uid }, { body: { signal: 'kill' } });
  }
  console.log(`F3: ${ok} writes landed in the directory, ${refused} refused`);
  assert.equal((await sh(D, 'ls -la /etc /root 2>&1 | md5sum')).out, etc, '/etc and /root unchanged');
  assert.equal((await run('docker', ['exec', '-u', '4242', `sandpit-${D}`, 'sh', '-c',
    // not ls: GNU ls fails with EINVAL under this gVisor for a uid without a passwd entry
    'for f in /tmp/r4242/* /tmp/r4242/.[!.]*; do [ -e "$f" ] || [ -L "$f" ] && echo "$f"; done; true'])).stdout, '', 'nothing in the other user\'s directory');
});

test('both faces agree: written through /v1, read through /api/sandbox.readFile, and the other way', async () => {
  const text = 'both faces\n\u00e9\n';
  let r = await write(A, `${W}/faces1`, text, 0o640);
  assert.equal(r.status, 200, r.text);
  r = await s.api('GET', '/api/sandbox.readFile', { query: { sandboxId: A, path: `${W}/faces1` } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.content, text);
  r = await s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: A, path: `${W}/faces2`, content: Buffer.from([1, 2, 250]).toString('base64'), encoding: 'base64' } });
  assert.equal(r.status, 200, r.text);
  r = await read(A, `${W}/faces2`);
  assert.deepEqual(r.raw, Buffer.from([1, 2, 250]));
  assert.equal((await stat(A, `${W}/faces2`)).json.info.size, '3');
});

test('permissions: sandboxesFilesRead reads, sandboxesFilesWrite writes, each alone', async () => {
  await write(A, `${W}/perm`, 'p');
  const ro = await token(A, ['sandboxesFilesRead']);
  const wo = await token(A, ['sandboxesFilesWrite']);
  const ex = await token(A, ['sandboxesExec']);
  for (const t of [ro, ex]) {
    assert.equal((await write(A, `${W}/perm`, 'q', 0, { token: t })).status, 403);
    assert.equal((await mkdir(A, { path: `${W}/pd` }, { token: t })).status, 403);
    assert.equal((await move(A, `${W}/perm`, `${W}/perm2`, { token: t })).status, 403);
    assert.equal((await remove(A, `${W}/perm`, false, { token: t })).status, 403);
  }
  for (const t of [wo, ex]) {
    assert.equal((await read(A, `${W}/perm`, { token: t })).status, 403);
    assert.equal((await stat(A, `${W}/perm`)).status, 200);
    assert.equal((await F(A, 'GET', '/stat', { query: { path: `${W}/perm` }, token: t })).status, 403);
    assert.equal((await F(A, 'GET', '', { query: { path: W }, token: t })).status, 403);
  }
  assert.equal((await read(A, `${W}/perm`, { token: ro })).text, 'p');
  assert.equal((await write(A, `${W}/perm`, 'w', 0, { token: wo })).status, 200);
  // an API key is not an endpoint credential
  const r = await call('GET', '/v1/files/stat', {}, { endpoint: A, query: { path: `${W}/perm` } });
  assert.equal(r.status, 401, r.text);
  assert.equal((await stat(A, `${W}/perm`)).json.info.size, '1');
});
