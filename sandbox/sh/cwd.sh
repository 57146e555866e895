# Whether $1, resolved as the sandbox user sees it (symlinks followed), is
# /proc or under it: exit 0 if so, 1 otherwise or when it cannot be
# entered (exec.c, cwd_in_proc).
cd -P -- "$1" 2>/dev/null || exit 1
case $PWD in /proc|/proc/*) exit 0;; esac
exit 1
