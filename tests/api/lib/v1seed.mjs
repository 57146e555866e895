// The seed document's answer schemas (tests/api/spec/docker-sandboxes-api.v1.yaml,
// ajv, JSON Schema 2020-12) for /v1 tests outside v1.test.mjs:
//   const v = seedValidator('POST', '/v1/sandboxes', 201); v(json) || ajv.errorsText(v.errors)
import fs from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import YAML from 'yaml';
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
