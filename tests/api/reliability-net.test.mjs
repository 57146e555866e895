// RELIABILITY N1 and N3, between sandboxes on sandpit's own bridges and a
// network namespace of the test (no traffic leaves the machine).
//   N1: from an isolated sandbox nothing outside answers: TCP, ping and a
//       DNS query to a server in the namespace all go unanswered (from an
//       internet sandbox, the control, all three answer); its resolver
//       (Docker's embedded one) resolves no outside name.
//   N3: a sandbox cannot reach another, by TCP or by ping (ICMP echo), on
//       the same bridge (ICC off) or across the two; each probe is checked
//       against a control that works (the sandbox's own address).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { waitFor } from './lib/stack.mjs';
import { sandboxStack } from './lib/suite.mjs';
import { docker } from './lib/docker.mjs';

let s;
const { create, exec } = sandboxStack((stack) => { s = stack; });

// python3 probe: tcp HOST PORT | ping HOST | dns NAME | dnsq SERVER NAME; prints one
// word (open, refused, timeout, unreachable, reply, resolved, ...)
const PROBE = String.raw`
import errno, socket, struct, sys, time
what = sys.argv[1]
def tcp(host, port):
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((host, int(port))); return 'open'
    except socket.timeout: return 'timeout'
    except OSError as e:
        return {errno.ECONNREFUSED: 'refused', errno.ENETUNREACH: 'unreachable', errno.EHOSTUNREACH: 'unreachable'}.get(e.errno, 'error-%d' % e.errno)
def csum(b):
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b)); s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff
def ping(host):
    # an unprivileged ICMP socket (ping_group_range): no capability needed
    try: s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
    except OSError as e: return 'nosocket-%d' % e.errno
    s.settimeout(2)
    hdr = struct.pack('!BBHHH', 8, 0, 0, 0, 1) + b'sandpit-n3'
    pkt = hdr[:2] + struct.pack('!H', csum(hdr)) + hdr[4:]
    try:
        s.sendto(pkt, (host, 0))
        end = time.time() + 2
        while time.time() < end:
            d, a = s.recvfrom(1024)
            if d[0] == 0 and a[0] == host: return 'reply'
        return 'timeout'
    except socket.timeout: return 'timeout'
    except OSError as e:
        return {errno.ENETUNREACH: 'unreachable', errno.EHOSTUNREACH: 'unreachable'}.get(e.errno, 'error-%d' % e.errno)
def dns(name):
    try: socket.getaddrinfo(name, 80); return 'resolved'
    except socket.gaierror: return 'unresolved'
def dnsq(server, name):
    # one A query over UDP, straight to server (not through resolv.conf)
    q = b'\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00' + b''.join(bytes([len(p)]) + p.encode() for p in name.split('.')) + b'\x00\x00\x01\x00\x01'
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
    try:
        s.sendto(q, (server, 53)); d = s.recv(512)
        return 'answer' if d[:2] == b'\x12\x34' else 'garbage'
    except socket.timeout: return 'timeout'
    except OSError as e:
        return {errno.ENETUNREACH: 'unreachable', errno.EHOSTUNREACH: 'unreachable', errno.ECONNREFUSED: 'refused'}.get(e.errno, 'error-%d' % e.errno)
if what == 'listen':
    l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(('0.0.0.0', 8080)); l.listen(16)
    while True: l.accept()[0].close()
print({'tcp': tcp, 'ping': ping, 'dns': dns, 'dnsq': dnsq}[what](*sys.argv[2:]))
`;
const probe = async (sb, ...args) => {
  // RES_OPTIONS: one try of 1 s per name server (glibc), not 5 s x 2
  const r = await exec(sb.sandboxId, 'python3 -c "$PROBE" $ARGS',
    { env: { PROBE, ARGS: args.join(' '), RES_OPTIONS: 'timeout:1 attempts:1' }, timeoutMs: 20000 });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.exitCode, 0, r.json.stderr);
  return r.json.stdout.trim();
};
async function ipOf(sb) {
  const n = (await docker('GET', `/containers/${sb.containerId}/json`)).json.NetworkSettings.Networks;
  const nets = Object.values(n);
  assert.equal(nets.length, 1, JSON.stringify(Object.keys(n)));
  return nets[0].IPAddress;
}
async function listen(sb) {
  const r = await exec(sb.sandboxId, 'nohup python3 -c "$PROBE" listen >/dev/null 2>&1 &', { env: { PROBE } });
  assert.equal(r.json.exitCode, 0, r.text);
  const ip = await ipOf(sb);
  await waitFor(async () => (await probe(sb, 'tcp', ip, '8080')) === 'open', 10000, 200);
  return ip;
}

// "The outside": a network namespace of this test, behind a veth pair
// (the host routes to it; no iptables rule is added), with a TCP listener
// on 8080 and a DNS server on UDP 53 that answers every A query.
const OUTSIDE = String.raw`
import socket, sys, threading
ip = sys.argv[1]
def tcp():
    l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind((ip, 8080)); l.listen(16)
    while True: l.accept()[0].close()
threading.Thread(target=tcp, daemon=True).start()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind((ip, 53))
print('ready', flush=True)
while True:
    q, a = u.recvfrom(512)
    # the question echoed, one A record 192.0.2.7 (name by pointer)
    r = q[:2] + b'\x81\x80' + q[4:6] + b'\x00\x01\x00\x00\x00\x00' + q[12:] + b'\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\xc0\x00\x02\x07'
    u.sendto(r, a)
`;
async function outsideNetns(t) {
  const ns = `sprc-n1-${process.pid}`, host = `sprcn${process.pid % 100000}`;
  // a /30 of 10.250.0.0/16 for this test
  const base = (process.pid % 16384) * 4;
  const a = `10.250.${base >> 8}.${(base & 255) + 1}`, b = `10.250.${base >> 8}.${(base & 255) + 2}`;
  const ip = (...args) => execFileSync('ip', args, { stdio: 'pipe' });
  const cleanup = () => {
    try { ip('netns', 'del', ns); } catch { /* gone */ }
    try { ip('link', 'del', host); } catch { /* gone with the netns */ }
  };
  cleanup();
  ip('netns', 'add', ns);
  t.after(cleanup);
  ip('link', 'add', host, 'type', 'veth', 'peer', 'name', 'out0', 'netns', ns);
  ip('addr', 'add', `${a}/30`, 'dev', host);
  ip('link', 'set', host, 'up');
  ip('-n', ns, 'addr', 'add', `${b}/30`, 'dev', 'out0');
  ip('-n', ns, 'link', 'set', 'out0', 'up');
  ip('-n', ns, 'link', 'set', 'lo', 'up');
  ip('-n', ns, 'route', 'add', 'default', 'via', a);
  const srv = spawn('ip', ['netns', 'exec', ns, 'python3', '-c', OUTSIDE, b], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => srv.kill('SIGKILL'));
  await new Promise((resolve, reject) => {
    srv.stdout.once('data', resolve);
    srv.once('exit', (c) => reject(new Error(`the outside server exited (${c})`)));
  });
  return b;
}

test('N1: an isolated sandbox reaches nothing outside, by TCP, ping or DNS; an internet one does', { timeout: 180000 }, async (t) => {
  const outside = await outsideNetns(t);
  const iso = await create({ template: 'python', networkMode: 'isolated' });
  const net = await create({ template: 'python', networkMode: 'internet' });
  // the controls: through the internet bridge the outside answers
  assert.equal(await probe(net, 'tcp', outside, '8080'), 'open');
  assert.equal(await probe(net, 'ping', outside), 'reply');
  assert.equal(await probe(net, 'dnsq', outside, 'example.com'), 'answer');
  // the isolated sandbox: nothing gets through
  const res = {};
  for (const [k, args] of Object.entries({ tcp: ['tcp', outside, '8080'], ping: ['ping', outside], dns: ['dnsq', outside, 'example.com'] }))
    res[k] = await probe(iso, ...args);
  t.diagnostic(`isolated -> outside ${outside}: ${JSON.stringify(res)}`);
  assert.deepEqual(res, { tcp: 'timeout', ping: 'timeout', dns: 'timeout' });
  // nor the internet sandbox's own bridge address
  const netIp = await listen(net);
  assert.ok(['timeout', 'unreachable'].includes(await probe(iso, 'tcp', netIp, '8080')));
  // DNS: its resolver (Docker's embedded one, 127.0.0.11) answers no
  // outside name, nor the other sandbox's; "localhost" comes from /etc/hosts
  for (const name of ['example.com', 'sandpit-test-n1.invalid', `sandpit-${net.sandboxId}`])
    assert.equal(await probe(iso, 'dns', name), 'unresolved', name);
  assert.equal(await probe(iso, 'dns', 'localhost'), 'resolved');
});

test('N3: one sandbox cannot reach another by TCP or ping, on one bridge or across the two', { timeout: 240000 }, async (t) => {
  const [a, b, c, d] = await Promise.all([
    create({ template: 'python', networkMode: 'internet' }),
    create({ template: 'python', networkMode: 'internet' }),
    create({ template: 'python', networkMode: 'isolated' }),
    create({ template: 'python', networkMode: 'isolated' }),
  ]);
  const ip = {};
  for (const [k, sb] of Object.entries({ a, b, c, d })) ip[k] = await listen(sb);
  t.diagnostic(`internet a ${ip.a}, b ${ip.b}; isolated c ${ip.c}, d ${ip.d}`);
  // the controls: each sandbox reaches itself by TCP and by ping
  for (const [k, sb] of Object.entries({ a, c })) {
    assert.equal(await probe(sb, 'tcp', ip[k], '8080'), 'open', `${k} to itself`);
    assert.equal(await probe(sb, 'ping', ip[k]), 'reply', `${k} pings itself`);
  }
  const blocked = (r) => ['timeout', 'unreachable', 'refused'].includes(r);
  // all pairs at once: each blocked probe waits out its 2 s
  const pairs = [
    [a, 'b', 'a', 'internet -> internet'], [b, 'a', 'b', 'internet -> internet'],
    [c, 'd', 'c', 'isolated -> isolated'], [d, 'c', 'd', 'isolated -> isolated'],
    [a, 'c', 'a', 'internet -> isolated'], [c, 'a', 'c', 'isolated -> internet'],
  ];
  const got = await Promise.all(pairs.map(async ([from, to]) =>
    [await probe(from, 'tcp', ip[to], '8080'), await probe(from, 'ping', ip[to])]));
  pairs.forEach(([, to, fromName, toName], i) => {
    const [tcp, ping] = got[i];
    t.diagnostic(`${fromName} -> ${to} (${toName}): tcp ${tcp}, ping ${ping}`);
    assert.ok(blocked(tcp), `${fromName} reached ${to} by TCP (${toName}): ${tcp}`);
    assert.ok(blocked(ping), `${fromName} pinged ${to} (${toName}): ${ping}`);
  });
});
