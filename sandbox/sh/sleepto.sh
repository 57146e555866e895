# The last step of a main process (main.sh, pool.sh), which include it
# (`. ./sleepto.sh`): becomes `sleep` until the deadline, d (epoch s) and m
# (its milliseconds, 3 digits), counted from now; exit 0 when it has
# passed. Expects H (the read-only helper's path: its now and sleep).
# shellcheck shell=sh disable=SC2154 # d m H: set by the includer
# The time left in ms, counted now: f is the current second's
# milliseconds (the helper's now has nanoseconds; an answer without them
# counts the second as about to end, f = 1000: ending up to 1 s early,
# never late); 250 ms (DEADLINE_LEAD_MS) earlier still, for the start
# of sleep and the runtime's teardown (under gVisor about 100-200 ms), so
# that the container has ended by deadlineAt (containerd's exit time).
n=$("$H" now)
case $n in
*[!0-9.]*|*.) f=1000;;
*) f=${n#*.}; f=$((1${f%??????} - 1000));;
esac
l=$(( (d - ${n%%.*}) * 1000 + 1$m - 1000 - f - 250 ))
[ "$l" -gt 0 ] || exit 0
exec "$H" sleep "$((l / 1000)).$(printf %03d $((l % 1000)))"
