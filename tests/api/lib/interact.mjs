// A client of a process's interact WebSocket (the seed's x-websocket
// contract, served by sandpit-stream) for the /v1 tests:
//   const c = openInteract(stack, sandbox, process, { token });
//   await c.opened; c.send({ attach: { name: `processes/${p}` } });
//   const f = await c.next((f) => f.exited); const { code } = await c.closed;
// carrier: 'header' (Authorization, the default) or 'subprotocol' (the
// sandboxes.bearer.v1. offer beside sandboxes.v1); protocols overrides the
// offer; every text frame received is parsed into c.frames.
import WebSocket from 'ws';

export const bearerOffer = (token) => `sandboxes.bearer.v1.${Buffer.from(token).toString('base64url')}`;

export function openInteract(s, sandbox, proc, o = {}) {
  const url = `wss://127.0.0.1:${s.port}/endpoints/${sandbox}/v1/processes/${proc}/interact${o.query ?? ''}`;
  const headers = { ...(o.headers || {}) };
  let protocols = o.protocols ?? ['sandboxes.v1'];
  if ((o.carrier ?? 'header') === 'header' && o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.carrier === 'subprotocol' && !o.protocols) protocols = ['sandboxes.v1', bearerOffer(o.token)];
  const ws = new WebSocket(url, protocols, { ca: s.ca, servername: "localhost", headers, maxPayload: 64 << 20 });
  const c = { ws, frames: [], texts: [], binary: 0, waiters: [] };
  c.opened = new Promise((resolve) => ws.once('open', resolve));
  c.closed = new Promise((resolve) => ws.once('close', (code, reason) =>
    resolve({ code, reason: reason.toString() })));
  c.response = new Promise((resolve) => ws.once('unexpected-response', (req, res) => {
    let body = '';
    res.on('data', (d) => { body += d; });
    res.on('end', () => { resolve({ status: res.statusCode, body, headers: res.headers }); req.destroy(); });
  }));
  ws.on('error', () => {});
  ws.on('message', (data, isBinary) => {
    if (isBinary) { c.binary++; return; }
    const t = data.toString();
    c.texts.push(t);
    let f;
    try { f = JSON.parse(t); } catch { f = { unparsable: t }; }
    c.frames.push(f);
    for (const w of [...c.waiters]) w();
  });
  ws.on('close', () => { for (const w of [...c.waiters]) w(); });
  c.send = (f) => ws.send(typeof f === 'string' ? f : JSON.stringify(f));
  c.stdin = (text) => c.send({ stdin: Buffer.from(text).toString('base64') });
  /** The first frame (from index from) for which pred is true; rejects after ms or on close. */
  c.next = (pred, ms = 30000, from = 0) => new Promise((resolve, reject) => {
    const check = () => {
      const f = c.frames.slice(from).find(pred);
      if (f) { done(); resolve(f); return true; }
      if (ws.readyState === WebSocket.CLOSED) {
        done();
        reject(new Error(`closed before the frame came; frames: ${c.texts.join('\n').slice(-2000)}`));
        return true;
      }
      return false;
    };
    const t = setTimeout(() => { done(); reject(new Error(`no such frame within ${ms} ms; frames: ${c.texts.join('\n').slice(-2000)}`)); }, ms);
    const done = () => { clearTimeout(t); c.waiters = c.waiters.filter((w) => w !== check); };
    if (!check()) c.waiters.push(check);
  });
  /** The output so far as text (the chunks' data decoded). */
  c.output = () => c.frames.filter((f) => f.chunk).map((f) => Buffer.from(f.chunk.data, 'base64').toString('utf8')).join('');
  /** Waits until the output so far matches re. */
  c.until = (re, ms = 30000) => new Promise((resolve, reject) => {
    const check = () => {
      if (re.test(c.output())) { done(); resolve(c.output()); return true; }
      if (ws.readyState === WebSocket.CLOSED) { done(); reject(new Error(`closed; output: ${c.output().slice(-2000)}; frames: ${c.texts.slice(-5).join('\n')}`)); return true; }
      return false;
    };
    const t = setTimeout(() => { done(); reject(new Error(`output never matched ${re} within ${ms} ms: ${JSON.stringify(c.output().slice(-2000))}`)); }, ms);
    const done = () => { clearTimeout(t); c.waiters = c.waiters.filter((w) => w !== check); };
    if (!check()) c.waiters.push(check);
  });
  c.close = () => { try { ws.close(1000); } catch { /* gone */ } };
  return c;
}
