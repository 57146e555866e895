# The container's main process (spec.c, sandbox_container_spec), run as the
# keeper uid (the container's User; every sandbox-user action passes its
# user to ExecCreate). $1 and $2 are deadlineAt: its epoch seconds and its
# milliseconds (3 digits); $3 is the first expiry (epoch seconds), $4 the
# timeout (s), $5 the keeper uid (an expiry already past is now + timeout).
# It writes the expiry and the timeout to /.sandpit, a tmpfs only the
# keeper can write (mode 0755), unless sandpit did first, and starts the
# watcher (watcher.sh). The main process itself is `sleep` until the
# deadline: it needs no fork, and the container stops then even with
# nothing of sandpit running. It runs no program of the image's or of a
# volume's, and resolves nothing through PATH: sleep and the clock are the
# read-only helper's (H, by its absolute path), the rest builtins. H is
# the helper's readable copy: gVisor execs no file its caller cannot read,
# and the keeper needs no execute-only copy (no process of the sandbox
# user's may open a process of another uid's /proc/PID/fd). Exit 127: the
# helper is not there.
H=/.sandpit-helper/sandpit-helper-r
[ -x "$H" ] || { echo "sandpit: no helper at $H" >&2; exit 127; }
d=$1 m=$2 e=$3 t=$4 k=$5
# a docker start of a stopped container (stop_mode discard) runs this
# again with the same arguments: an expiry already past counts from now
n=$("$H" now) && n=${n%%.*} && [ "$e" -le "$n" ] && { e=$((n + t)); [ "$e" -le "$d" ] || e=$d; }
# only where sandpit has not written them yet: a setTimeout or an expiry
# move may land between the start and this line (set -C: O_EXCL)
set -C
{ printf '%s\n' "$t" >/.sandpit/timeout; printf '%s\n' "$e" >/.sandpit/expires; } 2>/dev/null
set +C
. ./watcher.sh
. ./sleepto.sh
