// One stack for a test file, and the sandboxes it makes: started before
// the first test, every sandbox removed and the stack stopped after the
// last. onReady(stack) hands the stack to the file.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack } from './stack.mjs';

export function sandboxStack(onReady, opts) {
  let s;
  const made = [];
  before(async () => { s = await startStack(opts); onReady?.(s); });
  after(async () => {
    for (const id of made) await s?.api('POST', '/api/sandbox.remove', { body: { sandboxId: id } }).catch(() => {});
    await s?.stop();
  });
  // creates a sandbox (asserting 200) that is removed after the file
  async function create(body) {
    const c = await s.api('POST', '/api/sandbox.create', { body });
    assert.equal(c.status, 200, c.text);
    made.push(c.json.sandboxId);
    return c.json;
  }
  const exec = (id, cmd, o = {}) => s.api('POST', '/api/sandbox.exec', { body: { sandboxId: id, cmd, ...o } });
  return { create, exec, made };
}
