# The container's main process (spec.c, sandbox_container_spec), run as the
# keeper uid (the container's User; every sandbox-user action passes its
# user to ExecCreate). $1 and $2 are deadlineAt: its epoch seconds and its
# milliseconds (3 digits); $3 is the first expiry (epoch seconds), $4 the
# timeout (s), $5 the keeper uid. It writes the expiry and the timeout to
# /.sandpit, a tmpfs only the keeper can write (mode 0755), and starts the
# watcher (watcher.sh). The main process itself is `sleep` until the
# deadline: it needs no fork, and the container stops then even with
# nothing of sandpit running. sleep and date are looked up once, before any
# command of the sandbox runs. Exit 127: the image lacks sleep or date.
for c in sleep date; do command -v $c >/dev/null 2>&1 || { echo "sandpit: image lacks $c" >&2; exit 127; }; done
S=$(command -v sleep) D=$(command -v date)
d=$1 m=$2 e=$3 t=$4 k=$5
printf '%s\n' "$t" >/.sandpit/timeout
printf '%s\n' "$e" >/.sandpit/expires
. ./watcher.sh
# The time left in ms, counted when the container starts: f is the current
# second's milliseconds where date knows %N (GNU); where it does not
# (busybox) the second may be about to end, so f = 1000: ending up to 1 s
# early, never late; 250 ms (DEADLINE_LEAD_MS) earlier still, for the start
# of sleep and the runtime's teardown (under gVisor about 100-200 ms), so
# that Docker sees the container end by deadlineAt.
n=$("$D" +%s.%N)
case $n in
*[!0-9.]*|*.) f=1000;;
*) f=${n#*.}; f=$((1${f%??????} - 1000));;
esac
l=$(( (d - ${n%%.*}) * 1000 + 1$m - 1000 - f - 250 ))
[ "$l" -gt 0 ] || exit 0
exec "$S" "$((l / 1000)).$(printf %03d $((l % 1000)))"
