// GET /openapi.json: the document generated from the route table. It must
// lint clean with @redocly/cli, describe exactly the eleven procedures, and
// every real answer (success and error) of every operation must match the
// schema the document gives for it (ajv, JSON Schema 2020-12).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { repoRoot, startStack } from './lib/stack.mjs';

const PROCEDURES = {
  'sandbox-create': ['post', '/sandbox.create'],
  'sandbox-one': ['get', '/sandbox.one'],
  'sandbox-list': ['get', '/sandbox.list'],
  'sandbox-templates': ['get', '/sandbox.templates'],
  'sandbox-setTimeout': ['post', '/sandbox.setTimeout'],
  'sandbox-kill': ['post', '/sandbox.kill'],
  'sandbox-remove': ['post', '/sandbox.remove'],
  'sandbox-exec': ['post', '/sandbox.exec'],
  'sandbox-writeFile': ['post', '/sandbox.writeFile'],
  'sandbox-readFile': ['get', '/sandbox.readFile'],
  'sandbox-listFiles': ['get', '/sandbox.listFiles'],
};

let stack;
let doc;
let ajv;
const created = [];

before(async () => {
  stack = await startStack();
  const r = await stack.api('GET', '/openapi.json');
  assert.equal(r.status, 200, r.text);
  doc = r.json;
  ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'sandpit:openapi', components: { schemas: doc.components.schemas } });
});

after(async () => {
  for (const id of created) {
    await stack?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  }
  await stack?.stop();
});

function operation(opId) {
  const [method, p] = PROCEDURES[opId];
  const op = doc.paths[p]?.[method];
  assert.ok(op, `${method.toUpperCase()} ${p} is in the document`);
  return op;
}

/** The schema the document gives for an answer of opId with status. */
function responseSchema(opId, status) {
  const op = operation(opId);
  let resp = op.responses[String(status)];
  assert.ok(resp, `${opId} documents status ${status} (has ${Object.keys(op.responses)})`);
  if (resp.$ref) resp = doc.components.responses[resp.$ref.split('/').pop()];
  const schema = resp.content['application/json'].schema;
  assert.ok(schema.$ref, `${opId} ${status}: a component schema`);
  return schema.$ref.replace('#', 'sandpit:openapi#');
}

/** Calls opId through the REST API as the document says and checks the
 * answer against the documented schema. Returns the answer. */
async function call(opId, input, { key, expect = 200 } = {}) {
  const r = await send(opId, input, key);
  assert.equal(r.status, expect, `${opId} ${JSON.stringify(input)}: ${r.text}`);
  return matches(opId, r);
}
function send(opId, input, key) {
  const [method, p] = PROCEDURES[opId];
  const url = `/api${p}`;
  return method === 'get'
    ? stack.api('GET', url, { query: input, key, timeoutMs: 30000 })
    : stack.api('POST', url, { body: input, key, timeoutMs: 30000 });
}
/** Asserts the answer r of opId matches the schema documented for its status. */
function matches(opId, r) {
  assert.match(r.headers['content-type'], /^application\/json/);
  const validate = ajv.getSchema(responseSchema(opId, r.status));
  assert.ok(validate, `schema for ${opId} ${r.status} compiles`);
  assert.ok(validate(r.json),
    `${opId} ${r.status} answer matches the document: ${ajv.errorsText(validate.errors)}\n${r.text}`);
  return r.json;
}

test('the document is OpenAPI 3.1 with the eleven procedures and the x-api-key scheme', () => {
  assert.equal(doc.openapi, '3.1.0');
  assert.deepEqual(doc.servers, [{ url: '/api', description: doc.servers[0].description }]);
  assert.deepEqual(doc.components.securitySchemes.apiKey,
    { type: 'apiKey', in: 'header', name: 'x-api-key', description: doc.components.securitySchemes.apiKey.description });
  assert.deepEqual(doc.security, [{ apiKey: [] }]);
  const ops = [];
  for (const [p, item] of Object.entries(doc.paths)) {
    for (const [m, op] of Object.entries(item)) ops.push([op.operationId, m, p]);
  }
  assert.deepEqual(ops.map((o) => o[0]).sort(), Object.keys(PROCEDURES).sort());
  for (const [opId, m, p] of ops) assert.deepEqual([m, p], PROCEDURES[opId], opId);
  for (const opId of Object.keys(PROCEDURES)) {
    const op = operation(opId);
    for (const s of ['200', '400', '401', '403', '404', '412', '413', '422', '429', '500', '503']) {
      assert.ok(op.responses[s], `${opId} documents ${s}`);
    }
    if (PROCEDURES[opId][0] === 'get') assert.equal(op.requestBody, undefined, opId);
    else assert.equal(op.requestBody.required, true, opId);
  }
  const err = doc.components.schemas.Error;
  assert.deepEqual(err.required, ['message', 'code']);
  assert.ok(err.properties.issues);
});

test('input schemas carry the route table\'s bounds, defaults and enums', () => {
  const create = operation('sandbox-create').requestBody.content['application/json'].schema;
  assert.equal(create.additionalProperties, false);
  assert.deepEqual(create.properties.memoryMb,
    { type: 'integer', minimum: 64, maximum: 262144, default: 512, description: create.properties.memoryMb.description });
  assert.equal(create.properties.cpu.minimum, 0.1);
  assert.equal(create.properties.cpu.maximum, 64);
  assert.equal(create.properties.cpu.default, 1);
  assert.equal(create.properties.pidsLimit.default, 256);
  assert.equal(create.properties.timeoutMs.default, 300000);
  assert.equal(create.properties.maxLifetimeMs.maximum, 86400000);
  assert.deepEqual(create.properties.networkMode.enum, ['isolated', 'internet']);
  assert.equal(create.properties.networkMode.default, 'isolated');
  assert.equal(create.properties.name.maxLength, 64);
  assert.equal(create.properties.envVars.maxLength, 65536);
  assert.deepEqual(create.properties.serverId.type, ['string', 'null']);
  const exec = operation('sandbox-exec').requestBody.content['application/json'].schema;
  assert.deepEqual(exec.required, ['sandboxId', 'cmd']);
  assert.equal(exec.properties.timeoutMs.minimum, 1000);
  assert.equal(exec.properties.timeoutMs.maximum, 600000);
  assert.equal(exec.properties.timeoutMs.default, 60000);
  assert.equal(exec.properties.env.type, 'object');
  const write = operation('sandbox-writeFile').requestBody.content['application/json'].schema;
  assert.equal(write.properties.mode.maximum, 0o7777);
  assert.equal(write.properties.mode.default, 0o644);
  assert.deepEqual(write.properties.encoding.enum, ['utf8', 'base64']);
  const read = operation('sandbox-readFile').parameters;
  assert.deepEqual(read.map((p) => [p.name, p.in, p.required]),
    [['sandboxId', 'query', true], ['path', 'query', true], ['encoding', 'query', false]]);
  assert.equal(operation('sandbox-list').parameters, undefined);
});

test('the document needs a key', async () => {
  const r = await stack.api('GET', '/openapi.json', { key: null });
  assert.equal(r.status, 401, r.text);
});

// The generated document is linted with Redocly's strictest built-in set
// (every warning is an error). Only info-license is off: sandpit has no
// license to name, and the rule checks metadata, not correctness.
const REDOCLY_CONFIG = `extends:
  - recommended-strict
rules:
  info-license: off
`;

test('@redocly/cli lint: no errors, no warnings (recommended-strict)', async () => {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'openapi-'));
  const file = path.join(tmp, 'openapi.json');
  const config = path.join(tmp, 'redocly.yaml');
  await writeFile(file, JSON.stringify(doc, null, 2));
  await writeFile(config, REDOCLY_CONFIG);
  try {
    const out = await new Promise((resolve, reject) => {
      execFile('npx', ['--prefix', path.join(repoRoot, 'tests'), '--no', 'redocly', 'lint',
        '--config', config, '--format', 'stylish', file], {
        cwd: tmp,
        env: {
          ...process.env,
          REDOCLY_TELEMETRY: 'off',
          REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
          NO_UPDATE_NOTIFIER: '1',
          npm_config_update_notifier: 'false',
        },
        timeout: 180000,
        maxBuffer: 8 << 20,
      }, (err, stdout, stderr) => {
        if (err) reject(new Error(`redocly lint failed (${err.code}):\n${stdout}\n${stderr}`));
        else resolve(stdout + stderr);
      });
    });
    assert.match(out, /Your API description is valid/, out);
    assert.doesNotMatch(out, /You have \d+ warning|failed with/, out);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
});

test('create bounds from the document are the bounds the server enforces', async () => {
  const create = operation('sandbox-create').requestBody.content['application/json'].schema;
  for (const [name, s] of Object.entries(create.properties)) {
    if (s.type !== 'integer' && s.type !== 'number') continue;
    const step = s.type === 'integer' ? 1 : 0.01;
    for (const bad of [s.minimum - step, s.maximum + step]) {
      const e = await call('sandbox-create', { template: 'alpine', [name]: bad }, { expect: 400 });
      assert.equal(e.code, 'BAD_REQUEST');
      assert.deepEqual(e.issues[0].path, [name], JSON.stringify(e));
    }
  }
  const e = await call('sandbox-create', { template: 'alpine', nope: 1 }, { expect: 400 });
  assert.match(e.message, /Unrecognized key/);
});

test('every operation answers with the documented schema, on success and on error', async () => {
  const missing = { sandboxId: 'no-such-sandbox' };
  // errors first: no sandbox needed
  await call('sandbox-one', missing, { expect: 404 });
  await call('sandbox-list', { bogus: '1' }, { expect: 400 });
  await call('sandbox-templates', { bogus: '1' }, { expect: 400 });
  await call('sandbox-setTimeout', { ...missing, timeoutMs: 60000 }, { expect: 404 });
  await call('sandbox-kill', missing, { expect: 404 });
  await call('sandbox-remove', missing, { expect: 404 });
  await call('sandbox-exec', { ...missing, cmd: 'true' }, { expect: 404 });
  await call('sandbox-writeFile', { ...missing, path: '/tmp/x', content: '' }, { expect: 404 });
  await call('sandbox-readFile', { ...missing, path: 'relative' }, { expect: 400 });
  await call('sandbox-listFiles', missing, { expect: 404 });
  await call('sandbox-create', {}, { expect: 400 });
  await call('sandbox-list', {}, { key: null, expect: 401 });

  // the life of one sandbox; the defaults are the documented ones
  const sb = await call('sandbox-create', { template: 'alpine', name: 'openapi-test' });
  created.push(sb.sandboxId);
  const props = operation('sandbox-create').requestBody.content['application/json'].schema.properties;
  assert.equal(sb.status, 'running');
  assert.equal(sb.memoryMb, props.memoryMb.default);
  assert.equal(sb.pidsLimit, props.pidsLimit.default);
  assert.equal(sb.timeoutMs, props.timeoutMs.default);
  assert.equal(sb.cpu, props.cpu.default);
  assert.equal(sb.networkMode, props.networkMode.default);
  assert.equal(sb.workdir, props.workdir.default);
  const id = { sandboxId: sb.sandboxId };
  assert.equal((await call('sandbox-one', id)).sandboxId, sb.sandboxId);
  assert.ok((await call('sandbox-list', {})).some((s) => s.sandboxId === sb.sandboxId));
  assert.ok((await call('sandbox-templates', {})).some((t) => t.name === 'alpine'));
  assert.equal((await call('sandbox-setTimeout', { ...id, timeoutMs: 120000 })).timeoutMs, 120000);
  const ex = await call('sandbox-exec', { ...id, cmd: 'echo out; echo err >&2; exit 3' });
  assert.deepEqual([ex.stdout, ex.stderr, ex.exitCode], ['out\n', 'err\n', 3]);
  const w = await call('sandbox-writeFile', { ...id, path: '/home/user/d/a.txt', content: 'héllo\n' });
  assert.equal(w.size, 7);
  const rf = await call('sandbox-readFile', { ...id, path: '/home/user/d/a.txt' });
  assert.equal(rf.content, 'héllo\n');
  await call('sandbox-readFile', { ...id, path: '/home/user/d/none' }, { expect: 404 });
  await call('sandbox-writeFile', { ...id, path: '/home/user/big', encoding: 'base64',
    content: Buffer.alloc(10 * 1024 * 1024 + 1).toString('base64') }, { expect: 413 });
  await call('sandbox-writeFile', { ...id, path: '/home/user/bin', encoding: 'base64',
    content: Buffer.from([0xff, 0xfe, 0]).toString('base64') });
  await call('sandbox-readFile', { ...id, path: '/home/user/bin' }, { expect: 422 });
  const ls = await call('sandbox-listFiles', id);
  assert.ok(ls.entries.some((e) => e.name === 'd' && e.type === 'directory'), JSON.stringify(ls));
  await call('sandbox-listFiles', { ...id, path: '/home/user/none' }, { expect: 404 });
  assert.equal((await call('sandbox-kill', id)).status, 'killed');
  await call('sandbox-exec', { ...id, cmd: 'true' }, { expect: 412 });
  const rm1 = await call('sandbox-remove', id);
  assert.equal(rm1, true); // Dokploy's answer
  created.length = 0;
});

test('on error too: 403, 429 and 503 answers (nginx\'s and sandpitd\'s) match the documented schema', async (t) => {
  // 403: a member key (no permission) is refused by nginx's auth_request
  const member = await stack.newKey('default', 'member');
  for (const opId of ['sandbox-list', 'sandbox-create', 'sandbox-exec']) {
    const e = await call(opId, { template: 'alpine', sandboxId: 'x', cmd: 'true' }, { key: member, expect: 403 });
    assert.equal(e.code, 'FORBIDDEN');
  }
  // 429 from sandpitd: the organization's quota is full
  await stack.cli('orgs', 'create', 'openapi-quota');
  await stack.cli('quota', 'set', '--org', 'openapi-quota', '--sandboxes', '1');
  const qk = await stack.newKey('openapi-quota');
  const one = await call('sandbox-create', { template: 'alpine' }, { key: qk });
  t.after(() => stack.api('POST', '/api/sandbox.remove', { body: { sandboxId: one.sandboxId }, key: qk }));
  const q = await call('sandbox-create', { template: 'alpine' }, { key: qk, expect: 429 });
  assert.match(q.message, /Quota exceeded/);
  // 429 from nginx: one key's burst used up (50 r/s, burst 100)
  const flood = await stack.newKey('default');
  const rs = await Promise.all(Array.from({ length: 200 }, () => send('sandbox-templates', {}, flood)));
  const limited = rs.filter((r) => r.status === 429);
  assert.ok(limited.length > 0, 'the flood was limited');
  for (const r of limited.slice(0, 3)) assert.equal(matches('sandbox-templates', r).code, 'TOO_MANY_REQUESTS');
  // 503 from sandpitd: a registered server nobody answers on
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-srv-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path.join(dir, 'k')]);
  fs.writeFileSync(path.join(dir, 'known_hosts'), '');
  await stack.cli('servers', 'add', '--id', 'nobody', '--endpoint', 'ssh://root@127.0.0.1:9',
    '--ssh-key', path.join(dir, 'k'), '--known-hosts', path.join(dir, 'known_hosts'), '--orgs', 'default');
  t.after(() => stack.cli('servers', 'remove', 'nobody').catch(() => {}));
  const d = await call('sandbox-create', { template: 'alpine', serverId: 'nobody' }, { expect: 503 });
  assert.equal(d.code, 'SERVICE_UNAVAILABLE');
  assert.match(d.message, /nobody/);
  // 503 from nginx: no worker answers /_auth (every sandpitd process stopped)
  const fresh = await stack.newKey('default');
  const master = Number(fs.readFileSync(path.join(stack.dir, 'sandpitd.pid'), 'utf8'));
  const kids = execFileSync('pgrep', ['-P', String(master)], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  for (const p of [master, ...kids]) process.kill(p, 'SIGSTOP');
  try {
    const u = await call('sandbox-list', {}, { key: fresh, expect: 503 });
    assert.equal(u.code, 'SERVICE_UNAVAILABLE');
  } finally {
    for (const p of [...kids, master]) process.kill(p, 'SIGCONT');
  }
});

test('/openapi.json is readable by any valid key, whatever its role, and by no one without a key', async () => {
  for (const role of ['owner', 'admin', 'member']) {
    const k = await stack.newKey('openapi-readers', role);
    const r = await stack.api('GET', '/openapi.json', { key: k });
    assert.equal(r.status, 200, `${role}: ${r.text.slice(0, 200)}`);
    assert.deepEqual(r.json, doc, role);
  }
  const none = await stack.api('GET', '/openapi.json', { key: '' });
  assert.equal(none.status, 401, none.text);
  const bad = await stack.api('GET', '/openapi.json', { key: 'sp_not-a-key' });
  assert.equal(bad.status, 401, bad.text);
});
