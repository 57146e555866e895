#!/usr/bin/env bash
# `make fuzz-run`: runs each libFuzzer target given (build/fuzz/<name>) for
# FUZZ_SECONDS seconds (-max_total_time), one after the other, on a copy of
# its seed corpus (tests/fuzz/corpus/<name>/) in a temp folder, with its
# dictionary (tests/fuzz/<name>.dict) when there is one. The seeds are never
# modified. Prints one line per target (executions, speed, coverage) and
# ends with "N passed, N failed"; exits non-zero if any target found a
# crash, a leak, a timeout or a failed check. The input that failed is kept
# in build/fuzz/artifacts/<name>/ (rerun: build/fuzz/<name> FILE).
#
# Environment:
#   FUZZ_SECONDS   seconds per target (default 60)
#   FUZZ_ARGS      extra libFuzzer flags (e.g. -max_len=65536)
#   FUZZ_KEEP      1: keep the temp folder (logs, the grown corpus)
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SECONDS_PER=${FUZZ_SECONDS:-60}
TMP=$(mktemp -d /tmp/sandpit-fuzz.XXXXXX)
# shellcheck disable=SC2317 # runs from the EXIT trap
cleanup() {
	if [ "${FUZZ_KEEP:-0}" = 1 ]; then
		echo "fuzz: kept $TMP"
	else
		rm -rf "$TMP"
	fi
}
trap cleanup EXIT

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

passed=0
failed=0
lines=()
for bin in "$@"; do
	name=$(basename "$bin")
	dir=$TMP/$name
	mkdir -p "$dir/corpus" "$dir/artifacts"
	if [ -d "$REPO/tests/fuzz/corpus/$name" ]; then
		cp -r "$REPO/tests/fuzz/corpus/$name/." "$dir/corpus/"
	fi
	args=(-max_total_time="$SECONDS_PER" -timeout=20 -rss_limit_mb=2048
		-print_final_stats=1 -artifact_prefix="$dir/artifacts/")
	[ -f "$REPO/tests/fuzz/$name.dict" ] && args+=(-dict="$REPO/tests/fuzz/$name.dict")
	# shellcheck disable=SC2206 # FUZZ_ARGS is a list of flags
	[ -n "${FUZZ_ARGS:-}" ] && args+=($FUZZ_ARGS)
	echo "== fuzz $name: ${SECONDS_PER}s, $(find "$dir/corpus" -type f | wc -l) seeds"
	rc=0
	"$bin" "${args[@]}" "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -n 1)
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | tail -n 1)
	status=$(grep -E '^#[0-9]+' "$dir/log" | tail -n 1)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$status")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$status")
	corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$status")
	summary=$(printf '%-8s %10s execs %7s/s  cov %5s  ft %6s  corpus %5s' "$name" \
		"${runs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}")
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1))
		lines+=("ok    $summary")
	else
		failed=$((failed + 1))
		keep=$REPO/build/fuzz/artifacts/$name
		mkdir -p "$keep"
		cp "$dir"/artifacts/* "$keep/" 2>/dev/null
		tail -n 60 "$dir/log"
		lines+=("FAIL  $summary  (exit $rc; inputs in build/fuzz/artifacts/$name/)")
	fi
	echo "${lines[-1]}"
done

echo
echo "== fuzz summary (${SECONDS_PER}s per target)"
printf '%s\n' "${lines[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
