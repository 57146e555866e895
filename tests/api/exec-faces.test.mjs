// One core, two faces (issue 14): the exec rules live in the core, so
// POST /api/sandbox.exec and the /sandbox-exec WebSocket give the same
// answer for the same bad input: a cwd that does not exist, a file as cwd,
// an env value longer than the kernel passes to a program. REST answers a
// 400 with the message and the field; the WebSocket an error message with
// the same text (README "Streaming exec"), no output and no exit, and the
// connection stays usable. Before, the WebSocket passed the runtime's raw
// `OCI runtime exec failed ...` as stdout with exit 126 for a bad cwd, and
// a long env value reached neither face's caller as an error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { waitFor } from './lib/stack.mjs';
import { sandboxStack } from './lib/suite.mjs';

let s;
const { create, exec } = sandboxStack((stack) => { s = stack; });
const gvisor = process.env.SANDPIT_TEST_RUNTIME === 'gvisor';

/** A ready /sandbox-exec connection; .run(exec) resolves to the messages
 * of one exec up to its exit or error. */
async function connect(sid) {
  const url = s.url.replace(/^https/, 'wss') + `/sandbox-exec?sandboxId=${encodeURIComponent(sid)}`;
  const ws = new WebSocket(url, { ca: s.ca, headers: { 'x-api-key': s.key } });
  const msgs = [];
  ws.on('message', (d) => msgs.push(JSON.parse(d.toString())));
  ws.on('error', () => {});
  const closed = new Promise((resolve) => ws.once('close', (code) => resolve(code)));
  await waitFor(() => msgs.find((m) => m.type === 'ready'), 20000, 10);
  return {
    ws,
    closed,
    async run(e) {
      const from = msgs.length;
      ws.send(JSON.stringify({ type: 'exec', ...e }));
      await waitFor(() => msgs.slice(from).find((m) => m.type === 'exit' || m.type === 'error'), 30000, 10);
      return msgs.slice(from);
    },
  };
}

const big = 'x'.repeat(200000);
const cases = [
  { what: 'a cwd that does not exist', in: { cmd: 'echo ran', cwd: '/nonexistent' },
    message: 'cwd: /nonexistent does not exist in the sandbox', field: 'cwd' },
  // runsc (20221219) enters a file as cwd: that case is runc's only (exec.test.mjs)
  { what: 'a file as cwd', in: { cmd: 'echo ran', cwd: '/etc/passwd' },
    message: 'cwd: /etc/passwd is not a directory', field: 'cwd', runcOnly: true },
  { what: 'an env value past 128 KiB', in: { cmd: 'echo ran', env: { BIG: big } },
    message: 'env.BIG: KEY=value must be at most 131071 bytes', field: 'env' },
];

test('REST and WebSocket exec give the same error for the same bad input', async (t) => {
  const sb = await create({ template: 'alpine' });
  const c = await connect(sb.sandboxId);
  t.after(() => c.ws.terminate());
  for (const k of cases) {
    if (k.runcOnly && gvisor) continue;
    const r = await exec(sb.sandboxId, k.in.cmd, { ...k.in });
    assert.equal(r.status, 400, `${k.what}: REST ${r.text}`);
    assert.equal(r.json.message, k.message, k.what);
    assert.deepEqual(r.json.issues[0].path, [k.field], k.what);
    const m = await c.run(k.in);
    assert.deepEqual(m, [{ type: 'error', message: k.message }], `${k.what}: WebSocket ${JSON.stringify(m)}`);
  }
  // the connection is still usable, and a good exec answers alike both ways
  const m = await c.run({ cmd: 'pwd', cwd: '/tmp' });
  assert.deepEqual(m, [{ type: 'stdout', data: '/tmp\n' }, { type: 'exit', exitCode: 0, timedOut: false }]);
  const r = await exec(sb.sandboxId, 'pwd', { cwd: '/tmp' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.stdout, '/tmp\n');
});

test('an env variable of exactly 131071 bytes (KEY=value) reaches the command both ways', async (t) => {
  const sb = await create({ template: 'alpine' });
  const c = await connect(sb.sandboxId);
  t.after(() => c.ws.terminate());
  const env = { BIG: 'y'.repeat(131071 - 'BIG='.length) };
  const cmd = 'echo ${#BIG}';
  const r = await exec(sb.sandboxId, cmd, { env });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.stdout, '131067\n');
  assert.equal(r.json.exitCode, 0);
  const m = await c.run({ cmd, env });
  assert.deepEqual(m, [{ type: 'stdout', data: '131067\n' }, { type: 'exit', exitCode: 0, timedOut: false }]);
});

test('a command whose first output looks like the runtime\'s refusal is still output', async () => {
  // the core holds back a first piece of stdout that starts like the
  // runtime's refusal of cwd; a command that prints such a line itself,
  // even exiting 126, gets it back as output, over both faces
  const sb = await create({ template: 'alpine' });
  const c = await connect(sb.sandboxId);
  try {
    const cmd = "printf 'OCI runtime exec failed: chdir to cwd x\\n'; exit 126";
    const r = await exec(sb.sandboxId, cmd, { cwd: '/tmp' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.stdout, 'OCI runtime exec failed: chdir to cwd x\n');
    assert.equal(r.json.exitCode, 126);
    const m = await c.run({ cmd, cwd: '/tmp' });
    assert.deepEqual(m, [{ type: 'stdout', data: 'OCI runtime exec failed: chdir to cwd x\n' },
      { type: 'exit', exitCode: 126, timedOut: false }]);
  } finally {
    c.ws.terminate();
  }
});
