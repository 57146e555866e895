// /v1 processes at the sandbox endpoint (issue 16): exec, createProcess,
// listProcesses, getProcess, readOutput, signal, through the helper inside
// each sandbox (sandbox/helper/): each operation's success and error
// answers, permissions per operation, Idempotency-Key (fresh, replay,
// another payload), a process that outlives a full stop and start of the
// stack (its output intact, its status read after), retention overflow
// (failedPrecondition on the dropped range), each signal, busybox and
// Debian images (and gVisor: SANDPIT_TEST_RUNTIME=gvisor), and the
// helper's volume made once per server, and that a running process is no
// activity (its sandbox expires). Every answer is validated
// against the seed document's schema for that operation and status, as
// v1.test.mjs does.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { docker, repoRoot, startStack, waitFor } from './lib/stack.mjs';
import { v1Call, v1Checked } from './lib/v1seed.mjs';

const run = promisify(execFile);

let s;
const made = [];
const tokens = new Map();

const call = (method, tmpl, params, o) => v1Call(s, method, tmpl, params, o);

async function token(id, perms = ['sandboxesExec']) {
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
const startProc = async (id, body, o = {}) => {
  const r = await ep(id, 'POST', '/v1/processes', {}, { body, ...o });
  assert.equal(r.status, 201, r.text);
  return r.json;
};
const getProc = (id, uid) => ep(id, 'GET', '/v1/processes/{process}', { process: uid });
async function waitExited(id, uid, ms = 60000) {
  let p;
  await waitFor(async () => {
    const r = await getProc(id, uid);
    assert.equal(r.status, 200, r.text);
    p = r.json;
    return p.state === 'exited';
  }, ms, 200);
  return p;
}
// All retained output from `from` on, page by page.
async function readAll(id, uid, from = 0, maxBytes) {
  const chunks = [];
  let next = from, exited;
  for (let i = 0; i < 1000; i++) {
    const r = await ep(id, 'GET', '/v1/processes/{process}/output', { process: uid }, { query: { resumeFrom: next, maxBytes } });
    assert.equal(r.status, 200, r.text);
    chunks.push(...r.json.chunks);
    const n = Number(r.json.nextResumeFrom);
    exited = r.json.exited;
    if (n === next) break;
    next = n;
  }
  return { chunks, next, exited };
}

let A, D; // a busybox and a Debian sandbox
// a warm pool of one (its containers mount the helper too), under a label
// prefix of this file's own
const L = `sptproc${Math.random().toString(36).slice(2, 8)}`;
const CONF = ['warm_pool = template=alpine size=1 ttl=600', `label_prefix = ${L}`];
before(async () => {
  s = await startStack({ extraConf: CONF });
  A = (await createSandbox('sandpit-test/busybox')).uid;
  D = (await createSandbox('sandpit-test/debian')).uid;
});
after(async () => {
  for (const id of made) await s?.api('DELETE', `/v1/sandboxes/${id}`, { headers: { 'if-match': null } }).catch(() => {});
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await s?.stop();
  assert.ok(v1Checked() > 0);
});

test('core.endpoint advertises exactly the process and unary file operations; effectiveFeatures.outputRetention their retention', async () => {
  const r = await call('GET', '/v1/sandboxes/{sandbox}', { sandbox: A });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual([...r.json.core.endpoint.capabilities].sort(), ['createProcess', 'download', 'exec', 'getProcess', 'interact', 'list', 'listProcesses', 'mkdir', 'move', 'readFile', 'readOutput', 'remove', 'signal', 'stat', 'upload', 'writeFile']);
  assert.equal(r.json.core.endpoint.uri, `${s.url}/endpoints/${A}`);
  assert.ok(Number(r.json.effectiveFeatures.outputRetention.minBytes) >= 65536);
});

test('exec: argv as given, stdout/stderr base64, exit code, env, workingDir; errors name the field', async () => {
  for (const id of [A, D]) {
    let r = await ep(id, 'POST', '/v1/processes/exec', {}, {
      body: { cmd: ['sh', '-c', 'printf "%s|" "$1" "$FOO"; pwd; echo oops >&2; exit 3', 'sh', 'a b "c"'], env: { FOO: 'bar baz' }, workingDir: '/tmp' },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.exitCode, 3);
    assert.equal(b64(r.json.stdout), 'a b "c"|bar baz|/tmp\n');
    assert.equal(b64(r.json.stderr), 'oops\n');
    assert.equal(r.json.incomplete, false);
    // no shell in between: a ; is an argument
    r = await ep(id, 'POST', '/v1/processes/exec', {}, { body: { cmd: ['echo', 'x;', 'false'] } });
    assert.equal(r.status, 200, r.text);
    assert.equal(b64(r.json.stdout), 'x; false\n');
    assert.equal(r.json.exitCode, 0);
  }
  // more than the capture limit: incomplete, the real exit code
  let r = await ep(A, 'POST', '/v1/processes/exec', {}, { body: { cmd: ['sh', '-c', 'head -c 1200000 /dev/zero; exit 4'] } });
  assert.equal(r.status, 200);
  assert.equal(r.json.incomplete, true);
  assert.equal(r.json.exitCode, 4);
  assert.equal(Buffer.from(r.json.stdout, 'base64').length, 1024 * 1024);
  for (const [body, field] of [
    [{}, 'cmd'], [{ cmd: [] }, 'cmd'], [{ cmd: 'ls' }, 'cmd'], [{ cmd: [1] }, 'cmd'], [{ cmd: [''] }, 'cmd'],
    [{ cmd: ['true'], workingDir: 'rel' }, 'workingDir'], [{ cmd: ['true'], workingDir: '/proc/self' }, 'workingDir'],
    [{ cmd: ['true'], user: 'nobody' }, 'user'], [{ cmd: ['true'], env: { 'A-B': 'x' } }, 'env'], [{ cmd: ['true'], other: 1 }, 'other'],
  ]) {
    r = await ep(A, 'POST', '/v1/processes/exec', {}, { body });
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.json.code, 'invalidArgument');
    assert.equal(r.json.details[0].fieldViolations[0].field, field, `${JSON.stringify(body)}: ${r.text}`);
  }
  // the sandbox's own user is accepted by name
  r = await ep(A, 'POST', '/v1/processes/exec', {}, { body: { cmd: ['id', '-u'], user: 'root' } });
  assert.equal(r.status, 200, r.text);
});

test('permissions per operation: sandboxesExec is needed for each (403 permissionDenied)', async () => {
  const t = await token(A, ['sandboxesFilesRead']);
  for (const [m, tmpl, body] of [
    ['POST', '/v1/processes/exec', { cmd: ['true'] }], ['POST', '/v1/processes', { cmd: ['true'] }], ['GET', '/v1/processes'],
    ['GET', '/v1/processes/{process}'], ['GET', '/v1/processes/{process}/output'], ['POST', '/v1/processes/{process}/signal', { signal: 'term' }],
  ]) {
    const r = await ep(A, m, tmpl, { process: 'abc' }, { token: t, body });
    assert.equal(r.status, 403, `${m} ${tmpl}: ${r.text}`);
    assert.equal(r.json.code, 'permissionDenied');
  }
});

test('createProcess: 201 fresh; getProcess running then exited; the same Idempotency-Key replays, another payload is failedPrecondition', async () => {
  const key = `cp-${Date.now()}`;
  const body = { cmd: ['sh', '-c', 'echo started; sleep 2; echo done >&2; exit 7'], session: 'sess-1', label: `idem-${key}` };
  const p = await startProc(A, body, { headers: { 'idempotency-key': key } });
  assert.equal(p.receiptKind, 'fresh');
  assert.equal(p.state, 'running');
  assert.equal(p.name, `processes/${p.uid}`);
  assert.equal(p.session, 'sess-1');
  assert.equal(p.label, body.label);
  assert.equal(p.exitCode, undefined);
  assert.ok(p.pid > 0);
  const again = await ep(A, 'POST', '/v1/processes', {}, { body, headers: { 'idempotency-key': key } });
  assert.equal(again.status, 201, again.text);
  assert.equal(again.json.receiptKind, 'replay');
  assert.equal(again.json.uid, p.uid);
  const other = await ep(A, 'POST', '/v1/processes', {}, { body: { ...body, session: 'x' }, headers: { 'idempotency-key': key } });
  assert.equal(other.status, 409, other.text);
  assert.equal(other.json.code, 'failedPrecondition');
  const g = await getProc(A, p.uid);
  assert.equal(g.status, 200);
  assert.equal(g.json.receiptKind, 'unspecified');
  const x = await waitExited(A, p.uid);
  assert.equal(x.exitCode, 7);
  const out = await readAll(A, p.uid);
  assert.deepEqual(out.chunks.map((c) => [c.stream, b64(c.data)]), [['stdout', 'started\n'], ['stderr', 'done\n']]);
  assert.deepEqual(out.chunks.map((c) => c.streamSequence), ['1', '2']);
  assert.deepEqual(out.exited, { exitCode: 7, reason: 'exited' });
  assert.equal(x.lastStreamSequence, '2');
});

test('createProcess errors: label taken (409 alreadyExists), cmd[0] missing, workingDir, pty, fields (400); getProcess 404', async () => {
  const label = `only-${Date.now()}`;
  await startProc(A, { cmd: ['sleep', '30'], label });
  let r = await ep(A, 'POST', '/v1/processes', {}, { body: { cmd: ['true'], label } });
  assert.equal(r.status, 409, r.text);
  assert.equal(r.json.code, 'alreadyExists');
  r = await ep(A, 'POST', '/v1/processes', {}, { body: { cmd: ['/no/such/program'] } });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.details[0].fieldViolations[0].field, 'cmd');
  for (const wd of ['/no/such/dir', '/proc', '/proc/self/cwd']) {
    r = await ep(A, 'POST', '/v1/processes', {}, { body: { cmd: ['true'], workingDir: wd } });
    assert.equal(r.status, 400, `${wd}: ${r.text}`);
    assert.equal(r.json.details[0].fieldViolations[0].field, 'workingDir');
  }
  // a PTY is served now (v1-interact.test.mjs); a malformed PtyConfig is a 400 naming pty
  r = await ep(A, 'POST', '/v1/processes', {}, { body: { cmd: ['true'], pty: {} } });
  assert.equal(r.status, 201, r.text);
  for (const pty of [5, { size: 1 }, { initialSize: { rows: 'x' } }, { initialSize: { rows: 0, cols: 5, bounded: true } }]) {
    r = await ep(A, 'POST', '/v1/processes', {}, { body: { cmd: ['true'], pty } });
    assert.equal(r.status, 400, `${JSON.stringify(pty)}: ${r.text}`);
    assert.equal(r.json.details[0].fieldViolations[0].field, 'pty');
  }
  for (const [body, field] of [[{}, 'cmd'], [{ cmd: [] }, 'cmd'], [{ cmd: ['true'], label: '' }, 'label'], [{ cmd: ['true'], session: 5 }, 'session']]) {
    r = await ep(A, 'POST', '/v1/processes', {}, { body });
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.json.details[0].fieldViolations[0].field, field);
  }
  // the default label is the uid; workingDir and env reach the process
  const p = await startProc(A, { cmd: ['sh', '-c', 'echo "$PWD $V"'], workingDir: '/tmp', env: { V: 'v1' } });
  assert.equal(p.label, p.uid);
  await waitExited(A, p.uid);
  assert.equal((await readAll(A, p.uid)).chunks.map((c) => b64(c.data)).join(''), '/tmp v1\n');
  r = await getProc(A, 'nosuchprocess');
  assert.equal(r.status, 404, r.text);
  assert.equal(r.json.code, 'notFound');
  r = await ep(A, 'GET', '/v1/processes/{process}/output', { process: 'nosuchprocess' });
  assert.equal(r.status, 404, r.text);
});

test('listProcesses: creation order, filter by session and state, pages', async () => {
  const sess = `list-${Date.now()}`;
  const ps = [];
  for (let i = 0; i < 3; i++) ps.push(await startProc(D, { cmd: ['sh', '-c', i === 1 ? 'exit 0' : 'sleep 60'], session: sess }));
  await waitExited(D, ps[1].uid);
  let r = await ep(D, 'GET', '/v1/processes', {}, { query: { filter: `session=${sess}` } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.processes.map((p) => p.uid), ps.map((p) => p.uid));
  assert.equal(r.json.nextPageToken, '');
  assert.ok(r.json.processes.every((p) => p.receiptKind === 'unspecified'));
  r = await ep(D, 'GET', '/v1/processes', {}, { query: { filter: `session=${sess},state=running` } });
  assert.deepEqual(r.json.processes.map((p) => p.uid), [ps[0].uid, ps[2].uid]);
  r = await ep(D, 'GET', '/v1/processes', {}, { query: { filter: `state=exited,session=${sess}` } });
  assert.deepEqual(r.json.processes.map((p) => p.uid), [ps[1].uid]);
  // pages of 2
  r = await ep(D, 'GET', '/v1/processes', {}, { query: { filter: `session=${sess}`, pageSize: 2 } });
  assert.deepEqual(r.json.processes.map((p) => p.uid), [ps[0].uid, ps[1].uid]);
  assert.ok(r.json.nextPageToken);
  r = await ep(D, 'GET', '/v1/processes', {}, { query: { filter: `session=${sess}`, pageSize: 2, pageToken: r.json.nextPageToken } });
  assert.deepEqual(r.json.processes.map((p) => p.uid), [ps[2].uid]);
  assert.equal(r.json.nextPageToken, '');
  for (const q of [{ filter: 'colour=red' }, { filter: 'state=sleeping' }, { pageToken: 'nosuch' }, { pageSize: -1 }]) {
    r = await ep(D, 'GET', '/v1/processes', {}, { query: q });
    assert.equal(r.status, 400, `${JSON.stringify(q)}: ${r.text}`);
    assert.equal(r.json.code, 'invalidArgument');
  }
  for (const p of [ps[0], ps[2]]) await ep(D, 'POST', '/v1/processes/{process}/signal', { process: p.uid }, { body: { signal: 'kill' } });
});

test('readOutput: resume by sequence, maxBytes pages of whole chunks, exited only after the last chunk', async () => {
  const p = await startProc(A, { cmd: ['sh', '-c', 'for i in 1 2 3 4 5; do echo "line $i"; sleep 0.2; done'] });
  await waitExited(A, p.uid);
  const all = await readAll(A, p.uid);
  assert.equal(all.chunks.map((c) => b64(c.data)).join(''), 'line 1\nline 2\nline 3\nline 4\nline 5\n');
  const seqs = all.chunks.map((c) => Number(c.streamSequence));
  assert.deepEqual(seqs, seqs.map((_, i) => i + 1));
  // one chunk a page: the first always fits
  let r = await ep(A, 'GET', '/v1/processes/{process}/output', { process: p.uid }, { query: { resumeFrom: 0, maxBytes: 1 } });
  assert.equal(r.json.chunks.length, 1);
  assert.equal(r.json.nextResumeFrom, '1');
  assert.equal(r.json.exited, undefined);
  r = await ep(A, 'GET', '/v1/processes/{process}/output', { process: p.uid }, { query: { resumeFrom: '2' } });
  assert.deepEqual(r.json.chunks.map((c) => c.streamSequence), seqs.slice(2).map(String));
  assert.deepEqual(r.json.exited, { exitCode: 0, reason: 'exited' });
  // past the end: nothing, the same cursor
  r = await ep(A, 'GET', '/v1/processes/{process}/output', { process: p.uid }, { query: { resumeFrom: seqs.length } });
  assert.deepEqual(r.json.chunks, []);
  assert.equal(r.json.nextResumeFrom, String(seqs.length));
  for (const q of [{ resumeFrom: -1 }, { resumeFrom: 'x' }, { maxBytes: -5 }]) {
    r = await ep(A, 'GET', '/v1/processes/{process}/output', { process: p.uid }, { query: q });
    assert.equal(r.status, 400, `${JSON.stringify(q)}: ${r.text}`);
  }
});

test('retention overflow: the oldest output is dropped; reading it is failedPrecondition, the retained part reads', async () => {
  // 12 MiB of output against a 4 MiB retention
  const p = await startProc(A, { cmd: ['sh', '-c', 'head -c 12582912 /dev/zero | tr "\\0" a; echo; echo tail-end'] });
  const x = await waitExited(A, p.uid, 120000);
  assert.equal(x.exitCode, 0);
  let r = await ep(A, 'GET', '/v1/processes/{process}/output', { process: p.uid }, { query: { resumeFrom: 0 } });
  assert.equal(r.status, 409, r.text);
  assert.equal(r.json.code, 'failedPrecondition');
  assert.match(r.json.message, /no longer kept/);
  // from just before the first retained chunk: at least the retention, the end intact
  const m = /sequences (\d+) (\d+)/.exec(r.json.message);
  assert.ok(m, r.json.message);
  const first = Number(m[1]);
  const rest = await readAll(A, p.uid, first - 1, 4 * 1024 * 1024);
  const bytes = rest.chunks.reduce((n, c) => n + Buffer.from(c.data, 'base64').length, 0);
  assert.ok(bytes >= 4 * 1024 * 1024 && bytes < 12 * 1024 * 1024, `${bytes} bytes retained`);
  assert.ok(rest.chunks.map((c) => b64(c.data)).join('').endsWith('\ntail-end\n'));
  assert.equal(rest.next, Number(x.lastStreamSequence));
  assert.deepEqual(rest.exited, { exitCode: 0, reason: 'exited' });
});

test('signal: each signal ends a process with 128+n; an exited process is failedPrecondition; a bad signal is a 400', async () => {
  const want = { term: 143, kill: 137, int: 130, hup: 129, quit: 131, usr1: 138, usr2: 140 };
  const ps = {};
  for (const sig of Object.keys(want)) ps[sig] = await startProc(D, { cmd: ['sleep', '300'] });
  for (const [sig, p] of Object.entries(ps)) {
    const r = await ep(D, 'POST', '/v1/processes/{process}/signal', { process: p.uid }, { body: { signal: sig } });
    assert.equal(r.status, 200, `${sig}: ${r.text}`);
    assert.deepEqual(r.json, {});
  }
  for (const [sig, p] of Object.entries(ps)) {
    const x = await waitExited(D, p.uid);
    assert.equal(x.exitCode, want[sig], sig);
    const out = await readAll(D, p.uid);
    assert.equal(out.exited.reason, `signal ${want[sig] - 128}`);
  }
  let r = await ep(D, 'POST', '/v1/processes/{process}/signal', { process: ps.term.uid }, { body: { signal: 'term' } });
  assert.equal(r.status, 409, r.text);
  assert.equal(r.json.code, 'failedPrecondition');
  for (const body of [{ signal: 'unspecified' }, { signal: 'stop' }, {}, { signal: 'term', x: 1 }]) {
    r = await ep(D, 'POST', '/v1/processes/{process}/signal', { process: ps.term.uid }, { body });
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
  }
  r = await ep(D, 'POST', '/v1/processes/{process}/signal', { process: 'nosuchprocess' }, { body: { signal: 'term' } });
  assert.equal(r.status, 404, r.text);
});

test('a process whose supervisor the sandbox\'s code killed: running while it runs, then exited 255 "lost", never running forever', async () => {
  const p = await startProc(D, { cmd: ['sleep', '300'] });
  assert.ok(p.pid > 1, JSON.stringify(p));
  // the supervisor is the process's parent; the sandbox's code (the same
  // user) can kill it
  const k = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: D, cmd: `kill -9 $(awk '/^PPid:/{print $2}' /proc/${p.pid}/status) && echo ok` } });
  assert.equal(k.status, 200, k.text);
  assert.equal(k.json.stdout, 'ok\n', k.text);
  let r = await getProc(D, p.uid);
  assert.equal(r.json.state, 'running', 'the process itself still runs');
  const k2 = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: D, cmd: `kill -9 ${p.pid}` } });
  assert.equal(k2.status, 200, k2.text);
  const x = await waitExited(D, p.uid, 20000);
  assert.equal(x.exitCode, 255);
  const out = await readAll(D, p.uid);
  assert.match(out.exited.reason, /^lost: /);
  r = await ep(D, 'POST', '/v1/processes/{process}/signal', { process: p.uid }, { body: { signal: 'term' } });
  assert.equal(r.status, 409, r.text);
});

test('the helper volume is made once per server and mounted read-only; the helper runs as the sandbox user', async () => {
  const c = await docker('GET', `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ label: ['sandpit.helper'] }))}`);
  const names = c.json.map((x) => x.Names[0].slice(1));
  const sb = (await call('GET', '/v1/sandboxes/{sandbox}', { sandbox: A })).json;
  const cid = (await docker('GET', `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ name: [A] }))}`)).json[0]?.Id;
  assert.ok(cid, `no container for ${A}`);
  const mount = (await docker('GET', `/containers/${cid}/json`)).json.Mounts.find((m) => m.Destination === '/.sandpit-helper');
  assert.ok(mount, 'no /.sandpit-helper mount');
  assert.equal(mount.RW, false);
  assert.ok(names.includes(mount.Name), `${mount.Name} not among ${names}`);
  const marker = (await docker('GET', `/containers/${mount.Name}/json`)).json;
  // a second create: the same volume, not filled again
  const n = await createSandbox('sandpit-test/busybox');
  assert.ok(n.uid);
  assert.equal((await docker('GET', `/containers/${mount.Name}/json`)).json.Created, marker.Created);
  const log = fs.readFileSync(path.join(s.dir, 'sandpitd.log'), 'utf8');
  assert.ok((log.match(/helper: filling volume/g) || []).length <= 1, 'filled more than once');
  // read-only, and the sandbox user's (not the keeper's)
  const r = await ep(A, 'POST', '/v1/processes/exec', {}, { body: { cmd: ['sh', '-c', 'id -u; touch /.sandpit-helper/x 2>&1; echo rc=$?'] } });
  assert.match(b64(r.json.stdout), /rc=1/);
  const p = await startProc(n.uid, { cmd: ['id', '-u'] });
  await waitExited(n.uid, p.uid);
  assert.equal((await readAll(n.uid, p.uid)).chunks.map((c) => b64(c.data)).join(''), b64(r.json.stdout).split('\n')[0] + '\n');
  void sb;
});

test('a warm pool sandbox: the helper is there, and a process sees the envVars given at its create', { timeout: 120000 }, async () => {
  await waitFor(async () => {
    const r = await docker('GET', `/containers/json?filters=${encodeURIComponent(JSON.stringify({ label: [`${L}.pool`] }))}`);
    return r.json.length >= 1;
  }, 60000, 250);
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', envVars: 'POOLED=canary-1' } });
  assert.equal(c.status, 200, c.text);
  assert.match(c.headers['server-timing'] || '', /^pool;/);
  made.push(c.json.sandboxId);
  const p = await startProc(c.json.sandboxId, { cmd: ['sh', '-c', 'echo "$POOLED $EXTRA"'], env: { EXTRA: 'e' } });
  await waitExited(c.json.sandboxId, p.uid);
  assert.equal((await readAll(c.json.sandboxId, p.uid)).chunks.map((x) => b64(x.data)).join(''), 'canary-1 e\n');
});

test('a running durable process is no activity: its sandbox still expires by its timeout, and the process ends with it', { timeout: 120000 }, async () => {
  const r = await call('POST', '/v1/sandboxes', {}, { body: { imageRef: 'sandpit-test/busybox', features: { timeouts: { timeout: '10s', onTimeout: 'delete' } } } });
  assert.equal(r.status, 201, r.text);
  made.push(r.json.uid);
  const p = await startProc(r.json.uid, { cmd: ['sleep', '300'] });
  assert.equal(p.state, 'running');
  const t0 = Date.now();
  await waitFor(async () => (await call('GET', '/v1/sandboxes/{sandbox}', { sandbox: r.json.uid })).json.core.status === 'failed', 60000, 500);
  assert.ok(Date.now() - t0 < 45000, `expired after ${Date.now() - t0} ms`);
  const g = await getProc(r.json.uid, p.uid);
  assert.equal(g.status, 409, g.text);
  assert.equal(g.json.code, 'failedPrecondition');
});

// Last: it stops the whole stack and starts it again.
test('a process outlives a full stop and start of the stack: its output intact, its status read after', { timeout: 240000 }, async () => {
  const p = await startProc(A, { cmd: ['sh', '-c', 'i=0; while [ $i -lt 60 ]; do echo "n $i"; i=$((i+1)); sleep 0.25; done; exit 5'] });
  const stackSh = path.join(repoRoot, 'deploy/stack.sh');
  const env = { ...process.env };
  env.SANDPIT_EXTRA_CONF = [...CONF, ...(process.env.SANDPIT_TEST_RUNTIME ? [`default_runtime = ${process.env.SANDPIT_TEST_RUNTIME}`] : [])].join('\n');
  await run('bash', [stackSh, 'stop', s.dir], { env, timeout: 90000 });
  await new Promise((res) => setTimeout(res, 3000));
  await run('bash', [stackSh, 'start', s.dir, '--port', String(s.port)], { env, timeout: 120000 });
  tokens.clear();
  const x = await waitExited(A, p.uid, 90000);
  assert.equal(x.exitCode, 5);
  const out = (await readAll(A, p.uid)).chunks.map((c) => b64(c.data)).join('');
  assert.equal(out, Array.from({ length: 60 }, (_, i) => `n ${i}\n`).join(''));
});
