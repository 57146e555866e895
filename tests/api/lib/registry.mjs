// A private Docker registry (Debian's docker-registry, distribution 2.8)
// for tests: plain HTTP on a free loopback port (dockerd treats
// 127.0.0.0/8 registries as insecure, so push and pull work without
// reconfiguring the shared daemon), its storage in a temp folder. stop()
// ends it and removes the folder; it may be stopped and started again on
// the same port and storage (the "registry down" case).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const BIN = process.env.SANDPIT_REGISTRY_BIN || '/usr/bin/docker-registry';

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function up(url, ms) {
  const t0 = Date.now();
  for (;;) {
    try {
      const r = await fetch(`${url}/v2/`, { signal: AbortSignal.timeout(2000) });
      if (r.status === 200 || r.status === 401) return;
    } catch { /* not yet */ }
    if (Date.now() - t0 > ms) throw new Error(`the registry at ${url} did not come up within ${ms} ms`);
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

/** A bcrypt htpasswd line for user:password (the registry's basic auth). */
export function htpasswdLine(user, password) {
  const hash = execFileSync('python3', ['-W', 'ignore', '-c',
    'import crypt,sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))', password],
  { encoding: 'utf8' }).trim();
  if (!hash.startsWith('$2')) throw new Error(`no bcrypt from python3's crypt: ${hash}`);
  return `${user}:${hash}`;
}

/**
 * Starts a registry. opts.htpasswd: the lines of an htpasswd file (see
 * htpasswdLine): the registry then wants basic auth; setHtpasswd
 * rewrites it (takes effect at the next start).
 */
export async function startRegistry(opts = {}) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sandpit-registry-'));
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const cfg = path.join(dir, 'config.yml');
  const htpasswd = path.join(dir, 'htpasswd');
  if (opts.htpasswd) await writeFile(htpasswd, `${opts.htpasswd}\n`);
  await writeFile(cfg, [
    'version: 0.1',
    'log:',
    '  level: warn',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${path.join(dir, 'data')}`,
    'http:',
    `  addr: ${host}`,
    ...(opts.htpasswd ? ['auth:', '  htpasswd:', '    realm: sandpit-test', `    path: ${htpasswd}`] : []),
    '',
  ].join('\n'));
  const url = `http://${host}`;
  let proc = null;
  const reg = {
    host,
    url,
    dir,
    async start() {
      proc = spawn(BIN, ['serve', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
      proc.stderr.resume();
      await up(url, 15000);
    },
    async setHtpasswd(text) {
      await writeFile(htpasswd, `${text}\n`);
    },
    async halt() {
      if (!proc) return;
      const p = proc;
      proc = null;
      await new Promise((ok) => { p.once('exit', ok); p.kill('SIGTERM'); setTimeout(() => { p.kill('SIGKILL'); }, 5000).unref(); });
    },
    /** GET on the registry's own API; resolves to { status, headers, json }. */
    async get(p, headers = {}) {
      const r = await fetch(`${url}${p}`, { headers, signal: AbortSignal.timeout(10000) });
      const text = await r.text();
      let json;
      try { json = JSON.parse(text); } catch { json = undefined; }
      return { status: r.status, headers: Object.fromEntries(r.headers), json, text };
    },
    async stop() {
      await reg.halt();
      await rm(dir, { recursive: true, force: true });
    },
  };
  await reg.start();
  return reg;
}
