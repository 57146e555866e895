// The operator's stop_mode = discard (issue 15, "Lifecycle mapping,
// decided"): stop is a docker stop (the processes end, memory discarded,
// the container and its disk kept: no AutoRemove), start a docker start;
// effectiveFeatures.lifecycle.stopMemoryOutcome says "discard". A file
// written before the stop is there after the start, a background process
// is not; /api refuses the stopped sandbox (412 "Sandbox is stopped");
// after a start the deadline still ends it and the inactivity expiry is
// re-armed (not taken for past); the disk limit holds after a restart; a
// killed, removed or ended discard sandbox leaves no container (state.c
// and the reaper remove it). Every /v1 answer is validated against the
// seed's schema. With SANDPIT_TEST_RUNTIME=gvisor the sandboxes run under
// runsc.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { repoRoot, startStack, waitFor } from './lib/stack.mjs';
import { v1Call, v1Checked } from './lib/v1seed.mjs';


let s;
const v1 = (method, tmpl, params, o) => v1Call(s, method, tmpl, params, o);
const SBX = '/v1/sandboxes';
const ONE = '/v1/sandboxes/{sandbox}';
const STOP = '/v1/sandboxes/{sandbox}/stop';
const START = '/v1/sandboxes/{sandbox}/start';

const made = [];
async function createV1(body = {}) {
  const r = await v1('POST', SBX, {}, { body: { image: 'images/alpine', ...body } });
  assert.equal(r.status, 201, r.text);
  made.push(r.json.uid);
  return r;
}
const exec = (id, cmd) => s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd } });
function dockerState(cid) {
  try {
    return JSON.parse(execFileSync('docker', ['inspect', '-f', '{{json .State}}', cid], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  } catch {
    return 'gone';
  }
}
const inspect = (cid, f) => execFileSync('docker', ['inspect', '-f', f, cid], { encoding: 'utf8' }).trim();
const etagOf = async (id) => (await v1('GET', ONE, { sandbox: id })).headers.etag;
// stop, start, delete with the If-Match they require
const act = async (m, tmpl, id, o = {}) => v1(m, tmpl, { sandbox: id }, { ...o, headers: { 'if-match': await etagOf(id) } });
const cidOf = async (id) => (await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } })).json.containerId;

before(async () => {
  s = await startStack({ env: { SANDPIT_RATE: '100r/s', SANDPIT_BURST: '50' }, extraConf: 'stop_mode = discard' });
});
after(async () => {
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await s?.stop();
  assert.ok(v1Checked() > 0);
});

test('discard: stop ends the processes and keeps the disk, start runs it again', { timeout: 180000 }, async () => {
  const c = await createV1({ displayName: 'discardable' });
  const id = c.json.uid;
  assert.equal(c.json.effectiveFeatures.lifecycle.stopMemoryOutcome, 'discard');
  const cid = await cidOf(id);
  assert.equal(inspect(cid, '{{.HostConfig.AutoRemove}}'), 'false');
  const runtime = inspect(cid, '{{.HostConfig.Runtime}}');
  if (process.env.SANDPIT_TEST_RUNTIME === 'gvisor') assert.match(runtime, /^runsc-/);
  else assert.equal(runtime, 'runc');
  let r = await exec(id, 'echo kept > keep.txt && pwd');
  assert.equal(r.status, 200, r.text);
  const wd = r.json.stdout.trim();
  // a background process, known by its argv (a pid may be reused after
  // the restart: the container gets a fresh pid namespace)
  r = await exec(id, 'setsid sleep 4242 >/dev/null 2>&1 & echo started');
  assert.equal(r.status, 200, r.text);
  const alive = async () => (await exec(id, "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' <$f 2>/dev/null; echo; done | grep -c '^sleep 4242 '")).json.stdout.trim();
  await waitFor(async () => (await alive()) === '1', 10000);

  r = await act('POST', STOP, id, { body: {} });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.core.status, 'stopped');
  assert.equal(r.json.effectiveFeatures.lifecycle.stopMemoryOutcome, 'discard');
  let st = dockerState(cid);
  assert.equal(st.Status, 'exited', JSON.stringify(st));
  // reads keep it stopped (an exited container is not taken for gone)
  assert.equal((await v1('GET', ONE, { sandbox: id })).json.core.status, 'stopped');
  assert.equal((await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } })).json.status, 'stopped');
  r = await exec(id, 'true');
  assert.equal(r.status, 412, r.text);
  assert.equal(r.json.message, 'Sandbox is stopped');
  // a sweep of the reaper leaves the stopped container alone
  await new Promise((res) => setTimeout(res, 7000));
  assert.equal(dockerState(cid).Status, 'exited');
  assert.equal((await v1('GET', ONE, { sandbox: id })).json.core.status, 'stopped');

  r = await act('POST', START, id, { body: {} });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.core.status, 'running');
  st = dockerState(cid);
  assert.equal(st.Running, true, JSON.stringify(st));
  // nothing touches it for longer than the watcher's first read (5 s):
  // the expiry main.sh starts with again is not taken for past
  await new Promise((res) => setTimeout(res, 9000));
  st = dockerState(cid);
  assert.equal(st.Running, true, JSON.stringify(st));
  r = await exec(id, `cat ${wd}/keep.txt`);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.stdout, 'kept\n');
  assert.equal(await alive(), '0');
  // the expiry inside is re-armed: in the future, not the first one
  const exp = Number((await exec(id, 'cat /.sandpit/expires')).json.stdout);
  assert.ok(exp * 1000 > Date.now() + 60000, `expiry ${exp}`);
  assert.equal((await exec(id, 'echo ok')).json.stdout, 'ok\n');

  // a second stop/start cycle, then the delete leaves no container
  assert.equal((await act('POST', STOP, id, { body: {} })).status, 200);
  assert.equal(dockerState(cid).Status, 'exited');
  r = await act('DELETE', ONE, id);
  assert.ok(r.status === 200 || r.status === 204, r.text);
  await waitFor(() => dockerState(cid) === 'gone', 30000);
});

test('discard: the deadline still ends a started sandbox, and its container is removed', { timeout: 180000 }, async () => {
  const d = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', maxLifetimeMs: 25000, timeoutMs: 600000 } });
  assert.equal(d.status, 200, d.text);
  made.push(d.json.sandboxId);
  const id = d.json.sandboxId;
  const cid = d.json.containerId;
  assert.equal((await act('POST', STOP, id, { body: {} })).status, 200);
  assert.equal(dockerState(cid).Status, 'exited');
  const r = await act('POST', START, id, { body: {} });
  assert.equal(r.status, 200, r.text);
  assert.equal(dockerState(cid).Running, true);
  // past the deadline, with nobody reading it: the container ends itself
  // and the reaper removes it
  await waitFor(() => dockerState(cid) === 'gone', 60000);
  const g = await v1('GET', ONE, { sandbox: id });
  assert.equal(g.status, 200, g.text);
  assert.notEqual(g.json.core.status, 'running');
  assert.notEqual(g.json.core.status, 'stopped');
});

test('discard: a killed sandbox, stopped or running, leaves no container', { timeout: 120000 }, async () => {
  for (const stopFirst of [true, false]) {
    const c = await createV1();
    const id = c.json.uid;
    const cid = await cidOf(id);
    if (stopFirst) assert.equal((await act('POST', STOP, id, { body: {} })).status, 200);
    const r = await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: id } });
    assert.equal(r.status, 200, r.text);
    await waitFor(() => dockerState(cid) === 'gone', 30000);
  }
});

test('discard: a container that ended on its own is removed by the sweep', { timeout: 120000 }, async () => {
  const c = await createV1();
  const id = c.json.uid;
  const cid = await cidOf(id);
  // ended behind sandpit's back (as its deadline sleep would end it)
  execFileSync('docker', ['kill', cid], { stdio: 'ignore' });
  await waitFor(() => dockerState(cid) === 'gone', 30000);
  assert.notEqual((await v1('GET', ONE, { sandbox: id })).json.core.status, 'running');
});

test('discard: the disk limit holds after a stop and a start', { timeout: 180000 }, async () => {
  const d = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', diskMb: 32 } });
  assert.equal(d.status, 200, d.text);
  made.push(d.json.sandboxId);
  const id = d.json.sandboxId;
  const cid = d.json.containerId;
  const df = async () => (await exec(id, 'df -k . | tail -1')).json.stdout;
  const before = await df();
  assert.equal((await act('POST', STOP, id, { body: {} })).status, 200);
  assert.equal(dockerState(cid).Status, 'exited');
  assert.equal((await act('POST', START, id, { body: {} })).status, 200);
  const after = await df();
  assert.equal(after.split(/\s+/)[1], before.split(/\s+/)[1], `${before} / ${after}`);
  const total = Number(after.split(/\s+/)[1]);
  assert.ok(total > 0 && total <= 32 * 1024, after);
  // writing past it fails
  const r = await exec(id, 'dd if=/dev/zero of=big bs=1M count=64 2>&1; echo rc=$?');
  assert.match(r.json.stdout, /No space left|rc=1/, r.text);
  assert.equal((await exec(id, 'rm -f big && echo ok')).json.stdout, 'ok\n');
});

test('discard: a start whose loop disk is no longer attached refuses and ends the sandbox', { timeout: 120000 }, async () => {
  const d = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', diskMb: 32 } });
  assert.equal(d.status, 200, d.text);
  made.push(d.json.sandboxId);
  const id = d.json.sandboxId;
  const cid = d.json.containerId;
  const mounts = JSON.parse(inspect(cid, '{{json .HostConfig.Mounts}}'));
  const dev = mounts?.[0]?.VolumeOptions?.DriverConfig?.Options?.device;
  assert.match(dev || '', /^\/dev\/loop\d+$/, JSON.stringify(mounts));
  assert.equal((await act('POST', STOP, id, { body: {} })).status, 200);
  // as a host restart would leave it: the device detached
  execFileSync('losetup', ['-d', dev]);
  const r = await act('POST', START, id, { body: {} });
  assert.equal(r.status, 409, r.text);
  assert.equal(r.json.code, 'failedPrecondition');
  await waitFor(() => dockerState(cid) === 'gone', 30000);
  assert.notEqual((await v1('GET', ONE, { sandbox: id })).json.core.status, 'stopped');
});

test('discard: durable processes end with the stop; the helper works after the start', { timeout: 120000 }, async () => {
  const c = await createV1({ imageRef: 'sandpit-test/busybox', image: undefined });
  const id = c.json.uid;
  const cr = await v1('POST', '/v1/sandboxes/{sandbox}/endpoint-credentials', { sandbox: id }, { body: { permissions: ['sandboxesExec'] } });
  assert.equal(cr.status, 200, cr.text);
  const ep = (method, p, o = {}) => s.api(method, `/endpoints/${id}${p}`, { key: null, ...o, headers: { authorization: `Bearer ${cr.json.token}` } });
  let r = await ep('POST', '/v1/processes', { body: { cmd: ['sleep', '600'] } });
  assert.equal(r.status, 201, r.text);
  const uid = r.json.uid;
  assert.equal((await ep('GET', `/v1/processes/${uid}`)).json.state, 'running');
  assert.equal((await act('POST', STOP, id, { body: {} })).status, 200);
  assert.equal((await act('POST', START, id, { body: {} })).status, 200);
  // its record lived in the container's tmpfs: gone with the processes
  r = await ep('GET', `/v1/processes/${uid}`);
  assert.equal(r.status, 404, r.text);
  r = await ep('GET', '/v1/processes');
  assert.equal(r.status, 200, r.text);
  assert.ok(!r.json.processes.some((p) => p.uid === uid), r.text);
  // the helper (its read-only mount) is there again
  r = await ep('POST', '/v1/processes/exec', { body: { cmd: ['echo', 'again'] } });
  assert.equal(r.status, 200, r.text);
  assert.equal(Buffer.from(r.json.stdout ?? '', 'base64').toString(), 'again\n', r.text);
});

test('discard: a start re-arms the inactivity expiry (main.sh\'s first one is past by then)', { timeout: 120000 }, async () => {
  const d = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', timeoutMs: 15000 } });
  assert.equal(d.status, 200, d.text);
  made.push(d.json.sandboxId);
  const id = d.json.sandboxId;
  const cid = d.json.containerId;
  // active past its first expiry (the one main.sh has as an argument)
  const t0 = Date.now();
  while (Date.now() - t0 < 19000) {
    assert.equal((await exec(id, 'true')).status, 200);
    await new Promise((res) => setTimeout(res, 2000));
  }
  assert.equal((await act('POST', STOP, id, { body: {} })).status, 200);
  const r = await act('POST', START, id, { body: {} });
  assert.equal(r.status, 200, r.text);
  // untouched past the watcher's first read: still running
  await new Promise((res) => setTimeout(res, 9000));
  const st = dockerState(cid);
  assert.equal(st.Running, true, JSON.stringify(st));
  // and it still expires when left alone
  await waitFor(() => dockerState(cid) === 'gone', 60000);
});
