#!/usr/bin/env bash
# Installs the Debian packages sandpit needs to build, run and test.
# Idempotent: installs only what is missing, and never starts the services
# it installs (make up and the tests start their own copies).
set -euo pipefail

PKGS=(
  build-essential pkg-config ca-certificates curl jq openssl procps iproute2
  libfcgi-dev libjson-c-dev libcurl4-openssl-dev libhiredis-dev libsodium-dev
  libarchive-dev libcmocka-dev libwslay-dev libssl-dev
  libfcgi-bin redis-server nginx-light socat openssh-server openssh-client
  docker.io busybox-static debootstrap runsc
  e2fsprogs  # mke2fs and debugfs: the per-sandbox disks (README "Disk limits")
  wrk  # make bench: sandbox.one throughput
  # make fuzz: clang with libFuzzer and the sanitizers' runtimes
  # (libclang_rt.fuzzer-x86_64.a is in libclang-rt-14-dev, only a
  # Recommends of clang-14), llvm-symbolizer for readable crash traces
  clang libclang-rt-14-dev llvm-14
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}; run as root (or: sudo $0)" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
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
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
