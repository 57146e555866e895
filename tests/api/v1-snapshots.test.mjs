// /v1 snapshots and images (issue 17): createSnapshot answers 202 while the
// capture runs and the snapshot moves to ready; two restores of one
// snapshot run side by side, each sees the files written before the
// snapshot (in the workdir, its own disk, and elsewhere) and neither sees
// the other's or the source's later writes; a stopped source, captureMode
// all, a second capture at once, an unknown sandbox are refused; delete
// needs If-Match and is refused while a fork uses the image
// (deletion_content_lease_held), then removes the image; another org sees
// none of it (404); listImages/getImage over the templates and the
// snapshots' images, deleteImage (a template: 403), createImage and
// getImagePullSpec declined (501, Cache-Control no-store). Every /v1 answer
// is validated against the seed's schema. With SANDPIT_TEST_RUNTIME=gvisor
// the sandboxes run under runsc (runsc 20221219: what the code inside wrote
// is in the committed image; this file checks it).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { v1Call, v1Checked } from './lib/v1seed.mjs';
import { startStack, waitFor } from './lib/stack.mjs';

let s;
const made = [];   // sandboxes
const snaps = [];  // snapshot ids (their images are sandpit-snapshot:<id>)

const v1 = (method, tmpl, params, o) => v1Call(s, method, tmpl, params, o);
const SNAP_CREATE = '/v1/sandboxes/{sandbox}/snapshots';
const SNAPS = '/v1/snapshots';
const SNAP = '/v1/snapshots/{snapshot}';
const RESTORE = '/v1/snapshots/{snapshot}/restore';
const IMAGES = '/v1/images';
const IMAGE = '/v1/images/{image}';
const PULL = '/v1/images/{image}/pull-spec';

async function createV1(body = {}) {
  const r = await v1('POST', '/v1/sandboxes', {}, { body: { image: 'images/alpine', ...body } });
  assert.equal(r.status, 201, r.text);
  made.push(r.json.uid);
  return r.json;
}
async function sh(id, cmd) {
  const r = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd }, timeoutMs: 120000 });
  assert.equal(r.status, 200, r.text);
  return r.json;
}
const out = async (id, cmd) => (await sh(id, cmd)).stdout;
// a snapshot accepted (202 creating), then ready
async function snapshot(id, body = {}, o = {}) {
  const r = await v1('POST', SNAP_CREATE, { sandbox: id }, { body: { displayName: 'snap', ...body }, ...o });
  assert.equal(r.status, 202, r.text);
  assert.equal(r.json.status, 'creating');
  assert.equal(r.headers.etag, r.json.etag);
  if (!snaps.includes(r.json.uid)) snaps.push(r.json.uid);
  let last;
  await waitFor(async () => {
    last = await v1('GET', SNAP, { snapshot: r.json.uid });
    assert.equal(last.status, 200, last.text);
    assert.notEqual(last.json.status, 'failed', last.text);
    return last.json.status === 'ready';
  }, 120000, 200);
  return { accepted: r, ready: last.json };
}
async function restore(snap, body = {}, o = {}) {
  const r = await v1('POST', RESTORE, { snapshot: snap }, { body, ...o });
  if (r.status === 201) made.push(r.json.uid);
  return r;
}
async function removeSandbox(id) {
  await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } });
}
const etagOf = async (tmpl, params) => (await v1('GET', tmpl, params)).headers.etag;
function dockerImage(ref) {
  try {
    return JSON.parse(execFileSync('docker', ['image', 'inspect', ref], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }))[0];
  } catch {
    return null;
  }
}

before(async () => {
  s = await startStack({ env: { SANDPIT_RATE: '100r/s', SANDPIT_BURST: '50' } });
});
after(async () => {
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  for (const id of snaps) {
    // a capture still under way (a test that failed midway) makes its
    // image after a delete would have come: wait for it to settle
    let r;
    const t0 = Date.now();
    do {
      r = await s?.api('GET', `/v1/snapshots/${id}`).catch(() => null);
      if (r?.json?.status === 'creating') await new Promise((ok) => setTimeout(ok, 250));
    } while (r?.json?.status === 'creating' && Date.now() - t0 < 120000);
    if (r?.status === 200) await s.api('DELETE', `/v1/snapshots/${id}`, { headers: { 'if-match': r.headers.etag } }).catch(() => {});
    // whatever is left of our own images (a failing test)
    try { execFileSync('docker', ['rmi', '-f', `sandpit-snapshot:${id}`], { stdio: 'ignore' }); } catch { /* gone */ }
  }
  await s?.stop();
  assert.ok(v1Checked() > 0);
});

test('snapshot -> two restores side by side: both see what was written before, neither the other\'s later writes', { timeout: 300000 }, async () => {
  const src = await createV1({ displayName: 'source', resources: { memoryMib: 256 }, labels: { team: 'a' } });
  const W = (await out(src.uid, 'pwd')).trim();
  // the workdir (its own disk) and a file beside it in the image's layer
  // where the layer is writable (/tmp is memory: never captured)
  await sh(src.uid, `mkdir -p ${W}/d && echo before > ${W}/d/f && head -c 3000000 /dev/urandom > ${W}/big && md5sum ${W}/big | cut -d' ' -f1 > ${W}/big.md5 && echo tmp > /tmp/t`);
  const sum = (await out(src.uid, `cat ${W}/big.md5`)).trim();
  // and a file a running process still holds open (under gVisor its
  // writes must have reached the host's disk by the capture)
  await sh(src.uid, `(exec 3>${W}/open; echo held >&3; head -c 100000 /dev/zero >&3; exec sleep 300) >/dev/null 2>&1 </dev/null &`);
  await waitFor(async () => (await out(src.uid, `wc -c < ${W}/open 2>/dev/null || echo 0`)).trim() === '100005', 10000);
  assert.match(await out(src.uid, 'ps -o args 2>/dev/null || ps'), /sleep 300/, 'the writer still runs, its file open');
  const { accepted, ready } = await snapshot(src.uid, { displayName: 'first', description: 'before the fork' });
  assert.equal(accepted.json.name, `snapshots/${accepted.json.uid}`);
  assert.equal(ready.sandbox, `sandboxes/${src.uid}`);
  assert.equal(ready.sandboxUid, src.uid);
  assert.equal(ready.captureMode, 'disk');
  assert.equal(ready.description, 'before the fork');
  assert.ok(Number(ready.totalSizeBytes) > 3000000, ready.totalSizeBytes);
  assert.notEqual(ready.etag, accepted.json.etag, 'the etag changes with the status');
  // the source goes on running after the capture, and its later writes
  // are not in the snapshot
  await sh(src.uid, `echo after > ${W}/later`);
  const img = dockerImage(`sandpit-snapshot:${ready.uid}`);
  assert.ok(img, 'the snapshot is a local image');
  assert.equal(img.Config.User, '1000:1000');
  // the image is no sandbox: no container of it is taken for the source
  assert.ok(!Object.entries(img.Config.Labels || {}).some(([k, v]) => /\.(sandboxId|install|sandbox)$/.test(k) && v), JSON.stringify(img.Config.Labels));
  assert.ok(Object.entries(img.Config.Labels || {}).some(([k, v]) => k.endsWith('.snapshotId') && v === ready.uid));

  const [ra, rb] = await Promise.all([restore(ready.uid, { displayName: 'forkA' }), restore(ready.uid, { displayName: 'forkB' })]);
  assert.equal(ra.status, 201, ra.text);
  assert.equal(rb.status, 201, rb.text);
  const A = ra.json.uid, B = rb.json.uid;
  assert.notEqual(A, B);
  assert.equal(ra.json.displayName, 'forkA');
  assert.equal(ra.json.core.status, 'running');
  const cid = (await s.api('GET', '/api/sandbox.one', { query: { sandboxId: A } })).json.containerId;
  const labels = JSON.parse(execFileSync('docker', ['inspect', '-f', '{{json .Config.Labels}}', cid], { encoding: 'utf8' }));
  assert.ok(Object.entries(labels).some(([k, v]) => k.endsWith('.sandboxId') && v === A), 'a fork is labelled as itself');
  assert.equal(ra.headers.etag, ra.json.core.etag);
  // the source's configuration
  assert.equal(ra.json.core.resources.memoryMib, '256');
  assert.deepEqual(ra.json.core.labels, { team: 'a' });
  for (const f of [A, B]) {
    assert.equal(await out(f, `cat ${W}/d/f`), 'before\n');
    assert.equal((await out(f, `md5sum ${W}/big | cut -d' ' -f1`)).trim(), sum);
    assert.equal(await out(f, `head -n1 ${W}/open; wc -c < ${W}/open`), 'held\n100005\n');
    assert.equal((await sh(f, `test -e ${W}/later`)).exitCode, 1, 'the source\'s later write is not in a fork');
    assert.equal((await sh(f, 'test -e /tmp/t')).exitCode, 1, '/tmp is memory, not captured');
    assert.equal((await out(f, `stat -c %u ${W}/d/f`)).trim(), '1000', 'ownership kept');
  }
  await sh(A, `echo a > ${W}/mine && echo a2 > ${W}/d/f`);
  await sh(B, `echo b > ${W}/mine`);
  assert.equal(await out(A, `cat ${W}/mine ${W}/d/f`), 'a\na2\n');
  assert.equal(await out(B, `cat ${W}/mine ${W}/d/f`), 'b\nbefore\n');
  assert.equal(await out(src.uid, `cat ${W}/d/f; test -e ${W}/mine || echo none`), 'before\nnone\n');

  // a third restore after the forks wrote: still the snapshot's content
  const rc = await restore(ready.uid);
  assert.equal(rc.status, 201, rc.text);
  assert.equal(await out(rc.json.uid, `cat ${W}/d/f; test -e ${W}/mine || echo none`), 'before\nnone\n');

  // delete: If-Match, and never while a fork uses the image
  const none = await v1('DELETE', SNAP, { snapshot: ready.uid });
  assert.equal(none.status, 428, none.text);
  assert.match(none.json.message, /^etag_required:/);
  const stale = await v1('DELETE', SNAP, { snapshot: ready.uid }, { headers: { 'if-match': '"stale"' } });
  assert.equal(stale.status, 412, stale.text);
  assert.equal(stale.json.details[0].currentEtag, ready.etag);
  const held = await v1('DELETE', SNAP, { snapshot: ready.uid }, { headers: { 'if-match': ready.etag } });
  assert.equal(held.status, 409, held.text);
  assert.equal(held.json.code, 'failedPrecondition');
  assert.match(held.json.message, /^deletion_content_lease_held:/);
  assert.ok(dockerImage(`sandpit-snapshot:${ready.uid}`));
  for (const f of [A, B, rc.json.uid]) await removeSandbox(f);
  // a removed sandbox's container goes within a moment (AutoRemove): the
  // lease with it
  let del;
  await waitFor(async () => {
    del = await v1('DELETE', SNAP, { snapshot: ready.uid }, { headers: { 'if-match': ready.etag } });
    if (del.status === 409) assert.match(del.json.message, /^deletion_content_lease_held:/);
    return del.status !== 409;
  }, 30000, 250);
  assert.equal(del.status, 204, del.text);
  assert.equal(dockerImage(`sandpit-snapshot:${ready.uid}`), null, 'the image went with the snapshot');
  assert.equal((await v1('GET', SNAP, { snapshot: ready.uid })).status, 404);
  // deleting an absent snapshot succeeds; restoring it is a 404
  assert.equal((await v1('DELETE', SNAP, { snapshot: ready.uid }, { headers: { 'if-match': ready.etag } })).status, 204);
  assert.equal((await restore(ready.uid)).status, 404);
});

test('the snapshot\'s image holds no value of the source\'s envVars or environment; a restore gives them back', { timeout: 240000 }, async () => {
  // envVars on the Dokploy face (secret there), environment on /v1; both
  // faces see one sandbox
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', envVars: 'API_TOKEN=tok-7f3e\nPATH=/opt/x:/usr/bin:/bin' } });
  assert.equal(c.status, 200, c.text);
  made.push(c.json.sandboxId);
  const id = c.json.sandboxId;
  const v = await createV1({ displayName: 'envsrc2', environment: { DB_PASSWORD: 'pw-91c2' } });
  for (const [sid, name, value] of [[id, 'API_TOKEN', 'tok-7f3e'], [v.uid, 'DB_PASSWORD', 'pw-91c2']]) {
    assert.equal((await out(sid, `printf %s "$${name}"`)), value);
    const { ready } = await snapshot(sid, { displayName: `env-${name}` });
    const img = dockerImage(`sandpit-snapshot:${ready.uid}`);
    assert.ok(img, 'the snapshot image exists');
    const env = img.Config.Env.join('\n');
    assert.ok(!env.includes(value), `the image's Env holds no secret: ${env}`);
    assert.ok(img.Config.Env.includes(`${name}=`), `the key stays with no value: ${env}`);
    if (name === 'API_TOKEN') {
      // a variable the template image has keeps that image's value
      const path = img.Config.Env.find((x) => x.startsWith('PATH='));
      assert.ok(path && !path.includes('/opt/x'), path);
    }
    const r = await restore(ready.uid, {});
    assert.equal(r.status, 201, r.text);
    assert.equal((await out(r.json.uid, `printf %s "$${name}"`)), value, 'the fork has the variable back');
    if (name === 'API_TOKEN') assert.match(await out(r.json.uid, 'printf %s "$PATH"'), /^\/opt\/x:/);
    await removeSandbox(r.json.uid);
  }
});

test('createSnapshot refusals: stopped source, captureMode all, bad input, unknown sandbox, an ended source', { timeout: 180000 }, async () => {
  const sb = await createV1();
  const bad = [
    [{ displayName: 'x', captureMode: 'all' }, 409, /^capture_memory_unsupported:/],
    [{}, 400, /displayName/],
    [{ displayName: '' }, 400, /displayName/],
    [{ displayName: 'a/b' }, 400, /displayName/],
    [{ displayName: '..' }, 400, /displayName/],
    [{ displayName: 'x', captureMode: 'memory' }, 400, /captureMode/],
    [{ displayName: 'x', extra: 1 }, 400, /extra/],
  ];
  for (const [body, status, msg] of bad) {
    const r = await v1('POST', SNAP_CREATE, { sandbox: sb.uid }, { body });
    assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.text}`);
    assert.match(r.json.message, msg);
  }
  assert.equal((await v1('POST', SNAP_CREATE, { sandbox: 'nosuchsandbox0000000' }, { body: { displayName: 'x' } })).status, 404);
  // stopped: refused, and accepted again once started
  const tag = (await v1('GET', '/v1/sandboxes/{sandbox}', { sandbox: sb.uid })).headers.etag;
  const st = await v1('POST', '/v1/sandboxes/{sandbox}/stop', { sandbox: sb.uid }, { body: {}, headers: { 'if-match': tag } });
  assert.equal(st.status, 200, st.text);
  const r = await v1('POST', SNAP_CREATE, { sandbox: sb.uid }, { body: { displayName: 'x' } });
  assert.equal(r.status, 409, r.text);
  assert.equal(r.json.code, 'failedPrecondition');
  assert.match(r.json.message, /^snapshot_source_not_running: the sandbox is stopped/);
  const start = await v1('POST', '/v1/sandboxes/{sandbox}/start', { sandbox: sb.uid }, { body: {}, headers: { 'if-match': st.headers.etag } });
  assert.equal(start.status, 200, start.text);
  // the capture's pause is not a stop: the sandbox reads running throughout
  const { ready } = await snapshot(sb.uid);
  const g = await v1('GET', '/v1/sandboxes/{sandbox}', { sandbox: sb.uid });
  assert.equal(g.json.core.status, 'running');
  assert.equal((await sh(sb.uid, 'echo alive')).stdout, 'alive\n');
  // an ended source: refused; its snapshot stays and restores
  await removeSandbox(sb.uid);
  const gone = await v1('POST', SNAP_CREATE, { sandbox: sb.uid }, { body: { displayName: 'x' } });
  assert.equal(gone.status, 404, gone.text);
  const f = await restore(ready.uid);
  assert.equal(f.status, 201, f.text);
  await removeSandbox(f.json.uid);
});

test('the capture\'s pause is no stop: commands meanwhile answer 200 or a retryable 503, the sandbox reads running', { timeout: 180000 }, async () => {
  const sb = await createV1();
  // 100 MiB make the pause last a while (two commits and a tar of them)
  await sh(sb.uid, 'head -c 104857600 /dev/urandom > big; echo small > small');
  // a read at the sandbox endpoint meanwhile (its file call once took
  // Docker's 409 on the paused container for a sandbox gone, and ended it)
  const cred = await v1('POST', '/v1/sandboxes/{sandbox}/endpoint-credentials', { sandbox: sb.uid }, { body: { permissions: ['sandboxesFilesRead'] } });
  assert.equal(cred.status, 200, cred.text);
  const readSmall = () => v1('GET', '/v1/files/content', {}, { key: null, endpoint: sb.uid, query: { path: '/home/user/small' },
    headers: { authorization: `Bearer ${cred.json.token}` } });
  assert.equal((await readSmall()).status, 200);
  const r = await v1('POST', SNAP_CREATE, { sandbox: sb.uid }, { body: { displayName: 'busy' } });
  assert.equal(r.status, 202, r.text);
  snaps.push(r.json.uid);
  const seen = new Map();
  let status = 'creating';
  const t0 = Date.now();
  while (status === 'creating' && Date.now() - t0 < 120000) {
    const [x, rd, g] = await Promise.all([
      s.api('POST', '/api/sandbox.exec', { body: { sandboxId: sb.uid, cmd: 'true' }, timeoutMs: 60000 }),
      readSmall(),
      v1('GET', '/v1/sandboxes/{sandbox}', { sandbox: sb.uid }),
    ]);
    for (const [what, a] of [['exec', x], ['read', rd]]) {
      const k = `${what} ${a.status}${a.status === 503 ? ` retry-after ${a.headers['retry-after']}` : ''}`;
      seen.set(k, (seen.get(k) ?? 0) + 1);
      assert.ok(a.status === 200 || (a.status === 503 && a.headers['retry-after'] === '1' && /snapshot/.test(a.json?.message)), `${what} during the capture: ${a.status} ${a.text}`);
    }
    if (rd.status === 200) assert.equal(rd.text, 'small\n');
    assert.equal(g.status, 200, `the sandbox during the capture: ${g.status} ${JSON.stringify(g.headers)} ${g.text}`);
    assert.equal(g.json.core.status, 'running', `the sandbox during the capture: ${g.text}`);
    const sn = await v1('GET', SNAP, { snapshot: r.json.uid });
    assert.equal(sn.status, 200, `the snapshot during the capture: ${sn.text}`);
    status = sn.json.status;
    // a round is 3 requests of the key; answers that are 503 at once would
    // otherwise pass the key's rate (rate_per_min 3000, burst 100) within
    // a capture of a few seconds, and its 429 is no answer to the capture
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.equal(status, 'ready', JSON.stringify([...seen]));
  // a stop while a capture holds the sandbox: a retryable 503 (a stop
  // then would be undone by the capture's thaw), never a stopped record
  // the container contradicts
  const r2 = await v1('POST', SNAP_CREATE, { sandbox: sb.uid }, { body: { displayName: 'busy2' } });
  assert.equal(r2.status, 202, r2.text);
  snaps.push(r2.json.uid);
  // a delete while the capture runs: refused until it settles (100 MiB
  // take a second or two; should it have settled already, the ETag moved)
  const early = await v1('DELETE', SNAP, { snapshot: r2.json.uid }, { headers: { 'if-match': r2.json.etag } });
  if (early.status === 409) assert.match(early.json.message, /^deletion_preparation_incomplete:/);
  else assert.equal(early.status, 412, early.text);
  console.log(`# delete during the capture: ${early.status}`);
  const tag = (await v1('GET', '/v1/sandboxes/{sandbox}', { sandbox: sb.uid })).headers.etag;
  const st = await v1('POST', '/v1/sandboxes/{sandbox}/stop', { sandbox: sb.uid }, { body: {}, headers: { 'if-match': tag } });
  assert.ok(st.status === 503 || st.status === 200, st.text);
  if (st.status === 503) assert.match(st.json.message, /snapshot/);
  await waitFor(async () => (await v1('GET', SNAP, { snapshot: r2.json.uid })).json.status !== 'creating', 120000, 200);
  const after = (await v1('GET', '/v1/sandboxes/{sandbox}', { sandbox: sb.uid })).json.core.status;
  assert.equal(after, st.status === 200 ? 'stopped' : 'running');
  if (after === 'stopped') {
    const pausedNow = execFileSync('docker', ['inspect', '-f', '{{.State.Paused}}', (await s.api('GET', '/api/sandbox.one', { query: { sandboxId: sb.uid } })).json.containerId], { encoding: 'utf8' }).trim();
    assert.equal(pausedNow, 'true', 'a stopped sandbox\'s container stays paused');
  }
  assert.equal((await sh(sb.uid, 'echo alive')).stdout, 'alive\n');
  assert.equal((await v1('GET', '/v1/sandboxes/{sandbox}', { sandbox: sb.uid })).json.core.status, 'running');
  console.log(`# exec and read answers during the capture: ${JSON.stringify([...seen])}`);
});

test('Idempotency-Key: a replay answers the first 202, one snapshot; another body is a 409', { timeout: 180000 }, async () => {
  const sb = await createV1();
  const key = `snap-${Date.now()}`;
  const first = await snapshot(sb.uid, { displayName: 'idem' }, { headers: { 'idempotency-key': key } });
  const again = await v1('POST', SNAP_CREATE, { sandbox: sb.uid }, { body: { displayName: 'idem' }, headers: { 'idempotency-key': key } });
  assert.equal(again.status, 202, again.text);
  assert.equal(again.json.uid, first.accepted.json.uid);
  const other = await v1('POST', SNAP_CREATE, { sandbox: sb.uid }, { body: { displayName: 'other' }, headers: { 'idempotency-key': key } });
  assert.equal(other.status, 409, other.text);
  assert.equal(other.json.code, 'failedPrecondition');
  const list = await v1('GET', SNAPS, {}, { query: { sandbox: `sandboxes/${sb.uid}` } });
  assert.equal(list.json.snapshots.length, 1, list.text);
  // restore replays too: one sandbox
  const rk = `restore-${Date.now()}`;
  const r1 = await restore(first.ready.uid, {}, { headers: { 'idempotency-key': rk } });
  const r2 = await restore(first.ready.uid, {}, { headers: { 'idempotency-key': rk } });
  assert.equal(r1.status, 201, r1.text);
  assert.equal(r2.status, 201, r2.text);
  assert.equal(r2.json.uid, r1.json.uid);
  await removeSandbox(r1.json.uid);
});

test('list, get, If-None-Match, filters and pages; another organization sees nothing (404)', { timeout: 240000 }, async () => {
  const sb = await createV1();
  const one = (await snapshot(sb.uid, { displayName: 'one' })).ready;
  const two = (await snapshot(sb.uid, { displayName: 'two' })).ready;
  const all = await v1('GET', SNAPS, {}, { query: { sandbox: `sandboxes/${sb.uid}` } });
  assert.equal(all.status, 200, all.text);
  assert.deepEqual(all.json.snapshots.map((x) => x.uid), [two.uid, one.uid], 'newest first');
  assert.equal(all.json.nextPageToken, '');
  const p1 = await v1('GET', SNAPS, {}, { query: { sandbox: `sandboxes/${sb.uid}`, pageSize: 1 } });
  assert.equal(p1.json.snapshots.length, 1);
  assert.notEqual(p1.json.nextPageToken, '');
  const p2 = await v1('GET', SNAPS, {}, { query: { sandbox: `sandboxes/${sb.uid}`, pageSize: 1, pageToken: p1.json.nextPageToken } });
  assert.deepEqual(p2.json.snapshots.map((x) => x.uid), [one.uid]);
  assert.equal(p2.json.nextPageToken, '');
  assert.equal((await v1('GET', SNAPS, {}, { query: { pageToken: p1.json.nextPageToken } })).status, 400, 'a token is bound to its list');
  const byName = await v1('GET', SNAPS, {}, { query: { filter: 'display_name=two' } });
  assert.ok(byName.json.snapshots.every((x) => x.displayName === 'two'));
  assert.ok(byName.json.snapshots.some((x) => x.uid === two.uid));
  const byUid = await v1('GET', SNAPS, {}, { query: { filter: `uid=${one.uid}` } });
  assert.deepEqual(byUid.json.snapshots.map((x) => x.uid), [one.uid]);
  assert.equal((await v1('GET', SNAPS, {}, { query: { filter: 'size=1' } })).status, 400);
  assert.equal((await v1('GET', SNAPS, {}, { query: { sandbox: 'nope' } })).status, 400);
  assert.equal((await v1('GET', SNAPS, {}, { query: { orderBy: 'name' } })).status, 501);
  const nm = await s.api('GET', `/v1/snapshots/${one.uid}`, { headers: { 'if-none-match': one.etag } });
  assert.equal(nm.status, 304);
  assert.equal((await v1('GET', SNAP, { snapshot: 'nosuchsnapshot000000' })).status, 404);
  assert.equal((await v1('GET', SNAP, { snapshot: 'x'.repeat(65) })).status, 400);

  // another organization: nothing of it, under any operation
  const other = await s.newKey(`other-${Date.now()}`);
  const as = { key: other };
  const g = await v1('GET', SNAP, { snapshot: one.uid }, as);
  assert.equal(g.status, 404, g.text);
  assert.equal(g.json.code, 'notFound');
  assert.deepEqual((await v1('GET', SNAPS, {}, as)).json.snapshots, []);
  assert.equal((await v1('POST', RESTORE, { snapshot: one.uid }, { ...as, body: {} })).status, 404);
  assert.equal((await v1('POST', SNAP_CREATE, { sandbox: sb.uid }, { ...as, body: { displayName: 'x' } })).status, 404);
  assert.equal((await v1('DELETE', SNAP, { snapshot: one.uid }, { ...as, headers: { 'if-match': one.etag } })).status, 204);
  assert.equal((await v1('GET', IMAGE, { image: `snapshot-${one.uid}` }, as)).status, 404);
  assert.ok(!(await v1('GET', IMAGES, {}, as)).json.images.some((i) => i.source === 'sandbox'));
  assert.equal((await v1('GET', SNAP, { snapshot: one.uid })).status, 200, 'still there for its own org');

  // permissions: restore needs snapshotsRead and sandboxesCreate (the
  // second checked by the handler, past nginx's check of the first one's
  // route permission); reads need snapshotsRead, a create snapshotsWrite
  await s.cli('roles', 'create', '--org', 'default', 'snapcreate', '--perms', 'sandboxesCreate,snapshotsWrite');
  await s.cli('roles', 'create', '--org', 'default', 'snapread', '--perms', 'snapshotsRead,sandboxesRead');
  const creator = await s.newKey('default', 'snapcreate');
  const reader = await s.newKey('default', 'snapread');
  for (const [key, want] of [[creator, /snapshotsRead/], [reader, /sandboxesCreate/]]) {
    const r = await v1('POST', RESTORE, { snapshot: one.uid }, { key, body: {} });
    assert.equal(r.status, 403, r.text);
    assert.equal(r.json.code, 'permissionDenied');
    assert.match(r.json.message, want);
  }
  assert.equal((await v1('GET', SNAP, { snapshot: one.uid }, { key: reader })).status, 200);
  assert.equal((await v1('GET', SNAP, { snapshot: one.uid }, { key: creator })).status, 403);
  assert.equal((await v1('POST', SNAP_CREATE, { sandbox: sb.uid }, { key: reader, body: { displayName: 'x' } })).status, 403);
  assert.equal((await v1('DELETE', SNAP, { snapshot: one.uid }, { key: reader, headers: { 'if-match': one.etag } })).status, 403);
  assert.equal((await v1('GET', IMAGES, {}, { key: reader })).status, 403);
  for (const x of [one, two]) {
    const d = await v1('DELETE', SNAP, { snapshot: x.uid }, { headers: { 'if-match': x.etag } });
    assert.equal(d.status, 204, d.text);
  }
});

test('images: the templates and the snapshots\' images, true status and size; create and pull-spec declined', { timeout: 180000 }, async () => {
  const list = await v1('GET', IMAGES);
  assert.equal(list.status, 200, list.text);
  const alpine = list.json.images.find((i) => i.uid === 'alpine');
  assert.ok(alpine, list.text);
  assert.equal(alpine.name, 'images/alpine');
  assert.equal(alpine.source, 'image');
  assert.equal(alpine.status, 'completed');
  assert.equal(alpine.imageRef, 'sandpit-test/busybox:latest');
  const d = dockerImage('sandpit-test/busybox:latest');
  assert.equal(alpine.totalSizeBytes, String(d.Size));
  assert.equal(alpine.imageDigest, d.Id);
  const g = await v1('GET', IMAGE, { image: 'alpine' });
  assert.equal(g.status, 200, g.text);
  assert.equal(g.headers.etag, g.json.etag);
  assert.equal((await s.api('GET', '/v1/images/alpine', { headers: { 'if-none-match': `W/${g.json.etag}` } })).status, 304);
  assert.equal((await v1('GET', IMAGE, { image: 'nosuchimage' })).status, 404);
  assert.equal((await v1('GET', IMAGES, {}, { query: { filter: 'status=completed,uid=alpine' } })).json.images.length, 1);
  // a template is the operator's
  const dt = await v1('DELETE', IMAGE, { image: 'alpine' }, { headers: { 'if-match': g.json.etag } });
  assert.equal(dt.status, 403, dt.text);
  assert.equal((await v1('DELETE', IMAGE, { image: 'alpine' })).status, 428);

  // a snapshot's image: preparing while captured, then completed, size and
  // digest Docker's; deleting it deletes the snapshot
  const sb = await createV1();
  const { ready } = await snapshot(sb.uid, { displayName: 'img' });
  const si = await v1('GET', IMAGE, { image: `snapshot-${ready.uid}` });
  assert.equal(si.status, 200, si.text);
  assert.equal(si.json.source, 'sandbox');
  assert.equal(si.json.status, 'completed');
  assert.equal(si.json.captureMode, 'disk');
  assert.equal(si.json.imageRef, `sandpit-snapshot:${ready.uid}`);
  const di = dockerImage(`sandpit-snapshot:${ready.uid}`);
  assert.equal(si.json.totalSizeBytes, String(di.Size));
  assert.equal(si.json.imageDigest, di.Id);
  assert.ok((await v1('GET', IMAGES)).json.images.some((i) => i.uid === `snapshot-${ready.uid}`));
  assert.equal((await v1('DELETE', IMAGE, { image: `snapshot-${ready.uid}` }, { headers: { 'if-match': '"old"' } })).status, 412);
  const del = await v1('DELETE', IMAGE, { image: `snapshot-${ready.uid}` }, { headers: { 'if-match': si.json.etag } });
  assert.equal(del.status, 204, del.text);
  assert.equal((await v1('GET', SNAP, { snapshot: ready.uid })).status, 404);
  assert.equal(dockerImage(`sandpit-snapshot:${ready.uid}`), null);

  // no registry: createImage and getImagePullSpec decline (501), no-store
  const c = await v1('POST', IMAGES, {}, { body: { displayName: 'pushed', fromImage: {} } });
  assert.equal(c.status, 501, c.text);
  assert.equal(c.json.code, 'unimplemented');
  assert.equal(c.headers['cache-control'], 'no-store');
  assert.equal((await v1('POST', IMAGES, {}, { body: { displayName: 'pushed' } })).status, 400);
  assert.equal((await v1('POST', IMAGES, {}, { body: { fromImage: {} } })).status, 400);
  const p = await v1('GET', PULL, { image: 'alpine' });
  assert.equal(p.status, 501, p.text);
  assert.equal(p.json.code, 'unimplemented');
  assert.equal(p.headers['cache-control'], 'no-store');
  assert.equal((await v1('GET', PULL, { image: 'nosuchimage' })).status, 404);
});
