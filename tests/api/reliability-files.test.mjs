// RELIABILITY F3: code in the sandbox swaps a directory for a symlink to
// /etc, and a file of its own for a symlink to /etc/shadow, as fast as it
// can, while the API writes into the directory and reads the file. Every
// file operation runs as the sandbox user, so whatever state the race
// catches, nothing is written where that user could not write (/etc is
// byte for byte the same, nothing new anywhere outside the user's own
// folders) and nothing is read that the user could not read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from './lib/stack.mjs';
import { sandboxStack } from './lib/suite.mjs';
import { dockerExec } from './lib/docker.mjs';

let s;
const { create, exec } = sandboxStack((stack) => { s = stack; });

// every file under /etc with its hash, and every name under / outside the
// sandbox user's own folders that changed since the marker (seen as root)
const SNAPSHOT = 'find /etc -xdev -type f -exec sha256sum {} + | sort; ' +
  'find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /home/user -o -path /tmp -o -path /.sandpit \\) -prune ' +
  '-o -newer /dev/shm/.f3-mark -print';

test('F3: a symlink/directory swap race during writes and reads writes nothing outside and reads nothing it may not', { timeout: 240000 }, async (t) => {
  // half a core for the swapper: the test files beside it need the rest
  const sb = await create({ template: 'python', cpu: 0.5 });
  const id = sb.sandboxId, cid = sb.containerId;
  assert.equal((await dockerExec(cid, ['sh', '-c', 'touch /dev/shm/.f3-mark && sleep 1.1'], { user: '0' })).exitCode, 0);
  const before = await dockerExec(cid, ['sh', '-c', SNAPSHOT], { user: '0' });
  assert.match(before.stdout, /\/etc\/shadow\n/);
  assert.match(before.stdout, /\/etc\/passwd\n/);
  // d: a directory, then a symlink to /etc; r: the user's file, then a
  // symlink to /etc/shadow (root's, unreadable to the user)
  const swapper = exec(id, 'cd /home/user; i=0; while [ ! -e /tmp/f3-stop ]; do ' +
    'rm -rf d; mkdir d; rm -rf d; ln -s /etc d; rm -f r; echo mine >r; rm -f r; ln -s /etc/shadow r; ' +
    'i=$((i+1)); done; echo $i', { timeoutMs: 120000 });
  await waitFor(async () => (await dockerExec(cid, ['sh', '-c', '[ -L /home/user/r ] || [ -f /home/user/r ]'])).exitCode === 0, 10000, 100);

  const writes = {}, reads = {}, t0 = Date.now();
  let landed = 0, readMine = 0;
  const N = 120;
  const one = async (i) => {
    const w = await s.api('POST', '/api/sandbox.writeFile', {
      body: { sandboxId: id, path: `/home/user/d/${i % 2 ? 'passwd' : `new-${i}`}`, content: 'evil::0:0::/:/bin/sh\n' },
    });
    writes[w.status] = (writes[w.status] || 0) + 1;
    if (w.status === 200) landed++;
    const r = await s.api('GET', '/api/sandbox.readFile', { query: { sandboxId: id, path: '/home/user/r' } });
    reads[r.status] = (reads[r.status] || 0) + 1;
    assert.ok(!r.text.includes('root:'), `shadow content in a read: ${r.text.slice(0, 200)}`);
    if (r.status === 200) {
      // the user's own file, caught whole or just created (still empty)
      assert.ok(['mine\n', ''].includes(r.json.content), r.text);
      if (r.json.content === 'mine\n') readMine++;
    }
  };
  // four at a time: N pairs, then more (up to 4 N) until both states
  // were caught, on a loaded machine the swapper may be slow to land in one
  let n = 0;
  while (n < N || (n < 4 * N && !(landed > 0 && (writes[403] || 0) > 0))) {
    await Promise.all([0, 1, 2, 3].map((k) => one(n + k)));
    n += 4;
  }
  const ms = Date.now() - t0;
  await dockerExec(cid, ['touch', '/tmp/f3-stop']);
  const sw = await swapper;
  assert.equal(sw.status, 200, sw.text);
  assert.equal(sw.json.timedOut, false, 'the swapper ran until told to stop');
  const swaps = Number(sw.json.stdout.trim());
  t.diagnostic(`${swaps} swap rounds during ${n} writes and ${n} reads (${ms} ms); ` +
    `write statuses ${JSON.stringify(writes)} (${landed} landed in the directory), read statuses ${JSON.stringify(reads)} (${readMine} whole)`);
  assert.ok(swaps >= 20, `only ${swaps} swap rounds: the race was not run`);
  // no server fault: a refusal is the caller's (4xx; 409: the folder went
  // away under the write, issue 12), never a 5xx
  for (const st of Object.keys(writes)) assert.ok(['200', '400', '403', '404', '409'].includes(st), `write status ${st}`);
  for (const st of Object.keys(reads)) assert.ok(['200', '400', '403', '404'].includes(st), `read status ${st}`);
  // both states were caught: some writes went in, some were refused by /etc
  assert.ok(landed > 0 && (writes[403] || 0) > 0, `writes ${JSON.stringify(writes)}`);

  const after = await dockerExec(cid, ['sh', '-c', SNAPSHOT], { user: '0' });
  const was = new Set(before.stdout.split('\n'));
  const now = new Set(after.stdout.split('\n'));
  assert.deepEqual({ changed: [...now].filter((l) => !was.has(l)), gone: [...was].filter((l) => !now.has(l)) },
    { changed: [], gone: [] }, 'nothing under /etc changed and nothing new outside the user\'s folders');
  const etc = await dockerExec(cid, ['sh', '-c', 'ls -a /etc | grep -c -e "^new-" -e "^\\.sandpit-write-"'], { user: '0' });
  assert.equal(etc.stdout.trim(), '0');
  // the sandbox is fine afterwards
  const ok = await exec(id, 'echo ok');
  assert.equal(ok.json.stdout, 'ok\n');
});
