# Lists a folder (files.c, sandbox_list_files): $1 dir. Exit 3 missing, 4
# not a directory, 5 it cannot be entered. GNU find gives metadata: "F\0",
# then "type\tsize\tmtime\tmode\tname\0" per entry; elsewhere (busybox)
# names and types only: "N\0", then "type\tname\0" (type f, d, l or o).
. ./resolve.sh
[ -e "$p" ] || exit 3
[ -d "$p" ] || exit 4
if find "$p" -maxdepth 0 -printf '' >/dev/null 2>&1; then
  printf 'F\000'; exec find "$p" -mindepth 1 -maxdepth 1 -printf '%y\t%s\t%T@\t%m\t%f\000'
fi
cd -- "$p" || exit 5
printf 'N\000'
for f in * .*; do
  [ "$f" = . ] || [ "$f" = .. ] && continue
  if [ -L "$f" ]; then y=l; elif [ -d "$f" ]; then y=d; elif [ -f "$f" ]; then y=f;
  elif [ -e "$f" ]; then y=o; else continue; fi
  printf '%s\t%s\000' "$y" "$f"
done
