// `make bench`'s preview URL rows (bench/bench.sh): a sandbox (template
// alpine) serving a small file with busybox httpd on port 8080, published
// with createPort; then the round trip of GET through the preview URL
// (HTTPS to nginx, kept alive; nginx's auth_request to sandpitd, then a
// new connection to the sandbox) beside a direct GET to the sandbox's
// address (plain HTTP from this host, as nginx connects), interleaved,
// BENCH_PREVIEW_N each. Env: SANDPIT_URL, SANDPIT_KEY, SANDPIT_CA (the
// stack's env). Prints one table row, and "PREVIEW_URL=… DIRECT_URL=…
// SANDBOX=…" on stderr's last line for bench.sh's wrk rows.
//   node bench/preview.mjs setup     → prints SANDBOX PREVIEW_URL DIRECT_URL
//   node bench/preview.mjs latency PREVIEW_URL DIRECT_URL
//   node bench/preview.mjs down SANDBOX
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';

const { SANDPIT_URL: base, SANDPIT_KEY: key, SANDPIT_CA: caFile } = process.env;
const ca = fs.readFileSync(caFile);
const tlsAgent = new https.Agent({ ca, keepAlive: true, maxSockets: 1 });
const plainAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function req(url, o = {}) {
  const u = new URL(url);
  const mod = u.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const r = mod.request(u, {
      method: o.method || 'GET', agent: u.protocol === 'https:' ? tlsAgent : plainAgent,
      servername: 'localhost', headers: o.headers || {},
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString() }));
    });
    r.on('error', reject);
    r.setTimeout(30000, () => r.destroy(new Error(`${url}: timeout`)));
    if (o.body) r.write(o.body);
    r.end();
  });
}
const api = (method, p, body, headers = {}) => req(`${base}${p}`, {
  method, body: body && JSON.stringify(body),
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
}).then((r) => ({ ...r, json: r.text ? JSON.parse(r.text) : undefined }));

async function setup() {
  const c = await api('POST', '/v1/sandboxes', { image: 'images/alpine', resources: { cpus: 1 } });
  if (c.status !== 201) throw new Error(`create: ${c.status} ${c.text}`);
  const id = c.json.uid;
  const t = await api('POST', `/v1/sandboxes/${id}/endpoint-credentials`, { permissions: ['sandboxesExec'] });
  const ep = (p, body) => req(`${base}/endpoints/${id}/v1${p}`, {
    method: 'POST', body: JSON.stringify(body),
    headers: { authorization: `Bearer ${t.json.token}`, 'content-type': 'application/json' },
  });
  let r = await ep('/processes', { cmd: ['sh', '-c', 'mkdir -p www && echo hello > www/index.html && exec httpd -f -p 8080 -h www'] });
  if (r.status !== 201) throw new Error(`process: ${r.status} ${r.text}`);
  r = await ep('/processes/exec', { cmd: ['sh', '-c', 'ip -4 -o addr show eth0 | sed "s/.* inet \\([0-9.]*\\).*/\\1/"'] });
  const ip = Buffer.from(JSON.parse(r.text).stdout || '', 'base64').toString().trim();
  if (!/^\d+\.\d+\.\d+\.\d+$/.test(ip)) throw new Error(`no address: ${r.text}`);
  const p = await api('POST', `/v1/sandboxes/${id}/ports`, { port: { number: 8080 } });
  if (p.status !== 201) throw new Error(`createPort: ${p.status} ${p.text}`);
  const direct = `http://${ip}:8080/`;
  for (let i = 0; i < 100; i++) {
    const [a, b] = await Promise.all([req(p.json.url).catch(() => ({})), req(direct).catch(() => ({}))]);
    if (a.status === 200 && b.status === 200) break;
    await new Promise((x) => setTimeout(x, 100));
  }
  console.log(`${id} ${p.json.url} ${direct}`);
}

const pct = (a, q) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(q * s.length))]; };

async function latency(preview, direct) {
  const n = Number(process.env.BENCH_PREVIEW_N || 300);
  const tp = [], td = [];
  for (let i = 0; i < 20; i++) { await req(preview); await req(direct); }
  for (let i = 0; i < n; i++) {
    let t = process.hrtime.bigint();
    const a = await req(preview);
    tp.push(Number(process.hrtime.bigint() - t) / 1e6);
    t = process.hrtime.bigint();
    const b = await req(direct);
    td.push(Number(process.hrtime.bigint() - t) / 1e6);
    if (a.status !== 200 || b.status !== 200 || a.text !== b.text) throw new Error(`answers differ: ${a.status} ${b.status}`);
  }
  const f = (x) => x.toFixed(2);
  const r = pct(tp, 0.5) / pct(td, 0.5);
  console.log(`| preview URL \`GET /\` round trip (busybox httpd in the sandbox; HTTPS to nginx, auth_request, proxy) vs a direct GET to the sandbox's address, ${n} each | ${f(pct(tp, 0.5))} | ${f(pct(tp, 0.95))} | ${f(pct(td, 0.5))} | ${f(pct(td, 0.95))} | ${r.toFixed(1)}× | — | — |`);
}

async function down(id) {
  const g = await api('GET', `/v1/sandboxes/${id}`);
  if (g.status === 200) await api('DELETE', `/v1/sandboxes/${id}`, undefined, { 'if-match': g.json.core.etag });
}

const [cmd, ...args] = process.argv.slice(2);
try {
  if (cmd === 'setup') await setup();
  else if (cmd === 'latency') await latency(args[0], args[1]);
  else if (cmd === 'down') await down(args[0]);
  else throw new Error('usage: preview.mjs setup | latency PREVIEW DIRECT | down SANDBOX');
} finally {
  tlsAgent.destroy();
  plainAgent.destroy();
}
