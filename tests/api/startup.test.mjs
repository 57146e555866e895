// Stack start-up faults (deploy/stack.sh, which `make up` runs): a port
// another program holds is named as such, before anything starts, and a
// failed start leaves nothing that fails the next one; a unix socket a dead
// nginx left behind (DIR/local/sandpit.sock) is removed by start and stop.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, mkdir, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import assert from 'node:assert/strict';

import { repoRoot } from './lib/stack.mjs';

const stackSh = path.join(repoRoot, 'deploy', 'stack.sh');
const dirs = [];

function sh(args, timeout = 120000) {
  return new Promise((resolve) => {
    execFile('bash', [stackSh, ...args], { timeout, env: { ...process.env } }, (err, stdout, stderr) =>
      resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr }));
  });
}

async function newDir() {
  const d = await mkdtemp(path.join(os.tmpdir(), 'sandpit-start-'));
  dirs.push(d);
  return d;
}

function listen(port = 0) {
  return new Promise((resolve, reject) => {
    const s = net.createServer((c) => c.destroy());
    s.on('error', reject);
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
}

/** GET /api/sandbox.templates on the stack's local unix socket. */
function localGet(dir) {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath: path.join(dir, 'local', 'sandpit.sock'), path: '/api/sandbox.templates' },
      (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); });
    req.on('error', reject);
    req.setTimeout(10000, () => req.destroy(new Error('timeout')));
  });
}

after(async () => {
  for (const d of dirs) {
    await sh(['stop', d], 60000);
    await rm(d, { recursive: true, force: true });
  }
});

test('a taken port is named as the cause, nothing is left running, the next start works', { timeout: 180000 }, async () => {
  const dir = await newDir();
  const blocker = await listen();
  const port = blocker.address().port;
  try {
    const r = await sh(['start', dir, '--port', String(port)]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use`));
    assert.doesNotMatch(r.stderr, /nginx failed to start/);
    for (const f of ['sandpitd.pid', 'nginx.pid', 'sandpit-stream.pid', 'local/sandpit.sock', 'sandpitd.sock'])
      assert.equal(existsSync(path.join(dir, f)), false, `${f} left behind`);
  } finally {
    blocker.close();
  }
  // The same folder, a free port (as `SANDPIT_PORT=N make up` after the failure).
  const free = await listen();
  const freePort = free.address().port;
  await new Promise((r) => free.close(r));
  const r2 = await sh(['start', dir, '--port', String(freePort)]);
  assert.equal(r2.code, 0, r2.stderr);
  assert.equal(await localGet(dir), 200);
  const r3 = await sh(['stop', dir]);
  assert.equal(r3.code, 0, r3.stderr);
  assert.equal(existsSync(path.join(dir, 'local', 'sandpit.sock')), false, 'stop removes the local socket');
});

test('a stale local socket from a dead nginx does not fail the start', { timeout: 180000 }, async () => {
  const dir = await newDir();
  await mkdir(path.join(dir, 'local'), { recursive: true, mode: 0o700 });
  const sock = path.join(dir, 'local', 'sandpit.sock');
  // Bound and never unlinked: what nginx leaves when another listener fails.
  await new Promise((resolve, reject) => execFile('python3', ['-c',
    'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])', sock],
  (err) => (err ? reject(err) : resolve())));
  assert.ok(existsSync(sock));
  const r = await sh(['start', dir]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(await localGet(dir), 200);
  const env = await readFile(path.join(dir, 'env'), 'utf8');
  assert.match(env, /^SANDPIT_PORT=\d+$/m);
});
