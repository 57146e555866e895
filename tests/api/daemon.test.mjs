// The real sandpitd's process manager and its records (README "How it
// works", "Configuration"): workers recycled after max_requests, SIGHUP
// re-reading the configuration (a broken file keeps the old one), a
// record's Redis TTL of deadline + retention_s, and the operator's admin
// commands working while sandpitd is down (they use Redis directly).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startStack, waitFor } from './lib/stack.mjs';

let s;
before(async () => {
  s = await startStack({ extraConf: ['max_requests = 5', 'workers_min = 2', 'retention_s = 100', 'create_timeout_s = 10'] });
});
after(async () => { await s?.stop(); });

const log = () => fs.readFileSync(path.join(s.dir, 'sandpitd.log'), 'utf8');
const master = () => Number(fs.readFileSync(path.join(s.dir, 'sandpitd.pid'), 'utf8'));
const workers = () => execFileSync('pgrep', ['-P', String(master())], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
const redis = (...a) => execFileSync('redis-cli', ['-s', path.join(s.dir, 'redis.sock'), ...a], { encoding: 'utf8' }).trim();

test('max_requests = 5: no worker serves more than 5 requests, and every request is answered', async () => {
  const rids = [];
  for (let i = 0; i < 30; i++) {
    const r = await s.api('GET', '/api/sandbox.templates', { timeoutMs: 30000 });
    assert.equal(r.status, 200, r.text);
    rids.push(r.headers['x-request-id']);
  }
  // every line a worker logs is one request (API requests and /_auth
  // subrequests alike): count them per pid, for the pids that served these
  const text = await waitFor(() => { const t = log(); return rids.every((r) => t.includes(` ${r} GET /api/`)) && t; }, 10000, 100);
  const servedBy = new Set();
  for (const m of text.matchAll(/\[sandpitd (\d+)\] (\S+) GET \/api\/sandbox\.templates /g)) if (rids.includes(m[2])) servedBy.add(m[1]);
  const perPid = {};
  for (const m of text.matchAll(/\[sandpitd (\d+)\] \S+ (GET|POST) \S+ \d{3} \d+ms$/gm)) perPid[m[1]] = (perPid[m[1]] || 0) + 1;
  for (const pid of servedBy) assert.ok(perPid[pid] <= 5, `worker ${pid} served ${perPid[pid]} requests`);
  assert.ok(servedBy.size >= 6, `30 requests, at most 5 each: ${servedBy.size} workers`);
  assert.match(text, /recycled after max_requests/);
});

test('SIGHUP re-reads the configuration and replaces the workers; a broken file keeps the old one', async () => {
  const tmpl = async () => (await s.api('GET', '/api/sandbox.templates')).json.find((t) => t.name === 'alpine').image;
  const before = await tmpl();
  assert.notEqual(before, 'sandpit-test/debian:latest');
  const conf = fs.readFileSync(s.config, 'utf8');
  const old = workers();
  try {
    fs.writeFileSync(s.config, `${conf}\ntemplate.alpine = sandpit-test/debian:latest\n`);
    process.kill(master(), 'SIGHUP');
    await waitFor(async () => (await tmpl()) === 'sandpit-test/debian:latest', 20000, 200);
    assert.match(log(), /configuration reloaded from/);
    await waitFor(() => !workers().some((p) => old.includes(p)), 20000, 200);
    // a broken file: logged, the running configuration stays
    fs.writeFileSync(s.config, `${conf}\ntemplate.alpine = sandpit-test/debian:latest\nfrobnicate = 1\n`);
    process.kill(master(), 'SIGHUP');
    await waitFor(() => /configuration reload failed, keeping the old one: .*unknown key 'frobnicate'/.test(log()), 20000, 200);
    assert.equal(await tmpl(), 'sandpit-test/debian:latest');
    assert.equal((await s.api('GET', '/api/sandbox.list')).status, 200);
  } finally {
    fs.writeFileSync(s.config, conf);
    process.kill(master(), 'SIGHUP');
  }
  await waitFor(async () => (await tmpl()) === before, 20000, 200);
});

test('a record lives in Redis for its deadline plus retention_s', async (t) => {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', maxLifetimeMs: 20000 } });
  assert.equal(c.status, 200, c.text);
  t.after(() => s.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } }));
  const keys = redis('--scan', '--pattern', `*:sb:${c.json.sandboxId}`).split('\n').filter(Boolean);
  assert.equal(keys.length, 1, keys.join(' '));
  const ttl = Number(redis('TTL', keys[0]));
  const want = (Date.parse(c.json.deadlineAt) - Date.now()) / 1000 + 100;
  assert.ok(Math.abs(ttl - want) <= 3, `TTL ${ttl} s, deadline + retention_s is ${want.toFixed(1)} s`);
  // killed, it is still kept (until the same end)
  assert.equal((await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: c.json.sandboxId } })).status, 200);
  const kept = Number(redis('TTL', keys[0]));
  assert.ok(kept > 100 && kept <= ttl, `TTL after kill ${kept} s`);
  assert.equal((await s.api('GET', '/api/sandbox.one', { query: { sandboxId: c.json.sandboxId } })).json.status, 'killed');
});

test('create_timeout_s: a creation still creating after it reads error, naming the bound', async (t) => {
  // a crash between the record and the container, simulated: a record put
  // back to "creating" with no container, made 9 s and then 11 s ago
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
  assert.equal(c.status, 200, c.text);
  t.after(() => s.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } }));
  const { docker } = await import('./lib/docker.mjs');
  await docker('DELETE', `/containers/${c.json.containerId}?force=true`);
  const key = redis('--scan', '--pattern', `*:sb:${c.json.sandboxId}`);
  const stored = redis('HGET', key, 'createdAt');
  const at = (ms) => (/^\d+$/.test(stored) ? String(ms) : new Date(ms).toISOString());
  // the bound is fixed at create (creatingUntil = createdAt + create_timeout_s)
  const made = (ago) => ['createdAt', at(Date.now() - ago), 'creatingUntil', String(Date.now() - ago + 10000)];
  redis('HSET', key, 'status', 'creating', 'containerId', '', ...made(9000));
  const young = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: c.json.sandboxId } });
  assert.equal(young.json.status, 'creating', young.text);
  redis('HSET', key, ...made(11000));
  const old = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: c.json.sandboxId } });
  assert.equal(old.json.status, 'error', old.text);
  assert.equal(old.json.errorMessage, 'Creation did not finish within 10 s');
  const listed = (await s.api('GET', '/api/sandbox.list')).json.find((x) => x.sandboxId === c.json.sandboxId);
  assert.equal(listed.status, 'error');
});

test('admin commands work while sandpitd is down', async () => {
  const pid = master();
  process.kill(pid, 'SIGTERM');
  await waitFor(() => { try { process.kill(pid, 0); return false; } catch { return true; } }, 30000, 100);
  assert.equal((await s.api('GET', '/api/sandbox.list')).status, 503);
  await s.cli('orgs', 'create', 'offline-org');
  const k = await s.cli('keys', 'create', '--org', 'offline-org', '--role', 'admin');
  assert.match(k.stdout.trim(), /^sp_/);
  const id = k.stderr.match(/key id (\S+)/)[1];
  assert.match((await s.cli('keys', 'list', '--org', 'offline-org')).stdout, new RegExp(id));
  await s.cli('quota', 'set', '--org', 'offline-org', '--sandboxes', '3');
  assert.match((await s.cli('quota', 'show', '--org', 'offline-org')).stdout, /sandboxes\s+3/);
  await s.cli('roles', 'create', '--org', 'offline-org', 'viewer', '--perms', 'sandbox:read');
  assert.match((await s.cli('roles', 'list', '--org', 'offline-org')).stdout, /viewer/);
  JSON.parse((await s.cli('servers', 'list')).stdout);
  await s.cli('keys', 'revoke', id);
});
