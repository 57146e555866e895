// Helpers for preview URLs (tests/api/v1-ports.test.mjs, bench): a small
// HTTP + WebSocket echo server to run inside a sandbox (python3, stdlib
// only), and HTTPS / WebSocket requests to a stack's preview URLs.
import https from 'node:https';
import WebSocket from 'ws';

// Serves, on argv[1]'s port, a JSON answer naming argv[2] (who it is), the
// path, Host and the headers sandpit must not pass on; echoes POST bodies;
// a WebSocket upgrade becomes an echo of every text or binary frame
// (prefixed "<who>:"). Only builtin modules: the test image is
// python3-minimal (no json, no http).
export const echoServerPy = String.raw`
import base64, hashlib, socket, struct, sys, threading
PORT, WHO = int(sys.argv[1]), sys.argv[2]
def q(v):
    if v is None:
        return 'null'
    return '"' + v.replace('\\', '\\\\').replace('"', '\\"') + '"'
def recv_exact(c, n):
    b = b''
    while len(b) < n:
        x = c.recv(n - len(b))
        if not x:
            raise EOFError()
        b += x
    return b
def echo(c, f):
    while True:
        h = recv_exact(c, 2)
        op, n = h[0] & 15, h[1] & 127
        if n == 126:
            n = struct.unpack('>H', recv_exact(c, 2))[0]
        elif n == 127:
            n = struct.unpack('>Q', recv_exact(c, 8))[0]
        m = recv_exact(c, 4) if h[1] & 128 else b'\0\0\0\0'
        d = bytes(b ^ m[i % 4] for i, b in enumerate(recv_exact(c, n)))
        if op == 8:
            c.sendall(b'\x88\x00')
            return
        if op == 9:
            op = 10
        if op in (1, 2):
            d = WHO.encode() + b':' + d
        n = len(d)
        if n < 126:
            hd = struct.pack('>BB', 128 | op, n)
        elif n < 65536:
            hd = struct.pack('>BBH', 128 | op, 126, n)
        else:
            hd = struct.pack('>BBQ', 128 | op, 127, n)
        c.sendall(hd + d)
def one(c):
    try:
        buf = b''
        while b'\r\n\r\n' not in buf:
            x = c.recv(65536)
            if not x:
                return
            buf += x
        head, rest = buf.split(b'\r\n\r\n', 1)
        lines = head.decode('latin-1').split('\r\n')
        method, path = lines[0].split(' ')[0:2]
        hd = {}
        for l in lines[1:]:
            k, _, v = l.partition(':')
            hd[k.strip().lower()] = v.strip()
        if hd.get('upgrade', '').lower() == 'websocket':
            acc = base64.b64encode(hashlib.sha1((hd['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').encode()).digest()).decode()
            c.sendall(('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ' + acc + '\r\n\r\n').encode())
            echo(c, None)
            return
        n = int(hd.get('content-length') or 0)
        while len(rest) < n:
            x = c.recv(65536)
            if not x:
                break
            rest += x
        body = '{"who":' + q(WHO) + ',"method":' + q(method) + ',"path":' + q(path) + ',"host":' + q(hd.get('host')) + ',"cookie":' + q(hd.get('cookie')) + ',"apiKey":' + q(hd.get('x-api-key')) + ',"authorization":' + q(hd.get('authorization')) + (',"body":' + q(rest[:n].decode('latin-1')) if method == 'POST' else '') + '}'
        b = body.encode()
        c.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nSet-Cookie: inside=1\r\nConnection: close\r\nContent-Length: ' + str(len(b)).encode() + b'\r\n\r\n' + b)
    except Exception:
        pass
    finally:
        c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', PORT))
s.listen(64)
while True:
    c, _ = s.accept()
    threading.Thread(target=one, args=(c,), daemon=True).start()
`;

// The TLS name of a request: the stack's certificate is localhost's, so
// a preview host is sent as SNI without checking the certificate's name.
const tlsName = (host) => {
  const name = String(host || '').replace(/:\d+$/, '');
  return /^\d+-[a-z0-9]{32}\./.test(name)
    ? { servername: name, checkServerIdentity: () => undefined }
    : { servername: 'localhost' };
};

// One HTTPS request to a stack's listener at an absolute URL or a path,
// with any Host (a host-based preview): { status, headers, text, json }.
export function fetchPreview(stack, url, o = {}) {
  const u = new URL(url, stack.url);
  const headers = { ...(o.headers || {}) };
  if (o.host) headers.host = o.host;
  else if (!headers.host) headers.host = u.host;
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: '127.0.0.1', port: stack.port, ca: stack.ca, ...tlsName(headers.host),
      path: o.rawPath ?? (u.pathname + u.search), method: o.method || 'GET', headers, agent: false,
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json;
        try { json = JSON.parse(text); } catch { json = undefined; }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(o.timeoutMs ?? 20000, () => req.destroy(new Error(`${url}: no answer in ${o.timeoutMs ?? 20000} ms`)));
    if (o.body !== undefined) req.write(o.body);
    req.end();
  });
}

// A WebSocket to a preview URL (wss on the stack's listener): resolves
// once open, rejects on an error before that.
export function openPreviewSocket(stack, url, o = {}) {
  const u = new URL(url, stack.url);
  const ws = new WebSocket(`wss://127.0.0.1:${stack.port}${u.pathname}${u.search}`, {
    ca: stack.ca, ...tlsName(o.host || u.host), headers: { host: o.host || u.host, ...(o.headers || {}) },
    handshakeTimeout: 20000,
  });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade answered ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

// The next message of ws as text, or null when it closes or ms pass.
export function nextMessage(ws, ms = 10000) {
  return new Promise((resolve) => {
    const done = (v) => { clearTimeout(t); ws.off('message', onMsg); ws.off('close', onClose); resolve(v); };
    const onMsg = (d) => done(d.toString());
    const onClose = () => done(null);
    const t = setTimeout(() => done(null), ms);
    ws.on('message', onMsg);
    ws.on('close', onClose);
  });
}
