// RELIABILITY A10: watcher tampering. Code in a sandbox kills every sleep it
// can, SIGSTOPs and SIGKILLs PID 1 and the main sleep, writes /.sandpit and
// burns CPU: the deadline still holds (also with every part of sandpit
// stopped), the inactivity expiry still holds when nothing sandpit started
// is running, and the record reads killed. The processes that enforce the
// lifetime run as the keeper uid (65533), out of the sandbox user's reach.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, waitFor } from './lib/stack.mjs';
import { docker, diedAt } from './lib/docker.mjs';

const t0 = Date.now();

// Runs in the background as the sandbox user (setsid, output to /dev/null),
// so the exec that starts it ends at once. (Not nohup: busybox's nohup
// child dies with the exec.)
// The main sleep (parent PID 1) is stopped, not killed (its end would end
// the container); every other sleep (the watcher's) is killed, and a shell
// whose parent is a sleep (the watcher) is stopped; PID 1 is stopped and
// killed; /.sandpit is rewritten and removed.
const TAMPER = `
while :; do
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}; [ "$p" = "$$" ] && continue
    n=; pp=; read -r n <$d/comm 2>/dev/null
    { while read -r k v _; do [ "$k" = PPid: ] && pp=$v && break; done <$d/status; } 2>/dev/null
    pn=; read -r pn </proc/$pp/comm 2>/dev/null
    case $n in
      sleep) if [ "$pp" = 1 ]; then kill -STOP $p 2>/dev/null; else kill -9 $p 2>/dev/null; fi;;
      sh) [ "$pn" = sleep ] && kill -STOP $p 2>/dev/null;;
    esac
  done
  kill -STOP 1 2>/dev/null; kill -9 1 2>/dev/null
  echo 9999999999 >/.sandpit/expires 2>/dev/null
  echo 99999 >/.sandpit/timeout 2>/dev/null
done`;
const BUSY = 'while :; do :; done';
// Only moves the expiry, once a second, and is otherwise idle.
const EXPIRY_ONLY = 'while :; do echo 9999999999 >/.sandpit/expires; echo 99999 >/.sandpit/timeout; sleep 1; done';

function background(script) {
  return `setsid sh -c '${script.replace(/'/g, `'\\''`)}' >/dev/null 2>&1 </dev/null &`;
}

async function labelled(id) {
  const f = encodeURIComponent(JSON.stringify({ label: [`sandpit.sandboxId=${id}`] }));
  const r = await docker('GET', `/containers/json?all=1&filters=${f}`);
  return r.json;
}

// Removes what a failed test leaves running (found by label).
async function cleanup(id) {
  for (const c of await labelled(id)) await docker('DELETE', `/containers/${c.Id}?force=true`);
}

async function tamper(s, sb, { script = TAMPER, busy = true } = {}) {
  const r = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: sb.sandboxId,
    cmd: background(script) + (busy ? background(BUSY) : '') + 'echo started' } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.stdout, 'started\n');
  // the tampering runs (the container still lives a moment later)
  assert.equal((await labelled(sb.sandboxId)).length, 1);
}

test('A10: tampering with the keeper, PID 1 and /.sandpit does not keep a sandbox past its deadline', async () => {
  const s = await startStack();
  let sb;
  try {
    const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', timeoutMs: 10000, maxLifetimeMs: 20000 } });
    assert.equal(c.status, 200, c.text);
    sb = c.json;
    await tamper(s, sb);
    // a command sandpit started keeps running: the sandbox counts as active
    // (so only the deadline can end it) until the deadline ends it
    // (not a sleep: the tampering kills those)
    const longExec = s.api('POST', '/api/sandbox.exec', { body: { sandboxId: sb.sandboxId, cmd: 'while :; do :; done', timeoutMs: 90000 } });
    const dl = Date.parse(sb.deadlineAt);
    const gone = await diedAt(sb.containerId, t0, dl - Date.now() + 15000);
    assert.ok(gone - dl < 3000, `ended ${gone - dl} ms after deadlineAt`);
    assert.ok(gone - dl > -2000, `ended ${dl - gone} ms before deadlineAt`);
    await waitFor(async () => (await labelled(sb.sandboxId)).length === 0, 10000);
    await longExec;
    const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.sandboxId } });
    assert.equal(one.json.status, 'killed');
  } finally {
    if (sb) await cleanup(sb.sandboxId);
    await s.stop();
  }
});

test('A10: a sandbox that only tampers with its expiry ends soon after expiresAt', async () => {
  const s = await startStack();
  let sb;
  try {
    const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', timeoutMs: 10000, maxLifetimeMs: 120000 } });
    assert.equal(c.status, 200, c.text);
    sb = c.json;
    await tamper(s, sb, { script: EXPIRY_ONLY, busy: false });
    const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.sandboxId } });
    const ex = Date.parse(one.json.expiresAt);
    // nothing reads the record meanwhile: the watcher (as the keeper) ends it
    const gone = await diedAt(sb.containerId, t0, ex - Date.now() + 30000);
    assert.ok(gone - ex > -1000 && gone - ex < 10000, `ended ${gone - ex} ms from expiresAt`);
    const after = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.sandboxId } });
    assert.equal(after.json.status, 'killed');
  } finally {
    if (sb) await cleanup(sb.sandboxId);
    await s.stop();
  }
});

test('A10: with every part of sandpit stopped, the deadline holds against the tampering', async () => {
  const s = await startStack();
  let stopped = false, sb;
  try {
    const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', timeoutMs: 60000, maxLifetimeMs: 20000 } });
    assert.equal(c.status, 200, c.text);
    sb = c.json;
    await tamper(s, sb);
    await s.stop(); // nginx, sandpitd, Redis: no reaper, no catch-up
    stopped = true;
    const dl = Date.parse(sb.deadlineAt);
    const gone = await diedAt(sb.containerId, t0, dl - Date.now() + 15000);
    assert.ok(Math.abs(gone - dl) < 1500, `ended ${gone - dl} ms from deadlineAt`);
  } finally {
    if (sb) await cleanup(sb.sandboxId);
    if (!stopped) await s.stop();
  }
});
