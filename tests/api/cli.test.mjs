// The sandpit command line against a real stack: build/sandpit with
// SANDPIT_URL, SANDPIT_KEY and SANDPIT_CA. create → exec (output on the
// right streams, the command's exit code) → cp both ways with binary
// content → ls → timeout → kill → rm; --json parses; --help works; errors
// are messages with a non-zero status.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile, chmod } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { binDir, startStack } from './lib/stack.mjs';

let stack;
let tmp;
let env;
const created = [];

/** Runs build/sandpit; resolves to { code, stdout, stderr } (stdout as a Buffer with raw). */
function sandpit(args, { raw = false, input, extraEnv } = {}) {
  return new Promise((resolve, reject) => {
    const child = execFile(path.join(binDir, 'sandpit'), args, {
      env: { ...env, ...extraEnv },
      encoding: raw ? 'buffer' : 'utf8',
      maxBuffer: 64 << 20,
      timeout: 120000,
    }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return reject(err);
      resolve({ code: err ? err.code : 0, stdout, stderr: stderr.toString() });
    });
    if (input !== undefined) child.stdin.end(input);
  });
}

before(async () => {
  stack = await startStack();
  tmp = await mkdtemp(path.join(os.tmpdir(), 'sandpit-cli-'));
  const ca = path.join(tmp, 'ca.pem');
  await writeFile(ca, stack.ca);
  // nothing of the test runner's environment decides where the CLI goes
  env = { PATH: process.env.PATH, SANDPIT_URL: stack.url, SANDPIT_KEY: stack.key, SANDPIT_CA: ca };
});

after(async () => {
  for (const id of created) {
    await stack?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  }
  await stack?.stop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

test('--help for the whole and for each command', async () => {
  const all = await sandpit(['--help']);
  assert.equal(all.code, 0);
  for (const c of ['create', 'list', 'show', 'exec', 'cp', 'ls', 'timeout', 'kill', 'rm', 'templates', 'keys create']) {
    assert.match(all.stdout, new RegExp(`\\b${c}\\b`), c);
  }
  for (const c of ['create', 'list', 'show', 'exec', 'cp', 'ls', 'timeout', 'kill', 'rm', 'templates']) {
    const r = await sandpit([c, '--help']);
    assert.equal(r.code, 0, `${c} --help: ${r.stderr}`);
    assert.match(r.stdout, new RegExp(`^usage: sandpit ${c}`), c);
    const h = await sandpit(['help', c]);
    assert.equal(h.stdout, r.stdout);
  }
  assert.match((await sandpit(['create', '--help'])).stdout, /--env-file FILE/);
  const bad = await sandpit(['frobnicate']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /no command 'frobnicate'/);
});

test('usage errors exit 2; a missing SANDPIT_URL is explained', async () => {
  assert.equal((await sandpit(['create'])).code, 2);
  assert.equal((await sandpit(['exec', 'abc'])).code, 2);
  assert.equal((await sandpit(['cp', 'a', 'b'])).code, 2);
  const r = await sandpit(['list'], { extraEnv: { SANDPIT_URL: '' } });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /SANDPIT_URL/);
});

test('templates and list, human and --json', async () => {
  const t = await sandpit(['templates']);
  assert.equal(t.code, 0, t.stderr);
  assert.match(t.stdout, /^alpine\s+\S+/m);
  const tj = await sandpit(['templates', '--json']);
  assert.ok(JSON.parse(tj.stdout).some((x) => x.name === 'python'));
  const l = await sandpit(['--json', 'list']);
  assert.equal(l.code, 0, l.stderr);
  assert.ok(Array.isArray(JSON.parse(l.stdout)));
});

test('list and show escape control and bidirectional characters in names (issue 12)', async () => {
  const c = await stack.api('POST', '/api/sandbox.create', { body: { template: 'alpine', name: 'plain' } });
  assert.equal(c.status, 200, c.text);
  const id = c.json.sandboxId;
  created.push(id);
  // the API refuses such a name now; an older record may still hold one
  const hostile = '\u001b[2J\r\nevil\u202etxt\u0085\u007f';
  await new Promise((resolve, reject) => execFile('redis-cli', ['-s', path.join(stack.dir, 'redis.sock'),
    'HSET', `sp:{default}:sb:${id}`, 'name', hostile], (e, out) => (e ? reject(e) : resolve(out))));
  for (const args of [['list'], ['show', id]]) {
    const r = await sandpit(args);
    assert.equal(r.code, 0, r.stderr);
    const line = r.stdout.split('\n').find((l) => l.includes('evil'));
    assert.ok(line, `${args[0]} shows the sandbox: ${r.stdout}`);
    assert.doesNotMatch(r.stdout, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u,
      `${args[0]} prints no control or bidi character`);
    assert.ok(line.includes('\\x1B[2J\\x0D\\x0Aevil\\u202Etxt\\x85\\x7F'), `${args[0]}: ${JSON.stringify(line)}`);
  }
  // --json gives the API's answer as it came (JSON escapes the controls)
  const j = await sandpit(['--json', 'show', id]);
  assert.equal(JSON.parse(j.stdout).name, hostile);
});

test('the round trip: create, exec with its exit code, cp both ways, ls, timeout, kill, rm', async () => {
  const envFile = path.join(tmp, 'app.env');
  await writeFile(envFile, '# comment\nGREETING=hello world\n');
  const c = await sandpit(['create', '--template', 'alpine', '--name', 'cli-test', '--timeout', '2m',
    '--memory', '256', '--cpu', '0.5', '--env-file', envFile, '--env', 'EXTRA=1', '--json']);
  assert.equal(c.code, 0, c.stderr);
  const sb = JSON.parse(c.stdout);
  created.push(sb.sandboxId);
  const id = sb.sandboxId;
  assert.equal(sb.status, 'running');
  assert.equal(sb.name, 'cli-test');
  assert.equal(sb.timeoutMs, 120000);
  assert.equal(sb.memoryMb, 256);
  assert.equal(sb.cpu, 0.5);
  assert.equal(sb.envVars, undefined);

  // exec: streams as they are, exit code passed through
  const e = await sandpit(['exec', id, '--', 'sh', '-c', 'echo hi; echo "to err" >&2; exit 3']);
  assert.equal(e.code, 3);
  assert.equal(e.stdout, 'hi\n');
  assert.equal(e.stderr, 'to err\n');
  const env1 = await sandpit(['exec', id, '--', 'echo "$GREETING/$EXTRA/$X" | tr a-z A-Z']);
  assert.equal(env1.code, 0, env1.stderr);
  assert.equal(env1.stdout, 'HELLO WORLD/1/\n');
  const env2 = await sandpit(['exec', '--env', 'X=y z', '--cwd', '/tmp', id, '--', 'sh', '-c', 'echo "$X" "$(pwd)"']);
  assert.equal(env2.stdout, 'y z /tmp\n');
  const quoted = await sandpit(['exec', id, '--', 'printf', '%s|', "it's", 'a b', '$HOME']);
  assert.equal(quoted.stdout, "it's|a b|$HOME|");
  const ej = await sandpit(['exec', '--json', id, '--', 'sh', '-c', 'echo out; exit 5']);
  assert.equal(ej.code, 5);
  assert.deepEqual(JSON.parse(ej.stdout),
    { stdout: 'out\n', stderr: '', exitCode: 5, timedOut: false, truncated: false });

  // cp up and down, binary
  const data = Buffer.concat([randomBytes(200000), Buffer.from([0, 0xff, 0xfe, 0x80, 0])]);
  const local = path.join(tmp, 'data.bin');
  await writeFile(local, data);
  await chmod(local, 0o750);
  const up = await sandpit(['cp', local, `${id}:/home/user/in/data.bin`]);
  assert.equal(up.code, 0, up.stderr);
  const sum = await sandpit(['exec', id, '--', 'sh', '-c', 'wc -c < /home/user/in/data.bin; stat -c %a /home/user/in/data.bin']);
  assert.equal(sum.stdout.replace(/ +/g, ''), `${data.length}\n750\n`);
  const back = path.join(tmp, 'back.bin');
  const down = await sandpit(['cp', `${id}:/home/user/in/data.bin`, back]);
  assert.equal(down.code, 0, down.stderr);
  assert.deepEqual(await readFile(back), data);
  // into a directory keeps the name; '-' is stdout
  const dir = await sandpit(['cp', `${id}:/home/user/in/data.bin`, tmp, '--json']);
  assert.equal(dir.code, 0, dir.stderr);
  assert.deepEqual(JSON.parse(dir.stdout), { path: '/home/user/in/data.bin', size: data.length, local: path.join(tmp, 'data.bin') });
  const toStdout = await sandpit(['cp', `${id}:/home/user/in/data.bin`, '-'], { raw: true });
  assert.deepEqual(toStdout.stdout, data);
  const fromStdin = await sandpit(['cp', '--mode', '600', '-', `${id}:/home/user/in/`], { input: Buffer.from([1, 2, 3]) });
  assert.equal(fromStdin.code, 0, fromStdin.stderr);
  const missing = await sandpit(['cp', `${id}:/home/user/none`, back]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /File not found/);
  assert.equal((await stat(back)).size, data.length, 'a failed download leaves the file alone');

  // ls
  const ls = await sandpit(['ls', id, '/home/user/in']);
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stdout, /data\.bin/);
  assert.match(ls.stdout, /stdin/);
  const lsj = await sandpit(['ls', '--json', id]);
  assert.ok(JSON.parse(lsj.stdout).entries.some((x) => x.name === 'in' && x.type === 'directory'));

  // show, timeout
  const show = await sandpit(['show', id]);
  assert.match(show.stdout, new RegExp(`^sandboxId\\s+${id}$`, 'm'));
  const to = await sandpit(['timeout', id, '90s', '--json']);
  assert.equal(to.code, 0, to.stderr);
  assert.equal(JSON.parse(to.stdout).timeoutMs, 90000);
  const l = await sandpit(['list']);
  assert.match(l.stdout, new RegExp(`^${id}\\s+running\\s+alpine\\s+cli-test`, 'm'));

  // kill, then the API's message and a failure status
  const k = await sandpit(['kill', id]);
  assert.equal(k.code, 0, k.stderr);
  assert.equal(k.stdout, `${id}\n`);
  const dead = await sandpit(['exec', id, '--', 'true']);
  assert.equal(dead.code, 1);
  assert.match(dead.stderr, /Sandbox is killed/);
  const r = await sandpit(['rm', id]);
  assert.equal(r.code, 0, r.stderr);
  created.length = 0;
  const gone = await sandpit(['show', id]);
  assert.equal(gone.code, 1);
  assert.equal(gone.stderr, 'sandpit: Sandbox not found\n');
});

test('a wrong key or an untrusted certificate fails with a message', async () => {
  const wrong = await sandpit(['list'], { extraEnv: { SANDPIT_KEY: 'nope' } });
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /Invalid API key/);
  const noCa = await sandpit(['list'], { extraEnv: { SANDPIT_CA: '', CURL_CA_BUNDLE: '', SSL_CERT_FILE: '' } });
  assert.equal(noCa.code, 1);
  assert.match(noCa.stderr, /certificate/i);
  // ... and says what to do about it (issue 13)
  assert.match(noCa.stderr, /set SANDPIT_CA to its certificate/);
});

test('exec streams stdout as the command prints it', { timeout: 120000 }, async () => {
  const id = (await sandpit(['create', '--template', 'alpine'])).stdout.trim();
  created.push(id);
  const t0 = Date.now();
  const seen = [];
  const code = await new Promise((resolve, reject) => {
    const child = execFile(path.join(binDir, 'sandpit'),
      ['exec', id, '--', 'for i in 1 2 3; do echo line $i; sleep 1; done'], { env, timeout: 60000 });
    child.stdout.on('data', (d) => seen.push({ t: Date.now() - t0, d: d.toString() }));
    child.on('error', reject);
    child.on('exit', (c) => resolve(c));
  });
  const end = Date.now() - t0;
  assert.equal(code, 0);
  assert.equal(seen.map((x) => x.d).join(''), 'line 1\nline 2\nline 3\n');
  // the first lines arrive while the command still runs, not all at the end
  assert.ok(seen[0].t < end - 700, `first output at ${seen[0].t} ms, exit at ${end} ms`);
  assert.ok(seen.length >= 2, `${seen.length} piece(s)`);
});

test('exec -i sends stdin to the command; create --runtime', { timeout: 120000 }, async () => {
  const id = (await sandpit(['create', '--template', 'alpine', '--runtime', 'runc'])).stdout.trim();
  created.push(id);
  assert.equal(JSON.parse((await sandpit(['--json', 'show', id])).stdout).runtime, 'runc');
  const bad = await sandpit(['create', '--template', 'alpine', '--runtime', 'kata']);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /runtime/);
  const data = randomBytes(100000);
  const r = await sandpit(['exec', '-i', id, '--', 'sha256sum; ls /tmp/.sandpit-stdin-* 2>/dev/null | wc -l'], { input: data });
  assert.equal(r.code, 0, r.stderr);
  const { createHash } = await import('node:crypto');
  assert.equal(r.stdout.split(/\s+/)[0], createHash('sha256').update(data).digest('hex'));
  assert.match(r.stdout, /\n0\n$/, 'the stdin file is gone once the command has it');
  const words = await sandpit(['exec', '--stdin', id, '--', 'wc', '-l'], { input: 'a\nb\nc\n' });
  assert.equal(words.stdout.trim(), '3');
  // without -i the command's stdin is empty, whatever ours holds
  const none = await sandpit(['exec', id, '--', 'wc -c'], { input: 'ignored' });
  assert.equal(none.stdout.trim(), '0');
});

test('the admin commands still live in the same binary (-c CONFIG)', async () => {
  const { stdout } = await stack.cli('keys', 'create', '--org', 'cli-admin-org');
  assert.match(stdout.trim(), /^\S{20,}$/);
  const r = await sandpit(['--json', 'list'], { extraEnv: { SANDPIT_KEY: stdout.trim() } });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), []);
});
