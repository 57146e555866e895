// /v1 stopSandbox and startSandbox (issue 15, "Lifecycle mapping,
// decided"): stop pauses the container (processes and memory kept:
// stopMemoryOutcome preserve), start resumes it. Both faces know a stopped
// sandbox: /api commands, files, setTimeout and the /sandbox-exec
// WebSocket refuse it ("Sandbox is stopped", 412 / close 4003), /v1 answers
// 409 failedPrecondition. If-Match (428, 412 EtagMismatch), If-None-Match
// (304), Idempotency-Key replay, a stopped sandbox's expiry disarmed (it
// outlives it) and the sandbox ended by sandpit at its deadline (its frozen
// keeper cannot) with or without a read, a container paused or thawed behind sandpit's back read as stopped
// or running (never as gone), and a stop beside running commands that
// never freezes a docker exec half-made (runc, and Docker with it, would
// hang on it), and a command running at the stop frozen with the sandbox
// (never the sandbox killed for it). Every /v1 answer is validated against the seed's schema for
// its operation and status, as in v1.test.mjs. With
// SANDPIT_TEST_RUNTIME=gvisor the sandboxes run under runsc.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { repoRoot, startStack, waitFor } from './lib/stack.mjs';
import { v1Call, v1Checked } from './lib/v1seed.mjs';


let s;
const v1 = (method, tmpl, params, o) => v1Call(s, method, tmpl, params, o);
const SBX = '/v1/sandboxes';
const ONE = '/v1/sandboxes/{sandbox}';
const STOP = '/v1/sandboxes/{sandbox}/stop';
const START = '/v1/sandboxes/{sandbox}/start';
const RENEW = '/v1/sandboxes/{sandbox}/renew-timeout';

const made = [];
const hung = new Set(); // containers a test found frozen under an exec
async function createV1(body = {}) {
  const r = await v1('POST', SBX, {}, { body: { image: 'images/alpine', ...body } });
  assert.equal(r.status, 201, r.text);
  made.push(r.json.uid);
  return r;
}
async function dokployCreate(body) {
  const r = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', ...body } });
  assert.equal(r.status, 200, r.text);
  made.push(r.json.sandboxId);
  return r.json;
}
const exec = (id, cmd) => s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd } });
const etagOf = async (id) => (await v1('GET', ONE, { sandbox: id })).headers.etag;
// Docker's view of a container: 'gone', or its State
function dockerState(cid) {
  try {
    return JSON.parse(execFileSync('docker', ['inspect', '-f', '{{json .State}}', cid], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  } catch {
    return 'gone';
  }
}
const cidOf = async (id) => (await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } })).json.containerId;
// Opens /sandbox-exec for id; resolves to how the server ended it
function wsClose(id) {
  const ws = new WebSocket(`${s.url.replace(/^https/, 'wss')}/sandbox-exec?sandboxId=${id}`, { ca: s.ca, headers: { 'x-api-key': s.key } });
  ws.on('error', () => {});
  const msgs = [];
  ws.on('message', (d) => msgs.push(JSON.parse(d.toString())));
  return new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString(), msgs })));
}

before(async () => {
  s = await startStack({ env: { SANDPIT_RATE: '100r/s', SANDPIT_BURST: '50' } });
});
after(async () => {
  // a container frozen under a half-made exec answers Docker nothing until
  // its cgroup is thawed (only ours: the ones a test of this file made)
  for (const cid of hung) {
    const f = `/sys/fs/cgroup/freezer/docker/${cid}/freezer.state`;
    if (fs.existsSync(f) && fs.readFileSync(f, 'utf8').trim() === 'FROZEN') fs.writeFileSync(f, 'THAWED');
  }
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await s?.stop();
  assert.ok(v1Checked() > 0);
});

test('stop pauses the container, every path refuses the stopped sandbox, start resumes it with its processes', { timeout: 180000 }, async () => {
  const c = await createV1({ displayName: 'pausable' });
  const id = c.json.uid;
  const cid = await cidOf(id);
  // a background process left by a command: a counter written 5 times a
  // second (setsid: the test image's busybox has no nohup)
  let r = await exec(id, "setsid sh -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/counter; sleep 0.2; done' >/dev/null 2>&1 & echo $!");
  assert.equal(r.status, 200, r.text);
  const pid = r.json.stdout.trim();
  assert.match(pid, /^\d+$/);
  await waitFor(async () => Number((await exec(id, 'cat /tmp/counter')).json.stdout) > 2, 20000);

  const tag = await etagOf(id);
  r = await v1('POST', STOP, { sandbox: id }, { body: {}, headers: { 'if-match': tag } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.core.status, 'stopped');
  assert.equal(r.headers.etag, r.json.core.etag);
  assert.notEqual(r.json.core.etag, tag);
  assert.equal(r.json.effectiveFeatures.lifecycle.stopMemoryOutcome, 'preserve');
  // the inactivity expiry is disarmed while stopped (only the deadline counts)
  assert.equal(r.json.effectiveFeatures.timeouts.expiresAt, undefined, JSON.stringify(r.json.effectiveFeatures));
  const stoppedTag = r.json.core.etag;
  let st = dockerState(cid);
  assert.equal(st.Paused, true, JSON.stringify(st));
  // the gVisor pass (SANDPIT_TEST_RUNTIME=gvisor) pauses runsc sandboxes
  const runtime = execFileSync('docker', ['inspect', '-f', '{{.HostConfig.Runtime}}', cid], { encoding: 'utf8' }).trim();
  if (process.env.SANDPIT_TEST_RUNTIME === 'gvisor') assert.match(runtime, /^runsc-/);
  else assert.equal(runtime, 'runc');
  assert.equal(st.Running, true);

  // both faces read it stopped; the read does not take it for gone
  const g = await v1('GET', ONE, { sandbox: id });
  assert.equal(g.json.core.status, 'stopped');
  assert.equal(g.headers.etag, stoppedTag);
  assert.equal((await v1('GET', ONE, { sandbox: id }, { headers: { 'if-none-match': stoppedTag } })).status, 304);
  const d = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } });
  assert.equal(d.json.status, 'stopped');
  assert.ok((await v1('GET', SBX, {}, { query: { filter: 'status=stopped' } })).json.sandboxes.some((x) => x.uid === id));

  // the Dokploy face: 412 "Sandbox is stopped" for what needs the container
  for (const [m, p, o] of [
    ['POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: 'true' } }],
    ['POST', '/api/sandbox.writeFile', { body: { sandboxId: id, path: '/tmp/x', content: 'x' } }],
    ['GET', '/api/sandbox.readFile', { query: { sandboxId: id, path: '/tmp/counter' } }],
    ['GET', '/api/sandbox.listFiles', { query: { sandboxId: id, path: '/tmp' } }],
    ['POST', '/api/sandbox.setTimeout', { body: { sandboxId: id, timeoutMs: 60000 } }],
  ]) {
    r = await s.api(m, p, o);
    assert.equal(r.status, 412, `${p}: ${r.text}`);
    assert.equal(r.json.message, 'Sandbox is stopped', p);
  }
  // the WebSocket refuses it before anything runs
  const w = await wsClose(id);
  assert.equal(w.code, 4003);
  assert.equal(w.reason, 'Sandbox is stopped');
  assert.equal(w.msgs.length, 0);
  // /v1: 409 failedPrecondition
  r = await v1('POST', RENEW, { sandbox: id }, { body: { timeout: '60s' } });
  assert.equal(r.status, 409, r.text);
  assert.equal(r.json.code, 'failedPrecondition');
  // none of that changed it: still paused, still stopped
  assert.equal(dockerState(cid).Paused, true);
  assert.equal(await etagOf(id), stoppedTag);

  // stopping a stopped sandbox changes nothing
  r = await v1('POST', STOP, { sandbox: id }, { headers: { 'if-match': stoppedTag } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.core.etag, stoppedTag);

  r = await v1('POST', START, { sandbox: id }, { body: {}, headers: { 'if-match': stoppedTag } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.core.status, 'running');
  assert.equal(r.headers.etag, r.json.core.etag);
  st = dockerState(cid);
  assert.equal(st.Paused, false, JSON.stringify(st));
  assert.equal(st.Running, true);
  // the process started before the stop is the same one, and runs on
  r = await exec(id, `kill -0 ${pid} && echo alive`);
  assert.equal(r.json.stdout, 'alive\n', r.text);
  const n1 = Number((await exec(id, 'cat /tmp/counter')).json.stdout);
  await waitFor(async () => Number((await exec(id, 'cat /tmp/counter')).json.stdout) > n1 + 2, 20000);
  // starting a running sandbox changes nothing
  const runTag = await etagOf(id);
  r = await v1('POST', START, { sandbox: id }, { headers: { 'if-match': runTag } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.core.status, 'running');
  // the sandbox works as before; the WebSocket takes it again
  assert.equal((await exec(id, 'echo ok')).json.stdout, 'ok\n');
  const ws = new WebSocket(`${s.url.replace(/^https/, 'wss')}/sandbox-exec?sandboxId=${id}`, { ca: s.ca, headers: { 'x-api-key': s.key } });
  const ready = await new Promise((resolve, reject) => {
    ws.on('message', (m) => resolve(JSON.parse(m.toString())));
    ws.on('error', reject);
    ws.on('close', (code, reason) => reject(new Error(`closed ${code} ${reason}`)));
  });
  assert.equal(ready.type, 'ready');
  ws.close();
});

test('stop and start: If-Match required (428) and current (412 EtagMismatch); 404; a failed sandbox is a 409 naming its state', { timeout: 120000 }, async () => {
  const c = await createV1();
  const id = c.json.uid;
  for (const op of [STOP, START]) {
    let r = await v1('POST', op, { sandbox: id });
    assert.equal(r.status, 428, r.text);
    assert.equal(r.json.code, 'failedPrecondition');
    assert.match(r.json.message, /^etag_required: /);
    r = await v1('POST', op, { sandbox: id }, { headers: { 'if-match': '"stale"' } });
    assert.equal(r.status, 412, r.text);
    assert.match(r.json.message, /^etag_mismatch: /);
    assert.deepEqual(r.json.details, [{ '@type': 'type.googleapis.com/docker.sandboxes.v1.EtagMismatch', currentEtag: await etagOf(id) }]);
    r = await v1('POST', op, { sandbox: 'nosuchsandbox' }, { headers: { 'if-match': '"x"' } });
    assert.equal(r.status, 404, r.text);
    r = await v1('POST', op, { sandbox: id }, { body: { bogus: 1 }, headers: { 'if-match': await etagOf(id) } });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.details[0].fieldViolations[0].field, 'bogus');
  }
  // a stale If-Match did nothing
  assert.equal(dockerState(await cidOf(id)).Paused, false);
  // killed on the other face: failed, and neither can act on it
  await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: id } });
  for (const op of [STOP, START]) {
    const tag = await etagOf(id);
    const r = await v1('POST', op, { sandbox: id }, { headers: { 'if-match': tag } });
    assert.equal(r.status, 409, r.text);
    assert.equal(r.json.code, 'failedPrecondition');
    assert.match(r.json.message, /^sandbox_failed: the sandbox is failed \(killed\)/);
  }
});

test('Idempotency-Key on stop and start: a retry gets the first answer; the key on another sandbox is another payload', { timeout: 120000 }, async () => {
  const a = await createV1();
  const id = a.json.uid;
  const h = { 'if-match': a.json.core.etag, 'idempotency-key': `stop-${Date.now()}` };
  const s1 = await v1('POST', STOP, { sandbox: id }, { headers: h });
  assert.equal(s1.status, 200, s1.text);
  // the retry's If-Match is stale by now, yet it is the same request
  const s2 = await v1('POST', STOP, { sandbox: id }, { headers: h });
  assert.equal(s2.status, 200, s2.text);
  assert.deepEqual(s2.json, s1.json);
  assert.equal(s2.headers.etag, s1.headers.etag);
  const b = await createV1();
  const r = await v1('POST', STOP, { sandbox: b.json.uid }, { headers: { ...h, 'if-match': b.json.core.etag } });
  assert.equal(r.status, 409, r.text);
  assert.equal(r.json.message, 'The Idempotency-Key was already used with a different payload.');
  assert.equal(dockerState(await cidOf(b.json.uid)).Paused, false);
  const k = { 'if-match': s1.json.core.etag, 'idempotency-key': `start-${Date.now()}` };
  const t1 = await v1('POST', START, { sandbox: id }, { headers: k });
  assert.equal(t1.status, 200, t1.text);
  const t2 = await v1('POST', START, { sandbox: id }, { headers: k });
  assert.deepEqual(t2.json, t1.json);
  assert.equal(t1.json.core.status, 'running');
});

test('a stopped sandbox outlives its expiry (disarmed) and is ended by sandpit at its deadline (its frozen keeper cannot), with or without a read', { timeout: 180000 }, async () => {
  // two stopped sandboxes, both past their old expiry: one read just past
  // its deadline (the catch-up), one nobody reads (the reaper)
  const byRead = await dokployCreate({ timeoutMs: 10000, maxLifetimeMs: 30000 });
  const byReaper = await dokployCreate({ timeoutMs: 10000, maxLifetimeMs: 30000 });
  const exp = Date.parse(byRead.expiresAt);
  for (const sb of [byRead, byReaper]) {
    const r = await v1('POST', STOP, { sandbox: sb.sandboxId }, { headers: { 'if-match': await etagOf(sb.sandboxId) } });
    assert.equal(r.status, 200, r.text);
    assert.equal(dockerState(sb.containerId).Paused, true);
  }
  // past the old expiry, its grace and a reaper sweep: both still stopped
  while (Date.now() < exp + 12000) await new Promise((res) => setTimeout(res, 200));
  for (const sb of [byRead, byReaper]) assert.equal(dockerState(sb.containerId).Paused, true, sb.sandboxId);
  const one = (await s.api('GET', '/api/sandbox.one', { query: { sandboxId: byRead.sandboxId } })).json;
  assert.equal(one.status, 'stopped');
  assert.equal(one.expiresAt, one.deadlineAt);
  const dl = Date.parse(one.deadlineAt);
  // the read: just past its deadline (before the reaper's grace), it ends
  // the container before it answers
  while (Date.now() < dl + 100) await new Promise((res) => setTimeout(res, 50));
  const g = await v1('GET', ONE, { sandbox: byRead.sandboxId });
  assert.equal(g.json.core.status, 'failed', g.text);
  assert.equal(g.json.failure.code, 'aborted');
  const st = dockerState(byRead.containerId);
  assert.ok(st === 'gone' || st.Running === false, JSON.stringify(st));
  // the other: gone within a generous cap, without a read or a kill
  await waitFor(() => dockerState(byReaper.containerId) === 'gone', 90000, 500);
  const r = await v1('GET', ONE, { sandbox: byReaper.sandboxId });
  assert.equal(r.json.core.status, 'failed', r.text);
  // a start after the deadline is refused
  const t = await v1('POST', START, { sandbox: byReaper.sandboxId }, { headers: { 'if-match': r.headers.etag } });
  assert.equal(t.status, 409, t.text);
  assert.equal(t.json.code, 'failedPrecondition');
  assert.equal((await s.api('GET', '/api/sandbox.one', { query: { sandboxId: byReaper.sandboxId } })).json.status, 'killed');
});

test('a container paused behind sandpit\'s back reads stopped, never killed (Docker\'s 409 "is paused" is not "gone")', { timeout: 120000 }, async () => {
  const sb = await dokployCreate({});
  assert.equal((await exec(sb.sandboxId, 'true')).status, 200);
  // a pause by hand must not meet an exec being set up (sandpit's own
  // expiry write after an answer): runc's exec would then hang on the
  // frozen cgroup, and Docker with it (sandbox_stop waits for that)
  await new Promise((res) => setTimeout(res, 1000));
  await waitFor(() => JSON.parse(execFileSync('docker', ['inspect', '-f', '{{json .ExecIDs}}', sb.containerId], { encoding: 'utf8' })) === null, 20000);
  execFileSync('docker', ['pause', sb.containerId], { stdio: 'ignore' });
  // the exec path meets the paused container (a running record's read
  // before an exec does not ask Docker)
  let r = await exec(sb.sandboxId, 'echo hi');
  assert.equal(r.status, 412, r.text);
  assert.equal(r.json.message, 'Sandbox is stopped');
  r = await v1('GET', ONE, { sandbox: sb.sandboxId });
  assert.equal(r.json.core.status, 'stopped', r.text);
  assert.equal(dockerState(sb.containerId).Paused, true);
  r = await v1('POST', START, { sandbox: sb.sandboxId }, { headers: { 'if-match': r.headers.etag } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.core.status, 'running');
  assert.equal((await exec(sb.sandboxId, 'echo hi')).json.stdout, 'hi\n');
  // and thawed behind its back: a read follows Docker
  const tag = await etagOf(sb.sandboxId);
  assert.equal((await v1('POST', STOP, { sandbox: sb.sandboxId }, { headers: { 'if-match': tag } })).status, 200);
  execFileSync('docker', ['unpause', sb.containerId], { stdio: 'ignore' });
  r = await v1('GET', ONE, { sandbox: sb.sandboxId });
  assert.equal(r.json.core.status, 'running', r.text);
});

test('a stop beside commands never freezes an exec half-made (runc would hang on it, and Docker with it)', { timeout: 300000 }, async () => {
  const c = await createV1();
  const id = c.json.uid;
  const cid = await cidOf(id);
  const seen = new Set();
  hung.add(cid); // thawed in after() if this fails with it frozen
  for (let round = 0; round < 10; round++) {
    // commands sent with the stop, some started a moment after it, and
    // sandpit's own expiry write that follows an answer
    const tag = await etagOf(id);
    const cmds = [0, 2, 5, 10].map((ms) => new Promise((res) => setTimeout(res, ms)).then(() =>
      s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: 'echo x', timeoutMs: 3000 }, timeoutMs: 60000 })));
    // (a command's activity moves expiresAt, and the ETag with it: the
    // stop then retries with the current one, as a client would)
    const stop = (async () => {
      let cur = tag, r;
      for (let i = 0; i < 5; i++) {
        r = await v1('POST', STOP, { sandbox: id }, { headers: { 'if-match': cur }, timeoutMs: 60000 });
        if (r.status !== 412) break;
        cur = r.json.details[0].currentEtag;
      }
      return r;
    })();
    const [r, ...rs] = await Promise.all([stop, ...cmds]);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.core.status, 'stopped');
    for (const x of rs) {
      // ran before the stop, refused after it, or frozen with the sandbox
      assert.ok(x.status === 200 || (x.status === 412 && /^Sandbox is stop/.test(x.json.message)), x.text);
      seen.add(x.status === 200 ? (x.json.timedOut ? 'frozen' : 'ran') : 'refused');
    }
    // Docker still answers about the container
    const st = await Promise.race([s.docker('GET', `/v1.41/containers/${cid}/json`),
      new Promise((res) => setTimeout(() => res(null), 15000))]);
    assert.ok(st, `round ${round}: Docker does not answer about the stopped container`);
    assert.equal(st.json.State.Paused, true);
    const t = await v1('POST', START, { sandbox: id }, { headers: { 'if-match': r.json.core.etag } });
    assert.equal(t.status, 200, t.text);
  }
  assert.ok(seen.has('refused'), [...seen].join());
  assert.equal((await exec(id, 'echo done')).json.stdout, 'done\n');
  hung.delete(cid);
});

test('a command running when the sandbox stops is frozen with it: its answer ends at its timeout (124), the command goes on after the start', { timeout: 120000 }, async () => {
  const c = await createV1();
  const id = c.json.uid;
  const running = s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: 'sleep 2; echo done > /tmp/late', timeoutMs: 4000 } });
  await waitFor(async () => (await exec(id, 'ls /.sandpit/x | wc -l')).json.stdout.trim() !== '1', 10000, 100);
  let r = await v1('POST', STOP, { sandbox: id }, { headers: { 'if-match': await etagOf(id) } });
  // (the command's own activity may move the ETag between the read and the stop)
  if (r.status === 412) r = await v1('POST', STOP, { sandbox: id }, { headers: { 'if-match': r.json.details[0].currentEtag } });
  assert.equal(r.status, 200, r.text);
  const a = await running;
  assert.equal(a.status, 200, a.text);
  assert.equal(a.json.exitCode, 124, a.text);
  assert.equal(a.json.timedOut, true);
  // the sandbox was kept, stopped
  const g = await v1('GET', ONE, { sandbox: id });
  assert.equal(g.json.core.status, 'stopped', g.text);
  r = await v1('POST', START, { sandbox: id }, { headers: { 'if-match': g.headers.etag } });
  assert.equal(r.status, 200, r.text);
  await waitFor(async () => (await exec(id, 'cat /tmp/late 2>/dev/null')).json.stdout === 'done\n', 20000);
});
