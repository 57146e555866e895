#!/bin/sh
# Builds the dashboard into OUT (make: build/web): the sources in web/src as
# they are, and xterm.js with its fit addon from the npm registry (web/
# package-lock.json, installed here by npm ci when missing or out of date),
# copied beside them. Nothing is fetched at run time. Prints the bundle's
# size, raw and gzipped.
set -eu
out=$1
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
if [ ! -f node_modules/@xterm/xterm/lib/xterm.mjs ] || [ ! -f node_modules/@xterm/addon-fit/lib/addon-fit.mjs ] ||
	[ package-lock.json -nt node_modules/.package-lock.json ]; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "web/build.sh: npm is needed for xterm.js (Debian: apt-get install npm, unless your nodejs brings it)" >&2
		exit 1
	fi
	npm ci --silent --no-audit --no-fund
fi
rm -rf "$out.tmp"
mkdir -p "$out.tmp/vendor"
cp src/index.html src/app.css src/app.js "$out.tmp/"
# the modules without their source-map comment (the maps are not shipped)
sed '/^\/\/# sourceMappingURL=/d' node_modules/@xterm/xterm/lib/xterm.mjs >"$out.tmp/vendor/xterm.mjs"
sed '/^\/\/# sourceMappingURL=/d' node_modules/@xterm/addon-fit/lib/addon-fit.mjs >"$out.tmp/vendor/addon-fit.mjs"
cp node_modules/@xterm/xterm/css/xterm.css "$out.tmp/vendor/"
rm -rf "$out"
mv "$out.tmp" "$out"
raw=$(cat "$out"/*.* "$out"/vendor/* | wc -c)
gz=$(cat "$out"/*.* "$out"/vendor/* | gzip -9 | wc -c)
echo "  WEB     $out: $(find "$out" -type f | wc -l) files, $((raw / 1024)) KiB ($((gz / 1024)) KiB gzipped)"
