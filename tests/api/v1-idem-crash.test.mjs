// RELIABILITY I2 (and L5 for /v1): a sandpitd worker SIGKILLed in the
// middle of a createSandbox with an Idempotency-Key does not make the
// retry with the same key create a second container. A proxy in front of
// the Docker socket (lib/dockerproxy.mjs) stalls one Docker call of the
// create, so the kill lands at a known step: after the container started
// but before the record says so (the retry adopts that container); after
// the container was created but not started (the retry ends it and makes
// the sandbox again under the same id); before Docker saw the create (the
// retry makes it); and with its start still on the way to Docker, let
// through after the kill so that the container starts while the retry
// runs (the retry adopts it or ends it and makes it again, whichever it
// sees). While the first request is stalled and its worker alive, a retry
// gets 409 idempotency_in_progress. Every worker of the stack is killed
// (the stalled one among them); the master starts new ones. Containers
// are counted by label, as `docker ps -a` would.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { startStack, waitFor } from './lib/stack.mjs';
import { dockerProxy } from './lib/dockerproxy.mjs';
import { docker } from './lib/docker.mjs';
import { ajv, seedValidator } from './lib/v1seed.mjs';

let s, proxy, dir, org, key;
const orgs = [];
const path0 = (u) => u.split('?')[0];
const SBX = '/v1/sandboxes';

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sp-idem-'));
  proxy = await dockerProxy(dir);
  s = await startStack({ env: { SANDPIT_DOCKER_HOST: `unix://${proxy.sock}` } });
});

// Each case in an organization of its own: a case that fails leaves
// nothing that the next one counts.
async function newOrg() {
  org = `ic${crypto.randomBytes(4).toString('hex')}`;
  orgs.push(org);
  await s.cli('orgs', 'create', org);
  key = await s.newKey(org);
}
after(async () => {
  if (proxy) proxy.hold = null;
  for (const o of orgs)
    for (const c of await containers(`sandpit.organizationId=${o}`).catch(() => []))
      await docker('DELETE', `/containers/${c.Id}?force=true`).catch(() => {});
  await s?.stop();
  await proxy?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function containers(label) {
  const f = encodeURIComponent(JSON.stringify({ label: [label] }));
  return (await docker('GET', `/containers/json?all=1&filters=${f}`)).json;
}

function workers() {
  const master = Number(fs.readFileSync(path.join(s.dir, 'sandpitd.pid'), 'utf8'));
  return spawnSync('pgrep', ['-P', String(master)], { encoding: 'utf8' })
    .stdout.split('\n').filter(Boolean).map(Number);
}

async function create(idemKey, body) {
  const r = await s.api('POST', SBX, { key, body, headers: { 'idempotency-key': idemKey }, timeoutMs: 120000 });
  const v = seedValidator('POST', SBX, r.status);
  if (v) assert.ok(v(r.json), `POST ${SBX} ${r.status} breaks the seed's schema: ${ajv.errorsText(v.errors)}\n${r.text}`);
  return r;
}

// The create stalled at the Docker call `match` (in `phase`), its
// workers killed, then the retry: one container, a valid Sandbox.
async function crashAndRetry(name, phase, match, then = 'drop') {
  await newOrg();
  const idemKey = `crash-${name}-${crypto.randomBytes(4).toString('hex')}`;
  const body = { image: 'images/alpine', displayName: `crash_${name}` };
  let reached, release;
  const atStall = new Promise((r) => { reached = r; });
  const until = new Promise((r) => { release = r; });
  let sid, startedId;
  proxy.hold = (m, u) => {
    if (!match(m, u)) return null;
    const n = /[?&]name=[^&]*-([a-z0-9]{20})(&|$)/.exec(u);
    if (n) sid = n[1];
    const st = /\/containers\/([0-9a-f]{64})\/start$/.exec(path0(u));
    if (st) startedId = st[1];
    proxy.hold = null; // once
    return { phase, until, held: reached };
  };
  const first = create(idemKey, body).catch((e) => e);
  try {
    await Promise.race([atStall, new Promise((_, j) => setTimeout(() => j(new Error('the create never reached the stalled call')), 60000))]);
    // the first request is alive and stalled: a retry waits it out
    const busy = await create(idemKey, body);
    assert.equal(busy.status, 409, busy.text);
    assert.match(busy.json.message, /^idempotency_in_progress: /);
    const before = workers();
    assert.ok(before.length >= 1);
    for (const pid of before) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
    await waitFor(() => { const w = workers(); return w.length >= 1 && !w.some((p) => before.includes(p)); }, 20000);
  } finally {
    release(then);
  }
  const f = await first;
  assert.ok(f instanceof Error || f.status >= 500, `the killed request got no answer: ${f.status} ${f.text}`);
  const r = await create(idemKey, body);
  assert.equal(r.status, 201, r.text);
  assert.match(r.json.uid, /^[a-z0-9]{20}$/);
  if (sid) assert.equal(r.json.uid, sid, 'the retry made the sandbox under the id the first chose');
  assert.equal(r.json.core.status, 'running');
  const mine = await containers(`sandpit.sandboxId=${r.json.uid}`);
  assert.equal(mine.length, 1, `one container for the key: ${JSON.stringify(mine.map((c) => [c.Id.slice(0, 12), c.State]))}`);
  assert.equal(mine[0].State, 'running');
  if (startedId && then === 'drop') assert.equal(mine[0].Id, startedId, 'the started container was adopted, not made again');
  const all = await containers(`sandpit.organizationId=${org}`);
  assert.equal(all.length, 1, 'no other container for the org either');
  // the sandbox works, through the other face too
  const x = await s.api('POST', '/api/sandbox.exec', { key, body: { sandboxId: r.json.uid, cmd: 'echo ok' } });
  assert.equal(x.status, 200, x.text);
  assert.equal(x.json.stdout, 'ok\n');
  // and the key now replays that answer
  const again = await create(idemKey, body);
  assert.equal(again.status, 201, again.text);
  assert.equal(again.json.uid, r.json.uid);
  const d = await s.api('DELETE', `${SBX}/${r.json.uid}`, { key, headers: { 'if-match': again.json.core.etag } });
  assert.ok([204, 412].includes(d.status), d.text);
  if (d.status === 412) {
    const g = await s.api('GET', `${SBX}/${r.json.uid}`, { key });
    await s.api('DELETE', `${SBX}/${r.json.uid}`, { key, headers: { 'if-match': g.json.core.etag } });
  }
  await waitFor(async () => (await containers(`sandpit.sandboxId=${r.json.uid}`)).length === 0, 30000);
  return { sid, uid: r.json.uid };
}

const isStart = (m, u) => m === 'POST' && /\/containers\/[^/]+\/start$/.test(path0(u));
const isCreate = (m, u) => m === 'POST' && /\/containers\/create$/.test(path0(u));

test('I2: killed after the container started, before the record: the retry adopts it', async () => {
  await crashAndRetry('started', 'answer', isStart);
});

test('I2: killed after the container was created, before its start: the retry makes it again, one container', async () => {
  await crashAndRetry('created', 'answer', isCreate);
});

test('I2: killed before Docker saw the create: the retry makes it under the same id', async () => {
  await crashAndRetry('unsent', 'request', isCreate);
});

test('I2: killed with its start still on the way to Docker (it starts while the retry runs): one container', async () => {
  await crashAndRetry('starting', 'request', isStart, 'forward');
});
