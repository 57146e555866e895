// Coming from Dokploy (issue 19): the seed's walk-through with Dokploy's
// names (naming = dokploy), checked through docker inspect, and each place
// where sandpit answers as Dokploy does or keeps a deliberate difference
// (README "Coming from Dokploy").
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, waitFor } from './lib/stack.mjs';
import { docker, dockerExec } from './lib/docker.mjs';

const NETS = { isolated: 'dokploy-sandboxes-isolated', internet: 'dokploy-sandboxes' };
let s;
const made = [];
const netsBefore = {};

before(async () => {
  // the Dokploy networks may exist already (a Dokploy on this host, an
  // earlier run); only those this file made are removed at the end
  for (const n of Object.values(NETS)) netsBefore[n] = (await docker('GET', `/networks/${n}`)).status === 200;
  s = await startStack({ extraConf: 'naming = dokploy' });
});

after(async () => {
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await s?.stop();
  for (const n of Object.values(NETS)) {
    if (netsBefore[n]) continue;
    const net = await docker('GET', `/networks/${n}`);
    if (net.status === 200 && Object.keys(net.json.Containers || {}).length === 0) await docker('DELETE', `/networks/${n}`);
  }
});

async function create(body) {
  const c = await s.api('POST', '/api/sandbox.create', { body });
  assert.equal(c.status, 200, c.text);
  made.push(c.json.sandboxId);
  return c.json;
}
const post = (proc, body, o = {}) => s.api('POST', `/api/sandbox.${proc}`, { body, ...o });
const get = (proc, query, o = {}) => s.api('GET', `/api/sandbox.${proc}`, { query, ...o });
const sh = async (id, cmd) => {
  const r = await post('exec', { sandboxId: id, cmd });
  assert.equal(r.status, 200, r.text);
  return r.json;
};

test("the seed's walk-through with naming = dokploy: Dokploy's labels, networks and container name", async () => {
  const sb = await create({ template: 'python', name: 'agent-run-42', cpu: 1, memoryMb: 512, timeoutMs: 300000,
    networkMode: 'isolated', envVars: 'OPENAI_API_KEY=sk-test' });
  const id = sb.sandboxId;
  assert.equal(sb.status, 'running');
  assert.equal(sb.name, 'agent-run-42');
  assert.ok(!('envVars' in sb));

  const info = (await docker('GET', `/containers/${sb.containerId}/json`)).json;
  assert.equal(info.Name, `/dokploy-sandbox-${id}`);
  const labels = info.Config.Labels;
  assert.equal(labels['dokploy.sandbox'], 'true');
  assert.equal(labels['dokploy.sandboxId'], id);
  assert.equal(labels['dokploy.organizationId'], 'default');
  assert.deepEqual(Object.keys(labels).filter((k) => k.startsWith('sandpit.')), [], 'no sandpit labels');
  assert.equal(info.HostConfig.NetworkMode, NETS.isolated);
  assert.deepEqual(Object.keys(info.NetworkSettings.Networks), [NETS.isolated]);
  const iso = (await docker('GET', `/networks/${NETS.isolated}`)).json;
  assert.equal(iso.Internal, true);
  assert.equal(iso.Options['com.docker.network.bridge.enable_icc'], 'false');
  if (!netsBefore[NETS.isolated]) assert.equal(iso.Labels['dokploy.sandbox'], 'true');
  // tools that find sandboxes by Dokploy's label find it
  const byLabel = await docker('GET', '/containers/json?filters=' + encodeURIComponent(JSON.stringify({ label: [`dokploy.sandboxId=${id}`] })));
  assert.deepEqual(byLabel.json.map((c) => c.Id), [sb.containerId]);

  const ex = await sh(id, 'python3 -c "print(1+1)"; echo "$OPENAI_API_KEY"');
  assert.deepEqual(ex, { stdout: '2\nsk-test\n', stderr: '', exitCode: 0, timedOut: false, truncated: false });
  const w = await post('writeFile', { sandboxId: id, path: '/home/user/app/main.py', content: 'print("hi")\n' });
  assert.equal(w.status, 200, w.text);
  assert.deepEqual(w.json, { path: '/home/user/app/main.py', size: 12 });
  const r = await get('readFile', { sandboxId: id, path: '/home/user/app/main.py' });
  assert.deepEqual(r.json, { path: '/home/user/app/main.py', size: 12, encoding: 'utf8', content: 'print("hi")\n' });
  const ls = await get('listFiles', { sandboxId: id, path: '/home/user/app' });
  assert.equal(ls.status, 200, ls.text);
  assert.equal(ls.json.path, '/home/user/app');
  assert.deepEqual(ls.json.entries.map((e) => [e.name, e.type, e.size, e.mode]), [['main.py', 'file', 12, '644']]);
  const st = await post('setTimeout', { sandboxId: id, timeoutMs: 900000 });
  assert.equal(st.status, 200, st.text);
  assert.equal(st.json.timeoutMs, 900000);
  assert.equal(st.json.sandboxId, id);
  const list = await get('list');
  assert.equal(list.json.find((x) => x.sandboxId === id)?.status, 'running', 'list finds it by the dokploy label');
  const k = await post('kill', { sandboxId: id });
  assert.equal(k.status, 200, k.text);
  assert.equal(k.json.status, 'killed');
  await waitFor(async () => (await docker('GET', `/containers/${sb.containerId}/json`)).status === 404, 15000);
  const rm = await post('remove', { sandboxId: id });
  assert.equal(rm.status, 200, rm.text);
  assert.equal(rm.json, true, "remove answers true, as Dokploy's does");
  assert.equal((await get('one', { sandboxId: id })).status, 404);
  assert.equal((await post('remove', { sandboxId: id })).status, 404);
});

test('naming = dokploy: an internet sandbox is on dokploy-sandboxes (no suffix), not internal', async () => {
  const sb = await create({ template: 'alpine', networkMode: 'internet' });
  const info = (await docker('GET', `/containers/${sb.containerId}/json`)).json;
  assert.equal(info.HostConfig.NetworkMode, NETS.internet);
  assert.deepEqual(Object.keys(info.NetworkSettings.Networks), [NETS.internet]);
  const net = (await docker('GET', `/networks/${NETS.internet}`)).json;
  assert.equal(net.Internal, false);
  assert.equal(net.Options['com.docker.network.bridge.enable_icc'], 'false');
});

test('a create without name gets sandbox-<base36 time in ms>, as in Dokploy', async () => {
  const t0 = Date.now();
  const sb = await create({ template: 'alpine' });
  const t1 = Date.now();
  const m = /^sandbox-([0-9a-z]+)$/.exec(sb.name);
  assert.ok(m, sb.name);
  const ms = parseInt(m[1], 36);
  assert.ok(ms >= t0 - 1000 && ms <= t1 + 1000, `${sb.name} = ${ms}, created between ${t0} and ${t1}`);
  assert.equal((await get('one', { sandboxId: sb.sandboxId })).json.name, sb.name, 'the name is stored');
});

test('HOME follows a custom workdir (template "~" paths too); the default stays /home/user', async () => {
  const a = await create({ template: 'ruby', workdir: '/srv/work' });
  const ea = await sh(a.sandboxId, 'echo "$HOME|$(pwd)|$GEM_HOME"; cd && touch .probe && echo ok');
  assert.equal(ea.stdout, '/srv/work|/srv/work|/srv/work/.gem\nok\n', ea.stderr);
  const ia = (await docker('GET', `/containers/${a.containerId}/json`)).json;
  assert.ok(ia.Config.Env.includes('HOME=/srv/work'), ia.Config.Env.join(' '));
  assert.ok(!ia.Config.Env.includes('HOME=/home/user'));

  const b = await create({ template: 'alpine' });
  assert.equal((await sh(b.sandboxId, 'echo "$HOME|$(pwd)"')).stdout, '/home/user|/home/user\n');
  // a custom image: HOME is its workdir too (Dokploy sets it for every sandbox)
  const c = await create({ image: 'sandpit-test/busybox:latest', workdir: '/data' });
  assert.equal((await sh(c.sandboxId, 'echo "$HOME|$(pwd)"')).stdout, '/data|/data\n');
  // envVars come after, so a caller can still set HOME
  const d = await create({ template: 'alpine', envVars: 'HOME=/tmp' });
  assert.equal((await sh(d.sandboxId, 'echo "$HOME"')).stdout, '/tmp\n');
});

test('listFiles on a file is a 400 and on a missing directory a 404 (deliberate: Dokploy answers [] or a 400)', async () => {
  const sb = await create({ template: 'python' });
  const id = sb.sandboxId;
  assert.equal((await sh(id, 'echo x > f.txt')).exitCode, 0);
  const f = await get('listFiles', { sandboxId: id, path: '/home/user/f.txt' });
  assert.equal(f.status, 400, f.text);
  assert.equal(f.json.message, 'Path is not a directory');
  assert.deepEqual(f.json.issues.map((i) => i.path), [['path']]);
  const m = await get('listFiles', { sandboxId: id, path: '/home/user/none' });
  assert.equal(m.status, 404, m.text);
  assert.equal(m.json.message, 'Directory not found');
  assert.equal(m.json.code, 'NOT_FOUND');
  // the same on busybox (Dokploy's ls fallback lists a file as one entry)
  const b = await create({ template: 'alpine' });
  assert.equal((await sh(b.sandboxId, 'echo x > f.txt')).exitCode, 0);
  assert.equal((await get('listFiles', { sandboxId: b.sandboxId, path: '/home/user/f.txt' })).status, 400);
  assert.equal((await get('listFiles', { sandboxId: b.sandboxId, path: '/home/user/none' })).status, 404);
});

test('envVars: a line that is not KEY=value is a 400 naming the line; comments, blank lines, CRLF are fine', async () => {
  const bad = await post('create', { template: 'alpine', envVars: 'FOO=bar\n# comment\n\nBAZ=qux=1\ninvalid\n' });
  assert.equal(bad.status, 400, bad.text);
  assert.equal(bad.json.message, 'envVars: line 5 is not KEY=value');
  assert.deepEqual(bad.json.issues.map((i) => i.path), [['envVars']]);
  const name = await post('create', { template: 'alpine', envVars: '# secrets\nOK=1\n1BAD=x\n' });
  assert.equal(name.status, 400, name.text);
  assert.equal(name.json.message, 'envVars: line 3 has an invalid name');
  const listed = await get('list');
  assert.ok(!listed.json.some((x) => x.status === 'error' || x.status === 'creating'), 'a refused create leaves no row');

  const sb = await create({ template: 'alpine', envVars: 'FOO=bar\r\n  # indented comment\n\n\t\nBAZ=qux=1\nexport Q="quoted value"\n' });
  const e = await sh(sb.sandboxId, 'echo "$FOO|$BAZ|$Q"');
  assert.equal(e.stdout, 'bar|qux=1|quoted value\n');
});

test('readFile of non-UTF-8 content as utf8 is a 422 pointing at base64 (Dokploy replaces the bytes)', async () => {
  const sb = await create({ template: 'alpine' });
  const bytes = Buffer.from([0x68, 0xff, 0xfe, 0x00, 0x69]);
  const w = await post('writeFile', { sandboxId: sb.sandboxId, path: '/home/user/bin', encoding: 'base64', content: bytes.toString('base64') });
  assert.equal(w.status, 200, w.text);
  const r = await get('readFile', { sandboxId: sb.sandboxId, path: '/home/user/bin' });
  assert.equal(r.status, 422, r.text);
  assert.match(r.json.message, /base64/);
  const r64 = await get('readFile', { sandboxId: sb.sandboxId, path: '/home/user/bin', encoding: 'base64' });
  assert.equal(r64.status, 200, r64.text);
  assert.deepEqual(Buffer.from(r64.json.content, 'base64'), bytes);
});

test('writeFile runs as the sandbox user: the file is 1000:1000 and a planted symlink to /etc is refused', async () => {
  // busybox stat: coreutils' fails under gVisor (README, gVisor)
  const sb = await create({ template: 'alpine' });
  const w = await post('writeFile', { sandboxId: sb.sandboxId, path: '/home/user/new/f.txt', content: 'x' });
  assert.equal(w.status, 200, w.text);
  const own = await dockerExec(sb.containerId, ['stat', '-c', '%u:%g', '/home/user/new', '/home/user/new/f.txt']);
  assert.equal(own.stdout, '1000:1000\n1000:1000\n');
  assert.equal((await sh(sb.sandboxId, 'ln -s /etc etc')).exitCode, 0);
  const evil = await post('writeFile', { sandboxId: sb.sandboxId, path: '/home/user/etc/evil', content: 'x' });
  assert.equal(evil.status, 403, evil.text);
  assert.equal((await dockerExec(sb.containerId, ['test', '-e', '/etc/evil'])).exitCode, 1, 'nothing written in /etc');
});

test("another organization's sandbox is a 404 Sandbox not found (Dokploy: 401)", async () => {
  const sb = await create({ template: 'alpine' });
  const other = await s.newKey('dokploy-other-org');
  const q = { sandboxId: sb.sandboxId };
  for (const [method, proc, extra] of [['GET', 'one'], ['POST', 'exec', { cmd: 'true' }], ['GET', 'listFiles'],
    ['POST', 'kill'], ['POST', 'remove']]) {
    const r = method === 'GET' ? await get(proc, q, { key: other }) : await post(proc, { ...q, ...extra }, { key: other });
    assert.equal(r.status, 404, `${proc}: ${r.text}`);
    assert.equal(r.json.message, 'Sandbox not found');
  }
  assert.equal((await get('one', q)).json.status, 'running', 'untouched for its own org');
});

test('templates answer name, image, user, workdir and description (as Dokploy), plus env', async () => {
  const t = await get('templates');
  assert.equal(t.status, 200, t.text);
  const py = t.json.find((x) => x.name === 'python');
  assert.equal(py.user, '1000:1000');
  assert.equal(py.workdir, '/home/user');
  assert.equal(py.description, 'Python 3 with its standard library, pip and venv');
  assert.deepEqual(t.json.find((x) => x.name === 'ruby').env,
    { GEM_HOME: '/home/user/.gem', BUNDLE_APP_CONFIG: '/home/user/.bundle' });
  assert.equal(t.json.length, 11);
});
