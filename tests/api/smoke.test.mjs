// Smoke test: one real stack (redis, sandpitd, nginx over TLS); health,
// the auth gate, and an authenticated call.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startStack } from './lib/stack.mjs';

let stack;
before(async () => {
  stack = await startStack();
});
after(async () => {
  await stack?.stop();
});

test('GET /healthz answers 200 without a key', async () => {
  const r = await stack.api('GET', '/healthz', { key: null });
  assert.equal(r.status, 200, r.text);
  assert.ok(r.headers['x-request-id'], 'nginx adds X-Request-Id');
});

test('GET /api/sandbox.list without a key is 401 UNAUTHORIZED (JSON)', async () => {
  const r = await stack.api('GET', '/api/sandbox.list', { key: null });
  assert.equal(r.status, 401, r.text);
  assert.match(r.headers['content-type'], /^application\/json/);
  assert.equal(r.json?.code, 'UNAUTHORIZED');
  assert.equal(typeof r.json?.message, 'string');
});

test('GET /api/sandbox.list with a wrong key is 401', async () => {
  const r = await stack.api('GET', '/api/sandbox.list', { key: 'not-a-key' });
  assert.equal(r.status, 401, r.text);
  assert.equal(r.json?.code, 'UNAUTHORIZED');
});

test('GET /api/sandbox.list with the owner key is 200', async () => {
  const r = await stack.api('GET', '/api/sandbox.list');
  assert.equal(r.status, 200, r.text);
  assert.ok(r.json !== undefined, `JSON body expected: ${r.text}`);
});

test('an unknown path is a JSON 404', async () => {
  const r = await stack.api('GET', '/no/such/path', { key: null });
  assert.equal(r.status, 404);
  assert.equal(r.json?.code, 'NOT_FOUND');
});
