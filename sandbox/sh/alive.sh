# Whether the process $1 ("PID:START") still runs: exit 0 when /proc/PID
# exists with that start time (field 22 of its stat, counted after the
# command name's last ')', which may hold spaces), 1 otherwise (exec.c,
# fast_still_running: a fast-path command after its kill, as docker exec
# inspect tells of an exec's). Builtins and cat only.
p=${1%%:*} t=${1#*:}
s=$(cat "/proc/$p/stat" 2>/dev/null) || exit 1
s=${s##*) }
# shellcheck disable=SC2086 # the fields, split on purpose
set -- $s
[ "${20}" = "$t" ]
