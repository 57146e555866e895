# Sets p to $1 resolved one component at a time by readlink -f (where it
# works; $1 as given otherwise): gVisor (runsc 20221219) resolves a path
# through a symlink to "/" as "/" itself (root -> /: root/root is "/", not
# /root), readlink -f resolves it as the kernel would. The "x" keeps a name
# that ends in a newline. Shared by read.sh and list.sh, which include it.
# shellcheck shell=sh
p=$1
r=$(readlink -f -- "$p" 2>/dev/null && echo x) && p=${r%?x}
