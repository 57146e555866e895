# Writes the container's expiry ($1, epoch s) and, unless $2 is empty, its
# timeout ($2, s) into /.sandpit, as the keeper: the only writer there
# (expiry.c, keeper_write). Exit 1: the timeout could not be written.
[ -z "$2" ] || printf '%s\n' "$2" >/.sandpit/timeout || exit 1
printf '%s\n' "$1" >/.sandpit/expires
