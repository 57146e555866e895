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
# sleep until the deadline (sleepto.sh). Like main.sh, it resolves nothing
# through PATH: sleep and the clock are the read-only helper's (H). Exit
# 127: the helper is not there; exit 0 at the pool expiry.
trap 'go=1' USR1
trap 'go=2' USR2
H=/.sandpit-helper/sandpit-helper-r k=$4
[ -x "$H" ] || exit 127
echo $$ >/.sandpit/main.pid
go=; e=$1
while [ -z "$go" ]; do
  n=$("$H" now) || exit 0
  n=${n%%.*}
  # a signal that came while the clock ran: its trap has run by now
  [ -z "$go" ] || break
  [ "$n" -lt "$e" ] || exit 0
  "$H" sleep $((e - n)) & w=$!
  wait $w; kill $w 2>/dev/null
done
if [ "$go" = 1 ]; then n=$("$H" now); n=${n%%.*}; d=$((n + $2 - 1)); m=000; e=$((n + $3)); t=$3; set -C; { printf '%s\n' "$t" >/.sandpit/timeout; printf '%s\n' "$e" >/.sandpit/expires; } 2>/dev/null; set +C; else read -r d m e t </.sandpit/activate; fi
. ./watcher.sh
. ./sleepto.sh
