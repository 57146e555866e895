# Writes a file (files.c, sandbox_write_file). $1 target dir, $2 target,
# $3 temporary name, $4 size, $5 mode (octal); stdin holds exactly $4
# bytes. Runs as the sandbox user, in the target dir, where the temporary
# file is made (beside the target: the rename is atomic; a relative name:
# it never outgrows PATH_MAX where the target does not). head -c stops at
# an early EOF without a word, so the size is checked (stat; wc -c where
# stat fails, as coreutils' does under gVisor: busybox wc reads the whole
# file). A symlink as the target is replaced, never followed (mv would
# move into a directory it names).
# Exit 0 written; 3 the dir cannot be made; 4 the target is a directory;
# 5 the user may not write (the reason on stderr); 6 fewer bytes came than
# announced; 7 the folder was removed (by the sandbox) while the write
# ran: a failure in a folder that is gone — the working folder is no
# longer the one $1 names (test -ef, a builtin: same device and inode;
# under gVisor getcwd still answers for an unlinked folder, and a new
# folder may reuse the inode), as is a step after cd failing with ENOENT
# (the shells say "No such file or directory", "nonexistent directory",
# "Directory nonexistent"): in a folder we are in, only its removal makes
# a name vanish. Neither is a permission or transfer fault. The temporary
# file goes on any failure; noclobber creates it with O_EXCL.
d=$1 t=$2 f=$3 n=$4 m=$5
# shellcheck disable=SC3013 # -ef: busybox sh, dash and bash all have it, a builtin (tests/sh)
gone() { [ . -ef "$d" ] || exit 7; }
fail() { gone; case $1 in *'No such file'*|*onexistent*) exit 7;; esac
printf '%s\n' "${1##*: }" >&2; exit 5; }
mkdir -p -- "$d" 2>/dev/null || [ -d "$d" ] || exit 3
cd -- "$d" 2>/dev/null || { [ -d "$d" ] || exit 7; fail 'Permission denied'; }
[ -d "$t" ] && [ ! -L "$t" ] && exit 4
trap 'rm -f -- "$f" 2>/dev/null' EXIT
set -C; umask 077
e=$(head -c "$n" 2>&1 >"$f") || fail "$e"
s=$(stat -c %s -- "$f" 2>/dev/null || wc -c <"$f")
# the file vanished: so did its folder
[ -n "$s" ] || exit 7
[ "$s" -eq "$n" ] 2>/dev/null || { gone; exit 6; }
e=$(chmod -- "$m" "$f" 2>&1) || fail "$e"
if [ -L "$t" ] && [ -d "$t" ]; then e=$(rm -f -- "$t" 2>&1) || fail "$e"; fi
e=$(mv -f -- "$f" "$t" 2>&1) || fail "$e"
trap - EXIT
