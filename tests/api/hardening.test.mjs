// RELIABILITY H1: read back every limit of a sandbox container through
// docker inspect and from inside the container.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack } from './lib/stack.mjs';
import { docker, dockerExec } from './lib/docker.mjs';
import { readFile } from 'node:fs/promises';

// The gVisor pass (SANDPIT_TEST_RUNTIME=gvisor, tests/run.sh): the sandbox's
// kernel is gVisor's, whose /proc and /sys differ from Linux's (see below).
const GVISOR = process.env.SANDPIT_TEST_RUNTIME === 'gvisor';

let s, sb, info;
before(async () => {
  s = await startStack();
  const r = await s.api('POST', '/api/sandbox.create', { body: { template: 'python', cpu: 1.5, memoryMb: 256, pidsLimit: 64 } });
  assert.equal(r.status, 200, r.text);
  sb = r.json;
  info = (await docker('GET', `/containers/${sb.containerId}/json`)).json;
});
after(async () => {
  if (sb) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: sb.sandboxId } });
  await s?.stop();
});

test('H1: docker inspect shows the security model', () => {
  const hc = info.HostConfig;
  assert.deepEqual(hc.CapDrop, ['ALL']);
  assert.ok(!hc.CapAdd || hc.CapAdd.length === 0);
  assert.ok(hc.SecurityOpt.includes('no-new-privileges'));
  assert.equal(hc.Init, true);
  assert.equal(hc.Privileged, false);
  assert.equal(hc.NanoCpus, 1.5e9);
  assert.equal(hc.Memory, 256 * 1024 * 1024);
  assert.equal(hc.MemorySwap, hc.Memory);
  // under gVisor the cgroup counts the sandbox kernel's host threads:
  // 8 per process inside + 64 (sandbox/spec.c, host_pids_limit)
  assert.equal(hc.PidsLimit, GVISOR ? 64 * 8 + 64 : 64);
  assert.equal(hc.RestartPolicy.Name, 'no');
  assert.equal(hc.AutoRemove, true);
  assert.equal(hc.LogConfig.Type, 'json-file');
  assert.equal(hc.LogConfig.Config['max-size'], '10m');
  assert.ok(!hc.Binds || hc.Binds.length === 0);
  // two mounts: the sandbox's own disk at the workdir (disk.test.mjs, A3)
  // and the helper, read-only (v1-process.test.mjs)
  assert.equal(hc.Mounts.length, 2);
  const disk = hc.Mounts.find((m) => m.Target === '/home/user');
  assert.equal(disk.Type, 'volume');
  assert.equal(disk.VolumeOptions.DriverConfig.Options.type, 'ext4');
  const helper = hc.Mounts.find((m) => m.Target === '/.sandpit-helper');
  assert.equal(helper.Type, 'volume');
  assert.equal(helper.ReadOnly, true);
  assert.match(helper.Source, /^sandpit-helper-[0-9a-f]{16}$/);
  assert.equal(hc.ReadonlyRootfs, true);
  assert.ok(!hc.Devices || hc.Devices.length === 0);
  for (const ns of ['PidMode', 'IpcMode', 'UTSMode', 'UsernsMode', 'CgroupnsMode'])
    assert.notEqual(hc[ns], 'host', ns);
  assert.equal(hc.NetworkMode, 'sandpit-isolated');
  assert.deepEqual(Object.keys(info.NetworkSettings.Networks), ['sandpit-isolated']);
  assert.ok(!hc.PortBindings || Object.keys(hc.PortBindings).length === 0);
  // the container's own user is the keeper (PID 1, the deadline sleep and
  // the watcher); every command names the sandbox user (1000:1000) itself
  assert.equal(info.Config.User, '65533:65533');
  assert.match(info.Config.Labels['sandpit.deadlineAt'], /^\d+$/);
  assert.equal(Number(info.Config.Labels['sandpit.deadlineAt']), Date.parse(sb.deadlineAt));
  // the installation that made it: the only reaper that may touch it
  assert.match(info.Config.Labels['sandpit.install'], /^[a-z0-9]{20}$/);
  assert.equal(info.Config.WorkingDir, '/home/user');
  assert.equal(info.Config.Labels['sandpit.sandbox'], 'true');
  assert.equal(info.Config.Labels['sandpit.sandboxId'], sb.sandboxId);
  assert.equal(info.Config.Labels['sandpit.organizationId'], 'default');
  assert.ok(!info.Config.Env.some((e) => e.startsWith('OPENAI')));
  assert.ok(info.Config.Env.includes('HOME=/home/user'));
});

test('H1: both sandbox networks are bridges with ICC off; isolated is internal', async () => {
  const iso = (await docker('GET', '/networks/sandpit-isolated')).json;
  assert.equal(iso.Driver, 'bridge');
  assert.equal(iso.Internal, true);
  assert.equal(iso.Options['com.docker.network.bridge.enable_icc'], 'false');
  const net = (await docker('GET', '/networks/sandpit-internet')).json;
  assert.equal(net.Internal, false);
  assert.equal(net.Options['com.docker.network.bridge.enable_icc'], 'false');
});

test('H1: commands run as 1000:1000, PID 1 and the deadline sleep as the keeper (65533)', async () => {
  const r = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: sb.sandboxId, cmd: 'id -u; id -g; ' +
    'for f in /proc/[0-9]*/status; do u=; n=; while read -r k v _; do case $k in Name:) n=$v;; Uid:) u=$v;; esac; done <$f; echo "$n $u"; done' } });
  assert.equal(r.status, 200, r.text);
  const lines = r.json.stdout.trim().split('\n');
  assert.equal(lines[0], '1000');
  assert.equal(lines[1], '1000');
  const p1 = await dockerExec(sb.containerId, ['cat', '/proc/1/status']);
  assert.match(p1.stdout, /^Uid:\s+65533\s+65533\s+65533\s+65533$/m);
  assert.match(p1.stdout, /^Gid:\s+65533\s+65533\s+65533\s+65533$/m);
  // the main process (the helper's sleep to the deadline, its comm cut to
  // 15 characters) and the watcher: the keeper's
  assert.ok(lines.some((l) => /^sandpit-helper- 65533$/.test(l)), lines.join('; '));
  // /.sandpit is the keeper's, 0755; only /.sandpit/x is open to the user
  const w = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: sb.sandboxId,
    cmd: 'echo 1 >/.sandpit/expires; echo $?; : >/.sandpit/x/probe && echo ok; rm -f /.sandpit/x/probe' } });
  assert.match(w.json.stdout, /^[12]\nok\n$/);
  assert.match(w.json.stderr, /ermission denied|ead-only/);
});

test('H1: inside, no capabilities, no_new_privs, seccomp, cgroup limits', async () => {
  const st = await dockerExec(sb.containerId, ['cat', '/proc/self/status'], { user: '1000:1000' });
  const field = (k) => st.stdout.split('\n').find((l) => l.startsWith(k + ':')).split(/\s+/)[1];
  assert.equal(field('CapEff'), '0000000000000000');
  assert.equal(field('CapPrm'), '0000000000000000');
  assert.equal(field('CapBnd'), '0000000000000000');
  // gVisor's status has no NoNewPrivs line (inspect shows the option above)
  if (GVISOR) assert.ok(!/^NoNewPrivs:/m.test(st.stdout) || field('NoNewPrivs') === '1');
  else assert.equal(field('NoNewPrivs'), '1');
  if (GVISOR) {
    // runsc --oci-seccomp loads Docker's profile for the container's own
    // processes (PID 1 and its children); runsc 20221219 does not apply it
    // to processes started by docker exec, so those read 0
    const p1 = await dockerExec(sb.containerId, ['cat', '/proc/1/status']);
    assert.match(p1.stdout, /^Seccomp:\s+2$/m);
  } else {
    assert.equal(field('Seccomp'), '2');
  }
  assert.equal(field('Uid'), '1000');
  if (GVISOR) {
    // gVisor shows no cgroup files inside; runsc applies the limits to the
    // sandbox's cgroup on the host (cgroup v1, cgroupfs driver)
    assert.equal(info.HostConfig.Runtime, 'runsc-isolated');
    const host = (c, f) => readFile(`/sys/fs/cgroup/${c}/docker/${sb.containerId}/${f}`, 'utf8');
    assert.equal((await host('memory', 'memory.limit_in_bytes')).trim(), String(256 * 1024 * 1024));
    assert.equal((await host('pids', 'pids.max')).trim(), String(64 * 8 + 64));
  } else {
    const mem = await dockerExec(sb.containerId, ['sh', '-c',
      'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max']);
    assert.equal(mem.stdout.trim(), String(256 * 1024 * 1024));
    const pids = await dockerExec(sb.containerId, ['sh', '-c', 'cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max']);
    assert.equal(pids.stdout.trim(), '64');
  }
  // (coreutils stat fails under Debian's runsc: statx with AT_NO_AUTOMOUNT)
  const home = await dockerExec(sb.containerId, GVISOR
    ? ['find', '/home/user', '-maxdepth', '0', '-printf', '%U:%G %m\n']
    : ['stat', '-c', '%u:%g %a', '/home/user']);
  assert.equal(home.stdout.trim(), '1000:1000 755');
  // PID 1 is the init, the main process (its child) is the read-only
  // helper's sleep, by its absolute path, sleeping until the deadline
  const p1 = await dockerExec(sb.containerId, ['cat', '/proc/1/cmdline']);
  assert.match(p1.stdout, /docker-init|tini/);
  const kids = await dockerExec(sb.containerId, ['sh', '-c',
    'for d in /proc/[0-9]*; do [ "$(cut -d" " -f4 $d/stat 2>/dev/null)" = 1 ] && tr "\\000" " " <$d/cmdline && echo; done']);
  // (besides the fast path's serving helper, the sandbox user's: sandbox/fastpath.c)
  const main = kids.stdout.split('\n').filter((l) => l && !/^\/\.sandpit-helper\/sandpit-helper serve /.test(l));
  assert.equal(main.length, 1, kids.stdout);
  const m = /^\/\.sandpit-helper\/sandpit-helper-r sleep (\d+)\.(\d{3}) $/.exec(main[0]);
  assert.ok(m, `PID 1's child: ${main[0]}`);
  const left = Number(m[1]) * 1000 + Number(m[2]);
  const should = Date.parse(sb.deadlineAt) - Date.parse(sb.createdAt);
  assert.ok(left <= should && left > should - 30000, `sleeps ${left} ms, deadline ${should} ms after create`);
});
