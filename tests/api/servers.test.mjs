// Remote Docker servers (issue 7): the same dockerd exposed over tcp+TLS
// (socat checking a client certificate) and over ssh (an sshd on
// loopback, `docker system dial-stdio` on the far side), each registered
// as a server; org access; placement across a pool; a stopped server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack, waitFor } from './lib/stack.mjs';
import { dockerExec } from './lib/docker.mjs';
import { ownPrefix, removeOwn } from './lib/netfence.mjs';

const hostsSh = path.resolve('tests/remote/hosts.sh');
let s, hostsDir, env, other;
// its own networks and deny chains (removed at the end): `servers add` runs
// the network check from these networks, covered by this stack's rules
const prefix = ownPrefix('s');

before(async () => {
  hostsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandpit-hosts-'));
  execFileSync('bash', [hostsSh, 'start', hostsDir]);
  env = Object.fromEntries(fs.readFileSync(path.join(hostsDir, 'env'), 'utf8').trim().split('\n').map((l) => l.split('=')));
  s = await startStack({ extraConf: [`ssh_control_dir = ${env.SSH_CONTROL_DIR}`, 'placement_pool = pool1', `network_prefix = ${prefix}`,
    // and its own labels: a reaper of another stack on this dockerd ends
    // sandpit.sandbox containers it has no record of
    `label_prefix = ${prefix}`] });
  await s.cli('servers', 'add', '--id', 'tls1', '--endpoint', `tcp://127.0.0.1:${env.TLS_PORT}`,
    '--tls-cert', env.TLS_CERT, '--tls-key', env.TLS_KEY, '--tls-ca', env.TLS_CA, '--orgs', 'default', '--pool', 'pool1');
  await s.cli('servers', 'add', '--id', 'ssh1', '--endpoint', `ssh://root@127.0.0.1:${env.SSH_PORT}`,
    '--ssh-key', env.SSH_KEY, '--known-hosts', env.SSH_KNOWN_HOSTS, '--orgs', 'default', '--pool', 'pool1');
  other = await s.newKey('no-servers');
});
after(async () => {
  await s?.stop();
  execFileSync('bash', [hostsSh, 'stop', hostsDir]);
  fs.rmSync(hostsDir, { recursive: true, force: true });
  removeOwn(prefix);
});

async function roundTrip(serverId) {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', serverId } });
  assert.equal(c.status, 200, c.text);
  assert.equal(c.json.serverId, serverId);
  const id = c.json.sandboxId;
  const e = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: `echo via ${serverId}; id -u` } });
  assert.equal(e.status, 200, e.text);
  assert.equal(e.json.stdout, `via ${serverId}\n1000\n`);
  const bin = Buffer.from([0, 1, 2, 255, 254, 10]);
  const w = await s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: id, path: '/home/user/f.bin', content: bin.toString('base64'), encoding: 'base64' } });
  assert.equal(w.status, 200, w.text);
  const r = await s.api('GET', '/api/sandbox.readFile', { query: { sandboxId: id, path: '/home/user/f.bin', encoding: 'base64' } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.content, bin.toString('base64'));
  const l = await s.api('GET', '/api/sandbox.listFiles', { query: { sandboxId: id } });
  assert.ok(l.json.entries.some((x) => x.name === 'f.bin'));
  // it really is the container Docker knows
  assert.equal((await dockerExec(c.json.containerId, ['base64', '/home/user/f.bin'])).stdout.trim(), bin.toString('base64'));
  // writeFile feeds the content to one exec's stdin over the server's own
  // transport: 10 MiB cross many TLS records and ssh channel windows, and a
  // write refused before the script reads its input answers as locally
  const big = randomBytes(10485760);
  const wb = await s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: id, path: '/home/user/big.bin', content: big.toString('base64'), encoding: 'base64' } });
  assert.equal(wb.status, 200, wb.text);
  const sum = await dockerExec(c.json.containerId, ['sha256sum', '/home/user/big.bin']);
  assert.equal(sum.stdout, `${createHash('sha256').update(big).digest('hex')}  /home/user/big.bin\n`);
  const rb = await s.api('GET', '/api/sandbox.readFile', { query: { sandboxId: id, path: '/home/user/big.bin', encoding: 'base64' } });
  assert.ok(Buffer.from(rb.json.content, 'base64').equals(big));
  const wd = await s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: id, path: '/home/user', content: big.toString('base64'), encoding: 'base64' } });
  assert.equal(wd.status, 400, wd.text);
  assert.equal(wd.json.message, 'Path must point to a file');
  const we = await s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: id, path: '/etc/hosts.new', content: big.toString('base64'), encoding: 'base64' } });
  assert.equal(we.status, 403, we.text);
  assert.match(we.json.message, /^Unable to write \/etc\/hosts\.new: Permission denied$/);
  const k = await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: id } });
  assert.equal(k.status, 200, k.text);
  assert.equal(k.json.status, 'killed');
  await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } });
}

test('create, exec, files and kill through a tcp+TLS server', async () => { await roundTrip('tls1'); });
test('create, exec, files and kill through an ssh server', async () => { await roundTrip('ssh1'); });

test('an org without access to a server gets 403; an unknown server 404', async () => {
  const r = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', serverId: 'tls1' }, key: other });
  assert.equal(r.status, 403, r.text);
  assert.match(r.json.message, /may not use server tls1/);
  const u = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', serverId: 'nope' } });
  assert.equal(u.status, 404);
  assert.match(u.json.message, /Server nope not found/);
  // placement never picks a server the org may not use: none is open to it
  const p = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' }, key: other });
  assert.equal(p.status, 503, p.text);
  assert.match(p.json.message, /pool pool1/);
});

test('placement spreads creates over the pool by load', async () => {
  const ids = [];
  for (let i = 0; i < 4; i++) {
    const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
    assert.equal(c.status, 200, c.text);
    ids.push(c.json);
  }
  const per = {};
  for (const c of ids) per[c.serverId] = (per[c.serverId] || 0) + 1;
  assert.deepEqual(per, { tls1: 2, ssh1: 2 });
  const listed = JSON.parse((await s.cli('servers', 'list')).stdout);
  for (const srv of listed) assert.equal(srv.sandboxes, 2);
  // both passed the network check when they were added (this host's rules)
  for (const srv of listed) assert.equal(srv.netCheck, 'pass', JSON.stringify(srv));
  for (const c of ids) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.sandboxId } });
  const after = JSON.parse((await s.cli('servers', 'list')).stdout);
  for (const srv of after) assert.equal(srv.sandboxes, 0);
});

test('a stopped server answers 503 quickly and does not slow the others', async () => {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', serverId: 'tls1' } });
  assert.equal(c.status, 200, c.text);
  const pid = Number(fs.readFileSync(path.join(hostsDir, 'socat.pid'), 'utf8'));
  process.kill(-pid, 'SIGTERM');   // socat and its forks (it runs in its own session)
  await waitFor(() => { try { process.kill(pid, 0); return false; } catch { return true; } }, 5000);
  const t0 = Date.now();
  const e = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: 'true' } });
  const t1 = Date.now();
  assert.equal(e.status, 503, e.text);
  assert.match(e.json.message, /tls1/);
  assert.ok(t1 - t0 < 5000, `503 after ${t1 - t0} ms`);
  const n = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', serverId: 'tls1' } });
  assert.equal(n.status, 503);
  // the record is still readable, and other servers work at normal speed
  assert.equal((await s.api('GET', '/api/sandbox.one', { query: { sandboxId: c.json.sandboxId } })).status, 200);
  const t2 = Date.now();
  await roundTrip('ssh1');
  const l = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', serverId: 'local' } });
  assert.equal(l.status, 200, l.text);
  assert.ok(Date.now() - t2 < 10000);
  await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: l.json.sandboxId } });
  // the server comes back: the same sandbox is reachable again
  const sp = spawn('socat', [`OPENSSL-LISTEN:${env.TLS_PORT},bind=127.0.0.1,reuseaddr,fork,cert=server.pem,key=server.key,cafile=ca.pem,verify=1`,
    'UNIX-CONNECT:/var/run/docker.sock'], { cwd: hostsDir, detached: true, stdio: 'ignore' });
  fs.writeFileSync(path.join(hostsDir, 'socat.pid'), String(sp.pid));
  sp.unref();
  await waitFor(async () => (await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: 'true' } })).status === 200, 10000, 250);
  await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } });
});
