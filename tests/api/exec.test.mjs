// sandbox.exec (issue #3): the seed's example on the python and the busybox
// image, how a command runs (sh -c, user, cwd, env layering, exit codes),
// H5, many commands at once while other requests are served, and the
// error texts. The abuse cases (A4-A8, A11) are in abuse.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from './lib/stack.mjs';
import { sandboxStack } from './lib/suite.mjs';
import { dockerExec } from './lib/docker.mjs';

let s;
const { create, exec } = sandboxStack((stack) => { s = stack; });
const ok = (stdout) => ({ stdout, stderr: '', exitCode: 0, timedOut: false, truncated: false });

test('seed "Run a command" on the python image and on the busybox image', async (t) => {
  const py = await create({ template: 'python' });
  const r = await s.api('POST', '/api/sandbox.exec', {
    body: { sandboxId: py.sandboxId, cmd: 'python3 -c "print(1+1)"', timeoutMs: 60000 },
  });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, ok('2\n'));
  assert.equal(r.headers['content-type'].split(';')[0], 'application/json');

  const bb = await create({ template: 'alpine' });
  const b = await s.api('POST', '/api/sandbox.exec', {
    body: { sandboxId: bb.sandboxId, cmd: 'echo $((1+1))', timeoutMs: 60000 },
  });
  assert.deepEqual(b.json, ok('2\n'));
  // busybox has no python: the shell's own answer comes back
  const np = await exec(bb.sandboxId, 'python3 -c "print(1+1)"');
  assert.equal(np.status, 200);
  assert.equal(np.json.exitCode, 127);
  assert.match(np.json.stderr, /python3: not found/);

  // round trip of a trivial command, for the record
  const times = [];
  for (let i = 0; i < 10; i++) {
    const t0 = Date.now();
    const x = await exec(bb.sandboxId, 'true');
    times.push(Date.now() - t0);
    assert.equal(x.json.exitCode, 0);
  }
  times.sort((x, y) => x - y);
  t.diagnostic(`exec round trip (true, busybox): median ${times[5]} ms, min ${times[0]} ms, max ${times[9]} ms`);
});

test('a command runs through sh -c as the sandbox user in the workdir, or in cwd', async () => {
  const sb = await create({ template: 'python' });
  const r = await exec(sb.sandboxId, 'id -u; id -g; pwd; echo "$0"; echo out; echo err >&2; exit 3');
  assert.deepEqual(r.json, { stdout: '1000\n1000\n/home/user\nsh\nout\n', stderr: 'err\n', exitCode: 3, timedOut: false, truncated: false });
  const c = await exec(sb.sandboxId, 'pwd', { cwd: '/tmp' });
  assert.equal(c.json.stdout, '/tmp\n');
  // pipes, quoting and redirections are the shell's
  const q = await exec(sb.sandboxId, `printf '%s\\n' "a b" 'c"d' | wc -l; echo hi > f.txt; cat f.txt`);
  assert.equal(q.json.stdout, '2\nhi\n');
  // a signal death reads 128 + n
  const k = await exec(sb.sandboxId, 'kill -9 $$');
  assert.equal(k.json.exitCode, 137);
  assert.equal(k.json.timedOut, false);
  // a working directory that does not exist, or is a file: the command
  // does not run, and the answer is a 400 naming cwd (runsc, 20221219,
  // enters a file as cwd: that case is runc's only)
  const gvisor = process.env.SANDPIT_TEST_RUNTIME === 'gvisor';
  for (const [cwd, why] of [['/nonexistent', 'does not exist in the sandbox'], ['/etc/passwd', 'is not a directory']]) {
    if (gvisor && cwd === '/etc/passwd') continue;
    const m = await exec(sb.sandboxId, "echo r''an", { cwd });
    assert.equal(m.status, 400, m.text);
    assert.equal(m.json.message, `cwd: ${cwd} ${why}`);
    assert.deepEqual(m.json.issues[0].path, ['cwd']);
  }
});

test('env = template env, then the sandbox envVars, then the request env', async () => {
  const sb = await create({ template: 'ruby', envVars: 'GEM_HOME=/tmp/gems\nFOO=envvars\nBAR=envvars\n' });
  const show = 'echo "$GEM_HOME|$BUNDLE_APP_CONFIG|$FOO|$BAR|$BAZ"';
  const a = await exec(sb.sandboxId, show);
  assert.equal(a.json.stdout, '/tmp/gems|/home/user/.bundle|envvars|envvars|\n');
  const b = await exec(sb.sandboxId, show, { env: { BAR: 'request', BUNDLE_APP_CONFIG: '/tmp/b', BAZ: 'x y\nz' } });
  assert.equal(b.json.stdout, '/tmp/gems|/tmp/b|envvars|request|x y\nz\n');
  const c = await exec(sb.sandboxId, show, { env: { GEM_HOME: '/tmp/req-gems' } });
  assert.equal(c.json.stdout, '/tmp/req-gems|/home/user/.bundle|envvars|envvars|\n');
  // the request env lasts for that command only
  const d = await exec(sb.sandboxId, 'echo "${BAZ-unset}"');
  assert.equal(d.json.stdout, 'unset\n');
  // the kill marker cannot be chosen by the caller
  const m = await exec(sb.sandboxId, 'echo "$SANDPIT_EXEC"', { env: { SANDPIT_EXEC: 'chosen' } });
  assert.match(m.json.stdout, /^[a-z0-9]{20}\n$/);
  const bad = await exec(sb.sandboxId, 'true', { env: { '1X': 'a' } });
  assert.equal(bad.status, 400);
  assert.deepEqual(bad.json.issues[0].path.slice(0, 1), ['env']);
});

test('H5: no request sets the exec User, Privileged or a cwd under /proc; commands run as uid 1000', async () => {
  const sb = await create({ template: 'python' });
  for (const [field, value] of [['User', 'root'], ['Privileged', true], ['user', '0:0'], ['privileged', true], ['WorkingDir', '/proc']]) {
    const r = await exec(sb.sandboxId, 'id -u', { [field]: value });
    assert.equal(r.status, 400, `${field}: ${r.text}`);
    assert.equal(r.json.message, `Unrecognized key: '${field}'`);
    assert.deepEqual(r.json.issues[0].path, [field]);
  }
  for (const cwd of ['/proc', '/proc/', '/proc/self', '/proc/self/fd/7', '//proc', '/./proc/1', '/tmp/../proc', '/home/../../proc/self/cwd']) {
    const r = await exec(sb.sandboxId, 'pwd', { cwd });
    assert.equal(r.status, 400, `${cwd}: ${r.text}`);
    assert.equal(r.json.message, 'cwd: may not be under /proc');
    assert.deepEqual(r.json.issues[0].path, ['cwd']);
  }
  // look-alikes are not refused as /proc (the first two do not exist here)
  for (const [cwd, status] of [['/procfs', 400], ['/tmp/proc', 400], ['/home/user/../user', 200]]) {
    const r = await exec(sb.sandboxId, 'true', { cwd });
    assert.equal(r.status, status, `${cwd}: ${r.text}`);
    if (status === 400) assert.equal(r.json.message, `cwd: ${cwd} does not exist in the sandbox`);
  }
  // symlinks planted inside resolve into /proc: refused the same way, after
  // the kernel resolved them (issue 12); a command that itself exits 125
  // silently is still its own answer
  const gvisorRun = process.env.SANDPIT_TEST_RUNTIME === 'gvisor';
  const plant = await exec(sb.sandboxId, 'ln -s /proc /home/user/p && ln -s /proc/self /home/user/ps && mkdir -p /home/user/d && ln -s ../ps /home/user/d/up');
  assert.equal(plant.status, 200, plant.text);
  for (const cwd of ['/home/user/p', '/home/user/ps', '/home/user/ps/fd', '/home/user/d/up', '/home/user/p/1']) {
    const r = await exec(sb.sandboxId, 'pwd; echo should not run', { cwd });
    assert.equal(r.status, 400, `${cwd}: ${r.text}`);
    // runsc 20221219 does not follow some symlinks into /proc at all: it
    // refuses to start there ("does not exist"), which is as safe
    if (gvisorRun && r.json.message === `cwd: ${cwd} does not exist in the sandbox`) continue;
    assert.equal(r.json.message, 'cwd: may not be under /proc');
    assert.deepEqual(r.json.issues[0].path, ['cwd']);
  }
  const own = await exec(sb.sandboxId, 'exit 125', { cwd: '/home/user/d' });
  assert.equal(own.status, 200, own.text);
  assert.equal(own.json.exitCode, 125);
  const r = await exec(sb.sandboxId, "id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status");
  // gVisor's /proc/self/status has no NoNewPrivs line (docker inspect shows
  // no-new-privileges, hardening.test.mjs)
  assert.equal(r.json.stdout, process.env.SANDPIT_TEST_RUNTIME === 'gvisor'
    ? '1000\nCapEff:\t0000000000000000\n' : '1000\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\n');
  // the container's own user is the keeper (65533): a docker exec without
  // a User runs as it, so sandpit names 1000 on every exec it makes
  const d = await dockerExec(sb.containerId, ['sh', '-c', 'id -u']);
  assert.equal(d.stdout, '65533\n');
});

test('many commands at once in one sandbox; other requests are served meanwhile', async (t) => {
  const sb = await create({ template: 'alpine' });
  // six commands that each wait for a file only the test creates, after it
  // has seen all six running and list and one answered meanwhile: commands
  // run one after another would never all be running, and a list queued
  // behind them would not answer
  const t0 = Date.now();
  const runs = Array.from({ length: 6 }, (_, i) => exec(sb.sandboxId,
    `touch /tmp/started.${i}; n=0; while [ ! -f /tmp/go ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done; [ -f /tmp/go ] && echo ${i}`,
    { timeoutMs: 90000 }));
  await waitFor(async () => (await dockerExec(sb.containerId, ['sh', '-c', 'ls /tmp | grep -c "^started\\."'])).stdout.trim() === '6', 50000, 200);
  const l0 = Date.now();
  const list = await s.api('GET', '/api/sandbox.list', { timeoutMs: 30000 });
  const listMs = Date.now() - l0;
  assert.equal(list.status, 200);
  const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.sandboxId }, timeoutMs: 30000 });
  assert.equal(one.status, 200);
  await dockerExec(sb.containerId, ['touch', '/tmp/go']);
  const done = await Promise.all(runs);
  t.diagnostic(`6 commands running at once after ${l0 - t0} ms; sandbox.list meanwhile ${listMs} ms; all done after ${Date.now() - t0} ms`);
  done.forEach((r, i) => assert.deepEqual(r.json, ok(`${i}\n`)));
});

test('exec error texts and bounds', async () => {
  const sb = await create({ template: 'alpine' });
  const cases = [
    [{ cmd: '' }, 'cmd'],
    [{ cmd: 'x'.repeat(65537) }, 'cmd'],
    [{ cmd: 'true', timeoutMs: 999 }, 'timeoutMs'],
    [{ cmd: 'true', timeoutMs: 600001 }, 'timeoutMs'],
    [{ cmd: 'true', timeoutMs: 1.5e3 + 0.5 }, 'timeoutMs'],
    [{ cmd: 'true', cwd: 'tmp' }, 'cwd'],
    [{ cmd: 'true', cwd: '/' + 'a'.repeat(4096) }, 'cwd'],
    [{ cmd: 'true', env: { A: 1 } }, 'env'],
    [{}, 'cmd'],
  ];
  for (const [body, field] of cases) {
    const r = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: sb.sandboxId, ...body } });
    assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${r.text}`);
    assert.equal(r.json.code, 'BAD_REQUEST');
    assert.equal(r.json.issues[0].path[0], field, r.text);
    assert.ok(r.json.message.startsWith(field), r.json.message);
  }
  const long = await exec(sb.sandboxId, 'x=$(printf "%65000s" ""); echo ${#x}', { timeoutMs: 600000 });
  assert.deepEqual(long.json, ok('65000\n'));
  const min = await exec(sb.sandboxId, 'true', { timeoutMs: 1000 });
  assert.equal(min.json.exitCode, 0);
  const cmd64k = await exec(sb.sandboxId, `: ${'x'.repeat(65534)}`);
  assert.equal(cmd64k.status, 200);
  const nf = await exec('nosuchsandbox0000000', 'true');
  assert.equal(nf.status, 404);
  assert.equal(nf.json.message, 'Sandbox not found');
  const k = await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: sb.sandboxId } });
  assert.equal(k.status, 200);
  const dead = await exec(sb.sandboxId, 'true');
  assert.equal(dead.status, 412);
  assert.equal(dead.json.message, 'Sandbox is killed');
  assert.equal(dead.json.code, 'PRECONDITION_FAILED');
});

test('the answer streams: stdout arrives while the command still runs', async () => {
  const sb = await create({ template: 'alpine' });
  // The command prints 256 KiB, then waits for a file that only a second
  // request creates, sent once half of that has arrived: an answer held back
  // until the command ends would never release it. (nginx passes the answer
  // on in pieces of its 32 KiB buffers; W1, slow clients and oversize
  // requests, is web.test.mjs.)
  let got = 0;
  let released = null;
  const r = await s.api('POST', '/api/sandbox.exec', {
    body: {
      sandboxId: sb.sandboxId,
      cmd: 'head -c 262144 /dev/zero | tr "\\0" x; echo to-stderr >&2; i=0; while [ ! -f /tmp/go ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; [ -f /tmp/go ] || { echo never released; exit 1; }; printf "second \\342\\202"; printf "\\254"',
      timeoutMs: 30000,
    },
    onData: (c) => {
      got += c.length;
      if (!released && got >= 131072) released = exec(sb.sandboxId, 'touch /tmp/go');
    },
  });
  assert.ok(released, 'half of the output arrived before the command ended');
  assert.equal((await released).status, 200);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { stdout: 'x'.repeat(262144) + 'second \u20ac', stderr: 'to-stderr\n', exitCode: 0, timedOut: false, truncated: false });
});

// Regression (issue 14): an env value over 1 MiB became `KEY=` and the
// command ran. A value past the bound is a 400 naming env, as over the
// WebSocket (stream.test.mjs); one at the bound reaches the command whole.
test('an over-long env value is a 400 naming env; one at the bound arrives whole', async () => {
  const sb = await create({ template: 'alpine' });
  for (const [env, message] of [
    // one KEY=value past the kernel's 131071 bytes (the core's rule, sandbox/exec.c)
    [{ BIG: 'x'.repeat(131068) }, 'env.BIG: KEY=value must be at most 131071 bytes'],
    [{ BIG: 'x'.repeat(2 * 1024 * 1024) }, 'env.BIG: KEY=value must be at most 131071 bytes'],
    [Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`V${i}`, 'x'.repeat(131068)])),
      'env: at most 1048576 bytes in all (KEY=value)'],
  ]) {
    const r = await exec(sb.sandboxId, 'echo ran', { env });
    assert.equal(r.status, 400, r.text.slice(0, 200));
    assert.equal(r.json.message, message);
    assert.equal(r.json.code, 'BAD_REQUEST');
    assert.equal(r.json.issues[0].path[0], 'env');
  }
  const at = await exec(sb.sandboxId, 'echo ${#BIG} "$(printf %s "$BIG" | tr -d x | wc -c)"', {
    env: { BIG: 'x'.repeat(131067) },
  });
  assert.deepEqual(at.json, ok('131067 0\n'));
  // keys and values near the total bound, in one process's environment
  const env = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`V${i}`, 'y'.repeat(65536)]));
  const many = await exec(sb.sandboxId, 'n=0; for v in $(env | sed -n "s/^V[0-9]*=//p"); do n=$((n + ${#v})); done; echo $n', { env });
  assert.deepEqual(many.json, ok(`${15 * 65536}\n`));
});
