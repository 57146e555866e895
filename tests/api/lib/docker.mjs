// Talks to the real dockerd over its unix socket, for tests that check
// what sandpit did (docker inspect, exec inside a sandbox, removing a
// container behind sandpit's back).
import http from 'node:http';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

const SOCK = process.env.DOCKER_SOCK || '/var/run/docker.sock';

function raw(method, path, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request({ socketPath: SOCK, method, path: '/v1.41' + path,
      headers: data ? { 'content-type': 'application/json', 'content-length': data.length } : {} },
    (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

export async function docker(method, path, body) {
  const r = await raw(method, path, body);
  let json = null;
  try { json = JSON.parse(r.body.toString()); } catch { /* not JSON */ }
  return { status: r.status, json, text: r.body.toString() };
}

// Runs cmd in a container through Docker (not through sandpit); returns
// {stdout, stderr, exitCode}. user defaults to the container's.
export async function dockerExec(cid, cmd, { user, env } = {}) {
  const c = await docker('POST', `/containers/${cid}/exec`, {
    AttachStdout: true, AttachStderr: true, Cmd: cmd, ...(user ? { User: user } : {}), ...(env ? { Env: env } : {}),
  });
  if (c.status !== 201) throw new Error(`exec create ${c.status}: ${c.text}`);
  const r = await raw('POST', `/exec/${c.json.Id}/start`, { Detach: false, Tty: false });
  let out = Buffer.alloc(0), err = Buffer.alloc(0), b = r.body;
  while (b.length >= 8) {
    const n = b.readUInt32BE(4);
    const part = b.subarray(8, 8 + n);
    if (b[0] === 2) err = Buffer.concat([err, part]); else out = Buffer.concat([out, part]);
    b = b.subarray(8 + n);
  }
  const i = await docker('GET', `/exec/${c.json.Id}/json`);
  return { stdout: out.toString(), stderr: err.toString(), exitCode: i.json.ExitCode };
}

// What a live stream's readers wait on: wake() after each arrival, fail(e)
// once the stream broke; until(find, what, limitMs) resolves to find()'s
// first value other than undefined (asked now and after each wake), and
// rejects when the stream failed first or limitMs passed ("no WHAT").
function waiting() {
  const waiters = new Set();
  let failed = null;
  const wake = () => { for (const w of [...waiters]) w(); };
  return {
    wake,
    fail(e) { failed = e; wake(); },
    until(find, what, limitMs) {
      return new Promise((resolve, reject) => {
        const done = (f, v) => { clearTimeout(timer); waiters.delete(w); f(v); };
        const w = () => {
          const v = find();
          if (v !== undefined) done(resolve, v);
          else if (failed) done(reject, failed);
        };
        const timer = setTimeout(() => done(reject, new Error(`no ${what} within ${limitMs} ms`)), limitMs);
        waiters.add(w);
        w();
      });
    },
  };
}

// Docker's events of container cid with the given actions (['kill',
// 'die']), read from a live event stream: { events, until, stop }.
// events fills as they come: { action, signal (a kill's), ms (since the
// epoch) }; until(action, limitMs) resolves to the first event of that
// action (rejects when none came within limitMs); stop() closes the
// stream. With sinceMs the stream starts there (a second earlier: Docker's
// "since" is in seconds), else now (give it a moment to open before the
// events it must see). A live stream, not a query after the fact: dockerd
// replays only its last 256 events for a "since" query, which other
// containers' events on a busy host push out within seconds.
export function watchEvents(cid, actions, sinceMs) {
  const events = [];
  const wait = waiting();
  let stopped = false;
  const params = { filters: JSON.stringify({ container: [cid], event: actions }) };
  if (sinceMs !== undefined) params.since = String(Math.floor(sinceMs / 1000) - 1);
  const q = new URLSearchParams(params);
  const req = http.request({ socketPath: SOCK, method: 'GET', path: `/v1.41/events?${q}` }, (res) => {
    let buf = '';
    res.setEncoding('utf8');
    res.on('data', (c) => {
      buf += c;
      for (let i; (i = buf.indexOf('\n')) >= 0;) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (!line.trim()) continue;
        const ev = JSON.parse(line);
        if (ev.id !== cid && ev.Actor?.ID !== cid) continue;
        events.push({ action: ev.Action, signal: ev.Actor?.Attributes?.signal, ms: Math.round(ev.timeNano / 1e6) });
      }
      wait.wake();
    });
  });
  req.on('error', (e) => { if (!stopped) wait.fail(e); });
  req.end();
  return {
    events,
    until: (action, limitMs) => wait.until(() => events.find((e) => e.action === action),
      `${action} event of container ${cid.slice(0, 12)}`, limitMs),
    stop() { stopped = true; req.destroy(); },
  };
}

// When the container's main process ended ("die" in Docker's event log), in
// ms since the epoch; waits for it (limitMs at most). Measures the
// container itself, not how soon Docker then removed it. Reads a live
// event stream that starts at sinceMs (see watchEvents).
export async function diedAt(cid, sinceMs, limitMs) {
  const w = watchEvents(cid, ['die'], sinceMs);
  try {
    return (await w.until('die', limitMs)).ms;
  } finally {
    w.stop();
  }
}

// Every process in a container, seen through Docker (not sandpit) as the
// sandbox user (who may read its processes' environ): pid, state, whether
// its environment holds sandpit's exec marker, its command line.
const SCAN = `for d in /proc/[0-9]*; do p=\${d#/proc/}; [ "$p" = "$$" ] && continue
st=$(cat $d/stat 2>/dev/null) || continue; m=0
tr '\\000' '\\n' 2>/dev/null <$d/environ | grep -q '^SANDPIT_EXEC=' && m=1
printf '%s\\001%s\\001%s\\001%s\\n' "$p" "$m" "$st" "$(tr '\\000\\n' '  ' 2>/dev/null <$d/cmdline)"; done`;
// (The container's own user is the keeper, which may not read the sandbox
// user's environ: the sandbox user is named, as sandpit names it.)
export async function procs(cid, user = '1000:1000') {
  const r = await dockerExec(cid, ['sh', '-c', SCAN], { user });
  return r.stdout.split('\n').filter(Boolean).map((l) => {
    const [pid, marked, stat, cmd] = l.split('\x01');
    return { pid: Number(pid), marked: marked === '1', state: stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3), cmd };
  });
}

/**
 * An image that a create refuses after its container exists (it lacks
 * sh, the one program of the image's that sandpit runs): the busybox
 * fixture without /bin/sh, committed as sandpit-test/nosh:t<pid> (the test
 * stacks' image_allow covers sandpit-test/*). Made once per process;
 * resolves to its name. Remove it with removeNoShImage() after.
 */
let noSh;
export async function noShImage() {
  if (noSh) return noSh;
  const name = `sandpit-test/nosh:t${process.pid}`;
  const c = await docker('POST', '/containers/create', { Image: 'sandpit-test/busybox:latest', Entrypoint: ['/bin/rm'], Cmd: ['/bin/sh'], NetworkDisabled: true });
  if (c.status !== 201) throw new Error(`noShImage: create: ${c.text}`);
  try {
    const st = await docker('POST', `/containers/${c.json.Id}/start`);
    if (st.status !== 204) throw new Error(`noShImage: start: ${st.text}`);
    await docker('POST', `/containers/${c.json.Id}/wait`);
    const m = await docker('POST', `/commit?container=${c.json.Id}&repo=sandpit-test/nosh&tag=t${process.pid}&changes=${encodeURIComponent('ENTRYPOINT []')}&changes=${encodeURIComponent('CMD []')}`);
    if (m.status !== 201) throw new Error(`noShImage: commit: ${m.text}`);
  } finally {
    await docker('DELETE', `/containers/${c.json.Id}?force=1`);
  }
  noSh = name;
  return name;
}
export async function removeNoShImage() {
  if (noSh) await docker('DELETE', `/images/${encodeURIComponent(noSh)}?force=1`);
  noSh = undefined;
}

// containerd's socket as dockerd uses it: its --containerd flag, else the
// one dockerd starts for itself, else the system's.
function containerdSocket() {
  try {
    const pid = readFileSync('/var/run/docker.pid', 'utf8').trim();
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    for (const [i, a] of argv.entries()) {
      if (a.startsWith('--containerd=')) return a.slice('--containerd='.length);
      if (a === '--containerd' && argv[i + 1]) return argv[i + 1];
    }
  } catch { /* no pid file: the defaults */ }
  const own = '/var/run/docker/containerd/containerd.sock';
  return existsSync(own) ? own : '/run/containerd/containerd.sock';
}

/**
 * When containers' main processes ended, as containerd's shim saw it (the
 * exited_at of the /tasks/exit of a container's init, from `ctr events`):
 * the moment nothing of the container runs any more. Docker's "die" event
 * comes later, after dockerd's own cleanup (the runtime's delete, the
 * output streams' end: about 60 ms under runc on an idle host, seconds on
 * a busy one), so a claim about when a container stops running is
 * measured here. A live stream: start it before the exits it must see.
 * Returns { until(cid, limitMs) → ms since the epoch, stop() }.
 */
export function exitWatch() {
  const exits = new Map();
  const wait = waiting();
  let stopped = false, buf = '', err = '';
  const p = spawn('ctr', ['-a', containerdSocket(), '-n', 'moby', 'events'], { stdio: ['ignore', 'pipe', 'pipe'] });
  p.stdout.setEncoding('utf8');
  p.stdout.on('data', (c) => {
    buf += c;
    for (let i; (i = buf.indexOf('\n')) >= 0;) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const m = / \/tasks\/exit (\{.*\})$/.exec(line);
      if (!m) continue;
      const ev = JSON.parse(m[1]);
      // an exec's exit names its exec id; the init's, the container's
      if (ev.id === ev.container_id) exits.set(ev.container_id, Date.parse(ev.exited_at));
    }
    wait.wake();
  });
  p.stderr.on('data', (c) => { err += c; });
  p.on('error', (e) => wait.fail(e));
  p.on('exit', (code) => { if (!stopped) wait.fail(new Error(`ctr events ended (${code}): ${err}`)); });
  return {
    until: (cid, limitMs) => wait.until(() => exits.get(cid), `exit of container ${cid.slice(0, 12)}`, limitMs),
    stop() { stopped = true; p.kill(); },
  };
}
