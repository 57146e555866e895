#!/usr/bin/env bash
# One sandpit stack in one folder: redis-server (unless REDIS_URL is set),
# sandpitd (FastCGI on a unix socket), sandpit-stream (the /sandbox-exec
# WebSocket daemon, on its own unix socket) and nginx (TLS on a loopback port).
# Used by `make up` (DIR = state/) and by every API test (DIR = a temp dir).
#
#   deploy/stack.sh start DIR [--port N]   start; N free loopback port if absent
#   deploy/stack.sh stop DIR               stop what start started; idempotent
#
# Quiet on success; on failure prints what failed with the log tail, and
# stops whatever it had started.
#
# Environment:
#   SANDPIT_BIN          folder with sandpitd, sandpit-stream and sandpit (default REPO/build)
#   SANDPIT_WEB          the dashboard's built files nginx serves at / (default BIN/web)
#   REDIS_URL            use this Redis instead of starting one in DIR
#                        (none is started either when SANDPIT_EXTRA_CONF sets
#                        redis_sentinels: the workers find the master there)
#   SANDPIT_INSTANCES    sandpitd instances behind one nginx upstream (default
#                        1); instance i > 1 uses sandpitd-i.{conf,sock,pid,log}
#   SANDPIT_LOCAL_IMAGES 1 (default): map the templates to the test fixtures
#                        (sandpit-test/*, tests/images/build.sh) that most
#                        test files use, and allow any sandpit-test/* image
#                        (image_allow); 0: no mapping, the built-in defaults:
#                        the real template images sandpit/* (images/build.sh;
#                        make up and tests/api/templates.test.mjs use these)
#   SANDPIT_EXTRA_CONF   more "key = value" lines appended to sandpitd.conf
#                        (disk_dir is DIR/disk unless these set one)
#   SANDPIT_RUN_LABEL    one more container_label pair (KEY=VALUE; tests/run.sh
#                        sets one per run to remove only its own containers)
#                        Every stack labels its containers sandpit-stack=<DIR's
#                        name> too (container_label), so one stack's containers
#                        can be told from another's on a shared dockerd.
#   SANDPIT_DOCKER_HOST  docker_host (default unix:///var/run/docker.sock)
#   SANDPIT_RATE         per-key request rate at nginx (default 50r/s)
#   SANDPIT_BURST        requests allowed above the rate at once (default 100)
#                        (sandpitd charges each MCP tool call at the same rate)
#   SANDPIT_CONN_PER_KEY API requests one key may have in progress at once at
#                        nginx (default 256; more get 429)
#   SANDPIT_REQUEST_TIMEOUT  seconds a request's line, headers and body
#                        may take at nginx, all together (default 60; 1 to
#                        3600); more: 408 and closed (nginx/reqtime.conf).
#                        Needs nginx's Lua module (libnginx-mod-http-lua),
#                        loaded from SANDPIT_NGINX_MODULES (default
#                        /usr/lib/nginx/modules): without it start refuses
#   SANDPIT_LOCAL_ORG    organization of the local socket DIR/local/sandpit.sock
#                        (default "default"; trusted through the 0700 folder)
#   SANDPIT_METRICS_ALLOW addresses/CIDRs (space separated) that may read
#                        /metrics without a key (default 127.0.0.1)
#   SANDPIT_AUTH_CACHE_PARENT  a tmpfs folder for nginx's /_auth answer cache
#                        (default /dev/shm; its entries name API keys)
#   SANDPIT_NGINX_EXTRA  an nginx snippet (file) rendered like nginx/*.conf and
#                        included in the TLS server (benchmarks add locations)
#
# DIR after start:
#   env            SANDPIT_URL, SANDPIT_KEY, SANDPIT_CONFIG, SANDPIT_DIR,
#                  SANDPIT_CA, SANDPIT_PORT (KEY=value lines, mode 0600)
#   sandpitd.conf  sandpitd.sock  sandpitd.pid  sandpitd.log  data.key
#   sandpitd-2.conf sandpitd-2.sock ... (SANDPIT_INSTANCES > 1)
#   stream.sock  sandpit-stream.pid  sandpit-stream.log
#   tls/cert.pem tls/key.pem   redis.sock redis.pid redis.log redis/
#   nginx.conf nginx.pid nginx/{error.log,access.log,conf/,tmp/}
#   auth-cache.path  where nginx's /_auth answers are cached (a tmpfs folder)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${SANDPIT_BIN:-$REPO/build}
BIN=$(cd "$BIN" 2>/dev/null && pwd || echo "$BIN")

usage() {
	echo "usage: $0 start DIR [--port N] | stop DIR" >&2
	exit 2
}

say() { echo "stack.sh: $*" >&2; }

# extra_sets KEY: whether SANDPIT_EXTRA_CONF has a line setting KEY
extra_sets() {
	printf '%s\n' "${SANDPIT_EXTRA_CONF:-}" | grep -q "^[[:space:]]*$1[[:space:]]*="
}

# tail_log FILE...: show the end of each log that exists.
tail_log() {
	local f
	for f in "$@"; do
		[ -s "$f" ] || continue
		echo "---- tail of $f" >&2
		tail -n 40 "$f" >&2
	done
}

# pid_alive PIDFILE NAME: the pid in PIDFILE runs a program whose command
# line mentions NAME (guards against a reused pid).
pid_alive() {
	local pid
	[ -s "$1" ] || return 1
	pid=$(tr -dc 0-9 <"$1")
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$2"
}

# running PID: the process exists and is not a zombie.
running() {
	kill -0 "$1" 2>/dev/null || return 1
	! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# stop_pid PIDFILE NAME SIGNAL WAIT_S [GROUP]: send SIGNAL, wait up to
# WAIT_S seconds, then SIGKILL. GROUP=1 also kills the process group left
# behind (the pid was started with setsid, so it leads its own group).
stop_pid() {
	local file=$1 name=$2 sig=$3 wait_s=$4 group=${5:-0} pid i child
	if pid_alive "$file" "$name"; then
		pid=$(tr -dc 0-9 <"$file")
		kill "-$sig" "$pid" 2>/dev/null || true
		for ((i = 0; i < wait_s * 10; i++)); do
			running "$pid" || break
			sleep 0.1
		done
		if running "$pid"; then
			say "$name (pid $pid) did not stop within ${wait_s}s; SIGKILL"
			# its children (nginx workers) would outlive it
			for child in $(pgrep -P "$pid" 2>/dev/null || true); do
				kill -KILL "$child" 2>/dev/null || true
			done
			kill -KILL "$pid" 2>/dev/null || true
		fi
		if [ "$group" = 1 ]; then
			kill -KILL -- "-$pid" 2>/dev/null || true
		fi
	fi
	rm -f "$file"
}

cmd_stop() {
	local dir=$1
	[ -d "$dir" ] || return 0
	dir=$(cd "$dir" && pwd)
	# sandpit-stream first: it closes its WebSockets with 1001 (a running
	# command gets 10 s, then is killed), which nginx's graceful stop would
	# otherwise wait for. Then nginx (no new requests), the app, its store.
	stop_pid "$dir/sandpit-stream.pid" sandpit-stream TERM 25 1
	rm -f "$dir/stream.sock"
	stop_pid "$dir/nginx.pid" nginx QUIT 10
	stop_pid "$dir/sandpitd.pid" sandpitd TERM 15 1
	rm -f "$dir/sandpitd.sock" "$dir/sandpitd-fast.sock"
	local p
	for p in "$dir"/sandpitd-*.pid; do
		[ -e "$p" ] || continue
		stop_pid "$p" sandpitd TERM 15 1
		rm -f "${p%.pid}.sock" "${p%.pid}-fast.sock"
	done
	if [ -f "$dir/redis.started" ]; then
		stop_pid "$dir/redis.pid" redis-server TERM 10
		rm -f "$dir/redis.started" "$dir/redis.sock"
	fi
	# nginx leaves its unix listener behind when it dies or fails to bind
	# another listener; a stale one would fail every later start.
	rm -f "$dir/local/sandpit.sock"
	if [ -s "$dir/auth-cache.path" ]; then
		p=$(cat "$dir/auth-cache.path")
		case $p in */sandpit-auth.??????) rm -rf -- "$p" ;; esac
		rm -f "$dir/auth-cache.path"
	fi
}

# free_port: a free loopback TCP port.
free_port() {
	if command -v node >/dev/null; then
		node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
	elif command -v python3 >/dev/null; then
		python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'
	else
		say "need node or python3 to pick a free port (or pass --port)"
		return 1
	fi
}

# wait_for SECONDS CMD...: retry CMD every 0.1 s.
wait_for() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 10; i++)); do
		"$@" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# On a failed start, stop what was started (DIR is set by cmd_start).
on_start_exit() {
	local rc=$?
	[ $rc -ne 0 ] && cmd_stop "$DIR"
	return $rc
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# port_taken_msg PORT: names what holds 127.0.0.1:PORT (or *:PORT).
port_taken_msg() {
	local who=""
	if command -v ss >/dev/null; then
		who=$(ss -Hltnp "sport = :$1" 2>/dev/null | sed -n 's/.*users:(("\([^"]*\)",pid=\([0-9]*\).*/\1 (pid \2)/p' | head -n 1)
	fi
	echo "port $1 on 127.0.0.1 is already in use${who:+ by $who}: stop that program or choose another port (SANDPIT_PORT=N make up, or --port N)"
}

cmd_start() {
	local dir=$1 port=$2 auto_port=0
	case "$dir" in
	*[!A-Za-z0-9._/-]*) say "DIR may hold only A-Z a-z 0-9 . _ / -: $dir"; exit 2 ;;
	esac
	mkdir -p "$dir"
	chmod 700 "$dir"
	dir=$(cd "$dir" && pwd)
	DIR=$dir
	if [ ${#dir} -gt 90 ]; then
		say "DIR path too long for unix sockets (${#dir} > 90 chars): $dir"
		exit 2
	fi
	if pid_alive "$dir/sandpitd.pid" sandpitd || pid_alive "$dir/nginx.pid" nginx ||
		pid_alive "$dir/sandpitd-2.pid" sandpitd ||
		pid_alive "$dir/sandpit-stream.pid" sandpit-stream; then
		say "a stack is already running in $dir (run: $0 stop $dir)"
		exit 1
	fi
	for b in sandpitd sandpit-stream sandpit; do
		if [ ! -x "$BIN/$b" ]; then
			say "$BIN/$b not found: build it first (make), or set SANDPIT_BIN"
			exit 1
		fi
	done
	command -v nginx >/dev/null || { say "nginx not installed (run deploy/install-deps.sh)"; exit 1; }
	if [ -z "$port" ]; then
		auto_port=1
		port=$(free_port)
	fi
	case "$port" in '' | *[!0-9]*) say "bad port: $port"; exit 2 ;; esac
	# A port taken by another program fails here, before anything starts.
	if [ $auto_port -eq 0 ] && port_open "$port"; then
		say "$(port_taken_msg "$port")"
		exit 1
	fi

	# From here on a failure stops whatever was started.
	trap on_start_exit EXIT

	# nginx's settings that can fail, checked before anything starts:
	# the whole-request bound (nginx/reqtime.conf) and the header block's
	# share of it
	local req_timeout=${SANDPIT_REQUEST_TIMEOUT:-60} header_timeout load_modules="" m
	case $req_timeout in *[!0-9]* | "" | 0*) req_timeout=x ;; esac
	if [ "$req_timeout" = x ] || [ "$req_timeout" -gt 3600 ]; then
		say "SANDPIT_REQUEST_TIMEOUT must be a number of seconds, 1 to 3600"
		exit 1
	fi
	header_timeout=$((req_timeout < 30 ? req_timeout : 30))
	# nginx's Lua module (and NDK, which it needs) for that bound. No
	# fallback: without it nginx would bound each read of a body only.
	for m in ndk_http_module ngx_http_lua_module; do
		m=${SANDPIT_NGINX_MODULES:-/usr/lib/nginx/modules}/$m.so
		if [ ! -f "$m" ]; then
			say "nginx's Lua module is missing ($m): apt-get install libnginx-mod-http-lua (deploy/install-deps.sh --run); it bounds a request's whole time (SANDPIT_REQUEST_TIMEOUT)"
			exit 1
		fi
		load_modules="${load_modules}load_module $m; "
	done

	# --- secrets -------------------------------------------------------------
	if [ ! -s "$dir/data.key" ]; then
		(umask 077 && openssl rand -hex 32 >"$dir/data.key.tmp")
		mv "$dir/data.key.tmp" "$dir/data.key"
	fi
	chmod 600 "$dir/data.key"
	if [ ! -s "$dir/tls/cert.pem" ] || [ ! -s "$dir/tls/key.pem" ]; then
		mkdir -p "$dir/tls"
		chmod 700 "$dir/tls"
		if ! openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout "$dir/tls/key.pem" -out "$dir/tls/cert.pem" -days 825 \
			-subj "/CN=127.0.0.1" \
			-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
			>"$dir/tls/openssl.log" 2>&1; then
			say "openssl req failed"
			tail_log "$dir/tls/openssl.log"
			exit 1
		fi
		chmod 600 "$dir/tls/key.pem"
		rm -f "$dir/tls/openssl.log"
	fi

	# --- redis ---------------------------------------------------------------
	local redis_url="" instances=${SANDPIT_INSTANCES:-1}
	case $instances in [1-9] | [1-9][0-9]) ;; *) say "SANDPIT_INSTANCES must be 1..99"; exit 2 ;; esac
	if [ -n "${REDIS_URL:-}" ]; then
		redis_url=$REDIS_URL
	elif extra_sets redis_sentinels; then
		: # Sentinel names the master; the db (0) needs no redis_url
	else
		command -v redis-server >/dev/null || { say "redis-server not installed"; exit 1; }
		mkdir -p "$dir/redis"
		rm -f "$dir/redis.sock"
		touch "$dir/redis.started"
		if ! redis-server --port 0 --unixsocket "$dir/redis.sock" --unixsocketperm 700 \
			--dir "$dir/redis" --appendonly yes --daemonize yes \
			--pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >/dev/null 2>&1; then
			say "redis-server failed to start"
			tail_log "$dir/redis.log"
			exit 1
		fi
		redis_ping() { [ "$(redis-cli -s "$dir/redis.sock" ping 2>/dev/null)" = PONG ]; }
		if ! wait_for 10 redis_ping; then
			say "redis-server did not answer PING on $dir/redis.sock within 10 s"
			tail_log "$dir/redis.log"
			exit 1
		fi
		redis_url="unix://$dir/redis.sock"
	fi

	# --- sandpitd --------------------------------------------------------------
	# nginx's per-key rate, which sandpitd applies to each MCP tool call
	local rate=${SANDPIT_RATE:-50r/s} burst=${SANDPIT_BURST:-100} rate_per_min
	case $rate in
	[0-9]*r/s) rate_per_min=$((${rate%r/s} * 60)) ;;
	[0-9]*r/m) rate_per_min=${rate%r/m} ;;
	*) say "SANDPIT_RATE must look like 50r/s or 600r/m"; exit 1 ;;
	esac
	case $rate_per_min in *[!0-9]*) say "SANDPIT_RATE must look like 50r/s or 600r/m"; exit 1 ;; esac
	case $burst in *[!0-9]* | "") say "SANDPIT_BURST must be a number"; exit 1 ;; esac
	local conf=$dir/sandpitd.conf
	{
		echo "# written by deploy/stack.sh on every start; edits are lost"
		echo "listen = $dir/sandpitd.sock"
		echo "listen_mode = 0660"
		echo "workers_min = 2"
		echo "workers_max = 16"
		echo "max_requests = 1000"
		echo "rate_per_min = $rate_per_min"
		echo "rate_burst = $burst"
		echo "request_timeout = $req_timeout"
		[ -z "$redis_url" ] || echo "redis_url = $redis_url"
		echo "docker_host = ${SANDPIT_DOCKER_HOST:-unix:///var/run/docker.sock}"
		echo "data_key_file = $dir/data.key"
		echo "log_level = info"
		echo "network_prefix = sandpit"
		echo "stream_listen = $dir/stream.sock"
		echo "stream_workers = 1"
		if [ "${SANDPIT_LOCAL_IMAGES:-1}" != 1 ]; then
			echo "# templates: the built-in sandpit/* images (images/build.sh)"
		else
			echo "# the test fixtures (tests/images/build.sh), not the template images"
			local t img
			for t in base alpine python node bun deno go rust ruby java php; do
				case $t in
				python) img=sandpit-test/python:latest ;;
				alpine) img=sandpit-test/busybox:latest ;;
				*) img=sandpit-test/debian:latest ;;
				esac
				echo "template.$t = $img"
			done
			# the tests' own images (commits of the fixtures) are named
			# sandpit-test/...: the operator's allow-list, not a hole in it
			echo "image_allow = sandpit-test/*"
		fi
		echo "container_label = sandpit-stack=$(basename "$dir")${SANDPIT_RUN_LABEL:+ $SANDPIT_RUN_LABEL}"
		# the loop disks and the managed volumes' disks in the stack's own
		# folder (not the host's /var/lib/sandpit/disk): what a stack leaves
		# goes with it, and no stack counts another's against the floor
		extra_sets disk_dir || echo "disk_dir = $dir/disk"
		if [ -n "${SANDPIT_EXTRA_CONF:-}" ]; then
			echo "# from SANDPIT_EXTRA_CONF"
			printf '%s\n' "$SANDPIT_EXTRA_CONF"
		fi
	} >"$conf.tmp"
	mv "$conf.tmp" "$conf"
	chmod 600 "$conf"

	local out
	if ! out=$("$BIN/sandpitd" -t -c "$conf" 2>&1); then
		say "sandpitd rejected $conf:"
		echo "$out" >&2
		exit 1
	fi

	# Instance 1 is sandpitd.*, instance i > 1 sandpitd-i.*: the same
	# configuration but for its listen socket (workers are stateless).
	local i name app_servers="" fast_servers="" fast_backup=""
	for ((i = 1; i <= instances; i++)); do
		name=sandpitd
		[ $i -eq 1 ] || name=sandpitd-$i
		[ $i -eq 1 ] || sed "s|^listen = .*|listen = $dir/$name.sock|" "$conf" >"$dir/$name.conf"
		chmod 600 "$dir/$name.conf"
		rm -f "$dir/$name.sock"
		setsid "$BIN/sandpitd" -c "$dir/$name.conf" </dev/null >>"$dir/$name.log" 2>&1 &
		echo $! >"$dir/$name.pid"
		app_servers="$app_servers\n\t\tserver unix:$dir/$name.sock max_fails=0;"
		fast_servers="$fast_servers\n\t\tserver unix:$dir/$name-fast.sock max_fails=0;"
		fast_backup="$fast_backup\n\t\tserver unix:$dir/$name.sock max_fails=0 backup;"
	done
	fast_servers="$fast_servers$fast_backup"
	for ((i = 1; i <= instances; i++)); do
		name=sandpitd
		[ $i -eq 1 ] || name=sandpitd-$i
		sandpitd_up() { [ -S "$dir/$name.sock" ] || return 1; }
		if ! wait_for 15 sandpitd_up; then
			if pid_alive "$dir/$name.pid" sandpitd; then
				say "sandpitd did not create $dir/$name.sock within 15 s"
			else
				say "sandpitd exited during start-up"
			fi
			tail_log "$dir/$name.log"
			exit 1
		fi
	done

	# --- sandpit-stream (same configuration file) --------------------------------
	if ! out=$("$BIN/sandpit-stream" -t -c "$conf" 2>&1); then
		say "sandpit-stream rejected $conf:"
		echo "$out" >&2
		exit 1
	fi
	rm -f "$dir/stream.sock"
	setsid "$BIN/sandpit-stream" -c "$conf" </dev/null >>"$dir/sandpit-stream.log" 2>&1 &
	echo $! >"$dir/sandpit-stream.pid"
	stream_up() { [ -S "$dir/stream.sock" ] || return 1; }
	if ! wait_for 15 stream_up; then
		if pid_alive "$dir/sandpit-stream.pid" sandpit-stream; then
			say "sandpit-stream did not create $dir/stream.sock within 15 s"
		else
			say "sandpit-stream exited during start-up"
		fi
		tail_log "$dir/sandpit-stream.log"
		exit 1
	fi

	# --- nginx -------------------------------------------------------------------
	local nconf=$dir/nginx/conf user_line="# (not root: nginx keeps the caller's user)"
	local local_org=${SANDPIT_LOCAL_ORG:-default} conns=${SANDPIT_CONN_PER_KEY:-256}
	case $conns in *[!0-9]* | "" | 0) say "SANDPIT_CONN_PER_KEY must be a number > 0"; exit 1 ;; esac
	case $local_org in *[!a-z0-9_-]* | "") say "SANDPIT_LOCAL_ORG: lower-case letters, digits, - and _"; exit 1 ;; esac
	local metrics_allow="" a
	for a in ${SANDPIT_METRICS_ALLOW:-127.0.0.1}; do
		case $a in *[!0-9A-Fa-f.:/]*) say "SANDPIT_METRICS_ALLOW: addresses or CIDRs only: $a"; exit 1 ;; esac
		metrics_allow="${metrics_allow}allow $a; "
	done
	mkdir -p "$dir/nginx/tmp" "$dir/nginx/conf" "$dir/nginx/logs" "$dir/local"
	chmod 700 "$dir/local"
	# The /_auth answer cache: its entries name API keys, so RAM only
	# (tmpfs) and private; removed by stop.
	local auth_cache=""
	[ -s "$dir/auth-cache.path" ] && auth_cache=$(cat "$dir/auth-cache.path")
	if [ -z "$auth_cache" ] || [ ! -d "$auth_cache" ]; then
		if ! auth_cache=$(mktemp -d "${SANDPIT_AUTH_CACHE_PARENT:-/dev/shm}/sandpit-auth.XXXXXX"); then
			say "cannot make the auth cache folder under ${SANDPIT_AUTH_CACHE_PARENT:-/dev/shm} (a tmpfs; set SANDPIT_AUTH_CACHE_PARENT)"
			exit 1
		fi
		echo "$auth_cache" >"$dir/auth-cache.path"
	fi
	chmod 700 "$auth_cache"
	[ "$(id -u)" -eq 0 ] && user_line="user root root;"
	render() { # SRC DST
		sed -e "s|@DIR@|$dir|g" -e "s|@CONF@|$nconf|g" -e "s|@PORT@|$port|g" \
			-e "s|@RATE@|$rate|g" -e "s|@BURST@|$burst|g" -e "s|@LOCAL_ORG@|$local_org|g" \
			-e "s|@CONNS@|$conns|g" -e "s|@REQ_TIMEOUT@|$req_timeout|g" \
			-e "s|@HEADER_TIMEOUT@|$header_timeout|g" -e "s|@LOAD_MODULES@|$load_modules|g" \
			-e "s|@METRICS_ALLOW@|$metrics_allow|g" -e "s|@AUTH_CACHE@|$auth_cache|g" \
			-e "s|@WEB@|${SANDPIT_WEB:-$BIN/web}|g" -e "s|@USER@|$user_line|g" -e "s|^\([[:space:]]*\)@APP_SERVERS@|\1${app_servers#\\n\\t\\t}|" \
			-e "s|^\([[:space:]]*\)@FAST_SERVERS@|\1${fast_servers#\\n\\t\\t}|" \
			"$1" >"$2"
	}
	local f tries=0
	for f in "$REPO"/nginx/*.conf; do
		[ -e "$f" ] || continue
		render "$f" "$nconf/$(basename "$f")"
	done
	mkdir -p "$nconf/extra"
	rm -f "$nconf/extra/"*.conf
	[ -z "${SANDPIT_NGINX_EXTRA:-}" ] || render "$SANDPIT_NGINX_EXTRA" "$nconf/extra/extra.conf"
	local ngx=(nginx -e "$dir/nginx/error.log" -p "$dir/nginx/" -c "$dir/nginx.conf")
	# No stack runs in DIR (checked above), so a socket left here is stale.
	rm -f "$dir/local/sandpit.sock"
	while :; do
		# A taken port is named as such, before nginx spends 2.5 s retrying.
		if port_open "$port"; then
			if [ $auto_port -eq 1 ] && [ $tries -lt 3 ]; then
				tries=$((tries + 1))
				port=$(free_port)
				continue
			fi
			say "$(port_taken_msg "$port")"
			exit 1
		fi
		render "$REPO/nginx/sandpit.conf.tmpl" "$dir/nginx.conf"
		if ! out=$("${ngx[@]}" -t -q 2>&1); then
			say "nginx rejected $dir/nginx.conf:"
			echo "$out" >&2
			exit 1
		fi
		: >"$dir/nginx/start.log"
		if "${ngx[@]}" >"$dir/nginx/start.log" 2>&1 &&
			wait_for 10 pid_alive "$dir/nginx.pid" nginx &&
			wait_for 10 port_open "$port"; then
			break
		fi
		# An automatically picked port can be taken before nginx binds it.
		if [ $auto_port -eq 1 ] && [ $tries -lt 3 ] &&
			grep -q 'Address already in use' "$dir/nginx/start.log" "$dir/nginx/error.log" 2>/dev/null; then
			tries=$((tries + 1))
			port=$(free_port)
			continue
		fi
		local cause
		cause=$(sed -n 's/.*bind() to \(.*\) failed (\(.*\))$/\1 (\2)/p' \
			"$dir/nginx/start.log" 2>/dev/null | head -n 1)
		case $cause in
		"127.0.0.1:$port "*) say "nginx failed to start: $(port_taken_msg "$port")" ;;
		?*) say "nginx failed to start on 127.0.0.1:$port: cannot bind $cause" ;;
		*) say "nginx failed to start on 127.0.0.1:$port" ;;
		esac
		tail_log "$dir/nginx/start.log" "$dir/nginx/error.log"
		exit 1
	done
	rm -f "$dir/nginx/start.log"

	# --- owner key for org "default" ---------------------------------------------
	local key=""
	if [ -s "$dir/env" ]; then
		key=$(sed -n 's/^SANDPIT_KEY=//p' "$dir/env" | head -n 1)
	fi
	if [ -z "$key" ]; then
		if ! key=$("$BIN/sandpit" -c "$conf" keys create --org default --role owner 2>"$dir/keys.log"); then
			say "sandpit keys create failed"
			tail_log "$dir/keys.log" "$dir/sandpitd.log"
			exit 1
		fi
		key=$(printf '%s' "$key" | tr -d '\r\n')
		rm -f "$dir/keys.log"
		case "$key" in
		'' | *[!A-Za-z0-9._~+/=-]*)
			say "sandpit keys create printed no usable key: '$key'"
			exit 1
			;;
		esac
	fi

	(
		umask 077
		cat >"$dir/env.tmp" <<-ENV
			SANDPIT_URL=https://127.0.0.1:$port
			SANDPIT_KEY=$key
			SANDPIT_CONFIG=$conf
			SANDPIT_DIR=$dir
			SANDPIT_CA=$dir/tls/cert.pem
			SANDPIT_PORT=$port
		ENV
	)
	mv "$dir/env.tmp" "$dir/env"
	trap - EXIT
}

[ $# -ge 2 ] || usage
action=$1
dir=$2
shift 2
port=""
while [ $# -gt 0 ]; do
	case "$1" in
	--port) [ $# -ge 2 ] || usage; port=$2; shift 2 ;;
	--port=*) port=${1#--port=}; shift ;;
	*) usage ;;
	esac
done

case "$action" in
start) cmd_start "$dir" "$port" ;;
stop) cmd_stop "$dir" ;;
*) usage ;;
esac
