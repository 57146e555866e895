// Looks inside a test stack: everything Redis holds, and every log line,
// for tests that prove a secret never lands there in clear.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

// Every key and value in the stack's Redis, as one text.
export function redisDump(stack) {
  const sock = path.join(stack.dir, 'redis.sock');
  const cli = (...a) => execFileSync('redis-cli', ['-s', sock, '--no-raw', ...a], { encoding: 'utf8' });
  let out = '';
  for (const k of cli('--scan').split('\n').filter(Boolean).map((x) => x.replace(/^"|"$/g, ''))) {
    const type = cli('TYPE', k).trim();
    const cmd = { string: ['GET', k], hash: ['HGETALL', k], zset: ['ZRANGE', k, '0', '-1'], set: ['SMEMBERS', k], list: ['LRANGE', k, '0', '-1'] }[type];
    out += `${k}\n${cmd ? cli(...cmd) : ''}\n`;
  }
  // and what is on disk (AOF / RDB), raw
  const walk = (d) => readdirSync(d).flatMap((f) => {
    const p = path.join(d, f);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
  for (const f of walk(path.join(stack.dir, 'redis'))) out += readFileSync(f, 'latin1');
  return out;
}

// All log files of the stack (sandpitd, nginx, redis) as one text.
export function allLogs(stack) {
  const walk = (d) => readdirSync(d).flatMap((f) => {
    const p = path.join(d, f);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
  return walk(stack.dir).filter((f) => f.endsWith('.log')).map((f) => readFileSync(f, 'latin1')).join('\n');
}
