// Abuse from inside a sandbox through sandbox.exec (RELIABILITY A4-A8, A11)
// and the pids-exhaustion path: output floods, binary output, stream
// framing, timeouts and their escapes, a client that goes away,
// and a command that leaves nothing to fork the killer with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { waitFor } from './lib/stack.mjs';
import { sandboxStack } from './lib/suite.mjs';
import { docker, procs } from './lib/docker.mjs';

let s;
const { create, exec } = sandboxStack((stack) => { s = stack; });
const sha = (x) => createHash('sha256').update(x).digest('hex');


function workerPids() {
  const master = fs.readFileSync(path.join(s.dir, 'sandpitd.pid'), 'utf8').trim();
  return spawnSync('pgrep', ['-P', master], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number);
}
function status(pid, field) {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch { return 0; }
}
// A worker waiting for the next request sits in accept(): which syscall
// number that is depends on the architecture (43 on x86-64, 202 on arm64),
// so idleSyscall() learns it from the workers of an idle stack: the one
// number every worker shows. Idle workers that run the reaper and the pools
// wait in ppoll() (271 on x86-64) on the listening socket instead
// (fcgi/sandpitd.c connection_waiting); a worker waiting on Docker uses
// poll() (7).
const syscallOf = (p) => { try { return fs.readFileSync(`/proc/${p}/syscall`, 'utf8').split(' ')[0]; } catch { return null; } };
let idle = null;
async function idleSyscall() {
  if (idle === null) {
    idle = await waitFor(() => {
      const seen = new Set(workerPids().map(syscallOf));
      if (seen.has(null) || seen.has('running')) return null;
      if (seen.size === 1) return [...seen][0];
      // accept() and ppoll() side by side (x86-64): both idle
      return [...seen].every((n) => n === '43' || n === '271') ? '271' : null;
    }, 30000, 100);
  }
  return idle;
}
function busyWorkers() {
  return workerPids().filter((p) => { const n = syscallOf(p); return n !== null && n !== idle && n !== '271' && n !== '43'; }).length;
}

test('A4: both streams flooding at once are capped at exactly 1 MiB each; worker memory stays bounded', async (t) => {
  const sb = await create({ template: 'python' });
  // warm up every worker so the baseline includes libraries and buffers in use
  await Promise.all([1, 2, 3].map(() => exec(sb.sandboxId, 'true')));
  const workers = workerPids();
  const rssBefore = Object.fromEntries(workers.map((p) => [p, status(p, 'VmRSS')]));
  const t0 = Date.now();
  const flood = exec(sb.sandboxId,
    'yes abcdefgh | head -c 50000000 & yes ABCDEFGH | head -c 50000000 >&2; wait', { timeoutMs: 60000 });
  // other requests are served while the flood runs
  await new Promise((r) => setTimeout(r, 200));
  const l0 = Date.now();
  let floodDone = false;
  flood.then(() => { floodDone = true; }, () => {});
  const list = await s.api('GET', '/api/sandbox.list', { timeoutMs: 60000 });
  assert.equal(list.status, 200);
  const listMs = Date.now() - l0;
  const listBeforeFlood = !floodDone;
  const r = await flood;
  const floodMs = Date.now() - t0;
  assert.equal(r.status, 200, r.text.slice(0, 300));
  assert.equal(Buffer.byteLength(r.json.stdout), 1048576);
  assert.equal(Buffer.byteLength(r.json.stderr), 1048576);
  assert.equal(r.json.stdout, 'abcdefgh\n'.repeat(116509).slice(0, 1048576));
  assert.equal(r.json.stderr, 'ABCDEFGH\n'.repeat(116509).slice(0, 1048576));
  assert.equal(r.json.truncated, true);
  assert.equal(r.json.timedOut, false, 'the flood is drained, not left to time out');
  assert.equal(r.json.exitCode, 0);
  // the workers live on and still answer: one that is gone left because
  // the pool shrank (idle 10 s while the flood ran, under gVisor), never
  // by a crash
  const after = workerPids();
  const log = await s.logTail('sandpitd.log', 2000);
  for (const p of workers.filter((w) => !after.includes(w))) {
    assert.match(log, new RegExp(`worker ${p} \\(slot \\d+\\) exited with status 0 after \\d+ requests: idle`), `worker ${p} did not survive`);
  }
  const again = await exec(sb.sandboxId, 'echo ok');
  assert.equal(again.json.stdout, 'ok\n');
  const rssAfter = Object.fromEntries(workers.map((p) => [p, status(p, 'VmRSS')]));
  const peak = Math.max(...workers.map((p) => status(p, 'VmHWM') - rssBefore[p]));
  t.diagnostic(`flood ${floodMs} ms; list during flood ${listMs} ms (answered ${listBeforeFlood ? 'before' : 'after'} the flood ended); worker VmRSS kB before ${JSON.stringify(rssBefore)} after ${JSON.stringify(rssAfter)}; largest peak growth ${peak} kB`);
  // 100 MB went through; a worker holds at most the two 1 MiB buffers and the answer
  assert.ok(peak < 48 * 1024, `worker peak RSS grew by ${peak} kB`);
  for (const p of workers) assert.ok(rssAfter[p] - rssBefore[p] < 32 * 1024, `worker ${p} RSS ${rssBefore[p]} -> ${rssAfter[p]} kB`);
});

test('A5: binary output gives valid JSON, NUL kept, invalid UTF-8 becomes U+FFFD', async () => {
  const sb = await create({ template: 'alpine' });
  const r = await exec(sb.sandboxId,
    "printf 'a\\000b\\377c\\342\\202\\254d\\000'; printf 'x\\000\\376y' >&2; printf '\\342'; sleep 0.3; printf '\\202\\254'");
  assert.equal(r.status, 200);
  assert.ok(r.json, 'the answer is JSON');
  JSON.parse(r.text); // strict parse of the body
  assert.ok(r.text.includes('\\u0000'), 'NUL is escaped, not cut');
  // a character split across two writes (two stream frames) is put back together
  assert.equal(r.json.stdout, 'a\u0000b\uFFFDc\u20ACd\u0000\u20AC');
  assert.equal(r.json.stderr, 'x\u0000\uFFFDy');
  assert.equal(r.json.exitCode, 0);
  assert.equal(r.json.truncated, false);
  // a sequence cut off at the end of the output
  const cut = await exec(sb.sandboxId, "printf 'ok\\342\\202'");
  assert.ok(cut.json);
  assert.match(cut.json.stdout, /^ok\uFFFD+$/);
  // every byte value once
  const all = await exec(sb.sandboxId, "i=0; while [ $i -lt 256 ]; do printf \"\\\\$(printf %o $i)\"; i=$((i+1)); done");
  assert.ok(all.json);
  const out = all.json.stdout;
  for (let i = 0; i < 128; i++) assert.equal(out.charCodeAt(i), i, `byte ${i} kept`);
  assert.equal(out.slice(128), '\uFFFD'.repeat(128));
});

test('A6: 1-byte and 64 KB writes mixed on both streams demultiplex exactly', async () => {
  const sb = await create({ template: 'python' });
  const script = `
import os
def w(fd, b):
    while b:
        b = b[os.write(fd, b):]
for i in range(300):
    n = 65536 if i % 37 == 0 else (1 if i % 2 else 3)
    fd = 1 if (i // 3) % 2 == 0 else 2
    w(fd, bytes(33 + (i + j) % 90 for j in range(n)))
`;
  const expect = { 1: [], 2: [] };
  for (let i = 0; i < 300; i++) {
    const n = i % 37 === 0 ? 65536 : (i % 2 ? 1 : 3);
    const fd = Math.floor(i / 3) % 2 === 0 ? 1 : 2;
    const b = Buffer.alloc(n);
    for (let j = 0; j < n; j++) b[j] = 33 + (i + j) % 90;
    expect[fd].push(b);
  }
  const out = Buffer.concat(expect[1]), err = Buffer.concat(expect[2]);
  const r = await exec(sb.sandboxId, 'python3 -c "$SCRIPT"', { env: { SCRIPT: script } });
  assert.equal(r.status, 200, r.text.slice(0, 300));
  assert.equal(r.json.exitCode, 0, r.json.stderr.slice(0, 300));
  assert.equal(r.json.truncated, false);
  assert.equal(Buffer.byteLength(r.json.stdout), out.length);
  assert.equal(Buffer.byteLength(r.json.stderr), err.length);
  assert.equal(sha(r.json.stdout), sha(out));
  assert.equal(sha(r.json.stderr), sha(err));
});

test('A7: sleep 1000 and a busy loop end at the timeout (not before 3 s) with exit 124', async (t) => {
  const sb = await create({ template: 'alpine' });
  const timed = async (cmd) => {
    const t0 = Date.now();
    const r = await exec(sb.sandboxId, cmd, { timeoutMs: 3000 });
    return { r, ms: Date.now() - t0 };
  };
  const [a, b] = await Promise.all([timed('sleep 1000'), timed('while :; do :; done')]);
  t.diagnostic(`sleep 1000: ${a.ms} ms; busy loop: ${b.ms} ms`);
  for (const { r, ms } of [a, b]) {
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.exitCode, 124);
    assert.equal(r.json.timedOut, true);
    // not before the timeout (the client's clock starts before the
    // server's); the upper cap only bounds the test (speed is the
    // benchmark's), well below the 1000 s sleep
    assert.ok(ms >= 3000 && ms <= 30000, `ended after ${ms} ms`);
  }
  const left = (await procs(sb.containerId)).filter((p) => p.marked);
  assert.deepEqual(left, []);
  const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.sandboxId } });
  assert.equal(one.json.status, 'running');
});

test('A8: setsid, a double fork, nohup, trap \'\' TERM and env -i do not survive the timeout', async () => {
  const sb = await create({ template: 'python' });
  // env -i clears the marker variable: the marker file on fd 9 finds those
  const cmd = 'setsid sleep 1001 & (sleep 1002 &) ; nohup sleep 1003 >/dev/null 2>&1 & ' +
    "sh -c \"trap '' TERM HUP INT; sleep 1004\" & (setsid sh -c 'sleep 1005 & sleep 1006' >/dev/null 2>&1 &); " +
    "env -i sleep 1007 & (env -i setsid sh -c 'sleep 1008 &' &); sleep 1000";
  // a 10 s timeout: time for all of them to start on a loaded machine,
  // seen before the timeout kills them
  const t0 = Date.now();
  const running = exec(sb.sandboxId, cmd, { timeoutMs: 10000 });
  let seen = [];
  await waitFor(async () => {
    seen = (await procs(sb.containerId)).map((p) => p.cmd);
    return [1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008].every((n) => seen.some((c) => c.includes(`sleep ${n}`)));
  }, 9000, 100).catch(() => {});
  const seenAt = Date.now() - t0;
  const r = await running;
  // on failure, the whole answer, when it came and what was seen running
  const why = `answer ${r.text} after ${Date.now() - t0} ms; seen at ${seenAt} ms: ${JSON.stringify(seen)}`;
  assert.ok([1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008].every((n) => seen.some((c) => c.includes(`sleep ${n}`))), `not all nine started: ${why}`);
  assert.ok(seenAt < 10000, `all nine were seen before the timeout: ${why}`);
  assert.equal(r.json.exitCode, 124, why);
  assert.equal(r.json.timedOut, true, why);
  const left = await procs(sb.containerId);
  assert.deepEqual(left.filter((p) => p.marked), [], why);
  assert.deepEqual(left.filter((p) => /sleep 100\d/.test(p.cmd)), [], why);
  // the sandbox itself lives on
  const ok = await exec(sb.sandboxId, 'echo ok');
  assert.equal(ok.json.stdout, 'ok\n');
});

test('A11: a client that disconnects mid-exec: the command is killed, no worker stays busy', async () => {
  await idleSyscall();
  const sb = await create({ template: 'alpine' });
  await waitFor(() => busyWorkers() === 0, 30000, 100);
  const body = Buffer.from(JSON.stringify({ sandboxId: sb.sandboxId, cmd: 'sleep 30; echo late', timeoutMs: 60000 }));
  const req = https.request({
    host: '127.0.0.1', port: s.port, servername: 'localhost', method: 'POST', path: '/api/sandbox.exec', ca: s.ca,
    headers: { 'x-api-key': s.key, 'content-type': 'application/json', 'content-length': body.length },
  });
  let answered = false;
  req.on('error', () => {});
  req.on('response', () => { answered = true; });
  req.end(body);
  await waitFor(async () => (await procs(sb.containerId)).some((p) => p.marked && p.cmd.startsWith('sleep 30')), 5000, 100);
  // the exec's worker, and no other once a passing moment of another's
  // idle work (a reaper's lock, a pool's check) is over: a snapshot of
  // the workers' syscalls caught one such moment in CI (2 !== 1)
  await waitFor(() => busyWorkers() === 1, 5000, 50);
  await new Promise((r) => setTimeout(r, 1000));
  const gone = Date.now();
  req.destroy();
  await waitFor(async () => !(await procs(sb.containerId)).some((p) => p.marked), 30000, 200);
  await waitFor(() => busyWorkers() === 0, 30000, 100);
  // the command was killed, not left to finish: it would have slept 30 s
  assert.ok(Date.now() - gone < 28000, `the command ended ${Date.now() - gone} ms after the client left`);
  assert.equal(answered, false);
  const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.sandboxId } });
  assert.equal(one.json.status, 'running');
  const ok = await exec(sb.sandboxId, 'echo ok');
  assert.equal(ok.json.stdout, 'ok\n');
  const log = await s.logTail('sandpitd.log', 400);
  assert.ok(!log.includes('could not be killed'), 'the killer ran; the container was not killed');
});

// How a command that fills the pids limit ends: at its timeout (124). Under
// gVisor a full pids limit can end the whole sandbox first (the runtime
// cannot start the host threads it needs; README "gVisor"): then the answer
// says the command was killed with its container, before the timeout (137,
// not timed out), and the sandbox reads killed. Seen in about 1 run in 5
// beside another gVisor file, within 0.4-1.3 s of the start.
function endedAs(r) {
  return process.env.SANDPIT_TEST_RUNTIME === 'gvisor' && r.json?.timedOut === false ? [137, false] : [124, true];
}

test('pids exhausted at the timeout: the answer arrives and the sandbox reads killed', async () => {
  const sb = await create({ template: 'alpine', pidsLimit: 32 });
  const t0 = Date.now();
  // fills the pids limit with sleepers, then the main process waits without forking
  const r = await exec(sb.sandboxId, '(while :; do sleep 1000 & done) 2>/dev/null; exec sleep 1000', { timeoutMs: 3000 });
  const ms = Date.now() - t0;
  assert.equal(r.status, 200, r.text);
  assert.deepEqual([r.json.exitCode, r.json.timedOut], endedAs(r), r.text);
  assert.ok(ms < 30000, `answered after ${ms} ms`);
  const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.sandboxId } });
  assert.equal(one.json.status, 'killed');
  assert.ok(one.json.killedAt);
  await waitFor(async () => (await docker('GET', `/containers/${sb.containerId}/json`)).status === 404, 10000);
  const again = await exec(sb.sandboxId, 'echo hi');
  assert.equal(again.status, 412);
  assert.equal(again.json.message, 'Sandbox is killed');
  // (under gVisor the filled pids limit can end the whole sandbox first)
  assert.match(await s.logTail('sandpitd.log', 400), /a timed-out command could not be killed|the container ended under a running command/);
});

// The container's pids cgroup on the host (cgroup v1): its limit and how
// often a fork was refused at it ("max" in pids.events).
async function pidsCgroup(cid) {
  const pid = (await docker('GET', `/containers/${cid}/json`)).json.State.Pid;
  const rel = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n').find((l) => /^\d+:([^:]*,)?pids(,[^:]*)?:/.test(l)).split(':')[2];
  const dir = `/sys/fs/cgroup/pids${rel}`;
  return {
    max: fs.readFileSync(`${dir}/pids.max`, 'utf8').trim(),
    refused: () => { try { return Number(/^max (\d+)/m.exec(fs.readFileSync(`${dir}/pids.events`, 'utf8'))[1]); } catch { return null; } },
  };
}

test('a fork bomb under the pids limit ends at its timeout; the sandbox stays usable or reads killed', async (t) => {
  const sb = await create({ template: 'alpine', pidsLimit: 64 });
  // the limit the bomb runs into is the one asked for (under gVisor the
  // host counts pidsLimit x 8 + 64, hardening.test.mjs)
  const cg = await pidsCgroup(sb.containerId);
  assert.equal(cg.max, process.env.SANDPIT_TEST_RUNTIME === 'gvisor' ? String(64 * 8 + 64) : '64');
  let refused = 0;
  const t0 = Date.now();
  // The shell forks once, before the bomb starts, then only execs: with
  // `b | b &` run by the shell itself, its second fork raced the first
  // child's bomb for the last pids, and on a loaded machine lost it ("can't
  // fork": the command ended by itself with exit 2 in ~0.5 s, 2 runs in 8
  // beside a CPU hog).
  const bomb = exec(sb.sandboxId, '(b(){ b | b & }; b) 2>/dev/null & exec sleep 1000', { timeoutMs: 3000 });
  // the bomb reaches the limit: the kernel refuses forks there
  await waitFor(() => { refused = Math.max(refused, cg.refused() ?? 0); return refused > 0; }, 30000, 50).catch(() => {});
  const r = await bomb;
  assert.ok(refused > 0, 'no fork was refused at the pids limit');
  // The answer's bound by design: the 3 s timeout, the killer's exec (at
  // most 10 s), 2 s for the command to end after it, then the container's
  // kill. Under gVisor a bomb can wedge the sandbox kernel, so the killer
  // cannot start and Docker's kill of it may take a whole Docker call
  // (docker_timeout_s, 30 s).
  const took = Date.now() - t0, bound = process.env.SANDPIT_TEST_RUNTIME === 'gvisor' ? 3000 + 10000 + 2000 + 30000 + 5000 : 20000;
  assert.ok(took < bound, `answered after ${took} ms (bound ${bound} ms); sandpitd: ` +
    (await s.logTail('sandpitd.log', 400)).split('\n').filter((l) => l.includes(sb.sandboxId) || /docker|kill/i.test(l)).slice(-12).join(' | '));
  t.diagnostic(`answered after ${took} ms`);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual([r.json.exitCode, r.json.timedOut], endedAs(r), r.text);
  const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.sandboxId } });
  if (one.json.status === 'running') {
    const ok = await exec(sb.sandboxId, 'echo ok');
    assert.equal(ok.json.stdout, 'ok\n');
    assert.deepEqual((await procs(sb.containerId)).filter((p) => p.marked), []);
  } else {
    assert.equal(one.json.status, 'killed');
    await waitFor(async () => (await docker('GET', `/containers/${sb.containerId}/json`)).status === 404, 10000);
  }
});
