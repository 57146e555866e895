#!/usr/bin/env bash
# The shell programs run in containers (sandbox/sh/*.sh), each run as the
# container runs it (`SHELL -c PROGRAM sandpit ARGS...`, the program as
# sandbox/sh/embed.awk makes it: comments out, includes in) under busybox sh
# and under dash, on this machine, for what its contract says (the comment
# at its top, and the C code that reads its exit codes). Under busybox the
# tools are busybox's (a bin/ of applet links first in PATH, as in a
# busybox image), under dash the host's (GNU, as in a Debian image).
#
# The one change to a program's text: /.sandpit (a tmpfs of the container's)
# is a folder of this run's temp dir. Processes the programs scan in /proc
# are this machine's: the kill test marks its own tree with a random marker;
# the watcher's activity test runs the main process as PID 1 of a new PID
# namespace (unshare, root only; skipped otherwise), where a process
# nsenter puts in has PPid 0, as a docker exec's has.
#
# Prints "ok NAME" / "FAIL NAME" lines and ends with "N passed, N failed"
# (tests/run.sh reads it); exits non-zero if anything failed. About 90 s
# (the watcher wakes every 5 s).
#   SANDPIT_SH_SHELLS   the shells (default "busybox dash")
#   SANDPIT_SH_TESTS    the groups (default "files exec keeper main pool probe")
# shellcheck disable=SC2016,SC2181 # quoted texts are programs, expanded where they run; $? is read right after its command
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
T=$(mktemp -d /tmp/sandpit-sh.XXXXXX)
PASS=0
FAIL=0
SKIP=0
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		reap "$p"
	done
	chmod -R u+rwx "$T" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

# check NAME STATUS [DETAIL]
check() {
	if [ "$2" = 0 ]; then
		echo "ok $SH: $1"
		PASS=$((PASS + 1))
	else
		echo "FAIL $SH: $1${3:+ ($3)}"
		FAIL=$((FAIL + 1))
	fi
}
skip() {
	echo "skip $SH: $1 ($2)"
	SKIP=$((SKIP + 1))
}

# The programs, as embedded, with /.sandpit moved to $T/state.
mkdir -p "$T/gen" "$T/prog" "$T/state/x"
if ! awk -v gen="$T/gen" -v sh="$T/prog" -f "$REPO/sandbox/sh/embed.awk" "$REPO"/sandbox/sh/*.sh; then
	echo "FAIL embed.awk"
	echo "0 passed, 1 failed"
	exit 1
fi
for f in "$T"/prog/*.sh; do
	sed "s|/\.sandpit|$T/state|g" "$f" >"$f.run"
done
# the read-only helper the keeper's programs run by its absolute path
# (/.sandpit-helper/sandpit-helper-r, moved with /.sandpit): the build's
mkdir -p "$T/state-helper"
if ! cp "$REPO/build/helper/sandpit-helper" "$T/state-helper/sandpit-helper-r"; then
	echo "FAIL the helper (build/helper/sandpit-helper: make all first)"
	echo "0 passed, 1 failed"
	exit 1
fi

BUSYBOX=$(command -v busybox || true)
mkdir -p "$T/bb"
if [ -n "$BUSYBOX" ]; then
	for a in $("$BUSYBOX" --list); do
		ln -s "$BUSYBOX" "$T/bb/$a"
	done
fi
HOST_PATH=$PATH
SETPRIV=$(command -v setpriv || true)
# every user may reach the temp dir (the permission cases run as nobody)
chmod 755 "$T"

# prog NAME ARGS...: runs program NAME under $SH, like the container does.
prog() {
	local name=$1
	shift
	PATH=$PROG_PATH "${SHELL_CMD[@]}" -c "$(cat "$T/prog/$name.sh.run")" sandpit "$@"
}
# start NAME ARGS...: prog in the background, in a process group of its
# own (setsid; $! is its pid and group), so that reap ends it with what it
# started: on this machine a main process's watcher outlives it (in a
# container, PID 1 ending ends everything).
start() {
	local name=$1
	shift
	setsid env PATH="$PROG_PATH" "${SHELL_CMD[@]}" -c "$(cat "$T/prog/$name.sh.run")" sandpit "$@" &
	PIDS+=("$!")
}
reap() {
	kill -9 -- "-$1" 2>/dev/null
	kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
# as_nobody CMD...: CMD as an unprivileged user (permission cases).
as_nobody() {
	"$SETPRIV" --reuid=65534 --regid=65534 --clear-groups -- "$@"
}
now() { date +%s; }
# past SECONDS: the clock has reached that epoch second.
past() { [ "$(now)" -ge "$1" ]; }
# wait_for SECONDS CMD...: until CMD succeeds; 1 when the time ran out.
wait_for() {
	local end=$(($(now) + $1))
	shift
	until "$@"; do
		[ "$(now)" -lt "$end" ] || return 1
		sleep 0.1
	done
}
# alive PID: it runs (a zombie, ended but not yet waited for, does not).
alive() {
	local st
	kill -0 "$1" 2>/dev/null || return 1
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
	[ -n "$st" ] && [ "$st" != Z ]
}
gone() { ! alive "$1"; }
# wait_status PID: ST = the exit status of a background job of this shell.
wait_status() {
	ST=0
	wait "$1" 2>/dev/null || ST=$?
}

test_files() {
	local d=$T/files.$SH rc out
	mkdir -p "$d"
	# --- read.sh: exit 3 missing, 4 not a file, 5 unreadable, 0 the bytes
	printf 'a\0b\nc' >"$d/f"
	out=$(prog read "$d/f" | od -An -tx1 | tr -d ' \n')
	check "read: exact bytes, exit 0" "$([ "$out" = 6100620a63 ] && echo 0 || echo 1)" "$out"
	prog read "$d/missing" >/dev/null 2>&1
	check "read: missing is exit 3" "$([ $? = 3 ] && echo 0 || echo 1)"
	prog read "$d" >/dev/null 2>&1
	check "read: a folder is exit 4" "$([ $? = 4 ] && echo 0 || echo 1)"
	if [ "$(id -u)" = 0 ] && [ -n "$SETPRIV" ]; then
		printf secret >"$d/closed"
		chmod 600 "$d/closed"
		chmod 755 "$d"
		PATH=$PROG_PATH as_nobody "${SHELL_CMD[@]}" -c "$(cat "$T/prog/read.sh.run")" sandpit "$d/closed" >/dev/null 2>&1
		check "read: unreadable is exit 5" "$([ $? = 5 ] && echo 0 || echo 1)"
	else
		skip "read: unreadable is exit 5" "needs root and setpriv"
	fi
	ln -s f "$d/link"
	out=$(prog read "$d/link" | od -An -tx1 | tr -d ' \n')
	check "read: a symlink is followed" "$([ "$out" = 6100620a63 ] && echo 0 || echo 1)"
	printf 'nl' >"$d/name
"
	out=$(prog read "$d/name
")
	check "read: a name that ends in a newline" "$([ "$out" = nl ] && echo 0 || echo 1)" "$out"
	head -c 10485770 /dev/zero >"$d/big"
	out=$(prog read "$d/big" | wc -c)
	check "read: at most 10 MiB + 1 byte" "$([ "$out" -eq 10485761 ] && echo 0 || echo 1)" "$out"
	rm -f "$d/big"

	# --- list.sh: exit 3 missing, 4 not a folder; F (find -printf) or N records
	mkdir -p "$d/l/sub"
	printf 12345 >"$d/l/five"
	ln -s five "$d/l/ln"
	: >"$d/l/.hidden"
	out=$(prog list "$d/l" | tr '\0' '\n')
	case $out in
	F*)
		printf '%s\n' "$out" | grep -q -x -E 'f	5	[0-9.]+	644	five' &&
			printf '%s\n' "$out" | grep -q -x -E 'd	[0-9]+	[0-9.]+	755	sub' &&
			printf '%s\n' "$out" | grep -q -x -E 'l	[0-9]+	[0-9.]+	777	ln' &&
			printf '%s\n' "$out" | grep -q -x -E 'f	0	[0-9.]+	644	.hidden' &&
			[ "$(printf '%s\n' "$out" | wc -l)" = 5 ]
		;;
	N*)
		[ "$(printf '%s\n' "$out" | sort | tr '\n' ' ')" = "$(printf 'N\nf\tfive\nd\tsub\nl\tln\nf\t.hidden\n' | sort | tr '\n' ' ')" ]
		;;
	*) false ;;
	esac
	check "list: every entry, its type (and metadata where find has -printf)" $? "$(printf '%s' "$out" | tr '\n\t' '|,')"
	prog list "$d/nope" >/dev/null 2>&1
	check "list: missing is exit 3" "$([ $? = 3 ] && echo 0 || echo 1)"
	prog list "$d/f" >/dev/null 2>&1
	check "list: a file is exit 4" "$([ $? = 4 ] && echo 0 || echo 1)"
	mkdir -p "$d/empty"
	out=$(prog list "$d/empty" | tr '\0' '|')
	check "list: an empty folder is its header only" "$([ "$out" = 'F|' ] || [ "$out" = 'N|' ] && echo 0 || echo 1)" "$out"

	# --- write.sh DIR TARGET TMP SIZE MODE <bytes
	printf 'x\0y\n' | prog write "$d/w/new" "$d/w/new/t" .tmp1 4 640
	rc=$?
	out=$(od -An -tx1 <"$d/w/new/t" 2>/dev/null | tr -d ' \n')
	check "write: exact bytes from stdin, folders made, exit 0" \
		"$([ $rc = 0 ] && [ "$out" = 7800790a ] && echo 0 || echo 1)" "rc $rc, $out"
	check "write: the mode given" "$([ "$(stat -c %a "$d/w/new/t")" = 640 ] && echo 0 || echo 1)"
	check "write: no temporary file left" "$([ ! -e "$d/w/new/.tmp1" ] && echo 0 || echo 1)"
	printf 'new' | prog write "$d/w/new" "$d/w/new/t" .tmp2 3 644
	check "write: replaces a file" "$([ "$(cat "$d/w/new/t")" = new ] && echo 0 || echo 1)"
	printf 'abc' | prog write "$d/w/new" "$d/w/new/t" .tmp3 5 644
	rc=$?
	check "write: fewer bytes than announced is exit 6, nothing written" \
		"$([ $rc = 6 ] && [ "$(cat "$d/w/new/t")" = new ] && [ ! -e "$d/w/new/.tmp3" ] && echo 0 || echo 1)" "rc $rc"
	printf 'abc' | prog write "$d/f/sub" "$d/f/sub/t" .tmp4 3 644 2>/dev/null
	check "write: a folder that cannot be made is exit 3" "$([ $? = 3 ] && echo 0 || echo 1)"
	mkdir -p "$d/w/new/adir"
	printf 'abc' | prog write "$d/w/new" "$d/w/new/adir" .tmp5 3 644
	check "write: a folder as the target is exit 4" "$([ $? = 4 ] && echo 0 || echo 1)"
	mkdir -p "$d/w/elsewhere"
	ln -s ../elsewhere "$d/w/new/dirlink"
	printf 'abc' | prog write "$d/w/new" "$d/w/new/dirlink" .tmp6 3 644
	rc=$?
	check "write: a symlink to a folder as the target is replaced, not followed" \
		"$([ $rc = 0 ] && [ -f "$d/w/new/dirlink" ] && [ ! -L "$d/w/new/dirlink" ] && [ -z "$(ls -A "$d/w/elsewhere")" ] && echo 0 || echo 1)" "rc $rc"
	if [ "$(id -u)" = 0 ] && [ -n "$SETPRIV" ]; then
		mkdir -p "$d/w/ro"
		chmod 755 "$d/w" "$d/w/ro"
		out=$(printf 'abc' | PATH=$PROG_PATH as_nobody "${SHELL_CMD[@]}" -c "$(cat "$T/prog/write.sh.run")" sandpit "$d/w/ro" "$d/w/ro/t" .tmp7 3 644 2>&1)
		rc=$?
		check "write: a folder the user may not write is exit 5, the reason on stderr" \
			"$([ $rc = 5 ] && [ -n "$out" ] && echo 0 || echo 1)" "rc $rc, $out"
	else
		skip "write: a folder the user may not write is exit 5" "needs root and setpriv"
	fi
	# the folder removed while the data comes: exit 7
	mkdir -p "$d/w/doomed"
	mkfifo "$T/fifo.$SH"
	prog write "$d/w/doomed" "$d/w/doomed/t" .tmp8 3 644 <"$T/fifo.$SH" 2>/dev/null &
	local wp=$!
	PIDS+=("$wp")
	exec 7>"$T/fifo.$SH"
	wait_for 10 test -e "$d/w/doomed/.tmp8"
	rm -rf "$d/w/doomed"
	printf 'abc' >&7
	exec 7>&-
	wait_status "$wp"
	rc=$ST
	check "write: the folder removed meanwhile is exit 7" "$([ "$rc" = 7 ] && echo 0 || echo 1)" "rc $rc"
	rm -f "$T/fifo.$SH"

	# --- unlink.sh DIR NAME
	: >"$d/w/new/.left"
	prog unlink "$d/w/new" .left
	check "unlink: removes what a killed write left" "$([ $? = 0 ] && [ ! -e "$d/w/new/.left" ] && echo 0 || echo 1)"
	prog unlink "$d/w/none" .left
	check "unlink: a missing folder is a failure, nothing removed" "$([ $? != 0 ] && echo 0 || echo 1)"
}

test_exec() {
	local d=$T/exec.$SH rc out m p1 p2 p3 other
	mkdir -p "$d"
	# --- cwd.sh: 0 when $1 resolves into /proc
	ln -sfn /proc/self "$d/p"
	prog cwd /proc
	check "cwd: /proc is exit 0" $?
	prog cwd "$d/p"
	check "cwd: a symlink into /proc is exit 0" $?
	prog cwd "$d"
	check "cwd: another folder is exit 1" "$([ $? = 1 ] && echo 0 || echo 1)"
	prog cwd "$d/none"
	check "cwd: a missing folder is exit 1" "$([ $? = 1 ] && echo 0 || echo 1)"

	# --- wrapper.sh CMD ARGS: $0 = sh, the status, fd 9 on the marker file
	m=m$RANDOM$RANDOM
	out=$(cd "$d" && SANDPIT_EXEC=$m prog wrapper 'echo "$0 $1 $2"; [ "$(readlink /proc/$$/fd/9)" = "'"$T/state/x/$m"'" ] && echo fd9; exit 3' a 'b c')
	rc=$?
	check "wrapper: the command, its args, its status, the marker open on fd 9" \
		"$([ $rc = 3 ] && [ "$out" = "sh a b c
fd9" ] && echo 0 || echo 1)" "rc $rc, $out"
	check "wrapper: the marker file is gone after" "$([ ! -e "$T/state/x/$m" ] && echo 0 || echo 1)"
	# an empty command: the arguments are a program and its arguments, run
	# as they are (no shell reads them), with the marker on fd 9 and the
	# program's status; a builtin's name is looked up as a program
	m=a$RANDOM$RANDOM
	out=$(cd "$d" && SANDPIT_EXEC=$m prog wrapper '' sh -c '[ "$(readlink /proc/$$/fd/9)" = "'"$T/state/x/$m"'" ] && echo "fd9 $1"; exit 4' sh 'a;b $c')
	rc=$?
	check "wrapper: an argv as it is (no shell between), the marker on fd 9, its status" \
		"$([ $rc = 4 ] && [ "$out" = 'fd9 a;b $c' ] && [ ! -e "$T/state/x/$m" ] && echo 0 || echo 1)" "rc $rc, $out"
	(cd "$d" && SANDPIT_EXEC=$m prog wrapper '' exit 3 2>/dev/null)
	rc=$?
	check "wrapper: an argv naming a builtin runs no builtin (exit 127, not 3)" \
		"$([ $rc = 127 ] && echo 0 || echo 1)" "rc $rc"
	(cd "$d/p" && SANDPIT_EXEC=$m prog wrapper ": >$d/ran")
	rc=$?
	check "wrapper: a working folder in /proc is exit 125, nothing run" \
		"$([ $rc = 125 ] && [ ! -e "$d/ran" ] && echo 0 || echo 1)" "rc $rc"

	# --- kill.sh MARKER: every process of the marked tree, the env -i one too
	m=k$RANDOM$RANDOM
	: >"$d/started"
	cd "$d" || return
	SANDPIT_EXEC=$m start wrapper '
		sleep 300 & echo $! >p1
		(trap "" TERM HUP; exec sleep 301) & echo $! >p2
		env -i sh -c "sleep 302 & echo \$! >p3; wait" &
		wait'
	local wrapper=$!
	disown "$wrapper" # the kill below ends it: no job notice
	cd "$REPO" || return
	wait_for 10 test -s "$d/p3"
	sleep 300 &
	other=$!
	PIDS+=("$other")
	p1=$(cat "$d/p1")
	p2=$(cat "$d/p2")
	p3=$(cat "$d/p3")
	tr '\0' '\n' </proc/"$p3"/environ | grep -q SANDPIT_EXEC
	check "kill: (setup) the env -i process has no marker variable" "$([ $? != 0 ] && echo 0 || echo 1)"
	prog kill "$m"
	rc=$?
	wait_for 5 gone "$p1" && wait_for 5 gone "$p2" && wait_for 5 gone "$p3"
	check "kill: every marked process dies (the env -i one by its fd 9), exit 0" \
		"$([ $? = 0 ] && [ $rc = 0 ] && echo 0 || echo 1)" "rc $rc"
	check "kill: an unmarked process lives" "$(alive "$other" && echo 0 || echo 1)"
	check "kill: the marker file is removed" "$([ ! -e "$T/state/x/$m" ] && echo 0 || echo 1)"
	reap "$other"
	reap "$wrapper"
	prog kill "nothing$RANDOM"
	check "kill: nothing marked is exit 0" $?
}

test_keeper() {
	local rc e
	rm -f "$T/state/timeout" "$T/state/expires"
	prog expiry 1900000000 600
	rc=$?
	check "expiry: writes the expiry and the timeout" \
		"$([ $rc = 0 ] && [ "$(cat "$T/state/expires")" = 1900000000 ] && [ "$(cat "$T/state/timeout")" = 600 ] && echo 0 || echo 1)"
	prog expiry 1900000001 ''
	check "expiry: an empty timeout leaves the timeout" \
		"$([ "$(cat "$T/state/expires")" = 1900000001 ] && [ "$(cat "$T/state/timeout")" = 600 ] && echo 0 || echo 1)"
	rm -f "$T/state/timeout"
	mkdir "$T/state/timeout"
	prog expiry 1900000002 5 2>/dev/null
	rc=$?
	check "expiry: a timeout it cannot write is exit 1, the expiry left" \
		"$([ $rc = 1 ] && [ "$(cat "$T/state/expires")" = 1900000001 ] && echo 0 || echo 1)" "rc $rc"
	rmdir "$T/state/timeout"
}

test_main() {
	local n pid rc t0 e
	# --- main.sh DEADLINE_S DEADLINE_MS EXPIRY TIMEOUT KEEPER_UID
	# (each start on an empty state, as a container's tmpfs is)
	n=$(now)
	rm -f "$T/state/timeout" "$T/state/expires"
	start main $((n - 1)) 000 $((n + 100)) 30 4242
	pid=$!
	wait_status "$pid"
	rc=$ST
	reap "$pid"
	check "main: a deadline already past ends at once, exit 0" "$([ "$rc" = 0 ] && echo 0 || echo 1)" "rc $rc"
	check "main: writes the timeout and the expiry" \
		"$([ "$(cat "$T/state/timeout")" = 30 ] && [ "$(cat "$T/state/expires")" = $((n + 100)) ] && echo 0 || echo 1)"
	# nothing through PATH: with only a planted sleep and date there (as a
	# volume on PATH once held), the main process still sleeps to its
	# deadline and never runs them
	mkdir -p "$T/planted"
	printf '#!/bin/sh\necho planted >>%s\nexec %s "$@"\n' "$T/planted.log" "$(command -v sleep)" >"$T/planted/sleep"
	printf '#!/bin/sh\necho planted >>%s\necho 1\n' "$T/planted.log" >"$T/planted/date"
	chmod 755 "$T/planted/sleep" "$T/planted/date"
	rm -f "$T/planted.log" "$T/state/timeout" "$T/state/expires"
	n=$(now)
	t0=$n
	setsid env PATH="$T/planted" "${SHELL_CMD[@]}" -c "$(cat "$T/prog/main.sh.run")" sandpit $((n + 9)) 000 $((n + 100)) 100 4242 &
	pid=$!
	PIDS+=("$pid")
	sleep 6.5
	check "main: with a planted sleep and date first on PATH, still sleeps to the deadline" "$(alive "$pid" && echo 0 || echo 1)"
	wait_for 6 gone "$pid"
	wait_status "$pid"
	rc=$ST
	check "main: never runs a planted sleep or date, ends by the deadline" \
		"$([ "$rc" = 0 ] && [ ! -e "$T/planted.log" ] && [ "$(now)" -le $((t0 + 10)) ] && echo 0 || echo 1)" \
		"rc $rc, $(wc -l <"$T/planted.log" 2>/dev/null || echo 0) planted runs, $(($(now) - t0)) s"
	reap "$pid"
	# no helper: exit 127, said on stderr
	mv "$T/state-helper/sandpit-helper-r" "$T/state-helper/gone"
	out=$(prog main $((n + 9)) 000 $((n + 9)) 5 4242 2>&1)
	rc=$?
	mv "$T/state-helper/gone" "$T/state-helper/sandpit-helper-r"
	check "main: no helper is exit 127, said on stderr" \
		"$([ $rc = 127 ] && [ "$out" = "sandpit: no helper at $T/state-helper/sandpit-helper-r" ] && echo 0 || echo 1)" "rc $rc, $out"
	# a setTimeout landing between the container's start and main.sh's
	# first write: what sandpit wrote holds (it is newer)
	n=$(now)
	printf '%s\n' 40 >"$T/state/timeout"
	printf '%s\n' $((n + 50)) >"$T/state/expires"
	start main $((n + 120)) 000 $((n + 100)) 30 4242
	pid=$!
	wait_for 5 eval 'pgrep -P '"$pid"' >/dev/null'
	sleep 0.2
	check "main: keeps a timeout and an expiry sandpit wrote before it ran" \
		"$([ "$(cat "$T/state/timeout")" = 40 ] && [ "$(cat "$T/state/expires")" = $((n + 50)) ] && echo 0 || echo 1)" \
		"timeout $(cat "$T/state/timeout"), expires $(cat "$T/state/expires"), started $n"
	reap "$pid"
	# the deadline: sleeps until it (250 ms before), then ends
	n=$(now)
	t0=$n
	rm -f "$T/state/timeout" "$T/state/expires"
	start main $((n + 3)) 000 $((n + 100)) 100 4242
	pid=$!
	sleep 1
	check "main: sleeps until the deadline" "$(alive "$pid" && echo 0 || echo 1)"
	wait_for 6 gone "$pid"
	wait_status "$pid"
	rc=$ST
	check "main: ends by the deadline, exit 0" "$([ "$rc" = 0 ] && [ "$(now)" -le $((t0 + 4)) ] && echo 0 || echo 1)" "rc $rc, $(($(now) - t0)) s"
	reap "$pid"

	# the watcher: the expiry ends the main process; a later one written
	# keeps it. Keeper uid 0 here: on this machine kthreadd (PID 2, PPid 0,
	# uid 0) would count as a running exec; as the keeper's it does not.
	n=$(now)
	rm -f "$T/state/timeout" "$T/state/expires"
	start main $((n + 120)) 000 $((n + 2)) 100 0
	pid=$!
	wait_for 10 gone "$pid"
	check "watcher: the expiry passing ends the main process" $? "it still ran after 10 s"
	reap "$pid"
	# a later expiry written (read at the tick of +5 s), then one it
	# cannot read (at +10 s: the last one holds), then it passes (+12 s:
	# once the expiry is less than 5 s away the watcher wakes at its
	# second, not at the next 5 s tick)
	n=$(now)
	rm -f "$T/state/timeout" "$T/state/expires"
	start main $((n + 120)) 000 $((n + 3)) 100 0
	pid=$!
	sleep 0.5
	printf '%s\n' $((n + 12)) >"$T/state/expires"
	wait_for 8 past $((n + 7))
	echo garbage >"$T/state/expires"
	wait_for 6 past $((n + 11))
	check "watcher: reads a later expiry, keeps it over one it cannot read" "$(alive "$pid" && echo 0 || echo 1)"
	wait_for 10 gone "$pid"
	rc=$?
	check "watcher: ends the main process at that later expiry, within 1 s of its second" \
		"$([ "$rc" = 0 ] && [ "$(now)" -le $((n + 13)) ] && echo 0 || echo 1)" "rc $rc, $(($(now) - n)) s"
	reap "$pid"

	# activity: a process with PPid 0 (as docker exec makes) moves the
	# expiry to now + timeout; never past the deadline
	if [ "$(id -u)" != 0 ] || ! unshare -pf --mount-proc true 2>/dev/null; then
		skip "watcher: activity moves the expiry" "needs root and unshare"
		return
	fi
	# expiry +2 s, deadline +14 s, timeout 30 s: the exec running at the
	# tick of +5 s moves the expiry to the deadline (now + 30 is past it)
	n=$(now)
	rm -f "$T/state/timeout" "$T/state/expires"
	setsid env PATH="$PROG_PATH" unshare -pf --mount-proc "${SHELL_CMD[@]}" -c "$(cat "$T/prog/main.sh.run")" sandpit \
		$((n + 14)) 000 $((n + 2)) 30 4242 &
	pid=$!
	PIDS+=("$pid")
	local inner=
	wait_for 5 eval 'inner=$(pgrep -P '"$pid"' | head -n 1); [ -n "$inner" ]'
	nsenter -t "$inner" -p -m sleep 7 &
	PIDS+=("$!")
	wait_for 8 past $((n + 7))
	e=$(cat "$T/state/expires")
	check "watcher: a running exec (PPid 0) moves the expiry, never past the deadline" \
		"$(alive "$pid" && [ "$e" = $((n + 14)) ] && echo 0 || echo 1)" "expires $e, started $n"
	wait_for 12 gone "$pid"
	check "watcher: the sandbox still ends at its deadline" $?
	reap "$pid"
}

test_pool() {
	local n pid rc
	# --- pool.sh POOL_EXPIRY LIFETIME TIMEOUT KEEPER_UID
	rm -f "$T/state/main.pid" "$T/state/activate" "$T/state/timeout" "$T/state/expires"
	n=$(now)
	start pool $((n + 60)) 2 30 4242
	pid=$!
	wait_for 5 test -s "$T/state/main.pid"
	check "pool: writes its pid" "$([ "$(cat "$T/state/main.pid")" = "$pid" ] && echo 0 || echo 1)"
	sleep 0.3
	kill -USR1 "$pid"
	wait_for 5 eval '[ "$(cat "$T/state/timeout" 2>/dev/null)" = 30 ]'
	n=$(now)
	e=$(cat "$T/state/expires")
	check "pool: USR1 arms it with the defaults (timeout, expiry now + timeout)" \
		"$([ "$e" -ge $((n + 28)) ] && [ "$e" -le $((n + 31)) ] && echo 0 || echo 1)" "expires $e at $n"
	wait_for 6 gone "$pid"
	wait_status "$pid"
	rc=$ST
	check "pool: then lives its lifetime, exit 0" "$([ "$rc" = 0 ] && echo 0 || echo 1)" "rc $rc"
	reap "$pid"

	# a setTimeout between the claim's USR1 and its arming: kept
	rm -f "$T/state/main.pid" "$T/state/timeout" "$T/state/expires"
	n=$(now)
	start pool $((n + 60)) 100 30 4242
	pid=$!
	wait_for 5 test -s "$T/state/main.pid"
	printf '%s\n' 45 >"$T/state/timeout"
	printf '%s\n' $((n + 70)) >"$T/state/expires"
	kill -USR1 "$pid"
	wait_for 5 eval 'pgrep -P '"$pid"' >/dev/null'
	sleep 0.2
	check "pool: USR1 keeps a timeout and an expiry sandpit wrote first" \
		"$([ "$(cat "$T/state/timeout")" = 45 ] && [ "$(cat "$T/state/expires")" = $((n + 70)) ] && echo 0 || echo 1)" \
		"timeout $(cat "$T/state/timeout"), expires $(cat "$T/state/expires")"
	reap "$pid"
	# and arm, run detached, does the same
	rm -f "$T/state/main.pid" "$T/state/activate"
	printf '%s\n' 45 >"$T/state/timeout"
	printf '%s\n' $((n + 70)) >"$T/state/expires"
	sleep 30 &
	pid=$!
	PIDS+=("$pid")
	echo "$pid" >"$T/state/main.pid"
	prog arm $((n + 3)) 000 $((n + 50)) 40 2>/dev/null
	reap "$pid"
	check "arm: keeps a timeout and an expiry sandpit wrote first, still writes the activation" \
		"$([ "$(cat "$T/state/timeout")" = 45 ] && [ "$(cat "$T/state/expires")" = $((n + 70)) ] && [ -s "$T/state/activate" ] && echo 0 || echo 1)"

	rm -f "$T/state/main.pid" "$T/state/activate" "$T/state/timeout" "$T/state/expires"
	n=$(now)
	start pool $((n + 60)) 100 100 4242
	pid=$!
	prog arm $((n + 3)) 000 $((n + 50)) 40
	rc=$?
	check "arm: writes the activation, exit 0" \
		"$([ $rc = 0 ] && [ "$(cat "$T/state/activate")" = "$((n + 3)) 000 $((n + 50)) 40" ] && echo 0 || echo 1)" "rc $rc"
	wait_for 5 eval '[ "$(cat "$T/state/timeout" 2>/dev/null)" = 40 ]'
	check "arm: the timeout and the expiry written" "$([ "$(cat "$T/state/expires")" = $((n + 50)) ] && echo 0 || echo 1)"
	check "pool: USR2 (arm) sleeps until the deadline it was given" "$(alive "$pid" && echo 0 || echo 1)"
	wait_for 8 gone "$pid"
	wait_status "$pid"
	rc=$ST
	check "pool: USR2 (arm) ends by that deadline, not the time arming took later, exit 0" \
		"$([ "$rc" = 0 ] && [ "$(now)" -le $((n + 3)) ] && echo 0 || echo 1)" "rc $rc, $(($(now) - n)) s"
	reap "$pid"

	n=$(now)
	start pool $((n + 1)) 100 100 4242
	pid=$!
	wait_for 6 gone "$pid"
	wait_status "$pid"
	rc=$ST
	check "pool: ends by itself at the pool expiry, exit 0" "$([ "$rc" = 0 ] && echo 0 || echo 1)" "rc $rc"
	reap "$pid"
}

test_probe() {
	local port closed out lp
	# a listener on a free loopback port, and a free port nothing listens on
	node -e 'const s = require("net").createServer(c => c.destroy()).listen(0, "127.0.0.1", () => console.log(s.address().port)); setTimeout(() => process.exit(0), 30000)' >"$T/port.$SH" &
	lp=$!
	PIDS+=("$lp")
	wait_for 10 test -s "$T/port.$SH"
	port=$(cat "$T/port.$SH")
	closed=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })')
	out=$(PATH=$T/bb:$HOST_PATH "${SHELL_CMD[@]}" -c "$(cat "$T/prog/probe.sh.run")" sandpit \
		"127.0.0.1:$port" "127.0.0.1:$closed" "127.0.0.1:notaport" | sort)
	check "probe: open, refused and filtered, one line each" \
		"$([ "$out" = "$(printf 'filtered 127.0.0.1:notaport\nopen 127.0.0.1:%s\nrefused 127.0.0.1:%s' "$port" "$closed" | sort)" ] && echo 0 || echo 1)" \
		"$(printf '%s' "$out" | tr '\n' '|')"
	reap "$lp"
}

for SH in ${SANDPIT_SH_SHELLS:-busybox dash}; do
	case $SH in
	busybox)
		if [ -z "$BUSYBOX" ]; then
			echo "FAIL busybox: not installed (apt-get install busybox-static)"
			FAIL=$((FAIL + 1))
			continue
		fi
		SHELL_CMD=("$BUSYBOX" sh)
		PROG_PATH=$T/bb:$HOST_PATH
		;;
	*)
		if ! command -v "$SH" >/dev/null; then
			echo "FAIL $SH: not installed"
			FAIL=$((FAIL + 1))
			continue
		fi
		SHELL_CMD=("$(command -v "$SH")")
		PROG_PATH=$HOST_PATH
		;;
	esac
	echo "== $SH"
	for group in ${SANDPIT_SH_TESTS:-files exec keeper main pool probe}; do
		"test_$group"
	done
done

[ "$SKIP" -gt 0 ] && echo "($SKIP skipped)"
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
