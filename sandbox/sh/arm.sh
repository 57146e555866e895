# Arms a warm container (pool.c), run detached as the keeper: writes the
# deadline, the first expiry and the timeout, then wakes the main process
# (pool.sh) with USR2, waiting up to 2 s for it to be ready. $1 deadline
# (epoch s), $2 its milliseconds (3 digits), $3 expiry (epoch s), $4
# timeout (s). The timeout and the expiry only where sandpit has not
# written them first (this runs detached: a setTimeout may come before).
# Builtins and the read-only helper's sleep only, never PATH.
printf '%s %s %s %s\n' "$1" "$2" "$3" "$4" >/.sandpit/activate || exit 1
set -C
{ printf '%s\n' "$4" >/.sandpit/timeout; printf '%s\n' "$3" >/.sandpit/expires; } 2>/dev/null
set +C
i=0; while [ ! -s /.sandpit/main.pid ] && [ "$i" -lt 200 ]; do /.sandpit-helper/sandpit-helper-r sleep 0.01; i=$((i+1)); done
p=; read -r p </.sandpit/main.pid
kill -USR2 "$p"
