// sandpitd's start-up check of the Docker it will use (RELIABILITY H3): a
// real sandpitd pointed at a FAKE Docker daemon (a node HTTP server on a
// unix socket in a temp folder that answers /version with what a test
// asks) refuses a runc older than 1.1.12 and an API older than 1.41 with a
// clear message, starts with allow_old_runc = 1, and starts (warning only)
// when no Docker answers at all.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { binDir, waitFor } from './lib/stack.mjs';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandpit-startup-'));
fs.writeFileSync(path.join(dir, 'key'), 'ab'.repeat(32), { mode: 0o600 });
const children = [];
const servers = [];
after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const srv of servers) srv.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

// A fake dockerd answering GET /version with version (and 404 elsewhere).
async function fakeDocker(name, version) {
  const sock = path.join(dir, `${name}.sock`);
  const srv = http.createServer((req, res) => {
    if (req.url.replace(/^\/v[\d.]+/, '') === '/version') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(version));
    } else {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"message":"page not found"}');
    }
  });
  await new Promise((r) => srv.listen(sock, r));
  servers.push(srv);
  return sock;
}
const version = (api, runc, commit) => ({
  Version: '20.10.99-fake', ApiVersion: api, MinAPIVersion: '1.12',
  Components: [{ Name: 'Engine', Version: '20.10.99-fake' }, { Name: 'runc', Version: runc, Details: { GitCommit: commit } }],
});

// Runs sandpitd with docker_host = unix://sock (redis unreachable: start-up
// does not need it); resolves to { code, log } once it exits, or to
// { running: true, log } once its socket is listening (then killed).
async function sandpitd(name, sock, extra = '') {
  const conf = path.join(dir, `${name}.conf`);
  const listen = path.join(dir, `${name}-fcgi.sock`);
  fs.writeFileSync(conf, `listen = ${listen}\ndata_key_file = ${dir}/key\ndocker_host = unix://${sock}\n` +
    `redis_url = unix://${dir}/no-redis.sock\nworkers_min = 1\nworkers_max = 1\n${extra}`);
  const p = spawn(path.join(binDir, 'sandpitd'), ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(p);
  let log = '';
  p.stdout.on('data', (c) => { log += c; });
  p.stderr.on('data', (c) => { log += c; });
  const exited = new Promise((r) => p.on('exit', (code) => r(code)));
  const r = await Promise.race([
    exited.then((code) => ({ code })),
    waitFor(() => fs.existsSync(listen), 20000, 50).then(() => ({ running: true })),
  ]);
  if (r.running) {
    p.kill('SIGTERM');
    await Promise.race([exited, new Promise((res) => setTimeout(res, 10000))]);
  }
  return { ...r, log };
}

test('H3: a runc older than 1.1.12 stops sandpitd at start-up, naming the CVE and allow_old_runc', async () => {
  const sock = await fakeDocker('old-runc', version('1.41', '1.1.5', 'v1.1.5-0-gf19387a'));
  const r = await sandpitd('old-runc', sock);
  assert.equal(r.running, undefined, `sandpitd started on runc 1.1.5:\n${r.log}`);
  assert.notEqual(r.code, 0);
  assert.match(r.log, /runc 1\.1\.5 \(v1\.1\.5-0-gf19387a\) is older than 1\.1\.12 and may be exposed to CVE-2024-21626/);
  assert.match(r.log, /allow_old_runc = 1/);
});

test('H3: allow_old_runc = 1 starts anyway, with a warning', async () => {
  const sock = await fakeDocker('old-runc-allowed', version('1.41', '1.1.5', 'v1.1.5-0-gf19387a'));
  const r = await sandpitd('old-runc-allowed', sock, 'allow_old_runc = 1\n');
  assert.equal(r.running, true, r.log);
  assert.match(r.log, /runc 1\.1\.5 .*starting anyway because allow_old_runc is set/);
});

test('H3: runc 1.1.12 and the patched Debian build start; an API older than 1.41 is refused', async () => {
  for (const [name, runc, commit] of [['runc-1-1-12', '1.1.12', 'v1.1.12-0-g51d5e94'], ['runc-deb12u1', '1.1.5+ds1', '1.1.5+ds1-1+deb12u1']]) {
    const r = await sandpitd(name, await fakeDocker(name, version('1.41', runc, commit)));
    assert.equal(r.running, true, `${name}: ${r.log}`);
    assert.doesNotMatch(r.log, /CVE-2024-21626/);
  }
  const r = await sandpitd('api-1-40', await fakeDocker('api-1-40', version('1.40', '1.1.12', 'v1.1.12')));
  assert.equal(r.running, undefined, `sandpitd started on API 1.40:\n${r.log}`);
  assert.notEqual(r.code, 0);
  assert.match(r.log, /Docker API 1\.40 is too old: sandpit needs 1\.41 or newer/);
});

test('no Docker answering at start-up is only a warning: sandpitd starts', async () => {
  const r = await sandpitd('no-docker', path.join(dir, 'nobody-listens.sock'));
  assert.equal(r.running, true, r.log);
  assert.match(r.log, /sandbox operations answer 503 until it is reachable/);
});
