#!/usr/bin/env bash
# `make up`: a local sandpit on https://127.0.0.1:${SANDPIT_PORT:-8443} with
# its state in the repo's state/ folder (gitignored). Restarts a running one.
#
# Environment:
#   SANDPIT_PORT          TLS port (default 8443)
#   SANDPIT_LOCAL_IMAGES  0 (default): build the template images that are
#                         missing or out of date (images/build.sh, progress
#                         shown; minutes the first time, seconds after) and
#                         use them; 1: the test fixtures (sandpit-test/*)
#                         instead; SANDPIT_BUILD_IMAGES=0 builds nothing
#                         (e.g. when template.NAME maps upstream images)
#   SANDPIT_START_DOCKERD 1: start dockerd if none answers (else: exit 1)
#   plus everything deploy/stack.sh reads (REDIS_URL, SANDPIT_EXTRA_CONF, ...)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
STATE=$REPO/state
PORT=${SANDPIT_PORT:-8443}

bash deploy/install-deps.sh --run --build

docker_answers() {
	curl -sf --max-time 5 --unix-socket /var/run/docker.sock http://docker/_ping >/dev/null 2>&1
}

if ! docker_answers; then
	if [ "${SANDPIT_START_DOCKERD:-0}" = 1 ]; then
		mkdir -p "$STATE"
		echo "up: starting dockerd (log: state/dockerd.log)" >&2
		setsid dockerd </dev/null >>"$STATE/dockerd.log" 2>&1 &
		echo $! >"$STATE/dockerd.pid"
		for _ in $(seq 1 600); do
			docker_answers && break
			sleep 0.1
		done
		if ! docker_answers; then
			echo "up: dockerd did not answer within 60 s; its log:" >&2
			tail -n 30 "$STATE/dockerd.log" >&2
			exit 1
		fi
	else
		cat >&2 <<-MSG
			up: no Docker daemon answers on /var/run/docker.sock.
			    Start it with:  systemctl start docker
			    or run:         dockerd >/var/log/dockerd.log 2>&1 &
			    or let make up start one:  SANDPIT_START_DOCKERD=1 make up
		MSG
		exit 1
	fi
fi

make -s -j2 all

export SANDPIT_LOCAL_IMAGES=${SANDPIT_LOCAL_IMAGES:-0}
if [ "${SANDPIT_BUILD_IMAGES:-1}" = 1 ]; then
	if [ "$SANDPIT_LOCAL_IMAGES" = 1 ]; then
		bash tests/images/build.sh
	elif ! bash images/build.sh --check 2>/dev/null; then
		echo "up: building the template images (images/build.sh; the first build takes minutes)" >&2
		bash images/build.sh
	fi
fi

bash deploy/stack.sh stop "$STATE"
bash deploy/stack.sh start "$STATE" --port "$PORT"

# shellcheck disable=SC1091 # written by stack.sh
. "$STATE/env"
cat <<-MSG

	sandpit is up: $SANDPIT_URL
	  API key (owner, org "default"): $SANDPIT_KEY
	  CA certificate:                 state/tls/cert.pem
	  logs:                           state/sandpitd.log, state/nginx/error.log
	  env for scripts:                . state/env

	Try:
	  curl --cacert state/tls/cert.pem -H "x-api-key: $SANDPIT_KEY" $SANDPIT_URL/api/sandbox.templates

	Stop with: make down
MSG
