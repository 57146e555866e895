#!/usr/bin/env bash
# Builds the template images from Debian's packages and the npm registry
# (the only registries this machine reaches), one at a time, under nice:
#
#   sandpit/base    debootstrap --variant=minbase bookworm, upgraded, plus
#                   ca-certificates curl git procps unzip xz-utils; user 1000
#   sandpit/busybox busybox-static (the "alpine" template: no apk, see README)
#   sandpit/python  + python3 (full standard library), pip, venv
#   sandpit/node    + nodejs, npm
#   sandpit/bun     + bun (the binary of npm's @oven/bun-linux-x64)
#   sandpit/deno    + deno (the binary of npm's @deno/linux-x64-glibc)
#   sandpit/go      + golang-go, gcc (cgo)
#   sandpit/rust    + rustc, cargo (gcc links)
#   sandpit/ruby    + ruby, bundler
#   sandpit/java    + openjdk-17-jdk-headless
#   sandpit/php     + php-cli, composer
#
# Every language image is sandpit/base's layer plus one layer of its own:
# the language is apt-get installed in a chroot on an overlay of the base
# root (the overlay's upper folder is the layer), and the image is put
# together with `docker load`, so the base layer is stored once. The apt
# archives are cached in $CACHE/templates/apt-archives (bind-mounted as
# /var/cache/apt/archives while installing), the npm tarballs in
# $CACHE/templates/npm, the base layer in $CACHE/templates/base-*.tar: a
# rebuild downloads nothing.
#
# Each image carries labels:
#   sandpit.template  the template it is built for
#   sandpit.version   the language version, probed in the image once at build
#                     (sandpitd shows it in sandbox.templates)
#   sandpit.recipe    a hash of the image's recipe (the recipe_* function
#                     below and the base's); an image whose label matches is
#                     not rebuilt, a changed recipe rebuilds that image only
#
# Every image: user 1000:1000 (`user`, home /home/user), HOME=/home/user,
# LANG=C.UTF-8, a world-writable /tmp, CMD ["sh"].
#
# usage: images/build.sh [--force] [--check] [--list] [NAME...]
#   NAME     base busybox python node bun deno go rust ruby java php (default all)
#   --force  rebuild even when the recipe label matches
#   --check  build nothing; exit 1 (naming them) when an image is missing
#            or out of date
#   --list   print "NAME IMAGE SIZE VERSION" for the images present
# env: SANDPIT_IMAGE_CACHE     cache folder (default /var/cache/sandpit-images)
#      SANDPIT_DEBIAN_MIRROR   mirror (default: the host's debian.sources)
#      SANDPIT_DEBIAN_SECURITY security mirror (default: the host's, or
#                              http://deb.debian.org/debian-security)
# shellcheck disable=SC2016,SC2317 # recipe commands run in the image; setup runs indirectly
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${SANDPIT_IMAGE_CACHE:-/var/cache/sandpit-images}
TC=$CACHE/templates
SUITE=bookworm
PREFIX=sandpit
ALL=(base busybox python node bun deno go rust ruby java php)
# Bumped when the assembly below changes in a way that changes images.
BUILDER=1

force=0
check=0
list=0
want=()
for a in "$@"; do
	case "$a" in
	--force) force=1 ;;
	--check) check=1 ;;
	--list) list=1 ;;
	-h | --help) sed -n '2,47p' "$0"; exit 0 ;;
	base | busybox | python | node | bun | deno | go | rust | ruby | java | php) want+=("$a") ;;
	*) echo "images: unknown argument: $a (see --help)" >&2; exit 2 ;;
	esac
done
[ ${#want[@]} -eq 0 ] && want=("${ALL[@]}")

say() { echo "images: $*" >&2; }
die() { say "$*"; exit 1; }

command -v docker >/dev/null || die "docker CLI not found"
docker info >/dev/null 2>&1 || die "no Docker daemon answers"

# --- recipes -----------------------------------------------------------------
# A recipe sets PKGS (apt packages on top of the base), ENVS (image env
# besides PATH, HOME, LANG), VERSION (a command run in the image root that
# prints the version line) and may define setup ROOT (run as root in the
# build, after the packages). Its text is hashed into sandpit.recipe.

recipe_base() {
	PKGS="ca-certificates curl git procps unzip xz-utils"
	ENVS=()
	VERSION='echo "Debian $(cat /etc/debian_version)"'
	# no manuals, docs (but the copyright files) or translations, as in
	# Debian's slim images: about 70 MB less in every image
	setup() {
		printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
			'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' \
			'path-exclude /usr/share/locale/*' 'path-exclude /usr/share/lintian/*' \
			>"$1/etc/dpkg/dpkg.cfg.d/sandpit-slim"
		find "$1/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
		rm -rf "$1"/usr/share/man/* "$1"/usr/share/info/* "$1"/usr/share/locale/* "$1"/usr/share/lintian/*
		# update-alternatives links manuals there (openjdk fails without)
		mkdir -p "$1"/usr/share/man/man1 "$1"/usr/share/man/man7 "$1"/usr/share/man/man8
	}
}

recipe_busybox() {
	# not on the base: a root of busybox-static's applets only
	PKGS="busybox-static"
	ENVS=()
	VERSION='busybox | head -n 1 | sed "s/^\(BusyBox v[^ ]*\).*/\1/"'
}

recipe_python() {
	PKGS="python3 python3-pip python3-venv python3-distutils python3-lib2to3 python3-setuptools python3-wheel"
	ENVS=(PATH=/home/user/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
		PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1)
	VERSION='echo "$(python3 --version), pip $(python3 -m pip --version | cut -d" " -f2)"'
	# a sandbox is the whole system: `pip install` (as --user, the system
	# site-packages are root's) works as in the python images
	setup() { rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED; }
}

recipe_node() {
	PKGS="nodejs npm"
	ENVS=(NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false)
	VERSION='echo "Node.js $(node --version | tr -d v), npm $(npm --version)"'
}

recipe_bun() {
	PKGS=""
	NPM_PKG=@oven/bun-linux-x64@1.4.5
	ENVS=(BUN_RUNTIME_TRANSPILER_CACHE_PATH=0)
	VERSION='echo "Bun $(bun --version)"'
	setup() {
		npm_binary "$NPM_PKG" package/bin/bun "$1/usr/local/bin/bun"
		ln -sf bun "$1/usr/local/bin/bunx"
	}
}

recipe_deno() {
	PKGS=""
	NPM_PKG=@deno/linux-x64-glibc@2.9.6
	ENVS=(DENO_NO_UPDATE_CHECK=1 DENO_NO_PROMPT=1)
	VERSION='deno --version | head -n 1 | sed "s/^deno \([^ ]*\).*/Deno \1/"'
	setup() { npm_binary "$NPM_PKG" package/deno "$1/usr/local/bin/deno"; }
}

recipe_go() {
	PKGS="golang-go gcc libc6-dev"
	ENVS=(PATH=/home/user/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
	VERSION='go version | sed "s/^go version go\([^ ]*\).*/Go \1/"'
}

recipe_rust() {
	PKGS="rustc cargo gcc libc6-dev"
	ENVS=(PATH=/home/user/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
	VERSION='echo "Rust $(rustc --version | cut -d" " -f2), cargo $(cargo --version | cut -d" " -f2)"'
}

recipe_ruby() {
	PKGS="ruby bundler"
	ENVS=(PATH=/home/user/.gem/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
	VERSION='echo "Ruby $(ruby -e "print RUBY_VERSION"), Bundler $(bundle --version | sed "s/.* //")"'
}

recipe_java() {
	PKGS="openjdk-17-jdk-headless"
	ENVS=(JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64)
	VERSION='echo "OpenJDK $(javac -version 2>&1 | cut -d" " -f2)"'
}

recipe_php() {
	PKGS="php-cli composer"
	ENVS=(COMPOSER_NO_INTERACTION=1
		PATH=/home/user/.config/composer/vendor/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
	VERSION='echo "PHP $(php -r "echo PHP_VERSION;"), Composer $(composer --version 2>/dev/null | cut -d" " -f3)"'
}

# npm_binary PKG@VERSION PATH_IN_TARBALL DEST: the binary of an npm package
# (npm pack, cached in $TC/npm; npm checks the registry's integrity hash).
npm_binary() {
	local spec=$1 inner=$2 dest=$3 tgz
	tgz=$TC/npm/$(echo "$spec" | sed 's|^@||; s|/|-|; s|@|-|').tgz
	if [ ! -s "$tgz" ]; then
		command -v npm >/dev/null || die "npm missing (it fetches $spec)"
		say "  npm pack $spec"
		local d
		d=$(mktemp -d "$WORK/npm.XXXXXX")
		(cd "$d" && npm pack "$spec" --silent >/dev/null) || die "npm pack $spec failed"
		mv "$d"/*.tgz "$tgz"
	fi
	mkdir -p "$(dirname "$dest")"
	tar -xzOf "$tgz" "$inner" >"$dest"
	chmod 755 "$dest"
}

# load_recipe NAME: clears the recipe variables and runs recipe_NAME.
load_recipe() {
	PKGS=""
	ENVS=()
	VERSION=""
	NPM_PKG=""
	unset -f setup 2>/dev/null || true
	"recipe_$1"
}

# recipe_hash NAME: the hash the image's sandpit.recipe label must hold.
recipe_hash() {
	{
		echo "builder $BUILDER suite $SUITE"
		declare -f recipe_base
		[ "$1" = base ] || declare -f "recipe_$1"
		if [ "$1" = bun ] || [ "$1" = deno ]; then declare -f npm_binary; fi
	} | sha256sum | cut -c1-16
}

image_of() { echo "$PREFIX/$1:latest"; }

label_of() { # IMAGE LABEL
	docker image inspect -f "{{ index .Config.Labels \"$2\" }}" "$1" 2>/dev/null || true
}

current() { [ "$(label_of "$(image_of "$1")" sandpit.recipe)" = "$(recipe_hash "$1")" ]; }

human() { awk -v b="$1" 'BEGIN { split("B KB MB GB", u); i = 1; while (b >= 1000 && i < 4) { b /= 1000; i++ } printf (i == 1 ? "%d %s" : "%.1f %s"), b, u[i] }'; }

if [ $list -eq 1 ]; then
	for n in "${want[@]}"; do
		img=$(image_of "$n")
		size=$(docker image inspect -f '{{.Size}}' "$img" 2>/dev/null) || continue
		printf '%-8s %-24s %9s  %s\n' "$n" "$img" "$(human "$size")" "$(label_of "$img" sandpit.version)"
	done
	exit 0
fi

if [ $check -eq 1 ]; then
	stale=()
	for n in "${want[@]}"; do current "$n" || stale+=("$n"); done
	[ ${#stale[@]} -eq 0 ] && exit 0
	say "missing or out of date: ${stale[*]}"
	exit 1
fi

[ "$(id -u)" -eq 0 ] || die "must run as root (chroot, mount)"
command -v jq >/dev/null || die "jq missing (apt-get install jq)"

mirror=${SANDPIT_DEBIAN_MIRROR:-}
security=${SANDPIT_DEBIAN_SECURITY:-}
if [ -r /etc/apt/sources.list.d/debian.sources ]; then
	[ -n "$mirror" ] || mirror=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
		/etc/apt/sources.list.d/debian.sources)
	[ -n "$security" ] || security=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /security/) { print $i; exit } }' \
		/etc/apt/sources.list.d/debian.sources)
fi
mirror=${mirror:-http://deb.debian.org/debian}
security=${security:-http://deb.debian.org/debian-security}

mkdir -p "$TC/apt-archives/partial" "$TC/npm"
# The debootstrap'd bookworm minbase (cached by tests/images/build.sh).
RAW_TAR=$CACHE/debian-$SUITE-minbase-raw.tar
if [ ! -s "$RAW_TAR" ]; then
	nice bash "$REPO/tests/images/build.sh" rootfs || die "tests/images/build.sh rootfs failed"
fi
# One template build at a time on this machine.
exec 9>"$TC/.lock"
if ! flock -n 9; then
	say "another images/build.sh runs; waiting for it"
	flock 9
fi

WORK=$(mktemp -d /tmp/sandpit-templates.XXXXXX)
mounts=()
cleanup() {
	local i
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[$i]}" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

mnt() { # mount ARGS... (the last one is the mount point)
	mount "$@"
	mounts+=("${!#}")
}
umnt_all() {
	local i
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[$i]}"; done
	mounts=()
}

# in_root ROOT CMD: CMD with sh as root in the chroot, a clean environment.
in_root() {
	nice chroot "$1" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive sh -c "$2"
}

# apt_install ROOT LOG PKGS: apt-get install from the lists the root holds;
# an apt-get update and one more try when the mirror has moved on.
apt_install() {
	local r=$1 log=$2 pkgs=$3
	[ -n "$pkgs" ] || return 0
	say "  apt-get install $pkgs"
	if ! in_root "$r" "apt-get install -y -q --no-install-recommends $pkgs ||
		{ apt-get update -q && apt-get install -y -q --no-install-recommends $pkgs; }" >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		die "apt-get install $pkgs failed (log above)"
	fi
	grep -E '^(Need to get|[0-9]+ upgraded)' "$log" | sed 's/^/images:   /' >&2 || true
}

# prepare_root ROOT: what a build needs inside the root, kept out of images.
prepare_root() {
	local r=$1
	cp /etc/resolv.conf "$r/etc/resolv.conf"
	# the mirror may be a dated snapshot: do not reject its Release files
	printf 'Acquire::Check-Valid-Until "false";\nAcquire::Check-Date "false";\n' \
		>"$r/etc/apt/apt.conf.d/99sandpit-build"
	printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
	chmod 755 "$r/usr/sbin/policy-rc.d"
}

# mount_build ROOT: proc and the shared apt archive cache.
mount_build() {
	mnt -t proc proc "$1/proc"
	mkdir -p "$1/var/cache/apt/archives"
	mnt --bind "$TC/apt-archives" "$1/var/cache/apt/archives"
}

# env_json ENV...: the image env as a JSON array (PATH unless given).
env_json() {
	local e have_path=0
	for e in "$@"; do case $e in PATH=*) have_path=1 ;; esac; done
	{
		[ $have_path -eq 1 ] || echo "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
		echo "HOME=/home/user"
		echo "LANG=C.UTF-8"
		for e in "$@"; do echo "$e"; done
	} | jq -R . | jq -s .
}

# load_image NAME VERSION HASH LAYER_TAR...: docker load of an image made of
# the given layer tarballs (bottom first). Layers the daemon holds already
# (the base) are not sent.
load_image() {
	local name=$1 version=$2 hash=$3 d="$WORK/img-$1" created diffs="" layers="" l i=0 img
	shift 3
	img=$(image_of "$name")
	mkdir -p "$d"
	created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	for l in "$@"; do
		diffs="$diffs sha256:$(cat "$l.sha256")"
		layers="$layers $i/layer.tar"
		mkdir -p "$d/$i"
		i=$((i + 1))
	done
	jq -n --arg created "$created" --arg name "$name" --arg version "$version" --arg hash "$hash" \
		--argjson env "$(env_json "${ENVS[@]}")" --arg diffs "$diffs" '{
		architecture: "amd64", os: "linux", created: $created,
		config: { Env: $env, Cmd: ["sh"], User: "1000:1000", WorkingDir: "/home/user",
			Labels: { "sandpit.template": $name, "sandpit.version": $version,
				"sandpit.recipe": $hash } },
		rootfs: { type: "layers", diff_ids: ($diffs | split(" ") | map(select(. != ""))) },
		history: [ ($diffs | split(" ") | map(select(. != "")) | .[] |
			{ created: $created, created_by: "images/build.sh" }) ] }' >"$d/config.json"
	jq -n --arg img "$img" --arg layers "$layers" \
		'[{ Config: "config.json", RepoTags: [$img],
		    Layers: ($layers | split(" ") | map(select(. != ""))) }]' >"$d/manifest.json"
	# first without the lower layers (the daemon has them when an image
	# built on the base exists), then, if that fails, with all of them
	add_layer() { ln "$1" "$d/$2/layer.tar" 2>/dev/null || cp "$1" "$d/$2/layer.tar"; }
	add_layer "${!#}" $(($# - 1))
	if ! tar -C "$d" -cf - . | docker load -q >"$WORK/load.log" 2>&1; then
		i=0
		for l in "$@"; do
			[ -e "$d/$i/layer.tar" ] || add_layer "$l" $i
			i=$((i + 1))
		done
		if ! tar -C "$d" -cf - . | docker load -q >"$WORK/load.log" 2>&1; then
			cat "$WORK/load.log" >&2
			die "docker load of $img failed"
		fi
	fi
	rm -rf "$d"
}

# layer_tar DIR TAR: DIR as a layer tarball (numeric owners) and its digest.
layer_tar() {
	tar -C "$1" --numeric-owner -cf "$2.tmp" .
	sha256sum "$2.tmp" | cut -d' ' -f1 >"$2.sha256"
	mv "$2.tmp" "$2"
}

# The image build's leftovers, removed from a root or an overlay upper.
strip_build() {
	local r=$1
	rm -rf "$r"/var/lib/apt/lists "$r"/var/cache/apt/*.bin "$r"/var/cache/apt/archives \
		"$r"/var/log/apt "$r"/var/log/dpkg.log "$r"/var/log/alternatives.log \
		"$r"/var/cache/debconf/*-old "$r"/var/lib/dpkg/*-old \
		"$r"/etc/apt/apt.conf.d/99sandpit-build "$r"/usr/sbin/policy-rc.d \
		"$r"/root/.cache "$r"/root/.npm "$r"/tmp/* "$r"/var/tmp/*
}

verify() { # IMAGE SCRIPT
	local out
	if ! out=$(docker run --rm --network none --user 1000:1000 -e HOME=/home/user "$1" sh -c "$2" 2>&1); then
		echo "$out" >&2
		die "verification of $1 failed: $2"
	fi
}

# --- base ----------------------------------------------------------------------
# base-$hash.tar: the base layer (no apt lists); base-root-$hash.tar: the
# same root with the apt lists, the lower folder of the language builds.
BASE_HASH=$(recipe_hash base)
BASE_LAYER=$TC/base-$BASE_HASH.tar
BASE_ROOT_TAR=$TC/base-root-$BASE_HASH.tar

build_base_tars() {
	local r="$WORK/base" log="$WORK/base-apt.log"
	load_recipe base
	say "  base root from $RAW_TAR"
	mkdir -p "$r"
	tar -C "$r" --numeric-owner -xf "$RAW_TAR"
	printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' \
		"$mirror" $SUITE "$mirror" $SUITE "$security" $SUITE >"$r/etc/apt/sources.list"
	prepare_root "$r"
	setup "$r"
	mount_build "$r"
	say "  apt-get update && apt-get upgrade"
	if ! in_root "$r" 'apt-get update -q && apt-get -y -q upgrade' >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		die "apt-get update/upgrade in the base failed"
	fi
	apt_install "$r" "$log" "$PKGS"
	umnt_all
	grep -q '^user:' "$r/etc/passwd" || echo "user:x:1000:1000::/home/user:/bin/bash" >>"$r/etc/passwd"
	grep -q '^user:' "$r/etc/group" || echo 'user:x:1000:' >>"$r/etc/group"
	grep -q '^user:' "$r/etc/shadow" || echo 'user:*:19000:0:99999:7:::' >>"$r/etc/shadow"
	grep -q '^user:' "$r/etc/gshadow" || echo 'user:*::' >>"$r/etc/gshadow"
	mkdir -p "$r/home/user"
	chown 1000:1000 "$r/home/user"
	chmod 755 "$r/home/user"
	chmod 1777 "$r/tmp" "$r/var/tmp"
	echo sandpit >"$r/etc/hostname"
	rm -rf "$r"/var/cache/apt/*.bin "$r"/var/log/apt/* "$r"/var/log/dpkg.log
	# the root with lists: the lower folder of the language builds
	tar -C "$r" --numeric-owner -cf "$BASE_ROOT_TAR.tmp" .
	mv "$BASE_ROOT_TAR.tmp" "$BASE_ROOT_TAR"
	strip_build "$r"
	mkdir -p "$r/var/lib/apt/lists/partial" "$r/var/cache/apt/archives/partial"
	: >"$r/etc/resolv.conf"
	layer_tar "$r" "$BASE_LAYER"
	rm -rf "$r"
	# older base tarballs
	find "$TC" -maxdepth 1 -name 'base-*.tar*' ! -name "base-$BASE_HASH.tar*" \
		! -name "base-root-$BASE_HASH.tar" -delete
}

LOWER=""
base_lower() {
	[ -n "$LOWER" ] && return 0
	LOWER="$WORK/lower"
	mkdir -p "$LOWER"
	tar -C "$LOWER" --numeric-owner -xf "$BASE_ROOT_TAR"
	prepare_root "$LOWER"
}

build_base() {
	if [ ! -s "$BASE_LAYER" ] || [ ! -s "$BASE_ROOT_TAR" ]; then build_base_tars; fi
	load_recipe base
	local v
	base_lower
	v=$(in_root "$LOWER" "$VERSION" | head -n 1)
	load_image base "$v" "$BASE_HASH" "$BASE_LAYER"
}

# --- the language images: the base plus one layer ------------------------------
build_lang() {
	local name=$1 hash d up work m v log t
	hash=$(recipe_hash "$name")
	if [ ! -s "$BASE_LAYER" ] || [ ! -s "$BASE_ROOT_TAR" ]; then build_base_tars; fi
	load_recipe "$name"
	d="$WORK/$name"
	up=$d/up work=$d/work m=$d/root log=$d/apt.log
	mkdir -p "$up" "$work" "$m"
	base_lower
	mnt -t overlay overlay -o "lowerdir=$LOWER,upperdir=$up,workdir=$work" "$m"
	mount_build "$m"
	apt_install "$m" "$log" "$PKGS"
	if declare -F setup >/dev/null; then setup "$m"; fi
	v=$(in_root "$m" "$VERSION" 2>"$d/version.err" | head -n 1) || true
	[ -n "$v" ] || { cat "$d/version.err" >&2; die "$name: the version probe printed nothing: $VERSION"; }
	umnt_all
	# the upper folder is the layer: build leftovers out, overlay
	# whiteouts (0/0 character devices, opaque folders) as Docker's .wh. files
	strip_build "$up"
	rm -rf "$up/etc/resolv.conf" "$up/proc" "$up/var/cache/apt"
	rmdir "$up/var/lib/apt" 2>/dev/null || true
	while IFS= read -r -d '' t; do
		if [ "$(stat -c '%t,%T' "$t")" = 0,0 ]; then
			rm -f "$t"
			: >"$(dirname "$t")/.wh.$(basename "$t")"
		fi
	done < <(find "$up" -type c -print0)
	if command -v python3 >/dev/null; then
		python3 - "$up" <<-'PY'
			import os, sys
			for d, _, _ in os.walk(sys.argv[1]):
			    try:
			        if os.getxattr(d, "trusted.overlay.opaque") == b"y":
			            open(os.path.join(d, ".wh..wh..opq"), "w").close()
			    except OSError:
			        pass
		PY
	fi
	layer_tar "$up" "$d/layer.tar"
	rm -rf "$up"
	load_image "$name" "$v" "$hash" "$BASE_LAYER" "$d/layer.tar"
	rm -rf "$d"
}

# --- busybox (the alpine template) ----------------------------------------------
build_busybox() {
	local r="$WORK/busybox" bb=/bin/busybox a hash v
	hash=$(recipe_hash busybox)
	load_recipe busybox
	case "$(ldd "$bb" 2>&1 || true)" in
	*"not a dynamic"*) ;;
	*) die "$bb is not static (apt-get install busybox-static)" ;;
	esac
	mkdir -p "$r"/{bin,etc,tmp,root,home/user,dev,proc,sys,usr/bin,var/tmp}
	cp "$bb" "$r/bin/busybox"
	chmod 755 "$r/bin/busybox"
	for a in $("$bb" --list); do
		[ "$a" = busybox ] || ln -s busybox "$r/bin/$a"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000::/home/user:/bin/sh\n' >"$r/etc/passwd"
	printf 'root:x:0:\nuser:x:1000:\n' >"$r/etc/group"
	chmod 700 "$r/root"
	chmod 1777 "$r/tmp" "$r/var/tmp"
	chown 1000:1000 "$r/home/user"
	v=$(chroot "$r" /bin/sh -c "$VERSION" | head -n 1)
	layer_tar "$r" "$WORK/busybox.tar"
	load_image busybox "$v" "$hash" "$WORK/busybox.tar"
	rm -rf "$r" "$WORK/busybox.tar"*
}

# --- the checks after a build (as user 1000, no network) ----------------------------
verify_image() {
	local img
	img=$(image_of "$1")
	case $1 in
	base) verify "$img" 'command -v sleep && date && id -u | grep -qx 1000 && [ -k /tmp ] && git --version' ;;
	busybox) verify "$img" 'command -v sleep && date && id -u | grep -qx 1000' ;;
	python) verify "$img" 'python3 -c "import json, asyncio, urllib.request, sqlite3, venv, ssl, ctypes; print(1)" && python3 -m venv /tmp/v && /tmp/v/bin/pip --version' ;;
	node) verify "$img" 'node -e "console.log(1)" && npm --version' ;;
	bun) verify "$img" 'bun -e "console.log(1)"' ;;
	deno) verify "$img" 'DENO_DIR=/tmp/d deno eval "console.log(1)"' ;;
	go) verify "$img" 'go version && go env GOROOT' ;;
	rust) verify "$img" 'rustc --version && cargo --version' ;;
	ruby) verify "$img" 'ruby -e "puts 1" && gem --version && bundle --version' ;;
	java) verify "$img" 'javac -version && java -version' ;;
	php) verify "$img" 'php -r "echo 1;" && composer --version' ;;
	esac >/dev/null
}

# --- main ------------------------------------------------------------------------------
total0=$(now)
built=0
for name in "${want[@]}"; do
	img=$(image_of "$name")
	if [ $force -eq 0 ] && current "$name"; then
		say "$img is up to date ($(label_of "$img" sandpit.version)), skipped"
		continue
	fi
	say "building $img"
	t0=$(now)
	old=$(docker image inspect -f '{{.Id}}' "$img" 2>/dev/null || true)
	case $name in
	base) build_base ;;
	busybox) build_busybox ;;
	*) build_lang "$name" ;;
	esac
	verify_image "$name"
	new=$(docker image inspect -f '{{.Id}}' "$img")
	# drop the image this one replaced, unless a container still uses it
	if [ -n "$old" ] && [ "$old" != "$new" ]; then
		docker rmi "$old" >/dev/null 2>&1 || true
	fi
	size=$(docker image inspect -f '{{.Size}}' "$img")
	say "$img built and verified in $(elapsed "$t0") s: $(label_of "$img" sandpit.version), $(human "$size")"
	built=$((built + 1))
done
[ $built -eq 0 ] || say "$built image(s) built in $(elapsed "$total0") s"
