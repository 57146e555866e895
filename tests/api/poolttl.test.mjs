// Warm pools (README "Warm pools"), the parts pool.test.mjs leaves out: an
// internet pool hands its containers to internet creates (on the internet
// network), and unused pooled containers end after `ttl` seconds on their
// own and are replaced.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, waitFor, poolReady } from './lib/stack.mjs';
import { docker, diedAt } from './lib/docker.mjs';

let s;
const L = 'sptttl' + Math.random().toString(36).slice(2, 8);
const byLabel = (v) => '/containers/json?all=1&filters=' + encodeURIComponent(JSON.stringify({ label: [v] }));
const pooled = async () => (await docker('GET', byLabel(`${L}.pool`))).json
  .filter((c) => c.State === 'running' && c.Labels[`${L}.organizationId`] === '');
const timing = (r) => r.headers['server-timing'] || '';

before(async () => {
  s = await startStack({ extraConf: ['warm_pool = template=alpine size=1 network=internet ttl=600',
    'warm_pool = template=python size=1 ttl=60', `label_prefix = ${L}`] });
  await waitFor(async () => await poolReady(s, 'alpine', 'internet') >= 1 && await poolReady(s, 'python') >= 1, 60000, 250);
});
after(async () => {
  await s?.stop();
  for (const c of (await docker('GET', byLabel(`${L}.sandbox=true`))).json)
    await docker('DELETE', `/containers/${c.Id}?force=true`);
});

test('an internet pool serves internet creates, on the internet network', async (t) => {
  const c = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine', networkMode: 'internet' } });
  assert.equal(c.status, 200, c.text);
  t.after(() => s.api('POST', '/api/sandbox.remove', { body: { sandboxId: c.json.sandboxId } }));
  assert.match(timing(c), /^pool;/);
  assert.equal(c.json.networkMode, 'internet');
  const info = (await docker('GET', `/containers/${c.json.containerId}/json`)).json;
  assert.deepEqual(Object.keys(info.NetworkSettings.Networks), ['sandpit-internet']);
  // an isolated create does not take from it
  const i = await s.api('POST', '/api/sandbox.create', { body: { template: 'alpine' } });
  assert.equal(i.status, 200, i.text);
  t.after(() => s.api('POST', '/api/sandbox.remove', { body: { sandboxId: i.json.sandboxId } }));
  assert.doesNotMatch(timing(i), /^pool;/);
});

test('an unused pooled container ends after its ttl on its own, and is replaced', async () => {
  const py = (await pooled()).filter((c) => c.Image.includes('python'));
  assert.equal(py.length, 1, JSON.stringify(py.map((c) => c.Image)));
  const born = py[0].Created * 1000;
  const end = await diedAt(py[0].Id, Date.now() - 5000, 120000);
  // ttl = 60: it ends 60 s after it was made (Created has 1 s resolution)
  const lived = end - born;
  assert.ok(lived >= 58000 && lived < 75000, `lived ${lived} ms with ttl=60`);
  await waitFor(async () => (await pooled()).some((c) => c.Image.includes('python') && c.Id !== py[0].Id), 60000, 500);
});
