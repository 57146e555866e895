// The seed document's answer schemas (tests/api/spec/docker-sandboxes-api.v1.yaml,
// ajv, JSON Schema 2020-12) for /v1 tests outside v1.test.mjs:
//   const v = seedValidator('POST', '/v1/sandboxes', 201); v(json) || ajv.errorsText(v.errors)
import fs from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import YAML from 'yaml';
import assert from 'node:assert/strict';
import { repoRoot } from './stack.mjs';

const seedPath = process.env.SANDPIT_V1_SEED ||
  path.join(repoRoot, 'tests/api/spec/docker-sandboxes-api.v1.yaml');
export const seed = YAML.parse(fs.readFileSync(seedPath, 'utf8'));
export const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
addFormats(ajv);
ajv.addSchema(seed, 'seed');

const ptr = (s) => s.replace(/~/g, '~0').replace(/\//g, '~1');
const cache = new Map();
/** The validator of one operation's JSON answer at status (else its default);
 *  null where that answer has no JSON body (204, 304, readFile's raw bytes). */
export function seedValidator(method, tmpl, status) {
  const op = seed.paths[tmpl]?.[method.toLowerCase()];
  if (!op) throw new Error(`the seed has no ${method} ${tmpl}`);
  const key = op.responses[String(status)] ? String(status) : 'default';
  if (!op.responses[key].content?.['application/json']) return null;
  const id = `${method} ${tmpl} ${key}`;
  if (!cache.has(id)) {
    cache.set(id, ajv.compile({
      $ref: `seed#/paths/${ptr(tmpl)}/${method.toLowerCase()}/responses/${key}/content/${ptr('application/json')}/schema`,
    }));
  }
  return cache.get(id);
}

/** What the seed's operation answers at status (else its default) has as
 *  its body: 'json', 'none', or another media type. */
export function seedBody(method, tmpl, status) {
  const op = seed.paths[tmpl]?.[method.toLowerCase()];
  if (!op) throw new Error(`the seed has no ${method} ${tmpl}`);
  const res = op.responses[String(status)] ?? op.responses.default;
  const types = Object.keys(res?.content ?? {});
  return types.includes('application/json') ? 'json' : types[0] ?? 'none';
}

let answersChecked = 0;
/** How many answers v1Call checked against a schema (a file's after() asks
 *  for some, so a file whose calls never reached one fails). */
export const v1Checked = () => answersChecked;

/** One /v1 request through stack.api: tmpl's {params} filled in (escaped),
 *  under /endpoints/<o.endpoint> when that is given. Its answer is checked
 *  against the seed: JSON that fits the operation's schema at its status,
 *  no body where the seed has none (a 304 aside), and every error in the
 *  /v1 shape ({code, ...}), never the Dokploy face's. */
export async function v1Call(stack, method, tmpl, params = {}, o = {}) {
  let p = tmpl;
  for (const [k, v] of Object.entries(params)) p = p.replace(`{${k}}`, encodeURIComponent(v));
  if (o.endpoint) p = `/endpoints/${o.endpoint}${p}`;
  const r = await stack.api(method, p, { timeoutMs: 120000, ...o });
  if (r.status !== 304) {
    const v = seedValidator(method, tmpl, r.status);
    if (v) {
      assert.ok(r.json !== undefined, `${method} ${p} ${r.status}: not JSON: ${r.text}`);
      assert.ok(v(r.json), `${method} ${p} ${r.status} breaks the seed's schema: ${ajv.errorsText(v.errors)}\n${r.text}`);
      answersChecked++;
    } else if (seedBody(method, tmpl, r.status) === 'none') {
      assert.equal(r.text, '', `${method} ${p} ${r.status} must have no body`);
    }
  }
  if (r.status >= 400) {
    assert.equal(typeof r.json?.code, 'string', r.text);
    assert.ok(!('issues' in r.json), `the Dokploy shape under /v1: ${r.text}`);
  }
  return r;
}
