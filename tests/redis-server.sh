#!/usr/bin/env bash
# Starts or stops a throwaway redis-server for the Python/Node/C/Go test helpers.
#
#   tests/redis-server.sh start [PIDFILE]   # prints redis://127.0.0.1:<port>; writes the PID to PIDFILE
#   tests/redis-server.sh stop  [PIDFILE]   # kills that PID (only that one) and removes the file
#
# PIDFILE defaults to ${TMPDIR:-/tmp}/throttlekit-redis.pid. The server listens on a free
# loopback port, with no persistence (--save '' --appendonly no).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/wait-exit.sh"
cmd=${1:-}
pidfile=${2:-${TMPDIR:-/tmp}/throttlekit-redis.pid}
# A loopback port nobody holds right now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# The PID of the redis-server answering on port $1 (empty when none answers).
serving_pid() {
  redis-cli -p "$1" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p'
}

case "$cmd" in
start)
  command -v redis-server >/dev/null || { echo "redis-server not found (apt-get install -y redis-server)" >&2; exit 1; }
  # A port that was free when we asked may be taken before redis-server binds it (other tests
  # start servers too), so every attempt asks for a fresh one, and a server only counts as
  # started when the PID answering INFO on that port is the one we started.
  for attempt in 1 2 3 4 5 6; do
    port=$(free_port)
    dir=$(mktemp -d)
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
      --protected-mode no --daemonize no >"$dir/redis.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 200); do
      kill -0 "$pid" 2>/dev/null || break
      if [ "$(serving_pid "$port")" = "$pid" ]; then
        echo "$pid" >"$pidfile"
        echo "redis://127.0.0.1:$port"
        exit 0
      fi
      sleep 0.05
    done
    echo "redis-server did not serve port $port (attempt $attempt; log: $dir/redis.log)" >&2
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  exit 1
  ;;
stop)
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    wait_exit "$pid" || true
    rm -f "$pidfile"
  fi
  ;;
*)
  echo "usage: $0 start|stop [PIDFILE]" >&2
  exit 2
  ;;
esac
