// The network deny rules (issue 12: RELIABILITY.md N2, N4), the network check
// of a remote server, and a sandbox network removed while sandpit runs
// (issue 19). The stack has its own network prefix, so its networks, bridges
// (<prefix>-iso, <prefix>-net) and chains (<PREFIX>-INPUT, -FORWARD) are its
// own, and they are removed at the end. "The host's service" is a listener
// this file opens on 0.0.0.0; "the metadata address" and an operator's
// range (198.18.0.0/24, with 198.18.1.1 outside it as a control) live in a
// network namespace made here, reached only by packets from the stack's own
// bridges. One worker, so that the second create of the recovery cases goes
// through the worker that already made sure of its networks.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { repoRoot, startStack, waitFor } from './lib/stack.mjs';
import {
  ownPrefix, chains, rules, jumps, startUpstream, stopUpstream, removeOwn, gateway,
  hostAddresses, tryScript, parseTries,
} from './lib/netfence.mjs';

const prefix = ownPrefix('n');
const brIso = `${prefix}-iso`, brNet = `${prefix}-net`;
const ch = chains(prefix);
const hostsSh = path.join(repoRoot, 'tests/remote/hosts.sh');
let s, up, hostSrv, hostPort, hostsDir, env;
const made = [];

before(async () => {
  hostSrv = net.createServer((c) => { c.on('error', () => {}); c.end('host-service\n'); });
  await new Promise((r) => hostSrv.listen(0, '0.0.0.0', r));
  hostPort = hostSrv.address().port;
  up = startUpstream(prefix, [brIso, brNet]);
  hostsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandpit-hosts-'));
  execFileSync('bash', [hostsSh, 'start', hostsDir]);
  env = Object.fromEntries(fs.readFileSync(path.join(hostsDir, 'env'), 'utf8').trim().split('\n').map((l) => l.split('=')));
  s = await startStack({
    extraConf: [
      `network_prefix = ${prefix}`,
      // its own labels too: a reaper of another stack on this dockerd that
      // ends sandpit.sandbox containers it has no record of leaves these be
      `label_prefix = ${prefix}`,
      'deny_cidrs = 169.254.0.0/16, 198.18.0.0/24',
      `probe_ports = ${hostPort}`,
      'workers_min = 1',
      'workers_max = 1',
      `ssh_control_dir = ${env.SSH_CONTROL_DIR}`,
    ],
  });
});

after(async () => {
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await s?.stop().catch(() => {});
  if (hostsDir) {
    execFileSync('bash', [hostsSh, 'stop', hostsDir]);
    fs.rmSync(hostsDir, { recursive: true, force: true });
  }
  stopUpstream(up);
  removeOwn(prefix);
  hostSrv?.close();
});

async function create(body) {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', ...body } });
  assert.equal(c.status, 200, c.text);
  made.push(c.json.sandboxId);
  return c.json;
}
async function remove(id) {
  const r = await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } });
  assert.equal(r.status, 200, r.text);
}
async function tries(id, targets) {
  const e = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: tryScript(targets) } });
  assert.equal(e.status, 200, e.text);
  const m = parseTries(e.json.stdout);
  assert.equal(Object.keys(m).length, targets.length, JSON.stringify(e.json));
  return m;
}
const connectFromHost = (host, port) => new Promise((resolve) => {
  const c = net.connect({ host, port, timeout: 2000 }, () => { c.destroy(); resolve(true); });
  c.on('error', () => resolve(false));
  c.on('timeout', () => { c.destroy(); resolve(false); });
});
// remove network name once the containers of removed sandboxes are gone
const removeNetwork = (name) => waitFor(() => {
  try { execFileSync('docker', ['network', 'rm', name], { stdio: 'ignore' }); return true; } catch { return false; }
}, 30000, 300);
const networkExists = (name) => {
  try { execFileSync('docker', ['network', 'inspect', name], { stdio: 'ignore' }); return true; } catch { return false; }
};

test('the deny rules are in chains named after the prefix, for its bridges, once', () => {
  // sandpitd's master installs them at start, before any network exists
  const inRules = rules(ch.input), fwdRules = rules(ch.forward);
  for (const br of [brIso, brNet]) {
    assert.ok(inRules.some((l) => l.includes(`-i ${br} `) && l.endsWith('-j DROP')), inRules.join('\n'));
    for (const cidr of ['169.254.0.0/16', '198.18.0.0/24'])
      assert.ok(fwdRules.some((l) => l.includes(`-i ${br} `) && l.includes(`-d ${cidr} `) && l.endsWith('-j DROP')), fwdRules.join('\n'));
  }
  assert.equal(jumps('INPUT', ch.input), 1);
  assert.equal(jumps('DOCKER-USER', ch.forward), 1);
  assert.equal(new Set(inRules).size, inRules.length, 'no rule twice');
  assert.equal(new Set(fwdRules).size, fwdRules.length, 'no rule twice');
});

test('N2: an internet sandbox reaches neither 169.254.169.254 nor a deny_cidrs range', async () => {
  const sb = await create({ networkMode: 'internet' });
  // the bridge sandpit named, so the rules match it
  const nets = JSON.parse(execFileSync('docker', ['network', 'inspect', `${prefix}-internet`], { encoding: 'utf8' }));
  assert.equal(nets[0].Options['com.docker.network.bridge.name'], brNet);
  // under SANDPIT_TEST_RUNTIME=gvisor: runsc-internet (--network=host: gVisor
  // uses the container's network namespace, so its packets cross the bridge)
  const rt = JSON.parse(execFileSync('docker', ['inspect', sb.containerId], { encoding: 'utf8' }))[0].HostConfig.Runtime;
  assert.equal(rt, process.env.SANDPIT_TEST_RUNTIME === 'gvisor' ? 'runsc-internet' : 'runc');
  const m = await tries(sb.sandboxId, ['169.254.169.254:80', '198.18.0.1:80', '198.18.1.1:80']);
  // the control: the same namespace answers on an address outside the ranges
  assert.equal(m['198.18.1.1:80'], 'open', 'the upstream namespace is reachable outside deny_cidrs');
  assert.equal(m['169.254.169.254:80'], 'dropped');
  assert.equal(m['198.18.0.1:80'], 'dropped');
  const got = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: sb.sandboxId, cmd: 'nc -w 2 198.18.1.1 80 </dev/null' } });
  assert.equal(got.json.stdout, 'upstream\n');
  await remove(sb.sandboxId);
});

test('N4: no sandbox reaches a host service through the gateway or any host address', async () => {
  const iso = await create({ networkMode: 'isolated' });
  const inet = await create({ networkMode: 'internet' });
  // removed whatever fails, so the tests after it find the networks free
  try {
    const gwIso = gateway(`${prefix}-isolated`), gwNet = gateway(`${prefix}-internet`);
    const addrs = hostAddresses();
    assert.ok(addrs.includes(gwIso) && addrs.includes(gwNet), addrs.join(' '));
    // the control: the service answers on every one of those addresses
    for (const a of addrs) assert.ok(await connectFromHost(a, hostPort), `host service on ${a}:${hostPort}`);
    const mi = await tries(iso.sandboxId, [`${gwIso}:${hostPort}`, `${gwIso}:${s.port}`]);
    for (const [t, v] of Object.entries(mi)) assert.equal(v, 'dropped', `isolated -> ${t}: ${v}`);
    const mn = await tries(inet.sandboxId, [...addrs.map((a) => `${a}:${hostPort}`), `${gwNet}:${s.port}`]);
    for (const [t, v] of Object.entries(mn)) assert.equal(v, 'dropped', `internet -> ${t}: ${v}`);
  } finally {
    await remove(iso.sandboxId);
    await remove(inet.sandboxId);
  }
});

test('internet mode: Docker\'s embedded DNS still answers (it lives in the sandbox, not the host)', async () => {
  const a = await create({ networkMode: 'internet' });
  const b = await create({ networkMode: 'internet' });
  const name = `sandpit-${b.sandboxId}`;
  const ip = JSON.parse(execFileSync('docker', ['inspect', b.containerId], { encoding: 'utf8' }))[0]
    .NetworkSettings.Networks[`${prefix}-internet`].IPAddress;
  const r = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: a.sandboxId, cmd: `nslookup ${name} 127.0.0.11` } });
  assert.equal(r.status, 200, r.text);
  assert.ok(r.json.stdout.includes(ip), r.json.stdout + r.json.stderr);
  await remove(a.sandboxId);
  await remove(b.sandboxId);
});

test('a remote server is checked when added; servers list shows it', async () => {
  await s.cli('servers', 'add', '--id', 'tls1', '--endpoint', `tcp://127.0.0.1:${env.TLS_PORT}`,
    '--tls-cert', env.TLS_CERT, '--tls-key', env.TLS_KEY, '--tls-ca', env.TLS_CA, '--orgs', 'default');
  const [srv] = JSON.parse((await s.cli('servers', 'list')).stdout);
  assert.equal(srv.netCheck, 'pass', JSON.stringify(srv));
  assert.equal(srv.allowUnfiltered, false);
  assert.ok(srv.netCheckAt > Date.now() - 120000);
  // no probe container is left behind
  const left = execFileSync('docker', ['ps', '-aq', '--filter', `label=${prefix}.probe`], { encoding: 'utf8' }).trim();
  assert.equal(left, '');
});

test('issue 19: the network removed between two creates is made again (local), with its rules', async () => {
  const a = await create({});
  await remove(a.sandboxId);
  // the rules gone too, to see them put back
  execFileSync('iptables', ['-w', '5', '-F', ch.input]);
  await removeNetwork(`${prefix}-isolated`);
  const b = await create({});
  assert.equal(b.status, 'running');
  assert.ok(networkExists(`${prefix}-isolated`));
  assert.ok(rules(ch.input).some((l) => l.includes(`-i ${brIso} `) && l.endsWith('-j DROP')), rules(ch.input).join('\n'));
  const e = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: b.sandboxId, cmd: 'echo ok' } });
  assert.equal(e.json?.stdout, 'ok\n', e.text);
  const l = await s.api('GET', '/api/sandbox.list');
  assert.ok(!l.json.some((x) => x.status === 'error'), JSON.stringify(l.json.map((x) => x.status)));
  await remove(b.sandboxId);
});

test('issue 19: the network removed between two creates is made again (remote server)', async () => {
  const a = await create({ serverId: 'tls1', networkMode: 'internet' });
  assert.equal(a.serverId, 'tls1');
  await remove(a.sandboxId);
  await removeNetwork(`${prefix}-internet`);
  const b = await create({ serverId: 'tls1', networkMode: 'internet' });
  assert.equal(b.status, 'running');
  assert.ok(networkExists(`${prefix}-internet`));
  const l = await s.api('GET', '/api/sandbox.list');
  assert.ok(!l.json.some((x) => x.status === 'error'), JSON.stringify(l.json.map((x) => x.status)));
  await remove(b.sandboxId);
});

test('a server whose host lets sandboxes through fails its check and gets no sandboxes unless overridden', async () => {
  // "a host without deny rules": this stack's jumps taken out for a while
  // (the upstream namespace still catches 169.254.169.254 from its bridges)
  const restore = () => {
    if (!jumps('INPUT', ch.input)) execFileSync('iptables', ['-w', '5', '-I', 'INPUT', '1', '-j', ch.input]);
    if (!jumps('DOCKER-USER', ch.forward)) execFileSync('iptables', ['-w', '5', '-I', 'DOCKER-USER', '1', '-j', ch.forward]);
  };
  try {
    execFileSync('iptables', ['-w', '5', '-D', 'INPUT', '-j', ch.input]);
    execFileSync('iptables', ['-w', '5', '-D', 'DOCKER-USER', '-j', ch.forward]);
    const out = await s.cli('servers', 'check', 'tls1');
    assert.match(out.stderr, /network check fail/);
    const [srv] = JSON.parse((await s.cli('servers', 'list')).stdout);
    assert.equal(srv.netCheck, 'fail');
    assert.match(srv.netCheckDetail, new RegExp(`:${hostPort}: answers`));
    assert.match(srv.netCheckDetail, /internet 169\.254\.169\.254:80: answers/);
    const r = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', serverId: 'tls1' } });
    if (r.status === 200) made.push(r.json.sandboxId);
    assert.equal(r.status, 409, r.text);
    assert.match(r.json.message, /Server tls1 failed its network check/);
    // the override: registered again with --allow-unfiltered
    await s.cli('servers', 'add', '--id', 'tls1', '--endpoint', `tcp://127.0.0.1:${env.TLS_PORT}`,
      '--tls-cert', env.TLS_CERT, '--tls-key', env.TLS_KEY, '--tls-ca', env.TLS_CA, '--orgs', 'default', '--allow-unfiltered');
    const [o] = JSON.parse((await s.cli('servers', 'list')).stdout);
    assert.equal(o.allowUnfiltered, true);
    assert.equal(o.netCheck, 'fail');
    const c = await create({ serverId: 'tls1' });
    assert.equal(c.serverId, 'tls1');
    await remove(c.sandboxId);
  } finally {
    restore();
  }
  // the rules back: it passes again
  await s.cli('servers', 'check', 'tls1');
  const [p] = JSON.parse((await s.cli('servers', 'list')).stdout);
  assert.equal(p.netCheck, 'pass', JSON.stringify(p));
});

test('a local server where iptables cannot run: creates answer 503 saying why, unless allow_unfiltered_local', async () => {
  // sandpitd in a mount namespace of its own where /usr/sbin (iptables,
  // iptables-legacy) is an empty folder
  const p2 = ownPrefix('u');
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'sandpit-bin-'));
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'sandpit-empty-'));
  const real = path.join(repoRoot, 'build');
  for (const b of ['sandpit', 'sandpit-stream']) fs.symlinkSync(path.join(real, b), path.join(bin, b));
  fs.writeFileSync(path.join(bin, 'sandpitd'), '#!/bin/sh\n' +
    `exec unshare -m --propagation private sh -c 'mount --bind "$0" /usr/sbin && exec "$@"' ${empty} ${real}/sandpitd "$@"\n`, { mode: 0o755 });
  const conf = [`network_prefix = ${p2}`, `label_prefix = ${p2}`];
  let s2;
  try {
    s2 = await startStack({ env: { SANDPIT_BIN: bin }, extraConf: conf });
    const r = await s2.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
    if (r.status === 200) await s2.api('POST', '/api/sandbox.remove', { body: { sandboxId: r.json.sandboxId } });
    assert.equal(r.status, 503, r.text);
    assert.match(r.json.message, /^The local server cannot drop sandbox traffic to the host and to deny_cidrs \(no working iptables.*allow_unfiltered_local = true/);
    const l = await s2.api('GET', '/api/sandbox.list');
    assert.deepEqual(l.json, [], 'no record is left');
    assert.equal(rules(chains(p2).input).length, 0);
    await s2.stop();
    s2 = await startStack({ env: { SANDPIT_BIN: bin }, extraConf: [...conf, 'allow_unfiltered_local = true'] });
    const c = await s2.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
    assert.equal(c.status, 200, c.text);
    await s2.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } });
    assert.match(await s2.logTail('sandpitd.log', 200), /sandbox traffic is not filtered/);
  } finally {
    await s2?.stop().catch(() => {});
    removeOwn(p2);
    fs.rmSync(bin, { recursive: true, force: true });
    fs.rmSync(empty, { recursive: true, force: true });
  }
});
