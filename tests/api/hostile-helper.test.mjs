// A hostile in-sandbox helper (issue 24, RELIABILITY T3; review
// redteam.md D3(a), D5, D6): the red team's own programs, built from
// tests/api/fixtures/ with musl-gcc and uploaded into a sandbox, run
// against its helper as the sandbox's user.
// - steal (D5) kills the serving helper every 1.5 s while the test's execs
//   make sandpit start new ones, and races to open /proc/PID/fd/0 of each:
//   it never opens one (the binary is execute-only, so execve leaves the
//   helper non-dumpable) and never reads the secret; an exec's output is
//   still the command's.
// - a FAKE serving helper (fakeserve) holding port 47011 without the secret
//   forges output in vain: exec answers the real output through docker exec.
// - atk kill (D6) SIGKILLs every helper command: list, stat and readFile
//   answer 200 or 503 naming the sandbox, never 500.
// - atk injectstop (D3a) stops each `ls` and writes a 3.3 MB
//   {"entries":[{},…]} into its stdout: under runc the open of
//   /proc/PID/fd/1 fails (hits=0), the listing is the real one; and the
//   workers' peak RSS stays under 150 MB (the review saw 865 MB).
// Runs under runc; SANDPIT_TEST_RUNTIME=gvisor runs what applies there (no
// fast path under gVisor; a readable helper copy, so an injection may land
// in the window before its prctl: then the answer is bounded and 200/503).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startStack } from './lib/stack.mjs';

const run = promisify(execFile);
const GVISOR = process.env.SANDPIT_TEST_RUNTIME === 'gvisor';
const FIX = path.join(path.dirname(new URL(import.meta.url).pathname), 'fixtures');
const RSS_BOUND_KB = 150 * 1024;

let s, bin;
const made = [];
const tokens = new Map();

async function token(id) {
  if (tokens.has(id)) return tokens.get(id);
  const r = await s.api('POST', `/v1/sandboxes/${id}/endpoint-credentials`,
    { body: { permissions: ['sandboxesExec', 'sandboxesFilesRead', 'sandboxesFilesWrite'] } });
  assert.equal(r.status, 200, r.text);
  tokens.set(id, r.json.token);
  return r.json.token;
}
async function ep(id, method, p, o = {}) {
  const t = await token(id);
  return s.api(method, `/endpoints/${id}${p}`, { key: null, timeoutMs: 120000, ...o, headers: { authorization: `Bearer ${t}`, ...o.headers } });
}
const b64 = (x) => Buffer.from(x ?? '', 'base64').toString('utf8');
async function sh(id, script) {
  const r = await ep(id, 'POST', '/v1/processes/exec', { body: { cmd: ['sh', '-c', script] } });
  assert.equal(r.status, 200, r.text);
  return { out: b64(r.json.stdout), err: b64(r.json.stderr), code: r.json.exitCode ?? 0 };
}
async function put(id, p, data, mode = 0o755) {
  const r = await ep(id, 'PUT', '/v1/files/content', { query: { path: p, mode }, rawBody: data, headers: { 'content-type': 'application/octet-stream' } });
  assert.equal(r.status, 200, r.text);
}
async function createSandbox() {
  const r = await s.api('POST', '/v1/sandboxes', { body: { imageRef: 'sandpit-test/busybox' } });
  assert.equal(r.status, 201, r.text);
  made.push(r.json.uid);
  const w = (await sh(r.json.uid, 'pwd')).out.trim();
  return { id: r.json.uid, w };
}
// Starts a program in the background of sandbox id, out of the exec's
// reach (its own session, the wrapper's marker fd 9 closed).
const bg = (id, w, cmd, log) => sh(id, `setsid ${cmd} >${w}/${log} 2>&1 </dev/null 9<&- &`);

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
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// A 5xx that is not 503 (the helper's failure) is the defect.
function checkAnswer(r, id, what) {
  assert.ok(r.status === 200 || r.status === 503, `${what}: ${r.status} ${r.text.slice(0, 300)}`);
  if (r.status === 503) {
    assert.equal(r.json?.code, 'unavailable', r.text);
    // sandpitd's own answer names the sandbox and its helper; nginx's (a
    // worker that had begun a readFile's stream and abandoned it) is generic
    assert.ok(r.json.message.includes(id) || r.json.message === 'Service unavailable', r.text);
  }
}

before(async () => {
  bin = await mkdtemp(path.join(os.tmpdir(), 'hostile-'));
  for (const f of ['atk', 'steal', 'fakeserve'])
    await run('musl-gcc', ['-static', '-O2', '-o', path.join(bin, f), path.join(FIX, `${f}.c`)]);
  s = await startStack();
});
after(async () => {
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await s?.stop();
  if (bin) fs.rmSync(bin, { recursive: true, force: true });
});

test('the stealing program never opens a serving helper\'s stdin nor reads the secret; exec output stays real', { skip: GVISOR && 'no fast path under gVisor' }, async (t) => {
  const { id, w } = await createSandbox();
  await sh(id, 'true'); // the serving helper is up
  await put(id, `${w}/steal`, await readFile(path.join(bin, 'steal')));
  await bg(id, w, `${w}/steal 18`, 'steal.log');
  const until = Date.now() + 19000;
  let n = 0, lost = 0;
  while (Date.now() < until) { // each exec after a kill starts a new serving helper
    // steal also kills a serving helper's connection child whose listener
    // it killed (PPid 1 then): that exec is lost and killed (137), never
    // answered with output the command did not print
    const nonce = `real-${n++}`;
    const r = await ep(id, 'POST', '/v1/processes/exec', { body: { cmd: ['sh', '-c', `echo ${nonce}`] } });
    assert.ok(r.status === 200 || r.status === 503, r.text);
    if (r.status === 200 && (r.json.exitCode ?? 0) === 0) assert.equal(b64(r.json.stdout), `${nonce}\n`);
    else lost++;
    await sleep(150);
  }
  let log = '';
  for (let i = 0; i < 20 && !/wins=/.test(log); i++) { log = (await sh(id, `cat ${w}/steal.log`)).out; await sleep(500); }
  t.diagnostic(`${n} execs (${lost} lost to a kill); steal: ${log.trim().split('\n').slice(-3).join(' | ')}`);
  const m = /kills=(\d+) serves=(\d+) opened=(\d+) wins=(\d+)/.exec(log);
  assert.ok(m, log);
  assert.doesNotMatch(log, /WIN/);
  assert.equal(Number(m[3]), 0, `opened a serving helper's stdin: ${log}`);
  assert.equal(Number(m[4]), 0);
  // the attack ran: serving helpers were killed and their successors seen
  assert.ok(Number(m[1]) >= 3 && Number(m[2]) >= 3, log);
  const nonce = `after-${Date.now()}`;
  assert.equal((await sh(id, `echo ${nonce}`)).out, `${nonce}\n`);
});

test('a FAKE serving helper on the fast path\'s port cannot forge an exec: docker exec answers', { skip: GVISOR && 'no fast path under gVisor' }, async (t) => {
  const { id, w } = await createSandbox();
  await sh(id, 'true');
  await put(id, `${w}/fakeserve`, await readFile(path.join(bin, 'fakeserve')));
  // kill the real one, take its port
  await bg(id, w, `${w}/fakeserve 12`, 'fake.log');
  for (let i = 0; i < 50 && !/bound/.test((await sh(id, `cat ${w}/fake.log`)).out); i++) await sleep(100);
  const outs = [];
  for (let i = 0; i < 5; i++) outs.push((await sh(id, `echo real-${i}`)).out);
  assert.deepEqual(outs, [0, 1, 2, 3, 4].map((i) => `real-${i}\n`));
  // the fake was asked (and failed the handshake)
  let log = '';
  for (let i = 0; i < 40 && !/conns=/.test(log); i++) { log = (await sh(id, `cat ${w}/fake.log`)).out; await sleep(500); }
  t.diagnostic(`fake: ${log.trim().replace(/\n/g, ' | ')}`);
  assert.match(log, /conns=[1-9]/);
});

test('atk kill: list, stat and readFile answer 200 or 503 naming the sandbox, never 500', async (t) => {
  const { id, w } = await createSandbox();
  await sh(id, `mkdir -p ${w}/d && echo 1 > ${w}/d/f`);
  await put(id, `${w}/atk`, await readFile(path.join(bin, 'atk')));
  await bg(id, w, `${w}/atk kill 8`, 'atk.log');
  const count = {};
  const until = Date.now() + 8000;
  while (Date.now() < until) {
    for (const [what, p, q] of [['list', '/v1/files', { path: `${w}/d` }], ['stat', '/v1/files/stat', { path: `${w}/d/f` }], ['readFile', '/v1/files/content', { path: `${w}/d/f` }]]) {
      const r = await ep(id, 'GET', p, { query: q });
      count[`${what} ${r.status}`] = (count[`${what} ${r.status}`] ?? 0) + 1;
      checkAnswer(r, id, what);
    }
  }
  await sleep(1500);
  const log = (await sh(id, `cat ${w}/atk.log`)).out;
  t.diagnostic(`answers ${JSON.stringify(count)}; atk: ${log.trim()}`);
  const hits = Number(/hits=(\d+)/.exec(log)?.[1] ?? -1);
  assert.ok(hits > 0, `the attack killed no helper: ${log}`);
  assert.ok(Object.keys(count).some((k) => k.endsWith(' 503')), JSON.stringify(count));
});

test('atk injectstop: a 3.3 MB {"entries":[{},…]} cannot reach the parser, no 500, workers stay under 150 MB', async (t) => {
  const { id, w } = await createSandbox();
  await sh(id, `mkdir -p ${w}/m && cd ${w}/m && i=0; while [ $i -lt 300 ]; do : > f$i; i=$((i+1)); done`);
  const n = Math.floor((3342336 - 24096) / 3);
  await put(id, `${w}/p100`, Buffer.from(`{"entries":[${'{},'.repeat(n)}{}]}`), 0o644);
  await put(id, `${w}/atk`, await readFile(path.join(bin, 'atk')));
  const real = (await sh(id, `ls ${w}/m | sort | head -100`)).out.trim().split('\n').map((x) => `${w}/m/${x}`);
  await bg(id, w, `${w}/atk injectstop 9 ' ls ' ${w}/p100 0`, 'atk.log');
  await sleep(300);
  const statuses = [];
  const until = Date.now() + 8000;
  while (Date.now() < until) {
    const r = await ep(id, 'GET', '/v1/files', { query: { path: `${w}/m`, pageSize: 100 } });
    statuses.push(r.status);
    checkAnswer(r, id, 'list');
    if (r.status === 200) assert.deepEqual(r.json.entries.map((e) => e.path), real, 'a falsified listing');
  }
  await sleep(2000);
  const log = (await sh(id, `cat ${w}/atk.log`)).out;
  const hits = Number(/hits=(\d+)/.exec(log)?.[1] ?? -1), seen = Number(/seen=(\d+)/.exec(log)?.[1] ?? -1);
  const hwm = Math.max(...workerPids().map((p) => status(p, 'VmHWM')));
  const tally = statuses.reduce((m, x) => ({ ...m, [x]: (m[x] ?? 0) + 1 }), {});
  t.diagnostic(`list answers ${JSON.stringify(tally)}; atk: ${log.trim()}; workers' peak VmHWM ${hwm} kB`);
  assert.ok(seen > 0, `the attack found no helper ls: ${log}`);
  if (!GVISOR) assert.equal(hits, 0, `wrote into a helper's stdout: ${log}`);
  assert.ok(hwm > 0 && hwm < RSS_BOUND_KB, `a worker peaked at ${hwm} kB`);
});
