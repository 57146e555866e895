// Every create field at and past its bounds, and bad input of every kind:
// a 400 that names the field, never a 500.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';
import { startStack } from './lib/stack.mjs';

let s;
const made = [];
before(async () => { s = await startStack(); });
after(async () => {
  for (const id of made) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } });
  await s?.stop();
});

async function create(body) {
  const r = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', ...body } });
  if (r.status === 200) made.push(r.json.sandboxId);
  return r;
}

function assertField(r, field) {
  assert.equal(r.status, 400, `${field}: ${r.status} ${r.text}`);
  assert.equal(r.json.code, 'BAD_REQUEST');
  assert.ok(r.json.message.includes(field), `message names ${field}: ${r.json.message}`);
  assert.ok(Array.isArray(r.json.issues) && r.json.issues.some((i) => i.path[0] === field),
    `issues name ${field}: ${JSON.stringify(r.json.issues)}`);
}

const past = [
  ['cpu', 0.09], ['cpu', 64.01], ['cpu', 'one'], ['cpu', null],
  ['memoryMb', 63], ['memoryMb', 262145], ['memoryMb', 100.5], ['memoryMb', '512'],
  ['pidsLimit', 15], ['pidsLimit', 65537],
  ['diskMb', 15], ['diskMb', 16385], ['diskMb', 64.5], ['diskMb', '64'],
  ['timeoutMs', 9999], ['timeoutMs', 86400001],
  ['maxLifetimeMs', 9999], ['maxLifetimeMs', 86400001],
  ['networkMode', 'host'], ['networkMode', 1],
  ['name', ''], ['name', 'x'.repeat(65)],
  // control and bidirectional characters (issue 12): ESC, CR/LF, TAB, DEL, C1, RLO, LRI, LS
  ['name', 'a\u001b[2Jb'], ['name', 'a\r\nb'], ['name', 'a\tb'], ['name', 'a\u007fb'],
  ['name', 'a\u0085b'], ['name', 'evil\u202etxt.exe'], ['name', 'a\u2066b'], ['name', 'a\u2028b'],
  ['image', 'x'.repeat(256)],
  ['envVars', 'A=' + 'x'.repeat(65535)], ['envVars', 'not a pair'], ['envVars', '1BAD=x'],
  ['workdir', 'relative/dir'], ['workdir', '/' + 'x'.repeat(4096)], ['workdir', '/a\u0000b'],
  ['workdir', '/home/../x'], ['workdir', '/a//b'], ['workdir', '/a/'], ['workdir', '/a/.'],
  ['template', 'no-such-template'], ['template', '../etc'],
  ['serverId', 'no-such-server'],
];
for (const [field, value] of past) {
  test(`create rejects ${field}=${JSON.stringify(value).slice(0, 40)}`, async () => {
    const body = field === 'image' ? { template: undefined, image: value } : { [field]: value };
    const r = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', ...body } });
    if (field === 'serverId') {
      assert.equal(r.status, 404, r.text);
      assert.ok(r.json.message.includes('no-such-server'));
      return;
    }
    assertField(r, field);
  });
}

test('create needs template or image', async () => {
  const r = await s.api('POST', '/api/sandbox.create', { body: {} });
  assert.equal(r.status, 400);
  assert.equal(r.json.message, 'Either template or image is required');
});

test('create rejects unknown fields, naming them', async () => {
  const r = await create({ privileged: true });
  assertField(r, 'privileged');
});

test('malformed, non-object and deeply nested JSON get 400', async () => {
  for (const raw of ['{"template": "alpine"', '[1,2]', '"x"', '{"a":1} junk', '[' .repeat(100) + ']'.repeat(100)]) {
    const r = await s.api('POST', '/api/sandbox.create', { rawBody: raw });
    assert.equal(r.status, 400, raw.slice(0, 20) + ' ' + r.text);
    assert.equal(r.json.code, 'BAD_REQUEST');
  }
});

test('an oversize body is refused with 413', async () => {
  const r = await s.api('POST', '/api/sandbox.create', { rawBody: '{"name":"' + 'x'.repeat(16 * 1024 * 1024) + '"}' });
  assert.equal(r.status, 413);
});

test('query values are validated too', async () => {
  for (const id of ['../etc', 'a?b', 'a#b', 'a%2Fb', 'x'.repeat(10000)]) {
    const r = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } });
    assert.ok(r.status === 400 || r.status === 404 || r.status === 414, `${id.slice(0, 20)} → ${r.status}`);
    if (r.status === 400) assert.ok(r.text.includes('sandboxId'));
  }
  const missing = await s.api('GET', '/api/sandbox.one');
  assertField(missing, 'sandboxId');
  const extra = await s.api('GET', '/api/sandbox.list', { query: { foo: '1' } });
  assertField(extra, 'foo');
  const wrongMethod = await s.api('POST', '/api/sandbox.one', { body: { sandboxId: 'x' } });
  assert.equal(wrongMethod.status, 405);
  const nothing = await s.api('GET', '/api/sandbox.nope');
  assert.equal(nothing.status, 404);
});

test('setTimeout bounds', async () => {
  for (const v of [9999, 86400001, 'x', null]) {
    const r = await s.api('POST', '/api/sandbox.setTimeout', { body: { sandboxId: 'abc', timeoutMs: v } });
    assertField(r, 'timeoutMs');
  }
});

test('create accepts every field at its bounds', async () => {
  const cases = [
    { cpu: 0.1 }, { memoryMb: 64 }, { memoryMb: 262144 }, { pidsLimit: 16 }, { pidsLimit: 65536 },
    { diskMb: 16 }, { diskMb: 16384 },
    { timeoutMs: 10000 }, { timeoutMs: 86400000 }, { maxLifetimeMs: 10000 }, { maxLifetimeMs: 86400000 },
    { name: 'n'.repeat(64) }, { name: 'n' }, { name: 'café ☕ 名前 a-b_c.d' }, { networkMode: 'internet' }, { networkMode: 'isolated' },
    { envVars: 'A=' + 'x'.repeat(65534) }, { envVars: '' }, { workdir: '/srv/work' }, { serverId: null },
  ];
  for (const c of cases) {
    const r = await create(c);
    assert.equal(r.status, 200, `${JSON.stringify(c).slice(0, 60)}: ${r.text}`);
    assert.equal(r.json.status, 'running');
    const key = Object.keys(c)[0];
    if (['cpu', 'memoryMb', 'pidsLimit', 'diskMb', 'timeoutMs', 'maxLifetimeMs', 'name', 'networkMode', 'workdir'].includes(key))
      assert.equal(r.json[key], c[key]);
    await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: r.json.sandboxId } });
  }
  // the top CPU bound: accepted where the host has the CPUs, else a 400 naming cpu
  const big = await create({ cpu: 64 });
  if (os.cpus().length >= 64) assert.equal(big.status, 200);
  else assertField(big, 'cpu');
  // maxLifetimeMs below timeoutMs: expiresAt is capped at deadlineAt
  const capped = await create({ timeoutMs: 600000, maxLifetimeMs: 20000 });
  assert.equal(capped.status, 200);
  assert.equal(capped.json.expiresAt, capped.json.deadlineAt);
});
