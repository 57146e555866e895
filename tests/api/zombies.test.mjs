// RELIABILITY A9 on its own (it runs 500 commands, about a minute and a
// half on 2 cores): commands that orphan children leave no zombies behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sandboxStack } from './lib/suite.mjs';
import { dockerExec } from './lib/docker.mjs';

const { create, exec } = sandboxStack();

// Every process in a container, seen through Docker (not sandpit) as the
// sandbox user (who may read its processes' environ): pid, state, whether
// its environment holds sandpit's exec marker, its command line.
const SCAN = `for d in /proc/[0-9]*; do p=\${d#/proc/}; [ "$p" = "$$" ] && continue
st=$(cat $d/stat 2>/dev/null) || continue; m=0
tr '\\000' '\\n' 2>/dev/null <$d/environ | grep -q '^SANDPIT_EXEC=' && m=1
printf '%s\\001%s\\001%s\\001%s\\n' "$p" "$m" "$st" "$(tr '\\000\\n' '  ' 2>/dev/null <$d/cmdline)"; done`;
async function procs(cid) {
  const r = await dockerExec(cid, ['sh', '-c', SCAN]);
  return r.stdout.split('\n').filter(Boolean).map((l) => {
    const [pid, marked, stat, cmd] = l.split('\x01');
    return { pid: Number(pid), marked: marked === '1', state: stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3), cmd };
  });
}

test('A9: after 500 commands that orphan children, no zombies remain', async (t) => {
  const sb = await create({ template: 'alpine' });
  const t0 = Date.now();
  let next = 0, failed = 0;
  const lane = async () => {
    while (next < 500) {
      next++;
      const r = await exec(sb.sandboxId, "sh -c 'sleep 0.1 &'; (sleep 0.05 &) ; echo x");
      if (r.status !== 200 || r.json.exitCode !== 0 || r.json.stdout !== 'x\n') failed++;
    }
  };
  await Promise.all(Array.from({ length: 8 }, lane));
  t.diagnostic(`500 commands in ${Date.now() - t0} ms`);
  assert.equal(failed, 0);
  await new Promise((r) => setTimeout(r, 500));
  const ps = await procs(sb.containerId);
  assert.deepEqual(ps.filter((p) => p.state === 'Z'), [], 'no zombies');
  assert.deepEqual(ps.filter((p) => p.marked), [], 'nothing of the commands runs on');
  assert.ok(ps.length < 10, `${ps.length} processes left`);
});

