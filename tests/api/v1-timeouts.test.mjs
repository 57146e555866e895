// /v1 timeouts and stop (issue 15, "Lifecycle mapping, decided"; the seed's
// EffectiveTimeouts, TimeoutOptions, TimeoutAction):
// - a stopped sandbox's inactivity expiry is disarmed: no
//   effectiveFeatures.timeouts.expiresAt while stopped (/api shows the
//   deadline as its expiresAt), it outlives its old expiry (nobody reading,
//   the reaper running) and is ended only at its hard deadline; a start
//   re-arms the expiry (now + resumeTimeout, the container's own expiry
//   with it) and the thawed watcher never ends it on a stale expiry;
// - onTimeout stop: at the expiry the sandbox is paused (stopped), not
//   ended: by the between-requests sweep with nobody reading, by a read
//   when no sweep runs (the container's own watcher never ends it: its
//   expiry is its deadline), a command running in it (a docker exec) holds
//   it, and a start resumes it for resumeTimeout;
// - the hard deadline configurable per organization and per server (the
//   smaller wins): a longer maxLifetimeMs is a 400 naming it on /api, a
//   longer timeout an outOfRange naming the limit on /v1, and the default
//   lifetime is that maximum.
// Every /v1 answer is validated against the seed's schema. With
// SANDPIT_TEST_RUNTIME=gvisor the sandboxes run under runsc.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { startStack, waitFor } from './lib/stack.mjs';
import { v1Call } from './lib/v1seed.mjs';

let s, quiet;
const made = []; // [stack, id]
const v1 = (st, method, tmpl, params, o) => v1Call(st, method, tmpl, params, o);
const SBX = '/v1/sandboxes';
const ONE = '/v1/sandboxes/{sandbox}';
const STOP = '/v1/sandboxes/{sandbox}/stop';
const START = '/v1/sandboxes/{sandbox}/start';

async function createV1(st, timeouts) {
  const r = await v1(st, 'POST', SBX, {}, { body: { image: 'images/alpine', features: { timeouts } } });
  assert.equal(r.status, 201, r.text);
  made.push([st, r.json.uid]);
  return r.json;
}
async function createApi(st, body) {
  const r = await st.api('POST', '/api/sandbox.create', { body: { template: 'alpine', ...body } });
  assert.equal(r.status, 200, r.text);
  made.push([st, r.json.sandboxId]);
  return r.json;
}
const one = async (st, id) => (await st.api('GET', '/api/sandbox.one', { query: { sandboxId: id } })).json;
function dockerState(cid) {
  try {
    return JSON.parse(execFileSync('docker', ['inspect', '-f', '{{json .State}}', cid], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  } catch {
    return 'gone';
  }
}
// the container's own expiry (/.sandpit/expires, epoch s), read from outside sandpit
const containerExpiry = (cid) => Number(execFileSync('docker', ['exec', cid, 'cat', '/.sandpit/expires'], { encoding: 'utf8' }).trim());
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
async function stop(st, id) {
  const tag = (await v1(st, 'GET', ONE, { sandbox: id })).headers.etag;
  const r = await v1(st, 'POST', STOP, { sandbox: id }, { body: {}, headers: { 'if-match': tag } });
  assert.equal(r.status, 200, r.text);
  return r.json;
}
async function start(st, id) {
  const tag = (await v1(st, 'GET', ONE, { sandbox: id })).headers.etag;
  const r = await v1(st, 'POST', START, { sandbox: id }, { body: {}, headers: { 'if-match': tag } });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

before(async () => {
  s = await startStack({ env: { SANDPIT_RATE: '100r/s', SANDPIT_BURST: '50' } });
});
after(async () => {
  for (const [st, id] of made) await st.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await quiet?.stop();
  await s?.stop();
});

test('a stopped sandbox\'s expiry is disarmed: it outlives its old expiry, ends at its deadline; a start re-arms it for resumeTimeout', { timeout: 180000 }, async () => {
  const a = await createV1(s, { timeout: '10s' });
  const b = await createApi(s, { timeoutMs: 10000, maxLifetimeMs: 40000 });
  const aCid = (await one(s, a.uid)).containerId;
  const oldExpiry = Date.parse(a.effectiveFeatures.timeouts.expiresAt);
  for (const id of [a.uid, b.sandboxId]) {
    const st = await stop(s, id);
    assert.equal(st.core.status, 'stopped');
    // disarmed: no expiresAt while stopped (the document's rule)
    assert.equal(st.effectiveFeatures.timeouts.expiresAt, undefined, JSON.stringify(st.effectiveFeatures));
    assert.equal(st.effectiveFeatures.timeouts.resumeTimeout, '10s');
    assert.equal((await v1(s, 'GET', ONE, { sandbox: id })).json.effectiveFeatures.timeouts.expiresAt, undefined);
    // /api: what is armed is the deadline
    const d = await one(s, id);
    assert.equal(d.status, 'stopped');
    assert.equal(d.expiresAt, d.deadlineAt);
  }
  // past the old expiry, its grace and a reaper sweep (5 s): still stopped, still paused
  while (Date.now() < oldExpiry + 12000) await sleep(200);
  for (const [id, cid] of [[a.uid, aCid], [b.sandboxId, b.containerId]]) {
    const st = dockerState(cid);
    assert.ok(st !== 'gone' && st.Paused === true, `${id}: ${JSON.stringify(st)}`);
    assert.equal((await v1(s, 'GET', ONE, { sandbox: id })).json.core.status, 'stopped');
  }
  // start: the expiry re-armed from now for resumeTimeout, the container's own with it
  const t0 = Date.now();
  const r = await start(s, a.uid);
  const t1 = Date.now();
  assert.equal(r.core.status, 'running');
  const exp = Date.parse(r.effectiveFeatures.timeouts.expiresAt);
  assert.ok(exp >= t0 + 10000 - 1000 && exp <= t1 + 10000 + 1000, `expiresAt ${exp - t0} ms after the start`);
  const ce = containerExpiry(aCid);
  assert.ok(ce * 1000 >= exp - 999 && ce * 1000 <= exp + 5000, `container expiry ${ce * 1000 - exp} ms after expiresAt`);
  // the thawed watcher ticks at once: it must not find a stale expiry
  await sleep(6000);
  const st = dockerState(aCid);
  assert.ok(st !== 'gone' && st.Running === true && st.Paused === false, JSON.stringify(st));
  // idle after the start: ended by its expiry (nobody reading)
  await waitFor(() => dockerState(aCid) === 'gone' || dockerState(aCid).Running === false, 60000, 500);
  assert.ok(Date.now() >= exp - 1000, 'not ended before its re-armed expiry');
  const g = await v1(s, 'GET', ONE, { sandbox: a.uid });
  assert.equal(g.json.core.status, 'failed', g.text);
  // b: stopped to its hard deadline, then ended by sandpit (its keeper is frozen)
  const bRec = await one(s, b.sandboxId);
  await waitFor(() => dockerState(b.containerId) === 'gone', 90000, 500);
  const k = await one(s, b.sandboxId);
  assert.equal(k.status, 'killed');
  assert.ok(Date.parse(k.killedAt) >= Date.parse(bRec.deadlineAt) - 1500, `killed ${Date.parse(k.killedAt) - Date.parse(bRec.deadlineAt)} ms from its deadline`);
});

test('onTimeout stop: the sweep pauses it at expiry with nobody reading; a running command holds it; start resumes it for resumeTimeout', { timeout: 240000 }, async () => {
  const c = await createV1(s, { timeout: '10s', onTimeout: 'stop' });
  const d = await createV1(s, { timeout: '10s', onTimeout: 'stop' });
  assert.equal(c.effectiveFeatures.timeouts.onTimeout, 'stop');
  assert.equal(c.effectiveFeatures.timeouts.resumeTimeout, '10s');
  const cRec = await one(s, c.uid), dRec = await one(s, d.uid);
  // the container's own expiry is its deadline: its watcher never ends it
  assert.equal(containerExpiry(cRec.containerId), Math.ceil(Date.parse(cRec.deadlineAt) / 1000));
  // a command in d, made outside sandpit (its record never sees it): 30 s
  const cmd = spawn('docker', ['exec', dRec.containerId, 'sleep', '30'], { stdio: 'ignore' });
  const cmdDone = new Promise((res) => cmd.once('exit', res));
  try {
    // once Docker runs it, d's expiry is moved from now (a command through
    // sandpit), so a slow exec start under load does not race its expiry
    const execs = () => Number(execFileSync('docker', ['inspect', '-f', '{{len .ExecIDs}}', dRec.containerId], { encoding: 'utf8' }).trim());
    await waitFor(() => execs() > 0, 20000, 100);
    const touch = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: d.uid, cmd: 'true' } });
    assert.equal(touch.status, 200, touch.text);
    const dExp = Date.parse((await one(s, d.uid)).expiresAt);
    const expC = Date.parse(c.effectiveFeatures.timeouts.expiresAt);
    await waitFor(() => dockerState(cRec.containerId).Paused === true, 60000, 300);
    assert.ok(Date.now() >= expC, 'not stopped before its expiry');
    const g = await v1(s, 'GET', ONE, { sandbox: c.uid });
    assert.equal(g.json.core.status, 'stopped', g.text);
    assert.equal(g.json.effectiveFeatures.timeouts.onTimeout, 'stop');
    assert.equal(g.json.effectiveFeatures.timeouts.expiresAt, undefined);
    const api = await one(s, c.uid);
    assert.equal(api.status, 'stopped');
    assert.equal(api.expiresAt, api.deadlineAt);
    // d: its command runs, so it is active, past its first expiry and sweeps
    while (Date.now() < dExp + 8000) await sleep(200);
    assert.equal(cmd.exitCode, null, 'the command still runs');
    assert.equal(dockerState(dRec.containerId).Paused, false);
    assert.equal((await v1(s, 'GET', ONE, { sandbox: d.uid })).json.core.status, 'running');
  } finally {
    // bounded: a sandbox wrongly stopped under it freezes the command too
    await Promise.race([cmdDone, sleep(40000)]);
    cmd.kill();
  }
  // the command over: d stops after its timeout of inactivity
  await waitFor(() => dockerState(dRec.containerId).Paused === true, 60000, 300);

  // c resumes for resumeTimeout, and is stopped again once idle that long
  const t0 = Date.now();
  const r = await start(s, c.uid);
  assert.equal(r.core.status, 'running');
  const exp = Date.parse(r.effectiveFeatures.timeouts.expiresAt);
  assert.ok(exp >= t0 + 9000 && exp <= Date.now() + 11000, `expiresAt ${exp - t0} ms after the start`);
  const x = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.uid, cmd: 'echo ok' } });
  assert.equal(x.json.stdout, 'ok\n', x.text);
  await waitFor(async () => (await one(s, c.uid)).status === 'stopped', 60000, 500);
  assert.equal(dockerState(cRec.containerId).Paused, true);
  assert.ok(Date.now() >= exp, 'stopped again after resumeTimeout');
});

test('onTimeout stop with no sweep: the sandbox runs on past its expiry (its watcher never ends it) until a read stops it', { timeout: 120000 }, async () => {
  quiet = await startStack({ extraConf: 'reaper_interval_s = 0' });
  const e = await createV1(quiet, { timeout: '10s', onTimeout: 'stop' });
  const cid = (await one(quiet, e.uid)).containerId;
  const exp = Date.parse(e.effectiveFeatures.timeouts.expiresAt);
  // past the expiry, the lead and two watcher ticks, nobody reading
  while (Date.now() < exp + 12000) await sleep(200);
  const st = dockerState(cid);
  assert.ok(st !== 'gone' && st.Running === true && st.Paused === false, JSON.stringify(st));
  // the read finds it past its expiry and stops it before it answers
  const g = await v1(quiet, 'GET', ONE, { sandbox: e.uid });
  assert.equal(g.json.core.status, 'stopped', g.text);
  assert.equal(dockerState(cid).Paused, true);
  const r = await start(quiet, e.uid);
  assert.equal(r.core.status, 'running');
  // keep and restart stay a 501; autoResume too
  for (const timeouts of [{ onTimeout: 'keep' }, { onTimeout: 'restart' }, { onTimeout: 'stop', autoResume: true }]) {
    const x = await v1(quiet, 'POST', SBX, {}, { body: { image: 'images/alpine', features: { timeouts } } });
    assert.equal(x.status, 501, x.text);
  }
});

test('the hard deadline per organization and per server: the smaller wins, a longer one is refused on both faces, the default is that maximum', { timeout: 180000 }, async (t) => {
  const org = `lt${process.pid}`;
  await s.cli('orgs', 'create', org);
  await s.cli('quota', 'set', '--org', org, '--max-lifetime', '40');
  assert.match((await s.cli('quota', 'show', '--org', org)).stdout, /lifetime\s+40 s/);
  await assert.rejects(s.cli('quota', 'set', '--org', org, '--max-lifetime', '86401'));
  const key = await s.newKey(org);
  const apiMade = async (body) => {
    const r = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', ...body }, key });
    if (r.status === 200) made.push([{ api: (m, p, o) => s.api(m, p, { ...o, key }) }, r.json.sandboxId]);
    return r;
  };
  // the default lifetime is the organization's maximum
  let r = await apiMade({});
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.maxLifetimeMs, 40000);
  assert.ok(Math.abs(Date.parse(r.json.deadlineAt) - Date.parse(r.json.createdAt) - 40000) < 1000, r.text);
  // /v1 reads the same deadline: the timeout's expiry never passes it
  const g = await v1({ api: (m, p, o) => s.api(m, p, { ...o, key }) }, 'GET', ONE, { sandbox: r.json.sandboxId });
  assert.equal(g.status, 200, g.text);
  // above it: a 400 naming maxLifetimeMs (/api), an outOfRange naming the limit (/v1)
  r = await apiMade({ maxLifetimeMs: 50000 });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.code, 'BAD_REQUEST');
  assert.ok(r.json.issues.some((i) => i.path[0] === 'maxLifetimeMs'), r.text);
  assert.match(r.json.message, /^maxLifetimeMs: at most 40000 \(this organization's hard deadline\)/);
  const as = { api: (m, p, o) => s.api(m, p, { ...o, key }) };
  const x = await v1(as, 'POST', SBX, {}, { body: { image: 'images/alpine', features: { timeouts: { timeout: '60s' } } } });
  assert.equal(x.status, 400, x.text);
  assert.equal(x.json.code, 'outOfRange');
  assert.match(x.json.message, /features\.timeouts\.timeout: beyond the hard deadline \(40s after creation: this organization's maximum lifetime\)/);
  assert.equal(x.json.details[0].fieldViolations[0].field, 'features.timeouts.timeout');
  const y = await v1(as, 'POST', SBX, {}, { body: { image: 'images/alpine', features: { timeouts: { timeout: '30s' } } } });
  assert.equal(y.status, 201, y.text);
  made.push([as, y.json.uid]);

  // a server with a smaller limit (the shared dockerd registered as a
  // server of this organization only): its sandboxes get the smaller one
  const srv = `lt${process.pid}`;
  t.after(() => s.cli('servers', 'remove', srv).catch(() => {}));
  await s.cli('servers', 'add', '--id', srv, '--endpoint', 'unix:///var/run/docker.sock', '--orgs', org,
    '--allow-unfiltered', '--no-pooling', '--max-lifetime', '20');
  const listed = JSON.parse((await s.cli('servers', 'list')).stdout);
  assert.equal((Array.isArray(listed) ? listed : listed.servers).find((x) => x.id === srv).maxLifetimeMs, 20000);
  r = await apiMade({ serverId: srv });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.maxLifetimeMs, 20000);
  assert.ok(Math.abs(Date.parse(r.json.deadlineAt) - Date.parse(r.json.createdAt) - 20000) < 1000, r.text);
  r = await apiMade({ serverId: srv, maxLifetimeMs: 30000 });
  assert.equal(r.status, 400, r.text);
  assert.match(r.json.message, /^maxLifetimeMs: at most 20000 \(its server's hard deadline\)/);
  // the organization's limit still holds where it is the smaller
  await s.cli('quota', 'set', '--org', org, '--max-lifetime', '15');
  r = await apiMade({ serverId: srv });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.maxLifetimeMs, 15000);
  // 0 removes the organization's limit: back to the default 24 h
  await s.cli('quota', 'set', '--org', org, '--max-lifetime', '0');
  r = await apiMade({});
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.maxLifetimeMs, 86400000);
});
