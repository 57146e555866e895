#!/usr/bin/env bash
# Integration test for the process manager (fcgi/pm.c): builds tests/pm/hello,
# runs it on a unix socket in a temporary folder and talks to it with the real
# FastCGI client cgi-fcgi (Debian libfcgi-bin). Every check polls for its
# condition with a bounded wait; none relies on a bare long sleep. The only
# fixed interval is the 3 s over which check 7 counts forks.
#
# Usage: tests/pm/test_pm.sh            (plain build)
#        SANITIZE=address,undefined tests/pm/test_pm.sh
# Never touches anything outside its mktemp folder; kills only the processes
# it started.
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/sandpit-pm.XXXXXX)
PASS=0
FAIL=0
MASTER=
SOCK=$T/hello.sock
LOG=$T/hello.log
CONF=$T/hello.conf

cleanup() {
	if [ -n "$MASTER" ] && kill -0 "$MASTER" 2>/dev/null; then
		kill -KILL "$MASTER" 2>/dev/null
		pkill -KILL -P "$MASTER" 2>/dev/null
	fi
	if [ "${KEEP:-0}" = 1 ] || [ "$FAIL" -gt 0 ]; then
		echo "logs kept in $T"
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT

check() { # check NAME STATUS [DETAIL]
	if [ "$2" = 0 ]; then
		echo "ok   - $1${3:+ ($3)}"
		PASS=$((PASS + 1))
	else
		echo "FAIL - $1${3:+ ($3)}"
		FAIL=$((FAIL + 1))
	fi
}

# ---- build ------------------------------------------------------------------
CC=${CC:-gcc}
WARN="-std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wno-format-nonliteral -Wno-format-truncation"
FLAGS="-O2 -g -I$ROOT"
LDFLAGS=
if [ -n "${SANITIZE:-}" ]; then
	FLAGS="$FLAGS -fsanitize=$SANITIZE -fno-omit-frame-pointer -fno-sanitize-recover=all"
	LDFLAGS="-fsanitize=$SANITIZE"
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
fi
mkdir -p "$T/obj"
build_failed=0
# The same warnings as the Makefile, as errors.
for src in fcgi/pm.c tests/pm/hello.c common/log.c common/util.c common/config.c common/metrics.c common/buf.c; do
	# shellcheck disable=SC2086 # WARN and FLAGS are lists of flags
	$CC $WARN -Werror $FLAGS -c "$ROOT/$src" -o "$T/obj/$(basename "$src" .c).o" || build_failed=1
done
# shellcheck disable=SC2086 # LDFLAGS is a list of flags
$CC $LDFLAGS -o "$T/hello" "$T"/obj/*.o -lfcgi -lsodium -ljson-c || build_failed=1
check "build hello${SANITIZE:+ (-fsanitize=$SANITIZE)}" $build_failed
if [ $build_failed != 0 ]; then
	echo "0 passed, 1 failed"
	exit 1
fi
command -v cgi-fcgi >/dev/null || { echo "cgi-fcgi missing (apt-get install libfcgi-bin)"; exit 1; }

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/data.key"
chmod 600 "$T/data.key"

# ---- helpers ----------------------------------------------------------------
write_conf() { # write_conf key=value ... (over the test defaults)
	{
		echo "listen = $SOCK"
		echo "data_key_file = $T/data.key"
		echo "log_level = info"
		echo "workers_reserved = 0" # check 8 has them
		local kv
		for kv in "$@"; do echo "${kv%%=*} = ${kv#*=}"; done
	} >"$CONF"
}

req() { # req [QUERY_STRING [SOCKET]] -> prints the body line "hello PID"
	env -i PATH="$PATH" REQUEST_METHOD=GET SCRIPT_NAME=/ QUERY_STRING="${1:-}" \
		SERVER_PROTOCOL=HTTP/1.1 timeout 30 cgi-fcgi -bind -connect "${2:-$SOCK}" </dev/null 2>/dev/null |
		tr -d '\r' | grep -E '^hello [0-9]+$'
}

wait_until() { # wait_until SECONDS CMD... : polls CMD every 0.1 s, bounded
	local end=$(( $(date +%s%N) / 1000000 + $1 * 1000 ))
	shift
	while :; do
		"$@" && return 0
		[ $(( $(date +%s%N) / 1000000 )) -ge $end ] && return 1
		sleep 0.1
	done
}

workers() { # live (non-zombie) children of the master, one pid a line
	ps -o pid=,stat= --ppid "$MASTER" 2>/dev/null | awk '$2 !~ /^Z/ {print $1}' | sort -n
}
nworkers() { workers | wc -l; }
nworkers_is() { [ "$(nworkers)" -eq "$1" ]; }
answers() { req "" >/dev/null; }
log_has() { grep -q -- "$1" "$LOG"; }

RUN=0
start_hello() { # start_hello [ENV=VALUE...]; each run logs to its own file
	RUN=$((RUN + 1))
	LOG=$T/hello.$RUN.log
	env "$@" "$T/hello" "$CONF" 2>>"$LOG" &
	MASTER=$!
}

stop_hello() { # SIGTERM and wait for the master; returns its exit status
	local rc
	[ -n "$MASTER" ] || return 0
	kill -TERM "$MASTER" 2>/dev/null
	if ! wait_until 15 master_gone; then
		kill -KILL "$MASTER" 2>/dev/null
		pkill -KILL -P "$MASTER" 2>/dev/null
	fi
	wait "$MASTER"
	rc=$?
	MASTER=
	return $rc
}
master_gone() { ! kill -0 "$MASTER" 2>/dev/null || [ "$(ps -o stat= -p "$MASTER")" = Z ]; }

# ---- 1: a request is answered -------------------------------------------------
write_conf workers_min=2 workers_max=4
start_hello
wait_until 10 answers
out=$(req "")
pid=${out#hello }
[ -n "$out" ] && workers | grep -qx "$pid"
check "1 request answered by a worker" $? "$out; workers: $(workers | tr '\n' ' ')"
[ "$(stat -c %a "$SOCK")" = 660 ]
check "1b socket mode is listen_mode" $? "$(stat -c %a "$SOCK")"

# ---- 1c/1d: a live socket is refused, a stale one replaced --------------------
"$T/hello" "$CONF" 2>"$T/second.log"
rc=$?
[ $rc != 0 ] && grep -q "socket in use" "$T/second.log" && answers
check "1c second master on a live socket refuses" $? "exit $rc: $(grep -o 'socket in use.*' "$T/second.log" | head -1)"
old=$(workers)
kill -KILL "$MASTER"
wait "$MASTER" 2>/dev/null
MASTER=
gone() { local p; for p in $old; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
wait_until 5 gone
gone_rc=$?
[ -S "$SOCK" ]
stale=$?
start_hello
wait_until 10 answers && log_has "removed stale socket"
check "1d master SIGKILLed: workers follow (PDEATHSIG), stale socket replaced" \
	$(( gone_rc + stale + $? ))
stop_hello

# ---- 2: a SIGKILLed worker is respawned ---------------------------------------
write_conf workers_min=2 workers_max=4
start_hello
wait_until 10 answers
wait_until 5 nworkers_is 2
victim=$(req "")
victim=${victim#hello }
kill -KILL "$victim"
respawned() { nworkers_is 2 && ! workers | grep -qx "$victim"; }
wait_until 5 respawned
r=$?
out=$(req "")
[ $r = 0 ] && [ -n "$out" ] && [ "${out#hello }" != "$victim" ] && log_has "worker $victim .*killed by signal 9"
check "2 SIGKILLed worker respawned, next request served" $? "killed $victim, now $(workers | tr '\n' ' '), answer: $out"
stop_hello

# ---- 3: grow under load, shrink when idle -------------------------------------
write_conf workers_min=2 workers_max=6 idle_timeout_s=2
start_hello
wait_until 10 answers
wait_until 5 nworkers_is 2
t0=$(date +%s%N)
clients=
for i in 1 2 3 4 5; do
	req "sleep=3" >"$T/grow.$i" &
	clients="$clients $!"
done
# shellcheck disable=SC2086 # clients is a list of pids
wait $clients # never a bare wait: the master is a child of this shell too
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
peak=$(cat "$T"/grow.* | sort -u | wc -l)
answered=$(cat "$T"/grow.* | grep -c hello)
[ "$answered" = 5 ] && [ "$peak" = 5 ] && [ $ms -lt 4500 ]
check "3a 5 concurrent sleep=3 requests on 2..6 workers finish together" $? \
	"$answered answered by $peak distinct workers in $ms ms; 2 workers alone would need 9000 ms"
n_after=$(nworkers)
t0=$(date +%s%N)
wait_until 10 nworkers_is 2
r=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $r = 0 ] && [ "$n_after" -gt 2 ] && log_has "shrinking the pool" && answers
check "3b pool shrinks back to workers_min after idle_timeout_s=2" $? "$n_after -> $(nworkers) workers in $ms ms"
stop_hello

# ---- 4: recycle after max_requests --------------------------------------------
write_conf workers_min=2 workers_max=2 max_requests=5
start_hello
wait_until 10 nworkers_is 2
first=$(workers)
: >"$T/recycle"
ok=0
for i in $(seq 12); do
	out=$(req "")
	[ -n "$out" ] && ok=$((ok + 1))
	echo "${out#hello }" >>"$T/recycle"
done
distinct=$(sort -u "$T/recycle" | grep -c .)
still=0
for p in $first; do workers | grep -qx "$p" && still=$((still + 1)); done
[ $ok = 12 ] && [ "$distinct" -ge 3 ] && log_has "recycled after max_requests"
check "4 max_requests=5: 12 requests served by recycled workers" $? \
	"$ok/12 answered, $distinct distinct pids, $still of the first 2 still alive"
stop_hello

# ---- 5: SIGHUP with a broken then a valid config ------------------------------
write_conf workers_min=2 workers_max=4
start_hello
wait_until 10 answers
wait_until 5 nworkers_is 2
before=$(workers)
cp "$CONF" "$T/good.conf"
echo "workers_min = banana" >>"$CONF"
kill -HUP "$MASTER"
wait_until 5 log_has "configuration reload failed, keeping the old one"
r=$?
[ $r = 0 ] && answers && [ "$(workers)" = "$before" ]
check "5a SIGHUP with a broken config keeps serving with the same workers" $? \
	"$(grep -o 'configuration reload failed.*' "$LOG" | head -1)"
cp "$T/good.conf" "$CONF"
sed -i 's/^workers_min = 2$/workers_min = 3/' "$CONF"
kill -HUP "$MASTER"
replaced() {
	local p
	nworkers_is 3 || return 1
	for p in $before; do workers | grep -qx "$p" && return 1; done
	return 0
}
wait_until 5 replaced
r=$?
[ $r = 0 ] && answers && log_has "configuration reloaded"
# shellcheck disable=SC2086,SC2116 # echo joins the lines of before
check "5b SIGHUP with a valid config (workers_min 2->3) replaces every worker" $? \
	"before: $(echo $before), after: $(workers | tr '\n' ' ')"
stop_hello

# ---- 6: SIGTERM drains the request in flight ----------------------------------
write_conf workers_min=2 workers_max=4
start_hello
wait_until 10 answers
req "sleep=3" >"$T/drain.out" &
client=$!
wait_until 5 log_has "serving sleep=3"
t0=$(date +%s%N)
kill -TERM "$MASTER"
# shellcheck disable=SC2016 # eval expands it, each try
wait_until 1 eval '[ ! -e "$SOCK" ]'
unlinked=$?
wait $client
out=$(cat "$T/drain.out")
wait_until 10 master_gone
wait "$MASTER"
rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
MASTER=
[ -n "$out" ] && [ $rc = 0 ] && [ ! -e "$SOCK" ] && [ $unlinked = 0 ] && [ $ms -lt 6000 ]
check "6 SIGTERM: in-flight request answered, master exits 0, socket gone" $? \
	"answer '$out', exit $rc after $ms ms"

# ---- 6b: drain_timeout_s bounds the drain -------------------------------------
write_conf workers_min=1 workers_max=2 drain_timeout_s=1
start_hello
wait_until 10 answers
req "sleep=20" >/dev/null &
client=$!
wait_until 5 log_has "serving sleep=20"
t0=$(date +%s%N)
kill -TERM "$MASTER"
wait_until 10 master_gone
wait "$MASTER"
rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
MASTER=
wait $client 2>/dev/null
[ $rc = 0 ] && [ $ms -lt 3000 ] && log_has "SIGKILL"
check "6b drain_timeout_s=1: a stuck worker is SIGKILLed, master exits 0" $? "exit $rc after $ms ms"

# ---- 7: a crash loop backs off ------------------------------------------------
write_conf workers_min=2 workers_max=4 crash_limit=3 crash_window_s=10
start_hello HELLO_CRASH=1
wait_until 5 log_has "worker .* started"
sleep 3
forks=$(grep -c "worker .* started" "$LOG")
[ "$forks" -ge 2 ] && [ "$forks" -le 12 ] && log_has "backing off"
check "7 crash loop backs off" $? \
	"$forks forks in ~3 s (without back-off: ~900 measured); $(grep -o 'crashes within.*' "$LOG" | tail -1)"
stop_hello
check "7b master drains and exits 0 out of a crash loop" $?

# ---- 8: reserved workers answer while every pooled worker is busy ---------------
write_conf workers_min=1 workers_max=2 workers_reserved=1
start_hello
wait_until 10 answers
FAST=$T/hello-fast.sock
req "sleep=6" >/dev/null &
c1=$!
req "sleep=6" >/dev/null &
c2=$!
wait_until 5 sh -c "[ \$(grep -c 'serving sleep=6' '$LOG') -ge 2 ]"
t0=$(date +%s%N)
out=$(req "" "$FAST")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
wait $c1 $c2
[ -S "$FAST" ] && [ -n "$out" ] && [ $ms -lt 2000 ] && log_has "started (slot [0-9]*, reserved)"
check "8 a reserved worker on listen_fast answers while both pooled workers sleep" $? \
	"answer '$out' in $ms ms"
stop_hello

# ---- sanitizer reports --------------------------------------------------------
if [ -n "${SANITIZE:-}" ]; then
	! grep -h -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$T"/*.log
	check "no sanitizer reports in any log" $?
fi

echo "$PASS passed, $FAIL failed"
[ $FAIL = 0 ]
