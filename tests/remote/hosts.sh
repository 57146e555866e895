#!/usr/bin/env bash
# Exposes this machine's dockerd as two "remote" Docker servers on loopback,
# for the scale-out tests and the ssh pooling benchmark:
#   tcp+TLS  socat with a client-certificate check in front of the socket
#   ssh      an sshd on a loopback port; `docker system dial-stdio` runs there
# Neither reaches dockerd's socket directly: each goes through its own
# recording front (tests/remote/front.mjs), which logs every request to
# DIR/tls-front.log or DIR/ssh-front.log, so a test can tell which transport
# carried it; DIR/ssh-commands.log has the command of every ssh session.
# Certificates and keys are made here, in DIR, and, for the refusal tests,
# a second CA with a client certificate it signed (other-*), and a
# known_hosts with another host key (other_known_hosts).
#
#   tests/remote/hosts.sh start DIR    writes DIR/env (TLS_PORT, SSH_PORT, file paths)
#   tests/remote/hosts.sh stop DIR
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cmd=${1:-}
dir=${2:-}
# shellcheck disable=SC2015 # the usage when either is empty
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

free_port() {
	node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

stop() {
	local f
	for f in "$dir/socat.pid" "$dir/sshd.pid" "$dir/tls-front.pid" "$dir/ssh-front.pid"; do
		# shellcheck disable=SC2015 # || true: neither failing is an error
		[ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
		rm -f "$f"
	done
	# ssh masters started for this dir's servers, and their short folder
	if [ -L "$dir/ctl-link" ]; then
		local ctl
		ctl=$(readlink "$dir/ctl-link")
		pkill -f "ControlPath=$ctl/" 2>/dev/null || true
		rm -rf "$ctl" "$dir/ctl-link"
	fi
}

case $cmd in
stop)
	stop
	exit 0
	;;
start) ;;
*)
	echo "usage: $0 start|stop DIR" >&2
	exit 2
	;;
esac

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
cd "$dir"
q() { "$@" >/dev/null 2>&1; }

# --- TLS: a CA, a server certificate for 127.0.0.1, a client certificate
q openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=sandpit-test-ca -keyout ca.key -out ca.pem
q openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr
printf 'subjectAltName=IP:127.0.0.1\n' >server.ext
q openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext -out server.pem
q openssl req -newkey rsa:2048 -nodes -subj /CN=sandpit -keyout client.key -out client.csr
q openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out client.pem
# another CA and a client certificate it signed: refused by the front
q openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=sandpit-other-ca -keyout other-ca.key -out other-ca.pem
q openssl req -newkey rsa:2048 -nodes -subj /CN=sandpit -keyout other-client.key -out other-client.csr
q openssl x509 -req -in other-client.csr -CA other-ca.pem -CAkey other-ca.key -CAcreateserial -days 2 -out other-client.pem
chmod 600 ./*.key

# the recording fronts before dockerd's socket
for t in tls ssh; do
	: >"$t-front.log"
	setsid node "$HERE/front.mjs" "$dir/$t-front.sock" "$dir/$t-front.log" </dev/null >"$t-front.err" 2>&1 &
	echo $! >"$t-front.pid"
done
for _ in $(seq 1 50); do
	[ -S tls-front.sock ] && [ -S ssh-front.sock ] && break
	sleep 0.1
done

tls_port=$(free_port)
setsid socat "OPENSSL-LISTEN:$tls_port,bind=127.0.0.1,reuseaddr,fork,cert=server.pem,key=server.key,cafile=ca.pem,verify=1" \
	"UNIX-CONNECT:$dir/tls-front.sock" </dev/null >socat.log 2>&1 &
echo $! >socat.pid

# --- ssh: host key, client key, an sshd on loopback
rm -f hostkey hostkey.pub clientkey clientkey.pub otherhostkey otherhostkey.pub
ssh-keygen -q -t ed25519 -N '' -f hostkey
ssh-keygen -q -t ed25519 -N '' -f otherhostkey
ssh-keygen -q -t ed25519 -N '' -f clientkey
cp clientkey.pub authorized_keys
chmod 600 authorized_keys
mkdir -p /run/sshd
# every session's command is logged; `docker system dial-stdio` is served by
# the ssh front (dockerd's socket behind it), anything else runs as asked
cat >ssh-command.sh <<CMD
#!/bin/sh
printf '%s\\n' "\$SSH_ORIGINAL_COMMAND" >>"$dir/ssh-commands.log"
if [ "\$SSH_ORIGINAL_COMMAND" = "docker system dial-stdio" ]; then
	exec socat STDIO "UNIX-CONNECT:$dir/ssh-front.sock"
fi
exec sh -c "\$SSH_ORIGINAL_COMMAND"
CMD
chmod 755 ssh-command.sh
ssh_port=$(free_port)
ssh_down_port=$(free_port)
cat >sshd_config <<CONF
Port $ssh_port
ListenAddress 127.0.0.1
HostKey $dir/hostkey
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 200:30:400
MaxSessions 200
ForceCommand $dir/ssh-command.sh
CONF
/usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log"
echo "[127.0.0.1]:$ssh_port $(cat hostkey.pub)" >known_hosts
echo "[localhost]:$ssh_port $(cat otherhostkey.pub)" >other_known_hosts
echo "[127.0.0.1]:$ssh_down_port $(cat hostkey.pub)" >>known_hosts
# ssh's ControlPath is a unix socket (at most 107 bytes with its 40-byte
# %C name): keep the folder short whatever TMPDIR is
ctl=$(mktemp -d /tmp/sp-ssh.XXXXXX)
chmod 700 "$ctl"
ln -sfn "$ctl" "$dir/ctl-link"

for _ in $(seq 1 50); do
	curl -sf --cert client.pem --key client.key --cacert ca.pem "https://127.0.0.1:$tls_port/_ping" >/dev/null 2>&1 && break
	sleep 0.1
done
for _ in $(seq 1 50); do
	[ -s sshd.pid ] && break
	sleep 0.1
done

# shellcheck disable=SC2238 # the file is named env
cat >env <<ENV
TLS_PORT=$tls_port
TLS_CERT=$dir/client.pem
TLS_KEY=$dir/client.key
TLS_CA=$dir/ca.pem
SSH_PORT=$ssh_port
SSH_KEY=$dir/clientkey
SSH_KNOWN_HOSTS=$dir/known_hosts
SSH_CONTROL_DIR=$ctl
SSH_DOWN_PORT=$ssh_down_port
SSH_OTHER_KNOWN_HOSTS=$dir/other_known_hosts
OTHER_TLS_CA=$dir/other-ca.pem
OTHER_TLS_CERT=$dir/other-client.pem
OTHER_TLS_KEY=$dir/other-client.key
TLS_FRONT_LOG=$dir/tls-front.log
SSH_FRONT_LOG=$dir/ssh-front.log
SSH_COMMANDS_LOG=$dir/ssh-commands.log
ENV
