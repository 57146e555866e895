#!/usr/bin/env bash
# Builds the local test images that stand in for registry images (no registry
# can be reached from this machine). Each image is `docker import` of a root
# filesystem tarball made here from Debian packages:
#
#   sandpit-test/busybox:latest  busybox-static + one symlink per applet
#   sandpit-test/nodate:latest   the same without `date`
#   sandpit-test/debian:latest   debootstrap --variant=minbase bookworm
#   sandpit-test/python:latest   the Debian rootfs + python3-minimal
#
# Every image has user 1000 (`user`) and a world-writable /tmp.
# An image that already exists is skipped; --force rebuilds all of them (from
# the cached Debian rootfs tarballs, so it is fast); --refresh also throws the
# cache away and debootstraps again.
#
# usage: tests/images/build.sh [--force] [--refresh] [IMAGE_SHORT_NAME...]
#   e.g. tests/images/build.sh --force busybox nodate
#   `rootfs` builds no image: it only makes sure the debootstrap'd root
#   tarball is in the cache (images/build.sh builds the templates on it)
# env:   SANDPIT_IMAGE_CACHE  cache folder (default /var/cache/sandpit-images)
#        SANDPIT_DEBIAN_MIRROR  mirror (default: the first URIs: of
#                               /etc/apt/sources.list.d/debian.sources)
set -euo pipefail

CACHE=${SANDPIT_IMAGE_CACHE:-/var/cache/sandpit-images}
SUITE=bookworm
PATH_ENV='ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
ALL=(busybox nodate debian python)

force=0
refresh=0
want=()
for a in "$@"; do
	case "$a" in
	--force) force=1 ;;
	--refresh) force=1; refresh=1 ;;
	-h | --help) sed -n '2,23p' "$0"; exit 0 ;;
	busybox | nodate | debian | python | rootfs) want+=("$a") ;;
	*) echo "build.sh: unknown argument: $a" >&2; exit 2 ;;
	esac
done
[ ${#want[@]} -eq 0 ] && want=("${ALL[@]}")

die() { echo "build.sh: $*" >&2; exit 1; }

command -v docker >/dev/null || die "docker CLI not found (run deploy/install-deps.sh)"
docker info >/dev/null 2>&1 || die "no Docker daemon answers on /var/run/docker.sock"
[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot)"

mirror=${SANDPIT_DEBIAN_MIRROR:-}
if [ -z "$mirror" ] && [ -r /etc/apt/sources.list.d/debian.sources ]; then
	mirror=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
		/etc/apt/sources.list.d/debian.sources)
fi
mirror=${mirror:-http://deb.debian.org/debian}

mkdir -p "$CACHE"
# One build at a time on this machine (make test and make up may overlap).
exec 9>"$CACHE/.lock"
flock 9

WORK=$(mktemp -d /tmp/sandpit-images.XXXXXX)
mounted=()
cleanup() {
	local m
	for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# import_rootfs DIR IMAGE: tar DIR (numeric owners) into `docker import`.
import_rootfs() {
	tar -C "$1" --numeric-owner -cf - . |
		docker import \
			--change "$PATH_ENV" \
			--change 'CMD ["sh"]' \
			- "$2" >/dev/null
}

# import_tarball TAR IMAGE: import a cached rootfs tarball as it is.
import_tarball() {
	docker import \
		--change "$PATH_ENV" \
		--change 'CMD ["sh"]' \
		"$1" "$2" >/dev/null
}

# verify IMAGE SCRIPT: run SCRIPT with sh in a throw-away container.
verify() {
	local out
	if ! out=$(docker run --rm --network none "$1" sh -c "$2" 2>&1); then
		echo "$out" >&2
		die "verification of $1 failed: $2"
	fi
}

add_user_1000() { # ROOT SHELL
	local r=$1
	grep -q '^user:' "$r/etc/passwd" || echo "user:x:1000:1000::/home/user:$2" >>"$r/etc/passwd"
	grep -q '^user:' "$r/etc/group" || echo 'user:x:1000:' >>"$r/etc/group"
	if [ -f "$r/etc/shadow" ] && ! grep -q '^user:' "$r/etc/shadow"; then
		echo 'user:*:19000:0:99999:7:::' >>"$r/etc/shadow"
	fi
	if [ -f "$r/etc/gshadow" ] && ! grep -q '^user:' "$r/etc/gshadow"; then
		echo 'user:*::' >>"$r/etc/gshadow"
	fi
	mkdir -p "$r/home/user"
	chown 1000:1000 "$r/home/user"
	chmod 755 "$r/home/user"
	mkdir -p "$r/tmp"
	chmod 1777 "$r/tmp"
}

# --- busybox / nodate -------------------------------------------------------

# busybox_rootfs DIR BUSYBOX [APPLET_TO_SKIP...]: a FROM-scratch root with
# bin/busybox, one bin/<applet> symlink per applet, root and user 1000.
# A dynamic BUSYBOX gets the shared libraries it needs copied from the host.
busybox_rootfs() {
	local r=$1 bb=$2 a skip lib
	shift 2
	mkdir -p "$r"/{bin,etc,tmp,root,home/user,dev,proc,sys,usr/bin,var/tmp}
	cp "$bb" "$r/bin/busybox"
	chmod 755 "$r/bin/busybox"
	for lib in $(ldd "$bb" 2>/dev/null | grep -o '/[^ ]*' || true); do
		mkdir -p "$r$(dirname "$lib")"
		cp -L "$lib" "$r$lib"
	done
	for a in $("$bb" --list); do
		[ "$a" = busybox ] && continue
		for skip in "$@"; do [ "$a" = "$skip" ] && continue 2; done
		ln -s busybox "$r/bin/$a"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000::/home/user:/bin/sh\n' >"$r/etc/passwd"
	printf 'root:x:0:\nuser:x:1000:\n' >"$r/etc/group"
	chmod 700 "$r/root"
	chmod 1777 "$r/tmp" "$r/var/tmp"
	add_user_1000 "$r" /bin/sh
}

STATIC_BUSYBOX=/bin/busybox

build_busybox() {
	local r="$WORK/busybox"
	[ -x "$STATIC_BUSYBOX" ] || die "$STATIC_BUSYBOX missing (apt-get install busybox-static)"
	case "$(ldd "$STATIC_BUSYBOX" 2>&1 || true)" in
	*"not a dynamic"*) ;;
	*) die "$STATIC_BUSYBOX is not static (install busybox-static, not busybox)" ;;
	esac
	busybox_rootfs "$r" "$STATIC_BUSYBOX"
	import_rootfs "$r" sandpit-test/busybox:latest
	verify sandpit-test/busybox:latest \
		'command -v sleep && command -v date && command -v find && grep -q "^user:x:1000:1000:" /etc/passwd && [ -k /tmp ]' >/dev/null
}

# Debian's busybox-static is built with FEATURE_SH_STANDALONE: its sh runs
# every compiled-in applet (date too) without any link, so an image made from
# it can never lack `date`. nodate therefore uses the dynamic busybox of
# Debian's `busybox` package (no SH_STANDALONE; it conflicts with
# busybox-static, so it is only downloaded and unpacked, then cached) plus the
# host's libc, and leaves out the date link.
dynamic_busybox() {
	local bin="$CACHE/busybox-dynamic" d="$WORK/bb-deb" deb
	if [ ! -x "$bin" ]; then
		mkdir -p "$d"
		(cd "$d" && { apt-get download busybox >/dev/null 2>&1 ||
			{ apt-get update -qq >/dev/null && apt-get download busybox >/dev/null 2>&1; }; }) ||
			die "apt-get download busybox failed"
		deb=$(ls "$d"/busybox_*.deb)
		dpkg-deb -x "$deb" "$d/x"
		cp "$d/x/bin/busybox" "$bin.tmp"
		mv "$bin.tmp" "$bin"
	fi
	echo "$bin"
}

build_nodate() {
	local r="$WORK/nodate" bb
	bb=$(dynamic_busybox)
	busybox_rootfs "$r" "$bb" date
	import_rootfs "$r" sandpit-test/nodate:latest
	verify sandpit-test/nodate:latest \
		'command -v sh && command -v sleep && sleep 0 && ! command -v date && ! which date && ! date' >/dev/null
}

# --- debian / python ---------------------------------------------------------

# The raw debootstrap output, apt lists kept (the python build installs from
# them without an `apt-get update`).
RAW_TAR="$CACHE/debian-$SUITE-minbase-raw.tar"
DEBIAN_TAR="$CACHE/debian-$SUITE-minbase.tar"
PYTHON_TAR="$CACHE/debian-$SUITE-python3.tar"

raw_debootstrap() {
	[ -s "$RAW_TAR" ] && return 0
	command -v debootstrap >/dev/null || die "debootstrap missing (apt-get install debootstrap)"
	local r="$WORK/raw" log="$WORK/debootstrap.log"
	echo "build.sh: debootstrap $SUITE from $mirror (cached in $RAW_TAR)" >&2
	if ! debootstrap --variant=minbase "$SUITE" "$r" "$mirror" >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		[ -f "$r/debootstrap/debootstrap.log" ] && tail -n 30 "$r/debootstrap/debootstrap.log" >&2
		die "debootstrap failed"
	fi
	rm -rf "$r/var/cache/apt/archives/"*.deb
	tar -C "$r" --numeric-owner -cf "$RAW_TAR.tmp" .
	mv "$RAW_TAR.tmp" "$RAW_TAR"
	rm -rf "$r"
}

# finish_debian ROOT: the steps shared by debian and python.
finish_debian() {
	local r=$1
	add_user_1000 "$r" /bin/bash
	rm -rf "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/archives/*.deb \
		"$r"/var/cache/apt/*.bin "$r"/var/log/apt/* "$r"/var/log/dpkg.log
	mkdir -p "$r/var/lib/apt/lists/partial"
	: >"$r/etc/resolv.conf"
	echo sandpit >"$r/etc/hostname"
}

build_debian() {
	if [ ! -s "$DEBIAN_TAR" ]; then
		raw_debootstrap
		local r="$WORK/debian"
		mkdir -p "$r"
		tar -C "$r" --numeric-owner -xf "$RAW_TAR"
		finish_debian "$r"
		tar -C "$r" --numeric-owner -cf "$DEBIAN_TAR.tmp" .
		mv "$DEBIAN_TAR.tmp" "$DEBIAN_TAR"
		rm -rf "$r"
	fi
	import_tarball "$DEBIAN_TAR" sandpit-test/debian:latest
	verify sandpit-test/debian:latest \
		'command -v sleep && command -v date && id user | grep -q "uid=1000" && [ -k /tmp ]' >/dev/null
}

# Python: unpack the raw rootfs (apt lists still there) and apt-get install
# python3-minimal inside a chroot. Measured faster than a second debootstrap.
build_python() {
	if [ ! -s "$PYTHON_TAR" ]; then
		raw_debootstrap
		local r="$WORK/python" log="$WORK/python-apt.log"
		mkdir -p "$r"
		tar -C "$r" --numeric-owner -xf "$RAW_TAR"
		cp /etc/resolv.conf "$r/etc/resolv.conf"
		# The mirror may be a dated snapshot: do not reject its Release files.
		printf 'Acquire::Check-Valid-Until "false";\nAcquire::Check-Date "false";\n' \
			>"$r/etc/apt/apt.conf.d/99sandpit-build"
		# Keep package scripts from starting anything.
		printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
		chmod 755 "$r/usr/sbin/policy-rc.d"
		mount -t proc proc "$r/proc" && mounted+=("$r/proc")
		if ! chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			DEBIAN_FRONTEND=noninteractive \
			sh -c 'apt-get install -y -q --no-install-recommends python3-minimal ||
			       { apt-get update -q && apt-get install -y -q --no-install-recommends python3-minimal; }' \
			>"$log" 2>&1; then
			tail -n 30 "$log" >&2
			die "installing python3-minimal in the chroot failed"
		fi
		umount "$r/proc"
		mounted=()
		rm -f "$r/usr/sbin/policy-rc.d" "$r/etc/apt/apt.conf.d/99sandpit-build"
		finish_debian "$r"
		tar -C "$r" --numeric-owner -cf "$PYTHON_TAR.tmp" .
		mv "$PYTHON_TAR.tmp" "$PYTHON_TAR"
		rm -rf "$r"
	fi
	import_tarball "$PYTHON_TAR" sandpit-test/python:latest
	# shellcheck disable=SC2016 # expanded inside the container
	verify sandpit-test/python:latest \
		'command -v sleep && [ "$(python3 -c "print(1+1)")" = 2 ] && id user | grep -q "uid=1000"' >/dev/null
}

# --- main ---------------------------------------------------------------------

if [ $refresh -eq 1 ]; then
	rm -f "$RAW_TAR" "$DEBIAN_TAR" "$PYTHON_TAR"
fi

for name in "${want[@]}"; do
	if [ "$name" = rootfs ]; then
		raw_debootstrap
		continue
	fi
	img="sandpit-test/$name:latest"
	if [ $force -eq 0 ] && have_image "$img"; then
		echo "images: $img exists, skipped"
		continue
	fi
	t0=$(now)
	old=$(docker image inspect -f '{{.Id}}' "$img" 2>/dev/null || true)
	"build_$name"
	new=$(docker image inspect -f '{{.Id}}' "$img")
	# Drop the image this one replaced, unless a container still uses it.
	if [ -n "$old" ] && [ "$old" != "$new" ]; then
		docker rmi "$old" >/dev/null 2>&1 || true
	fi
	echo "images: $img built and verified in $(elapsed "$t0") s"
done
