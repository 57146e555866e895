// A recording proxy in front of the Docker socket, for tests that check
// what sandpit sends to Docker (RELIABILITY H6): point a stack's
// docker_host at proxy.sock (startStack({ env: { SANDPIT_DOCKER_HOST:
// `unix://${proxy.sock}` } })). Every request is passed on unchanged,
// and its method and raw request target are recorded in proxy.log, with the
// answer's status (and an X-Registry-Auth header's value, as registryAuth); the ids Docker hands out (container create, exec create)
// are collected in proxy.ids. Hijacked connections (exec start with
// `Connection: Upgrade`) are spliced through as raw bytes.
//
// A fault for a test: proxy.cut = (method, url) => N makes the answer to
// that request end after N bytes of its body, by destroying the connection
// (a dropped link, a front that lost its tail); null passes it whole.
//
// A stall for a test: proxy.hold = (method, url) => ({ phase, until, held })
// holds that request before it reaches Docker (phase 'request') or its
// answer after Docker answered (phase 'answer', so the call's effect has
// happened) until the promise `until` settles: 'forward' passes it on,
// anything else drops the connection. held(), if given, is called once the
// hold is in place (for 'answer': once Docker has answered). null (or a
// null answer) holds nothing.
//
//   const proxy = await dockerProxy(dir);  ...  await proxy.close();
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { rm } from 'node:fs/promises';

export async function dockerProxy(dir, upstream = process.env.SANDPIT_DOCKER_SOCK || '/var/run/docker.sock') {
  const sock = path.join(dir, 'docker-proxy.sock');
  await rm(sock, { force: true });
  const log = [];
  const ids = new Set();
  const conns = new Set();
  // the requests and raw streams to Docker still open: close() ends them,
  // so that a request Docker has not answered yet (its client long gone)
  // cannot keep the test's process alive
  const ups = new Set();
  const track = (u) => { ups.add(u); u.on('close', () => ups.delete(u)); return u; };
  const server = http.createServer(async (req, res) => {
    const entry = { method: req.method, url: req.url, at: Date.now(), status: 0, registryAuth: req.headers['x-registry-auth'] };
    log.push(entry);
    const held = proxy.hold?.(req.method, req.url) ?? null;
    const drop = () => { req.socket.destroy(); };
    if (held?.phase === 'request') {
      req.pause();
      held.held?.();
      if ((await held.until.catch(() => 'drop')) !== 'forward') return drop();
      req.resume();
    }
    const up = track(http.request({ socketPath: upstream, method: req.method, path: req.url, headers: req.headers }, async (ur) => {
      entry.status = ur.statusCode;
      if (held?.phase === 'answer') {
        ur.pause();
        held.held?.();
        if ((await held.until.catch(() => 'drop')) !== 'forward') { ur.resume(); return drop(); }
        ur.resume();
      }
      // an answer that ends with the connection (Docker's raw exec stream)
      // goes on the same way, not re-framed as chunks
      if (!('content-length' in ur.headers) && !('transfer-encoding' in ur.headers)) {
        res.useChunkedEncodingByDefault = false;
        res.shouldKeepAlive = false;
      }
      res.writeHead(ur.statusCode, ur.rawHeaders);
      // the ids Docker gives out: small JSON answers of the two creates
      const learn = /\/(containers\/create|containers\/[^/]+\/exec)$/.test(req.url.split('?')[0]) && ur.statusCode === 201;
      const chunks = [];
      let left = proxy.cut?.(req.method, req.url) ?? null;
      ur.on('data', (c) => {
        if (left !== null) {
          if (c.length >= left) {
            res.write(c.subarray(0, left), () => { res.socket?.destroy(); ur.destroy(); });
            left = -1;
            return;
          }
          if (left < 0) return;
          left -= c.length;
        }
        if (learn) chunks.push(c);
        res.write(c);
      });
      ur.on('end', () => {
        if (learn) {
          try { ids.add(JSON.parse(Buffer.concat(chunks).toString()).Id); } catch { /* not JSON */ }
        }
        res.end();
      });
      ur.on('error', () => res.destroy());
    }));
    up.on('error', () => { entry.status = -1; res.destroy(); });
    req.pipe(up);
  });
  server.on('upgrade', (req, client, head) => {
    log.push({ method: req.method, url: req.url, at: Date.now(), status: 101, upgrade: true });
    const up = track(net.connect(upstream, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      up.write(lines.join('\r\n') + '\r\n\r\n');
      if (head.length) up.write(head);
      up.pipe(client);
      client.pipe(up);
    }));
    const end = () => { up.destroy(); client.destroy(); };
    up.on('error', end);
    client.on('error', end);
    up.on('close', () => client.end());
    client.on('close', () => up.destroy());
  });
  // long execs and kept-alive connections: no server-side timeouts
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  server.keepAliveTimeout = 0;
  server.timeout = 0;
  server.on('connection', (c) => { conns.add(c); c.on('close', () => conns.delete(c)); });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(sock, resolve);
  });
  const proxy = {
    cut: null,
    hold: null,
    sock,
    log,
    ids,
    async close() {
      for (const c of conns) c.destroy();
      for (const u of ups) u.destroy();
      await new Promise((r) => server.close(r));
      await rm(sock, { force: true });
    },
  };
  return proxy;
}
