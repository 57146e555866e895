// GET /metrics (issue #8): Prometheus text without a key from an allowed
// address, counts that move after calls (summed across workers through
// shared memory), cumulative and consistent histograms, Docker call series
// keyed by endpoint template, sandboxes by status, and 403 from an address
// that SANDPIT_METRICS_ALLOW does not list. Issue 13: behind two instances
// every sample carries sandpit_instance and /metrics/NAME reaches one
// instance, so counters never mix; sandboxes per organization; WebSocket
// connections and their running commands from sandpit-stream
// (/metrics/stream).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startStack, waitFor } from './lib/stack.mjs';

let stack;
let denied;
let multi; // two sandpitd instances behind one nginx
before(async () => {
  stack = await startStack();
  multi = await startStack({ env: { SANDPIT_INSTANCES: '2' } });
  // loopback is not in this list, so the test's own address is denied
  denied = await startStack({ env: { SANDPIT_METRICS_ALLOW: '10.9.9.9' } });
});
after(async () => {
  await stack?.stop();
  await denied?.stop();
  await multi?.stop();
});

// Parses the text exposition into [{ name, labels, value }].
function parse(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/);
    assert.ok(m, `malformed line: ${line}`);
    const labels = {};
    if (m[2]) {
      for (const kv of m[2].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
        labels[kv[1]] = kv[2];
    }
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

async function scrape(s = stack, where = '/metrics') {
  const r = await s.api('GET', where, { key: null });
  assert.equal(r.status, 200, r.text);
  assert.match(r.headers['content-type'], /^text\/plain; version=0\.0\.4/);
  return parse(r.text);
}

function value(samples, name, labels) {
  const hit = samples.find((x) => x.name === name &&
    Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return hit ? hit.value : 0;
}

test('/metrics answers 200 from 127.0.0.1 without a key, in Prometheus text', async () => {
  const r = await stack.api('GET', '/metrics', { key: null });
  assert.equal(r.status, 200, r.text);
  assert.match(r.text, /^# TYPE sandpit_requests_total counter$/m);
  assert.match(r.text, /^# TYPE sandpit_request_duration_seconds histogram$/m);
  assert.match(r.text, /^# TYPE sandpit_sandboxes gauge$/m);
  parse(r.text);
});

// The pid of the worker that logged the request line of each request id
// ("time level [sandpitd PID] RID GET /api/... STATUS Nms").
function servedBy(rids) {
  const log = readFileSync(path.join(stack.dir, 'sandpitd.log'), 'utf8');
  const by = {};
  for (const m of log.matchAll(/\[sandpitd (\d+)\] (\S+) (GET|POST) \/api\//g)) if (rids.includes(m[2])) by[m[2]] = m[1];
  return by;
}

test('request counts go up after calls, across workers', async (t) => {
  const before = await scrape();
  const n = 12;
  // in parallel, so that more than one worker answers; the log shows which
  // worker served each (by its request id), and a batch that one worker
  // served alone is sent again (at most 10 times)
  let rounds = 0, pids = new Set();
  while (pids.size < 2 && rounds < 10) {
    rounds++;
    const rs = await Promise.all(Array.from({ length: n }, () => stack.api('GET', '/api/sandbox.list')));
    for (const r of rs) assert.equal(r.status, 200, r.text);
    const rids = rs.map((r) => r.headers['x-request-id']);
    const by = await waitFor(() => { const b = servedBy(rids); return Object.keys(b).length === n && b; }, 10000, 100);
    pids = new Set(Object.values(by));
  }
  t.diagnostic(`${rounds} batch(es) of ${n}; workers that answered the last: ${[...pids].join(', ')}`);
  assert.ok(pids.size >= 2, 'two workers answered one batch');
  const missing = await stack.api('GET', '/api/sandbox.one', { query: { sandboxId: 'nope' } });
  assert.equal(missing.status, 404, missing.text);
  const afterS = await scrape();
  const ok = { operation: 'sandbox-list', status: '200' };
  // every request of every worker is counted: the sum is exact
  assert.equal(value(afterS, 'sandpit_requests_total', ok) - value(before, 'sandpit_requests_total', ok), n * rounds);
  assert.equal(value(afterS, 'sandpit_request_duration_seconds_count', ok) -
    value(before, 'sandpit_request_duration_seconds_count', ok), n * rounds);
  assert.ok(value(afterS, 'sandpit_requests_total', { operation: 'sandbox-one', status: '404' }) >= 1);
  // nginx keeps /_auth answers 1 s per key and route, so those n calls
  // asked /_auth at least once; a key never seen before is always asked about
  const auth = { operation: 'auth', status: '200' };
  assert.ok(value(afterS, 'sandpit_requests_total', auth) >= value(before, 'sandpit_requests_total', auth) + 1);
  const fresh = await stack.newKey('default');
  const f = await stack.api('GET', '/api/sandbox.list', { key: fresh });
  assert.equal(f.status, 200, f.text);
  assert.ok(value(await scrape(), 'sandpit_requests_total', auth) >= value(afterS, 'sandpit_requests_total', auth) + 1);
});

test('histogram buckets are cumulative and agree with _count and the counter', async () => {
  await stack.api('GET', '/api/sandbox.templates');
  const s = await scrape();
  const series = new Map();
  for (const x of s) {
    if (!x.name.endsWith('_bucket')) continue;
    const base = x.name.slice(0, -'_bucket'.length);
    const id = `${base}|${x.labels.operation ?? x.labels.endpoint}|${x.labels.status}`;
    if (!series.has(id)) series.set(id, []);
    series.get(id).push(x);
  }
  assert.ok(series.size > 0, 'some histogram series');
  for (const [id, buckets] of series) {
    const [base, name, status] = id.split('|');
    const les = buckets.map((b) => (b.labels.le === '+Inf' ? Infinity : Number(b.labels.le)));
    assert.equal(les.at(-1), Infinity, `${id}: last bucket is +Inf`);
    for (let i = 1; i < buckets.length; i++) {
      assert.ok(les[i] > les[i - 1], `${id}: le ascending`);
      assert.ok(buckets[i].value >= buckets[i - 1].value, `${id}: cumulative`);
    }
    const lbl = base.startsWith('sandpit_docker') ? 'endpoint' : 'operation';
    const labels = { [lbl]: name, status };
    assert.equal(value(s, `${base}_count`, labels), buckets.at(-1).value, `${id}: _count = +Inf`);
    const counter = base.startsWith('sandpit_docker') ? 'sandpit_docker_requests_total' : 'sandpit_requests_total';
    assert.equal(value(s, counter, labels), buckets.at(-1).value, `${id}: counter = _count`);
    // _sum lies between what the buckets allow: each observation at least
    // the bucket's lower edge and at most its upper one (the +Inf bucket
    // has no upper bound)
    const sum = value(s, `${base}_sum`, labels);
    let lo = 0, hi = 0;
    for (let i = 0; i < buckets.length; i++) {
      const inBucket = buckets[i].value - (i ? buckets[i - 1].value : 0);
      if (!inBucket) continue;
      lo += inBucket * (i ? les[i - 1] : 0);
      hi += inBucket * les[i];
    }
    assert.ok(sum >= lo - 1e-6 && sum <= hi + 1e-6, `${id}: _sum ${sum} outside [${lo}, ${hi}]`);
    if (buckets.at(-1).value > 0) assert.ok(sum > 0, `${id}: _sum is 0 with observations`);
  }
});

test('Docker calls are counted per endpoint template; sandboxes per status', async () => {
  const c = await stack.api('POST', '/api/sandbox.create', { body: { template: 'alpine', memoryMb: 64 } });
  assert.equal(c.status, 200, c.text);
  const id = c.json.sandboxId;
  try {
    const s = await scrape();
    assert.ok(value(s, 'sandpit_docker_requests_total', { endpoint: 'POST /containers/create', status: '201' }) >= 1);
    assert.ok(value(s, 'sandpit_docker_requests_total', { endpoint: 'POST /containers/{id}/start', status: '204' }) >= 1);
    for (const x of s) {
      if (x.name === 'sandpit_docker_requests_total')
        assert.match(x.labels.endpoint, /^(GET|POST|PUT|HEAD|DELETE) \/[a-z{}/]*$/, 'templates, never ids');
    }
    assert.ok(value(s, 'sandpit_sandboxes', { status: 'running' }) >= 1);
    // durations are in seconds: a 1.5 s exec adds at least 1.5 to _sum
    const ex = { operation: 'sandbox-exec', status: '200' };
    const sumBefore = value(s, 'sandpit_request_duration_seconds_sum', ex);
    const e = await stack.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: 'sleep 1.5' } });
    assert.equal(e.status, 200, e.text);
    const s2 = await scrape();
    assert.ok(value(s2, 'sandpit_requests_total', ex) >= 1);
    const added = value(s2, 'sandpit_request_duration_seconds_sum', ex) - sumBefore;
    assert.ok(added >= 1.5 && added < 120, `a 1.5 s exec added ${added} to _sum`);
  } finally {
    await stack.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } });
  }
  const s3 = await scrape();
  assert.equal(value(s3, 'sandpit_sandboxes_scan_truncated', {}), 0);
});

test('an address outside SANDPIT_METRICS_ALLOW gets 403, even with a key', async () => {
  const r = await denied.api('GET', '/metrics', { key: null });
  assert.equal(r.status, 403, r.text);
  assert.equal(r.json?.code, 'FORBIDDEN');
  const k = await denied.api('GET', '/metrics');
  assert.equal(k.status, 403, k.text);
  // the rest of that stack works as usual
  const h = await denied.api('GET', '/healthz', { key: null });
  assert.equal(h.status, 200, h.text);
});

test('two instances: every sample names its instance, /metrics/NAME reaches one, counters never mix', async () => {
  for (const name of ['sandpitd', 'sandpitd-2']) {
    const s = await scrape(multi, `/metrics/${name}`);
    assert.ok(s.length > 0);
    for (const x of s) assert.equal(x.labels.sandpit_instance, name, `${x.name} ${JSON.stringify(x.labels)}`);
  }
  // the plain /metrics reaches either; each of its samples still names one
  const seen = new Set();
  for (let i = 0; i < 12; i++) {
    const s = await scrape(multi);
    const inst = new Set(s.map((x) => x.labels.sandpit_instance));
    assert.equal(inst.size, 1, [...inst].join(','));
    seen.add([...inst][0]);
  }
  // one instance's own counter only grows from scrape to scrape (with the
  // two mixed, it went 17, 17, 13, 17, ...)
  const key = { operation: 'sandbox-templates', status: '200' };
  let last = -1;
  for (let i = 0; i < 8; i++) {
    assert.equal((await multi.api('GET', '/api/sandbox.templates')).status, 200);
    const v = value(await scrape(multi, '/metrics/sandpitd-2'), 'sandpit_requests_total', key);
    assert.ok(v >= last, `sandpitd-2's counter went from ${last} to ${v}`);
    last = v;
  }
  assert.equal((await multi.api('GET', '/metrics/sandpitd-9', { key: null })).status, 503);
  assert.equal((await denied.api('GET', '/metrics/sandpitd', { key: null })).status, 403);
  assert.equal((await denied.api('GET', '/metrics/stream', { key: null })).status, 403);
});

test('sandboxes per organization', async () => {
  const org = `m-org-${Date.now().toString(36)}`;
  await stack.cli('orgs', 'create', org);
  const key = await stack.newKey(org);
  const c = await stack.api('POST', '/api/sandbox.create', { body: { template: 'alpine', memoryMb: 64 }, key });
  assert.equal(c.status, 200, c.text);
  try {
    const s = await scrape();
    assert.equal(value(s, 'sandpit_org_sandboxes', { org, status: 'running' }), 1);
    assert.equal(value(s, 'sandpit_org_sandboxes', { org, status: 'killed' }), 0);
    assert.ok(s.some((x) => x.name === 'sandpit_org_sandboxes' && x.labels.org === org && x.labels.status === 'killed'),
      'every status of an org with sandboxes is there');
    const k = await stack.api('POST', '/api/sandbox.kill', { body: { sandboxId: c.json.sandboxId }, key });
    assert.equal(k.status, 200, k.text);
    const s2 = await scrape();
    assert.equal(value(s2, 'sandpit_org_sandboxes', { org, status: 'running' }), 0);
    assert.equal(value(s2, 'sandpit_org_sandboxes', { org, status: 'killed' }), 1);
  } finally {
    await stack.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId }, key });
  }
});

test('WebSocket connections and their running commands (/metrics/stream)', { timeout: 120000 }, async () => {
  const c = await stack.api('POST', '/api/sandbox.create', { body: { template: 'alpine', memoryMb: 64 } });
  assert.equal(c.status, 200, c.text);
  const id = c.json.sandboxId;
  const ws = [];
  const ws0 = async () => {
    const s = await scrape(stack, '/metrics/stream');
    for (const x of s) assert.equal(x.labels.sandpit_instance, 'stream');
    return s;
  };
  try {
    const before0 = await ws0();
    const total0 = value(before0, 'sandpit_ws_connections_total', {});
    assert.equal(value(before0, 'sandpit_ws_connections', {}), 0);
    for (let i = 0; i < 2; i++) {
      const w = new WebSocket(`${stack.url.replace('https', 'wss')}/sandbox-exec?sandboxId=${id}`,
        { ca: stack.ca, headers: { 'x-api-key': stack.key } });
      const msgs = [];
      w.on('message', (d) => msgs.push(JSON.parse(d)));
      await waitFor(() => msgs.some((m) => m.type === 'ready'), 20000);
      ws.push({ w, msgs });
    }
    let s = await ws0();
    assert.equal(value(s, 'sandpit_ws_connections', {}), 2);
    assert.equal(value(s, 'sandpit_ws_connections_total', {}), total0 + 2);
    assert.equal(value(s, 'sandpit_ws_commands_running', {}), 0);
    ws[0].w.send(JSON.stringify({ type: 'exec', cmd: 'echo go; sleep 30' }));
    await waitFor(() => ws[0].msgs.some((m) => m.type === 'stdout'), 20000);
    s = await ws0();
    assert.equal(value(s, 'sandpit_ws_commands_running', {}), 1);
    ws[0].w.close();
    ws[1].w.close();
    await waitFor(async () => {
      const t = await ws0();
      return value(t, 'sandpit_ws_connections', {}) === 0 && value(t, 'sandpit_ws_commands_running', {}) === 0;
    }, 30000);
  } finally {
    for (const x of ws) x.w.terminate();
    await stack.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } });
  }
});

test('one log line per request, carrying the X-Request-Id the client got', async () => {
  const rs = [];
  rs.push(await stack.api('GET', '/api/sandbox.list'));
  rs.push(await stack.api('GET', '/api/sandbox.one', { query: { sandboxId: 'nope' } }));
  rs.push(await stack.api('POST', '/api/sandbox.create', { body: { template: 'nope' } }));
  const want = [['GET', '/api/sandbox.list', 200], ['GET', '/api/sandbox.one', 404], ['POST', '/api/sandbox.create', 400]];
  const rids = rs.map((r) => r.headers['x-request-id']);
  for (const [i, r] of rs.entries()) {
    assert.equal(r.status, want[i][2], r.text);
    assert.match(rids[i] ?? '', /^[0-9a-f]{32}$/, `X-Request-Id on the ${r.status} answer`);
  }
  assert.equal(new Set(rids).size, rids.length);
  const lines = await waitFor(() => {
    const log = readFileSync(path.join(stack.dir, 'sandpitd.log'), 'utf8').split('\n');
    const per = rids.map((rid) => log.filter((l) => l.includes(` ${rid} `) && / (GET|POST) \/api\//.test(l)));
    return per.every((x) => x.length) && per;
  }, 10000, 100);
  for (const [i, [method, p, status]] of want.entries()) {
    assert.equal(lines[i].length, 1, `one request line for ${rids[i]}: ${lines[i].join('\n')}`);
    assert.match(lines[i][0], new RegExp(` ${rids[i]} ${method} ${p.replace('.', '\\.')} ${status} \\d+ms$`));
  }
});
