#!/usr/bin/env bash
# Starts or stops a throwaway Postgres 15 for the Postgres store's tests.
#
#   tests/postgres-server.sh start [PIDFILE]   # prints postgres://throttlekit:throttlekit@127.0.0.1:<port>/postgres
#   tests/postgres-server.sh stop  [PIDFILE]   # stops that server (its postmaster PID, only that one)
#
# `initdb` into a fresh temp dir (password auth, scram-sha-256, superuser `throttlekit` with
# password `throttlekit`), then `postgres` on a free loopback port with no Unix socket outside the
# data dir, fsync off (a test server: nothing survives it). Postgres refuses to run as root, so
# as root the server runs as the `postgres` user the Debian package creates. PIDFILE defaults to
# ${TMPDIR:-/tmp}/throttlekit-postgres.pid and holds "PID DIR".
#
# TLS=1 in the environment also turns TLS on (`ssl=on`) with a certificate from a throwaway CA
# (tests/certs.sh) whose subjectAltName is DNS:localhost only, so 127.0.0.1 is a wrong host
# name: DIR/tls/ca.crt is that CA, DIR/tls/other-ca.crt one that signed nothing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launcher.sh"
source "$(dirname "${BASH_SOURCE[0]}")/certs.sh"
cmd=${1:-}
pidfile=${2:-${TMPDIR:-/tmp}/throttlekit-postgres.pid}
bin=${POSTGRES_BIN:-/usr/lib/postgresql/15/bin}

# setpriv execs the command as the user (no wrapper process left behind): runuser would stay as
# the postmaster's parent and stop itself when a test SIGSTOPs the postmaster, never to resume.
as_owner() {
  if [ "$(id -u)" = 0 ]; then setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; else "$@"; fi
}

case "$cmd" in
start)
  [ -x "$bin/initdb" ] || { echo "postgres not found in $bin (apt-get install -y postgresql-15, or scripts/install-deps.sh)" >&2; exit 1; }
  dir=$(mktemp -d "${TMPDIR:-/tmp}/throttlekit-pg.XXXXXX")
  [ "$(id -u)" = 0 ] && chown postgres: "$dir"
  echo throttlekit >"$dir/pw"
  [ "$(id -u)" = 0 ] && chown postgres: "$dir/pw"
  as_owner "$bin/initdb" -D "$dir/data" -U throttlekit --pwfile="$dir/pw" --auth=scram-sha-256 \
    -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
  tls=()
  if [ "${TLS:-0}" = 1 ]; then
    mkdir "$dir/tls"
    (
      cd "$dir/tls"
      ca ca && ca other-ca
      leaf server 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n'
      chmod 600 server.key
    ) >/dev/null 2>&1 || { echo "openssl failed to make the test certificates" >&2; exit 1; }
    [ "$(id -u)" = 0 ] && chown -R postgres: "$dir/tls"
    tls=(-c ssl=on -c ssl_cert_file="$dir/tls/server.crt" -c ssl_key_file="$dir/tls/server.key")
  fi
  for attempt in 1 2 3 4 5 6; do
    port=$(free_port)
    as_owner "$bin/postgres" -D "$dir/data" -p "$port" -c listen_addresses=127.0.0.1 \
      -c unix_socket_directories="$dir" -c fsync=off -c max_connections=200 "${tls[@]}" \
      >"$dir/postgres.log" 2>&1 &
    # The postmaster's PID is in postmaster.pid once it is ready.
    for _ in $(seq 1 200); do
      if [ -f "$dir/data/postmaster.pid" ] && grep -q "ready" "$dir/data/postmaster.pid" 2>/dev/null; then
        pid=$(head -1 "$dir/data/postmaster.pid")
        echo "$pid $dir" >"$pidfile"
        echo "postgres://throttlekit:throttlekit@127.0.0.1:$port/postgres"
        exit 0
      fi
      sleep 0.05
    done
    echo "postgres did not start on port $port (attempt $attempt; log: $dir/postgres.log)" >&2
    [ -f "$dir/data/postmaster.pid" ] && kill "$(head -1 "$dir/data/postmaster.pid")" 2>/dev/null || true
    sleep 0.5
  done
  exit 1
  ;;
stop)
  if [ -f "$pidfile" ]; then
    read -r pid dir <"$pidfile"
    kill -CONT "$pid" 2>/dev/null || true
    kill -INT "$pid" 2>/dev/null || true  # fast shutdown
    wait_exit "$pid" 200 || true
    rm -rf "$dir" "$pidfile"
  fi
  ;;
*)
  echo "usage: $0 start|stop [PIDFILE]" >&2
  exit 2
  ;;
esac
