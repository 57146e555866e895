// sandpit dashboard: one ES module, no framework, no build step beyond a
// copy. It talks to the API only, as the signed-in key: the session cookie
// (HttpOnly; sent by the browser) plus the CSRF token from GET /session in
// X-Sandpit-CSRF on every mutation. The sandbox endpoint (console, files)
// takes a short-lived endpoint credential that this page asks for with
// createEndpointCredential and keeps in memory only.
import { Terminal } from '/ui/vendor/xterm.mjs';
import { FitAddon } from '/ui/vendor/addon-fit.mjs';

const $ = (sel) => document.querySelector(sel);
const main = $('#main');
let me = null; // the session: {org, role, keyId, permissions, csrfToken, expiresAt}
let timers = []; // cleared on every route change
let cleanups = [];

// h('tag.class', {attr: v, onclick: f}, ...children): text children are text nodes, never HTML
function h(spec, attrs = {}, ...kids) {
  const [tag, ...cls] = spec.split('.');
  const el = document.createElement(tag);
  if (cls.length) el.className = cls.join(' ');
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of kids.flat()) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c));
  return el;
}

const can = (perm) => !!me && me.permissions.includes(perm);

class ApiError extends Error {
  constructor(status, body) {
    super(body?.message || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

// A read that the network dropped (a changed interface: ERR_NETWORK_CHANGED)
// is tried again; a mutation never is (it may have been done).
async function retryGet(method, f) {
  for (let i = 0; ; i++) {
    try {
      return await f();
    } catch (e) {
      if (method !== 'GET' || i >= 2) throw e;
      await new Promise((res) => setTimeout(res, 300));
    }
  }
}

async function api(method, path, body, o = {}) {
  const headers = { ...(o.headers || {}) };
  if (method !== 'GET' && me) headers['x-sandpit-csrf'] = me.csrfToken;
  if (body !== undefined && !(body instanceof Blob)) headers['content-type'] = 'application/json';
  const init = {
    method, headers, credentials: 'same-origin', cache: 'no-store',
    body: body === undefined ? undefined : body instanceof Blob ? body : JSON.stringify(body),
  };
  const r = await retryGet(method, () => fetch(path, init));
  if (o.raw) {
    if (!r.ok) throw new ApiError(r.status, await r.json().catch(() => null));
    return r;
  }
  const text = await r.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  if (r.status === 401 && path !== '/session') { signedOut('Your session has ended; sign in again.'); }
  if (!r.ok) throw new ApiError(r.status, json);
  return { json, headers: r.headers };
}

// --- the sandbox endpoint's credential (per sandbox, in memory) -----------
const creds = new Map();
async function credential(id) {
  const c = creds.get(id);
  if (c && c.exp - Date.now() > 30000) return c.token;
  const want = ['sandboxesExec', 'sandboxesFilesRead', 'sandboxesFilesWrite'].filter(can);
  const { json } = await api('POST', `/v1/sandboxes/${encodeURIComponent(id)}/endpoint-credentials`,
    { permissions: want, ttl: '300s' });
  creds.set(id, { token: json.token, exp: Date.parse(json.expireTime) });
  return json.token;
}
async function ep(id, method, path, o = {}) {
  const token = await credential(id);
  const r = await retryGet(method, () => fetch(`/endpoints/${encodeURIComponent(id)}${path}`, {
    method, cache: 'no-store', credentials: 'omit',
    headers: { authorization: `Bearer ${token}`, ...(o.json !== undefined ? { 'content-type': 'application/json' } : {}), ...(o.headers || {}) },
    body: o.json !== undefined ? JSON.stringify(o.json) : o.body,
  }));
  if (!r.ok) throw new ApiError(r.status, await r.json().catch(() => null));
  return r;
}

// --- formatting -----------------------------------------------------------
function left(iso) {
  if (!iso) return '—';
  const s = Math.round((Date.parse(iso) - Date.now()) / 1000);
  if (s <= 0) return 'now';
  const m = Math.floor(s / 60), hh = Math.floor(m / 60);
  return hh ? `${hh}h ${String(m % 60).padStart(2, '0')}m` : `${m}m ${String(s % 60).padStart(2, '0')}s`;
}
const live = (st) => st === 'running' || st === 'creating' || st === 'starting' || st === 'stopped';
function showError(where, e) {
  where.replaceChildren(h('p.err', { role: 'alert' }, e.message || String(e)));
}

// --- sign in / out --------------------------------------------------------
function signedOut(msg) {
  me = null;
  $('#nav').hidden = true;
  for (const t of timers) clearInterval(t);
  timers = [];
  renderSignIn(msg);
}

function renderSignIn(msg) {
  const err = h('p.err', { id: 'signin-error', role: 'alert' }, msg || '');
  const key = h('input', { id: 'apikey', type: 'password', autocomplete: 'off', required: true, placeholder: 'sp_…', 'aria-describedby': 'signin-error' });
  const form = h('form.card.signin', {
    onsubmit: async (ev) => {
      ev.preventDefault();
      err.textContent = '';
      try {
        const { json } = await api('POST', '/session', { apiKey: key.value.trim() });
        key.value = '';
        me = json;
        route();
      } catch (e) { err.textContent = e.message; }
    },
  }, h('h1', {}, 'Sign in'), h('label', {}, 'API key', key), err, h('button.primary', { type: 'submit' }, 'Sign in'),
  h('p.muted', {}, 'The key stays on the server: this browser gets a session cookie that ends when you sign out or the key is revoked.'));
  main.replaceChildren(form);
  key.focus();
}

$('#signout').addEventListener('click', async () => {
  try { await api('DELETE', '/session'); } catch { /* ended already */ }
  creds.clear();
  signedOut('Signed out.');
});

// --- the list -------------------------------------------------------------
const filters = { status: 'live', template: '', q: '' };

async function renderList() {
  const tbody = h('tbody');
  const note = h('p.muted', { id: 'list-note', 'aria-live': 'polite' });
  const status = h('select', { id: 'f-status', onchange: () => { filters.status = status.value; paint(); } },
    ...[['live', 'Live'], ['', 'All'], ['running', 'Running'], ['stopped', 'Stopped'], ['killed', 'Killed'], ['expired', 'Expired'], ['error', 'Error']]
      .map(([v, t]) => h('option', { value: v, selected: filters.status === v }, t)));
  const tmpl = h('select', { id: 'f-template', onchange: () => { filters.template = tmpl.value; paint(); } }, h('option', { value: '' }, 'Any template'));
  const q = h('input', { id: 'f-q', type: 'search', placeholder: 'id or name', value: filters.q, oninput: () => { filters.q = q.value; paint(); } });
  let rows = [];
  const cells = new Map(); // id -> {tr, expiry}
  const paint = () => {
    const shown = rows.filter((s) => (filters.status === 'live' ? live(s.status) : !filters.status || s.status === filters.status) &&
      (!filters.template || s.template === filters.template) &&
      (!filters.q || s.sandboxId.includes(filters.q) || (s.name || '').includes(filters.q)));
    const trs = shown.map((s) => {
      let c = cells.get(s.sandboxId);
      if (!c) {
        c = { tr: h('tr', { 'data-id': s.sandboxId }) };
        cells.set(s.sandboxId, c);
      }
      const exp = h('td.expiry', { 'data-expires': s.status === 'running' ? s.expiresAt : '' }, s.status === 'running' ? left(s.expiresAt) : '—');
      c.tr.replaceChildren(
        h('td', {}, h('a', { href: `#/s/${s.sandboxId}` }, s.name || s.sandboxId), h('div.muted', {}, s.sandboxId)),
        h('td', {}, h('span.status.' + s.status, { 'data-status': s.status }, s.status)),
        h('td', {}, s.template || s.image), h('td', {}, s.runtime), h('td', {}, s.serverId || 'local'),
        h('td', {}, `${s.cpu} CPU / ${s.memoryMb} MiB`), exp,
        h('td', {}, s.createdByKey || '—'), h('td', {}, new Date(s.createdAt).toLocaleString()));
      return c.tr;
    });
    tbody.replaceChildren(...trs);
    note.textContent = `${shown.length} of ${rows.length} sandboxes · updated ${new Date().toLocaleTimeString()}`;
  };
  const load = async () => {
    try {
      const { json } = await api('GET', '/api/sandbox.list');
      rows = json.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
      paint();
    } catch (e) { note.textContent = `Could not update: ${e.message}`; }
  };
  const createCard = can('sandbox:create') ? await createForm(load) : null;
  main.replaceChildren(
    createCard || h('p.muted', { id: 'readonly' }, `Your role (${me.role}) can see sandboxes but not create them.`),
    h('div.card', {}, h('div.row', {}, h('label', {}, 'Status', status), h('label', {}, 'Template', tmpl), h('label', {}, 'Search', q)), note,
      h('div.table-wrap', {}, h('table', { id: 'sandboxes' },
        h('colgroup', {}, ...[18, 9, 10, 7, 8, 12, 9, 11, 16].map((w) => h('col', { style: `width:${w}%` }))),
        h('thead', {}, h('tr', {}, ...['Sandbox', 'Status', 'Template', 'Runtime', 'Server', 'Limits', 'Expires in', 'Created by key', 'Created'].map((t) => h('th', { scope: 'col' }, t)))),
        tbody))));
  api('GET', '/api/sandbox.templates').then(({ json }) => {
    for (const t of json) tmpl.append(h('option', { value: t.name, selected: filters.template === t.name }, t.name));
  }).catch(() => {});
  await load();
  timers.push(setInterval(load, 2000));
  timers.push(setInterval(() => {
    for (const td of tbody.querySelectorAll('td.expiry[data-expires]')) if (td.dataset.expires) td.textContent = left(td.dataset.expires);
  }, 1000));
}

async function createForm(reload) {
  const { json: templates } = await api('GET', '/api/sandbox.templates');
  const fields = {};
  const errs = {};
  const field = (name, label, input) => {
    fields[name] = input;
    errs[name] = h('span.err', { id: `err-${name}`, role: 'alert' });
    input.setAttribute('aria-describedby', `err-${name}`);
    input.id = `c-${name}`;
    return h('label', {}, label, input, errs[name]);
  };
  const general = h('p.err', { id: 'create-error', role: 'alert' });
  const form = h('form.card', {
    id: 'create',
    onsubmit: async (ev) => {
      ev.preventDefault();
      for (const e of Object.values(errs)) e.textContent = '';
      general.textContent = '';
      const body = { template: fields.template.value, networkMode: fields.networkMode.value };
      if (fields.name.value) body.name = fields.name.value;
      for (const [k, num] of [['cpu', Number], ['memoryMb', Number], ['timeoutMs', Number]]) {
        if (fields[k].value !== '') body[k] = k === 'timeoutMs' ? num(fields[k].value) * 1000 : num(fields[k].value);
      }
      try {
        const { json } = await api('POST', '/api/sandbox.create', body);
        general.textContent = '';
        general.className = 'muted';
        general.textContent = `Created ${json.sandboxId}.`;
        reload();
      } catch (e) {
        general.className = 'err';
        let placed = false;
        for (const is of e.body?.issues || []) {
          const f = is.path?.[0] === 'timeoutMs' ? 'timeoutMs' : is.path?.[0];
          if (errs[f]) { errs[f].textContent = is.message; placed = true; }
        }
        if (!placed) general.textContent = e.message;
      }
    },
  },
  h('h2', {}, 'New sandbox'),
  h('div.row', {},
    field('template', 'Template', h('select', {}, ...templates.map((t) => h('option', { value: t.name, title: t.description }, t.name)))),
    field('name', 'Name', h('input', { maxlength: 64, placeholder: 'optional' })),
    field('cpu', 'CPUs (0.1–64)', h('input', { type: 'number', step: 'any', value: '1' })),
    field('memoryMb', 'Memory MiB (64–262144)', h('input', { type: 'number', step: 'any', value: '512' })),
    field('timeoutMs', 'Idle timeout s (10–86400)', h('input', { type: 'number', value: '300' })),
    field('networkMode', 'Network', h('select', {}, h('option', { value: 'isolated' }, 'isolated'), h('option', { value: 'internet' }, 'internet'))),
    h('button.primary', { type: 'submit', id: 'create-button' }, 'Create')),
  general);
  return form;
}

// --- one sandbox -----------------------------------------------------------
async function renderSandbox(id) {
  const rec = h('dl.rec', { id: 'record' });
  const actions = h('div.row', { id: 'actions' });
  const msg = h('p.err', { id: 'action-error', role: 'alert' });
  const body = h('div', { id: 'tab-body' });
  let s = null;
  const load = async () => {
    try {
      const { json } = await api('GET', `/api/sandbox.one?sandboxId=${encodeURIComponent(id)}`);
      s = json;
      const items = [['Id', s.sandboxId], ['Name', s.name], ['Status', s.status], ['Template', s.template || '—'], ['Image', s.image],
        ['Runtime', s.runtime], ['Server', s.serverId || 'local'], ['CPU', s.cpu], ['Memory', `${s.memoryMb} MiB`], ['Disk', s.diskMb ? `${s.diskMb} MiB` : '—'],
        ['Network', s.networkMode], ['Idle timeout', `${s.timeoutMs / 1000} s`], ['Expires in', s.status === 'running' ? left(s.expiresAt) : '—'],
        ['Deadline', s.deadlineAt], ['Created', s.createdAt], ['Created by key', s.createdByKey || '—'], ['Error', s.errorMessage || '—']];
      rec.replaceChildren(...items.flatMap(([k, v]) => [h('dt', {}, k), h('dd', k === 'Status' ? { id: 'status', 'data-status': v } : {}, String(v))]));
      paintActions();
    } catch (e) { showError(rec, e); }
  };
  const act = async (what, fn) => {
    msg.textContent = '';
    try { await fn(); await load(); } catch (e) { msg.textContent = `${what}: ${e.message}`; }
  };
  const v1 = async (verb) => {
    const r = await api('GET', `/v1/sandboxes/${encodeURIComponent(id)}`);
    await api('POST', `/v1/sandboxes/${encodeURIComponent(id)}/${verb}`, {}, { headers: { 'if-match': r.headers.get('etag') } });
  };
  let painted = null;
  // repainted only when the status or the timeout changes, so a value being
  // typed is not replaced by the 2-second refresh
  const paintActions = () => {
    if (painted === `${s.status}/${s.timeoutMs}`) return;
    painted = `${s.status}/${s.timeoutMs}`;
    const running = s.status === 'running', stopped = s.status === 'stopped';
    const kids = [];
    if (can('sandbox:create') && running) {
      const t = h('input', { id: 'timeout-s', type: 'number', value: String(s.timeoutMs / 1000), min: 10, max: 86400, 'aria-label': 'Idle timeout in seconds' });
      kids.push(h('label', {}, 'Idle timeout (s)', t),
        h('button', { id: 'set-timeout', onclick: () => act('Set timeout', () => api('POST', '/api/sandbox.setTimeout', { sandboxId: id, timeoutMs: Number(t.value) * 1000 })) }, 'Set timeout'));
    }
    if (can('sandboxesLifecycle') && running) kids.push(h('button', { id: 'stop', onclick: () => act('Stop', () => v1('stop')) }, 'Stop'));
    if (can('sandboxesLifecycle') && stopped) kids.push(h('button', { id: 'start', onclick: () => act('Start', () => v1('start')) }, 'Start'));
    if (can('sandbox:create') && live(s.status)) {
      kids.push(h('button.danger', { id: 'kill', onclick: () => { if (confirm(`Kill sandbox ${id}? Its processes end now.`)) act('Kill', () => api('POST', '/api/sandbox.kill', { sandboxId: id })); } }, 'Kill'));
    }
    if (can('sandbox:delete')) {
      kids.push(h('button.danger', { id: 'remove', onclick: () => { if (confirm(`Remove sandbox ${id} and its record?`)) act('Remove', async () => { await api('POST', '/api/sandbox.remove', { sandboxId: id }); location.hash = '#/'; }); } }, 'Remove'));
    }
    actions.replaceChildren(...kids);
  };
  const tabs = [['console', 'Console', () => consoleTab(id, body)], ['files', 'Files', () => filesTab(id, body)], ['processes', 'Processes', () => processesTab(id, body)]];
  const tabBar = h('div.tabs', { role: 'tablist' });
  const pick = (name) => {
    for (const c of cleanups) c();
    cleanups = [];
    for (const b of tabBar.children) b.setAttribute('aria-selected', String(b.dataset.tab === name));
    body.replaceChildren();
    tabs.find((t) => t[0] === name)[2]();
  };
  for (const [name, label] of tabs) tabBar.append(h('button', { type: 'button', role: 'tab', 'data-tab': name, id: `tab-${name}`, onclick: () => pick(name) }, label));
  main.replaceChildren(h('p', {}, h('a', { href: '#/' }, '← Sandboxes')), h('div.card', {}, h('h1', {}, id), rec, actions, msg), tabBar, body);
  await load();
  timers.push(setInterval(load, 2000));
  if (can('sandboxesCredential') && can('sandboxesExec') && s && s.status === 'running') pick('console');
  else if (s) pick('files');
}

const b64 = {
  enc: (bytes) => { let s = ''; for (const b of bytes) s += String.fromCharCode(b); return btoa(s); },
  dec: (str) => Uint8Array.from(atob(str), (c) => c.charCodeAt(0)),
  url: (text) => btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''),
};

// A PTY shell through /v1 interact: the credential rides in the
// sandboxes.bearer.v1. subprotocol offer (a browser cannot set Authorization
// on a WebSocket); no cookie is used there.
async function consoleTab(id, body) {
  const box = h('div', { id: 'term', 'aria-label': 'Console' });
  const state = h('p.muted', { id: 'console-state', 'aria-live': 'polite' }, 'Connecting…');
  body.replaceChildren(box, state);
  if (!can('sandboxesExec') || !can('sandboxesCredential')) { state.textContent = `Your role (${me.role}) cannot open a console.`; return; }
  const term = new Terminal({ cursorBlink: true, fontSize: 14, convertEol: false, scrollback: 2000 });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(box);
  fit.fit();
  let ws = null, proc = null, closed = false, exited = false, lastSeq = 0, tries = 0;
  cleanups.push(() => {
    closed = true;
    ws?.close();
    term.dispose();
    if (proc && !exited) ep(id, 'POST', `/v1/processes/${proc}/signal`, { json: { signal: 'kill' } }).catch(() => {});
  });
  const send = (f) => { if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(f)); };
  // A socket ends when its credential does (5 minutes) or when the network
  // drops it: a new credential, and attach again after the last chunk seen
  // (resumeFrom), so nothing is shown twice.
  const connect = async () => {
    let token;
    try { token = await credential(id); } catch (e) { state.textContent = `Console: ${e.message}`; return; }
    if (closed) return;
    ws = new WebSocket(`wss://${location.host}/endpoints/${encodeURIComponent(id)}/v1/processes/${encodeURIComponent(proc)}/interact`,
      ['sandboxes.v1', `sandboxes.bearer.v1.${b64.url(token)}`]);
    box.sandpitSocket = ws; // for the browser test
    ws.onopen = () => {
      tries = 0;
      send({ attach: { name: `processes/${proc}`, ...(lastSeq ? { resumeFrom: lastSeq } : {}) } });
      send({ resize: { rows: term.rows, cols: term.cols } });
      state.textContent = `Connected: process ${proc} (a PTY shell)`;
      term.focus();
    };
    ws.onmessage = (m) => {
      let f;
      try { f = JSON.parse(m.data); } catch { return; }
      if (f.chunk) {
        const seq = Number(f.chunk.streamSequence);
        if (seq && seq <= lastSeq) return;
        if (seq) lastSeq = seq;
        term.write(b64.dec(f.chunk.data));
      } else if (f.exited) {
        exited = true;
        state.textContent = `The shell exited (${f.exited.exitCode ?? f.exited.reason ?? ''}).`;
      } else if (f.code) state.textContent = `Console: ${f.message}`;
    };
    ws.onclose = (ev) => {
      if (closed || exited) return;
      if (tries++ >= 5) { state.textContent = `Disconnected (${ev.code}); reopen the tab to try again.`; return; }
      state.textContent = `Reconnecting (${ev.code})…`;
      setTimeout(connect, 500 * tries);
    };
  };
  try {
    const r = await ep(id, 'POST', '/v1/processes', { json: { cmd: ['/bin/sh', '-i'], pty: { initialSize: { rows: term.rows, cols: term.cols } } } });
    proc = (await r.json()).uid;
  } catch (e) { state.textContent = `Console: ${e.message}`; return; }
  if (closed) { ep(id, 'POST', `/v1/processes/${proc}/signal`, { json: { signal: 'kill' } }).catch(() => {}); return; }
  await connect();
  const enc = new TextEncoder();
  term.onData((d) => send({ stdin: b64.enc(enc.encode(d)) }));
  term.onResize(({ rows, cols }) => send({ resize: { rows, cols } }));
  const onWin = () => fit.fit();
  window.addEventListener('resize', onWin);
  cleanups.push(() => window.removeEventListener('resize', onWin));
}

async function filesTab(id, body, dir = '/home/user') {
  const list = h('tbody');
  const view = h('div', { id: 'file-view' });
  const msg = h('p.err', { id: 'files-error', role: 'alert' });
  const path = h('input', { id: 'files-path', value: dir, 'aria-label': 'Folder' });
  const upload = h('input', { id: 'upload', type: 'file', 'aria-label': 'Upload a file' });
  const load = async () => {
    msg.textContent = '';
    try {
      const r = await ep(id, 'GET', `/v1/files?path=${encodeURIComponent(path.value)}`);
      const j = await r.json();
      const items = (j.entries || j.files || []).slice().sort((a, b) => (a.path || a.name).localeCompare(b.path || b.name));
      list.replaceChildren(...items.map((f) => {
        const p = f.path || `${path.value.replace(/\/$/, '')}/${f.name}`;
        const name = p.split('/').pop();
        const isDir = f.type === 'directory' || f.type === 'FILE_TYPE_DIRECTORY' || f.isDir;
        return h('tr', { 'data-path': p },
          h('td', {}, isDir ? h('a', { href: '#', onclick: (ev) => { ev.preventDefault(); path.value = p; load(); } }, `${name}/`)
            : h('a', { href: '#', onclick: (ev) => { ev.preventDefault(); open(p); } }, name)),
          h('td', {}, isDir ? '' : String(f.size ?? '')),
          h('td', {}, isDir ? '' : h('button', { type: 'button', 'data-download': p, onclick: () => download(p) }, 'Download')));
      }));
    } catch (e) { msg.textContent = `Files: ${e.message}`; }
  };
  const fetchFile = async (p) => (await ep(id, 'GET', `/v1/files/content?path=${encodeURIComponent(p)}`)).blob();
  const open = async (p) => {
    try {
      const blob = await fetchFile(p);
      const text = await blob.slice(0, 256 * 1024).text();
      view.replaceChildren(h('h3', {}, p), h('pre.file', { id: 'file-text' }, text));
    } catch (e) { msg.textContent = `Open: ${e.message}`; }
  };
  const download = async (p) => {
    try {
      const url = URL.createObjectURL(await fetchFile(p));
      const a = h('a', { href: url, download: p.split('/').pop() });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (e) { msg.textContent = `Download: ${e.message}`; }
  };
  upload.addEventListener('change', async () => {
    const f = upload.files[0];
    if (!f) return;
    try {
      await ep(id, 'PUT', `/v1/files/content?path=${encodeURIComponent(`${path.value.replace(/\/$/, '')}/${f.name}`)}`,
        { body: f, headers: { 'content-type': 'application/octet-stream' } });
      upload.value = '';
      await load();
    } catch (e) { msg.textContent = `Upload: ${e.message}`; }
  });
  const writable = can('sandboxesFilesWrite');
  body.replaceChildren(h('div.card', {}, h('div.row', {}, h('label', {}, 'Folder', path), h('button', { type: 'button', id: 'files-go', onclick: load }, 'List'),
    writable ? h('label', {}, 'Upload', upload) : null), msg,
  h('div.table-wrap', {}, h('table', { id: 'files' }, h('colgroup', {}, h('col', { style: 'width:60%' }), h('col', { style: 'width:20%' }), h('col', { style: 'width:20%' })),
    h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Bytes'), h('th', {}, ''))), list)), view));
  if (!can('sandboxesFilesRead') || !can('sandboxesCredential')) { msg.textContent = `Your role (${me.role}) cannot read files.`; return; }
  await load();
}

async function processesTab(id, body) {
  const list = h('tbody');
  const msg = h('p.err', { role: 'alert' });
  body.replaceChildren(h('div.card', {}, msg, h('div.table-wrap', {}, h('table', { id: 'processes' },
    h('thead', {}, h('tr', {}, ...['Process', 'Label', 'PID', 'State', ''].map((t) => h('th', { scope: 'col' }, t)))), list))));
  if (!can('sandboxesExec') || !can('sandboxesCredential')) { msg.textContent = `Your role (${me.role}) cannot see processes.`; return; }
  const load = async () => {
    try {
      const j = await (await ep(id, 'GET', '/v1/processes')).json();
      list.replaceChildren(...(j.processes || []).map((p) => h('tr', { 'data-process': p.uid, 'data-state': p.state },
        h('td', {}, p.uid), h('td', {}, p.label), h('td', {}, p.pid ?? '—'),
        h('td', {}, p.state === 'exited' && p.exitCode !== undefined ? `exited (${p.exitCode})` : p.state),
        h('td', {}, p.state === 'running' ? h('button', {
          type: 'button', 'data-kill': p.uid,
          onclick: async () => { await ep(id, 'POST', `/v1/processes/${p.uid}/signal`, { json: { signal: 'kill' } }).catch((e) => { msg.textContent = e.message; }); load(); },
        }, 'Kill') : null))));
    } catch (e) { msg.textContent = `Processes: ${e.message}`; }
  };
  await load();
  timers.push(setInterval(load, 3000));
}

// --- the operator's view: warm pools and a few gauges from /metrics ---------
// /metrics takes no key: nginx lets only SANDPIT_METRICS_ALLOW addresses
// read it. Shown to roles with the operator permission (owner, admin).
function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] || '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

async function renderOperator() {
  const pools = h('tbody');
  const gauges = h('tbody');
  const note = h('p.muted', { id: 'metrics-note', 'aria-live': 'polite' });
  const servers = h('tbody');
  const loadServers = async () => {
    try {
      const { json } = await api('GET', '/session/servers');
      servers.replaceChildren(h('tr', { 'data-server': 'local' }, h('td', {}, 'local'), h('td', {}, 'this host'), h('td', {}, '—'), h('td', {}, '—'), h('td', {}, '—')),
        ...json.servers.map((x) => h('tr', { 'data-server': x.id }, h('td', {}, x.id), h('td', {}, x.pool || '—'),
          h('td', {}, x.netCheck || 'not checked', x.netCheckAt ? h('div.muted', {}, new Date(x.netCheckAt).toLocaleString()) : null),
          h('td', {}, x.sandboxes ?? '—'), h('td', {}, x.cpuMilli !== undefined ? `${x.cpuMilli / 1000} CPU / ${x.memoryMb} MiB` : '—'))));
    } catch (e) { servers.replaceChildren(h('tr', {}, h('td', { colspan: 5 }, `Servers: ${e.message}`))); }
  };
  main.replaceChildren(
    h('div.card', {}, h('h2', {}, 'Docker servers'), h('div.table-wrap', {}, h('table', { id: 'servers' },
      h('thead', {}, h('tr', {}, ...['Server', 'Pool', 'Network check', 'Sandboxes', 'Reserved'].map((t) => h('th', { scope: 'col' }, t)))), servers)),
    h('p.muted', {}, 'The servers this organization may be placed on (sandpit servers add … --orgs); their load counts every organization.')),
    h('div.card', {}, h('h2', {}, 'Warm pools'), h('div.table-wrap', {}, h('table', { id: 'pools' },
      h('thead', {}, h('tr', {}, ...['Template', 'Network', 'Ready', 'Target', 'Fill', 'Claims'].map((t) => h('th', { scope: 'col' }, t)))), pools))),
    h('div.card', {}, h('h2', {}, 'Sandboxes and store'), h('div.table-wrap', {}, h('table', { id: 'gauges' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Gauge'), h('th', {}, 'Value'))), gauges)), note));
  const load = async () => {
    try {
      const r = await fetch('/metrics', { cache: 'no-store', credentials: 'omit' });
      if (r.status === 403) { note.textContent = 'This address may not read /metrics (SANDPIT_METRICS_ALLOW).'; return; }
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      const ms = parseMetrics(await r.text());
      const key = (m) => `${m.labels.template}/${m.labels.network}`;
      const by = new Map();
      for (const m of ms.filter((x) => x.name.startsWith('sandpit_pool_'))) {
        const p = by.get(key(m)) || { template: m.labels.template, network: m.labels.network, ready: 0, target: 0, claims: 0 };
        if (m.name === 'sandpit_pool_ready') p.ready += m.value;
        if (m.name === 'sandpit_pool_target') p.target += m.value;
        if (m.name === 'sandpit_pool_claims_total') p.claims += m.value;
        by.set(key(m), p);
      }
      pools.replaceChildren(...[...by.values()].map((p) => h('tr', { 'data-pool': `${p.template}/${p.network}` },
        h('td', {}, p.template), h('td', {}, p.network), h('td', {}, String(p.ready)), h('td', {}, String(p.target)),
        h('td', {}, h('meter', { min: 0, max: Math.max(p.target, 1), value: p.ready, 'aria-label': `${p.ready} of ${p.target} ready` })), h('td', {}, String(p.claims)))));
      if (!by.size) pools.replaceChildren(h('tr', {}, h('td', { colspan: 6 }, 'No warm pool is configured (warm_pool in sandpitd.conf).')));
      const sum = new Map();
      for (const m of ms) {
        let k = null;
        if (m.name === 'sandpit_sandboxes') k = `sandboxes ${m.labels.status}`;
        else if (m.name === 'sandpit_store_up') k = 'Redis up (instances)';
        else if (m.name === 'sandpit_requests_total') k = `requests ${String(m.labels.status || '').slice(0, 1)}xx`;
        if (k) sum.set(k, (sum.get(k) || 0) + m.value);
      }
      gauges.replaceChildren(...[...sum.entries()].map(([k, v]) => h('tr', { 'data-gauge': k }, h('td', {}, k), h('td', {}, String(v)))));
      note.textContent = `From /metrics at ${new Date().toLocaleTimeString()}`;
    } catch (e) { note.textContent = `Could not read /metrics: ${e.message}`; }
  };
  await Promise.all([load(), loadServers()]);
  timers.push(setInterval(load, 5000));
  timers.push(setInterval(loadServers, 10000));
}

// --- the organization: keys, roles, quota (owners and admins) --------------
async function renderOrg() {
  const keys = h('tbody');
  const roles = h('tbody');
  const quota = h('dl.rec', { id: 'quota' });
  const msg = h('p.err', { id: 'org-error', role: 'alert' });
  const shown = h('div', { id: 'new-key' });
  const role = h('select', { id: 'new-key-role', 'aria-label': 'Role of the new key' });
  const loadKeys = async () => {
    const { json } = await api('GET', '/session/keys');
    keys.replaceChildren(...json.keys.sort((a, b) => String(a.createdAt).localeCompare(String(b.createdAt))).map((k) => h('tr', { 'data-key': k.keyId },
      h('td', {}, k.keyId, k.current ? h('span.muted', {}, ' (this session)') : null), h('td', {}, k.role), h('td', {}, k.createdAt ? new Date(k.createdAt).toLocaleString() : '—'),
      h('td', {}, h('button.danger', {
        type: 'button', 'data-revoke': k.keyId,
        onclick: async () => {
          if (!confirm(k.current ? `Revoke ${k.keyId}, the key of this session? You will be signed out.` : `Revoke key ${k.keyId}? Its sessions end too.`)) return;
          msg.textContent = '';
          try { await api('DELETE', `/session/keys/${k.keyId}`); await loadKeys(); } catch (e) { msg.textContent = `Revoke: ${e.message}`; }
        },
      }, 'Revoke')))));
  };
  const create = h('form.row', {
    id: 'new-key-form',
    onsubmit: async (ev) => {
      ev.preventDefault();
      msg.textContent = '';
      try {
        const { json } = await api('POST', '/session/keys', { role: role.value });
        const out = h('input', { id: 'new-key-value', readonly: true, value: json.key, size: 50, 'aria-label': 'The new key' });
        shown.replaceChildren(h('p', {}, `Key ${json.keyId} (${json.role}). Copy it now: it is shown only this once.`), out);
        out.select();
        await loadKeys();
      } catch (e) { msg.textContent = `Create: ${e.message}`; }
    },
  }, h('label', {}, 'Role', role), h('button.primary', { type: 'submit', id: 'new-key-button' }, 'Create key'));
  main.replaceChildren(
    h('div.card', {}, h('h2', {}, `Keys of ${me.org}`), create, shown, msg,
      h('div.table-wrap', {}, h('table', { id: 'keys' }, h('thead', {}, h('tr', {}, ...['Key id', 'Role', 'Created', ''].map((t) => h('th', { scope: 'col' }, t)))), keys))),
    h('div.card', {}, h('h2', {}, 'Roles'), h('div.table-wrap', {}, h('table', { id: 'roles' }, h('colgroup', {}, h('col', { style: 'width:20%' }), h('col', { style: 'width:80%' })),
      h('thead', {}, h('tr', {}, h('th', {}, 'Role'), h('th', {}, 'Permissions'))), roles)),
    h('p.muted', {}, 'Custom roles are made with the command line: sandpit roles create --org ORG NAME --perms …')),
    h('div.card', {}, h('h2', {}, 'Quota'), quota, h('p.muted', {}, 'Set by the operator: sandpit quota set --org ORG …')));
  try {
    const [{ json: r }, { json: q }] = await Promise.all([api('GET', '/session/roles'), api('GET', '/session/quota'), loadKeys()]);
    role.replaceChildren(...r.roles.map((x) => h('option', { value: x.name, selected: x.name === 'member' }, x.name)));
    roles.replaceChildren(...r.roles.map((x) => h('tr', { 'data-role': x.name }, h('td', {}, x.name, x.builtIn ? h('span.muted', {}, ' (built in)') : null),
      h('td', { title: x.permissions }, x.permissions || '(none)'))));
    const lim = (v, f = (x) => x) => (v === null || v === undefined ? 'unlimited' : f(v));
    quota.replaceChildren(...[['Sandboxes', lim(q.sandboxes)], ['CPUs', lim(q.cpuMilli, (x) => x / 1000)], ['Memory', lim(q.memoryMb, (x) => `${x} MiB`)],
      ['Hard lifetime', lim(q.maxLifetimeMs, (x) => `${x / 1000} s`)]].flatMap(([k, v]) => [h('dt', {}, k), h('dd', { 'data-quota': k }, String(v))]));
  } catch (e) { msg.textContent = e.message; }
}

// --- routing ----------------------------------------------------------------
async function route() {
  for (const t of timers) clearInterval(t);
  timers = [];
  for (const c of cleanups) c();
  cleanups = [];
  if (!me) {
    try { me = (await api('GET', '/session')).json; } catch { signedOut(); return; }
  }
  $('#nav').hidden = false;
  $('#who').textContent = `${me.org} · ${me.role} · key ${me.keyId}`;
  $('#nav-operator').hidden = !can('operator');
  $('#nav-org').hidden = !can('operator');
  const m = location.hash.match(/^#\/s\/([A-Za-z0-9_-]{1,64})$/);
  try {
    if (m) await renderSandbox(m[1]);
    else if (location.hash === '#/operator' && can('operator')) await renderOperator();
    else if (location.hash === '#/org' && can('operator')) await renderOrg();
    else await renderList();
  } catch (e) { if (me) showError(main, e); }
}
window.addEventListener('hashchange', route);
route();
