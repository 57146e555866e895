// The dashboard in a real browser: Debian's chromium driven headless by
// playwright-core, against a real stack (nginx serving build/web, sandpitd,
// sandpit-stream, dockerd). Sign in with a key (a session cookie), create a
// sandbox, a PTY console over /v1 interact, upload/download a file, kill
// with the status changing in place, sign out (the old cookie is refused);
// a page of another origin cannot use the cookie (fetch, WebSocket); a
// viewer key gets no create button and the API refuses it anyway.
// Screenshots: build/dashboard-list.png, build/dashboard-console.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import https from 'node:https';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { docker, repoRoot, startStack, waitFor } from './lib/stack.mjs';

const CHROMIUM = process.env.SANDPIT_CHROMIUM || '/usr/bin/chromium';
const shots = path.join(repoRoot, 'build');
let s, browser, viewerKey, evilServer;
const made = [];

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} missing: deploy/install-deps.sh --test installs chromium`);
  assert.ok(existsSync(path.join(repoRoot, 'build/web/index.html')), 'build/web missing: make all builds the dashboard');
  s = await startStack({ extraConf: ['warm_pool = template=python size=1 ttl=600'] });
  await s.cli('roles', 'create', '--org', 'default', 'viewer', '--perms', 'sandbox:read,sandboxesRead');
  viewerKey = await s.newKey('default', 'viewer');
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'], timeout: 30000 });
  await mkdir(shots, { recursive: true });
});

after(async () => {
  evilServer?.close();
  await browser?.close().catch(() => {});
  for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
  const mine = s && encodeURIComponent(JSON.stringify({ label: [`sandpit-stack=${path.basename(s.dir)}`] }));
  await s?.stop();
  // the warm pool's container (and anything else of this stack) outlives the stack
  if (mine) {
    for (const c of (await docker('GET', `/containers/json?all=1&filters=${mine}`)).json || [])
      await docker('DELETE', `/containers/${c.Id}?force=true`).catch(() => {});
  }
});

async function page() {
  const ctx = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 860 }, acceptDownloads: true });
  const p = await ctx.newPage();
  p.setDefaultTimeout(30000);
  return { ctx, p };
}

/** page.goto, again when Chromium drops it for a network change (the
 * shared dockerd adds and removes interfaces while other tests run). */
async function goto(p, url) {
  for (let i = 0; ; i++) {
    try {
      return await p.goto(url);
    } catch (e) {
      if (i >= 4 || !/ERR_NETWORK_CHANGED/.test(e.message)) throw e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

async function signIn(p, key) {
  await goto(p, `${s.url}/`);
  await p.fill('#apikey', key);
  await p.click('button[type=submit]');
  await p.waitForSelector('#sandboxes');
}

/** A request with just this cookie (no Origin, no key), from outside the browser. */
const withCookie = (cookie, method, url, body) => s.api(method, url, { key: null, headers: { cookie: `${cookie.name}=${cookie.value}` }, ...(body ? { body } : {}) });

/** nginx's access log lines for path since from (a line count). */
async function accessLines(re, from = 0) {
  const t = await readFile(path.join(s.dir, 'nginx/access.log'), 'utf8');
  return t.split('\n').slice(from).filter((l) => re.test(l));
}
const accessCount = async () => (await readFile(path.join(s.dir, 'nginx/access.log'), 'utf8')).split('\n').length - 1;

test('sign in, create, console echo hi, upload/download, kill in place, sign out ends the cookie', { timeout: 240000 }, async () => {
  const { ctx, p } = await page();
  try {
    await signIn(p, s.key);
    const [cookie] = (await ctx.cookies()).filter((c) => c.name === '__Host-sandpit');
    assert.ok(cookie, 'a session cookie');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.secure, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.ok(!cookie.value.includes(s.key) && cookie.value.length >= 40);
    // the cookie alone works for reads (the key's org and role)
    assert.equal((await withCookie(cookie, 'GET', '/api/sandbox.list')).status, 200);
    // ... but a mutation needs this origin and the CSRF token
    const r0 = await withCookie(cookie, 'POST', '/api/sandbox.create', { template: 'alpine' });
    assert.equal(r0.status, 403, r0.text);

    // create through the form; a bad value is named next to its field
    await p.selectOption('#c-template', 'alpine');
    await p.fill('#c-memoryMb', '1');
    await p.click('#create-button');
    await p.waitForFunction(() => /memoryMb/.test(document.querySelector('#err-memoryMb')?.textContent || ''));
    await p.fill('#c-memoryMb', '256');
    await p.click('#create-button');
    const created = await p.waitForFunction(() => (document.querySelector('#create-error')?.textContent || '').match(/Created (\w+)/)?.[1]);
    const id = await created.jsonValue();
    made.push(id);
    const row = p.locator(`tr[data-id="${id}"]`);
    await row.locator('[data-status="running"]').waitFor();
    assert.match(await row.textContent(), /alpine/);
    assert.match(await row.textContent(), /256 MiB/);
    const { json: who } = await withCookie(cookie, 'GET', '/session');
    assert.match(await row.textContent(), new RegExp(who.keyId), 'created by the signed-in key');
    await p.screenshot({ path: path.join(shots, 'dashboard-list.png') });

    // the sandbox page: a live console over /v1 interact
    await row.locator('a').first().click();
    await p.waitForSelector('#record');
    await p.waitForFunction(() => /Connected/.test(document.querySelector('#console-state')?.textContent || ''));
    await p.click('#term');
    await p.keyboard.type('echo hi\n');
    await p.waitForFunction(() => [...document.querySelectorAll('#term .xterm-rows > div')].some((d) => d.textContent.trim() === 'hi'));
    await p.screenshot({ path: path.join(shots, 'dashboard-console.png') });
    // a dropped socket (as when its 5-minute credential ends) reconnects
    // after the last chunk it saw: the shell goes on, nothing twice
    const rows = () => p.evaluate(() => [...document.querySelectorAll('#term .xterm-rows > div')].map((d) => d.textContent.trim()));
    await p.evaluate(() => document.querySelector('#term').sandpitSocket.close(4000, 'test'));
    await p.waitForFunction(() => /Reconnecting/.test(document.querySelector('#console-state')?.textContent || ''));
    await p.waitForFunction(() => /Connected/.test(document.querySelector('#console-state')?.textContent || ''));
    await p.click('#term');
    await p.keyboard.type('echo again\n');
    await p.waitForFunction(() => [...document.querySelectorAll('#term .xterm-rows > div')].some((d) => d.textContent.trim() === 'again'));
    assert.equal((await rows()).filter((t) => t === 'hi').length, 1, (await rows()).join('\n'));

    // processes: a running one is listed and killed from the page (the
    // console's shell ends when its tab is left)
    const tok = (await s.api('POST', `/v1/sandboxes/${id}/endpoint-credentials`, { body: { permissions: ['sandboxesExec'] } })).json.token;
    const pr = await s.api('POST', `/endpoints/${id}/v1/processes`, { key: null, headers: { authorization: `Bearer ${tok}` }, body: { cmd: ['sleep', '300'] } });
    assert.equal(pr.status, 201, pr.text);
    await p.click('#tab-processes');
    const prow = p.locator(`#processes tr[data-process="${pr.json.uid}"]`);
    await prow.locator('button[data-kill]').click();
    await p.locator(`#processes tr[data-process="${pr.json.uid}"][data-state="exited"]`).waitFor();

    // files: upload, listed, downloadable with the same bytes
    await p.click('#tab-files');
    await p.waitForSelector('#files');
    await p.setInputFiles('#upload', { name: 'hello.txt', mimeType: 'text/plain', buffer: Buffer.from('hello from the browser\n') });
    const fileRow = p.locator('tr[data-path="/home/user/hello.txt"]');
    await fileRow.waitFor();
    const [dl] = await Promise.all([p.waitForEvent('download'), fileRow.locator('button[data-download]').click()]);
    const got = await readFile(await dl.path(), 'utf8');
    assert.equal(got, 'hello from the browser\n');
    await fileRow.locator('a').click();
    await p.waitForFunction(() => document.querySelector('#file-text')?.textContent === 'hello from the browser\n');

    // set the timeout; stop and start (/v1, with the record's ETag)
    await p.fill('#timeout-s', '120');
    await p.click('#set-timeout');
    await p.waitForFunction(() => [...document.querySelectorAll('#record dd')].some((d) => d.textContent === '120 s'));
    await p.click('#stop');
    await p.waitForFunction(() => document.querySelector('#status')?.dataset.status === 'stopped', null, { timeout: 60000 });
    await p.click('#start');
    await p.waitForFunction(() => document.querySelector('#status')?.dataset.status === 'running', null, { timeout: 60000 });

    // kill with a confirmation; the status changes without a reload
    await p.evaluate(() => { window.__noReload = true; });
    p.once('dialog', (d) => d.accept());
    await p.click('#kill');
    await p.waitForFunction(() => document.querySelector('#status')?.dataset.status === 'killed', null, { timeout: 60000 });
    assert.equal(await p.evaluate(() => window.__noReload), true, 'the page was not reloaded');

    // sign out: the old cookie is refused from then on
    await p.click('#signout');
    await p.waitForSelector('#apikey');
    const r1 = await withCookie(cookie, 'GET', '/api/sandbox.list');
    assert.equal(r1.status, 401, r1.text);
    const r2 = await withCookie(cookie, 'GET', '/session');
    assert.equal(r2.status, 401, r2.text);
  } finally {
    await ctx.close();
  }
});

test('a page of another origin cannot use the cookie: fetch and WebSocket are refused', { timeout: 120000 }, async () => {
  const { ctx, p } = await page();
  try {
    await signIn(p, s.key);
    // this origin's own WebSocket with the cookie is accepted (the control)
    const own = await p.evaluate((u) => new Promise((res) => {
      const ws = new WebSocket(`${u.replace('https:', 'wss:')}/sandbox-exec?sandboxId=nosuchsandbox1`);
      ws.onopen = () => { res('open'); ws.close(); };
      ws.onerror = () => res('error');
    }), s.url);
    assert.equal(own, 'open', 'the cookie opens /sandbox-exec from the dashboard');
    const before = (await s.api('GET', '/api/sandbox.list')).json.length;
    // another origin on the same host (same site: SameSite lets the cookie go)
    // a real server, with the stack's own certificate
    const tls = { cert: await readFile(path.join(s.dir, 'tls/cert.pem')), key: await readFile(path.join(s.dir, 'tls/key.pem')) };
    evilServer = https.createServer(tls, (q, r) => { r.setHeader('content-type', 'text/html'); r.end('<!doctype html><title>evil</title>'); });
    await new Promise((r) => evilServer.listen(0, '127.0.0.1', r));
    const evil = `https://127.0.0.1:${evilServer.address().port}`;
    await goto(p, `${evil}/evil.html`);
    const from = await accessCount();
    const out = await p.evaluate(async (u) => {
      const res = {};
      await fetch(`${u}/api/sandbox.create`, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: '{"template":"alpine"}' }).catch(() => {});
      await fetch(`${u}/api/sandbox.list`, { mode: 'no-cors', credentials: 'include' }).catch(() => {});
      res.ws = await new Promise((r) => {
        const ws = new WebSocket(`${u.replace('https:', 'wss:')}/sandbox-exec?sandboxId=nosuchsandbox1`);
        ws.onopen = () => { r('open'); ws.close(); };
        ws.onerror = () => r('error');
      });
      return res;
    }, s.url);
    assert.equal(out.ws, 'error', 'a cross-origin WebSocket must not open');
    await waitFor(async () => (await accessLines(/\/sandbox-exec/, from)).length >= 1, 10000);
    const lines = await accessLines(/"(GET|POST) \/(api|sandbox-exec)/, from);
    assert.ok(lines.length >= 3, lines.join('\n'));
    for (const l of lines) assert.match(l, /" 403 /, `refused: ${l}`);
    assert.equal((await s.api('GET', '/api/sandbox.list')).json.length, before, 'nothing was created');
  } finally {
    await ctx.close();
  }
});

test('a viewer key sees no create button, and the API refuses it anyway', { timeout: 60000 }, async () => {
  const { ctx, p } = await page();
  try {
    await signIn(p, viewerKey);
    await p.waitForSelector('#readonly');
    assert.equal(await p.locator('#create-button').count(), 0);
    const st = await p.evaluate(async () => {
      const me = await (await fetch('/session')).json();
      const r = await fetch('/api/sandbox.create', { method: 'POST', headers: { 'content-type': 'application/json', 'x-sandpit-csrf': me.csrfToken }, body: '{"template":"alpine"}' });
      return { status: r.status, role: me.role };
    });
    assert.deepEqual(st, { status: 403, role: 'viewer' });
  } finally {
    await ctx.close();
  }
});

test('the operator view: servers, a warm pool and its fill, sandboxes by status, from /metrics; not for a viewer', { timeout: 90000 }, async (t) => {
  // a server for this org (down: its check fails) and one for another org only
  const keyFile = path.join(s.dir, 'dash-ssh-key');
  await writeFile(keyFile, 'not a key\n', { mode: 0o600 });
  for (const [id, orgs] of [['edge1', 'default'], ['elsewhere1', 'acme']]) {
    await s.cli('servers', 'add', '--id', id, '--endpoint', 'ssh://root@127.0.0.1:1', '--ssh-key', keyFile, '--known-hosts', keyFile, '--orgs', orgs, '--pool', 'main');
    t.after(() => s.cli('servers', 'remove', id).catch(() => {}));
  }
  const { ctx, p } = await page();
  try {
    await signIn(p, s.key);
    await p.click('#nav-operator');
    await p.locator('#servers tr[data-server="edge1"]').waitFor();
    assert.match(await p.textContent('#servers tr[data-server="edge1"]'), /main/);
    assert.equal(await p.locator('#servers tr[data-server="elsewhere1"]').count(), 0, "another org's server is not shown");
    assert.doesNotMatch(await p.textContent('#servers'), /127\.0\.0\.1|ssh:/, 'no endpoint is shown');
    const row = p.locator('tr[data-pool="python/isolated"]');
    await row.waitFor();
    // the pool's target is 1; ready reaches it once the container is up
    await p.waitForFunction(() => {
      const tds = document.querySelectorAll('tr[data-pool="python/isolated"] td');
      return tds.length === 6 && tds[2].textContent === '1' && tds[3].textContent === '1';
    }, null, { timeout: 60000 });
    assert.equal(await row.locator('meter').getAttribute('value'), '1');
    await p.locator('tr[data-gauge="sandboxes running"]').waitFor();
    assert.match(await p.textContent('tr[data-gauge="Redis up (instances)"]'), /1/);
    await p.screenshot({ path: path.join(shots, 'dashboard-operator.png') });
  } finally {
    await ctx.close();
  }
  const v = await page();
  try {
    await signIn(v.p, viewerKey);
    assert.equal(await v.p.locator('#nav-operator').isHidden(), true);
  } finally {
    await v.ctx.close();
  }
});

test('owners manage the org: keys (create shows the key once, revoke), roles, quota; a viewer may not', { timeout: 90000 }, async () => {
  const { ctx, p } = await page();
  try {
    await signIn(p, s.key);
    await p.click('#nav-org');
    await p.locator('#keys tr[data-key]').first().waitFor();
    assert.match(await p.textContent('#keys'), /this session/);
    await p.locator('#roles tr[data-role="viewer"]').waitFor();
    assert.match(await p.textContent('#roles tr[data-role="viewer"]'), /sandbox:read/);
    assert.ok((await p.textContent('#quota')).includes('Sandboxes'));
    await p.selectOption('#new-key-role', 'viewer');
    await p.click('#new-key-button');
    const key = await p.inputValue('#new-key-value');
    assert.match(key, /^sp_/);
    const r = await s.api('GET', '/api/sandbox.list', { key });
    assert.equal(r.status, 200, 'the new key works');
    const id = (await p.textContent('#new-key p')).match(/Key (\w+)/)[1];
    await p.locator(`#keys tr[data-key="${id}"]`).waitFor();
    p.once('dialog', (d) => d.accept());
    await p.click(`button[data-revoke="${id}"]`);
    await p.locator(`#keys tr[data-key="${id}"]`).waitFor({ state: 'detached' });
    await waitFor(async () => (await s.api('GET', '/api/sandbox.list', { key })).status === 401, 10000);
  } finally {
    await ctx.close();
  }
  const v = await page();
  try {
    await signIn(v.p, viewerKey);
    assert.equal(await v.p.locator('#nav-org').isHidden(), true);
    const st = await v.p.evaluate(async () => {
      const me = await (await fetch('/session')).json();
      const a = await fetch('/session/keys');
      const b = await fetch('/session/keys', { method: 'POST', headers: { 'content-type': 'application/json', 'x-sandpit-csrf': me.csrfToken }, body: '{"role":"owner"}' });
      return [a.status, b.status];
    });
    assert.deepEqual(st, [403, 403]);
  } finally {
    await v.ctx.close();
  }
  // an API key is no session: these pages refuse it
  const k = await s.api('GET', '/session/keys');
  assert.equal(k.status, 401, k.text);
});

test('a revoked key ends its sessions', { timeout: 60000 }, async () => {
  const k = await s.newKey('default', 'admin');
  const r = await s.api('POST', '/session', { key: null, headers: { origin: s.url }, body: { apiKey: k } });
  assert.equal(r.status, 200, r.text);
  const cookie = { name: '__Host-sandpit', value: /__Host-sandpit=([a-z0-9]+)/.exec(r.headers['set-cookie'])[1] };
  assert.equal((await withCookie(cookie, 'GET', '/api/sandbox.list')).status, 200);
  await s.cli('keys', 'revoke', r.json.keyId);
  await waitFor(async () => (await withCookie(cookie, 'GET', '/api/sandbox.list')).status === 401, 10000);
  // sign-in from another origin is refused too (login CSRF)
  const x = await s.api('POST', '/session', { key: null, headers: { origin: 'https://evil.example' }, body: { apiKey: s.key } });
  assert.equal(x.status, 403, x.text);
});
