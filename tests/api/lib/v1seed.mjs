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

/** The seed's schemas as answers are held to them: "A 64-bit integer is
 *  returned as a JSON string; inputs accept a number or a string" (the
 *  document's conventions), so where a field is `format: int64` and may be
 *  a string, an answer's value must be one. The seed itself is left as it
 *  is (v1.test.mjs compares /v1/openapi.json with it). */
export function answerSchemas(doc) {
  const walk = (n) => {
    if (Array.isArray(n)) { n.forEach(walk); return; }
    if (!n || typeof n !== 'object') return;
    if (n.format === 'int64' && Array.isArray(n.type) && n.type.includes('string'))
      n.type = n.type.filter((t) => t !== 'integer');
    Object.values(n).forEach(walk);
  };
  const copy = structuredClone(doc);
  walk(copy.components);
  walk(copy.paths);
  return copy;
}

export const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
addFormats(ajv);
ajv.addSchema(answerSchemas(seed), 'seed');
// what a test sends is held to the document as it is ('seed-in#/...'):
// an input may give a 64-bit integer as a number
ajv.addSchema(structuredClone(seed), 'seed-in');

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

const ETAG = /^"[^"\x00-\x20\x7f]*"$/;
const UID_NAMED = new Set(['sandboxes', 'snapshots', 'images', 'volumes', 'secrets', 'processes']);
/** The document's rules beside its schemas, on a success: the ETag header
 *  where the operation's answer lists one (quoted, strong, the body's
 *  `etag` when the body has one), and a resource's `uid` the last segment
 *  of its `name` where the document says so. */
function answerRules(method, p, op, r) {
  const what = `${method} ${p} ${r.status}`;
  const res = op.responses[String(r.status)];
  if (res?.headers?.ETag) {
    assert.match(r.headers.etag ?? '', ETAG, `${what}: the ETag header`);
    if (typeof r.json?.etag === 'string') assert.equal(r.json.etag, r.headers.etag, `${what}: the body's etag and the ETag header`);
  }
  // "uid is the existing backing ID, equal to the resource name's terminal
  // segment" (a port's uid is its publication's incarnation instead)
  const j = r.json;
  if (j && typeof j === 'object' && typeof j.name === 'string' && typeof j.uid === 'string' &&
      UID_NAMED.has(j.name.split('/').at(-2)))
    assert.equal(j.name.split('/').at(-1), j.uid, `${what}: uid is the last segment of name`);
}

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
  // a success is one the operation lists (errors may fall to its default)
  if (r.status < 400) {
    const listed = Object.keys(seed.paths[tmpl][method.toLowerCase()].responses);
    assert.ok(listed.includes(String(r.status)), `${method} ${p} answered ${r.status}; the operation lists ${listed.join(', ')}\n${r.text}`);
  }
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
  if (r.status < 300) answerRules(method, p, seed.paths[tmpl][method.toLowerCase()], r);
  if (r.status >= 400) {
    assert.equal(typeof r.json?.code, 'string', r.text);
    assert.ok(!('issues' in r.json), `the Dokploy shape under /v1: ${r.text}`);
  }
  return r;
}
