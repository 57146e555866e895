# Kills every process (other than itself) whose environment holds
# SANDPIT_EXEC=$1, or that holds the marker file /.sandpit/x/$1 open (the
# wrapper, wrapper.sh, opens it on fd 9, so a command that clears its
# environment, `env -i`, is still found), repeating until a pass finds none,
# so children forked meanwhile die too; then removes the file (exec.c,
# kill_marked). environ is NUL-separated: busybox grep stops a line at the
# first NUL, so the variables are split into lines with tr first. Open
# files are compared with test -ef: a builtin (no fork, and no ls, whose
# statx runsc 20221219 fails), and first, so that only a process that
# closed fd 9 costs the two forks of the environment's check (a pass must
# end within exec.c's 10 s, under gVisor on a loaded host too). Exit 0
# when a pass found none; non-zero after 50 passes, or when a pass cannot
# fork (the caller then kills the container). SANDPIT_EXEC is exec.c's
# MARKER_VAR.
# The marker is held open on fd 8 and compared through /proc/$$/fd/8, so
# it still matches once unlinked: the wrapper removes it when its command
# ends, which a pass's own kill of that command can let happen mid-pass
# (the /proc glob is in text order: pid 9 after 10..99). `command` keeps a
# failed open from ending this shell; the pipeline's commands close fd 8,
# so none of them reads as a holder.
m="SANDPIT_EXEC=$1" xp="/.sandpit/x/$1"; x=$xp; n=0
[ -e "$xp" ] && command exec 8<"$xp" 2>/dev/null && x=/proc/$$/fd/8
while [ $n -lt 50 ]; do f=0
for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = "$$" ] && continue
k=0
# shellcheck disable=SC3013 # -ef: busybox sh, dash and bash all have it, a builtin (tests/sh)
for g in "$d"/fd/*; do [ "$g" -ef "$x" ] && k=1 && break; done
[ $k = 0 ] && tr '\000' '\n' 2>/dev/null 8<&- <"$d/environ" | grep -q -x -F -e "$m" 8<&- && k=1
[ $k = 1 ] && kill -9 "$p" 2>/dev/null && f=1
done
[ $f = 0 ] && { rm -f "$xp"; exit 0; }; n=$((n+1))
done
exit 1
