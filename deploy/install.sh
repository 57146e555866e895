#!/usr/bin/env bash
# `make install`: sandpit as a system service, behind the operator's own
# nginx and certificate. Installs
#
#   $BINDIR/sandpit, $SBINDIR/sandpitd, $SBINDIR/sandpit-stream
#   $UNITDIR/sandpitd.service, $UNITDIR/sandpit-stream.service
#   $SYSUSERSDIR/sandpit.conf        the sandpit user (in group docker) and
#                                    nginx's user in group sandpit
#   $CONFDIR/sandpitd.conf           written once, never overwritten (a
#                                    newer default goes to sandpitd.conf.new)
#   $CONFDIR/data.key                generated once, mode 0600, owner sandpit
#   $CONFDIR/nginx/sandpit-http.conf    include in nginx's http {}
#   $CONFDIR/nginx/sandpit-server.conf  include in the operator's server {}
#   $CONFDIR/nginx/*.conf            the snippets those two include
#   $DOCDIR/README.md
#
# State lives in $STATEDIR (/var/lib/sandpit, the service user's home) and
# the sockets in $RUNDIR (/run/sandpit), both made by systemd
# (StateDirectory=, RuntimeDirectory=). The nginx files are derived from
# nginx/sandpit.conf.tmpl and nginx/*.conf (the sections between the
# "# >>> install: http|server" markers), so make up and an install serve
# the same locations, auth_request, WebSocket upgrade and limits; they are
# rewritten by every install (they are sandpit's, not the operator's).
#
# Environment (make passes its variables of the same names):
#   DESTDIR      staging root (packaging, tests): nothing outside it is
#                touched, no user is made and nothing is chowned
#   PREFIX       /usr/local; BINDIR, SBINDIR, UNITDIR ($PREFIX/lib/systemd/
#                system), SYSUSERSDIR, DOCDIR follow it
#   SYSCONFDIR   /etc (CONFDIR = $SYSCONFDIR/sandpit)
#   LOCALSTATEDIR /var (STATEDIR = $LOCALSTATEDIR/lib/sandpit)
#   RUNSTATEDIR  /run (RUNDIR = $RUNSTATEDIR/sandpit)
#   NGINX_USER   www-data (the user nginx's workers run as)
#   SANDPIT_RATE, SANDPIT_BURST   per-key request rate (50r/s, burst 100)
#   SANDPIT_METRICS_ALLOW  addresses that may read /metrics (127.0.0.1)
#   SANDPIT_REQUEST_TIMEOUT  seconds for a request's line, headers and body
#                together (60; 1 to 3600): nginx/reqtime.conf, which needs
#                nginx's Lua module loaded in the operator's nginx (README)
#   NGINX_AUTH_CACHE  nginx's /_auth answer cache, a tmpfs folder
#                (/run/sandpit-nginx-auth: its entries name API keys)
#   NGINX_INCLUDE_DIR where nginx finds the snippets ($CONFDIR/nginx; a
#                test that runs `nginx -t` on a DESTDIR sets it)
#   SANDPIT_BIN  folder of the built binaries (build/)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${SANDPIT_BIN:-$REPO/build}
DESTDIR=${DESTDIR:-}
PREFIX=${PREFIX:-/usr/local}
BINDIR=${BINDIR:-$PREFIX/bin}
SBINDIR=${SBINDIR:-$PREFIX/sbin}
UNITDIR=${UNITDIR:-$PREFIX/lib/systemd/system}
SYSUSERSDIR=${SYSUSERSDIR:-$PREFIX/lib/sysusers.d}
DOCDIR=${DOCDIR:-$PREFIX/share/doc/sandpit}
SYSCONFDIR=${SYSCONFDIR:-/etc}
LOCALSTATEDIR=${LOCALSTATEDIR:-/var}
RUNSTATEDIR=${RUNSTATEDIR:-/run}
CONFDIR=$SYSCONFDIR/sandpit
STATEDIR=$LOCALSTATEDIR/lib/sandpit
RUNDIR=$RUNSTATEDIR/sandpit
NGINX_USER=${NGINX_USER:-www-data}
NGINX_INCLUDE_DIR=${NGINX_INCLUDE_DIR:-$CONFDIR/nginx}
NGINX_AUTH_CACHE=${NGINX_AUTH_CACHE:-$RUNSTATEDIR/sandpit-nginx-auth}
RATE=${SANDPIT_RATE:-50r/s}
BURST=${SANDPIT_BURST:-100}
CONNS=${SANDPIT_CONN_PER_KEY:-256}
REQ_TIMEOUT=${SANDPIT_REQUEST_TIMEOUT:-60}

say() { echo "install: $*" >&2; }
die() {
	say "$*"
	exit 1
}

for v in PREFIX BINDIR SBINDIR UNITDIR SYSUSERSDIR DOCDIR SYSCONFDIR LOCALSTATEDIR RUNSTATEDIR \
	NGINX_INCLUDE_DIR NGINX_AUTH_CACHE; do
	case ${!v} in
	/*) ;;
	*) die "$v must be an absolute path: ${!v}" ;;
	esac
	case ${!v} in *[!A-Za-z0-9._/-]*) die "$v may hold only A-Z a-z 0-9 . _ / -: ${!v}" ;; esac
done
case $NGINX_USER in '' | *[!a-z0-9_-]*) die "NGINX_USER: a user name" ;; esac
case $RATE in *[!0-9rsm/]* | "") die "SANDPIT_RATE must look like 50r/s" ;; esac
case $BURST in *[!0-9]* | "") die "SANDPIT_BURST must be a number" ;; esac
case $REQ_TIMEOUT in *[!0-9]* | "" | 0*) die "SANDPIT_REQUEST_TIMEOUT must be a number of seconds, 1 to 3600" ;; esac
[ "$REQ_TIMEOUT" -le 3600 ] || die "SANDPIT_REQUEST_TIMEOUT must be a number of seconds, 1 to 3600"
HEADER_TIMEOUT=$((REQ_TIMEOUT < 30 ? REQ_TIMEOUT : 30))
metrics_allow=""
for a in ${SANDPIT_METRICS_ALLOW:-127.0.0.1}; do
	case $a in *[!0-9A-Fa-f.:/]*) die "SANDPIT_METRICS_ALLOW: addresses or CIDRs only: $a" ;; esac
	metrics_allow="${metrics_allow}allow $a; "
done
for b in sandpitd sandpit-stream sandpit; do
	[ -x "$BIN/$b" ] || die "$BIN/$b not found: build first (make all)"
done
command -v openssl >/dev/null || die "openssl not found (deploy/install-deps.sh --run)"

D=$DESTDIR
staging=0
[ -z "$D" ] || staging=1

# subst FILE: the @NAME@ placeholders of the unit and config templates.
subst() {
	sed -e "s|@SBINDIR@|$SBINDIR|g" -e "s|@BINDIR@|$BINDIR|g" -e "s|@CONFDIR@|$CONFDIR|g" \
		-e "s|@CONFFILE@|$CONFDIR/sandpitd.conf|g" -e "s|@STATEDIR@|$STATEDIR|g" \
		-e "s|@RUNDIR@|$RUNDIR|g" -e "s|@DOCDIR@|$DOCDIR|g" -e "s|@NGINX_USER@|$NGINX_USER|g" \
		-e "s|@REQ_TIMEOUT@|$REQ_TIMEOUT|g" "$1"
}

# --- binaries, units, the user, docs -------------------------------------------
say "binaries → $D$BINDIR, $D$SBINDIR"
install -d -m 0755 "$D$BINDIR" "$D$SBINDIR" "$D$UNITDIR" "$D$SYSUSERSDIR" "$D$DOCDIR"
install -m 0755 "$BIN/sandpit" "$D$BINDIR/sandpit"
install -m 0755 "$BIN/sandpitd" "$D$SBINDIR/sandpitd"
install -m 0755 "$BIN/sandpit-stream" "$D$SBINDIR/sandpit-stream"
say "systemd units → $D$UNITDIR"
for u in sandpitd sandpit-stream; do
	subst "$REPO/deploy/systemd/$u.service.in" >"$D$UNITDIR/$u.service.tmp"
	chmod 0644 "$D$UNITDIR/$u.service.tmp"
	mv "$D$UNITDIR/$u.service.tmp" "$D$UNITDIR/$u.service"
done
subst "$REPO/deploy/systemd/sandpit.sysusers.in" >"$D$SYSUSERSDIR/sandpit.conf"
chmod 0644 "$D$SYSUSERSDIR/sandpit.conf"
install -m 0644 "$REPO/README.md" "$D$DOCDIR/README.md"

owner=""
if [ $staging -eq 0 ]; then
	if command -v systemd-sysusers >/dev/null; then
		systemd-sysusers "$SYSUSERSDIR/sandpit.conf"
	else
		getent passwd sandpit >/dev/null ||
			useradd --system --user-group --home-dir "$STATEDIR" --shell /usr/sbin/nologin sandpit
		getent group docker >/dev/null || groupadd --system docker
		usermod -a -G docker sandpit
		! getent passwd "$NGINX_USER" >/dev/null || usermod -a -G sandpit "$NGINX_USER"
	fi
	getent passwd sandpit >/dev/null || die "the user sandpit could not be made"
	owner=sandpit
	say "user sandpit (groups: $(id -nG sandpit)); $NGINX_USER joins group sandpit"
fi

# --- configuration: written once ----------------------------------------------
install -d -m 0755 "$D$CONFDIR"
conf=$D$CONFDIR/sandpitd.conf
subst "$REPO/deploy/sandpitd.conf.in" >"$conf.new"
if [ -e "$conf" ]; then
	if cmp -s "$conf" "$conf.new"; then
		rm -f "$conf.new"
	else
		say "$CONFDIR/sandpitd.conf exists: kept (this version's default: $CONFDIR/sandpitd.conf.new)"
	fi
else
	mv "$conf.new" "$conf"
	chmod 0640 "$conf"
	[ -z "$owner" ] || chown root:sandpit "$conf"
	say "wrote $CONFDIR/sandpitd.conf"
fi

key=$D$CONFDIR/data.key
if [ -s "$key" ]; then
	say "$CONFDIR/data.key exists: kept"
else
	(umask 077 && openssl rand -hex 32 >"$key.tmp")
	[ -z "$owner" ] || chown sandpit:sandpit "$key.tmp"
	mv "$key.tmp" "$key"
	say "generated $CONFDIR/data.key (mode 0600; back it up: it decrypts stored envVars and keys API-key hashes)"
fi
chmod 0600 "$key"

# --- nginx include --------------------------------------------------------------
# section NAME FILE: the lines of FILE between "# >>> install: NAME" and
# "# <<< install: NAME", with the indentation of the marker removed.
section() {
	awk -v name="$1" '
		$0 ~ "^[ \t]*# >>> install: " name "$" { on = 1; match($0, /^[ \t]*/); ind = RLENGTH; next }
		$0 ~ "^[ \t]*# <<< install: " name "$" { on = 0; print ""; next }
		on { print (length($0) >= ind ? substr($0, ind + 1) : $0) }
	' "$2"
}
# render: the placeholders of nginx/*.conf for an installed sandpit.
render() {
	sed -e "s|@DIR@|$RUNDIR|g" -e "s|@CONF@|$NGINX_INCLUDE_DIR|g" \
		-e "s|@RATE@|$RATE|g" -e "s|@BURST@|$BURST|g" -e "s|@CONNS@|$CONNS|g" -e "s|@LOCAL_ORG@|default|g" \
		-e "s|@REQ_TIMEOUT@|$REQ_TIMEOUT|g" -e "s|@HEADER_TIMEOUT@|$HEADER_TIMEOUT|g" \
		-e "s|@METRICS_ALLOW@|$metrics_allow|g" -e "s|@AUTH_CACHE@|$NGINX_AUTH_CACHE|g" \
		-e "s|@APP_SERVERS@|server unix:$RUNDIR/sandpitd.sock max_fails=0;|" \
		-e "s|@FAST_SERVERS@|server unix:$RUNDIR/sandpitd-fast.sock max_fails=0; server unix:$RUNDIR/sandpitd.sock max_fails=0 backup;|" \
		-e '/@CONF@\/extra\//d'
}
ndir=$D$CONFDIR/nginx
install -d -m 0755 "$ndir"
tmpl=$REPO/nginx/sandpit.conf.tmpl
{
	echo "# sandpit's http-level nginx configuration: include it once inside http {}"
	echo "# (Debian: ln -s $CONFDIR/nginx/sandpit-http.conf /etc/nginx/conf.d/)."
	echo "# Written by make install from nginx/sandpit.conf.tmpl; rewritten by every"
	echo "# install, so keep your changes in your own files."
	echo
	section http "$tmpl" | render
} >"$ndir/sandpit-http.conf.tmp"
{
	echo "# sandpit's locations: include it inside the server {} that has your"
	echo "# listen, server_name and certificate (a server of its own: the error"
	echo "# pages answer JSON for the whole server). See README, Operations."
	echo "# Written by make install from nginx/sandpit.conf.tmpl; rewritten by every"
	echo "# install, so keep your changes in your own files."
	echo
	section server "$tmpl" | render
} >"$ndir/sandpit-server.conf.tmp"
grep -q 'location /api/' "$ndir/sandpit-server.conf.tmp" ||
	die "nginx/sandpit.conf.tmpl: no '# >>> install: server' section with the locations"
grep -q 'upstream sandpit_app' "$ndir/sandpit-http.conf.tmp" ||
	die "nginx/sandpit.conf.tmpl: no '# >>> install: http' section with the upstream"
for f in "$REPO"/nginx/*.conf; do
	# shellcheck disable=SC2094 # another file: $ndir is not nginx/
	render <"$f" >"$ndir/$(basename "$f").tmp"
done
for f in "$ndir"/*.tmp; do
	chmod 0644 "$f"
	mv "$f" "${f%.tmp}"
done
say "nginx include → $CONFDIR/nginx/sandpit-http.conf (http {}) and sandpit-server.conf (server {})"

if [ $staging -eq 0 ]; then
	cat >&2 <<-MSG

		install: done. Next (README, "Operations"):
		  1. edit $CONFDIR/sandpitd.conf (redis_url, templates), check: $SBINDIR/sandpitd -t -c $CONFDIR/sandpitd.conf
		  2. systemctl daemon-reload && systemctl enable --now sandpitd sandpit-stream
		  3. include the nginx files in your server block (nginx's Lua module loaded: libnginx-mod-http-lua), nginx -t && systemctl reload nginx
		  4. a key: $BINDIR/sandpit -c $CONFDIR/sandpitd.conf keys create --org default --role owner
	MSG
fi
