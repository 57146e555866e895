#!/usr/bin/env bash
# `make test`: every test against the real parts on this machine.
#   1. install what is missing (deploy/install-deps.sh; node if absent)
#   2. start dockerd if none answers (stopped again at the end)
#   3. build the local test images (tests/images/build.sh) and the template
#      images (images/build.sh; minutes the first time, seconds after)
#   4. make -j2 all + the unit test binaries
#   5. suites: unit (build/tests/test_*, cmocka), process manager
#      (tests/pm/test_pm.sh), the container shell programs (tests/sh/run.sh,
#      busybox sh and dash), fuzz (make fuzz-run: each libFuzzer target of
#      tests/fuzz/ for a few seconds), API (node --test tests/api/*.test.mjs, each
#      test file starts its own stack with deploy/stack.sh), then the gVisor
#      pass: the files where the runtime matters again with every sandbox
#      under runsc (SANDPIT_TEST_RUNTIME=gvisor; GVISOR_TESTS below), then
#      one API file against an ASan + UBSan build (build-asan/, `make asan`;
#      any sanitizer report fails it)
# Step 2 also registers runsc with that dockerd (runsc-isolated,
# runsc-internet in /etc/docker/daemon.json, merged with jq; SIGHUP reloads
# runtimes without touching running containers).
# Ends with one line "N passed, N failed" (before it, the suites that
# SANDPIT_TEST_FUZZ=0 or SANDPIT_TEST_GVISOR=0 left out, as skipped); exits
# non-zero if anything failed.
#
# Environment:
#   SANDPIT_TEST_CLEANUP  1: at the end remove the sandbox containers this
#                         run's stacks made and left (default 1 when CI=true,
#                         else 0). Every stack of the run labels its containers
#                         sandpit-test.run=<run id> (SANDPIT_RUN_LABEL, the
#                         container_label key), so other stacks' containers on
#                         the same dockerd are never touched.
#   SANDPIT_TEST_KEEP     1: keep the run's temp folder (stack logs)
#   SANDPIT_TEST_GVISOR   0: skip the gVisor pass and runsc's registration
#   SANDPIT_TEST_FUZZ     0: skip the fuzz suite
#   SANDPIT_TEST_FUZZ_SECONDS  seconds per fuzz target (default 12)
#   SANDPIT_TEST_ASAN     0: skip the ASan + UBSan pass
#   SANDPIT_TEST_ASAN_FILES    its API files (default tests/api/files.test.mjs)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"

PASSED=0
FAILED=0
SKIPPED=0
SUMMARY=()
SKIPPED_SUITES=() # whole suites left out, and why
RUN_TMP=$(mktemp -d /tmp/sandpit-test.XXXXXX)
# this run's id, on every sandbox container its stacks make (deploy/stack.sh)
RUN_LABEL="sandpit-test.run=${RUN_TMP##*/sandpit-test.}"
export SANDPIT_RUN_LABEL=$RUN_LABEL
DOCKERD_PID=""
if [ "${CI:-}" = true ]; then
	CLEANUP=${SANDPIT_TEST_CLEANUP:-1}
else
	CLEANUP=${SANDPIT_TEST_CLEANUP:-0}
fi

header() { printf '\n==== %s\n' "$*"; }

# record SUITE PASSED FAILED [SKIPPED]
record() {
	PASSED=$((PASSED + $2))
	FAILED=$((FAILED + $3))
	SKIPPED=$((SKIPPED + ${4:-0}))
	SUMMARY+=("$(printf '%-40s %4d passed %4d failed' "$1" "$2" "$3")")
}

docker_answers() {
	curl -sf --max-time 5 --unix-socket /var/run/docker.sock http://docker/_ping >/dev/null 2>&1
}

# shellcheck disable=SC2317 # runs from the EXIT trap
finish() {
	local rc=$? d pid i
	set +e
	# Stacks a test left running (its after() did not run): stop them.
	for d in "$RUN_TMP"/api/*/ "$RUN_TMP"/api-asan/*/; do
		[ -f "$d/sandpitd.conf" ] && bash deploy/stack.sh stop "$d"
	done
	if [ "$CLEANUP" = 1 ] && docker_answers; then
		# only this run's: both labels (docker ANDs label filters)
		ids=$(docker ps -aq --filter label=sandpit.sandbox=true --filter "label=$RUN_LABEL")
		if [ -n "$ids" ]; then
			echo "run.sh: removing $(echo "$ids" | wc -l) leftover sandbox container(s) of this run ($RUN_LABEL)"
			# shellcheck disable=SC2086
			docker rm -f -v $ids >/dev/null
		fi
	fi
	if [ -n "$DOCKERD_PID" ]; then
		pid=$DOCKERD_PID
		kill -TERM "$pid" 2>/dev/null
		for ((i = 0; i < 300; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	fi
	if [ "${SANDPIT_TEST_KEEP:-0}" = 1 ]; then
		echo "run.sh: kept $RUN_TMP"
	else
		rm -rf "$RUN_TMP"
	fi
	return "$rc"
}
trap finish EXIT

summary_and_exit() {
	local sk
	header "summary"
	printf '%s\n' "${SUMMARY[@]}"
	for sk in "${SKIPPED_SUITES[@]}"; do
		printf '%-40s skipped (%s)\n' "${sk%%|*}" "${sk#*|}"
	done
	if [ "$SKIPPED" -gt 0 ]; then
		echo "($SKIPPED skipped)"
	fi
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ]
	exit $?
}

# fatal SUITE MESSAGE: a step the others depend on failed.
fatal() {
	echo "run.sh: $2" >&2
	record "$1" 0 1
	summary_and_exit
}

# run_logged LOG CMD...: run CMD, output to the terminal and LOG; returns
# CMD's exit status without tripping set -e.
run_logged() {
	local log=$1 rc=0
	shift
	"$@" 2>&1 | tee "$log" || rc=$?
	return $rc
}

# --- 1. dependencies -----------------------------------------------------------
header "dependencies"
bash deploy/install-deps.sh || fatal deps "deploy/install-deps.sh failed"
if ! command -v node >/dev/null; then
	echo "run.sh: installing nodejs"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs >/dev/null ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs >/dev/null; } ||
		fatal deps "cannot install nodejs"
fi
if [ -f tests/package.json ]; then
	if ! command -v npm >/dev/null; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm >/dev/null ||
			fatal deps "cannot install npm"
	fi
	npm ci --prefix tests --silent --no-audit --no-fund >/dev/null || fatal deps "npm ci failed"
fi
echo "ok: $(node --version), $(nginx -v 2>&1), $(redis-server --version | cut -d' ' -f3)"

# --- 2. dockerd ------------------------------------------------------------------
header "docker"
if ! docker_answers; then
	echo "run.sh: no Docker daemon answers; starting dockerd (log: $RUN_TMP/dockerd.log)"
	setsid dockerd </dev/null >"$RUN_TMP/dockerd.log" 2>&1 &
	DOCKERD_PID=$!
	for ((i = 0; i < 600; i++)); do
		docker_answers && break
		kill -0 "$DOCKERD_PID" 2>/dev/null || break
		sleep 0.1
	done
	if ! docker_answers; then
		tail -n 30 "$RUN_TMP/dockerd.log" >&2
		fatal docker "dockerd did not answer within 60 s"
	fi
fi
echo "ok: Docker $(docker version -f '{{.Server.Version}}' 2>/dev/null)"

# gVisor: the two runtimes sandpit's default config names, registered with
# the dockerd the tests use. A missing one is merged into daemon.json (other
# keys kept) and dockerd reloads it on SIGHUP (Docker 20.10 reloads
# `runtimes`; running containers are not touched). Only a dockerd this
# script started is ever restarted, when the reload was not enough.
GVISOR_RUNTIMES='{"runsc-isolated":{"path":"/usr/bin/runsc","runtimeArgs":["--network=none","--oci-seccomp"]},"runsc-internet":{"path":"/usr/bin/runsc","runtimeArgs":["--network=host","--oci-seccomp"]}}'
GVISOR_OK=0
gvisor_registered() {
	curl -sf --max-time 5 --unix-socket /var/run/docker.sock http://docker/info |
		jq -e '.Runtimes["runsc-isolated"] and .Runtimes["runsc-internet"]' >/dev/null 2>&1
}
if [ "${SANDPIT_TEST_GVISOR:-1}" != 0 ]; then
	header "gVisor"
	if ! command -v runsc >/dev/null; then
		echo "run.sh: runsc is not installed (deploy/install-deps.sh installs it)"
	elif gvisor_registered; then
		GVISOR_OK=1
	else
		conf=/etc/docker/daemon.json
		mkdir -p /etc/docker
		[ -s "$conf" ] || echo '{}' >"$conf"
		if jq --argjson r "$GVISOR_RUNTIMES" '.runtimes = ((.runtimes // {}) + $r)' "$conf" >"$conf.sandpit-tmp"; then
			mv "$conf.sandpit-tmp" "$conf"
			pid=${DOCKERD_PID:-$(pidof dockerd | awk '{print $1}')}
			echo "run.sh: registered runsc-isolated and runsc-internet in $conf; reloading dockerd (SIGHUP to pid $pid)"
			[ -n "$pid" ] && kill -HUP "$pid"
			for ((i = 0; i < 50; i++)); do
				gvisor_registered && break
				sleep 0.2
			done
			if ! gvisor_registered && [ -n "$DOCKERD_PID" ]; then
				echo "run.sh: the reload did not register them; restarting the dockerd this script started"
				kill -TERM "$DOCKERD_PID"
				for ((i = 0; i < 300; i++)); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.1; done
				setsid dockerd </dev/null >>"$RUN_TMP/dockerd.log" 2>&1 &
				DOCKERD_PID=$!
				for ((i = 0; i < 600; i++)); do docker_answers && break; sleep 0.1; done
			fi
			gvisor_registered && GVISOR_OK=1
		else
			rm -f "$conf.sandpit-tmp"
			echo "run.sh: $conf is not valid JSON; not touching it"
		fi
	fi
	if [ "$GVISOR_OK" = 1 ]; then
		echo "ok: $(runsc --version | head -n 1), runtimes runsc-isolated and runsc-internet"
	else
		echo "run.sh: runsc is not registered with dockerd: the gVisor pass fails"
	fi
fi

# --- 3. images ---------------------------------------------------------------------
header "test images"
if bash tests/images/build.sh; then
	record images 1 0
else
	record images 0 1
fi
# The template images (tests/api/templates.test.mjs): built once per
# machine, then only what a changed recipe needs.
header "template images"
t0=$(date +%s)
if bash images/build.sh && bash images/build.sh --list; then
	record "template images" 1 0
else
	record "template images" 0 1
fi
echo "run.sh: the template images took $(($(date +%s) - t0)) s"

# --- 4. build ------------------------------------------------------------------------
header "build"
UNIT_BINS=()
for src in tests/unit/test_*.c; do
	[ -e "$src" ] || continue
	UNIT_BINS+=("build/tests/$(basename "$src" .c)")
done
if make -s -j2 all "${UNIT_BINS[@]}"; then
	echo "ok: build/sandpitd build/sandpit ${UNIT_BINS[*]}"
	record build 1 0
else
	record build 0 1
fi

# --- 4b. lint: banned calls, cppcheck, clang-format drift, layers (tests/lint.sh; after the build, whose objects tests/layers.sh reads)
header "lint"
if bash tests/lint.sh; then
	record lint 1 0
else
	record lint 0 1
fi

# --- 5a. unit tests (cmocka) ---------------------------------------------------------
for bin in "${UNIT_BINS[@]}"; do
	header "unit: $bin"
	if [ ! -x "$bin" ]; then
		echo "not built"
		record "unit $(basename "$bin")" 0 1
		continue
	fi
	log=$RUN_TMP/$(basename "$bin").log
	rc=0
	run_logged "$log" timeout 600 "$bin" || rc=$?
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
	# A crash or a missing summary still counts as a failure.
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "run.sh: $bin exited with status $rc"
		f=1
	fi
	[ "$rc" -eq 0 ] && [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && p=1
	record "unit $(basename "$bin")" "$p" "$f" "$s"
done

# summary_counts LOG RC: sets p and f from the last "N passed, N failed"
# line of LOG (a non-zero RC with no failure counted is one failure);
# returns 1 when LOG has no such line.
summary_counts() {
	local line
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1 || true)
	[ -n "$line" ] || return 1
	p=${line%% passed*}
	f=${line#*passed, }
	f=${f%% failed*}
	[ "$2" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	return 0
}

# --- 5b. process manager -------------------------------------------------------------
if [ -f tests/pm/test_pm.sh ]; then
	header "process manager: tests/pm/test_pm.sh"
	log=$RUN_TMP/pm.log
	rc=0
	run_logged "$log" timeout 600 bash tests/pm/test_pm.sh || rc=$?
	if ! summary_counts "$log" "$rc"; then
		# No summary (killed, crashed): count its "ok" / "FAIL" lines.
		p=$(grep -c '^ok ' "$log" || true)
		f=$(grep -c '^FAIL' "$log" || true)
		[ "$rc" -ne 0 ] && f=$((f + 1))
		[ "$rc" -eq 0 ] && [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && p=1
	fi
	record "pm test_pm.sh" "$p" "$f"
fi

# --- 5b'. the shell programs run in containers, under busybox sh and dash ------------
if [ -f tests/sh/run.sh ]; then
	header "container shell programs: tests/sh/run.sh"
	log=$RUN_TMP/sh.log
	rc=0
	run_logged "$log" timeout 600 bash tests/sh/run.sh || rc=$?
	if ! summary_counts "$log" "$rc"; then
		p=$(grep -c '^ok ' "$log" || true)
		f=$(grep -c '^FAIL' "$log" || true)
		[ "$rc" -ne 0 ] && f=$((f + 1))
	fi
	s=$(sed -n 's/^(\([0-9]*\) skipped)$/\1/p' "$log" | tail -n 1)
	record "sh tests/sh/run.sh" "$p" "$f" "${s:-0}"
fi

# --- 5c. fuzz targets (libFuzzer, ASan + UBSan), briefly -------------------------------
# Each target of tests/fuzz/ for SANDPIT_TEST_FUZZ_SECONDS (default 12 s) on
# a copy of its seeds; a crash, a leak or a failed check fails the suite.
if [ "${SANDPIT_TEST_FUZZ:-1}" != 0 ]; then
	fuzz_s=${SANDPIT_TEST_FUZZ_SECONDS:-12}
	header "fuzz: make fuzz-run FUZZ_SECONDS=$fuzz_s"
	log=$RUN_TMP/fuzz.log
	rc=0
	run_logged "$log" make -s -j2 fuzz-run FUZZ_SECONDS="$fuzz_s" || rc=$?
	if ! summary_counts "$log" "$rc"; then
		# no summary: the fuzz build failed (clang or libFuzzer missing?)
		p=0
		f=1
	fi
	record "fuzz (libFuzzer, ${fuzz_s}s each)" "$p" "$f"
else
	SKIPPED_SUITES+=("fuzz (libFuzzer)|SANDPIT_TEST_FUZZ=0")
fi

# --- 5d. API tests (node --test) -------------------------------------------------------
# api_run TAP FILE...: one node --test run; sets API_P, API_F, API_S.
api_run() {
	local tap=$1 rc=0 p f c sk td s
	shift
	# Each test file's stack lives under $RUN_TMP/api (os.tmpdir(); the
	# ASan pass's under api-asan), so finish() can stop any that a crashed
	# test left behind.
	TMPDIR=${API_TMP:-$RUN_TMP/api} SANDPIT_LOCAL_IMAGES=1 \
		node --test --test-concurrency=2 --test-timeout=900000 \
		--test-reporter=spec --test-reporter-destination=stdout \
		--test-reporter=tap --test-reporter-destination="$tap" \
		"$@" || rc=$?
	count() { sed -n "s/^# $1 \([0-9]*\)$/\1/p" "$tap" | tail -n 1; }
	p=$(count pass)
	f=$(count fail)
	c=$(count cancelled)
	sk=$(count skipped)
	td=$(count todo)
	s=$((${sk:-0} + ${td:-0}))
	p=${p:-0}
	f=$((${f:-0} + ${c:-0}))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "run.sh: node --test exited with status $rc"
		f=1
	fi
	API_P=$p
	API_F=$f
	API_S=$s
}

# api_pass NAME TAP FILE...: api_run, then records its counts.
api_pass() {
	local name=$1
	shift
	api_run "$@"
	record "$name" "$API_P" "$API_F" "$API_S"
}

mapfile -t API_TESTS < <(find tests/api -name '*.test.mjs' -not -path '*/node_modules/*' | sort)
if [ ${#API_TESTS[@]} -gt 0 ]; then
	header "API: node --test ${API_TESTS[*]}"
	mkdir -p "$RUN_TMP/api"
	api_pass "api (node --test)" "$RUN_TMP/api.tap" "${API_TESTS[@]}"
fi

# --- 5e. the gVisor pass: the files where the runtime matters, under runsc ------------
# lifecycle, exec, files, hardening, network (the deny rules hold for runsc's
# own netstack too); abuse (timeouts and their escapes, A7/A8:
# the timeout kill scans /proc, which is what differs most under gVisor; the
# fork bomb and pids exhaustion), lifetime and deadline (the container ends
# itself on time), keeper-path (the keeper's helper sleep and clock, a volume
# nested over the workdir's disk, under runsc), hostile-helper (runsc needs
# a readable helper binary, so a helper command is dumpable for its first
# instructions there: an injected answer must still cost a bounded parse and
# a 503, never a 500; its fast-path cases skip). Not here: the files whose subject is not the container
# (auth, roles, tenancy, metrics, openapi, mcp, cli, validation, servers,
# web, startup, quota, scale, stream's framing), and pool, left out for time
# (its containers run the same main process as lifetime's, armed by an exec).
GVISOR_TESTS=(tests/api/lifecycle.test.mjs tests/api/exec.test.mjs tests/api/files.test.mjs
	tests/api/hardening.test.mjs tests/api/abuse.test.mjs tests/api/lifetime.test.mjs
	tests/api/deadline.test.mjs tests/api/network.test.mjs tests/api/v1-process.test.mjs
	tests/api/v1-lifecycle.test.mjs tests/api/v1-timeouts.test.mjs tests/api/v1-files.test.mjs
	tests/api/v1-discard.test.mjs tests/api/v1-snapshots.test.mjs tests/api/v1-volumes.test.mjs
	tests/api/keeper-path.test.mjs tests/api/hostile-helper.test.mjs)
if [ "${SANDPIT_TEST_GVISOR:-1}" != 0 ]; then
	header "API under gVisor: SANDPIT_TEST_RUNTIME=gvisor node --test ${GVISOR_TESTS[*]}"
	if [ "$GVISOR_OK" = 1 ]; then
		mkdir -p "$RUN_TMP/api"
		t0=$(date +%s)
		SANDPIT_TEST_RUNTIME=gvisor api_pass "api gVisor (${#GVISOR_TESTS[@]} files)" "$RUN_TMP/api-gvisor.tap" \
			"${GVISOR_TESTS[@]}"
		echo "run.sh: the gVisor pass took $(($(date +%s) - t0)) s"
	else
		echo "run.sh: runsc is not registered with dockerd (see above)"
		record "api gVisor (${#GVISOR_TESTS[@]} files)" 0 1
	fi
else
	SKIPPED_SUITES+=("api gVisor (${#GVISOR_TESTS[@]} files)|SANDPIT_TEST_GVISOR=0")
fi

# --- 5f. one API file against ASan + UBSan ------------------------------------------------
# The three programs built with -fsanitize=address,undefined into
# build-asan/ (build/ is not touched), a stack on them (SANDPIT_BIN), one
# file whose requests reach most of the C: routing and validation, exec
# through the Docker client, hijack and demux, the tar archive, base64 and
# UTF-8 streaming, the store. Every sanitizer report (ASan, UBSan, and
# LeakSanitizer when a process exits) of sandpitd, its workers,
# sandpit-stream and the sandpit CLI goes to a file under $san (log_path:
# the stack dirs are removed when a test file ends); one such file, or a
# report in a stack log left behind, fails the suite like a failed test.
if [ "${SANDPIT_TEST_ASAN:-1}" != 0 ]; then
	read -r -a ASAN_TESTS <<<"${SANDPIT_TEST_ASAN_FILES:-tests/api/files.test.mjs}"
	asan_name="api ASan+UBSan ($(basename -a "${ASAN_TESTS[@]}" | tr '\n' ' ' | sed 's/ $//'))"
	header "API under ASan + UBSan: make asan; SANDPIT_BIN=build-asan node --test ${ASAN_TESTS[*]}"
	t0=$(date +%s)
	if make -s -j2 asan; then
		san=$RUN_TMP/sanitizer
		mkdir -p "$san" "$RUN_TMP/api-asan"
		API_TMP=$RUN_TMP/api-asan ASAN_OPTIONS="log_path=$san/asan:detect_leaks=1:abort_on_error=0" \
			UBSAN_OPTIONS="log_path=$san/ubsan:print_stacktrace=1:halt_on_error=1" \
			SANDPIT_BIN=$REPO/build-asan api_run "$RUN_TMP/api-asan.tap" "${ASAN_TESTS[@]}"
		mapfile -t reports < <(find "$san" -type f -size +0 | sort)
		mapfile -t -O "${#reports[@]}" reports < <(grep -rlE \
			'ERROR: (Address|Leak)Sanitizer|\.c:[0-9]+:[0-9]+: runtime error: ' \
			--include='*.log' "$RUN_TMP/api-asan" 2>/dev/null || true)
		for r in "${reports[@]}"; do
			echo "run.sh: sanitizer report: $r"
			head -n 40 "$r"
		done
		record "$asan_name" "$API_P" $((API_F + ${#reports[@]})) "$API_S"
	else
		echo "run.sh: make asan failed"
		record "$asan_name" 0 1
	fi
	echo "run.sh: the ASan + UBSan pass took $(($(date +%s) - t0)) s (build included)"
else
	SKIPPED_SUITES+=("api ASan+UBSan|SANDPIT_TEST_ASAN=0")
fi

summary_and_exit
