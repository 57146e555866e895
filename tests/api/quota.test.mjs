// Per-organization quotas, enforced atomically (RELIABILITY L6): 200
// parallel creates never exceed the quota; the excess gets 429.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack } from './lib/stack.mjs';
import { docker, noShImage, removeNoShImage } from './lib/docker.mjs';

let s;
before(async () => { s = await startStack({ env: { SANDPIT_RATE: '1000r/s', SANDPIT_BURST: '1000' } }); });
after(async () => { await removeNoShImage(); await s?.stop(); });

async function running(org) {
  const r = await docker('GET', '/containers/json?filters=' + encodeURIComponent(JSON.stringify({ label: [`sandpit.organizationId=${org}`] })));
  return r.json.length;
}

test('L6: 200 parallel creates against a quota of 5 sandboxes', async () => {
  await s.cli('orgs', 'create', 'quota-org');
  await s.cli('quota', 'set', '--org', 'quota-org', '--sandboxes', '5');
  const key = await s.newKey('quota-org');
  const rs = await Promise.all(Array.from({ length: 200 }, () =>
    s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' }, key })));
  const ok = rs.filter((r) => r.status === 200), limited = rs.filter((r) => r.status === 429);
  assert.equal(ok.length, 5, rs.filter((r) => r.status !== 429 && r.status !== 200).map((r) => r.status + r.text).join('\n'));
  assert.equal(limited.length, 195);
  assert.match(limited[0].json.message, /Quota exceeded: 5 of 5 running sandboxes/);
  // a full quota is its own code, without Retry-After (waiting a second does
  // not free it), apart from the rate limit's TOO_MANY_REQUESTS (roles.test)
  assert.equal(limited[0].json.code, 'QUOTA_EXCEEDED');
  assert.equal(limited[0].headers['retry-after'], undefined);
  assert.equal(await running('quota-org'), 5);
  // killing one frees its share
  const k = await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: ok[0].json.sandboxId }, key });
  assert.equal(k.status, 200);
  const again = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' }, key });
  assert.equal(again.status, 200, again.text);
  ok.push(again);
  for (const r of ok) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: r.json.sandboxId }, key });
});

test('CPU and memory quotas', async () => {
  await s.cli('quota', 'set', '--org', 'cpu-org', '--cpu', '1.5', '--memory-mb', '1024');
  const key = await s.newKey('cpu-org');
  const a = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', cpu: 1, memoryMb: 512 }, key });
  assert.equal(a.status, 200);
  const b = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', cpu: 1, memoryMb: 256 }, key });
  assert.equal(b.status, 429);
  assert.equal(b.json.code, 'QUOTA_EXCEEDED');
  assert.match(b.json.message, /CPUs/);
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', cpu: 0.5, memoryMb: 1024 }, key });
  assert.equal(c.status, 429);
  assert.match(c.json.message, /memory/);
  const d = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', cpu: 0.5, memoryMb: 512 }, key });
  assert.equal(d.status, 200, d.text);
  const shown = await s.cli('quota', 'show', '--org', 'cpu-org');
  assert.match(shown.stdout, /cpu\s+1\.5/);
  for (const r of [a, d]) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: r.json.sandboxId }, key });
});

test('quota 0 removes a limit; failed and removed sandboxes release their share', async (t) => {
  await s.cli('orgs', 'create', 'zero-org');
  const key = await s.newKey('zero-org');
  const made = [];
  t.after(async () => { for (const id of made) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: id }, key }); });
  const create = async (body, want) => {
    const r = await s.api('POST', '/api/sandbox.create', { body, key });
    assert.equal(r.status, want, r.text);
    if (r.json?.sandboxId) made.push(r.json.sandboxId);
    return r;
  };
  await s.cli('quota', 'set', '--org', 'zero-org', '--sandboxes', '1');
  const a = await create({ template: 'alpine' }, 200);
  await create({ template: 'alpine' }, 429);
  // 0: no limit on sandboxes any more
  await s.cli('quota', 'set', '--org', 'zero-org', '--sandboxes', '0');
  await create({ template: 'alpine' }, 200);
  await create({ template: 'alpine' }, 200);
  assert.equal(await running('zero-org'), 3);
  for (const id of made.splice(0)) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: id }, key });
  // back to 1: a create that fails (an image without sh) does not keep
  // the share, nor does a removed sandbox
  await s.cli('quota', 'set', '--org', 'zero-org', '--sandboxes', '1');
  const failed = await s.api('POST', '/api/sandbox.create', { body: { image: await noShImage() }, key });
  assert.equal(failed.status, 400, failed.text);
  const b = await create({ template: 'alpine' }, 200);
  await create({ template: 'alpine' }, 429);
  const rm = await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: b.json.sandboxId }, key });
  assert.equal(rm.status, 200, rm.text);
  made.splice(made.indexOf(b.json.sandboxId), 1);
  await create({ template: 'alpine' }, 200);
  assert.ok(a.json.sandboxId);
});
