// A cut exec stream is an error, never a short answer. Docker's raw exec
// stream ends with its connection, so a link that drops, or a front that
// loses its tail, looks like a normal end to the HTTP client: only the
// stream's framing tells. Through a proxy in front of the Docker socket
// (lib/dockerproxy.mjs) that ends the answer to exec start after an odd
// number of bytes, in the middle of a frame (frames are an 8-byte header
// and a payload; Docker's pieces here are page-sized, so a frame boundary
// is never at an odd offset), readFile answers 503 naming the cut, exec
// either that or an answer cut off, and the same calls without the cut
// give the whole bytes back.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startStack } from './lib/stack.mjs';
import { dockerProxy } from './lib/dockerproxy.mjs';

let s, proxy, dir, id;
const isStart = (m, u) => m === 'POST' && /\/exec\/[^/?]+\/start$/.test(u.split('?')[0]);
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sp-cut-'));
  proxy = await dockerProxy(dir);
  // the docker exec path (the fast path does not go through Docker's
  // socket: its own framing is v1-fastpath.test's)
  s = await startStack({ env: { SANDPIT_DOCKER_HOST: `unix://${proxy.sock}` }, extraConf: 'fast_path = no' });
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
  assert.equal(c.status, 200, c.text);
  id = c.json.sandboxId;
});
after(async () => {
  if (id) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await s?.stop();
  await proxy?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('readFile over a stream cut mid-frame answers 503, whole bytes without the cut', async () => {
  const data = randomBytes(300000);
  const w = await s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: id, path: '/home/user/f.bin', content: data.toString('base64'), encoding: 'base64' } });
  assert.equal(w.status, 200, w.text);
  proxy.cut = (m, u) => (isStart(m, u) ? 100003 : null);
  try {
    const r = await s.api('GET', '/api/sandbox.readFile', { query: { sandboxId: id, path: '/home/user/f.bin', encoding: 'base64' } });
    assert.equal(r.status, 503, `a cut stream must not read as the file: ${r.status} ${r.text.slice(0, 200)}`);
    assert.match(r.json.message, /exec stream was cut in the middle of a frame/);
  } finally {
    proxy.cut = null;
  }
  const r = await s.api('GET', '/api/sandbox.readFile', { query: { sandboxId: id, path: '/home/user/f.bin', encoding: 'base64' } });
  assert.equal(r.status, 200, r.text);
  assert.ok(Buffer.from(r.json.content, 'base64').equals(data));
});

test('exec whose output stream is cut mid-frame is never answered as a whole, shorter stdout', async () => {
  const cmd = 'head -c 300000 /dev/zero | tr "\\0" a';
  proxy.cut = (m, u) => (isStart(m, u) ? 150001 : null);
  try {
    const e = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd } });
    // exec streams its answer once stdout flows (handlers/exec.c): a cut
    // after the status went out cuts the answer off, so the client holds
    // an incomplete JSON text, never a whole object with a short stdout
    if (e.status === 200) {
      assert.equal(e.json, undefined, `a cut stream must not read as the output: ${e.text.slice(-120)}`);
      assert.ok(e.text.startsWith('{"stdout":"aaa') && e.text.length < 300000, e.text.slice(0, 40));
    } else {
      assert.equal(e.status, 503, e.text.slice(0, 200));
      assert.match(e.json.message, /exec stream was cut in the middle of a frame/);
    }
  } finally {
    proxy.cut = null;
  }
  const e = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd } });
  assert.equal(e.status, 200, e.text);
  assert.equal(e.json.stdout, 'a'.repeat(300000));
});
