// Issue 24, D3(b): a snapshot's capture streams the workdir from the paused
// source into the image's container through a fixed buffer; no worker ever
// holds the workdir's tar. A sandbox with a 2000 MiB sparse file (no
// blocks used) and 200 MiB of real data is captured, and the peak RSS
// (VmHWM) of every sandpitd worker of the stack stays under 100 MB: a
// worker idles at about 15 MB and the copy's ring is 4 MiB, where the old
// capture read the whole 2.2 GB tar into the worker (and failed past
// diskMb + 64 MiB). A capture that takes longer than the Docker timeout
// (30 s) while it makes progress is not cut by it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startStack, waitFor } from './lib/stack.mjs';

const MiB = 1024 * 1024;
const RSS_BOUND_KB = 100 * 1024;
let s;
const made = [];
const snaps = [];

before(async () => {
  s = await startStack();
});
after(async () => {
  for (const id of snaps) {
    const t0 = Date.now();
    let r;
    do {
      r = await s?.api('GET', `/v1/snapshots/${id}`).catch(() => null);
      if (r?.json?.status === 'creating') await new Promise((ok) => setTimeout(ok, 500));
    } while (r?.json?.status === 'creating' && Date.now() - t0 < 300000);
    if (r?.status === 200) await s.api('DELETE', `/v1/snapshots/${id}`, { headers: { 'if-match': r.headers.etag } }).catch(() => {});
    try { execFileSync('docker', ['rmi', '-f', `sandpit-snapshot:${id}`], { stdio: 'ignore' }); } catch { /* gone */ }
  }
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await s?.stop();
});

// the workers: the master's children
function workers() {
  const master = fs.readFileSync(path.join(s.dir, 'sandpitd.pid'), 'utf8').trim();
  const kids = fs.readFileSync(`/proc/${master}/task/${master}/children`, 'utf8').trim();
  return kids ? kids.split(/\s+/).map(Number) : [];
}
function hwmKb(pid) {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0; /* ended */
  }
}

test('D3(b): a capture of 2000 MiB sparse + 200 MiB real data keeps every worker under 100 MB', { timeout: 600000 }, async () => {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', diskMb: 1024, memoryMb: 256, timeoutMs: 900000 } });
  assert.equal(c.status, 200, c.text);
  const id = c.json.sandboxId;
  made.push(id);
  const w = await s.api('POST', '/api/sandbox.exec', {
    body: { sandboxId: id, cmd: 'head -c 209715200 /dev/zero > real && truncate -s 2000M sparse && sync && du -k real sparse && stat -c %s sparse', timeoutMs: 120000 },
    timeoutMs: 180000,
  });
  assert.equal(w.status, 200, w.text);
  assert.equal(w.json.exitCode, 0, w.text);
  assert.match(w.json.stdout, /^0\s+sparse$/m, 'the sparse file holds no blocks');
  assert.match(w.json.stdout, /^2097152000$/m);

  const peak = new Map();
  const sample = () => { for (const p of workers()) peak.set(p, Math.max(peak.get(p) || 0, hwmKb(p))); };
  sample();
  const t0 = Date.now();
  const r = await s.api('POST', `/v1/sandboxes/${id}/snapshots`, { body: { displayName: 'big' } });
  assert.equal(r.status, 202, r.text);
  snaps.push(r.json.uid);
  let last;
  await waitFor(async () => {
    sample();
    last = await s.api('GET', `/v1/snapshots/${r.json.uid}`);
    assert.equal(last.status, 200, last.text);
    return last.json.status !== 'creating';
  }, 540000, 250);
  sample();
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  const max = Math.max(...peak.values());
  const log = [...peak].map(([p, k]) => `${p}:${k}kB`).join(' ');
  console.log(`capture ${last.json.status} in ${secs} s, ${last.json.totalSizeBytes} bytes; worker peaks ${log}`);
  assert.equal(last.json.status, 'ready', last.text);
  // the image holds the sparse file's zeros and the real data
  assert.ok(Number(last.json.totalSizeBytes) > 2200 * MiB * 0.95, last.json.totalSizeBytes);
  assert.ok(max < RSS_BOUND_KB, `a worker's peak RSS reached ${max} kB (bound ${RSS_BOUND_KB} kB): ${log}`);
  // the source runs on, thawed
  const after = await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: 'echo alive' } });
  assert.equal(after.json.stdout.trim(), 'alive');
});
