# Runs a command ($1, with $0 = sh and $2... as its arguments) with the
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
sh -c "$c" sh "$@"
r=$?
exec 9<&-; rm -f "$x"
exit $r
