// Remote Docker servers (issue 7): the same dockerd exposed over tcp+TLS
// (socat checking a client certificate) and over ssh (an sshd on
// loopback, `docker system dial-stdio` on the far side), each registered
// as a server; org access; placement across a pool; a stopped server;
// refused certificates, host keys and a server that is down. All three
// servers reach the same dockerd, so each transport has its own recording
// front before it (tests/remote/front.mjs): a request is proven to have
// gone over TLS or ssh by its line in that front's log.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot, startStack, waitFor } from './lib/stack.mjs';
import { dockerExec } from './lib/docker.mjs';
import { ownPrefix, removeOwn } from './lib/netfence.mjs';

const hostsSh = path.join(repoRoot, 'tests/remote/hosts.sh');
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

const lines = (f) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8').split('\n').filter(Boolean) : []);
const fronts = () => ({ tls1: lines(env.TLS_FRONT_LOG), ssh1: lines(env.SSH_FRONT_LOG) });
// the Docker requests naming container cid that each front saw
const seen = (cid) => Object.fromEntries(Object.entries(fronts()).map(([k, v]) => [k, v.filter((l) => l.includes(cid)).length]));

async function roundTrip(serverId) {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', serverId } });
  assert.equal(c.status, 200, c.text);
  assert.equal(c.json.serverId, serverId);
  const id = c.json.sandboxId;
  try {
    await roundTripOn(c, serverId);
  } finally {
    await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } });
  }
  // every call on the sandbox went over its server's transport, none over
  // the other one (nor straight to the local socket: only a front logs)
  const cid = c.json.containerId;
  const other = serverId === 'tls1' ? 'ssh1' : 'tls1';
  const n = seen(cid);
  assert.equal(n[other], 0, `${other}'s front saw requests for ${serverId}'s container`);
  const mine = fronts()[serverId].filter((l) => l.includes(cid)).map((l) => l.replace(/^\d+ /, '').replace(/\?.*/, ''));
  for (const want of [`POST /v1.41/containers/${cid}/start`, `POST /v1.41/containers/${cid}/exec`,
    `POST /v1.41/containers/${cid}/stop`])
    assert.ok(mine.includes(want), `${serverId}'s front saw ${want}: ${JSON.stringify([...new Set(mine)])}`);
  if (serverId === 'ssh1')
    assert.deepEqual([...new Set(lines(env.SSH_COMMANDS_LOG))], ['docker system dial-stdio']);
}

async function roundTripOn(c, serverId) {
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
  assert.equal(rb.status, 200, rb.text.slice(0, 300));
  const back = Buffer.from(rb.json.content, 'base64');
  assert.equal(back.length, big.length, 'readFile gave back the whole file');
  assert.ok(back.equals(big));
  const wd = await s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: id, path: '/home/user', content: big.toString('base64'), encoding: 'base64' } });
  assert.equal(wd.status, 400, wd.text);
  assert.equal(wd.json.message, 'Path must point to a file');
  const we = await s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: id, path: '/etc/hosts.new', content: big.toString('base64'), encoding: 'base64' } });
  assert.equal(we.status, 403, we.text);
  assert.match(we.json.message, /^Unable to write \/etc\/hosts\.new: Permission denied$/);
  const k = await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: id } });
  assert.equal(k.status, 200, k.text);
  assert.equal(k.json.status, 'killed');
}

test('create, exec, files and kill through a tcp+TLS server', async () => { await roundTrip('tls1'); });
test('create, exec, files and kill through an ssh server', async () => { await roundTrip('ssh1'); });
test('a local sandbox goes through neither front', async (t) => {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', serverId: 'local' } });
  assert.equal(c.status, 200, c.text);
  t.after(() => s.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } }));
  assert.equal((await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: 'true' } })).status, 200);
  assert.deepEqual(seen(c.json.containerId), { tls1: 0, ssh1: 0 });
});

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

// the median time of five small execs in each sandbox
async function execMedian(ids) {
  const ms = [];
  for (let i = 0; i < 5; i++) {
    for (const id of ids) {
      const t0 = Date.now();
      const e = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: 'true' } });
      assert.equal(e.status, 200, e.text);
      ms.push(Date.now() - t0);
    }
  }
  ms.sort((a, b) => a - b);
  return ms[Math.floor(ms.length / 2)];
}

test('a stopped server answers 503 naming it; the other servers are not slowed', async (t) => {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', serverId: 'tls1' } });
  assert.equal(c.status, 200, c.text);
  t.after(() => s.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } }));
  const others = [];
  for (const serverId of ['ssh1', 'local']) {
    const o = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', serverId } });
    assert.equal(o.status, 200, o.text);
    others.push(o.json.sandboxId);
    t.after(() => s.api('POST', '/api/sandbox.remove', { body: { sandboxId: o.json.sandboxId } }));
  }
  // the baseline: the same small execs on the ssh and local servers while tls1 is up
  const baseline = await execMedian(others);
  const pid = Number(fs.readFileSync(path.join(hostsDir, 'socat.pid'), 'utf8'));
  process.kill(-pid, 'SIGTERM');   // socat and its forks (it runs in its own session)
  await waitFor(() => { try { process.kill(pid, 0); return false; } catch { return true; } }, 5000);
  const t0 = Date.now();
  const e = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: 'true' } });
  const t1 = Date.now();
  assert.equal(e.status, 503, e.text);
  assert.match(e.json.message, /tls1/);
  // within server_connect_timeout_ms (3000), with a generous margin
  assert.ok(t1 - t0 < 15000, `503 after ${t1 - t0} ms`);
  const n = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', serverId: 'tls1' } });
  assert.equal(n.status, 503);
  // the record is still readable, and other servers work as before: were
  // they waiting on the stopped one, each call would take about
  // server_connect_timeout_ms (3000 ms) more than the baseline
  assert.equal((await s.api('GET', '/api/sandbox.one', { query: { sandboxId: c.json.sandboxId } })).status, 200);
  const during = await execMedian(others);
  t.diagnostic(`exec on ssh1 and local, median of 10: ${baseline} ms with tls1 up, ${during} ms with tls1 stopped`);
  assert.ok(during < baseline + 1500, `other servers slowed: ${baseline} -> ${during} ms`);
  await roundTrip('ssh1');
  const l = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', serverId: 'local' } });
  assert.equal(l.status, 200, l.text);
  await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: l.json.sandboxId } });
  // the server comes back: the same sandbox is reachable again
  const sp = spawn('socat', [`OPENSSL-LISTEN:${env.TLS_PORT},bind=127.0.0.1,reuseaddr,fork,cert=server.pem,key=server.key,cafile=ca.pem,verify=1`,
    `UNIX-CONNECT:${path.join(hostsDir, 'tls-front.sock')}`], { cwd: hostsDir, detached: true, stdio: 'ignore' });
  fs.writeFileSync(path.join(hostsDir, 'socat.pid'), String(sp.pid));
  sp.unref();
  await waitFor(async () => (await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: 'true' } })).status === 200, 10000, 250);
});

test('refused: a server certificate from another CA, a client certificate from another CA, an unknown ssh host key, an ssh server that is down', async (t) => {
  const add = (...a) => s.cli('servers', 'add', ...a, '--orgs', 'default');
  await add('--id', 'badca', '--endpoint', `tcp://127.0.0.1:${env.TLS_PORT}`,
    '--tls-cert', env.TLS_CERT, '--tls-key', env.TLS_KEY, '--tls-ca', env.OTHER_TLS_CA);
  await add('--id', 'badcert', '--endpoint', `tcp://127.0.0.1:${env.TLS_PORT}`,
    '--tls-cert', env.OTHER_TLS_CERT, '--tls-key', env.OTHER_TLS_KEY, '--tls-ca', env.TLS_CA);
  // the same user@host:port as ssh1, whose ControlMaster is up: this
  // server's own known_hosts must still decide (the master's socket is
  // named from the key and known_hosts too, docker/transport.c)
  await add('--id', 'badhost', '--endpoint', `ssh://root@127.0.0.1:${env.SSH_PORT}`,
    '--ssh-key', env.SSH_KEY, '--known-hosts', env.SSH_OTHER_KNOWN_HOSTS);
  await add('--id', 'sshdown', '--endpoint', `ssh://root@127.0.0.1:${env.SSH_DOWN_PORT}`,
    '--ssh-key', env.SSH_KEY, '--known-hosts', env.SSH_KNOWN_HOSTS);
  t.after(async () => { for (const id of ['badca', 'badcert', 'badhost', 'sshdown']) await s.cli('servers', 'remove', id).catch(() => {}); });
  const sshdLog = () => fs.readFileSync(path.join(hostsDir, 'sshd.log'), 'utf8');
  const sshdBefore = sshdLog().length;
  for (const serverId of ['badca', 'badcert', 'badhost', 'sshdown']) {
    const before = { front: fronts(), cmds: lines(env.SSH_COMMANDS_LOG).length };
    const r = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', serverId } });
    if (r.json?.sandboxId) t.after(() => s.api('POST', '/api/sandbox.remove', { body: { sandboxId: r.json.sandboxId } }));
    assert.equal(r.status, 503, `${serverId}: ${r.text}`);
    assert.match(r.json.message, new RegExp(`\\b${serverId}\\b`), r.text);
    // nothing reached dockerd over either transport, no ssh session ran
    assert.deepEqual(fronts(), before.front, `${serverId}: a request reached dockerd`);
    assert.equal(lines(env.SSH_COMMANDS_LOG).length, before.cmds, `${serverId}: an ssh session ran`);
  }
  // the ssh refusal was the host key: sshd saw a connection and no login
  assert.doesNotMatch(sshdLog().slice(sshdBefore), /Accepted publickey/);
  // the good servers still work
  for (const serverId of ['tls1', 'ssh1']) {
    const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', serverId } });
    assert.equal(c.status, 200, c.text);
    await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } });
  }
});
