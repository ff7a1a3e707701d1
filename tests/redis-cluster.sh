#!/usr/bin/env bash
# Starts or stops a throwaway 3-master Redis Cluster for the Python/Node/C/Go test helpers and
# the CLI conformance run.
#
#   tests/redis-cluster.sh start [PIDFILE]   # prints redis://127.0.0.1:<p1>,redis://...:<p2>,...
#   tests/redis-cluster.sh stop  [PIDFILE]   # kills those PIDs (only those) and removes the file
#
# PIDFILE (default ${TMPDIR:-/tmp}/throttlekit-redis-cluster.pids) holds one PID per line.
# REPLICAS=1 in the environment gives every master a replica (6 nodes). NODE_TIMEOUT_MS sets
# cluster-node-timeout (default 1000, so failover tests fail over quickly; the benches raise it:
# a node starved of CPU past it on a loaded machine is marked failed and the cluster goes down
# mid-run). Each node gets a fresh
# free loopback port below 55536 whose cluster bus port (port + 10000) is free too, and counts
# as started only when the PID answering INFO on that port is the one we started; a cluster
# that does not form is torn down and started again on fresh ports.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launcher.sh"
cmd=${1:-}
pidfile=${2:-${TMPDIR:-/tmp}/throttlekit-redis-cluster.pids}
masters=3
replicas=${REPLICAS:-0}

# A loopback port below 55536, free now, whose bus port is free too.
free_cluster_port() {
  python3 -c '
import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    if p < 55536:
        b = socket.socket()
        try:
            b.bind(("127.0.0.1", p + 10000)); b.close(); s.close(); print(p); break
        except OSError:
            pass
    s.close()'
}

# Starts one cluster node; prints "PID PORT" (empty on failure).
start_node() {
  for attempt in 1 2 3 4 5 6; do
    local port dir pid
    port=$(free_cluster_port)
    dir=$(mktemp -d)
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
      --protected-mode no --daemonize no --cluster-enabled yes --cluster-config-file nodes.conf \
      --cluster-node-timeout "${NODE_TIMEOUT_MS:-1000}" --cluster-require-full-coverage no --repl-diskless-sync-delay 0 \
      >"$dir/redis.log" 2>&1 &
    pid=$!
    if serves "$pid" "$port"; then
      echo "$pid $port"
      return 0
    fi
    echo "cluster node did not serve port $port (attempt $attempt; log: $dir/redis.log)" >&2
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  return 1
}

stop_pids() {
  [ -f "$pidfile" ] || return 0
  while read -r pid; do
    [ -n "$pid" ] || continue
    kill "$pid" 2>/dev/null || true
    wait_exit "$pid" || true
  done <"$pidfile"
  rm -f "$pidfile"
}

cluster_ok() {
  for p in "$@"; do
    info=$(redis-cli -p "$p" cluster info 2>/dev/null | tr -d '\r') || return 1
    grep -q '^cluster_state:ok' <<<"$info" || return 1
    grep -q '^cluster_slots_ok:16384' <<<"$info" || return 1
    # A replica must have finished its first sync (or it could not win an election later).
    repl=$(redis-cli -p "$p" info replication 2>/dev/null | tr -d '\r') || return 1
    grep -q '^role:master' <<<"$repl" || grep -q '^master_link_status:up' <<<"$repl" || return 1
  done
}

case "$cmd" in
start)
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
    { echo "redis-server/redis-cli not found (apt-get install -y redis-server redis-tools)" >&2; exit 1; }
  for attempt in 1 2 3; do
    : >"$pidfile"
    ports=()
    for _ in $(seq 1 $((masters * (1 + replicas)))); do
      read -r pid port < <(start_node) || { stop_pids; exit 1; }
      echo "$pid" >>"$pidfile"
      ports+=("$port")
    done
    addrs=()
    for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
    if timeout 60 redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$replicas" --cluster-yes >/dev/null 2>&1; then
      for _ in $(seq 1 300); do
        if cluster_ok "${ports[@]}"; then
          urls=()
          for p in "${ports[@]}"; do urls+=("redis://127.0.0.1:$p"); done
          (IFS=,; echo "${urls[*]}")
          exit 0
        fi
        sleep 0.1
      done
    fi
    echo "the cluster did not form (attempt $attempt); starting over on fresh ports" >&2
    stop_pids
  done
  exit 1
  ;;
stop)
  stop_pids
  ;;
*)
  echo "usage: $0 start|stop [PIDFILE]" >&2
  exit 2
  ;;
esac
