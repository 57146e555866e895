# The main process of a warm pool's container (pool.c). Runs as the
# keeper, like a cold sandbox's main process. $1: the pool expiry (epoch
# s); $2, $3: the default lifetime and inactivity timeout (s); $4: the
# keeper uid. USR1 arms it with those defaults, computed here (a claim then
# costs one signal): the deadline is the lifetime from the second it wakes
# in, less 1 s, so that it falls before the record's (sandpit counts the
# lifetime from before the signal; a wake more than 1 s late could still
# end it after). USR2 arms it with "deadline deadline-ms expiry timeout"
# read from /.sandpit/activate (written by arm.sh, as the keeper): the
# record's own deadline, so the time the arming took is not added to it.
# The defaults are written as main.sh writes them: only where sandpit has
# not written a timeout or an expiry first. Then it becomes the usual main process: the watcher (watcher.sh) plus
# sleep until the deadline (sleepto.sh). Exit 127: the image lacks sleep
# or date; exit 0 at the pool expiry.
trap 'go=1' USR1
trap 'go=2' USR2
for c in sleep date; do command -v $c >/dev/null 2>&1 || exit 127; done
S=$(command -v sleep) D=$(command -v date) k=$4
echo $$ >/.sandpit/main.pid
go=; e=$1
while [ -z "$go" ]; do
  n=$("$D" +%s) || exit 0
  [ "$n" -lt "$e" ] || exit 0
  "$S" $((e - n)) & w=$!
  wait $w; kill $w 2>/dev/null
done
if [ "$go" = 1 ]; then n=$("$D" +%s); d=$((n + $2 - 1)); m=000; e=$((n + $3)); t=$3; set -C; { printf '%s\n' "$t" >/.sandpit/timeout; printf '%s\n' "$e" >/.sandpit/expires; } 2>/dev/null; set +C; else read -r d m e t </.sandpit/activate; fi
. ./watcher.sh
. ./sleepto.sh
