# The network check of a server (netcheck.c), run in a probe container:
# $@ are host:port targets; one line per target: open|refused|filtered T.
for t in "$@"; do (h=${t%:*}; p=${t##*:}; o=$(nc -w 1 "$h" "$p" </dev/null 2>&1); r=$?; case $r:$o in 0:*) echo "open $t";; *refused*) echo "refused $t";; *) echo "filtered $t";; esac) & done; wait
