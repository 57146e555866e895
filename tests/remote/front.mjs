// A recording front for one test "remote" Docker server: listens on a unix
// socket, passes every byte on to dockerd's socket both ways, and appends
// one line per HTTP request it sees going to dockerd ("N METHOD PATH", N
// the connection's number) and one per connection ("N accept") to LOG.
// tests/remote/hosts.sh puts one behind socat (TLS) and one behind sshd
// (ssh), so a test can tell which transport carried a request.
//
//   node tests/remote/front.mjs LISTEN_SOCKET LOG [DOCKER_SOCKET]
import fs from 'node:fs';
import net from 'node:net';

const [listen, log, target = '/var/run/docker.sock'] = process.argv.slice(2);
if (!listen || !log) {
  process.stderr.write('usage: front.mjs LISTEN_SOCKET LOG [DOCKER_SOCKET]\n');
  process.exit(2);
}
fs.rmSync(listen, { force: true });
const out = fs.openSync(log, 'a');
const note = (line) => fs.writeSync(out, `${line}\n`);
const REQ = /(GET|POST|PUT|DELETE|HEAD) (\/\S*) HTTP\/1\.[01]\r\n/g;
let conns = 0;

// Half-open both ways: when one side ends its sending, the other may still
// have bytes to deliver (Docker's tail of an exec stream after the client
// is done sending), so an end is passed on as an end (pipe), never as a
// destroy, which would drop what is still buffered for the slower reader.
net.createServer({ allowHalfOpen: true }, (client) => {
  const n = ++conns;
  note(`${n} accept`);
  const docker = net.connect({ path: target, allowHalfOpen: true });
  let carry = '';
  client.on('data', (chunk) => {
    // a request line split over two reads is found in carry + chunk; only
    // matches that end in the new chunk are new
    const text = carry + chunk.toString('latin1');
    for (const m of text.matchAll(REQ)) if (m.index + m[0].length > carry.length) note(`${n} ${m[1]} ${m[2]}`);
    carry = text.slice(-512);
  });
  client.pipe(docker);
  docker.pipe(client);
  const end = () => { client.destroy(); docker.destroy(); };
  client.on('error', end);
  docker.on('error', end);
}).listen(listen, () => fs.chmodSync(listen, 0o600));
process.on('SIGTERM', () => process.exit(0));
