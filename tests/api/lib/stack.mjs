// Helpers for the black-box API tests (node:test, no npm dependencies).
//
//   const stack = await startStack({ extraConf: 'log_level = debug' });
//   const r = await stack.api('POST', '/api/sandbox.create', { body: {...} });
//   r.status, r.headers, r.json, r.text
//   await stack.stop();
//
// SANDPIT_TEST_RUNTIME=gvisor adds `default_runtime = gvisor` to every
// stack's config (unless opts.extraConf sets default_runtime itself).
//
// startStack runs `bash deploy/stack.sh start <fresh temp dir>`: a real
// redis-server, sandpitd and nginx (TLS, verified against the stack's own
// certificate) on a free loopback port. The temp dir lives under
// os.tmpdir(), which tests/run.sh points at its own folder so that a stack a
// crashed test leaves behind is still stopped.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const binDir = process.env.SANDPIT_BIN || path.join(repoRoot, 'build');
const stackSh = path.join(repoRoot, 'deploy', 'stack.sh');

function run(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { maxBuffer: 16 << 20, ...opts }, (err, stdout, stderr) => {
      if (err) {
        err.message = `${cmd} ${args.join(' ')} failed (${err.code ?? err.signal}):\n${stderr}${stdout}`;
        err.stdout = stdout;
        err.stderr = stderr;
        reject(err);
      } else {
        resolve({ stdout, stderr });
      }
    });
  });
}

function parseEnv(text) {
  const env = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line);
    if (m) env[m[1]] = m[2];
  }
  return env;
}

// The containers of every record a stopped stack's Redis held: whatever a
// test did not remove (an assertion failed before its inline remove) is
// removed when the test process exits, so a failing test leaks nothing.
// Not at stop() itself: some tests stop the stack to watch its containers
// end on their own; by the time the process exits they have.
const leftovers = new Set();
function noteLeftovers(dir) {
  const sock = path.join(dir, 'redis.sock');
  if (!existsSync(sock)) return;
  try {
    const cli = (...a) => execFileSync('redis-cli', ['-s', sock, '--raw', ...a], { encoding: 'utf8', timeout: 10000 });
    for (const k of cli('--scan', '--pattern', '*:sb:*').split('\n').filter(Boolean)) {
      const cid = cli('HGET', k, 'containerId').trim();
      if (/^[0-9a-f]{64}$/.test(cid)) leftovers.add(cid);
    }
  } catch { /* Redis already gone: nothing to note */ }
}
process.on('exit', () => {
  if (!leftovers.size || process.env.SANDPIT_TEST_KEEP === '1') return;
  let alive = [];
  try {
    alive = execFileSync('docker', ['ps', '-q', '--no-trunc', ...[...leftovers].flatMap((c) => ['--filter', `id=${c}`])],
      { encoding: 'utf8', timeout: 20000 }).split('\n').filter(Boolean);
  } catch { return; }
  if (!alive.length) return;
  process.stderr.write(`stack.mjs: removing ${alive.length} sandbox container(s) a test left running: ${alive.map((c) => c.slice(0, 12)).join(' ')}\n`);
  try { execFileSync('docker', ['rm', '-f', '-v', ...alive], { stdio: 'ignore', timeout: 60000 }); } catch { /* best effort */ }
});

/** Resolves to fn()'s first truthy result; throws after timeoutMs. */
export async function waitFor(fn, timeoutMs = 10000, intervalMs = 200) {
  const deadline = Date.now() + timeoutMs;
  let lastErr;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
      lastErr = undefined;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() >= deadline) {
      const e = new Error(`waitFor: condition not met within ${timeoutMs} ms` +
        (lastErr ? `; last error: ${lastErr.message}` : ''));
      e.cause = lastErr;
      throw e;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** How many warm containers stack s has ready to hand out for a pool, as
 * its own /metrics counts them (sandpit_pool_ready): a container that runs
 * is not yet ready until its pool has registered it. */
export async function poolReady(s, template, network = 'isolated') {
  const r = await s.api('GET', '/metrics', { key: null });
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}`);
  // every instance (its sandpit_instance label first) counts the one
  // store: the largest is the count
  let n = 0;
  for (const line of r.text.split('\n')) {
    const m = /^sandpit_pool_ready\{([^}]*)\} (\d+)$/.exec(line);
    if (m && m[1].split(',').includes(`template="${template}"`) &&
        m[1].split(',').includes(`network="${network}"`))
      n = Math.max(n, Number(m[2]));
  }
  return n;
}

/** A request to the local Docker Engine API: { status, json, text }. */
export function docker(method, urlPath, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request({
      socketPath: process.env.SANDPIT_DOCKER_SOCK || '/var/run/docker.sock',
      path: urlPath,
      method,
      headers: data
        ? { 'content-type': 'application/json', 'content-length': data.length }
        : {},
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json;
        try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
        resolve({ status: res.statusCode, json, text });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(60000, () => req.destroy(new Error(`docker ${method} ${urlPath}: timeout`)));
    if (data) req.write(data);
    req.end();
  });
}

/**
 * Starts a stack in a fresh temp dir.
 * opts.extraConf: more "key = value" lines for sandpitd.conf (a string or an
 *                 array of lines); opts.env: more environment for stack.sh.
 */
export async function startStack(opts = {}) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sandpit-'));
  let extra = Array.isArray(opts.extraConf) ? opts.extraConf.join('\n') : (opts.extraConf || '');
  // SANDPIT_TEST_RUNTIME=gvisor: every sandbox of the stack runs under gVisor
  // unless its create names a runtime (tests/run.sh's gVisor pass)
  if (process.env.SANDPIT_TEST_RUNTIME && !/^default_runtime\s*=/m.test(extra))
    extra = `${extra ? `${extra}\n` : ''}default_runtime = ${process.env.SANDPIT_TEST_RUNTIME}`;
  const env = { ...process.env, ...(opts.env || {}) };
  if (extra) env.SANDPIT_EXTRA_CONF = extra;
  else delete env.SANDPIT_EXTRA_CONF;
  try {
    await run('bash', [stackSh, 'start', dir], { env, timeout: 120000 });
  } catch (e) {
    await run('bash', [stackSh, 'stop', dir]).catch(() => {});
    if (process.env.SANDPIT_TEST_KEEP !== '1') await rm(dir, { recursive: true, force: true });
    throw e;
  }
  const vars = parseEnv(await readFile(path.join(dir, 'env'), 'utf8'));
  const ca = await readFile(vars.SANDPIT_CA);
  const url = new URL(vars.SANDPIT_URL);
  const agent = new https.Agent({ ca, keepAlive: false, maxSockets: 256 });

  const stack = {
    url: vars.SANDPIT_URL,
    key: vars.SANDPIT_KEY,
    dir,
    config: vars.SANDPIT_CONFIG,
    ca,
    port: Number(url.port),

    /**
     * One HTTPS request. opts: body (JSON-encoded), rawBody (string or
     * Buffer, sent as is), query (object; object values JSON-encoded),
     * key (default the owner key; null or '' sends no x-api-key), headers
     * (a null value removes a header), timeoutMs, onData (called with each
     * piece of the answer body as it arrives).
     * Resolves to { status, headers, json, text, raw (the bytes) }; json is undefined when
     * the body is not JSON.
     */
    api(method, urlPath, o = {}) {
      let p = urlPath;
      if (o.query) {
        const qs = new URLSearchParams();
        for (const [k, v] of Object.entries(o.query)) {
          if (v === undefined) continue;
          qs.append(k, typeof v === 'object' ? JSON.stringify(v) : String(v));
        }
        const s = qs.toString();
        if (s) p += (p.includes('?') ? '&' : '?') + s;
      }
      const headers = { accept: 'application/json' };
      const key = o.key === undefined ? stack.key : o.key;
      if (key !== null && key !== '') headers['x-api-key'] = key;
      let data;
      if (o.rawBody !== undefined) {
        data = Buffer.isBuffer(o.rawBody) ? o.rawBody : Buffer.from(String(o.rawBody));
      } else if (o.body !== undefined) {
        data = Buffer.from(JSON.stringify(o.body));
        headers['content-type'] = 'application/json';
      }
      if (data) headers['content-length'] = data.length;
      Object.assign(headers, o.headers || {});
      for (const [k, v] of Object.entries(headers)) if (v === null) delete headers[k];
      return new Promise((resolve, reject) => {
        const req = https.request({
          host: '127.0.0.1',
          port: stack.port,
          servername: 'localhost',
          path: p,
          method,
          headers,
          agent,
        }, (res) => {
          const chunks = [];
          res.on('data', (c) => { chunks.push(c); o.onData?.(c); });
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let json;
            try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
            resolve({ status: res.statusCode, headers: res.headers, json, text, raw: Buffer.concat(chunks) });
          });
          res.on('error', reject);
        });
        req.on('error', reject);
        req.setTimeout(o.timeoutMs ?? 700000, () =>
          req.destroy(new Error(`${method} ${p}: no answer within ${o.timeoutMs ?? 700000} ms`)));
        if (data) req.write(data);
        req.end();
      });
    },

    /** A new API key for org (created with build/sandpit keys create). */
    async newKey(org, role = 'owner') {
      const { stdout } = await run(path.join(binDir, 'sandpit'),
        ['-c', vars.SANDPIT_CONFIG, 'keys', 'create', '--org', org, '--role', role]);
      const k = stdout.trim();
      if (!k || k.includes('\n')) throw new Error(`sandpit keys create printed: ${stdout}`);
      return k;
    },

    /** Runs build/sandpit -c <config> ...args; resolves to { stdout, stderr }. */
    cli(...args) {
      return run(path.join(binDir, 'sandpit'), ['-c', vars.SANDPIT_CONFIG, ...args]);
    },

    docker,

    /** The last lines of a log in the stack dir (default sandpitd.log). */
    async logTail(name = 'sandpitd.log', lines = 50) {
      const t = await readFile(path.join(dir, name), 'utf8').catch(() => '');
      return t.split('\n').slice(-lines - 1).join('\n');
    },

    /** Stops the stack and removes its dir (kept with SANDPIT_TEST_KEEP=1). */
    async stop() {
      agent.destroy();
      noteLeftovers(dir);
      await run('bash', [stackSh, 'stop', dir], { timeout: 60000 });
      if (process.env.SANDPIT_TEST_KEEP !== '1') await rm(dir, { recursive: true, force: true });
    },
  };
  return stack;
}
