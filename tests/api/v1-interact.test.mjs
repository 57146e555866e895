// /v1 interact (issue 16): a durable process's WebSocket at the sandbox
// endpoint, served by sandpit-stream, per the seed's x-websocket contract:
// the sandboxes.v1 subprotocol, both credential carriers (Authorization and
// the sandboxes.bearer.v1. offer), attach first, stdin, closeStdin on a pipe
// and on a PTY, resize (stty size inside shows it), chunk/exited/heartbeat
// frames, resume from attach.resumeFrom mid-stream and after the exit
// (output only, never stdin), each close code and pre-upgrade status it can
// produce, a credential that expires mid-interact (P4), each signal on an
// attached process, and a process that outlives a full stop and start of
// the stack (reattach, output intact, stdin still works: P1). Every answer
// and every frame both ways is validated against the seed's schemas
// (ProcessOutput, Error, InteractRequest).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot, startStack, waitFor } from './lib/stack.mjs';
import { ajv, v1Call, v1Checked } from './lib/v1seed.mjs';
import { bearerOffer, openInteract } from './lib/interact.mjs';

const run = promisify(execFile);
const vOut = ajv.compile({ $ref: 'seed#/components/schemas/ProcessOutput' });
const vErr = ajv.compile({ $ref: 'seed#/components/schemas/Error' });
const vReq = ajv.compile({ $ref: 'seed-in#/components/schemas/InteractRequest' });

let s, checked = 0;
const made = [];
const conns = [];

const call = (method, tmpl, params, o) => v1Call(s, method, tmpl, params, o);

async function token(id, o = {}) {
  const r = await call('POST', '/v1/sandboxes/{sandbox}/endpoint-credentials', { sandbox: id },
    { body: { permissions: o.perms ?? ['sandboxesExec'], ...(o.ttl ? { ttl: o.ttl } : {}) } });
  assert.equal(r.status, 200, r.text);
  return r.json.token;
}

async function ep(id, method, tmpl, params = {}, o = {}) {
  const t = o.token ?? await token(id);
  return call(method, tmpl, params, { key: null, endpoint: id, ...o, headers: { authorization: `Bearer ${t}`, ...o.headers } });
}

async function createSandbox(imageRef = 'sandpit-test/busybox') {
  const r = await call('POST', '/v1/sandboxes', {}, { body: { imageRef } });
  assert.equal(r.status, 201, r.text);
  made.push(r.json.uid);
  return r.json;
}

async function startProc(id, body) {
  const r = await ep(id, 'POST', '/v1/processes', {}, { body });
  assert.equal(r.status, 201, r.text);
  return r.json;
}

// Every server frame is one ProcessOutput, or the one Error before a close;
// every frame we send is one InteractRequest (unless a test sends junk).
function checkFrames(c) {
  c.frames.forEach((f, i) => {
    const last = i === c.frames.length - 1;
    if (f.code !== undefined) {
      assert.ok(last, `an Error frame that is not the last: ${c.texts.join('\n')}`);
      assert.ok(vErr(f), `Error frame breaks the seed: ${ajv.errorsText(vErr.errors)} ${c.texts[i]}`);
    } else {
      assert.ok(vOut(f), `frame breaks ProcessOutput: ${ajv.errorsText(vOut.errors)} ${c.texts[i]}`);
      assert.equal(Object.keys(f).length, 1, c.texts[i]);
    }
    checked++;
  });
}

async function interact(id, proc, o = {}) {
  const c = openInteract(s, id, proc, { token: o.token ?? await token(id), ...o });
  conns.push(c);
  const send = c.send;
  c.send = (f) => {
    if (typeof f !== 'string') assert.ok(vReq(f), `our frame breaks InteractRequest: ${ajv.errorsText(vReq.errors)}`);
    send(f);
  };
  return c;
}

async function attached(id, proc, o = {}) {
  const c = await interact(id, proc, o);
  await c.opened;
  assert.equal(c.ws.protocol, 'sandboxes.v1');
  c.send({ attach: { name: `processes/${proc}`, ...(o.resumeFrom !== undefined ? { resumeFrom: o.resumeFrom } : {}) } });
  return c;
}

async function closedWith(c, code) {
  const r = await Promise.race([c.closed, new Promise((res) => setTimeout(() => res({ code: 'timeout' }), 30000))]);
  assert.equal(r.code, code, `closed ${r.code} ${r.reason}; frames: ${c.texts.join('\n')}`);
  checkFrames(c);
  if (code !== 1000) assert.ok(c.frames.at(-1)?.code, `close ${code} without an Error frame before it: ${c.texts.join('\n')}`);
  return c.frames[c.frames.length - 1];
}

const seqs = (c) => c.frames.filter((f) => f.chunk).map((f) => Number(f.chunk.streamSequence));

let A; // a busybox sandbox
const L = `sptint${Math.random().toString(36).slice(2, 8)}`;
const CONF = [`label_prefix = ${L}`];
before(async () => {
  s = await startStack({ extraConf: CONF });
  A = (await createSandbox('sandpit-test/busybox')).uid;
});
after(async () => {
  for (const c of conns) c.close();
  for (const id of made) await s?.api('DELETE', `/v1/sandboxes/${id}`, { headers: { 'if-match': null } }).catch(() => {});
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  await s?.stop();
  assert.ok(checked + v1Checked() > 0);
});

test('the endpoint advertises interact and the subprotocol carrier', async () => {
  const r = await call('GET', '/v1/sandboxes/{sandbox}', { sandbox: A });
  assert.equal(r.status, 200, r.text);
  const e = r.json.core?.endpoint ?? r.json.endpoint;
  assert.ok(e, r.text);
  assert.ok(e.capabilities.includes('interact'), r.text);
  assert.deepEqual(e.authentication.credentialTransports, ['authorizationHeader', 'webSocketSubprotocol']);
});

test('a pipe process: stdin in, output out, closeStdin ends cat (1000 after exited); Authorization carrier', { timeout: 60000 }, async () => {
  const p = await startProc(A, { cmd: ['cat'] });
  assert.equal(p.state, 'running');
  const c = await attached(A, p.uid);
  c.stdin('hello\n');
  await c.until(/hello\n/);
  c.stdin('second line\n');
  await c.until(/hello\nsecond line\n/);
  c.send({ closeStdin: false }); // no effect
  c.send({ closeStdin: true });
  c.send({ closeStdin: true }); // a no-op on a pipe
  const x = await c.next((f) => f.exited);
  assert.deepEqual(x.exited, { exitCode: 0, reason: 'exited' });
  await closedWith(c, 1000);
  assert.ok(c.frames.filter((f) => f.chunk).every((f) => f.chunk.stream === 'stdout'));
  const g = await ep(A, 'GET', '/v1/processes/{process}', { process: p.uid });
  assert.equal(g.json.state, 'exited');
});

test('a PTY: one pty stream, initialSize, resize shows in stty size, closeStdin is VEOF (a partial line read, then cat ends); subprotocol carrier', { timeout: 60000 }, async () => {
  const p = await startProc(A, {
    cmd: ['sh', '-c', 'stty size; while read l; do [ "$l" = size ] && stty size; [ "$l" = cat ] && break; done; cat; echo after-cat'],
    pty: { initialSize: { rows: 33, cols: 101 } },
  });
  const tok = await token(A);
  const c = await attached(A, p.uid, { token: tok, carrier: 'subprotocol' });
  await c.until(/33 101\r\n/);
  c.send({ resize: { rows: 50, cols: 132 } });
  c.stdin('size\n');
  await c.until(/50 132\r\n/);
  c.send({ resize: { rows: 7, cols: 9, bounded: true } });
  c.stdin('size\n');
  await c.until(/7 9\r\n/);
  c.stdin('cat\n');
  c.stdin('typed\n');
  await c.until(/typed\r\n[\s\S]*typed/); // the echo and cat's copy
  // VEOF within a line hands the partial line to the reader: the echo and
  // cat's copy of it, no newline typed
  c.stdin('part');
  c.send({ closeStdin: true });
  await c.until(/part[\s\S]*part/);
  if (process.env.SANDPIT_TEST_RUNTIME === 'gvisor') {
    // gVisor's terminal (runsc 20221219) ends no read at a VEOF at the
    // start of a line, so cat goes on (README "gVisor"); it is ended here
    await ep(A, 'POST', '/v1/processes/{process}/signal', { process: p.uid }, { body: { signal: 'kill' } });
    await c.next((f) => f.exited);
  } else {
    // at the start of a line VEOF is the end of input: cat ends
    c.send({ closeStdin: true });
    await c.until(/after-cat/);
    const x = await c.next((f) => f.exited);
    assert.equal(x.exited.exitCode, 0);
  }
  await closedWith(c, 1000);
  assert.ok(c.frames.filter((f) => f.chunk).every((f) => f.chunk.stream === 'pty'), c.texts.join('\n'));
  // the default size
  const q = await startProc(A, { cmd: ['stty', 'size'], pty: {} });
  const d = await attached(A, q.uid);
  await d.until(/24 80/);
  await closedWith(d, 1000);
});

test('resume: mid-stream replays from the cursor (output only, never stdin), after the exit replays the rest and exited', { timeout: 90000 }, async () => {
  const p = await startProc(A, { cmd: ['sh', '-c', 'i=0; while read l; do i=$((i+1)); echo "$i:$l"; done; echo end'] });
  const c = await attached(A, p.uid);
  c.stdin('a\n');
  await c.until(/1:a\n/);
  c.stdin('b\n');
  await c.until(/2:b\n/);
  const cur = Math.max(...seqs(c));
  c.close();
  await c.closed;
  // a new connection resumes after cur: nothing of before, stdin not replayed
  const d = await attached(A, p.uid, { resumeFrom: String(cur) });
  d.stdin('c\n');
  await d.until(/3:c\n/);
  assert.ok(!/1:a|2:b/.test(d.output()), d.output());
  assert.ok(seqs(d).every((q) => q > cur));
  // from the start: the whole retained output, in order
  const e = await attached(A, p.uid, { resumeFrom: 0 });
  await e.until(/1:a\n2:b\n3:c\n/);
  const all = seqs(e);
  assert.deepEqual(all, [...all].sort((x, y) => x - y));
  d.send({ closeStdin: true });
  await d.next((f) => f.exited);
  await closedWith(d, 1000);
  await e.next((f) => f.exited);
  await closedWith(e, 1000);
  // after the exit: from a mid cursor, the rest then exited
  const mid = all[0];
  const f = await attached(A, p.uid, { resumeFrom: mid });
  await f.next((x) => x.exited);
  await closedWith(f, 1000);
  assert.ok(seqs(f).every((q) => q > mid));
  assert.match(f.output(), /end\n$/);
  assert.ok(!/1:a/.test(f.output()) || all.length === 1);
  // the cursor at the end: exited alone
  const last = Math.max(...seqs(f));
  const g = await attached(A, p.uid, { resumeFrom: last });
  await g.next((x) => x.exited);
  await closedWith(g, 1000);
  assert.equal(seqs(g).length, 0);
});

test('each signal on an attached process: exited says so, the socket closes 1000', { timeout: 120000 }, async () => {
  const sigs = { term: 15, kill: 9, int: 2, hup: 1, quit: 3, usr1: 10, usr2: 12 };
  for (const [name, num] of Object.entries(sigs)) {
    const p = await startProc(A, { cmd: ['sleep', '600'] });
    const c = await attached(A, p.uid);
    await c.opened;
    await new Promise((r) => setTimeout(r, 300));
    const r = await ep(A, 'POST', '/v1/processes/{process}/signal', { process: p.uid }, { body: { signal: name } });
    assert.equal(r.status, 200, r.text);
    const x = await c.next((f) => f.exited);
    assert.deepEqual(x.exited, { exitCode: 128 + num, reason: `signal ${num}` }, name);
    await closedWith(c, 1000);
  }
});

test('close codes after the upgrade: 1002, 1003, 1007, 1008 (name, order, resize on a pipe, unknown process, dropped output), 1009', { timeout: 120000 }, async () => {
  const p = await startProc(A, { cmd: ['cat'] });
  // no subprotocol offered
  let c = await interact(A, p.uid, { protocols: [] });
  await c.opened;
  let e = await closedWith(c, 1002);
  assert.equal(e.code, 'invalidArgument');
  // a binary frame
  c = await attached(A, p.uid);
  c.ws.send(Buffer.from([1, 2, 3]));
  e = await closedWith(c, 1003);
  assert.equal(e.code, 'invalidArgument');
  // not JSON; not one InteractRequest
  for (const junk of ['{not json', '[]', '{"attach":{"name":"processes/x"},"stdin":""}', '{"stdin":"***"}', '{"hello":1}']) {
    c = await interact(A, p.uid);
    await c.opened;
    if (junk.startsWith('{"stdin"')) c.send({ attach: { name: `processes/${p.uid}` } });
    c.send(junk);
    e = await closedWith(c, 1007);
    assert.equal(e.code, 'invalidArgument', junk);
  }
  // a name other than the path's; a first frame other than attach; attach twice
  c = await interact(A, p.uid);
  await c.opened;
  c.send({ attach: { name: 'processes/someoneelse' } });
  e = await closedWith(c, 1008);
  assert.equal(e.code, 'invalidArgument');
  c = await interact(A, p.uid);
  await c.opened;
  c.stdin('x');
  e = await closedWith(c, 1008);
  assert.equal(e.code, 'invalidArgument');
  c = await attached(A, p.uid);
  c.send({ attach: { name: `processes/${p.uid}` } });
  e = await closedWith(c, 1008);
  assert.equal(e.code, 'invalidArgument');
  // resize on a pipe: failedPrecondition
  c = await attached(A, p.uid);
  c.send({ resize: { rows: 10, cols: 10 } });
  e = await closedWith(c, 1008);
  assert.equal(e.code, 'failedPrecondition');
  // bounded out of range
  const q = await startProc(A, { cmd: ['cat'], pty: {} });
  c = await attached(A, q.uid);
  c.send({ resize: { rows: 0, cols: 70000, bounded: true } });
  e = await closedWith(c, 1008);
  assert.equal(e.code, 'invalidArgument');
  // no such process
  c = await attached(A, 'nosuchprocess0');
  e = await closedWith(c, 1008);
  assert.equal(e.code, 'notFound');
  // a frame over the limit (stream_max_message, 1 MiB)
  c = await attached(A, p.uid);
  await new Promise((r) => setTimeout(r, 300));
  c.send({ stdin: Buffer.alloc(1100000).toString('base64') });
  const r9 = await c.closed;
  assert.equal(r9.code, 1009);
  // the process lived through all of it
  const g = await ep(A, 'GET', '/v1/processes/{process}', { process: p.uid });
  assert.equal(g.json.state, 'running');
  await ep(A, 'POST', '/v1/processes/{process}/signal', { process: p.uid }, { body: { signal: 'kill' } });
  await ep(A, 'POST', '/v1/processes/{process}/signal', { process: q.uid }, { body: { signal: 'kill' } });
});

test('output no longer retained: attach from a dropped cursor is failedPrecondition (1008)', { timeout: 120000 }, async () => {
  // 12 MiB through a 4 MiB retention
  const p = await startProc(A, { cmd: ['sh', '-c', 'head -c 12582912 /dev/zero | tr "\\0" x'] });
  await waitFor(async () => (await ep(A, 'GET', '/v1/processes/{process}', { process: p.uid })).json.state === 'exited', 60000, 300);
  const c = await attached(A, p.uid, { resumeFrom: 0 });
  const e = await closedWith(c, 1008);
  assert.equal(e.code, 'failedPrecondition');
  assert.match(e.message, /no longer kept/);
});

test('pre-upgrade statuses: 400 (query, mixed, duplicate, malformed, oversized offers), 401, 403, 404', { timeout: 60000 }, async () => {
  const p = await startProc(A, { cmd: ['cat'] });
  const tok = await token(A);
  // a refusal is a plain HTTP answer: sent raw (ws refuses to offer some
  // of these), an accepted upgrade through ws
  const expect = async (o, status, code) => {
    if (status === 101) {
      const c = openInteract(s, A, p.uid, o);
      conns.push(c);
      const r = await Promise.race([c.response, c.opened.then(() => ({ status: 101 }))]);
      assert.equal(r.status, 101, r.body);
      c.close();
      return;
    }
    const headers = {
      connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13',
      'sec-websocket-key': Buffer.from('0123456789abcdef').toString('base64'),
      ...(o.protocols ? { 'sec-websocket-protocol': o.protocols.join(', ') } : {}),
      ...(o.token && o.carrier !== 'subprotocol' ? { authorization: `Bearer ${o.token}` } : {}),
      ...(o.token && o.carrier === 'subprotocol' ? { 'sec-websocket-protocol': ['sandboxes.v1', bearerOffer(o.token)].join(', ') } : {}),
      ...(o.headers || {}),
    };
    const r = await s.api('GET', `/endpoints/${A}/v1/processes/${p.uid}/interact${o.query ?? ''}`, { key: null, headers, timeoutMs: 20000 });
    assert.equal(r.status, status, `${JSON.stringify(o.protocols ?? o.query ?? '')}: ${r.text}`);
    assert.ok(vErr(r.json), r.text);
    checked++;
    if (code) assert.equal(r.json.code, code, r.text);
  };
  const tok2 = await token(A);
  await expect({ token: tok, query: '?x=1' }, 400, 'invalidArgument');
  await expect({ token: tok, carrier: 'header', protocols: ['sandboxes.v1', bearerOffer(tok)] }, 400, 'invalidArgument');
  await expect({ protocols: ['sandboxes.v1', bearerOffer(tok), bearerOffer(tok2)] }, 400, 'invalidArgument');
  await expect({ protocols: ['sandboxes.v1', 'sandboxes.bearer.v1.@@@'] }, 400, 'invalidArgument');
  await expect({ protocols: ['sandboxes.v1', `sandboxes.bearer.v1.${Buffer.from(tok).toString('base64url')}==`.replace(/=/g, 'A')] }, 400);
  await expect({ protocols: ['sandboxes.v1', bearerOffer('x'.repeat(4097))] }, 400, 'invalidArgument');
  await expect({ protocols: [bearerOffer(tok)] }, 400, 'invalidArgument');
  await expect({}, 401, 'unauthenticated');
  await expect({ token: 'sbe1.00.00' }, 401, 'unauthenticated');
  await expect({ headers: { cookie: `token=${tok}` } }, 401, 'unauthenticated');
  await expect({ token: s.key }, 401);
  const files = await token(A, { perms: ['sandboxesFilesRead'] });
  await expect({ token: files }, 403, 'permissionDenied');
  await expect({ carrier: 'subprotocol', token: files }, 403, 'permissionDenied');
  const B = (await createSandbox()).uid;
  const other = await token(B);
  await expect({ token: other }, 404, 'notFound');
  await expect({ carrier: 'subprotocol', token: other }, 404, 'notFound');
  await expect({ token: tok }, 101);
  await expect({ carrier: 'subprotocol', token: tok }, 101);
  await ep(A, 'POST', '/v1/processes/{process}/signal', { process: p.uid }, { body: { signal: 'kill' } });
});

test('P4: a credential that expires mid-interact closes the socket (1008); the process goes on; heartbeats while idle', { timeout: 60000 }, async () => {
  const p = await startProc(A, { cmd: ['cat'] });
  const tok = await token(A, { ttl: '14s' });
  const c = await attached(A, p.uid, { token: tok });
  await c.next((f) => f.heartbeat, 13000);
  const e = await closedWith(c, 1008);
  assert.equal(e.code, 'unauthenticated');
  const g = await ep(A, 'GET', '/v1/processes/{process}', { process: p.uid });
  assert.equal(g.json.state, 'running');
  const d = await attached(A, p.uid);
  d.stdin('still here\n');
  await d.until(/still here/);
  d.send({ closeStdin: true });
  await d.next((f) => f.exited);
  await closedWith(d, 1000);
});

test('P1: a process outlives a full stop and start of the stack: reattach, its output intact, stdin still works', { timeout: 240000 }, async () => {
  const p = await startProc(A, { cmd: ['sh', '-c', 'while read l; do echo "got $l"; done; echo bye'] });
  const c = await attached(A, p.uid);
  c.stdin('one\n');
  await c.until(/got one\n/);
  const stackSh = path.join(repoRoot, 'deploy/stack.sh');
  const env = { ...process.env };
  env.SANDPIT_EXTRA_CONF = [...CONF, ...(process.env.SANDPIT_TEST_RUNTIME ? [`default_runtime = ${process.env.SANDPIT_TEST_RUNTIME}`] : [])].join('\n');
  await run('bash', [stackSh, 'stop', s.dir], { env, timeout: 90000 });
  const gone = await c.closed;
  assert.ok([1000, 1006, 1011].includes(gone.code), `closed ${gone.code}`);
  await new Promise((res) => setTimeout(res, 2000));
  await run('bash', [stackSh, 'start', s.dir, '--port', String(s.port)], { env, timeout: 120000 });
  const d = await attached(A, p.uid, { resumeFrom: 0 });
  await d.until(/^got one\n$/);
  d.stdin('two\n');
  await d.until(/got one\ngot two\n/);
  d.send({ closeStdin: true });
  await d.until(/bye\n/);
  await d.next((f) => f.exited);
  await closedWith(d, 1000);
});
