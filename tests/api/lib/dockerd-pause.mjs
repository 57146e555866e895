// A private dockerd that a test can SIGSTOP (L2, stall.test.mjs). lib/dockerd.mjs
// (L1) is the same idea with stop/start; the two are to become one.
// A private dockerd for tests that stop, hang or kill the Docker daemon
// (RELIABILITY L1, L2): never the shared one. It has its own --data-root,
// --exec-root (and so its own containerd), pidfile and unix socket, no
// default bridge and no iptables rules, and an empty daemon.json. The images
// it needs are copied from the shared daemon (docker save | docker load).
//
//   const d = await startPrivateDockerd({ images: ['sandpit-test/busybox:latest'] });
//   startStack({ env: { SANDPIT_DOCKER_HOST: d.host } });
//   d.pause(); d.resume();          // SIGSTOP / SIGCONT of dockerd itself
//   await d.docker('GET', '/containers/json');
//   await d.stop();                 // containers, networks, mounts, folder: all gone
import { spawn, execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

function sh(cmd, opts = {}) {
  return new Promise((resolve, reject) => {
    execFile('sh', ['-c', cmd], { maxBuffer: 16 << 20, timeout: 120000, ...opts }, (err, stdout, stderr) => {
      if (err) { err.message += `\n${stderr}`; reject(err); } else resolve(stdout);
    });
  });
}

function request(sock, method, urlPath, body, timeoutMs = 30000) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request({ socketPath: sock, method, path: `/v1.41${urlPath}`,
      headers: data ? { 'content-type': 'application/json', 'content-length': data.length } : {} }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let json;
        try { json = JSON.parse(text); } catch { json = undefined; }
        resolve({ status: res.statusCode, json, text });
      });
    });
    req.on('error', reject);
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`private dockerd ${method} ${urlPath}: timeout`)));
    if (data) req.write(data);
    req.end();
  });
}

const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Starts a private dockerd; resolves once it answers /_ping and has the images. */
export async function startPrivateDockerd({ images = ['sandpit-test/busybox:latest'] } = {}) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pd-'));
  const sock = path.join(dir, 'docker.sock');
  await writeFile(path.join(dir, 'daemon.json'), '{}\n');
  const log = await import('node:fs').then((fs) => fs.openSync(path.join(dir, 'dockerd.log'), 'a'));
  const child = spawn('dockerd', ['--config-file', path.join(dir, 'daemon.json'),
    '--data-root', path.join(dir, 'data'), '--exec-root', path.join(dir, 'exec'),
    '--pidfile', path.join(dir, 'dockerd.pid'), '-H', `unix://${sock}`,
    '--bridge=none', '--iptables=false', '--ip6tables=false', '--ip-masq=false',
    '--userland-proxy=false'], { detached: true, stdio: ['ignore', log, log] });
  child.unref();
  const pid = child.pid;
  const d = {
    dir, sock, pid, host: `unix://${sock}`,
    docker: (method, p, body, timeoutMs) => request(sock, method, p, body, timeoutMs),
    pause() { process.kill(pid, 'SIGSTOP'); },
    resume() { process.kill(pid, 'SIGCONT'); },
    async logTail(lines = 30) {
      return (await readFile(path.join(dir, 'dockerd.log'), 'utf8').catch(() => '')).split('\n').slice(-lines).join('\n');
    },
    async stop() {
      try { process.kill(pid, 'SIGCONT'); } catch { /* gone */ }
      if (alive(pid)) {
        const list = await d.docker('GET', '/containers/json?all=1', undefined, 5000).catch(() => null);
        for (const c of list?.json || [])
          await d.docker('DELETE', `/containers/${c.Id}?force=1`, undefined, 15000).catch(() => {});
        const nets = await d.docker('GET', '/networks', undefined, 5000).catch(() => null);
        for (const n of nets?.json || [])
          if (!['bridge', 'host', 'none'].includes(n.Name))
            await d.docker('DELETE', `/networks/${n.Id}`, undefined, 5000).catch(() => {});
        try { process.kill(pid, 'SIGTERM'); } catch { /* gone */ }
        for (let i = 0; i < 150 && alive(pid); i++) await sleep(100);
      }
      // its containerd and shims are in its process group
      try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ }
      await sleep(200);
      // mounts it left (overlay2, shm, netns) go before the folder does
      await sh(`grep -o ' ${dir}/[^ ]*' /proc/self/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done; true`);
      await rm(dir, { recursive: true, force: true }).catch(() => {});
    },
  };
  try {
    const t0 = Date.now();
    for (;;) {
      if (!alive(pid)) throw new Error(`private dockerd exited:\n${await d.logTail()}`);
      const r = await d.docker('GET', '/_ping', undefined, 2000).catch(() => null);
      if (r?.status === 200) break;
      if (Date.now() - t0 > 30000) throw new Error(`private dockerd did not answer within 30 s:\n${await d.logTail()}`);
      await sleep(200);
    }
    for (const img of images)
      await sh(`docker save ${img} | docker --host unix://${sock} load -q`);
  } catch (e) {
    await d.stop();
    throw e;
  }
  return d;
}
