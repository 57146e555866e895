// The process model seen from outside: a worker SIGKILLed mid-request is
// respawned and the next request succeeds; sandpitd -t checks a config.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { binDir, startStack, waitFor } from './lib/stack.mjs';

function workers(master) {
  const r = spawnSync('pgrep', ['-P', String(master)], { encoding: 'utf8' });
  return r.stdout.split('\n').filter(Boolean).map(Number);
}

test('a worker SIGKILLed mid-request is respawned and the next request succeeds', async () => {
  const s = await startStack();
  try {
    const master = Number(fs.readFileSync(path.join(s.dir, 'sandpitd.pid'), 'utf8'));
    const before = workers(master);
    assert.ok(before.length >= 1);
    const inflight = s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
    await new Promise((r) => setTimeout(r, 60));
    for (const pid of before) process.kill(pid, 'SIGKILL');
    const r = await inflight;
    assert.ok([200, 502, 503].includes(r.status), `in-flight request: ${r.status}`);
    await waitFor(() => workers(master).length >= 1 && !workers(master).some((p) => before.includes(p)), 5000);
    const next = await s.api('GET', '/api/sandbox.list');
    assert.equal(next.status, 200);
    if (r.status === 200) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: r.json.sandboxId } });
  } finally {
    await s.stop();
  }
});

test('sandpitd -t says configuration OK or what is wrong', () => {
  const bin = path.join(binDir, 'sandpitd');
  const dir = fs.mkdtempSync('/tmp/sandpit-conf-');
  fs.writeFileSync(path.join(dir, 'key'), 'ab'.repeat(32), { mode: 0o600 });
  fs.writeFileSync(path.join(dir, 'good.conf'), `listen = ${dir}/s.sock\ndata_key_file = ${dir}/key\n`);
  const ok = execFileSync(bin, ['-t', '-c', path.join(dir, 'good.conf')], { encoding: 'utf8' });
  assert.match(ok, /configuration .* OK/);
  fs.writeFileSync(path.join(dir, 'bad.conf'), `listen = ${dir}/s.sock\ndata_key_file = ${dir}/key\nworkers_max = lots\n`);
  const bad = spawnSync(bin, ['-t', '-c', path.join(dir, 'bad.conf')], { encoding: 'utf8' });
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /bad\.conf:3: workers_max must be an integer/);
  fs.writeFileSync(path.join(dir, 'unknown.conf'), `listen = ${dir}/s.sock\ndata_key_file = ${dir}/key\nfrobnicate = 1\n`);
  const unk = spawnSync(bin, ['-t', '-c', path.join(dir, 'unknown.conf')], { encoding: 'utf8' });
  assert.match(unk.stderr, /unknown key 'frobnicate'/);
  fs.rmSync(dir, { recursive: true });
});
