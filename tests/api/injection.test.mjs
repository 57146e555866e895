// RELIABILITY H6, Docker API injection: sandbox ids and paths holding
// `../ ? # %2F & %00`, NUL, newlines, CR LF and 10 KB strings, in every
// field and query of the API, get a 4xx (400/404/414, never a 5xx; on the
// MCP face a tool error), and
// what sandpit sends to Docker is seen on the wire, through a recording
// proxy in front of the Docker socket (lib/dockerproxy.mjs): every request
// matches the allow-list of method + path templates below, carries only
// known query keys, names only containers and execs Docker made for this
// stack, and holds none of the injected strings.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startStack, waitFor } from './lib/stack.mjs';
import { dockerProxy } from './lib/dockerproxy.mjs';

let s, proxy, dir;
const made = [];
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sp-h6-'));
  proxy = await dockerProxy(dir);
  // ~400 requests in a few seconds: above the default per-key rate
  s = await startStack({ env: { SANDPIT_DOCKER_HOST: `unix://${proxy.sock}`, SANDPIT_RATE: '2000r/s', SANDPIT_BURST: '2000' } });
});
after(async () => {
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await s?.stop();
  await proxy?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

// method, path template, the query keys it may carry
const ALLOWED = [
  ['GET', '/_ping', []], ['HEAD', '/_ping', []],
  ['GET', '/version', []], ['GET', '/info', []],
  ['GET', '/containers/json', ['all', 'filters']],
  ['POST', '/containers/create', ['name']],
  ['GET', '/containers/{cid}/json', []],
  ['POST', '/containers/{cid}/start', []],
  ['POST', '/containers/{cid}/stop', ['t']],
  ['POST', '/containers/{cid}/kill', ['signal']],
  ['POST', '/containers/{cid}/pause', []],
  ['POST', '/containers/{cid}/unpause', []],
  ['POST', '/containers/{cid}/update', []],
  ['DELETE', '/containers/{cid}', ['v', 'force']],
  ['PUT', '/containers/{cid}/archive', ['path', 'noOverwriteDirNonDir']],
  ['HEAD', '/containers/{cid}/archive', ['path']],
  ['GET', '/containers/{cid}/archive', ['path']],
  ['POST', '/containers/{cid}/exec', []],
  ['POST', '/exec/{eid}/start', []],
  ['GET', '/exec/{eid}/json', []],
  ['POST', '/images/create', ['fromImage', 'tag']],
  ['GET', '/images/{image}/json', []],
  // snapshots (/v1, sandbox/snapshot.c): a commit, and removing only a
  // snapshot's own image
  ['POST', '/commit', ['container', 'repo', 'tag', 'pause']],
  ['DELETE', '/images/{snapimage}', []],
  ['GET', '/networks', ['filters']],
  ['POST', '/networks/create', []],
  ['GET', '/networks/{net}', []],
  ['DELETE', '/networks/{net}', []],
  // the /v1 managed volumes (v1-volumes.test.mjs checks their requests);
  // the reaper lists this installation's volumes in every stack
  ['GET', '/volumes', ['filters']],
  ['POST', '/volumes/create', []],
  ['GET', '/volumes/{vol}', []],
  ['DELETE', '/volumes/{vol}', []],
];
const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const HELPER = /^sandpit-helper-[0-9a-f]{16}$/;
const SNAPIMAGE = /^sandpit-snapshot(%3A|:)[a-z0-9]{20}$/;
// "" when the request is allowed, else why not
function vet(entry, ids) {
  const [p, q = ''] = entry.url.split(/\?(.*)/s);
  const rest = p.replace(/^\/v1\.\d+(?=\/)/, '');
  if (!/^[A-Za-z0-9\-._~%/]*$/.test(rest)) return 'bytes outside the unreserved set in the path';
  if (!/^[A-Za-z0-9\-._~%=&]*$/.test(q)) return 'bytes outside the unreserved set in the query';
  const segs = rest.split('/');
  for (const [method, tmpl, keys] of ALLOWED) {
    if (method !== entry.method) continue;
    const t = tmpl.split('/');
    if (t.length !== segs.length) continue;
    let ok = true;
    for (let i = 0; i < t.length && ok; i++) {
      const seg = segs[i];
      // only what Docker made for us, or the helper's marker container
      // (sandbox/helper.c: one per dockerd, named by the helper's hash,
      // made by whichever stack came first)
      if (t[i] === '{cid}') ok = ids.has(seg) || HELPER.test(seg);
      else if (t[i] === '{eid}') ok = ids.has(seg);
      else if (t[i] === '{net}') ok = ID.test(seg);
      else if (t[i] === '{vol}') ok = /^sandpit-vol-[a-z0-9]{20}$/.test(seg);
      else if (t[i] === '{image}') ok = /^sandpit-test%2F[a-z]+(%3A|:)latest$/.test(seg) || SNAPIMAGE.test(seg) || ID.test(seg);
      else if (t[i] === '{snapimage}') ok = SNAPIMAGE.test(seg);
      else ok = seg === t[i];
    }
    if (!ok) continue;
    for (const kv of q ? q.split('&') : []) {
      const k = kv.split('=')[0];
      if (!keys.includes(k)) return `query key ${k} not allowed for ${tmpl}`;
    }
    return '';
  }
  return 'matches no template (or names a container or exec Docker did not make for this stack)';
}
function decoded(u) {
  try { return decodeURIComponent(u); } catch { return u; }
}

test('H6: the wire check itself refuses what it must', () => {
  const ids = new Set(['a'.repeat(64)]);
  for (const [method, url] of [['GET', '/v1.41/containers/../json'], ['GET', `/v1.41/containers/${'b'.repeat(64)}/json`],
    ['POST', `/v1.41/containers/${'a'.repeat(64)}/kill?signal=KILL&x=1`], ['GET', '/v1.41/containers/json?all=1#x'],
    ['DELETE', '/v1.41/images/x'], ['POST', `/v1.41/containers/${'a'.repeat(64)}/attach`], ['GET', '/v1.41/containers/a%2F..']])
    assert.notEqual(vet({ method, url }, ids), '', `${method} ${url}`);
  assert.equal(vet({ method: 'POST', url: `/v1.41/containers/${'a'.repeat(64)}/kill?signal=KILL` }, ids), '');
});

test('H6: normal use goes through the recording proxy, and every request matches the allow-list', { timeout: 120000 }, async () => {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
  assert.equal(c.status, 200, c.text);
  made.push(c.json.sandboxId);
  const id = c.json.sandboxId;
  assert.ok(proxy.ids.has(c.json.containerId), 'the create went through the proxy');
  assert.equal((await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: 'echo hi' } })).json.stdout, 'hi\n');
  assert.equal((await s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: id, path: '/tmp/a b?c#d&e', content: 'x' } })).status, 200);
  const r = await s.api('GET', '/api/sandbox.readFile', { query: { sandboxId: id, path: '/tmp/a b?c#d&e' } });
  assert.equal(r.json.content, 'x');
  assert.equal((await s.api('GET', '/api/sandbox.listFiles', { query: { sandboxId: id, path: '/tmp' } })).status, 200);
  assert.equal((await s.api('POST', '/api/sandbox.setTimeout', { body: { sandboxId: id, timeoutMs: 120000 } })).status, 200);
  const bad = proxy.log.map((e) => [e, vet(e, proxy.ids)]).filter(([, why]) => why);
  assert.deepEqual(bad.map(([e, why]) => `${e.method} ${e.url.slice(0, 200)}: ${why}`), []);
  assert.ok(proxy.log.some((e) => e.upgrade), 'writeFile\'s hijacked exec went through the proxy');
  assert.ok(proxy.log.every((e) => e.status !== -1), 'Docker answered every request');
});

test('H6: a /v1 snapshot, its restore and the delete: every request matches the allow-list', { timeout: 180000 }, async (t) => {
  const c = await s.api('POST', '/v1/sandboxes', { body: { image: 'images/alpine' } });
  assert.equal(c.status, 201, c.text);
  made.push(c.json.uid);
  const n0 = proxy.log.length;
  assert.equal((await s.api('POST', '/api/sandbox.exec', { body: { sandboxId: c.json.uid, cmd: 'echo x > f' } })).status, 200);
  const snap = await s.api('POST', `/v1/sandboxes/${c.json.uid}/snapshots`, { body: { displayName: 'h6' } });
  assert.equal(snap.status, 202, snap.text);
  // the image, should the test fail before its delete
  t.after(() => { try { execFileSync('docker', ['rmi', '-f', `sandpit-snapshot:${snap.json.uid}`], { stdio: 'ignore' }); } catch { /* gone */ } });
  let g;
  await waitFor(async () => {
    g = await s.api('GET', `/v1/snapshots/${snap.json.uid}`);
    return g.json.status !== 'creating';
  }, 120000, 200);
  assert.equal(g.json.status, 'ready', g.text);
  const f = await s.api('POST', `/v1/snapshots/${snap.json.uid}/restore`, { body: {} });
  assert.equal(f.status, 201, f.text);
  made.push(f.json.uid);
  for (const id of [f.json.uid, c.json.uid]) await s.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } });
  let d;
  await waitFor(async () => {
    d = await s.api('DELETE', `/v1/snapshots/${snap.json.uid}`, { headers: { 'if-match': g.headers.etag } });
    return d.status !== 409;
  }, 30000, 250);
  assert.equal(d.status, 204, d.text);
  const sent = proxy.log.slice(n0);
  assert.ok(sent.some((e) => e.method === 'POST' && e.url.includes('/commit?')), 'the commit went through the proxy');
  assert.ok(sent.some((e) => e.method === 'DELETE' && e.url.includes('/images/')), 'the image removal too');
  const bad = sent.map((e) => [e, vet(e, proxy.ids)]).filter(([, why]) => why);
  assert.deepEqual(bad.map(([e, why]) => `${e.method} ${e.url.slice(0, 200)}: ${why}`), []);
});

test('H6: injected ids and paths get 400/404 (never a 5xx), and nothing of them reaches Docker', { timeout: 300000 }, async (t) => {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
  assert.equal(c.status, 200, c.text);
  made.push(c.json.sandboxId);
  const id = c.json.sandboxId;
  const big = 'x'.repeat(10240);
  const evil = ['../', '..', '../../../etc/passwd', 'a/../../b', 'a?b=1', '?all=1', 'a#b', '#', '%2F', 'a%2F..%2F..',
    '%2e%2e%2f', '&', 'a&force=1', '%00', 'a\u0000b', 'a\nb', '\r\nHost: evil', 'a b', '/', '', big,
    `${id}/../../json`, `${id}?force=1`, `${id}#x`, `${id}%2F..`, `${id}\n`, `${id}/`, `../${id}`, `${id}&v=1`,
    `${id}%00`, `${c.json.containerId}`, `${id}/exec`];
  const calls = [];
  for (const e of evil) {
    calls.push(['one', () => s.api('GET', '/api/sandbox.one', { query: { sandboxId: e } })]);
    for (const route of ['kill', 'remove']) calls.push([route, () => s.api('POST', `/api/sandbox.${route}`, { body: { sandboxId: e } })]);
    calls.push(['setTimeout', () => s.api('POST', '/api/sandbox.setTimeout', { body: { sandboxId: e, timeoutMs: 60000 } })]);
    calls.push(['exec', () => s.api('POST', '/api/sandbox.exec', { body: { sandboxId: e, cmd: 'true' } })]);
    calls.push(['writeFile', () => s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: e, path: '/tmp/x', content: 'x' } })]);
    calls.push(['readFile', () => s.api('GET', '/api/sandbox.readFile', { query: { sandboxId: e, path: '/etc/hostname' } })]);
    calls.push(['listFiles', () => s.api('GET', '/api/sandbox.listFiles', { query: { sandboxId: e, path: '/' } })]);
    calls.push(['create template', () => s.api('POST', '/api/sandbox.create', { body: { template: e } })]);
    calls.push(['create serverId', () => s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', serverId: e } })]);
  }
  // the same strings raw in the query string, not form-encoded by the client
  for (const raw of [`${id}%2F..%2Fjson`, `${id}%00`, `${id}%0a`, `${id}%23x`, `${id}%3Fforce%3D1`, '..%2F..%2F', `${id}&sandboxId=x`, `%2e%2e`])
    calls.push(['one raw', () => s.api('GET', `/api/sandbox.one?sandboxId=${raw}`)]);
  // with our own id, the strings as paths and cwd: these do reach the
  // sandbox (inside exec bodies, as arguments), never a Docker URL
  const pathCalls = [];
  for (const e of evil.filter((x) => x !== big)) {
    pathCalls.push(['readFile path', () => s.api('GET', '/api/sandbox.readFile', { query: { sandboxId: id, path: `/tmp/${e}` } })]);
    pathCalls.push(['listFiles path', () => s.api('GET', '/api/sandbox.listFiles', { query: { sandboxId: id, path: `/tmp/${e}` } })]);
    pathCalls.push(['writeFile path', () => s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: id, path: `/tmp/h6/${e}`, content: 'evil' } })]);
    pathCalls.push(['exec cwd', () => s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd: 'true', cwd: `/tmp/${e}` } })]);
  }
  pathCalls.push(['readFile 10 KB path', () => s.api('GET', '/api/sandbox.readFile', { query: { sandboxId: id, path: `/tmp/${big}` } })]);
  pathCalls.push(['writeFile 10 KB path', () => s.api('POST', '/api/sandbox.writeFile', { body: { sandboxId: id, path: `/tmp/${big}`, content: 'x' } })]);
  // the MCP face: the same ids through tools/call; a refusal is a tool
  // error (isError) or a JSON-RPC error, in a 200
  const mcpCalls = [];
  for (const e of evil) {
    for (const [name, args] of [['sandbox-exec', { cmd: 'true' }], ['sandbox-kill', {}], ['sandbox-readFile', { path: '/etc/hostname' }],
      ['sandbox-listFiles', { path: '/' }], ['sandbox-setTimeout', { timeoutMs: 60000 }]]) {
      mcpCalls.push([`mcp ${name}`, () => s.api('POST', '/mcp', {
        rawBody: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: { sandboxId: e, ...args } } }),
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      })]);
    }
  }
  const n0 = proxy.log.length;
  const statuses = {};
  const fails = [];
  for (let i = 0; i < calls.length; i += 4) {
    await Promise.all(calls.slice(i, i + 4).map(async ([what, call]) => {
      const r = await call();
      statuses[r.status] = (statuses[r.status] || 0) + 1;
      if (r.status === 200 && what.startsWith('create')) made.push(r.json.sandboxId);
      if (![400, 404, 414].includes(r.status)) fails.push(`${what}: ${r.status} ${r.text.slice(0, 120)}`);
      else if (r.status !== 414 && !r.json) fails.push(`${what}: ${r.status} is not JSON: ${r.text.slice(0, 80)}`);
    }));
  }
  const mcpStatuses = {};
  for (let i = 0; i < mcpCalls.length; i += 4) {
    await Promise.all(mcpCalls.slice(i, i + 4).map(async ([what, call]) => {
      const r = await call();
      const k = `${r.status} ${r.json?.result?.isError ? 'isError' : r.json?.error ? `error ${r.json.error.code}` : 'other'}`;
      mcpStatuses[k] = (mcpStatuses[k] || 0) + 1;
      if (r.status !== 200 || !(r.json?.result?.isError === true || r.json?.error)) fails.push(`${what}: ${r.status} ${r.text.slice(0, 160)}`);
      else if (/internal|500/i.test(JSON.stringify(r.json.result?.content ?? r.json.error))) fails.push(`${what}: ${r.text.slice(0, 160)}`);
    }));
  }
  const sent = proxy.log.slice(n0);
  const pathStatuses = {};
  for (let i = 0; i < pathCalls.length; i += 4) {
    await Promise.all(pathCalls.slice(i, i + 4).map(async ([what, call]) => {
      const r = await call();
      pathStatuses[r.status] = (pathStatuses[r.status] || 0) + 1;
      if (![200, 400, 403, 404, 414].includes(r.status)) fails.push(`${what}: ${r.status} ${r.text.slice(0, 120)}`);
    }));
  }
  t.diagnostic(`${pathCalls.length} injected paths and cwds with a real sandbox: statuses ${JSON.stringify(pathStatuses)}`);
  t.diagnostic(`${calls.length} injected requests: statuses ${JSON.stringify(statuses)}; ${mcpCalls.length} MCP tool calls: ${JSON.stringify(mcpStatuses)}; ` +
    `${sent.length} Docker requests meanwhile: ` +
    JSON.stringify([...new Set(sent.map((e) => `${e.method} ${e.url.split('?')[0].replace(/[0-9a-f]{64}/g, '{id}')}`))]));
  assert.deepEqual(fails, []);
  // the sandbox itself was never touched by an id that merely contains it
  const one = await s.api('GET', '/api/sandbox.one', { query: { sandboxId: id } });
  assert.equal(one.json.status, 'running', one.text);
  // the wire: allow-listed, and no trace of the injected strings
  const bad = [];
  for (const e of proxy.log) {
    const why = vet(e, proxy.ids);
    const d = decoded(e.url);
    if (why) bad.push(`${e.method} ${e.url.slice(0, 200)}: ${why}`);
    else if (/\.\.|[\n\r\0#]|evil|passwd|x{100}/.test(d) || /(%00|%0A|%0D|%23)/i.test(e.url)) bad.push(`${e.method} ${e.url.slice(0, 200)}: an injected string`);
  }
  assert.deepEqual(bad, []);
  // and nothing Docker was asked named a container other than ours
  const cids = new Set(sent.map((e) => /\/containers\/([0-9a-f]{64})/.exec(e.url)?.[1]).filter(Boolean));
  for (const cid of cids) assert.equal(cid, c.json.containerId);
});
