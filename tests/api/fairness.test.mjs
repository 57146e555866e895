// One organization saturating its long-running requests leaves every other
// organization's calls and health answering (RELIABILITY T2, issue 24 D2).
// With workers_max = 4 (share: org_long_requests' default, 1), org A
// starts more `sleep` execs than there are workers: past what the pool can
// give it while keeping a share for the others, A gets 429 with
// Retry-After in both faces' shapes; meanwhile org B's templates, list,
// one, /v1 get, healthz (the reserved workers) and an exec (the share kept
// free) answer 200 within 3 s each, where they used to wait 5-10 s and 503.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, waitFor } from './lib/stack.mjs';

let s, keyA;
const made = [];
before(async () => {
  s = await startStack({ extraConf: ['workers_max = 4'] });
  keyA = await s.newKey('orga');
});
after(async () => {
  for (const { id, key } of made)
    await s.api('POST', '/api/sandbox.remove', { key, body: { sandboxId: id } }).catch(() => {});
  await s?.stop();
});

async function create(key) {
  const r = await s.api('POST', '/api/sandbox.create', { key, body: { template: 'alpine' } });
  assert.equal(r.status, 200, r.text);
  made.push({ id: r.json.sandboxId, key });
  return r.json.sandboxId;
}
const exec = (key, id, cmd) => s.api('POST', '/api/sandbox.exec', { key, body: { sandboxId: id, cmd, timeoutMs: 60000 }, timeoutMs: 90000 });
const timed = async (name, fn) => { const t0 = Date.now(); const r = await fn(); return { name, ms: Date.now() - t0, ...r }; };

test('T2: one org past its share gets 429; another org\'s reads, health and exec keep answering', { timeout: 120000 }, async () => {
  const a = await create(keyA);
  const b = await create(s.key);
  // A's /v1 sandbox and endpoint credential, for the /v1 face's 429
  let r = await s.api('POST', '/v1/sandboxes', { key: keyA, body: { imageRef: 'sandpit-test/busybox' } });
  assert.equal(r.status, 201, r.text);
  const av = r.json.uid;
  made.push({ id: av, key: keyA });
  r = await s.api('POST', `/v1/sandboxes/${av}/endpoint-credentials`, { key: keyA, body: { permissions: ['sandboxesExec'] } });
  assert.equal(r.status, 200, r.text);
  const tok = r.json.token;

  const N = 7; // more than workers_max
  const t0 = Date.now();
  const flood = Array.from({ length: N }, () => exec(keyA, a, 'sleep 15; echo done').then((x) => ({ ...x, ms: Date.now() - t0 })));
  const settled = [];
  flood.forEach((p) => p.then((x) => settled.push(x)));
  // the refusals come at once; the admitted ones sleep
  await waitFor(async () => settled.filter((x) => x.status === 429).length >= N - 3, 10000, 100);
  const refused = settled.filter((x) => x.status === 429);
  for (const x of refused) {
    assert.equal(x.json.code, 'TOO_MANY_REQUESTS', x.text);
    assert.match(x.json.message, /long-running requests of this organization/);
    assert.equal(x.headers['retry-after'], '1');
    assert.ok(x.ms < 5000, `a refusal took ${x.ms} ms`);
  }
  // the /v1 face: resourceExhausted, with Retry-After
  const v = await s.api('POST', `/endpoints/${av}/v1/processes/exec`, { key: null, headers: { authorization: `Bearer ${tok}` }, body: { cmd: ['sleep', '1'] } });
  assert.equal(v.status, 429, v.text);
  assert.equal(v.json.code, 'resourceExhausted');
  assert.equal(v.headers['retry-after'], '1');

  // meanwhile B (another org) and health
  for (let round = 0; round < 3; round++) {
    const rs = await Promise.all([
      timed('healthz', () => s.api('GET', '/healthz', { key: null, timeoutMs: 20000 })),
      timed('templates', () => s.api('GET', '/api/sandbox.templates', { timeoutMs: 20000 })),
      timed('list', () => s.api('GET', '/api/sandbox.list', { timeoutMs: 20000 })),
      timed('one', () => s.api('GET', '/api/sandbox.one', { query: { sandboxId: b }, timeoutMs: 20000 })),
      timed('v1 get', () => s.api('GET', `/v1/sandboxes/${b}`, { timeoutMs: 20000 })),
      timed('exec', () => exec(s.key, b, 'echo hi')),
    ]);
    for (const x of rs) {
      assert.equal(x.status, 200, `${x.name}: ${x.status} after ${x.ms} ms ${x.text.slice(0, 200)}`);
      assert.ok(x.ms < 3000, `${x.name} took ${x.ms} ms while org A held its share`);
    }
    assert.equal(rs[5].json.stdout, 'hi\n');
  }
  // A's admitted commands ran to the end
  const all = await Promise.all(flood);
  const ran = all.filter((x) => x.status === 200);
  assert.ok(ran.length >= 1 && ran.length <= 3, `admitted: ${all.map((x) => x.status).join(' ')}`);
  for (const x of ran) assert.equal(x.json.stdout, 'done\n');
  assert.equal(ran.length + refused.length, N, all.map((x) => x.status).join(' '));
  // and once they are done, A runs again
  r = await exec(keyA, a, 'echo again');
  assert.equal(r.status, 200, r.text);
});
