#!/usr/bin/env bash
# `make lint`:
#   1. banned calls (sprintf, vsprintf, strcpy, strcat, strtok, atoi, gets)
#      in *.c / *.h, comments and string literals ignored   — fails the lint
#   2. cppcheck --enable=warning on the C folders             — fails the lint
#   3. clang-format --dry-run against .clang-format           — fails the lint
#      (SANDPIT_LINT_FORMAT=report only reports, while reformatting)
#   4. shellcheck: the programs run in containers, sandbox/sh/*.sh, as POSIX
#      sh (-s sh; includes followed, -x); the repo's own bash scripts
#      (tests, deploy, images, bench) as bash                 — fails the lint
#   5. the layering check from the object files (tests/layers.sh, after a
#      build: make lint builds them) and its own test (tests/layers-test.sh)
#                                                             — fails the lint
#   6. the store's Lua programs (store/lua/*.lua): each compiles in Redis
#      (SCRIPT LOAD into a throwaway redis-server on a unix socket: the
#      Lua 5.1 and the libraries they run with), and store/*.c names
#      (store_lua_NAME) exactly the programs there are        — fails the lint
#   7. no function in sandbox/ over 100 lines (from the line that names it
#      to its closing brace, as clang-format lays it out)  — fails the lint
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"

DIRS=()
for d in common docker store sandbox fcgi handlers cli stream tests/unit tests/fuzz tests/pm bench; do
	[ -d "$d" ] && DIRS+=("$d")
done
mapfile -t FILES < <(find "${DIRS[@]}" -type f \( -name '*.c' -o -name '*.h' \) | sort)
if [ ${#FILES[@]} -eq 0 ]; then
	echo "lint: no C files"
	exit 0
fi
status=0

# --- 1. banned calls -------------------------------------------------------
echo "== banned calls (${#FILES[@]} files)"
# perl (perl-base is Essential in Debian) blanks comments and string/char
# literals, keeping line numbers, then looks for a banned name called.
banned=$(perl -0777 -ne '
	my $src = $_;
	$src =~ s{(/\*.*?\*/)|(//[^\n]*)|("(?:\\.|[^"\\\n])*")|(\x27(?:\\.|[^\x27\\\n])*\x27)}{
		my $m = $&; $m =~ s/[^\n]/ /g; $m }gse;
	my $n = 0;
	for my $line (split /\n/, $src, -1) {
		$n++;
		while ($line =~ /\b(sprintf|vsprintf|strcpy|strcat|strtok|atoi|gets)\s*\(/g) {
			print "$ARGV:$n: $1()\n";
		}
	}
' "${FILES[@]}")
if [ -n "$banned" ]; then
	echo "$banned"
	echo "lint: banned calls found (use snprintf, str_copy-style helpers, strtok_r, a checked strtoll)"
	status=1
else
	echo "ok"
fi

# --- 2. cppcheck ---------------------------------------------------------------
echo "== cppcheck"
if command -v cppcheck >/dev/null; then
	if ! cppcheck --quiet --error-exitcode=1 --enable=warning --inline-suppr \
		--std=c11 -D_GNU_SOURCE -I . --suppress=missingIncludeSystem \
		-j 2 "${DIRS[@]}"; then
		echo "lint: cppcheck found errors or warnings"
		status=1
	else
		echo "ok"
	fi
else
	echo "lint: cppcheck not installed (apt-get install cppcheck)"
	status=1
fi

# --- 3. clang-format ----------------------------------------------------
echo "== clang-format (against .clang-format)"
if command -v clang-format >/dev/null; then
	bad_files=0
	bad_spots=0
	worst=()
	for f in "${FILES[@]}"; do
		n=$(clang-format --dry-run --Werror "$f" 2>&1 | grep -c ': error: ' || true)
		if [ "$n" -gt 0 ]; then
			bad_files=$((bad_files + 1))
			bad_spots=$((bad_spots + n))
			worst+=("$n $f")
		fi
	done
	echo "$bad_files of ${#FILES[@]} files differ from .clang-format ($bad_spots spots)"
	if [ $bad_files -gt 0 ]; then
		printf '%s\n' "${worst[@]}" | sort -rn | head -n 10 | sed 's/^/  /'
		echo "  (clang-format -i FILE applies the style)"
		if [ "${SANDPIT_LINT_FORMAT:-strict}" != report ]; then
			status=1
		fi
	fi
else
	echo "lint: clang-format not installed (apt-get install clang-format)"
	status=1
fi

# --- 4. shellcheck ------------------------------------------------------
echo "== shellcheck"
if command -v shellcheck >/dev/null; then
	mapfile -t SH_PROGRAMS < <(find sandbox/sh -name '*.sh' | sort)
	mapfile -t BASH_SCRIPTS < <(find tests deploy images bench -name '*.sh' -not -path '*/node_modules/*' | sort)
	ok=1
	if ! shellcheck -s sh -x -P SCRIPTDIR "${SH_PROGRAMS[@]}"; then
		echo "lint: shellcheck -s sh found problems in sandbox/sh (a deliberate one: # shellcheck disable=SCxxxx # why)"
		ok=0
	fi
	if ! shellcheck -s bash "${BASH_SCRIPTS[@]}"; then
		echo "lint: shellcheck -s bash found problems in the repo's scripts"
		ok=0
	fi
	if [ $ok = 1 ]; then
		echo "ok (${#SH_PROGRAMS[@]} container programs, ${#BASH_SCRIPTS[@]} scripts)"
	else
		status=1
	fi
else
	echo "lint: shellcheck not installed (apt-get install shellcheck)"
	status=1
fi

# --- 5. layers -------------------------------------------------------------
echo "== layers (tests/layers.sh: which file calls which, from build/'s objects)"
if ! out=$(bash tests/layers-test.sh 2>&1); then
	echo "$out"
	echo "lint: the layering check's own test failed"
	status=1
fi
if ! bash tests/layers.sh; then
	echo "lint: a call against the layers (tests/layers.map), or a stale line in tests/layers.allow"
	status=1
fi

# --- 7. function length ---------------------------------------------------
echo "== function length (sandbox/: at most 100 lines)"
# shellcheck disable=SC2016 # awk's own $0 and fields
long=$(find sandbox -name '*.c' | sort | xargs awk '
	FNR == 1 { start = 0 }
	/^[a-z_].*\(/ && !/;$/ { start = FNR; name = $0 }
	/^}$/ && start { if (FNR - start + 1 > 100) printf "%s:%d: %d lines: %s\n", FILENAME, start, FNR - start + 1, name; start = 0 }')
if [ -n "$long" ]; then
	echo "$long"
	echo "lint: a function in sandbox/ over 100 lines"
	status=1
else
	echo ok
fi

# --- 6. Lua programs ----------------------------------------------------
echo "== Lua programs (store/lua)"
if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
	mapfile -t LUA < <(find store/lua -name '*.lua' | sort)
	rdir=$(mktemp -d)
	redis-server --port 0 --unixsocket "$rdir/r.sock" --save '' --appendonly no \
		--dir "$rdir" --loglevel warning >/dev/null 2>&1 &
	rpid=$!
	for _ in $(seq 100); do
		[ -S "$rdir/r.sock" ] && break
		sleep 0.05
	done
	ok=1
	for f in "${LUA[@]}"; do
		out=$(redis-cli -s "$rdir/r.sock" -x SCRIPT LOAD <"$f" 2>&1)
		if ! [[ $out =~ ^[0-9a-f]{40}$ ]]; then
			echo "$f: $out"
			ok=0
		fi
	done
	kill "$rpid"
	wait "$rpid" 2>/dev/null || true
	rm -rf "$rdir"
	# the programs store/*.c runs, and the files there are
	used=$(grep -ohE '\bstore_lua_[a-z0-9_]+' store/*.c | sed 's/^store_lua_//' |
		grep -vxE 'all|count' | sort -u)
	have=$(printf '%s\n' "${LUA[@]}" | sed 's|.*/||; s|\.lua$||' | sort -u)
	missing=$(comm -23 <(echo "$used") <(echo "$have"))
	unused=$(comm -13 <(echo "$used") <(echo "$have"))
	if [ -n "$missing" ]; then
		echo "store/*.c runs programs with no file in store/lua: $missing"
		ok=0
	fi
	if [ -n "$unused" ]; then
		echo "programs in store/lua that store/*.c never runs: $unused"
		ok=0
	fi
	if [ $ok = 1 ]; then
		echo "ok (${#LUA[@]} programs)"
	else
		echo "lint: a Lua program does not compile, or store/*.c and store/lua disagree"
		status=1
	fi
else
	echo "lint: redis-server and redis-cli not installed (apt-get install redis-server)"
	status=1
fi

if [ $status -ne 0 ]; then
	echo "lint: FAILED"
else
	echo "lint: ok"
fi
exit $status
