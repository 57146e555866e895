// /v1 upload (multipart/form-data) and download (multipart/mixed) at the
// sandbox endpoint (issue 16), streamed through the helper's upload and
// download commands as the sandbox user: the x-sbx-framing rules of both
// operations, success and error, every answer and every part checked
// against the seed's schemas; 100 files and one 200 MiB file both ways
// with the bytes identical (sha256) and the worker's and nginx's RSS
// bounded; the streamed cap (transfer_max_mb) and its error; planted
// symlinks (F2) and a swap race (F3) reach nothing the sandbox user could
// not. gVisor: SANDPIT_TEST_RUNTIME=gvisor.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import { promisify } from 'node:util';
import { startStack } from './lib/stack.mjs';
import { ajv, seedValidator } from './lib/v1seed.mjs';
import { bytesOf, formData, mixedReader, rssOf, shaOf, streamRequest } from './lib/transfer.mjs';

const run = promisify(execFile);
const CAP_MB = 256;
const schema = (name) => ajv.getSchema(`seed#/components/schemas/${name}`) || ajv.compile({ $ref: `seed#/components/schemas/${name}` });
const isFileHeader = schema('FileHeader');
const isFileError = schema('FileError');
const isError = schema('Error');

let s, A, W, tok, checked = 0;
const made = [];

function checkAnswer(method, tmpl, r) {
  const v = seedValidator(method, tmpl, r.status);
  if (r.status === 200 && tmpl === '/v1/files/download') return;
  assert.ok(r.json !== undefined, `${method} ${tmpl} ${r.status}: not JSON: ${r.text}`);
  assert.ok(v(r.json), `${method} ${tmpl} ${r.status} breaks the seed's schema: ${ajv.errorsText(v.errors)}\n${r.text}`);
  checked++;
}

async function token(id, perms = ['sandboxesExec', 'sandboxesFilesRead', 'sandboxesFilesWrite']) {
  const r = await s.api('POST', `/v1/sandboxes/${id}/endpoint-credentials`, { body: { permissions: perms } });
  assert.equal(r.status, 200, r.text);
  return r.json.token;
}

const BOUNDARY = 'sandpitTestBoundary7f3a';
/** POST upload of items (see formData); o.raw: a body of its own, o.type: the Content-Type. */
async function upload(items, o = {}) {
  const r = await streamRequest(s, 'POST', `/endpoints/${o.sandbox ?? A}/v1/files/upload`, {
    headers: { authorization: `Bearer ${o.token ?? tok}`, 'content-type': o.type ?? `multipart/form-data; boundary=${BOUNDARY}`, ...o.headers },
    body: o.raw ?? formData(items, BOUNDARY, o), timeoutMs: 120000,
  });
  checkAnswer('POST', '/v1/files/upload', r);
  return r;
}

/** GET download of paths: { status, json (errors), parts, closed, headers }. */
async function download(paths, o = {}) {
  let mr = null;
  const raw = [];
  const qs = o.query ?? paths.map((p) => `paths=${encodeURIComponent(p)}`).join('&');
  const r = await streamRequest(s, 'GET', `/endpoints/${o.sandbox ?? A}/v1/files/download?${qs}`, {
    headers: { authorization: `Bearer ${o.token ?? tok}` }, keep: false, timeoutMs: 120000,
    onHead: (res) => {
      const m = /^multipart\/mixed; boundary=(\S+)$/.exec(res.headers['content-type'] || '');
      if (res.statusCode === 200 && m) mr = mixedReader(m[1]);
    },
    onData: (c) => { if (mr) mr.feed(c); else raw.push(c); },
  });
  if (!mr) {
    const text = Buffer.concat(raw).toString('utf8');
    r.text = text;
    try { r.json = JSON.parse(text); } catch { r.json = undefined; }
    checkAnswer('GET', '/v1/files/download', r);
    return r;
  }
  assert.equal(r.status, 200);
  assert.ok(r.complete, 'the answer ended cleanly');
  // every part: one of the four names, its content type, its schema
  const items = [];
  for (const p of mr.parts) {
    const disp = p.headers['content-disposition'];
    const name = /^attachment; name=(metadata|content|error|stream-error)$/.exec(disp)?.[1];
    assert.ok(name, `a part's Content-Disposition: ${disp}`);
    if (name === 'content') {
      assert.equal(p.headers['content-type'], 'application/octet-stream');
      const last = items.at(-1);
      assert.ok(last && last.header && last.size === undefined, 'content follows its metadata');
      last.size = p.size;
      last.sha256 = p.sha256;
      last.head = p.head;
      continue;
    }
    assert.equal(p.headers['content-type'], 'application/json');
    const v = { metadata: isFileHeader, error: isFileError, 'stream-error': isError }[name];
    assert.ok(v(p.json), `${name} part breaks the seed's schema: ${ajv.errorsText(v.errors)} ${JSON.stringify(p.json)}`);
    checked++;
    if (name === 'metadata') items.push({ header: p.json });
    else if (name === 'error') items.push({ error: p.json });
    else items.push({ streamError: p.json });
  }
  for (const it of items) if (it.header) assert.notEqual(it.size, undefined, `metadata of ${it.header.path} without content`);
  return { status: 200, items, closed: mr.closed, headers: r.headers };
}

const b64 = (x) => Buffer.from(x ?? '', 'base64').toString('utf8');
async function sh(script, id = A) {
  const r = await s.api('POST', `/endpoints/${id}/v1/processes/exec`, { key: null, headers: { authorization: `Bearer ${tok}` }, body: { cmd: ['sh', '-c', script] }, timeoutMs: 120000 });
  assert.equal(r.status, 200, r.text);
  return { out: b64(r.json.stdout), err: b64(r.json.stderr), code: r.json.exitCode ?? 0 };
}
const sha = (b) => crypto.createHash('sha256').update(b).digest('hex');

before(async () => {
  s = await startStack({ extraConf: `transfer_max_mb = ${CAP_MB}` });
  const r = await s.api('POST', '/v1/sandboxes', { body: { imageRef: 'sandpit-test/busybox' } });
  assert.equal(r.status, 201, r.text);
  A = r.json.uid;
  made.push(A);
  tok = await token(A);
  W = (await sh('pwd')).out.trim();
  assert.match(W, /^\//);
});
after(async () => {
  for (const id of made) await s?.api('DELETE', `/v1/sandboxes/${id}`, { headers: { 'if-match': null } }).catch(() => {});
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await s?.stop();
  assert.ok(checked > 0);
});

test('the endpoint lists upload and download among its capabilities', async () => {
  const r = await s.api('GET', `/v1/sandboxes/${A}`);
  assert.equal(r.status, 200, r.text);
  const caps = r.json.core?.endpoint?.capabilities ?? r.json.endpoint?.capabilities;
  assert.ok(Array.isArray(caps), r.text);
  for (const op of ['upload', 'download', 'readFile', 'writeFile']) assert.ok(caps.includes(op), `${op} in ${caps}`);
});

test('upload: ordered metadata/content pairs, modes without umask, an empty file, a replaced file, through an in-sandbox link', async () => {
  await sh(`printf old > ${W}/u-old && ln -s u-target ${W}/u-link && printf t > ${W}/u-target`);
  const bin = Buffer.from([0, 1, 2, 255, 13, 10, 45, 45, 0x80]);
  const r = await upload([
    { path: `${W}/u-a`, mode: 0o600, data: bin },
    { path: `${W}/u-empty`, data: '' },
    { path: `${W}/u-old`, mode: 0, data: 'new' },
    { path: `${W}/u-777`, mode: 0o4777, data: 'x' },
    { path: `${W}/u-link`, data: 'through the link' },
    // a content part whose bytes hold the delimiter without its CRLF
    { path: `${W}/u-tricky`, data: `--${BOUNDARY}\n--${BOUNDARY}--` },
  ]);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { filesWritten: 6 });
  const st = (await sh(`cd ${W} && for f in u-a u-empty u-old u-777 u-target u-tricky; do stat -c '%n %a %s' $f; done; [ -L u-link ] && echo link; [ -O u-a ] && echo mine; cat u-old u-target; echo; cat u-tricky`)).out;
  assert.equal(st, `u-a 600 9\nu-empty 644 0\nu-old 644 3\nu-777 777 1\nu-target 644 16\nu-tricky 644 ${2 * BOUNDARY.length + 7}\nlink\nmine\nnewthrough the link\n--${BOUNDARY}\n--${BOUNDARY}--`);
  const d = await download([`${W}/u-a`]);
  assert.equal(sha(bin), d.items[0].sha256);
  // no items at all: nothing written
  const z = await upload([]);
  assert.equal(z.status, 200, z.text);
  assert.deepEqual(z.json, { filesWritten: 0 });
  // no leftover temporary files
  assert.equal((await sh(`ls -a ${W} | grep sandpit-upload || true`)).out, '');
});

test('upload: malformed occurrences are invalidArgument naming the occurrence; truncated content never completes its item', async () => {
  const bad = async (items, field, o = {}) => {
    const r = await upload(items, o);
    assert.equal(r.status, o.status ?? 400, `${field}: ${r.text}`);
    if ((o.status ?? 400) === 400) {
      assert.equal(r.json.code, 'invalidArgument');
      const br = r.json.details.find((x) => x['@type'] === 'type.googleapis.com/google.rpc.BadRequest');
      assert.ok(br, r.text);
      assert.equal(br.fieldViolations[0].field, field, r.text);
    }
    return r;
  };
  let r = await bad([{ meta: null, data: 'x' }], 'content[0]');
  assert.match(r.json.message, /metadata/);
  // a second metadata part where item 0's content is due
  await bad([{ path: `${W}/m1`, data: null }, { path: `${W}/m2`, data: 'x' }], 'metadata[0]');
  await bad([{ path: 'relative', data: 'x' }], 'metadata[0].path');
  await bad([{ meta: '{"path":"/x","other":1}', data: 'x' }], 'metadata[0]');
  await bad([{ meta: '{"mode":1}', data: 'x' }], 'metadata[0].path');
  await bad([{ meta: '{"path":"/x","mode":"644"}', data: 'x' }], 'metadata[0].mode');
  await bad([{ meta: 'not json', data: 'x' }], 'metadata[0]');
  await bad([{ path: `${W}/t`, metaType: 'text/plain', data: 'x' }], 'metadata[0]');
  await bad([{ path: `${W}/t`, contentType: 'text/plain', data: 'x' }], 'content[0]');
  await bad([{ path: `${W}/t`, headers: 'Content-Transfer-Encoding: base64\r\n', data: 'eA==' }], 'content[0]');
  r = await bad([{ path: `${W}/ok1`, data: 'one' }, { path: 'rel2', data: 'x' }], 'metadata[1].path');
  assert.match(r.json.message, /item 1/);
  assert.equal((await sh(`cat ${W}/ok1`)).out, 'one', 'the item before it stays written');
  // no closing delimiter: the last item's content never ends, so it is
  // not written; the one before is
  await sh(`rm -f ${W}/cut1 ${W}/cut2`);
  r = await bad([{ path: `${W}/cut1`, data: 'whole' }, { path: `${W}/cut2`, data: 'partial' }], 'content[1]', { close: false });
  assert.match(r.json.message, /not written/);
  assert.equal((await sh(`cat ${W}/cut1; [ -e ${W}/cut2 ] || echo absent`)).out, 'wholeabsent\n');
  // cut inside the content: the item is not written
  r = await upload(null, { raw: Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="metadata"\r\nContent-Type: application/json\r\n\r\n{"path":"${W}/cut3"}\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="content"\r\nContent-Type: application/octet-stream\r\n\r\nhalf of it`) });
  assert.equal(r.status, 400, r.text);
  assert.equal((await sh(`[ -e ${W}/cut3 ] || echo absent; ls -a ${W} | grep sandpit-upload || true`)).out, 'absent\n');
  // not multipart/form-data, or no boundary
  for (const type of ['application/json', 'multipart/form-data', 'multipart/mixed; boundary=x']) {
    r = await upload([{ path: `${W}/t`, data: 'x' }], { type });
    assert.equal(r.status, 415, `${type}: ${r.text}`);
    assert.equal(r.json.code, 'invalidArgument');
  }
  // the body is not multipart at all
  r = await upload(null, { raw: Buffer.from('just bytes') });
  assert.equal(r.status, 400, r.text);
});

test('upload: non-regular objects and missing parents are refused with the document\'s errors; earlier files stay', async () => {
  await sh(`mkdir -p ${W}/udir && rm -f ${W}/ufifo && mkfifo ${W}/ufifo`);
  let r = await upload([{ path: `${W}/before`, data: 'b' }, { path: `${W}/udir`, data: 'x' }]);
  assert.equal(r.status, 409, r.text);
  assert.equal(r.json.code, 'failedPrecondition');
  assert.match(r.json.message, /^path_authority_nonregular_object: /);
  assert.match(r.json.message, /item 1; 1 files written before it/);
  assert.equal((await sh(`cat ${W}/before`)).out, 'b');
  r = await upload([{ path: `${W}/ufifo`, data: 'x' }]);
  assert.equal(r.status, 409, r.text);
  assert.match(r.json.message, /^path_authority_nonregular_object: /);
  r = await upload([{ path: '/dev/null', data: 'x' }]);
  assert.equal(r.status, 409, r.text);
  r = await upload([{ path: `${W}/no/such/dir/f`, data: 'x' }]);
  assert.equal(r.status, 404, r.text);
  assert.equal(r.json.code, 'notFound');
});

test('upload over the streamed cap: resourceExhausted naming content, before and while the body streams', async () => {
  // a Content-Length past the cap and its framing: refused before a byte is read
  let r = await streamRequest(s, 'POST', `/endpoints/${A}/v1/files/upload`, {
    headers: { authorization: `Bearer ${tok}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': String((CAP_MB + 65) << 20) },
    body: Buffer.from(`--${BOUNDARY}--\r\n`), tolerateReset: true,
  });
  if (r.status) {
    checkAnswer('POST', '/v1/files/upload', r);
    assert.equal(r.status, 413, r.text);
    assert.equal(r.json.code, 'resourceExhausted');
    assert.match(r.json.message, /^content: .*transfer_max_mb/);
  }
  // streamed (chunked): counted as it comes
  const zeros = Buffer.alloc(1 << 20);
  async function* over() { for (let i = 0; i < CAP_MB + 1; i++) yield zeros; }
  r = await upload([{ path: `${W}/small`, data: 'fits' }, { path: `${W}/huge`, data: over() }]);
  assert.equal(r.status, 413, r.text);
  assert.equal(r.json.code, 'resourceExhausted');
  assert.match(r.json.message, /^content: item 1 .*streamed cap of 268435456 bytes/);
  assert.equal((await sh(`cat ${W}/small; [ -e ${W}/huge ] || echo absent; ls -a ${W} | grep sandpit-upload || true`)).out, 'fitsabsent\n');
});

test('download: request order with duplicates, absent and non-regular paths as error parts, modes, a clean closing delimiter', async () => {
  await sh(`cd ${W} && printf abc > d1 && chmod 640 d1 && : > d-empty && mkdir -p d-dir && rm -f d-fifo && mkfifo d-fifo`);
  const d = await download([`${W}/d1`, `${W}/absent`, `${W}/d1`, `${W}/d-empty`, `${W}/d-dir`, `${W}/d-fifo`, '/dev/zero']);
  assert.ok(d.closed, 'the closing delimiter came');
  assert.equal(d.items.length, 7);
  assert.deepEqual(d.items[0].header, { path: `${W}/d1`, mode: 0o640 });
  assert.equal(d.items[0].sha256, sha('abc'));
  assert.equal(d.items[1].error.path, `${W}/absent`);
  assert.equal(d.items[1].error.failure.code, 'notFound');
  assert.deepEqual(d.items[2].header, d.items[0].header);
  assert.equal(d.items[2].sha256, sha('abc'));
  assert.equal(d.items[3].size, 0);
  for (const i of [4, 5, 6]) {
    assert.equal(d.items[i].error.failure.code, 'failedPrecondition', JSON.stringify(d.items[i]));
    assert.match(d.items[i].error.failure.message, /^path_authority_nonregular_object: /);
  }
  assert.ok(!d.items.some((x) => x.streamError));
});

test('download: paths validated at the edge (required, absolute, UTF-8), permissions per operation', async () => {
  let r = await download([], { query: '' });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.details[0].fieldViolations[0].field, 'paths');
  r = await download([`${W}/d1`, 'relative']);
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.details[0].fieldViolations[0].field, 'paths[1]');
  r = await download([], { query: 'paths=%2Fa%FF' });
  assert.equal(r.status, 400, r.text);
  r = await download([], { query: `paths=${encodeURIComponent(`${W}/d1`)}&other=1` });
  assert.equal(r.status, 400, r.text);
  r = await download([`/${'x'.repeat(4097)}`]);
  assert.ok(r.status === 400 || r.status === 414, r.text);
  const wo = await token(A, ['sandboxesFilesWrite']);
  const ro = await token(A, ['sandboxesFilesRead']);
  r = await download([`${W}/d1`], { token: wo });
  assert.equal(r.status, 403, r.text);
  r = await upload([{ path: `${W}/p`, data: 'x' }], { token: ro });
  assert.equal(r.status, 403, r.text);
  assert.equal((await download([`${W}/d1`], { token: ro })).items[0].sha256, sha('abc'));
});

test('100 files up and down: the same bytes both ways', async () => {
  await sh(`mkdir -p ${W}/h`);
  const files = Array.from({ length: 100 }, (_, i) => ({ path: `${W}/h/f${i}`, data: crypto.randomBytes(1000 + i * 97) }));
  const r = await upload(files);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { filesWritten: 100 });
  const sums = (await sh(`cd ${W}/h && sha256sum f* | sort -k2`)).out.trim().split('\n').map((l) => l.split(/\s+/));
  const want = new Map(files.map((f) => [f.path.split('/').pop(), sha(f.data)]));
  assert.equal(sums.length, 100);
  for (const [sum, name] of sums) assert.equal(sum, want.get(name), name);
  const d = await download(files.map((f) => f.path));
  assert.ok(d.closed);
  assert.equal(d.items.length, 100);
  d.items.forEach((it, i) => {
    assert.equal(it.header.path, files[i].path);
    assert.equal(it.sha256, sha(files[i].data), files[i].path);
  });
});

test('one 200 MiB file up and down: the same bytes (sha256), the worker\'s and nginx\'s memory bounded', { timeout: 300000 }, async () => {
  const N = 200 << 20;
  const want = await shaOf(N, 7);
  const workers = () => rssOf(s.config, 'sandpitd');
  const nginx = () => rssOf(s.dir, 'nginx');
  const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0);
  const w0 = workers(), n0 = nginx();
  let t = Date.now();
  const r = await upload([{ path: `${W}/big`, mode: 0o644, data: bytesOf(N, 7) }]);
  const upMs = Date.now() - t;
  assert.equal(r.status, 200, r.text);
  const w1 = workers(), n1 = nginx();
  assert.equal((await sh(`sha256sum < ${W}/big`)).out.split(/\s/)[0], want, 'the bytes in the sandbox are the bytes sent');
  t = Date.now();
  const d = await download([`${W}/big`]);
  const downMs = Date.now() - t;
  const w2 = workers(), n2 = nginx();
  assert.equal(d.items[0].size, N);
  assert.equal(d.items[0].sha256, want, 'the bytes downloaded are the bytes in the sandbox');
  console.log(`200 MiB: upload ${upMs} ms, download ${downMs} ms`);
  console.log(`RSS KiB, workers before/after upload/after download: ${JSON.stringify(w0)} ${JSON.stringify(w1)} ${JSON.stringify(w2)}`);
  console.log(`RSS KiB, nginx before/after upload/after download: ${JSON.stringify(n0)} ${JSON.stringify(n1)} ${JSON.stringify(n2)}`);
  // every worker process grew by less than 64 MiB (a whole file would be 200)
  for (const [pid, kb] of Object.entries({ ...w1, ...w2 })) {
    const before = w0[pid] ?? 0;
    assert.ok(Math.max(w1[pid] ?? 0, w2[pid] ?? 0) - before < 64 * 1024, `worker ${pid}: ${before} → ${kb} KiB`);
  }
  assert.ok(Math.max(sum(n1), sum(n2)) - sum(n0) < 64 * 1024, `nginx: ${sum(n0)} → ${sum(n1)}, ${sum(n2)} KiB`);
  await sh(`rm -f ${W}/big`);
});

test('F2: planted symlinks reach nothing the sandbox user could not, up or down', async () => {
  const C = `sandpit-${A}`;
  await run('docker', ['exec', '-u', '4242', C, 'sh', '-c', 'umask 077; mkdir -p /tmp/o4242 && echo secret > /tmp/o4242/f && echo secret > /tmp/s4242']);
  const etc = (await sh('ls -la /etc /tmp/o4242 2>&1 | md5sum')).out;
  await sh(`cd ${W} && rm -rf etc s o && ln -s /etc etc && ln -s /tmp/s4242 s && ln -s /tmp/o4242 o`);
  assert.notEqual((await sh(`cat ${W}/s`)).code, 0, 'the user cannot read it');
  for (const p of [`${W}/etc/passwd`, `${W}/etc/new`, `${W}/o/new`, `${W}/s`, `${W}/o/f`]) {
    const r = await upload([{ path: p, data: 'owned\n' }]);
    assert.equal(r.status, 403, `${p}: ${r.text}`);
    assert.equal(r.json.code, 'permissionDenied');
  }
  const d = await download([`${W}/s`, `${W}/o/f`, `${W}/etc/passwd`]);
  for (const i of [0, 1]) assert.equal(d.items[i].error?.failure.code, 'permissionDenied', JSON.stringify(d.items[i]));
  assert.ok(d.items[2].header, 'a file the user may read reads through the link');
  assert.equal(d.items[2].sha256, sha((await sh('cat /etc/passwd')).out));
  assert.equal((await sh('ls -la /etc /tmp/o4242 2>&1 | md5sum')).out, etc);
  assert.equal((await run('docker', ['exec', '-u', '4242', C, 'cat', '/tmp/o4242/f', '/tmp/s4242'])).stdout, 'secret\nsecret\n');
});

test('F3: a symlink/directory swap race beside 40 uploads and downloads lands nothing outside the intended path', { timeout: 120000 }, async () => {
  await run('docker', ['exec', '-u', '4242', `sandpit-${A}`, 'sh', '-c', 'umask 077; mkdir -p /tmp/r4242']);
  const etc = (await sh('ls -la /etc /root 2>&1 | md5sum')).out;
  const p = await s.api('POST', `/endpoints/${A}/v1/processes`, {
    key: null, headers: { authorization: `Bearer ${tok}` },
    body: { cmd: ['sh', '-c', `cd ${W} && i=0; while [ $i -lt 200000 ]; do rm -rf race; mkdir race; rm -rf race; ln -s /etc race; rm -f race; mkdir race; rm -rf race; ln -s /tmp/r4242 race; rm -f race; i=$((i+1)); done`] },
  });
  assert.equal(p.status, 201, p.text);
  let ok = 0;
  try {
    for (let i = 0; i < 40; i++) {
      const r = await upload([{ path: `${W}/race/passwd`, data: `x${i}\n` }, { path: `${W}/race/group`, data: 'g\n' }]);
      assert.ok([200, 403, 404, 409].includes(r.status), r.text);
      if (r.status === 200) ok++;
      const d = await download([`${W}/race/shadow`, `${W}/race/passwd`]);
      assert.equal(d.items.length, 2);
      for (const it of d.items) assert.ok(it.header || ['permissionDenied', 'notFound', 'failedPrecondition'].includes(it.error?.failure.code), JSON.stringify(it));
    }
  } finally {
    await s.api('POST', `/endpoints/${A}/v1/processes/${p.json.uid}/signal`, { key: null, headers: { authorization: `Bearer ${tok}` }, body: { signal: 'kill' } });
  }
  console.log(`F3: ${ok} of 40 uploads landed in the directory`);
  assert.equal((await sh('ls -la /etc /root 2>&1 | md5sum')).out, etc, '/etc and /root unchanged');
  assert.equal((await run('docker', ['exec', '-u', '4242', `sandpit-${A}`, 'sh', '-c',
    'for f in /tmp/r4242/* /tmp/r4242/.[!.]*; do [ -e "$f" ] || [ -L "$f" ] && echo "$f"; done; true'])).stdout, '', 'nothing in the other user\'s directory');
});
