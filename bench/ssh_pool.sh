#!/usr/bin/env bash
# Runs bench/ssh_pool against this machine's dockerd reached over ssh on
# loopback (tests/remote/hosts.sh). Exits non-zero if pooling is not at
# least 5x faster per operation.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
make -s build/bench/ssh_pool
dir=$(mktemp -d)
trap 'bash tests/remote/hosts.sh stop "$dir"; rm -rf "$dir"' EXIT
bash tests/remote/hosts.sh start "$dir"
# shellcheck disable=SC1091
. "$dir/env"
build/bench/ssh_pool "ssh://root@127.0.0.1:$SSH_PORT" "$SSH_KEY" "$SSH_KNOWN_HOSTS" "$SSH_CONTROL_DIR" "${1:-200}"
