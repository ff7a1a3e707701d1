#!/usr/bin/env bash
# Starts or stops a throwaway redis-server for the Python/Node/C/Go test helpers.
#
#   tests/redis-server.sh start [PIDFILE]   # prints redis://127.0.0.1:<port>; writes the PID to PIDFILE
#   tests/redis-server.sh stop  [PIDFILE]   # kills that PID (only that one) and removes the file
#
# PIDFILE defaults to ${TMPDIR:-/tmp}/throttlekit-redis.pid. The server listens on a free
# loopback port, with no persistence (--save '' --appendonly no).
set -euo pipefail
cmd=${1:-}
pidfile=${2:-${TMPDIR:-/tmp}/throttlekit-redis.pid}
case "$cmd" in
start)
  command -v redis-server >/dev/null || { echo "redis-server not found (apt-get install -y redis-server)" >&2; exit 1; }
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
  dir=$(mktemp -d)
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
    --protected-mode no --daemonize no >"$dir/redis.log" 2>&1 &
  echo $! >"$pidfile"
  for _ in $(seq 1 200); do
    if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
      echo "redis://127.0.0.1:$port"
      exit 0
    fi
    sleep 0.05
  done
  echo "redis-server did not answer on port $port (log: $dir/redis.log)" >&2
  kill "$(cat "$pidfile")" 2>/dev/null || true
  exit 1
  ;;
stop)
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    rm -f "$pidfile"
  fi
  ;;
*)
  echo "usage: $0 start|stop [PIDFILE]" >&2
  exit 2
  ;;
esac
