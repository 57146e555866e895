#!/usr/bin/env bash
# Installs the Debian packages sandpit needs, in three groups:
#
#   --run    what running sandpit needs: the shared libraries, Redis, nginx,
#            a Docker daemon (only if there is none), runsc, ssh, openssl
#   --build  what building it (and its local images) needs: a compiler,
#            pkg-config, the -dev packages, busybox-static and debootstrap
#   --test   what testing it needs: cmocka, cgi-fcgi, socat, sshd, jq, wrk,
#            clang with libFuzzer and the sanitizers, the linters
#
# No flag means all three (`make deps`, `make test`); `make up` installs
# --run --build; `make install` needs --run on the target host.
# `--list` prints the packages of the chosen groups (installed or not) and
# exits; `--missing` prints those of them not installed yet.
#
# Docker: a host that has a Docker daemon already (Docker CE's `dockerd`,
# Debian's, a static binary in /usr/local/bin, a package named docker-ce,
# moby-engine or docker.io) keeps it: Debian's docker.io is installed only
# where there is no daemon binary at all. A bare `docker` CLI is no daemon.
#
# Idempotent: installs only what is missing, and never starts the services
# it installs (make up and the tests start their own copies). Shows apt's
# progress (downloads and "Setting up" lines) on stderr.
set -euo pipefail

RUN_PKGS=(
	ca-certificates curl openssl procps iproute2
	libfcgi0ldbl libjson-c5 libcurl4 libhiredis0.14 libsodium23 libarchive13
	libwslay1 libssl3
	redis-server nginx-light openssh-client runsc
	libnginx-mod-http-lua # nginx/reqtime.conf: the bound on a request's whole time
	jq # the README's examples read answers with it
	e2fsprogs # mke2fs and debugfs: the per-sandbox disks (README "Disk limits")
)
BUILD_PKGS=(
	build-essential pkg-config
	libfcgi-dev libjson-c-dev libcurl4-openssl-dev libhiredis-dev libsodium-dev
	libarchive-dev libwslay-dev libssl-dev
	musl-tools # the static helper inside every sandbox (sandbox/helper/)
	# the local images (tests/images/build.sh) that make up maps templates to
	busybox-static debootstrap
)
TEST_PKGS=(
	libcmocka-dev libfcgi-bin socat openssh-server
	docker-registry # tests/api/v1-images-registry.test.mjs: a private registry on loopback
	wrk # make bench: sandbox.one throughput
	# make fuzz: clang with libFuzzer and the sanitizers' runtimes
	# (libclang_rt.fuzzer-x86_64.a is in libclang-rt-14-dev, only a
	# Recommends of clang-14), llvm-symbolizer for readable crash traces
	clang libclang-rt-14-dev llvm-14
	cppcheck clang-format shellcheck # make lint, which make test runs
	chromium # the dashboard's browser test (tests/api/dashboard.test.mjs, playwright-core)
)

say() { echo "install-deps: $*" >&2; }

want_run=0 want_build=0 want_test=0 list_only=0
for a in "$@"; do
	case $a in
	--run) want_run=1 ;;
	--build) want_build=1 ;;
	--test) want_test=1 ;;
	--all) want_run=1 want_build=1 want_test=1 ;;
	--list) list_only=1 ;;
	--missing) list_only=2 ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		say "unknown argument: $a (use --run, --build, --test, --all, --list, --missing)"
		exit 2
		;;
	esac
done
[ $((want_run + want_build + want_test)) -gt 0 ] || want_run=1 want_build=1 want_test=1

# docker_daemon_present: some Docker daemon is installed here already.
# SANDPIT_DOCKERD_SEARCH (tests) replaces the folders searched for dockerd.
docker_daemon_present() {
	local d p
	for d in ${SANDPIT_DOCKERD_SEARCH:-/usr/bin /usr/sbin /usr/local/bin /usr/local/sbin /bin /sbin /snap/bin}; do
		[ -x "$d/dockerd" ] && return 0
	done
	[ -n "${SANDPIT_DOCKERD_SEARCH:-}" ] && return 1
	for p in docker-ce moby-engine docker.io; do
		installed "$p" && return 0
	done
	return 1
}

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

pkgs=()
[ $want_run -eq 0 ] || pkgs+=("${RUN_PKGS[@]}")
[ $want_build -eq 0 ] || pkgs+=("${BUILD_PKGS[@]}")
[ $want_test -eq 0 ] || pkgs+=("${TEST_PKGS[@]}")
if [ $want_run -eq 1 ] && ! docker_daemon_present; then
	pkgs+=(docker.io)
fi

if [ $list_only -eq 1 ]; then
	printf '%s\n' "${pkgs[@]}"
	exit 0
fi
missing=()
for p in "${pkgs[@]}"; do
	installed "$p" || missing+=("$p")
done
if [ $list_only -eq 2 ]; then
	[ ${#missing[@]} -eq 0 ] || printf '%s\n' "${missing[@]}"
	exit 0
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	say "missing packages: ${missing[*]}; run as root (or: sudo $0 $*)"
	exit 1
fi

say "installing ${#missing[@]} package(s): ${missing[*]}"
# Keep package scripts from starting redis, nginx or dockerd system-wide.
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	made_policy=1
fi
trap '[ $made_policy -eq 1 ] && rm -f "$policy"' EXIT
export DEBIAN_FRONTEND=noninteractive

# progress PREFIX: apt's download and set-up lines, one per package, on
# stderr, so a long install is never silent.
progress() {
	local line n=0
	while IFS= read -r line; do
		case $line in
		Get:*) say "$1 ${line#Get:}" ;;
		"Setting up "*)
			n=$((n + 1))
			say "[$n] ${line% ...}"
			;;
		E:* | W:* | "dpkg: error"*) echo "$line" >&2 ;;
		esac
	done
}

say "apt-get update"
apt-get update 2>&1 | progress "fetch"
apt-get install -y --no-install-recommends "${missing[@]}" 2>&1 | progress "download"
for p in "${missing[@]}"; do
	installed "$p" || { say "$p did not install"; exit 1; }
done
say "done"
