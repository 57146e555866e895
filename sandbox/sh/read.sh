# Prints a file (files.c, sandbox_read_file): $1 path. Exit 3 missing, 4
# not a regular file, 5 unreadable; at most 10 MiB + 1 byte (SB_FILE_MAX
# + 1: the caller sees one byte too many as too big).
. ./resolve.sh
[ -e "$p" ] || exit 3
[ -f "$p" ] || exit 4
[ -r "$p" ] || exit 5
exec head -c 10485761 -- "$p"
