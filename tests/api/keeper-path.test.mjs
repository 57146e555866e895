// Nothing a sandbox wrote is ever run by the keeper (RELIABILITY T5, issue
// 24 D7). The red team's reproduction: an earlier sandbox of the org
// wrote a `sleep` and a `date` into a volume, and a later one mounted that
// volume on a PATH folder (/usr/local/sbin), where the keeper (uid 65533,
// the main process and its watcher) found them. Now a volume target on
// PATH or in a system folder is a 400 naming the field (and so is one
// holding a folder of the image's own PATH), while a data folder and a
// folder below the workdir still work. And the keeper resolves nothing
// through PATH: a sandbox whose image puts a folder of its workdir first on
// PATH plants `sleep` and `date` there (and tries every other PATH
// folder), is snapshotted, and a sandbox started from that snapshot —
// those programs first on its PATH from its first instant — never runs
// them as the keeper (no /.sandpit/pwned) and still ends at its timeout.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startStack, waitFor } from './lib/stack.mjs';
import { docker, dockerExec } from './lib/docker.mjs';

const PATHIMG = `sandpit-test/keeper-path-${process.pid}:latest`;
const DATAPATH = `sandpit-test/keeper-datapath-${process.pid}:latest`;
const T = 'features.managedVolumes.attachments[0].target';
let s, vol;
const made = [];
const dk = (...args) => execFileSync('docker', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

function commitImage(name, changes) {
  const c = `keeper-path-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  dk('create', '--name', c, 'sandpit-test/debian:latest', 'true');
  try {
    dk('commit', ...changes.flatMap((x) => ['--change', x]), c, name);
  } finally {
    dk('rm', '-f', c);
  }
}
async function v1Create(body) {
  const r = await s.api('POST', '/v1/sandboxes', { body, timeoutMs: 120000 });
  if (r.json?.uid) made.push(r.json.uid);
  return r;
}
const withVolume = (target, extra = {}) => ({ image: 'images/base', ...extra, features: { managedVolumes: { attachments: [{ volume: `volumes/${vol}`, target }] } } });
async function exec(id, cmd) {
  const r = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd }, timeoutMs: 60000 });
  assert.equal(r.status, 200, r.text);
  return r.json;
}
async function remove(id) {
  await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } });
}

before(async () => {
  s = await startStack();
  const v = await s.api('POST', '/v1/volumes', { body: { displayName: 'kp' } });
  assert.equal(v.status, 201, v.text);
  vol = v.json.uid;
  commitImage(PATHIMG, ['USER 1000:1000', 'ENV PATH=/home/user/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin']);
  commitImage(DATAPATH, ['USER 1000:1000', 'ENV PATH=/usr/bin:/bin:/data/bin']);
});

after(async () => {
  for (const id of made) await remove(id).catch(() => {});
  // the volume's disk file is in the shared disk_dir: deleted, or it
  // outlives the stack and counts against every later create's disk
  if (vol) {
    const g = await s.api('GET', `/v1/volumes/${vol}`).catch(() => null);
    if (g?.status === 200) {
      const r = await s.api('DELETE', `/v1/volumes/${vol}`, { headers: { 'if-match': g.headers.etag } });
      assert.equal(r.status, 204, r.text);
    }
  }
  for (const img of [PATHIMG, DATAPATH]) try { dk('rmi', '-f', img); } catch { /* gone */ }
  await s?.stop();
});

test('a volume on a PATH or system folder is a 400 naming the target; a data folder and one below the workdir work', async () => {
  // an earlier sandbox of the org plants sleep and date in the volume
  const w = await v1Create(withVolume('/data'));
  assert.equal(w.status, 201, w.text);
  await exec(w.json.uid, "printf '#!/bin/sh\\nid > /.sandpit/pwned\\nexec /bin/sleep \"$@\"\\n' > /data/sleep && printf '#!/bin/sh\\necho 1\\n' > /data/date && chmod 755 /data/sleep /data/date");
  await remove(w.json.uid);
  for (const target of ['/usr/local/sbin', '/usr/local/bin', '/usr/bin', '/bin', '/sbin', '/usr', '/etc', '/lib', '/lib64', '/var/lib/x', '/opt/tools', '/root', '/tmp/x', '/run/x', '/elsewhere']) {
    const r = await v1Create(withVolume(target));
    assert.equal(r.status, 400, `${target}: ${r.text}`);
    assert.ok(r.text.includes(T), `${target}: ${r.text}`);
  }
  // a data folder on the image's own PATH (/data/bin): refused once the image is known
  const p = await v1Create(withVolume('/data', { image: undefined, imageRef: DATAPATH }));
  assert.equal(p.status, 400, p.text);
  assert.match(p.text, /PATH folder \/data\/bin/);
  assert.ok(p.text.includes(T), p.text);
  // below the workdir (a mount over the sandbox's own disk) and a data folder
  for (const target of ['/home/user/cache', '/srv/files']) {
    const r = await v1Create(withVolume(target));
    assert.equal(r.status, 201, `${target}: ${r.text}`);
    // (test -x, not ls: runsc 20221219's statx fails)
    const o = await exec(r.json.uid, `test -x ${target}/sleep && echo planted && echo x > ${target}/t && cat ${target}/t && rm ${target}/t`);
    assert.equal(o.stdout, 'planted\nx\n', JSON.stringify(o));
    await remove(r.json.uid);
  }
  const none = await docker('GET', '/containers/json?all=1&filters=' + encodeURIComponent(JSON.stringify({ label: ['sandpit.organizationId=default'], status: ['running'] })));
  assert.equal(none.status, 200);
});

test('the keeper resolves nothing through PATH: a sleep and date planted first on PATH are never run, and the sandbox ends at its timeout', { timeout: 240000 }, async () => {
  const a = await v1Create({ imageRef: PATHIMG });
  assert.equal(a.status, 201, a.text);
  // plant in the workdir's bin (first on PATH) and try every PATH folder
  const script = (real) => `#!/bin/sh\\n{ id; echo \"$0 $*\"; cat /proc/$PPID/cmdline; echo; } >> /.sandpit/pwned\\nexec /bin/${real} \"$@\"\\n`;
  const planted = `printf '${script('sleep')}' > "$d/sleep"; printf '${script('date')}' > "$d/date"; chmod 755 "$d/sleep" "$d/date"`;
  const o = await exec(a.json.uid, `mkdir -p /home/user/bin; n=0; for d in $(echo "$PATH" | tr : ' '); do (${planted}) 2>/dev/null && n=$((n+1)); done; echo $n; command -v sleep; command -v date`);
  assert.equal(o.stdout, '1\n/home/user/bin/sleep\n/home/user/bin/date\n', JSON.stringify(o));
  const sn = await s.api('POST', `/v1/sandboxes/${a.json.uid}/snapshots`, { body: { displayName: 'planted' } });
  assert.equal(sn.status, 202, sn.text);
  await waitFor(async () => {
    const g = await s.api('GET', `/v1/snapshots/${sn.json.uid}`);
    assert.notEqual(g.json.status, 'failed', g.text);
    return g.json.status === 'ready';
  }, 120000, 200);
  await remove(a.json.uid);
  // from the snapshot: the planted programs are on PATH from the first instant
  const t0 = Date.now();
  const b = await v1Create({ imageRef: `sandpit-snapshot:${sn.json.uid}`, features: { timeouts: { timeout: '10s' } } });
  assert.equal(b.status, 201, b.text);
  const cid = (await s.api('GET', '/api/sandbox.one', { query: { sandboxId: b.json.uid } })).json.containerId;
  const seen = await dockerExec(cid, ['sh', '-c', 'command -v sleep; ls /home/user/bin']);
  assert.match(seen.stdout, /^\/home\/user\/bin\/sleep\n/, 'the planted sleep is first on the sandbox\'s PATH');
  // past a watcher tick (5 s): nothing of the keeper's ran them
  await new Promise((r) => setTimeout(r, 6500));
  const pw = await dockerExec(cid, ['sh', '-c', 'cat /.sandpit/pwned 2>/dev/null; ps -o user=,args= -u 65533 2>/dev/null || true']);
  assert.ok(!/uid=/.test(pw.stdout), `the keeper ran a planted program: ${pw.stdout} ${JSON.stringify((await docker('GET', `/containers/${cid}/json`)).json.Config.Cmd)}`);
  assert.ok(!/\/home\/user\/bin/.test(pw.stdout), `a keeper process runs a planted program: ${pw.stdout}`);
  // and the container ends at its timeout (10 s, the watcher's 5 s tick)
  await waitFor(async () => {
    const i = await docker('GET', `/containers/${cid}/json`);
    return i.status === 404 || !i.json.State.Running;
  }, 40000, 500);
  assert.ok(Date.now() - t0 < 45000, `ended after ${Date.now() - t0} ms`);
  const g = await s.api('GET', `/v1/snapshots/${sn.json.uid}`);
  if (g.headers.etag) await s.api('DELETE', `/v1/snapshots/${sn.json.uid}`, { headers: { 'if-match': g.headers.etag } });
});
