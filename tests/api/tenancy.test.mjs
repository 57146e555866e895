// Keys and organizations: every operation is scoped to the caller's org,
// identity comes only from nginx, and bad images fail cleanly.
import { test, before, after } from 'node:test';
import { execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { startStack } from './lib/stack.mjs';
import { docker, dockerExec, noShImage, removeNoShImage } from './lib/docker.mjs';
import { redisDump, allLogs } from './lib/inspect.mjs';

let s, other, sb;
before(async () => {
  s = await startStack();
  other = await s.newKey('other-org');
  const r = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
  assert.equal(r.status, 200, r.text);
  sb = r.json;
});
after(async () => {
  if (sb) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: sb.sandboxId } });
  await removeNoShImage();
  await s?.stop();
});

test("another org's sandbox id reads as not found", async () => {
  const q = { sandboxId: sb.sandboxId };
  assert.equal((await s.api('GET', '/api/sandbox.one', { query: q, key: other })).status, 404);
  for (const p of ['kill', 'remove']) {
    const r = await s.api('POST', `/api/sandbox.${p}`, { body: q, key: other });
    assert.equal(r.status, 404, p);
    assert.equal(r.json.message, 'Sandbox not found');
  }
  // the five sandbox-scoped procedures that touch the container: each 404,
  // and nothing happened (no file, no command, the deadline unchanged)
  const before = (await s.api('GET', '/api/sandbox.one', { query: q })).json;
  const tries = [
    ['POST', 'exec', { body: { ...q, cmd: 'touch /tmp/by-other-org' } }],
    ['POST', 'writeFile', { body: { ...q, path: '/tmp/written-by-other-org', content: 'x' } }],
    ['GET', 'readFile', { query: { ...q, path: '/etc/hostname' } }],
    ['GET', 'listFiles', { query: { ...q, path: '/tmp' } }],
    ['POST', 'setTimeout', { body: { ...q, timeoutMs: 20000 } }],
  ];
  for (const [m, p, o] of tries) {
    const r = await s.api(m, `/api/sandbox.${p}`, { ...o, key: other });
    assert.equal(r.status, 404, `${p}: ${r.text}`);
    assert.equal(r.json.message, 'Sandbox not found', p);
    assert.ok(!('stdout' in r.json) && !('content' in r.json) && !('entries' in r.json), `${p}: ${r.text}`);
  }
  const tmp = await dockerExec(sb.containerId, ['ls', '-A', '/tmp']);
  assert.ok(!/other-org/.test(tmp.stdout), `files appeared: ${tmp.stdout}`);
  const after = (await s.api('GET', '/api/sandbox.one', { query: q })).json;
  assert.equal(after.expiresAt, before.expiresAt, 'setTimeout by another org changed the expiry');
  const l = await s.api('GET', '/api/sandbox.list', { key: other });
  assert.equal(l.status, 200);
  assert.deepEqual(l.json, []);
  // still running for its owner
  assert.equal((await s.api('GET', '/api/sandbox.one', { query: q })).json.status, 'running');
});

test('no key, a bad key, and the Bearer form', async () => {
  const none = await s.api('GET', '/api/sandbox.list', { key: '' });
  assert.equal(none.status, 401);
  assert.equal(none.json.code, 'UNAUTHORIZED');
  const bad = await s.api('GET', '/api/sandbox.list', { key: 'sp_not-a-key' });
  assert.equal(bad.status, 401);
  const bearer = await s.api('GET', '/api/sandbox.list', { key: '', headers: { authorization: `Bearer ${s.key}` } });
  assert.equal(bearer.status, 200);
});

test('client-sent identity headers are ignored', async () => {
  const r = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.sandboxId }, key: other,
    headers: { 'x-sandpit-org': 'default', 'x-sandpit-perms': 'sandbox:read', 'sandpit-org': 'default' } });
  assert.equal(r.status, 404);
  const noKey = await s.api('GET', '/api/sandbox.list', { key: '', headers: { 'x-sandpit-org': 'default' } });
  assert.equal(noKey.status, 401);
});

test('an image without sh fails create, naming it, and leaves no container and no row', async () => {
  const img = await noShImage();
  const r = await s.api('POST', '/api/sandbox.create', { body: { image: img } });
  assert.equal(r.status, 400, r.text);
  assert.match(r.json.message, /lacks sh: sandbox images must include sh$/);
  // The caller got no id, so no "error" row is kept for it (issue 13): the
  // id is in the server's log only.
  const list = (await s.api('GET', '/api/sandbox.list')).json;
  assert.deepEqual(list.filter((x) => x.status === 'error'), []);
  const m = /sandbox (\S+): creation failed: .*lacks sh\b/.exec(await s.logTail('sandpitd.log', 400));
  assert.ok(m, 'the log names the failed creation');
  assert.equal((await s.api('GET', '/api/sandbox.one', { query: { sandboxId: m[1] } })).status, 404);
  const left = await docker('GET', '/containers/json?all=1&filters=' + encodeURIComponent(JSON.stringify({ label: [`sandpit.sandboxId=${m[1]}`] })));
  assert.deepEqual(left.json, []);
});

test('an image without sleep or date works: the keeper\'s sleep and clock are the helper\'s (issue 24 D7)', async (t) => {
  const made = [];
  t.after(() => { for (const img of made) try { execFileSync('docker', ['rmi', '-f', img], { stdio: 'ignore' }); } catch { /* gone */ } });
  const imgs = ['sandpit-test/nodate:latest'];
  const name = `sandpit-t24-nosleep-${process.pid}`, img = `sandpit-test/nosleep:t${process.pid}`;
  execFileSync('docker', ['run', '--name', name, '--network', 'none', '--entrypoint', '/bin/rm', 'sandpit-test/busybox:latest', '/bin/sleep', '/bin/date']);
  try {
    execFileSync('docker', ['commit', '--change', 'ENTRYPOINT []', '--change', 'CMD []', name, img], { stdio: 'ignore' });
  } finally {
    execFileSync('docker', ['rm', '-f', name], { stdio: 'ignore' });
  }
  made.push(img);
  imgs.push(img);
  for (const i of imgs) {
    const r = await s.api('POST', '/api/sandbox.create', { body: { image: i, timeoutMs: 10000 } });
    assert.equal(r.status, 200, `${i}: ${r.text}`);
    t.after(() => s.api('POST', '/api/sandbox.remove', { body: { sandboxId: r.json.sandboxId } }));
    const x = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: r.json.sandboxId, cmd: 'echo ok' } });
    assert.equal(x.json.stdout, 'ok\n', x.text);
  }
});

test('an image that cannot be pulled fails with 400 naming image', async () => {
  const r = await s.api('POST', '/api/sandbox.create', { body: { image: 'sandpit-test/does-not-exist:1' } });
  assert.equal(r.status, 400, r.text);
  assert.ok(r.json.message.includes('sandpit-test/does-not-exist:1'));
  const list = (await s.api('GET', '/api/sandbox.list')).json;
  assert.deepEqual(list.filter((x) => x.status === 'error'), []);
});

test('envVars are sealed in Redis, never in clear', async () => {
  const canary = 'CANARY_' + Math.random().toString(36).slice(2);
  const r = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', envVars: `SECRET=${canary}` } });
  assert.equal(r.status, 200);
  assert.ok(!r.text.includes(canary));
  const dump = redisDump(s);
  assert.ok(!dump.includes(canary), 'canary in Redis');
  assert.ok(dump.includes(r.json.sandboxId));
  const log = allLogs(s);
  assert.ok(!log.includes(canary), 'canary in logs');
  await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: r.json.sandboxId } });
});
