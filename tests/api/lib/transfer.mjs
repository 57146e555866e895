// Streamed requests for the /v1 upload and download tests
// (v1-transfer.test.mjs): a request whose body comes from an async
// iterable of Buffers (never whole in memory), a multipart/form-data body
// builder, a streaming multipart/mixed reader that hashes content parts as
// they come, and the RSS of a stack's processes.
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';

/**
 * One HTTPS request to the stack with a streamed body (an async iterable
 * of Buffers, or a Buffer) and a streamed answer: onData(chunk) sees each
 * piece (after onHead(res) saw the head); resolves to { status, headers, raw (kept unless o.keep === false),
 * complete (the answer ended cleanly) }.
 */
export function streamRequest(stack, method, urlPath, o = {}) {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: '127.0.0.1', port: stack.port, servername: 'localhost', path: urlPath, method,
      headers: o.headers || {}, ca: stack.ca, agent: false,
    }, (res) => {
      const chunks = [];
      let complete = false;
      o.onHead?.(res);
      res.on('data', (c) => { if (o.keep !== false) chunks.push(c); o.onData?.(c); });
      res.on('end', () => { complete = res.complete; });
      res.on('close', () => {
        const raw = Buffer.concat(chunks);
        let json;
        try { json = JSON.parse(raw.toString('utf8')); } catch { json = undefined; }
        resolve({ status: res.statusCode, headers: res.headers, raw, text: raw.toString('utf8'), json, complete });
      });
      res.on('error', () => {});
    });
    req.on('error', (e) => (o.tolerateReset ? resolve({ status: 0, error: e }) : reject(e)));
    req.setTimeout(o.timeoutMs ?? 120000, () => req.destroy(new Error(`${method} ${urlPath}: no answer in time`)));
    (async () => {
      if (Buffer.isBuffer(o.body)) req.write(o.body);
      else if (o.body) {
        for await (const piece of o.body) {
          if (req.destroyed) break;
          if (!req.write(piece)) {
            await new Promise((r) => {
              const f = () => { req.off('drain', f); req.off('close', f); r(); };
              req.on('drain', f);
              req.on('close', f);
            });
          }
        }
      }
      if (o.abortBody) req.destroy();
      else req.end();
    })().catch((e) => req.destroy(e));
  });
}

/** Deterministic bytes: n of them from seed, in 1 MiB pieces. */
export async function* bytesOf(n, seed = 1) {
  let left = n, k = 0;
  while (left > 0) {
    const len = Math.min(left, 1 << 20);
    const b = Buffer.alloc(len);
    for (let i = 0; i + 4 <= len; i += 4) b.writeUInt32LE(((k + i) * 2654435761 + seed) >>> 0, i);
    yield b;
    k += len;
    left -= len;
  }
}

/** sha256 of bytesOf(n, seed). */
export async function shaOf(n, seed = 1) {
  const h = crypto.createHash('sha256');
  for await (const b of bytesOf(n, seed)) h.update(b);
  return h.digest('hex');
}

/**
 * A multipart/form-data body from items [{ path, mode?, data: Buffer |
 * async iterable, meta?: raw metadata text, metaType?, contentType?,
 * headers? }], the boundary given; yields Buffers. close: false leaves out
 * the closing delimiter.
 */
export async function* formData(items, boundary, { close = true } = {}) {
  for (const it of items) {
    if (it.meta !== null) {
      const meta = it.meta ?? JSON.stringify(it.mode === undefined ? { path: it.path } : { path: it.path, mode: it.mode });
      yield Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="metadata"\r\n` +
        `Content-Type: ${it.metaType ?? 'application/json'}\r\n${it.metaHeaders ?? ''}\r\n${meta}\r\n`);
    }
    if (it.data === null) continue;
    yield Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="content"; filename="f"\r\n` +
      `Content-Type: ${it.contentType ?? 'application/octet-stream'}\r\n${it.headers ?? ''}\r\n`);
    if (Buffer.isBuffer(it.data) || typeof it.data === 'string') yield Buffer.from(it.data);
    else for await (const b of it.data) yield b;
    yield Buffer.from('\r\n');
  }
  if (close) yield Buffer.from(`--${boundary}--\r\n`);
}

/**
 * Reads a multipart/mixed answer as it streams: feed(chunk) each piece,
 * finish() at the end; parts: [{ headers, json? (JSON parts), size,
 * sha256 (content parts), head (the first 64 bytes) }]; closed: the
 * closing delimiter came.
 */
export function mixedReader(boundary) {
  const delim = Buffer.from(`\r\n--${boundary}`);
  let buf = Buffer.from('\r\n'); // the first delimiter opens the body
  const parts = [];
  let cur = null; // { headers, hash, size, text?: [] }
  let state = 'preamble';
  let closed = false, trailing = 0;
  const startPart = (headText) => {
    const headers = {};
    for (const l of headText.split('\r\n')) {
      const i = l.indexOf(':');
      if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    cur = { headers, size: 0, hash: crypto.createHash('sha256'), keep: [], head: Buffer.alloc(0) };
  };
  const data = (b) => {
    cur.size += b.length;
    cur.hash.update(b);
    if (cur.head.length < 64) cur.head = Buffer.concat([cur.head, b.subarray(0, 64 - cur.head.length)]);
    if (!/octet-stream/.test(cur.headers['content-type'] || '')) cur.keep.push(Buffer.from(b));
  };
  const endPart = () => {
    const p = { headers: cur.headers, size: cur.size, sha256: cur.hash.digest('hex'), head: cur.head };
    if (cur.keep.length) {
      const t = Buffer.concat(cur.keep).toString('utf8');
      try { p.json = JSON.parse(t); } catch { p.text = t; }
    } else if (/json/.test(cur.headers['content-type'] || '')) {
      p.text = '';
    }
    parts.push(p);
    cur = null;
  };
  function feed(chunk) {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    for (;;) {
      if (state === 'preamble' || state === 'body') {
        const i = buf.indexOf(delim);
        if (i < 0) {
          const safe = buf.length - (delim.length - 1);
          if (safe > 0) {
            if (state === 'body') data(buf.subarray(0, safe));
            buf = buf.subarray(safe);
          }
          return;
        }
        if (state === 'body') {
          if (i) data(buf.subarray(0, i));
          endPart();
        }
        buf = buf.subarray(i + delim.length);
        state = 'after';
      }
      if (state === 'after') {
        if (buf.length < 2) return;
        if (buf[0] === 0x2d && buf[1] === 0x2d) { closed = true; state = 'done'; trailing = buf.length - 2; return; }
        if (buf[0] !== 0x0d || buf[1] !== 0x0a) throw new Error('malformed delimiter');
        buf = buf.subarray(2);
        state = 'headers';
      }
      if (state === 'headers') {
        const i = buf.indexOf('\r\n\r\n');
        if (i < 0) return;
        startPart(buf.subarray(0, i).toString('utf8'));
        buf = buf.subarray(i + 4);
        state = 'body';
      }
      if (state === 'done') { trailing += buf.length; buf = Buffer.alloc(0); return; }
    }
  }
  return { feed, parts, get closed() { return closed; }, get trailing() { return trailing; } };
}

/** RSS (KiB) of each process whose command line holds needle (and name,
 * when given), and of their children, by pid. */
export function rssOf(needle, name) {
  const out = {}, procs = [];
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
      const ppid = /PPid:\s+(\d+)/.exec(status)[1];
      const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
      procs.push({ pid, ppid, rss, hit: cmd.includes(needle) && (!name || cmd.includes(name)) });
    } catch { /* gone */ }
  }
  const hits = new Set(procs.filter((p) => p.hit).map((p) => p.pid));
  for (const p of procs) if (hits.has(p.pid) || hits.has(p.ppid)) out[p.pid] = p.rss;
  return out;
}
