// Network fixtures for the deny-rule tests (N2, N4): a network namespace that
// plays the cloud metadata address and two addresses of an operator's range,
// reached only by packets that come in on the test stack's own bridges
// (policy routing on `iif <bridge>`), and the clean-up of the stack's own
// networks and iptables chains. Nothing here sends traffic to an address
// outside the namespaces it makes.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';

const sh = (cmd, args, opts = {}) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...opts });
const quiet = (cmd, args) => { try { return sh(cmd, args); } catch { return null; } };

/** A network prefix of its own (9 bytes: bridges <prefix>-iso / -net). */
export function ownPrefix(letter = 'n') {
  return `sp${letter}${randomBytes(3).toString('hex')}`;
}

/** The deny chains sandpit makes for a prefix. */
export const chains = (prefix) => ({ input: `${prefix.toUpperCase()}-INPUT`, forward: `${prefix.toUpperCase()}-FORWARD` });

/** iptables -S CHAIN as lines ([] when the chain does not exist). */
export function rules(chain) {
  const out = quiet('iptables', ['-w', '5', '-S', chain]);
  return out ? out.trim().split('\n').filter((l) => l.startsWith('-A ')) : [];
}

/** How many times CHAIN jumps to TARGET. */
export function jumps(chain, target) {
  return rules(chain).filter((l) => l === `-A ${chain} -j ${target}`).length;
}

/**
 * The upstream namespace. Its loopback holds 169.254.169.254, 198.18.0.1
 * and 198.18.1.1, each answering "upstream" on TCP port 80; a veth links it
 * to the host, and a routing table used only for packets arriving on the
 * given bridges sends those addresses there.
 */
export function startUpstream(prefix, bridges) {
  const ns = `${prefix}-up`, vh = `${prefix}-u0`, vn = `${prefix}-u1`;
  const table = String(20000 + Math.floor(Math.random() * 9000));
  const pref = Number(table);
  const o = 4 * (1 + Math.floor(Math.random() * 60));
  const host = `198.51.100.${o + 1}`, peer = `198.51.100.${o + 2}`;
  const up = { ns, vh, table, prefs: [], listener: null };
  try {
    sh('ip', ['netns', 'add', ns]);
    sh('ip', ['link', 'add', vh, 'type', 'veth', 'peer', 'name', vn]);
    sh('ip', ['link', 'set', vn, 'netns', ns]);
    sh('ip', ['addr', 'add', `${host}/30`, 'dev', vh]);
    sh('ip', ['link', 'set', vh, 'up']);
    sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    sh('ip', ['-n', ns, 'addr', 'add', `${peer}/30`, 'dev', vn]);
    sh('ip', ['-n', ns, 'link', 'set', vn, 'up']);
    for (const a of ['169.254.169.254', '198.18.0.1', '198.18.1.1']) sh('ip', ['-n', ns, 'addr', 'add', `${a}/32`, 'dev', 'lo']);
    sh('ip', ['-n', ns, 'route', 'add', 'default', 'via', host]);
    sh('ip', ['route', 'add', '169.254.169.254/32', 'via', peer, 'dev', vh, 'table', table]);
    sh('ip', ['route', 'add', '198.18.0.0/23', 'via', peer, 'dev', vh, 'table', table]);
    bridges.forEach((b, i) => {
      sh('ip', ['rule', 'add', 'iif', b, 'lookup', table, 'pref', String(pref + i)]);
      up.prefs.push(String(pref + i));
    });
    up.listener = spawn('ip', ['netns', 'exec', ns, 'socat', 'TCP-LISTEN:80,fork,reuseaddr', 'SYSTEM:echo upstream'], { stdio: 'ignore' });
  } catch (e) {
    stopUpstream(up);
    throw e;
  }
  return up;
}

export function stopUpstream(up) {
  if (!up) return;
  if (up.listener) up.listener.kill('SIGKILL');
  for (const p of up.prefs) quiet('ip', ['rule', 'del', 'pref', p]);
  quiet('ip', ['route', 'flush', 'table', up.table]);
  quiet('ip', ['link', 'del', up.vh]);
  quiet('ip', ['netns', 'del', up.ns]);
}

/**
 * Removes the prefix's networks and its chains, and first any container
 * left with its sandbox label (the stack's label_prefix is the prefix too,
 * so these are the stack's own: a failed assertion can leave one).
 */
export function removeOwn(prefix) {
  const left = (quiet('docker', ['ps', '-aq', '--filter', `label=${prefix}.sandbox`]) || '').trim().split('\n').filter(Boolean);
  if (left.length) quiet('docker', ['rm', '-f', '-v', ...left]);
  for (const m of ['isolated', 'internet']) {
    for (let i = 0; i < 20; i++) {
      const ids = (quiet('docker', ['network', 'ls', '-q', '--filter', `name=^${prefix}-${m}$`]) || '').trim();
      if (!ids) break;
      if (quiet('docker', ['network', 'rm', `${prefix}-${m}`]) !== null) break;
      execFileSync('sleep', ['0.5']);
    }
  }
  const c = chains(prefix);
  for (const [from, to] of [['INPUT', c.input], ['DOCKER-USER', c.forward], ['FORWARD', c.forward]])
    while (quiet('iptables', ['-w', '5', '-D', from, '-j', to]) !== null);
  for (const ch of [c.input, c.forward]) {
    quiet('iptables', ['-w', '5', '-F', ch]);
    quiet('iptables', ['-w', '5', '-X', ch]);
  }
}

/** The gateway (host) address of a Docker network. */
export function gateway(name) {
  return sh('docker', ['network', 'inspect', '-f', '{{range .IPAM.Config}}{{.Gateway}}{{end}}', name]).trim();
}

/** The host's IPv4 addresses other than loopback. */
export function hostAddresses() {
  // once each: two interfaces may hold one address (a bridge left behind by
  // a dockerd that was killed holds the subnet docker0 took again)
  return [...new Set(sh('ip', ['-4', '-o', 'addr', 'show']).split('\n')
    .map((l) => /inet (\d+\.\d+\.\d+\.\d+)\//.exec(l)?.[1]).filter((a) => a && !a.startsWith('127.')))];
}

// One line per target: "open T", "refused T" or "dropped T" (timed out or
// unreachable), all tried at once, 2 s each. busybox sh and nc.
export const tryScript = (targets) =>
  `for t in ${targets.join(' ')}; do (h=\${t%:*}; p=\${t##*:}; o=$(nc -w 2 "$h" "$p" </dev/null 2>&1); r=$?; ` +
  'case $r:$o in 0:*) echo "open $t";; *refused*) echo "refused $t";; *) echo "dropped $t";; esac) & done; wait';

/** Parses tryScript's output into { target: 'open'|'refused'|'dropped' }. */
export function parseTries(stdout) {
  const m = {};
  for (const l of stdout.trim().split('\n')) {
    const [k, t] = l.split(' ');
    if (t) m[t] = k;
  }
  return m;
}
