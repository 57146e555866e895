// sandbox.kill stops the container with a 2 s grace, then SIGKILL (README
// "Lifecycle"): seen in Docker's own event stream, with a main process
// that cannot take the TERM (stopped through Docker, as root, not through
// sandpit), and with one that can.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sandboxStack } from './lib/suite.mjs';
import { dockerExec, watchEvents } from './lib/docker.mjs';

let s;
const { create } = sandboxStack((stack) => { s = stack; }, { extraConf: `label_prefix = spkill${process.pid}` });

const waitDie = (w) => w.until('die', 30000);

test('kill: TERM, then SIGKILL 2 s later when the main process does not end', async () => {
  const sb = await create({ template: 'alpine' });
  // the main process (PID 1's child, the helper's `sleep`), stopped through Docker as
  // its own uid (capabilities are dropped, so root could not): a pending
  // TERM cannot end it
  const st = await dockerExec(sb.containerId, ['sh', '-c', 'for d in /proc/[0-9]*; do [ "$(cut -d" " -f4 $d/stat)" = 1 ] && tr "\\000" " " <$d/cmdline | grep -q "^/.sandpit-helper/sandpit-helper-r sleep " && echo "${d#/proc/} $(awk \'/^Uid:/ {print $2}\' $d/status)"; done'], { user: '0' });
  const m = /^(\d+) (\d+)\n$/.exec(st.stdout);
  assert.ok(m, `the main sleep: ${st.stdout}${st.stderr}`);
  const stop = await dockerExec(sb.containerId, ['kill', '-STOP', m[1]], { user: m[2] });
  assert.equal(stop.exitCode, 0, stop.stderr);
  await new Promise((r) => setTimeout(r, 300)); // the events stream is open before the kill
  const w = watchEvents(sb.containerId, ['kill', 'die']);
  await new Promise((r) => setTimeout(r, 300));
  const k = await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: sb.sandboxId }, timeoutMs: 60000 });
  assert.equal(k.status, 200, k.text);
  assert.equal(k.json.status, 'killed');
  await waitDie(w);
  w.stop();
  const kills = w.events.filter((e) => e.action === 'kill');
  assert.deepEqual(kills.map((e) => e.signal), ['15', '9'], JSON.stringify(w.events));
  const grace = kills[1].ms - kills[0].ms;
  // dockerd times the grace itself: 2 s, whatever the load on sandpit
  assert.ok(grace >= 1900 && grace < 3500, `SIGKILL ${grace} ms after TERM`);
});

test('kill: a main process that takes the TERM ends at once, no SIGKILL', async () => {
  const sb = await create({ template: 'alpine' });
  const w = watchEvents(sb.containerId, ['kill', 'die']);
  await new Promise((r) => setTimeout(r, 300));
  const k = await s.api('POST', '/api/sandbox.kill', { body: { sandboxId: sb.sandboxId }, timeoutMs: 60000 });
  assert.equal(k.status, 200, k.text);
  await waitDie(w);
  w.stop();
  const kills = w.events.filter((e) => e.action === 'kill');
  assert.deepEqual(kills.map((e) => e.signal), ['15'], JSON.stringify(w.events));
  const die = w.events.find((e) => e.action === 'die');
  assert.ok(die && die.ms - kills[0].ms < 1900, `ended ${die?.ms - kills[0].ms} ms after TERM`);
});
