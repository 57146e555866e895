// `make install` into a temporary root (DESTDIR): the files land where
// they should with the right modes, the configuration and the data key are
// written once and never overwritten, `systemd-analyze verify` accepts both
// units without a warning, and an operator's own nginx server block that
// includes the generated snippets passes `nginx -t` and then serves sandpit:
// the installed sandpitd, configured by the installed file, answers
// /healthz and an authenticated call through that nginx.
//
// The units name $PREFIX/sbin/sandpitd; PREFIX is a temp path that is a
// symlink to the staged copy, so the host's systemd-analyze finds the
// binaries (with --root it would miss the host's targets and /bin/kill).
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import { binDir, repoRoot, waitFor } from './lib/stack.mjs';

let T; // the temp folder
let root; // DESTDIR
let prefix; // PREFIX (a symlink into DESTDIR)
const procs = [];

function run(cmd, args, opts = {}) {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: 120000, maxBuffer: 8 << 20, ...opts }, (err, stdout, stderr) =>
      resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr }));
  });
}

function install(extraEnv = {}) {
  return run('bash', [path.join(repoRoot, 'deploy', 'install.sh')], {
    env: {
      ...process.env,
      SANDPIT_BIN: binDir,
      DESTDIR: root,
      PREFIX: prefix,
      RUNSTATEDIR: path.join(T, 'run'),
      NGINX_INCLUDE_DIR: path.join(root, 'etc/sandpit/nginx'),
      NGINX_AUTH_CACHE: path.join(T, 'auth-cache'),
      ...extraEnv,
    },
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

before(async () => {
  T = await mkdtemp(path.join(os.tmpdir(), 'sandpit-inst-'));
  root = path.join(T, 'root');
  prefix = path.join(T, 'prefix');
  const r = await install();
  assert.equal(r.code, 0, r.stderr);
  await symlink(path.join(root, prefix), prefix);
});

after(async () => {
  for (const p of procs.reverse()) {
    if (p.exitCode === null && p.signalCode === null) {
      p.kill('SIGTERM');
      await new Promise((r) => { const t = setTimeout(() => { p.kill('SIGKILL'); r(); }, 15000); p.on('exit', () => { clearTimeout(t); r(); }); });
    }
  }
  const pid = await readFile(path.join(T, 'nginx.pid'), 'utf8').catch(() => '');
  if (/^\d+/.test(pid)) try { process.kill(Number(pid), 'SIGQUIT'); } catch { /* gone */ }
  await new Promise((r) => setTimeout(r, 500));
  if (T) await rm(T, { recursive: true, force: true });
});

test('files, modes; configuration and data key written once', { timeout: 120000 }, async () => {
  for (const f of ['bin/sandpit', 'sbin/sandpitd', 'sbin/sandpit-stream']) {
    const s = await stat(path.join(prefix, f));
    assert.equal(s.mode & 0o777, 0o755, f);
  }
  for (const f of ['lib/systemd/system/sandpitd.service', 'lib/systemd/system/sandpit-stream.service',
    'lib/sysusers.d/sandpit.conf', 'share/doc/sandpit/README.md'])
    assert.ok(existsSync(path.join(prefix, f)), f);
  const etc = path.join(root, 'etc/sandpit');
  const key = path.join(etc, 'data.key');
  assert.equal((await stat(key)).mode & 0o777, 0o600);
  assert.match(await readFile(key, 'utf8'), /^[0-9a-f]{64}\n$/);
  assert.equal((await stat(path.join(etc, 'sandpitd.conf'))).mode & 0o777, 0o640);
  const conf = await readFile(path.join(etc, 'sandpitd.conf'), 'utf8');
  assert.match(conf, /^data_key_file = \/etc\/sandpit\/data\.key$/m);
  assert.match(conf, new RegExp(`^listen = ${T}/run/sandpit/sandpitd\\.sock$`, 'm'));
  const sysusers = await readFile(path.join(prefix, 'lib/sysusers.d/sandpit.conf'), 'utf8');
  assert.match(sysusers, /^u sandpit - .* \/var\/lib\/sandpit /m);
  assert.match(sysusers, /^m sandpit docker$/m);

  // A second install keeps an edited configuration and the key.
  const keyBefore = await readFile(key, 'utf8');
  await writeFile(path.join(etc, 'sandpitd.conf'), `${conf}# edited by the operator\n`);
  const r = await install();
  assert.equal(r.code, 0, r.stderr);
  assert.match(await readFile(path.join(etc, 'sandpitd.conf'), 'utf8'), /# edited by the operator/);
  assert.equal(await readFile(path.join(etc, 'sandpitd.conf.new'), 'utf8'), conf);
  assert.equal(await readFile(key, 'utf8'), keyBefore);
  assert.match(r.stderr, /data\.key exists: kept/);
});

test('systemd-analyze verify accepts both units', { timeout: 120000 }, async () => {
  const units = ['sandpitd', 'sandpit-stream'].map((u) => path.join(prefix, 'lib/systemd/system', `${u}.service`));
  const r = await run('systemd-analyze', ['verify', ...units]);
  assert.equal(r.code, 0, r.stderr);
  // verify reports bad or unknown keys as warnings and still exits 0
  const ours = r.stderr.split('\n').filter((l) => /sandpit/.test(l));
  assert.deepEqual(ours, [], r.stderr);
  const text = await readFile(units[0], 'utf8');
  for (const k of ['User=sandpit', 'SupplementaryGroups=docker', 'ProtectSystem=strict', 'NoNewPrivileges=yes',
    'Restart=on-failure', `ExecStart=${prefix}/sbin/sandpitd -c /etc/sandpit/sandpitd.conf`])
    assert.ok(text.split('\n').includes(k), k);
});

test("an operator's server block with the include passes nginx -t and serves sandpit", { timeout: 180000 }, async () => {
  // The installed configuration, with this test's Redis and the staged key.
  const etc = path.join(root, 'etc/sandpit');
  let conf = await readFile(path.join(etc, 'sandpitd.conf'), 'utf8');
  const redisSock = path.join(T, 'redis.sock');
  conf = conf.replace(/^redis_url = .*$/m, `redis_url = unix://${redisSock}`)
    .replace(/^data_key_file = .*$/m, `data_key_file = ${etc}/data.key`)
    .replace(/^ssh_control_dir = .*$/m, `ssh_control_dir = ${T}/ssh`);
  const confFile = path.join(T, 'sandpitd.conf');
  await writeFile(confFile, conf, { mode: 0o600 });
  const chk = await run(path.join(prefix, 'sbin/sandpitd'), ['-t', '-c', confFile]);
  assert.equal(chk.code, 0, chk.stderr + chk.stdout);

  const redis = spawn('redis-server', ['--port', '0', '--unixsocket', redisSock, '--unixsocketperm', '700',
    '--dir', T, '--save', ''], { stdio: 'ignore' });
  procs.push(redis);
  await waitFor(() => existsSync(redisSock), 10000);
  await run('mkdir', ['-p', path.join(T, 'run/sandpit')]);
  const app = spawn(path.join(prefix, 'sbin/sandpitd'), ['-c', confFile], { stdio: 'ignore' });
  procs.push(app);
  await waitFor(() => existsSync(path.join(T, 'run/sandpit/sandpitd.sock')), 15000);

  // The operator's nginx: their listener, name and certificate; sandpit's include.
  const tls = path.join(T, 'tls');
  await run('mkdir', ['-p', tls, path.join(T, 'ngx')]);
  const gen = await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
    '-nodes', '-keyout', `${tls}/key.pem`, '-out', `${tls}/cert.pem`, '-days', '2', '-subj', '/CN=sandpit.test',
    '-addext', 'subjectAltName=DNS:sandpit.test']);
  assert.equal(gen.code, 0, gen.stderr);
  const port = await freePort();
  const ngxConf = path.join(T, 'nginx.conf');
  // nginx's Lua module (nginx/reqtime.conf): Debian's libnginx-mod-http-lua
  // loads it through /etc/nginx/modules-enabled; this nginx.conf of its own
  // names it, as an operator's own build would
  await writeFile(ngxConf, `user root root;
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
worker_processes 1;
pid ${T}/nginx.pid;
error_log ${T}/ngx/error.log warn;
events { worker_connections 256; }
http {
	access_log ${T}/ngx/access.log;
	client_body_temp_path ${T}/ngx/body;
	fastcgi_temp_path ${T}/ngx/fastcgi;
	proxy_temp_path ${T}/ngx/proxy;
	uwsgi_temp_path ${T}/ngx/uwsgi;
	scgi_temp_path ${T}/ngx/scgi;
	include ${etc}/nginx/sandpit-http.conf;
	server {
		listen 127.0.0.1:${port} ssl;
		server_name sandpit.test;
		ssl_certificate     ${tls}/cert.pem;
		ssl_certificate_key ${tls}/key.pem;
		include ${etc}/nginx/sandpit-server.conf;
		location / { return 404; }
	}
}
`);
  const ngx = ['-e', `${T}/ngx/error.log`, '-p', `${T}/ngx/`, '-c', ngxConf];
  const t = await run('nginx', ['-t', ...ngx]);
  assert.equal(t.code, 0, t.stderr);
  assert.match(t.stderr, /test is successful/);
  const up = await run('nginx', ngx);
  assert.equal(up.code, 0, up.stderr);

  const ca = await readFile(`${tls}/cert.pem`);
  const get = (p, key) => new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', port, servername: 'sandpit.test', ca, path: p,
      headers: key ? { 'x-api-key': key } : {} }, (res) => {
      let body = '';
      res.on('data', (c) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.setTimeout(15000, () => req.destroy(new Error('timeout')));
  });
  const h = await waitFor(async () => { const r = await get('/healthz'); return r.status === 200 && r; }, 15000);
  assert.equal(h.status, 200);
  assert.equal((await get('/api/sandbox.templates')).status, 401);
  const k = await run(path.join(prefix, 'bin/sandpit'), ['-c', confFile, 'keys', 'create', '--org', 'default', '--role', 'owner']);
  assert.equal(k.code, 0, k.stderr);
  const r = await get('/api/sandbox.templates', k.stdout.trim());
  assert.equal(r.status, 200, r.body);
  assert.ok(Array.isArray(JSON.parse(r.body)));
});
