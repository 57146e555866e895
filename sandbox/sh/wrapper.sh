# Runs a command ($1, with $0 = sh and $2... as its arguments; an empty
# $1: $2... are a program and its arguments, run as they are, through a
# subshell's exec rather than a second sh) with the
# marker file /.sandpit/x/$SANDPIT_EXEC open on fd 9 (see kill.sh), and
# exits with its status (exec.c, sandbox_exec_run). /.sandpit/x is the one
# folder of /.sandpit the sandbox user may write; the expiry beside it is
# the keeper's. A working folder that resolves into /proc (a symlink
# planted in the sandbox) ends it at once with exit 125 (exec.c's
# CWD_PROC_CODE), before anything runs (see cwd.sh). The working folder is
# taken as the kernel resolved it (symlinks followed): never /proc
# (RELIABILITY H5); cd -P is a builtin, no fork.
cd -P . 2>/dev/null && case $PWD in /proc|/proc/*) exit 125;; esac
x=/.sandpit/x/$SANDPIT_EXEC; : >"$x" 2>/dev/null && exec 9<"$x"
c=$1; shift
if [ -n "$c" ]; then sh -c "$c" sh "$@"; else (exec "$@"); fi
r=$?
exec 9<&-; rm -f "$x"
exit $r
