#!/usr/bin/env bash
# `make down`: stops the stack that `make up` started in state/, and the
# dockerd that `make up` started, if it did (SANDPIT_START_DOCKERD=1).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=$REPO/state

bash "$REPO/deploy/stack.sh" stop "$STATE"

if [ -s "$STATE/dockerd.pid" ]; then
	pid=$(tr -dc 0-9 <"$STATE/dockerd.pid")
	if [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q dockerd; then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 200); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
	fi
	rm -f "$STATE/dockerd.pid"
fi
