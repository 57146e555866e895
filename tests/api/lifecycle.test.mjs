// The seed's walk-through with template "python": create, one, list,
// templates, kill, remove — against the real stack (nginx, sandpitd,
// Redis, dockerd).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { startStack, waitFor } from './lib/stack.mjs';
import { docker, dockerExec } from './lib/docker.mjs';

let s;
before(async () => { s = await startStack(); });
after(async () => { await s?.stop(); });

test('walk-through: create, one, list, templates, kill, remove', async () => {
  const t = await s.api('GET', '/api/sandbox.templates');
  assert.equal(t.status, 200);
  const names = t.json.map((x) => x.name).sort();
  assert.deepEqual(names, ['alpine', 'base', 'bun', 'deno', 'go', 'java', 'node', 'php', 'python', 'ruby', 'rust']);
  const deno = t.json.find((x) => x.name === 'deno');
  assert.equal(deno.env.DENO_DIR.startsWith('/home/user'), true);

  const c = await s.api('POST', '/api/sandbox.create', {
    body: { template: 'python', name: 'agent-run-42', cpu: 1, memoryMb: 512, timeoutMs: 300000,
      networkMode: 'isolated', envVars: 'OPENAI_API_KEY=sk-canary-walkthrough' },
  });
  assert.equal(c.status, 200, c.text);
  const sb = c.json;
  assert.equal(sb.status, 'running');
  assert.match(sb.sandboxId, /^[a-z0-9]{20}$/);
  assert.equal(sb.name, 'agent-run-42');
  assert.equal(sb.template, 'python');
  assert.equal(sb.organizationId, 'default');
  assert.equal(sb.user, '1000:1000');
  assert.equal(sb.workdir, '/home/user');
  assert.ok(sb.containerId);
  assert.ok(!('envVars' in sb));
  assert.ok(!c.text.includes('sk-canary'));
  const created = Date.parse(sb.createdAt), exp = Date.parse(sb.expiresAt), dl = Date.parse(sb.deadlineAt);
  assert.ok(Math.abs(exp - created - 300000) < 2000, 'expiresAt = createdAt + timeoutMs');
  assert.ok(Math.abs(dl - created - 86400000) < 2000, 'deadlineAt = createdAt + 24 h');

  const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.sandboxId } });
  assert.equal(one.status, 200);
  assert.equal(one.json.status, 'running');
  assert.equal(one.json.sandboxId, sb.sandboxId);

  const list = await s.api('GET', '/api/sandbox.list');
  assert.equal(list.status, 200);
  assert.ok(list.json.some((x) => x.sandboxId === sb.sandboxId && x.status === 'running'));

  // python really runs in it, as user 1000, in /home/user (checked through
  // Docker directly, naming the sandbox user as sandpit does: the
  // container's own user is the keeper)
  const out = await dockerExec(sb.containerId, ['sh', '-c', 'python3 -c "print(1+1)"; id -u; pwd; echo $OPENAI_API_KEY'], { user: '1000:1000' });
  assert.equal(out.stdout, '2\n1000\n/home/user\nsk-canary-walkthrough\n');

  const k = await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: sb.sandboxId } });
  assert.equal(k.status, 200, k.text);
  assert.equal(k.json.status, 'killed');
  assert.ok(k.json.killedAt);
  await waitFor(async () => (await docker('GET', `/containers/${sb.containerId}/json`)).status === 404, 10000);

  // killing is idempotent (issue 19): the killed record again
  const again = await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: sb.sandboxId } });
  assert.equal(again.status, 200, again.text);
  assert.equal(again.json.status, 'killed');
  assert.equal(again.json.killedAt, k.json.killedAt);
  const st = await s.api('POST', '/api/sandbox.setTimeout', { body: { sandboxId: sb.sandboxId, timeoutMs: 60000 } });
  assert.equal(st.status, 412);
  assert.equal(st.json.message, 'Sandbox is killed');

  const one2 = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.sandboxId } });
  assert.equal(one2.json.status, 'killed');

  const rm = await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: sb.sandboxId } });
  assert.equal(rm.status, 200);
  const gone = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.sandboxId } });
  assert.equal(gone.status, 404);
  assert.equal(gone.json.message, 'Sandbox not found');
  assert.equal(gone.json.code, 'NOT_FOUND');
  const list2 = await s.api('GET', '/api/sandbox.list');
  assert.ok(!list2.json.some((x) => x.sandboxId === sb.sandboxId));
});

test('remove kills a running sandbox first', async () => {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
  assert.equal(c.status, 200, c.text);
  const rm = await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } });
  assert.equal(rm.status, 200);
  await waitFor(async () => (await docker('GET', `/containers/${c.json.containerId}/json`)).status === 404, 10000);
});

test('setTimeout moves expiresAt, never past deadlineAt', async () => {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', timeoutMs: 20000, maxLifetimeMs: 60000 } });
  assert.equal(c.status, 200, c.text);
  const id = c.json.sandboxId;
  const a = await s.api('POST', '/api/sandbox.setTimeout', { body: { sandboxId: id, timeoutMs: 40000 } });
  assert.equal(a.status, 200, a.text);
  assert.equal(a.json.timeoutMs, 40000);
  assert.ok(Math.abs(Date.parse(a.json.expiresAt) - Date.now() - 40000) < 3000);
  const b = await s.api('POST', '/api/sandbox.setTimeout', { body: { sandboxId: id, timeoutMs: 900000 } });
  assert.equal(b.status, 200);
  assert.equal(b.json.expiresAt, b.json.deadlineAt);
  // the watcher's expiry inside the container was rewritten
  const out = await dockerExec(c.json.containerId, ['cat', '/.sandpit/expires']);
  assert.equal(Number(out.stdout.trim()), Math.ceil(Date.parse(b.json.deadlineAt) / 1000));
  await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } });
});

test('a custom image runs as its default user', async () => {
  const c = await s.api('POST', '/api/sandbox.create', { body: { image: 'sandpit-test/busybox:latest' } });
  assert.equal(c.status, 200, c.text);
  assert.equal(c.json.template, null);
  assert.equal(c.json.user, 'root');
  // its commands run as root; PID 1 and the deadline sleep as the keeper
  const out = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: 'id -u' } });
  assert.equal(out.json.stdout, '0\n');
  const p1 = await dockerExec(c.json.containerId, ['cat', '/proc/1/status']);
  assert.match(p1.stdout, /^Uid:\s+65533\s/m);
  await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } });
});

test('a custom image with a named USER: the API acts as that user', async (t) => {
  // an image whose default user is "user" (uid 1000 in its /etc/passwd),
  // made with docker commit under this run's own name and removed after,
  // so runs leave no untagged images behind
  const repo = `sandpit-test/busybox-named-${process.pid}`;
  const base = await docker('POST', '/containers/create', { Image: 'sandpit-test/busybox:latest', Cmd: ['true'] });
  assert.equal(base.status, 201, base.text);
  const commit = await docker('POST', `/commit?container=${base.json.Id}&repo=${repo}&tag=latest&changes=${encodeURIComponent('USER user')}`);
  assert.equal(commit.status, 201, commit.text);
  await docker('DELETE', `/containers/${base.json.Id}`);
  t.after(() => docker('DELETE', `/images/${repo}:latest?force=1`));
  const c = await s.api('POST', '/api/sandbox.create', { body: { image: `${repo}:latest`, workdir: '/work' } });
  assert.equal(c.status, 200, c.text);
  assert.equal(c.json.user, 'user');
  const w = await s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: c.json.sandboxId, path: '/work/a/b.txt', content: 'x' } });
  assert.equal(w.status, 200, w.text);
  const st = await dockerExec(c.json.containerId, ['stat', '-c', '%u:%g', '/work', '/work/a', '/work/a/b.txt']);
  assert.equal(st.stdout, '1000:1000\n1000:1000\n1000:1000\n');
  const e = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.sandboxId, cmd: 'id -u; pwd' } });
  assert.equal(e.json.stdout, '1000\n/work\n');
  await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } });
});

test('list returns every record of the org, past 1,000 (read in pages from the index)', { timeout: 120000 }, async () => {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', name: 'oldest' } });
  assert.equal(c.status, 200, c.text);
  const id = c.json.sandboxId;
  try {
    // 1,200 newer records, straight into Redis (records only: killed, no
    // container), in store/store.c's format: sp:{org}:sb:ID and the index
    // sp:{org}:sbs scored by createdAt
    const now = Date.now(), n = 1200, lines = [];
    for (let i = 0; i < n; i++) {
      const fid = `fake${String(i).padStart(16, '0')}`, t = now + 1000 + i;
      lines.push(`HSET sp:{default}:sb:${fid} sandboxId ${fid} name fake-${i} organizationId default image sandpit-test/busybox:latest ` +
        `template alpine status killed cpu 1 memoryMb 512 pidsLimit 256 timeoutMs 300000 maxLifetimeMs 86400000 ` +
        `networkMode isolated workdir /home/user runtime runc createdAt ${t} expiresAt ${t} deadlineAt ${t} killedAt ${t}`,
      `EXPIRE sp:{default}:sb:${fid} 600`, `ZADD sp:{default}:sbs ${t} ${fid}`);
    }
    await new Promise((resolve, reject) => {
      const p = execFile('redis-cli', ['-s', path.join(s.dir, 'redis.sock')], { maxBuffer: 64 << 20 },
        (e, out) => (e ? reject(e) : resolve(out)));
      p.stdin.end(lines.join('\n') + '\n');
    });
    const l = await s.api('GET', '/api/sandbox.list');
    assert.equal(l.status, 200, l.text.slice(0, 300));
    assert.ok(l.json.length >= n + 1, `${l.json.length} records`);
    assert.equal(new Set(l.json.map((x) => x.sandboxId)).size, l.json.length, 'no record twice');
    const mine = l.json.find((x) => x.sandboxId === id);
    assert.ok(mine, 'the oldest (running) sandbox is listed after 1,200 newer records');
    assert.equal(mine.status, 'running');
    assert.equal(l.json.filter((x) => x.name?.startsWith('fake-')).length, n);
    // newest first
    assert.equal(l.json[0].name, `fake-${n - 1}`);
  } finally {
    await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } });
  }
});
