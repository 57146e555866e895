#!/usr/bin/env bash
# `make bench` (issue #8): one stack like the tests start (deploy/stack.sh in
# a temp dir, rate limit out of the way), then ONE table of sandpit against
# the raw Docker Engine API, measured in the same run, interleaved:
#   bench/bench latency    create→first exec, exec, files (sandpit vs raw)
#   bench/bench gvisor RT  the same create→first exec, and exec round trips, under runsc, when
#                          dockerd has a runsc runtime
#   wrk                    sandbox.one at 64 connections beside a FastCGI
#                          hello-world (bench/hello_fcgi) behind the same nginx
#   /proc                  resident memory: an idle worker, the stack with
#                          200 running sandboxes, dockerd
#   bench/bench create-v1  POST /v1/sandboxes beside sandbox.create, interleaved
#   bench/bench snapshots  createSnapshot of 100 MiB beside docker commit; restore →
#                          first exec beside a cold /v1 create → first exec
#   bench/preview.mjs      a preview URL's round trip and wrk throughput beside a
#                          direct request to the sandbox's address (busybox httpd)
#   bench/bench fastpath   /v1 exec `true` through the fast path beside raw docker
#                          exec; a warm pool's create → first exec through it
#   bench/bench transfer   /v1 raw writeFile/readFile 10 MiB, upload/download
#                          200 MiB (MB/s), beside the archive API
#   bench/interact.mjs     createProcess → first chunk on interact beside a raw
#                          docker exec create + hijacked start → first byte
# Prints the table and writes it to bench/results/latest.md with the core
# count, the date and the versions. Sample counts: BENCH_* (bench/bench.c),
# BENCH_SANDBOXES (200), BENCH_WRK_S (8 s per round, 2 rounds per side).
# shellcheck disable=SC1091 # $dir/env: written by deploy/stack.sh at run time
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
BIN=${SANDPIT_BIN:-$REPO/build}
N_SB=${BENCH_SANDBOXES:-200}
WRK_S=${BENCH_WRK_S:-8}
say() { echo "bench: $*" >&2; }

command -v wrk >/dev/null || { say "wrk not installed (bash deploy/install-deps.sh)"; exit 1; }
curl -sf --unix-socket /var/run/docker.sock http://d/_ping >/dev/null ||
	{ say "dockerd does not answer on /var/run/docker.sock"; exit 1; }
if ! docker image inspect sandpit-test/busybox:latest >/dev/null 2>&1; then
	say "building the local test images"
	bash tests/images/build.sh >/dev/null
fi

dir=$(mktemp -d /tmp/sandpit-bench.XXXXXX)
out=$dir/rows
cleanup() {
	local rc=$?
	# shellcheck disable=SC2015 # || true: neither failing is an error
	[ -s "$dir/hello.pid" ] && kill "$(cat "$dir/hello.pid")" 2>/dev/null || true
	if [ -s "$dir/ids" ]; then
		set -a; . "$dir/env"; set +a
		"$BIN/bench/bench" mem-down 4 <"$dir/ids" >/dev/null 2>&1 || true
	fi
	if [ "${BENCH_KEEP:-0}" = 1 ] || [ "$rc" -ne 0 ]; then
		cp "$dir/sandpitd.log" /tmp/sandpit-bench.sandpitd.log 2>/dev/null || true
		cp "$dir/nginx/error.log" /tmp/sandpit-bench.nginx-error.log 2>/dev/null || true
		say "logs kept: /tmp/sandpit-bench.sandpitd.log /tmp/sandpit-bench.nginx-error.log"
	fi
	bash deploy/stack.sh stop "$dir" || true
	# the raw side labels its containers; none should be left, but be sure;
	# and the stack's own (its warm pool outlives the stack's stop)
	docker ps -aq --filter label=sandpit-bench=true | xargs -r docker rm -f -v >/dev/null 2>&1 || true
	docker ps -aq --filter "label=sandpit-stack=$(basename "$dir")" | xargs -r docker rm -f -v >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT

# The hello-world location, in the same TLS server as the API.
cat >"$dir/bench-nginx.conf" <<'NGX'
location = /bench/hello {
	fastcgi_pass unix:@DIR@/hello.sock;
	include @CONF@/fastcgi_params.conf;
	fastcgi_param CONTENT_TYPE   $content_type;
	fastcgi_param CONTENT_LENGTH $content_length;
}
NGX
# A warm pool for template alpine on the internet network, when this sandpit
# has warm pools; the cold rows use the isolated network, which it does not
# serve, so they stay cold.
warm=""
grep -q 'warm_pool' common/config.h && warm="warm_pool = template=alpine size=4 network=internet"
SANDPIT_RATE=1000000r/s SANDPIT_BURST=1000000 SANDPIT_NGINX_EXTRA=$dir/bench-nginx.conf \
	SANDPIT_EXTRA_CONF=$warm SANDPIT_BIN=$BIN bash deploy/stack.sh start "$dir"
set -a; . "$dir/env"; set +a
: >"$out"

say "latency rows (sandpit and raw Docker, interleaved)"
"$BIN/bench/bench" latency >>"$out"

say "/v1 create beside sandbox.create (interleaved)"
"$BIN/bench/bench" create-v1 >>"$out"

say "/v1 snapshots: capture of 100 MiB beside docker commit, restore beside a cold create"
"$BIN/bench/bench" snapshots >>"$out"
say "/v1 raw files and streamed transfers beside the archive API (interleaved)"
"$BIN/bench/bench" transfer >>"$out"
say "/v1 createProcess → first chunk on interact beside a raw docker exec attach (interleaved)"
node bench/interact.mjs >>"$out"

# --- warm pool ----------------------------------------------------------------
if [ -n "$warm" ]; then
	say "warm-pool row"
	"$BIN/bench/bench" warm >>"$out"
else
	echo "| create → first exec \`true\`, warm pool | n/a (no warm pool configured) | | | | | p50 ≤ 100 ms and ≤ 0.35× cold raw | — |" >>"$out"
fi

# --- the fast path (issue 16) ----------------------------------------------------
say "fast-path rows: /v1 exec beside raw docker exec; a warm pool's create → first exec"
"$BIN/bench/bench" fastpath ${warm:+warm} >>"$out"

# --- gVisor ---------------------------------------------------------------------
rts=$(curl -sf --unix-socket /var/run/docker.sock http://d/info |
	jq -r '.Runtimes // {} | keys[]' 2>/dev/null || true)
rt=$(printf '%s\n' "$rts" | grep -x 'runsc-isolated' || printf '%s\n' "$rts" | grep -m1 '^runsc' || true)
if [ -n "$rt" ]; then
	say "gVisor row (runtime $rt)"
	"$BIN/bench/bench" gvisor "$rt" >>"$out"
else
	echo "| gVisor: create → first exec \`true\` | n/a (no runsc runtime registered with dockerd) | | | | | — | — |" >>"$out"
fi

# --- sandbox.one throughput beside the hello-world ceiling ------------------------
say "wrk: sandbox.one and the FastCGI hello-world, 64 connections"
id=$("$BIN/bench/bench" one-id)
one_url="$SANDPIT_URL/api/sandbox.one?sandboxId=$id"
hello_url="$SANDPIT_URL/bench/hello"
rps() { # URL SECONDS [wrk args]: requests per second
	local url=$1 s=$2
	shift 2
	wrk -t2 -c64 -d"${s}s" "$@" "$url" | awk '/^Requests\/sec:/ { print $2 }'
}
rps "$one_url" 3 -H "x-api-key: $SANDPIT_KEY" >/dev/null # warm-up: the pool grows
workers=$(pgrep -c -P "$(cat "$dir/sandpitd.pid")" || echo 2)
setsid "$BIN/bench/hello_fcgi" "$dir/hello.sock" "$workers" "$dir/hello.pid" \
	</dev/null >"$dir/hello.log" 2>&1 &
for _ in $(seq 50); do [ -S "$dir/hello.sock" ] && break; sleep 0.1; done
rps "$hello_url" 2 >/dev/null
one=0 hello=0
for _ in 1 2; do
	one=$(awk -v a="$one" -v b="$(rps "$one_url" "$WRK_S" -H "x-api-key: $SANDPIT_KEY")" 'BEGIN { print a + b }')
	hello=$(awk -v a="$hello" -v b="$(rps "$hello_url" "$WRK_S")" 'BEGIN { print a + b }')
done
# sandbox.one must really have answered 200 (not 429/503): check the log
# (499: wrk closing its connections at the end of a run, not an answer)
bad=$(awk '/sandbox.one/ && $0 !~ /" (200|499) / { n++ } END { print n + 0 }' "$dir/nginx/access.log")
awk -v o="$one" -v h="$hello" -v w="$workers" -v bad="$bad" 'BEGIN {
	o /= 2; h /= 2; r = o / h
	printf "| `sandbox.one` over HTTPS, wrk 64 connections (req/s; %d FastCGI workers each%s) | %.0f | | %.0f (hello-world) | | %.0f %% | ≥ 50 %% | %s |\n",
		w, bad ? sprintf("; %d non-200!", bad) : "", o, h, r * 100, (r >= 0.5 && !bad) ? "✓" : "✗"
}' >>"$out"
kill "$(cat "$dir/hello.pid")" 2>/dev/null || true
rm -f "$dir/hello.pid"

# --- /v1 getSandbox beside sandbox.one: the same record, the same core ------------
say "wrk: GET /v1/sandboxes/{id} and sandbox.one, 64 connections"
v1_url="$SANDPIT_URL/v1/sandboxes/$id"
rps "$v1_url" 2 -H "Authorization: Bearer $SANDPIT_KEY" >/dev/null
v1=0 one=0
for _ in 1 2; do
	v1=$(awk -v a="$v1" -v b="$(rps "$v1_url" "$WRK_S" -H "Authorization: Bearer $SANDPIT_KEY")" 'BEGIN { print a + b }')
	one=$(awk -v a="$one" -v b="$(rps "$one_url" "$WRK_S" -H "x-api-key: $SANDPIT_KEY")" 'BEGIN { print a + b }')
done
# only the measured GET of the sandbox: the other rows' POST .../snapshots
# (202) and DELETE (204) of /v1/sandboxes are in the same log
bad=$(awk -v u="\"GET /v1/sandboxes/$id " 'index($0, u) && $0 !~ /" (200|499) / { n++ } END { print n + 0 }' "$dir/nginx/access.log")
awk -v v="$v1" -v o="$one" -v bad="$bad" 'BEGIN {
	v /= 2; o /= 2; r = v / o
	printf "| `GET /v1/sandboxes/{id}` over HTTPS, wrk 64 connections (req/s%s) | %.0f | | %.0f (`sandbox.one`) | | %.0f %% | 95 to 105 %% | %s |\n",
		bad ? sprintf("; %d non-200!", bad) : "", v, o, r * 100, (r >= 0.95 && r <= 1.05 && !bad) ? "✓" : "✗"
}' >>"$out"

# --- preview URL (a published port) beside a direct request to the sandbox ---------
say "preview URL: round trip and wrk beside a direct request to the sandbox's address"
read -r pv_id pv_url pv_direct < <(node bench/preview.mjs setup)
node bench/preview.mjs latency "$pv_url" "$pv_direct" >>"$out"
rps "$pv_url" 2 >/dev/null
pv=0 direct=0
for _ in 1 2; do
	pv=$(awk -v a="$pv" -v b="$(rps "$pv_url" "$WRK_S")" 'BEGIN { print a + b }')
	direct=$(awk -v a="$direct" -v b="$(rps "$pv_direct" "$WRK_S")" 'BEGIN { print a + b }')
done
bad=$(awk '/\/p\/8080-/ && $0 !~ /" (200|499) / { n++ } END { print n + 0 }' "$dir/nginx/access.log")
awk -v p="$pv" -v d="$direct" -v bad="$bad" 'BEGIN {
	p /= 2; d /= 2; r = p / d
	printf "| preview URL `GET /` throughput, wrk 64 connections (req/s%s) | %.0f | | %.0f (direct to the sandbox) | | %.0f %% | — | — |\n",
		bad ? sprintf("; %d non-200!", bad) : "", p, d, r * 100
}' >>"$out"
node bench/preview.mjs down "$pv_id"

# --- resident memory ------------------------------------------------------------------
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
tree_pids() { # PID: it and its children
	echo "$1"
	pgrep -P "$1" || true
}
stack_pids() {
	local f
	for f in nginx.pid sandpitd.pid sandpit-stream.pid redis.pid; do
		[ -s "$dir/$f" ] && tree_pids "$(tr -dc 0-9 <"$dir/$f")"
	done
}
sum_kb() { local s=0 p; for p in "$@"; do s=$((s + $(rss_kb "$p"))); done; echo $s; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

sleep 2
mapfile -t wk < <(pgrep -P "$(cat "$dir/sandpitd.pid")")
idle_max=0
for p in "${wk[@]}"; do
	k=$(rss_kb "$p")
	[ "$k" -gt "$idle_max" ] && idle_max=$k
done
# shellcheck disable=SC2046
idle_stack=$(sum_kb $(stack_pids))
dockerd_pid=$(pgrep -xo dockerd || true)
dockerd_idle=$([ -n "$dockerd_pid" ] && rss_kb "$dockerd_pid" || echo 0)

say "creating $N_SB sandboxes"
"$BIN/bench/bench" mem-up "$N_SB" 4 >"$dir/ids"
sleep 2
# shellcheck disable=SC2046
full_stack=$(sum_kb $(stack_pids))
dockerd_full=$([ -n "$dockerd_pid" ] && rss_kb "$dockerd_pid" || echo 0)
mapfile -t wk2 < <(pgrep -P "$(cat "$dir/sandpitd.pid")")
busy_max=0
for p in "${wk2[@]}"; do
	k=$(rss_kb "$p")
	[ "$k" -gt "$busy_max" ] && busy_max=$k
done
running=$(grep -c . "$dir/ids" || true)
say "removing them"
"$BIN/bench/bench" mem-down 4 <"$dir/ids"
rm -f "$dir/ids"

idle_ok=$([ "$idle_max" -le 8192 ] && echo ✓ || echo ✗)
{
	echo "| resident memory: an idle sandpitd worker (largest of ${#wk[@]}; $(mib "$busy_max") MiB with $N_SB sandboxes) | $(mib "$idle_max") MiB | | | | | ≤ 8 MiB | $idle_ok |"
	echo "| resident memory: the stack (nginx, sandpitd, sandpit-stream, redis), idle → $running sandboxes running | $(mib "$idle_stack") → $(mib "$full_stack") MiB | | | | | — | — |"
	echo "| resident memory: dockerd, idle → $running sandboxes running | $(mib "$dockerd_idle") → $(mib "$dockerd_full") MiB | | | | | — | — |"
} >>"$out"

# --- the table ---------------------------------------------------------------------------
mkdir -p bench/results
timing=$(sed -n 's/^<!-- server-timing \(.*\) -->$/\1/p' "$out")
{
	echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores ($(uname -r)),"
	echo "sandpit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo '+changes'),"
	echo "Docker $(curl -sf --unix-socket /var/run/docker.sock http://d/version | jq -r '.Version + " (runc " + ((.Components // [] | map(select(.Name == "runc"))[0].Version) // "?") + ")"'),"
	echo "$(nginx -v 2>&1 | sed 's|.*/||; s|^|nginx |'), redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'),"
	echo "$(curl --version | head -n1 | awk '{ print "libcurl " $2 }'), $(wrk --version 2>&1 | head -n1 | awk '{ print $1, $2 }')."
	echo "Latencies in ms (p50 and p95); ratio = sandpit p50 / raw p50. Raw = the Docker"
	echo "Engine API through sandpit's own Docker client (same libcurl, same socket),"
	echo "interleaved with sandpit in the same run; sandpit = HTTPS through nginx on one"
	echo "kept-alive connection. Times are on the wire on both sides (a request's first"
	echo "byte to its answer's last): building or reading a body, JSON or tar, is the"
	echo "client's and counts on neither side."
	echo
	echo "| measurement | sandpit p50 | sandpit p95 | raw p50 | raw p95 | ratio | target | met |"
	echo "|---|---|---|---|---|---|---|---|"
	grep '^|' "$out"
	echo
	echo "Server-Timing of the cold creates (mean): $timing."
} >"$dir/table.md"
cp "$dir/table.md" bench/results/latest.md
cat "$dir/table.md"
