// The fast path (issue 16, sandbox/fastpath.c, sandbox/helper/serve.c):
// /v1 exec, readFile/writeFile and readOutput reach the helper over the
// sandbox's bridge address instead of through docker exec. Two stacks:
// one as shipped (fast path on), one with `fast_path = no`; the same
// commands give the same answers through both, byte for byte; the fast
// path is really used (a command's wrapper is the helper's child, not
// Docker's, and ten commands make no ten docker execs: a recording proxy
// counts them); killing the serving helper, or a sandbox program holding
// its port, still answers (restart, or docker exec); another sandbox
// cannot connect to it, a peer without the secret gets the hello and
// nothing more; gVisor sandboxes use docker exec.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { docker, startStack, waitFor } from './lib/stack.mjs';
import { dockerProxy } from './lib/dockerproxy.mjs';
import { ajv, seedValidator } from './lib/v1seed.mjs';

const PORT = 47011; // sandbox/internal.h SANDBOX_FAST_PORT
let fast, slow, proxy, dir, checked = 0;
const made = []; // [stack, uid]

async function call(s, method, tmpl, params = {}, o = {}) {
  let p = tmpl;
  for (const [k, v] of Object.entries(params)) p = p.replace(`{${k}}`, encodeURIComponent(v));
  if (o.endpoint) p = `/endpoints/${o.endpoint}${p}`;
  const r = await s.api(method, p, { timeoutMs: 120000, ...o });
  const v = seedValidator(method, tmpl, r.status);
  if (v) {
    assert.ok(r.json !== undefined, `${method} ${p} ${r.status}: not JSON: ${r.text}`);
    assert.ok(v(r.json), `${method} ${p} ${r.status} breaks the seed's schema: ${ajv.errorsText(v.errors)}\n${r.text}`);
    checked++;
  }
  return r;
}

const tokens = new Map();
async function token(s, id) {
  const t = tokens.get(id);
  if (t) return t;
  const r = await call(s, 'POST', '/v1/sandboxes/{sandbox}/endpoint-credentials', { sandbox: id },
    { body: { permissions: ['sandboxesExec', 'sandboxesFilesRead', 'sandboxesFilesWrite'] } });
  assert.equal(r.status, 200, r.text);
  tokens.set(id, r.json.token);
  return r.json.token;
}

async function ep(s, id, method, tmpl, o = {}) {
  const t = await token(s, id);
  return call(s, method, tmpl, o.params ?? {}, { key: null, endpoint: id, ...o, headers: { authorization: `Bearer ${t}`, ...o.headers } });
}

async function createSandbox(s, imageRef = 'sandpit-test/busybox') {
  const r = await call(s, 'POST', '/v1/sandboxes', {}, { body: { imageRef } });
  assert.equal(r.status, 201, r.text);
  made.push([s, r.json.uid]);
  return r.json.uid;
}

const execRaw = (s, id, body) => ep(s, id, 'POST', '/v1/processes/exec', { body });
async function exec(s, id, cmd, extra = {}) {
  const r = await execRaw(s, id, { cmd, ...extra });
  assert.equal(r.status, 200, r.text);
  return r.json;
}
const b64 = (x) => Buffer.from(x ?? '', 'base64').toString('utf8');

// Who started the command's wrapper: "0" for docker exec (a process
// Docker made has no parent in the container), else the parent's command
// line (the serving helper's connection child).
const WHO = 'p=$(sed -n "s/^PPid:[[:space:]]*//p" /proc/$PPID/status); ' +
  'if [ "$p" = 0 ]; then echo docker; else tr "\\0" " " </proc/$p/cmdline; echo; fi';
async function who(s, id) {
  const r = await exec(s, id, ['sh', '-c', WHO]);
  assert.equal(r.exitCode, 0, JSON.stringify(r));
  return b64(r.stdout).trim();
}

// Kills the serving helper's listener (the `serve` process whose parent is
// PID 1; its connection children have it as their parent).
const KILL_SERVER = 'for d in /proc/[0-9]*; do case "$(tr "\\0" " " <$d/cmdline 2>/dev/null)" in *"serve 47011"*) ' +
  '[ "$(sed -n "s/^PPid:[[:space:]]*//p" $d/status)" = 1 ] && kill -9 ${d#/proc/} && echo killed;; esac; done';

const containerOf = async (uid) => {
  const r = await docker('GET', `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ name: [`sandpit-${uid}`] }))}`);
  assert.equal(r.status, 200, r.text);
  const c = r.json.find((x) => x.Names.includes(`/sandpit-${uid}`));
  assert.ok(c, `container of ${uid}`);
  return c;
};
const ipOf = async (uid) => {
  const c = await containerOf(uid);
  const nets = Object.values(c.NetworkSettings.Networks);
  assert.ok(nets[0]?.IPAddress, JSON.stringify(c.NetworkSettings));
  return nets[0].IPAddress;
};
const execCreates = () => proxy.log.filter((x) => x.method === 'POST' && /\/containers\/[^/]+\/exec$/.test(x.url)).length;

// A fast-path request as sandpit sends it after the handshake
// (sandbox/fastpath.c): argv, no env, cwd /, no stdin.
function request(argv) {
  const u32 = (n) => { const b = Buffer.alloc(4); b.writeUInt32BE(n); return b; };
  const strs = (a) => Buffer.concat([u32(a.length), ...a.map((x) => Buffer.concat([u32(Buffer.byteLength(x)), Buffer.from(x)]))]);
  const body = Buffer.concat([strs(argv), strs([]), strs(['/']), Buffer.from([0]), u32(0)]);
  return Buffer.concat([u32(body.length), body]);
}

// Reads whatever a TCP peer at ip:port says within ms, after sending data.
function talk(ip, port, data, ms = 3000) {
  return new Promise((resolve) => {
    const got = [];
    const c = net.connect({ host: ip, port });
    const done = (how) => { clearTimeout(t); c.destroy(); resolve({ how, data: Buffer.concat(got) }); };
    const t = setTimeout(() => done('timeout'), ms);
    c.on('connect', () => { if (data) c.write(data); });
    c.on('data', (d) => got.push(d));
    c.on('end', () => done('end'));
    c.on('error', (e) => done(e.code));
  });
}

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'fastpath-'));
  proxy = await dockerProxy(dir);
  // runc here whatever SANDPIT_TEST_RUNTIME says: the gVisor case names its runtime
  fast = await startStack({ env: { SANDPIT_DOCKER_HOST: `unix://${proxy.sock}` }, extraConf: 'default_runtime = runc' });
  slow = await startStack({ extraConf: 'fast_path = no\ndefault_runtime = runc' });
});
after(async () => {
  for (const [s, id] of made) await s?.api('DELETE', `/v1/sandboxes/${id}`, { headers: { 'if-match': null } }).catch(() => {});
  for (const [s, id] of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await fast?.stop();
  await slow?.stop();
  await proxy?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  assert.ok(checked > 0);
});

test('the same commands give the same answers through the fast path and through docker exec', async () => {
  const A = await createSandbox(fast), B = await createSandbox(slow);
  assert.match(await who(fast, A), /sandpit-helper serve 47011/);
  assert.equal(await who(slow, B), 'docker');
  const big = 'head -c 1100000 /dev/zero | tr "\\0" a; head -c 1100000 /dev/zero | tr "\\0" b >&2';
  const cases = [
    [['true']],
    [['false']],
    [['sh', '-c', 'exit 7']],
    [['sh', '-c', 'printf "a\\0b\\377"; printf err >&2; exit 3']],
    [['sh', '-c', 'kill -9 $$']],
    [['sh', '-c', 'kill -TERM $$']],
    [['sh', '-c', 'echo "$FOO|$HOME|$PATH|$HOSTNAME"; id; umask; pwd; ls -l /proc/self/fd | wc -l'], { env: { FOO: 'bar baz' } }],
    [['sh', '-c', 'env | grep -v -e ^SANDPIT_EXEC= -e ^HOSTNAME= | sort']],
    [['sh', '-c', 'pwd'], { workingDir: '/tmp' }],
    [['sh', '-c', 'cat; echo; [ -t 0 ] || echo notty'], {}],
    [['sh', '-c', big]],
    [['no-such-program']],
    [['sh', '-c', 'echo x'], { workingDir: '/no/such/dir' }],
    [['sh', '-c', 'echo x'], { workingDir: '/proc' }],
    [['sh', '-c', 'sleep 3 & echo bg']],
  ];
  for (const [cmd, extra] of cases) {
    const a = await execRaw(fast, A, { cmd, ...extra });
    const b = await execRaw(slow, B, { cmd, ...extra });
    assert.equal(a.status, b.status, `${JSON.stringify(cmd)}: ${a.text} vs ${b.text}`);
    if (a.status !== 200) {
      assert.equal(a.json.code, b.json.code, `${JSON.stringify(cmd)}: ${a.text} vs ${b.text}`);
      assert.equal(a.json.message, b.json.message, `${JSON.stringify(cmd)}`);
      continue;
    }
    assert.deepEqual(a.json, b.json, `${JSON.stringify(cmd)} ${JSON.stringify(extra ?? {})}`);
  }
});

test('the fast path is used: ten commands make no ten docker execs, and move expireTime', async () => {
  const A = await createSandbox(fast);
  await exec(fast, A, ['true']); // the serving helper is started here (one docker exec)
  const expiry = async () => (await call(fast, 'GET', '/v1/sandboxes/{sandbox}', { sandbox: A })).json.effectiveFeatures.timeouts.expiresAt;
  const before0 = await expiry();
  await new Promise((r) => setTimeout(r, 1100));
  const n0 = execCreates();
  for (let i = 0; i < 10; i++) {
    const r = await exec(fast, A, ['sh', '-c', `echo ${i}`]);
    assert.equal(b64(r.stdout), `${i}\n`);
  }
  // at most the keeper's expiry writes (deferred, a few seconds apart)
  assert.ok(execCreates() - n0 <= 3, `docker execs: ${execCreates() - n0}`);
  const after0 = await expiry();
  assert.ok(Date.parse(after0) > Date.parse(before0), `${before0} -> ${after0}`);
});

test('files and output reads through the fast path agree with docker exec', async () => {
  const A = await createSandbox(fast), B = await createSandbox(slow);
  const data = Buffer.alloc(300000, 0);
  for (let i = 0; i < data.length; i++) data[i] = (i * 7) & 255;
  for (const [s, id] of [[fast, A], [slow, B]]) {
    const w = await ep(s, id, 'PUT', '/v1/files/content', { query: { path: '/tmp/f.bin', mode: 0o640 }, rawBody: data, headers: { 'content-type': 'application/octet-stream' } });
    assert.equal(w.status, 200, w.text);
    const r = await ep(s, id, 'GET', '/v1/files/content', { query: { path: '/tmp/f.bin' } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.raw, data);
  }
  const sa = await ep(fast, A, 'GET', '/v1/files/stat', { query: { path: '/tmp/f.bin' } });
  const sb = await ep(slow, B, 'GET', '/v1/files/stat', { query: { path: '/tmp/f.bin' } });
  assert.deepEqual(sa.json, sb.json);
  const na = await ep(fast, A, 'GET', '/v1/files/content', { query: { path: '/tmp/nope' } });
  const nb = await ep(slow, B, 'GET', '/v1/files/content', { query: { path: '/tmp/nope' } });
  assert.equal(na.status, 404);
  assert.deepEqual(na.json, nb.json);
  // a durable process's output, read back
  const outs = [];
  for (const [s, id] of [[fast, A], [slow, B]]) {
    const p = await ep(s, id, 'POST', '/v1/processes', { body: { cmd: ['sh', '-c', 'echo one; echo two >&2'] } });
    assert.equal(p.status, 201, p.text);
    const params = { process: p.json.uid };
    await waitFor(async () => (await ep(s, id, 'GET', '/v1/processes/{process}', { params })).json?.state === 'exited', 30000);
    const o = await ep(s, id, 'GET', '/v1/processes/{process}/output', { params, query: { resumeFrom: 0 } });
    assert.equal(o.status, 200, o.text);
    outs.push(o.json.chunks.map((c) => [c.stream, c.data]).sort());
  }
  assert.equal(outs[0].length, 2, JSON.stringify(outs));
  assert.deepEqual(outs[0], outs[1]);
});

test('the serving helper killed: the next command still answers (restarted); its port held: docker exec answers', async () => {
  const A = await createSandbox(fast);
  assert.match(await who(fast, A), /serve 47011/);
  // the sandbox's code kills it (the same uid): the listener, a child of
  // PID 1 (this very command's connection goes on to its end)
  const k = await exec(fast, A, ['sh', '-c', KILL_SERVER]);
  assert.equal(b64(k.stdout), 'killed\n', JSON.stringify(k));
  const r = await exec(fast, A, ['sh', '-c', 'echo again']);
  assert.equal(b64(r.stdout), 'again\n');
  assert.match(await who(fast, A), /serve 47011/);
  // a program of the sandbox's own holds the port (a durable process,
  // out of the killer's reach): no helper can serve, docker exec does.
  // It binds once the helper is killed (until then its bind fails and it
  // tries again), then one persistent listener (busybox nc -ll -e) holds
  // it, never a loop of one-shot ones: between two of those the port is
  // free, a probe is refused, and a helper sandpit starts may take it
  // (the test failed so under load)
  const p = await ep(fast, A, 'POST', '/v1/processes', { body: { cmd: ['sh', '-c', `until nc -ll -p ${PORT} -e true 2>/dev/null; do sleep 0.1; done`] } });
  assert.equal(p.status, 201, p.text);
  assert.equal(b64((await exec(fast, A, ['sh', '-c', KILL_SERVER])).stdout), 'killed\n');
  const ip = await ipOf(A);
  await waitFor(async () => (await talk(ip, PORT, null, 1000)).data.length === 0 &&
    (await talk(ip, PORT, null, 1000)).how !== 'ECONNREFUSED', 20000);
  const d = await exec(fast, A, ['sh', '-c', 'echo through docker']);
  assert.equal(b64(d.stdout), 'through docker\n');
  assert.equal(await who(fast, A), 'docker');
});

test('no other sandbox reaches the helper; a peer without the secret gets the hello and nothing more', async () => {
  const A = await createSandbox(fast), B = await createSandbox(fast);
  assert.match(await who(fast, A), /serve 47011/);
  const ip = await ipOf(A);
  // from this host: the hello, then a wrong proof is answered by the end
  const hello = await talk(ip, PORT, null, 1500);
  assert.equal(hello.data.subarray(0, 4).toString(), 'SPH1', hello.how);
  // a wrong proof followed by a well-formed request: nothing runs
  const wrong = await talk(ip, PORT, Buffer.concat([Buffer.alloc(48, 7), request(['sh', '-c', 'echo pwned >/tmp/pwned'])]), 3000);
  // closed (a reset when our unread request was still queued there)
  assert.ok(['end', 'ECONNRESET'].includes(wrong.how), wrong.how);
  assert.equal(wrong.data.length, 21 + wrong.data[20], `only the hello: ${wrong.data.length} bytes`);
  const pw = await exec(fast, A, ['sh', '-c', 'cat /tmp/pwned 2>/dev/null; echo end']);
  assert.equal(b64(pw.stdout), 'end\n');
  // a peer that says nothing is dropped within seconds
  const mute = await talk(ip, PORT, null, 6000);
  assert.equal(mute.how, 'end');
  // from the other sandbox: not even a connection (ICC is off)
  const r = await exec(fast, B, ['sh', '-c', `nc -w 3 ${ip} ${PORT} </dev/null | head -c 4; echo "rc=$?"`]);
  assert.doesNotMatch(b64(r.stdout), /SPH1/);
  // nor a preview URL: the port cannot be published
  const pub = await call(fast, 'POST', '/v1/sandboxes/{sandbox}/ports', { sandbox: A }, { body: { port: { number: PORT } } });
  assert.equal(pub.status, 400, pub.text);
  assert.match(pub.json.message, /47011/);
  // and the network says so
  const c = await containerOf(B);
  const netName = Object.keys(c.NetworkSettings.Networks)[0];
  const n = (await docker('GET', `/networks/${netName}`)).json;
  assert.equal(n.Options['com.docker.network.bridge.enable_icc'], 'false');
});

test('an isolated gVisor sandbox uses docker exec; answers are the same', async (t) => {
  const info = (await docker('GET', '/info')).json;
  if (!info.Runtimes?.['runsc-isolated']) return t.skip('runsc-isolated is not registered with dockerd');
  const c = await fast.api('POST', '/api/sandbox.create', { body: { template: 'alpine', runtime: 'gvisor' } });
  assert.equal(c.status, 200, c.text);
  made.push([fast, c.json.sandboxId]);
  const r = await fast.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: WHO } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.stdout.trim(), 'docker');
  const e = await fast.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: 'echo hi; exit 4' } });
  assert.equal(e.json.exitCode, 4);
  assert.equal(e.json.stdout, 'hi\n');
});

test('an internet gVisor sandbox uses docker exec too (the fast path is runc only for now)', async (t) => {
  const info = (await docker('GET', '/info')).json;
  if (!info.Runtimes?.['runsc-internet']) return t.skip('runsc-internet is not registered with dockerd');
  const c = await fast.api('POST', '/api/sandbox.create', { body: { template: 'alpine', runtime: 'gvisor', networkMode: 'internet' } });
  assert.equal(c.status, 200, c.text);
  made.push([fast, c.json.sandboxId]);
  const r = await fast.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: WHO } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.stdout.trim(), 'docker');
  const e = await fast.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: 'echo hi; echo err >&2; exit 4' } });
  assert.deepEqual([e.json.exitCode, e.json.stdout, e.json.stderr], [4, 'hi\n', 'err\n']);
});

test('a fast-path command that outlives the sandbox\'s timeout keeps it alive, as the watcher does for docker exec', async () => {
  const c = await fast.api('POST', '/api/sandbox.create', { body: { template: 'alpine', timeoutMs: 10000 } });
  assert.equal(c.status, 200, c.text);
  made.push([fast, c.json.sandboxId]);
  const id = c.json.sandboxId;
  const w = await fast.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: WHO } });
  assert.match(w.json.stdout, /serve 47011/);
  // 25 s of a command in a sandbox idle-ending after 10 s: its container's
  // own watcher would stop it at its expiry unless sandpit moved it
  const r = await fast.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: 'sleep 25; echo alive', timeoutMs: 60000 }, timeoutMs: 90000 });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual([r.json.exitCode, r.json.stdout], [0, 'alive\n'], r.text);
  const one = await fast.api('GET', '/api/sandbox.one', { query: { sandboxId: id } });
  assert.equal(one.json.status, 'running');
});

test('a timed-out command: the same answer through both paths, and nothing of it left running', async () => {
  const answers = [];
  for (const s of [fast, slow]) {
    const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
    assert.equal(c.status, 200, c.text);
    made.push([s, c.json.sandboxId]);
    const r = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: 'echo start; (sleep 4343 &); sleep 4242', timeoutMs: 2000 }, timeoutMs: 60000 });
    assert.equal(r.status, 200, r.text);
    answers.push(r.json);
    const left = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: 'for f in /proc/[0-9]*/cmdline; do tr "\\0" " " <$f; echo; done | grep -c "^sleep 4[23][34][23]" || true' } });
    assert.equal(left.json.stdout.trim(), '0', `${s === fast ? 'fast' : 'slow'}: ${left.json.stdout}`);
    const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: c.json.sandboxId } });
    assert.equal(one.json.status, 'running');
  }
  assert.equal(answers[0].timedOut, true);
  assert.equal(answers[0].exitCode, 124);
  assert.deepEqual(answers[0], answers[1]);
});
