// Defence in depth around a sandbox's lifetime (RELIABILITY A10, L4, L5):
// kill and remove act on the container by label whatever the record says;
// a quota share is released only once the container is really gone; the
// reaper (the workers, between requests) ends a container whose record was
// lost, and what a worker SIGKILLed mid-create left behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { startStack, waitFor } from './lib/stack.mjs';
import { docker } from './lib/docker.mjs';

function redis(s, ...args) {
  return new Promise((resolve, reject) => {
    execFile('redis-cli', ['-s', path.join(s.dir, 'redis.sock'), ...args], { timeout: 5000 },
      (err, stdout) => (err ? reject(err) : resolve(stdout.trim())));
  });
}

async function containers(label) {
  const f = encodeURIComponent(JSON.stringify({ label: [label] }));
  return (await docker('GET', `/containers/json?all=1&filters=${f}`)).json;
}
const byId = (id) => containers(`sandpit.sandboxId=${id}`);
const running = async (id) => (await byId(id)).filter((c) => c.State === 'running').length;

async function cleanupLabel(label) {
  for (const c of await containers(label)) await docker('DELETE', `/containers/${c.Id}?force=true`);
}

async function orgWithQuota(s, n) {
  const org = `rp${crypto.randomBytes(4).toString('hex')}`;
  await s.cli('orgs', 'create', org);
  if (n) await s.cli('quota', 'set', '--org', org, '--sandboxes', String(n));
  return { org, key: await s.newKey(org) };
}

test('kill and remove act on the container by label when the record says killed; kill is idempotent', async () => {
  // no reaper here: kill and remove alone must end the containers
  const s = await startStack({ extraConf: 'reaper_interval_s = 0' });
  const { org, key } = await orgWithQuota(s, 0);
  try {
    for (const op of ['kill', 'remove']) {
      const c = await s.api('POST', '/api/sandbox.create', { key, body: { template: 'alpine' } });
      assert.equal(c.status, 200, c.text);
      const id = c.json.sandboxId;
      // the record says killed, the container runs
      await redis(s, 'HSET', `sp:{${org}}:sb:${id}`, 'status', 'killed', 'killedAt', String(Date.now()));
      assert.equal(await running(id), 1);
      const r = await s.api('POST', `/api/sandbox.${op}`, { key, body: { sandboxId: id } });
      assert.equal(r.status, 200, `${op}: ${r.text}`);
      if (op === 'kill') {
        assert.equal(r.json.status, 'killed');
        // other operations on a killed sandbox keep failing
        const x = await s.api('POST', '/api/sandbox.exec', { key, body: { sandboxId: id, cmd: 'true' } });
        assert.equal(x.status, 412);
        assert.equal(x.json.message, 'Sandbox is killed');
        const again = await s.api('POST', '/api/sandbox.kill', { key, body: { sandboxId: id } });
        assert.equal(again.status, 200, again.text);
        assert.equal(again.json.status, 'killed');
      }
      assert.equal(await running(id), 0, `${op}: the container is stopped`);
    }
  } finally {
    await cleanupLabel(`sandpit.organizationId=${org}`);
    await s.stop();
  }
});

test('quota of 1: after an expiry the next create succeeds only once the container is really gone', async () => {
  const s = await startStack({ extraConf: 'reaper_interval_s = 0' });
  const { org, key } = await orgWithQuota(s, 1);
  try {
    const a = await s.api('POST', '/api/sandbox.create', { key, body: { template: 'alpine', timeoutMs: 60000 } });
    assert.equal(a.status, 200, a.text);
    const full = await s.api('POST', '/api/sandbox.create', { key, body: { template: 'alpine' } });
    assert.equal(full.status, 429, full.text);
    // the record's expiry passes while the container (its own expiry a
    // minute away) still runs
    await redis(s, 'HSET', `sp:{${org}}:sb:${a.json.sandboxId}`, 'expiresAt', String(Date.now() - 1000));
    assert.equal(await running(a.json.sandboxId), 1);
    const b = await s.api('POST', '/api/sandbox.create', { key, body: { template: 'alpine' } });
    // the share came free only because the catch-up ended the container
    const left = await running(a.json.sandboxId);
    assert.equal(b.status, 200, b.text);
    assert.equal(left, 0, 'the expired container was gone before its share went to the next create');
    const one = await s.api('GET', '/api/sandbox.one', { key, query: { sandboxId: a.json.sandboxId } });
    assert.equal(one.json.status, 'killed');
    // and the quota still holds: one running
    const c = await s.api('POST', '/api/sandbox.create', { key, body: { template: 'alpine' } });
    assert.equal(c.status, 429, c.text);
  } finally {
    await cleanupLabel(`sandpit.organizationId=${org}`);
    await s.stop();
  }
});

test('L4: a sandbox whose record is lost has its container ended by the reaper and its quota share released', async () => {
  const s = await startStack({ extraConf: 'reaper_interval_s = 1' });
  const { org, key } = await orgWithQuota(s, 1);
  try {
    const a = await s.api('POST', '/api/sandbox.create', { key, body: { template: 'alpine', timeoutMs: 120000 } });
    assert.equal(a.status, 200, a.text);
    const id = a.json.sandboxId;
    // Redis loses the record (and its index entry); the reservation stays
    await redis(s, 'DEL', `sp:{${org}}:sb:${id}`);
    await redis(s, 'ZREM', `sp:{${org}}:sbs`, id);
    const t = Date.now();
    await waitFor(async () => (await byId(id)).length === 0, 20000, 250);
    const endedIn = Date.now() - t;
    // never adopted: the id reads as not found
    const one = await s.api('GET', '/api/sandbox.one', { key, query: { sandboxId: id } });
    assert.equal(one.status, 404);
    // the reservation was released with it: the quota of 1 is free again
    const b = await waitFor(async () => {
      const r = await s.api('POST', '/api/sandbox.create', { key, body: { template: 'alpine' } });
      return r.status === 200 ? r : null;
    }, 10000, 500);
    assert.equal(b.status, 200);
    assert.match(await s.logTail('sandpitd.log', 400), new RegExp(`reaper: sandbox ${id}: it has no record`));
    assert.ok(endedIn < 20000, `ended after ${endedIn} ms`);
  } finally {
    await cleanupLabel(`sandpit.organizationId=${org}`);
    await s.stop();
  }
});

function workers(master) {
  const r = spawnSync('pgrep', ['-P', String(master)], { encoding: 'utf8' });
  return r.stdout.split('\n').filter(Boolean).map(Number);
}

test('L5: workers SIGKILLed mid-create leave no container and no record stuck creating', async () => {
  const s = await startStack({ extraConf: ['reaper_interval_s = 1', 'create_timeout_s = 5'] });
  const { org, key } = await orgWithQuota(s, 0);
  const label = `sandpit.organizationId=${org}`;
  try {
    const master = Number(fs.readFileSync(path.join(s.dir, 'sandpitd.pid'), 'utf8'));
    for (const delay of [20, 60, 120, 200, 300, 450]) {
      await waitFor(() => workers(master).length >= 1, 10000);
      const before = workers(master);
      const inflight = s.api('POST', '/api/sandbox.create', { key, body: { template: 'alpine' }, timeoutMs: 30000 }).catch((e) => e);
      await new Promise((r) => setTimeout(r, delay));
      for (const pid of before) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
      await inflight;
      await waitFor(() => workers(master).length >= 1 && !workers(master).some((p) => before.includes(p)), 10000);
    }
    // sandboxes a killed create left behind: their records say so (the
    // create was written "creating" before any container existed)
    const list = await s.api('GET', '/api/sandbox.list', { key });
    assert.equal(list.status, 200, list.text);
    assert.ok(list.json.length >= 1, 'the creates wrote their records');
    // within the grace (5 s) plus a sweep, nothing labelled without a live
    // record survives, and no record stays creating
    await waitFor(async () => {
      const l = await s.api('GET', '/api/sandbox.list', { key });
      if (l.json.some((r) => r.status === 'creating')) return false;
      const live = new Set(l.json.filter((r) => r.status === 'running').map((r) => r.sandboxId));
      const cs = await containers(label);
      return cs.every((c) => live.has(c.Labels['sandpit.sandboxId']) && c.State === 'running');
    }, 30000, 500);
    const final = await s.api('GET', '/api/sandbox.list', { key });
    for (const r of final.json) {
      assert.ok(['running', 'error', 'killed'].includes(r.status), `${r.sandboxId}: ${r.status}`);
      if (r.status !== 'running') assert.equal(await running(r.sandboxId), 0, `${r.sandboxId} (${r.status}) has no container`);
    }
  } finally {
    await cleanupLabel(label);
    await s.stop();
  }
});

test('the reaper leaves the containers of another installation on the same dockerd alone', async () => {
  // b's records live in b's Redis: a's reaper must not take b's containers
  // for ones whose record is gone
  const a = await startStack({ extraConf: 'reaper_interval_s = 1' });
  const b = await startStack({ extraConf: 'reaper_interval_s = 0' });
  let id;
  try {
    const c = await b.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
    assert.equal(c.status, 200, c.text);
    id = c.json.sandboxId;
    // a few sweeps of a's (its workers sweep while idle and between requests)
    for (let i = 0; i < 6; i++) {
      await a.api('GET', '/api/sandbox.list');
      await new Promise((r) => setTimeout(r, 1000));
    }
    assert.equal(await running(id), 1, "b's container still runs");
    assert.doesNotMatch(await a.logTail('sandpitd.log', 400), new RegExp(`reaper: sandbox ${id}`));
  } finally {
    if (id) await b.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } });
    await b.stop();
    await a.stop();
  }
});
