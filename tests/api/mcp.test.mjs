// /mcp: the MCP server over Streamable HTTP. The official TypeScript SDK
// client connects with the x-api-key header (its fetch goes through
// node:https trusting the stack's CA), lists the eleven tools and drives a
// sandbox; a failing tool is a result with isError; malformed JSON-RPC gets
// JSON-RPC errors.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startStack } from './lib/stack.mjs';

const TOOLS = [
  'sandbox-create', 'sandbox-exec', 'sandbox-writeFile', 'sandbox-readFile',
  'sandbox-listFiles', 'sandbox-setTimeout', 'sandbox-kill', 'sandbox-remove',
  'sandbox-list', 'sandbox-one', 'sandbox-templates',
];
const QUERIES = new Set(['sandbox-readFile', 'sandbox-listFiles', 'sandbox-list', 'sandbox-one',
  'sandbox-templates']);

let stack;
let client;
const created = [];

/** A fetch for the SDK that trusts the stack's CA (node:https). */
function caFetch(ca) {
  return (input, init = {}) => new Promise((resolve, reject) => {
    const url = new URL(typeof input === 'string' ? input : input.url ?? String(input));
    const headers = {};
    new Headers(init.headers || {}).forEach((v, k) => { headers[k] = v; });
    const body = init.body === undefined || init.body === null ? undefined : Buffer.from(init.body);
    if (body) headers['content-length'] = body.length;
    const req = https.request({
      host: url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      method: init.method || 'GET',
      headers,
      ca,
      servername: 'localhost',
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        init.signal?.removeEventListener('abort', onAbort);
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) {
          for (const one of [].concat(v)) h.append(k, one);
        }
        const buf = Buffer.concat(chunks);
        const nobody = [101, 204, 205, 304].includes(res.statusCode);
        resolve(new Response(nobody ? null : buf, { status: res.statusCode, headers: h }));
      });
      res.on('error', reject);
    });
    const onAbort = () => req.destroy(new Error('aborted'));
    req.on('error', (e) => {
      init.signal?.removeEventListener('abort', onAbort);
      reject(e);
    });
    if (init.signal) {
      if (init.signal.aborted) onAbort();
      init.signal.addEventListener('abort', onAbort, { once: true });
    }
    if (body) req.write(body);
    req.end();
  });
}

async function connect(key) {
  const c = new Client({ name: 'sandpit-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', stack.url), {
    requestInit: { headers: { 'x-api-key': key } },
    fetch: caFetch(stack.ca),
  });
  await c.connect(transport);
  return c;
}

/** One raw JSON-RPC POST to /mcp. */
function rpc(body, { key, headers } = {}) {
  return stack.api('POST', '/mcp', {
    rawBody: typeof body === 'string' ? body : JSON.stringify(body),
    key,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
  });
}

before(async () => {
  stack = await startStack();
  client = await connect(stack.key);
});

after(async () => {
  for (const id of created) {
    await stack?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  }
  await client?.close().catch(() => {});
  await stack?.stop();
});

test('the SDK client initializes: server info, tools capability, negotiated version', () => {
  assert.equal(client.getServerVersion().name, 'sandpit');
  assert.ok(client.getServerCapabilities().tools);
});

test('tools/list: exactly the eleven procedures, schemas and hints from the route table', async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort());
  const doc = (await stack.api('GET', '/openapi.json')).json;
  for (const t of tools) {
    assert.equal(t.inputSchema.type, 'object', t.name);
    assert.equal(t.inputSchema.additionalProperties, false, t.name);
    assert.equal(t.annotations.readOnlyHint, QUERIES.has(t.name), t.name);
    if (!QUERIES.has(t.name)) {
      assert.equal(t.annotations.destructiveHint, ['sandbox-kill', 'sandbox-remove'].includes(t.name), t.name);
    }
    assert.equal(t.outputSchema?.type, 'object', t.name);
    // the same schema as the OpenAPI operation's
    const [p, item] = Object.entries(doc.paths).find(([, it]) =>
      Object.values(it).some((op) => op.operationId === t.name));
    const op = Object.values(item)[0];
    if (op.requestBody) {
      assert.deepEqual(t.inputSchema, op.requestBody.content['application/json'].schema, p);
    } else {
      assert.deepEqual(Object.keys(t.inputSchema.properties), (op.parameters || []).map((x) => x.name), p);
    }
  }
  const create = tools.find((t) => t.name === 'sandbox-create').inputSchema;
  assert.equal(create.properties.memoryMb.minimum, 64);
  assert.equal(create.properties.memoryMb.default, 512);
});

test('create → exec → writeFile → readFile → listFiles → kill through the SDK', async () => {
  const c = await client.callTool({ name: 'sandbox-create', arguments: { template: 'alpine', name: 'mcp-test' } });
  assert.equal(c.isError, false, JSON.stringify(c));
  const sb = c.structuredContent;
  created.push(sb.sandboxId);
  assert.equal(sb.status, 'running');
  assert.deepEqual(JSON.parse(c.content[0].text), sb);
  const id = sb.sandboxId;

  const ex = await client.callTool({ name: 'sandbox-exec',
    arguments: { sandboxId: id, cmd: 'echo hi; echo oops >&2; exit 3', timeoutMs: 30000 } });
  assert.equal(ex.isError, false, JSON.stringify(ex));
  assert.deepEqual(ex.structuredContent,
    { stdout: 'hi\n', stderr: 'oops\n', exitCode: 3, timedOut: false, truncated: false });

  const bin = Buffer.from([0, 1, 2, 0xff, 0x80, 10]);
  const w = await client.callTool({ name: 'sandbox-writeFile',
    arguments: { sandboxId: id, path: '/home/user/data.bin', content: bin.toString('base64'), encoding: 'base64', mode: 0o600 } });
  assert.deepEqual(w.structuredContent, { path: '/home/user/data.bin', size: 6 });

  const r = await client.callTool({ name: 'sandbox-readFile',
    arguments: { sandboxId: id, path: '/home/user/data.bin', encoding: 'base64' } });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.deepEqual(Buffer.from(r.structuredContent.content, 'base64'), bin);

  const ls = await client.callTool({ name: 'sandbox-listFiles', arguments: { sandboxId: id } });
  assert.ok(ls.structuredContent.entries.some((e) => e.name === 'data.bin'), JSON.stringify(ls));

  const list = await client.callTool({ name: 'sandbox-list', arguments: {} });
  assert.ok(list.structuredContent.items.some((s) => s.sandboxId === id));
  assert.ok(Array.isArray(JSON.parse(list.content[0].text)));

  const st = await client.callTool({ name: 'sandbox-setTimeout', arguments: { sandboxId: id, timeoutMs: 60000 } });
  assert.equal(st.structuredContent.timeoutMs, 60000);

  const k = await client.callTool({ name: 'sandbox-kill', arguments: { sandboxId: id } });
  assert.equal(k.structuredContent.status, 'killed');

  // a failing procedure is a tool result with the API's message
  const dead = await client.callTool({ name: 'sandbox-exec', arguments: { sandboxId: id, cmd: 'true' } });
  assert.equal(dead.isError, true);
  assert.match(dead.content[0].text, /^Sandbox is killed/);

  const rm = await client.callTool({ name: 'sandbox-remove', arguments: { sandboxId: id } });
  assert.deepEqual(rm.structuredContent, { result: true }); // remove answers true, wrapped
  created.length = 0;
});

test('tool failures are isError results carrying the API message', async () => {
  const nf = await client.callTool({ name: 'sandbox-one', arguments: { sandboxId: 'no-such-sandbox' } });
  assert.equal(nf.isError, true);
  assert.deepEqual(nf.content, [{ type: 'text', text: 'Sandbox not found' }]);
  assert.equal(nf.structuredContent, undefined);

  const missing = await client.callTool({ name: 'sandbox-exec', arguments: { sandboxId: 'x' } });
  assert.equal(missing.isError, true);
  assert.equal(missing.content[0].text, 'cmd: Required');

  const bounds = await client.callTool({ name: 'sandbox-create', arguments: { template: 'alpine', memoryMb: 1 } });
  assert.equal(bounds.isError, true);
  assert.match(bounds.content[0].text, /^memoryMb: must be between 64 and 262144/);

  // numbers are JSON numbers, not query-string text
  const asText = await client.callTool({ name: 'sandbox-setTimeout', arguments: { sandboxId: 'x', timeoutMs: '60000' } });
  assert.equal(asText.isError, true);
  assert.match(asText.content[0].text, /timeoutMs: expected an integer/);

  const unknown = await client.callTool({ name: 'sandbox-one', arguments: { sandboxId: 'x', extra: 1 } });
  assert.equal(unknown.isError, true);
  assert.match(unknown.content[0].text, /Unrecognized key: 'extra'/);
});

test('a key without the permission gets an isError result naming it', async () => {
  const member = await connect(await stack.newKey('mcp-member-org', 'member'));
  try {
    const { tools } = await member.listTools();
    assert.equal(tools.length, TOOLS.length);
    const r = await member.callTool({ name: 'sandbox-list', arguments: {} });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /lacks the sandbox:read permission/);
  } finally {
    await member.close();
  }
});

test('another organization\'s sandbox is not found through MCP either: every tool that names one, nothing done', async () => {
  const sb = (await stack.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } })).json;
  created.push(sb.sandboxId);
  const q = { sandboxId: sb.sandboxId };
  const before = (await stack.api('GET', '/api/sandbox.one', { query: q })).json;
  const other = await connect(await stack.newKey('mcp-other-org'));
  try {
    const tries = [
      ['sandbox-one', {}], ['sandbox-exec', { cmd: 'touch /tmp/by-other-org' }],
      ['sandbox-writeFile', { path: '/tmp/written-by-other-org', content: 'x' }],
      ['sandbox-readFile', { path: '/etc/hostname' }], ['sandbox-listFiles', { path: '/tmp' }],
      ['sandbox-setTimeout', { timeoutMs: 20000 }], ['sandbox-kill', {}], ['sandbox-remove', {}],
    ];
    // every tool with a sandboxId (the others: create, list, templates)
    const { tools } = await other.listTools();
    assert.deepEqual(tries.map(([n]) => n).sort(),
      tools.filter((t) => t.inputSchema.properties?.sandboxId).map((t) => t.name).sort());
    for (const [name, args] of tries) {
      const r = await other.callTool({ name, arguments: { ...q, ...args } });
      assert.equal(r.isError, true, `${name}: ${JSON.stringify(r)}`);
      assert.equal(r.content[0].text, 'Sandbox not found', name);
      assert.equal(r.structuredContent, undefined, `${name}: ${JSON.stringify(r)}`);
    }
    const list = await other.callTool({ name: 'sandbox-list', arguments: {} });
    assert.ok(!JSON.stringify(list).includes(sb.sandboxId), JSON.stringify(list));
  } finally {
    await other.close();
  }
  // nothing done: running, the same expiry, no file of theirs
  const after = (await stack.api('GET', '/api/sandbox.one', { query: q })).json;
  assert.equal(after.status, 'running');
  assert.equal(after.expiresAt, before.expiresAt);
  const ls = await stack.api('GET', '/api/sandbox.listFiles', { query: { ...q, path: '/tmp' } });
  assert.equal(ls.status, 200, ls.text);
  assert.ok(!/other-org/.test(ls.text), ls.text);
});

test('initialize negotiates the protocol version', async () => {
  for (const [asked, got] of [['2025-06-18', '2025-06-18'], ['2025-03-26', '2025-03-26'],
    ['2024-11-05', '2024-11-05'], ['1999-01-01', '2025-06-18']]) {
    const r = await rpc({ jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: asked, capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    assert.equal(r.status, 200, r.text);
    assert.match(r.headers['content-type'], /^application\/json/);
    assert.equal(r.json.result.protocolVersion, got, asked);
    assert.deepEqual(r.json.result.capabilities, { tools: {} });
    assert.equal(r.json.result.serverInfo.name, 'sandpit');
  }
});

test('JSON-RPC: ping, notifications, errors', async () => {
  let r = await rpc({ jsonrpc: '2.0', id: 'p1', method: 'ping' });
  assert.deepEqual(r.json, { jsonrpc: '2.0', id: 'p1', result: {} });

  r = await rpc({ jsonrpc: '2.0', method: 'notifications/initialized' });
  assert.equal(r.status, 202);
  assert.equal(r.text, '');

  r = await rpc('{"jsonrpc":"2.0","id":1,');
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, -32700);
  assert.equal(r.json.id, null);

  r = await rpc({ id: 1, method: 'ping' });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, -32600);

  r = await rpc({ jsonrpc: '2.0', id: 2, method: 'resources/list' });
  assert.equal(r.status, 200);
  assert.deepEqual(r.json.error.code, -32601);
  assert.equal(r.json.id, 2);

  r = await rpc({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'sandbox-nope', arguments: {} } });
  assert.equal(r.json.error.code, -32602);
  r = await rpc({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'sandbox-list', arguments: [] } });
  assert.equal(r.json.error.code, -32602);
  r = await rpc({ jsonrpc: '2.0', id: 5, method: 'initialize', params: {} });
  assert.equal(r.json.error.code, -32602);

  // a batch (2025-03-26) answers its requests in one array
  r = await rpc([{ jsonrpc: '2.0', id: 6, method: 'ping' }, { jsonrpc: '2.0', method: 'notifications/x' },
    { jsonrpc: '2.0', id: 7, method: 'nope' }]);
  assert.equal(r.status, 200);
  assert.deepEqual(r.json.map((m) => m.id), [6, 7]);
  assert.equal(r.json[1].error.code, -32601);

  r = await rpc({ jsonrpc: '2.0', id: 8, method: 'ping' }, { headers: { 'mcp-protocol-version': '2000-01-01' } });
  assert.equal(r.status, 400);
});

test('transport: GET is 405, a key is needed', async () => {
  const g = await stack.api('GET', '/mcp', { headers: { accept: 'text/event-stream' } });
  assert.equal(g.status, 405);
  // No key: not a 401 (stock MCP clients turn a 401 into an OAuth prompt)
  // but a 403 without WWW-Authenticate carrying a JSON-RPC error to show.
  const n = await rpc({ jsonrpc: '2.0', id: 1, method: 'ping' }, { key: null });
  assert.equal(n.status, 403);
  assert.equal(n.headers['www-authenticate'], undefined);
  assert.equal(n.json.error.code, -32001);
  assert.match(n.json.error.message, /^Missing API key: send it in the x-api-key header\. .*not OAuth$/);
  const bad = await rpc({ jsonrpc: '2.0', id: 1, method: 'ping' }, { key: 'sp_not-a-key' });
  assert.equal(bad.status, 403);
  assert.match(bad.json.error.message, /^Invalid API key\./);
  // the rest of the API keeps its 401
  assert.equal((await stack.api('GET', '/api/sandbox.list', { key: null })).status, 401);
});

test('an MCP client with an OAuth provider and no key shows the message, never starts OAuth', async () => {
  const calls = [];
  // What the MCP Inspector passes: an auth provider that would start OAuth.
  const provider = new Proxy({}, {
    get(_t, prop) {
      if (prop === 'then') return undefined;
      if (prop === 'redirectUrl') return 'http://localhost/cb';
      if (prop === 'clientMetadata') return { redirect_uris: ['http://localhost/cb'], client_name: 't' };
      return (...a) => { calls.push(String(prop)); return undefined; };
    },
  });
  const c = new Client({ name: 'sandpit-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', stack.url), {
    authProvider: provider, fetch: caFetch(stack.ca),
  });
  await assert.rejects(c.connect(transport), (err) => {
    assert.match(err.message, /Missing API key: send it in the x-api-key header/);
    assert.doesNotMatch(err.message, /401|Unauthorized/i);
    return true;
  });
  // tokens() may be asked for (to attach a bearer token); nothing that
  // starts an OAuth flow is
  assert.deepEqual(calls.filter((c2) => c2 !== 'tokens'), [], calls.join(','));
  await c.close().catch(() => {});
});
