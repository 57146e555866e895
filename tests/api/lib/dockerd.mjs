// A private dockerd for one test file, for faults that must not touch the
// shared daemon (L1: dockerd stopped and started again, faults-dockerd;
// L2: dockerd SIGSTOPped, stall). Its own
// --data-root, --exec-root (and so its own containerd), --pidfile, socket
// and config file (an empty one: not /etc/docker/daemon.json); its own
// network namespace (unshare --net), so its start leaves the host's docker0
// alone; no docker0 of its own (--bridge=none) and no iptables rules
// (--iptables=false, --ip-masq=false): the user-defined bridge networks
// sandpit makes still work, on an address pool of their own
// (10.253.N.0/22, N from the pid).
//
//   const d = await startDockerd();           // d.host: unix://.../docker.sock
//   await d.load('sandpit-test/busybox:latest'); // docker save | docker load
//   await d.stop();  await d.start();         // the same daemon, same data
//   d.pause();  d.resume();                   // SIGSTOP / SIGCONT of dockerd itself
//   await d.destroy();                        // networks removed, stopped, files gone
//
// It never signals any process but the dockerd it started itself.
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

function ping(sock) {
  return new Promise((resolve) => {
    const req = http.request({ socketPath: sock, path: '/_ping', method: 'GET' }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
    });
    req.on('error', () => resolve(false));
    req.setTimeout(2000, () => { req.destroy(); resolve(false); });
    req.end();
  });
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function alive(pid) {
  try { process.kill(pid, 0); } catch { return false; }
  try { return !/^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8')); } catch { return false; }
}
function sh(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => execFile(cmd, args, { maxBuffer: 1 << 20, ...opts }, (err, stdout, stderr) =>
    (err ? reject(new Error(`${cmd} ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout))));
}

export async function startDockerd() {
  // short: the containerd socket lives under the exec root (108-byte limit)
  const dir = await mkdtemp('/tmp/sp-dd-');
  const sock = path.join(dir, 'docker.sock');
  const n = (process.pid % 64) * 4;
  await writeFile(path.join(dir, 'daemon.json'), '{}\n');
  const args = ['--data-root', path.join(dir, 'data'), '--exec-root', path.join(dir, 'x'),
    '--pidfile', path.join(dir, 'dockerd.pid'), '-H', `unix://${sock}`, '--config-file', path.join(dir, 'daemon.json'),
    '--bridge=none', '--iptables=false', '--ip-masq=false', '--userland-proxy=false',
    '--default-address-pool', `base=10.253.${n}.0/22,size=24`, '--shutdown-timeout', '3', '--log-level', 'warn'];
  let proc = null, paused = false;
  // the containerd this dockerd started (its pid file under the exec root),
  // checked by its command line before it is signalled
  const killContainerd = () => {
    try {
      const pid = Number(fs.readFileSync(path.join(dir, 'x', 'containerd', 'containerd.pid'), 'utf8').trim());
      if (pid > 1 && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir)) process.kill(pid, 'SIGKILL');
    } catch { /* none */ }
  };
  const d = {
    dir,
    sock,
    host: `unix://${sock}`,
    get pid() { return proc?.pid; },

    /** Starts it (again) and waits until /_ping answers (60 s at most). */
    async start() {
      if (proc && alive(proc.pid)) return;
      const log = fs.openSync(path.join(dir, 'dockerd.log'), 'a');
      // in a network namespace of its own: a dockerd without a default
      // bridge (--bridge=none) deletes the host's docker0 at start, which
      // the shared daemon's default network needs; in its own namespace it
      // deletes nothing of the host's, and its bridges stay apart too
      // (unshare execs dockerd: the pid is dockerd's)
      proc = spawn('unshare', ['--net', '--', 'dockerd', ...args], { detached: true, stdio: ['ignore', log, log] });
      fs.closeSync(log);
      const p = proc;
      const t0 = Date.now();
      while (!(await ping(sock))) {
        if (!alive(p.pid)) throw new Error(`private dockerd exited: ${(await d.logTail()).slice(-2000)}`);
        if (Date.now() - t0 > 60000) throw new Error('private dockerd did not answer within 60 s');
        await sleep(100);
      }
    },

    /** SIGSTOP of dockerd itself (not its containerd or containers): it
     * takes connections and answers nothing until resume(). */
    pause() {
      if (!proc || !alive(proc.pid)) throw new Error('private dockerd is not running');
      process.kill(proc.pid, 'SIGSTOP');
      paused = true;
    },

    /** SIGCONT: it answers again. */
    resume() {
      if (!paused) return;
      paused = false;
      if (proc && alive(proc.pid)) process.kill(proc.pid, 'SIGCONT');
    },

    /** Stops it with sig and waits until it is gone. SIGTERM: it ends its
     * containers first (no live-restore). SIGKILL: its containerd is
     * killed too (Docker 20.10's dockerd did not start again beside the
     * containerd a killed one left running). */
    async stop(sig = 'SIGTERM') {
      if (!proc || !alive(proc.pid)) return;
      const p = proc;
      d.resume(); // a stopped process takes no TERM
      try { process.kill(p.pid, sig); } catch { /* gone */ }
      const t0 = Date.now();
      while (alive(p.pid)) {
        if (Date.now() - t0 > 30000) {
          try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ }
        }
        if (Date.now() - t0 > 40000) throw new Error('private dockerd did not stop');
        await sleep(100);
      }
      // a SIGKILLed dockerd leaves its containerd (its own session) behind
      if (sig === 'SIGKILL') killContainerd();
    },

    /** Copies an image from the shared daemon (docker save | docker load). */
    async load(image) {
      await sh('sh', ['-c', 'docker save "$1" | docker -H "$2" load', 'sh', image, d.host], { timeout: 120000 });
    },

    /** A Docker CLI command against this daemon; resolves to its stdout. */
    docker(...a) {
      return sh('docker', ['-H', d.host, ...a], { timeout: 60000 });
    },

    async logTail() {
      return readFile(path.join(dir, 'dockerd.log'), 'utf8').catch(() => '');
    },

    /** Removes its containers and networks (the bridges would outlive the
     * daemon), stops it and removes its files. */
    async destroy() {
      d.resume();
      if (proc && alive(proc.pid)) {
        const ids = (await d.docker('ps', '-aq').catch(() => '')).split('\n').filter(Boolean);
        if (ids.length) await d.docker('rm', '-f', '-v', ...ids).catch(() => {});
        const nets = (await d.docker('network', 'ls', '-q', '--filter', 'driver=bridge').catch(() => '')).split('\n').filter(Boolean);
        if (nets.length) await d.docker('network', 'rm', ...nets).catch(() => {});
        await d.stop();
      }
      killContainerd();
      // nothing may stay mounted under the data root before it is removed
      const mounts = fs.readFileSync('/proc/mounts', 'utf8').split('\n').map((l) => l.split(' ')[1]).filter((m) => m?.startsWith(dir));
      for (const m of mounts.reverse()) await sh('umount', ['-l', m]).catch(() => {});
      if (process.env.SANDPIT_TEST_KEEP !== '1') await rm(dir, { recursive: true, force: true });
    },
  };
  await d.start();
  return d;
}
