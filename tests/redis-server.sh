#!/usr/bin/env bash
# Starts or stops a throwaway redis-server for the Python/Node/C/Go test helpers.
#
#   tests/redis-server.sh start [PIDFILE]   # prints redis://127.0.0.1:<port>; writes the PID to PIDFILE
#   tests/redis-server.sh stop  [PIDFILE]   # kills that PID (only that one) and removes the file
#
# PIDFILE defaults to ${TMPDIR:-/tmp}/throttlekit-redis.pid. The server listens on a free
# loopback port, with no persistence (--save '' --appendonly no), and DEBUG allowed from local
# connections (tests/serve.sh holds a call in flight with DEBUG SLEEP; off by default since
# Redis 7, it was refused there and the test had no call in flight).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launcher.sh"
cmd=${1:-}
pidfile=${2:-${TMPDIR:-/tmp}/throttlekit-redis.pid}
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
      --protected-mode no --enable-debug-command local --daemonize no >"$dir/redis.log" 2>&1 &
    pid=$!
    if serves "$pid" "$port"; then
      echo "$pid" >"$pidfile"
      echo "redis://127.0.0.1:$port"
      exit 0
    fi
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
