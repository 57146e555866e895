#!/usr/bin/env bash
# A test of the layering check itself (tests/layers.sh): a tiny tree of two
# parts, lo below hi, compiled in a temporary folder. The check passes on
# the clean tree, fails on a planted back-edge and on a planted cycle, passes
# again when the allow list names them, and fails when the allow list names
# an edge that is gone.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
CC=${CC:-cc}
pass=0
fail=0

# unit FILE BODY: writes $T/FILE and compiles it into $T/build/
unit() {
	mkdir -p "$(dirname "$T/$1")" "$(dirname "$T/build/$1")"
	printf '%s\n' "$2" >"$T/$1"
	"$CC" -c -o "$T/build/${1%.c}.o" "$T/$1"
}
# expect pass|fail NAME [TEXT]: runs the check; a failure must print TEXT
expect() {
	local out rc=0
	out=$(bash "$REPO/tests/layers.sh" --src "$T" --map "$T/map" --allow "$T/allow" lo hi 2>&1) || rc=$?
	if { [ "$1" = pass ] && [ $rc -eq 0 ]; } ||
		{ [ "$1" = fail ] && [ $rc -eq 1 ] && grep -qF -- "$3" <<<"$out"; }; then
		echo "ok   $2"
		pass=$((pass + 1))
	else
		echo "FAIL $2 (expected $1, exit $rc)"
		while IFS= read -r line; do echo "     $line"; done <<<"$out"
		fail=$((fail + 1))
	fi
}

printf 'parts: lo\nparts: hi\n' >"$T/map"
: >"$T/allow"
unit lo/a.c 'int lo_a(void); int lo_a(void) { return 1; }'
unit hi/b.c 'int lo_a(void); int hi_b(void); int hi_b(void) { return lo_a(); }'
unit hi/c.c 'int hi_b(void); int hi_c(void); int hi_c(void) { return hi_b(); }'
unit hi/d.c 'int hi_d(void); int hi_d(void) { return 4; }'
expect pass "a clean tree (hi calls lo, c calls b)"

# a back-edge: lo/a.c calls up into hi/d.c
unit lo/a.c 'int hi_d(void); int lo_a(void); int lo_a(void) { return hi_d(); }'
expect fail "a planted back-edge" "back-edge lo/a.c (lo) -> hi/d.c (hi): hi_d"
echo 'back lo/a.c hi/d.c' >"$T/allow"
expect pass "the back-edge, allowed"
unit lo/a.c 'int lo_a(void); int lo_a(void) { return 1; }'
expect fail "an allowed back-edge that is gone" "allowed back edge lo/a.c hi/d.c no longer exists"
: >"$T/allow"
expect pass "the back-edge cut, its line gone"

# a cycle inside one part: b calls c, c calls b
unit hi/b.c 'int hi_c(void); int hi_b(void); int hi_b(void) { return hi_c(); }'
expect fail "a planted cycle" "(a cycle of 2 files: hi/b.c hi/c.c)"
printf 'cycle hi/b.c hi/c.c\ncycle hi/c.c hi/b.c\n' >"$T/allow"
expect pass "the cycle, allowed"
unit hi/b.c 'int lo_a(void); int hi_b(void); int hi_b(void) { return lo_a(); }'
expect fail "an allowed cycle edge that is no longer in a cycle" "allowed cycle edge hi/c.c hi/b.c is no longer a cycle edge"
: >"$T/allow"
expect pass "the cycle cut, its lines gone"

# a file placed in another part by the map: c moves down into lo, and its
# call into hi/b.c becomes a back-edge
echo 'hi/c.c lo' >>"$T/map"
expect fail "a file the map places lower" "back-edge hi/c.c (lo) -> hi/b.c (hi): hi_b"

# a map line for a file that is gone
echo 'lo/gone.c lo' >>"$T/map"
expect fail "a map line for a file that is gone" "places lo/gone.c, which is not a source file any more"

echo "layers-test: $pass passed, $fail failed"
[ $fail -eq 0 ]
