# The watcher, shared by the main process of a cold sandbox (main.sh) and
# of a warm one (pool.sh), which include it (`. ./watcher.sh`: the build
# puts its text in their place). It runs as the keeper uid, like the main
# process, out of the sandbox user's reach (another uid, every capability
# dropped: it cannot be signalled, stopped or traced from inside). Expects
# d (deadline, epoch s), e (expiry, epoch s), t (timeout, s), k (the keeper
# uid) and H (the read-only helper: its sleep and now). Every 5 s (or
# sooner, when the expiry is less than 5 s away: then at its second) it re-reads
# /.sandpit/expires and /.sandpit/timeout (written by sandpit as the
# keeper; a value it cannot read keeps the last one), counts as activity a
# process other than PID 1 with PPid 0 that is not the keeper's (only
# docker exec makes those: a command sandpit started is running) and then
# moves the expiry to now + timeout (never past the deadline; the file is
# read again just before, so that an expiry sandpit wrote during the scan
# is not lowered), and stops
# the main process ($$) once the expiry passes. Only builtins and the
# helper, by its absolute path (never PATH): if it cannot fork it ends, and the deadline sleep and sandpit's
# reaper still end the sandbox.
# shellcheck shell=sh disable=SC2154 # d e t k H: set by the includer
(q=5; while "$H" sleep $q; do n=$("$H" now) || exit 0
n=${n%%.*}
x=; read -r x </.sandpit/expires 2>/dev/null; case $x in ''|*[!0-9]*) ;; *) e=$x;; esac
x=; read -r x </.sandpit/timeout 2>/dev/null; case $x in ''|*[!0-9]*) ;; *) t=$x;; esac
a=0
for f in /proc/[0-9]*/status; do [ "$f" = /proc/1/status ] && continue; p=; u=
# shellcheck disable=SC2034 # w takes the rest of the line: z is one field
{ while read -r y z w; do case $y in PPid:) p=$z;; Uid:) u=$z; break;; esac; done <"$f"; } 2>/dev/null
[ "$p" = 0 ] && [ -n "$u" ] && [ "$u" != "$k" ] && a=1 && break
done
if [ $a = 1 ]; then x=$((n + t)); [ "$x" -le "$d" ] || x=$d; [ "$x" -le "$e" ] || { y=; read -r y </.sandpit/expires 2>/dev/null; case $y in ''|*[!0-9]*) ;; *) [ "$y" -le "$e" ] || e=$y;; esac; [ "$x" -le "$e" ] || { e=$x; printf '%s\n' "$e" >/.sandpit/expires; }; }; fi
[ "$n" -ge "$e" ] && kill $$ && exit 0
q=$((e - n)); [ "$q" -lt 5 ] || q=5; [ "$q" -gt 0 ] || q=1
done) &
