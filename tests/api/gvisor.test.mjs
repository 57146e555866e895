// Issue #8, gVisor: `runtime: "gvisor"` runs a sandbox under runsc (the two
// dockerd runtimes runsc-isolated / runsc-internet that tests/run.sh
// registers), an isolated one has no network, setTimeout reaches the
// watcher inside, and a runtime the daemon lacks or a value sandpit does
// not know is a 400 naming `runtime`.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { startStack } from './lib/stack.mjs';
import { sandboxStack } from './lib/suite.mjs';
import { docker, dockerExec } from './lib/docker.mjs';

let s, registered;
// runc by default here, whatever SANDPIT_TEST_RUNTIME says: each create names its runtime
const { create, exec } = sandboxStack((stack) => { s = stack; }, { extraConf: 'default_runtime = runc' });
before(async () => {
  const info = (await docker('GET', '/info')).json;
  registered = Boolean(info.Runtimes?.['runsc-isolated'] && info.Runtimes?.['runsc-internet']);
});
const need = (t) => {
  if (!registered) t.skip('runsc-isolated/runsc-internet are not registered with dockerd (tests/run.sh does it)');
  return registered;
};

test('runtime "gvisor" runs the sandbox under runsc; the record says gvisor', async (t) => {
  if (!need(t)) return;
  const sb = await create({ template: 'alpine', runtime: 'gvisor' });
  assert.equal(sb.runtime, 'gvisor');
  const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.sandboxId } });
  assert.equal(one.json.runtime, 'gvisor');
  const hc = (await docker('GET', `/containers/${sb.containerId}/json`)).json.HostConfig;
  assert.equal(hc.Runtime, 'runsc-isolated');
  assert.deepEqual(hc.CapDrop, ['ALL']);
  assert.ok(hc.SecurityOpt.includes('no-new-privileges'));
  assert.equal(hc.Init, true);
  assert.equal(hc.AutoRemove, true);
  assert.equal(hc.NetworkMode, 'sandpit-isolated');
  const r = await exec(sb.sandboxId, 'cat /proc/version; dmesg 2>&1 | head -n 3; id -u');
  assert.equal(r.json.exitCode, 0, r.text);
  assert.match(r.json.stdout, /Starting gVisor/);
  assert.match(r.json.stdout, /\n1000\n$/);
  // and a runc sandbox of the same stack is plain Linux
  const rc = await create({ template: 'alpine' });
  assert.equal(rc.runtime, 'runc');
  const hrc = (await docker('GET', `/containers/${rc.containerId}/json`)).json.HostConfig;
  assert.ok(!hrc.Runtime || hrc.Runtime === 'runc', hrc.Runtime);
  const d = await exec(rc.sandboxId, 'dmesg 2>&1 | head -n 3');
  assert.doesNotMatch(d.json.stdout, /gVisor/);
});

test('an isolated gVisor sandbox has no network; an internet one has its bridge address', async (t) => {
  if (!need(t)) return;
  const iso = await create({ template: 'alpine', runtime: 'gvisor' });
  const a = await exec(iso.sandboxId, 'ip -o addr; ip route');
  assert.equal(a.json.exitCode, 0, a.text);
  const addrs = a.json.stdout.split('\n').filter((l) => / inet6? /.test(l));
  assert.ok(addrs.length > 0, a.json.stdout);
  for (const l of addrs) assert.match(l, / lo /, `only loopback: ${a.json.stdout}`);
  assert.doesNotMatch(a.json.stdout, /default/);
  // a connection to the bridge's gateway (this host) cannot even start
  const gw = (await docker('GET', '/networks/sandpit-isolated')).json.IPAM.Config[0].Gateway;
  const c = await exec(iso.sandboxId, `nc -w 2 ${gw} 9 </dev/null; echo rc=$?`);
  assert.match(c.json.stdout, /rc=[1-9]/);

  const net = await create({ template: 'alpine', runtime: 'gvisor', networkMode: 'internet' });
  const hc = (await docker('GET', `/containers/${net.containerId}/json`)).json;
  assert.equal(hc.HostConfig.Runtime, 'runsc-internet');
  const ip = hc.NetworkSettings.Networks['sandpit-internet'].IPAddress;
  const b = await exec(net.sandboxId, 'ip -o addr');
  assert.ok(b.json.stdout.includes(` ${ip}/`), `${ip} in ${b.json.stdout}`);
});

test('setTimeout under gVisor reaches the watcher inside (not the archive API)', async (t) => {
  if (!need(t)) return;
  const sb = await create({ template: 'python', runtime: 'gvisor', timeoutMs: 60000 });
  const st = await s.api('POST', '/api/sandbox.setTimeout', { body: { sandboxId: sb.sandboxId, timeoutMs: 900000 } });
  assert.equal(st.status, 200, st.text);
  const want = Math.ceil(Date.parse(st.json.expiresAt) / 1000);
  const r = await dockerExec(sb.containerId, ['cat', '/.sandpit/expires']);
  assert.equal(Number(r.stdout.trim()), want);
});

test('a runtime the daemon lacks, or one sandpit does not know: 400 naming runtime', async () => {
  const bad = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', runtime: 'kata' } });
  assert.equal(bad.status, 400, bad.text);
  assert.deepEqual(bad.json.issues[0].path, ['runtime']);
  const s2 = await startStack({ extraConf: ['gvisor_runtime_isolated = runsc-not-registered'] });
  try {
    const r = await s2.api('POST', '/api/sandbox.create', { body: { template: 'alpine', runtime: 'gvisor' } });
    assert.equal(r.status, 400, r.text);
    assert.deepEqual(r.json.issues[0].path, ['runtime']);
    assert.match(r.json.message, /^runtime: gVisor is not available on this server: register runsc with dockerd \(see README\)/);
    assert.match(r.json.message, /runsc-not-registered/);
    // nothing was made, and no row is left behind
    const l = await s2.api('GET', '/api/sandbox.list');
    assert.deepEqual(l.json, []);
    // the same stack still makes runc sandboxes
    const ok = await s2.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
    assert.equal(ok.status, 200, ok.text);
    await s2.api('POST', '/api/sandbox.remove', { body: { sandboxId: ok.json.sandboxId } });
  } finally {
    await s2.stop();
  }
});
