// Writes handlers/v1_openapi.json: the part of the seed document
// (docker-sandboxes-api.v1.yaml, beside this file) that sandpit serves at
// /v1/openapi.json: the operations whose operationId is listed below (the
// /v1 routes of handlers/routes.c), at their seed paths and methods,
// unchanged, and every component they reach. sandpitd embeds the file and
// drops, at serve time, any operation its route table lacks; v1.test.mjs
// checks that the served operations are exactly the table's /v1 routes and
// equal the seed's. Run from tests/ after adding an operation:
//   node api/spec/served.mjs listSandboxes createSandbox ...
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

const here = path.dirname(fileURLToPath(import.meta.url));
const seed = YAML.parse(fs.readFileSync(path.join(here, 'docker-sandboxes-api.v1.yaml'), 'utf8'));
const ids = new Set(process.argv.slice(2));
const paths = {};
for (const [p, item] of Object.entries(seed.paths)) {
  for (const [m, op] of Object.entries(item)) {
    if (!op?.operationId || !ids.has(op.operationId)) continue;
    (paths[p] ??= {})[m] = op;
    ids.delete(op.operationId);
  }
}
if (ids.size) throw new Error(`not in the seed: ${[...ids].join(', ')}`);
// the components reachable from the operations, transitively
const comps = {};
const walk = (v) => {
  if (Array.isArray(v)) return v.forEach(walk);
  if (!v || typeof v !== 'object') return;
  for (const [k, x] of Object.entries(v)) {
    if (k === '$ref' && typeof x === 'string' && x.startsWith('#/components/')) {
      const [, , kind, name] = x.split('/');
      comps[kind] ??= {};
      if (!comps[kind][name]) {
        comps[kind][name] = seed.components[kind][name];
        walk(comps[kind][name]);
      }
    } else {
      walk(x);
    }
  }
};
walk(paths);
const doc = {
  openapi: seed.openapi,
  info: { ...seed.info, description: `${seed.info.description}\n\nServed by sandpit: the operations it implements, as the seed document states them.` },
  servers: [{ url: '/', description: 'This sandpit server; the /v1 paths are appended as they are.' }],
  paths,
  components: { ...comps, securitySchemes: seed.components.securitySchemes },
};
const out = path.join(here, '../../../handlers/v1_openapi.json');
fs.writeFileSync(out, `${JSON.stringify(doc, null, 1)}\n`);
console.log(`${out}: ${Object.keys(paths).length} paths, ${Object.values(comps).reduce((n, c) => n + Object.keys(c).length, 0)} components, ${fs.statSync(out).size} bytes`);
