# What a killed write left behind (files.c): $1 dir, $2 temporary name.
cd -- "$1" 2>/dev/null && rm -f -- "$2"
