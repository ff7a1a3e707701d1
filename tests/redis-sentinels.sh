#!/usr/bin/env bash
# Starts or stops a throwaway Sentinel setup for the Python/Node/C/Go tests: one master, one
# replica and three sentinels monitoring the service "tkmain" (quorum 2), every process on a
# fresh free loopback port per attempt, counted as started only when its own PID answers.
#
#   tests/redis-sentinels.sh start DIR   # prints the sentinels' URLs, comma-separated
#   tests/redis-sentinels.sh stop  DIR   # kills those PIDs (only those) and removes DIR
#
# SENTINEL_PASSWORD=pw makes the sentinels require that password (`requirepass`, and
# `sentinel sentinel-pass` so they still reach each other): a client needs `sentinel_password`.
#
# DIR holds each process's config, log and a "pids" file. Start returns once every sentinel
# knows the master's replica and the two other sentinels, and the replica's link is up.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launcher.sh"
cmd=${1:-}
dir=${2:?usage: $0 start|stop DIR}
service=tkmain
auth=()
[ -z "${SENTINEL_PASSWORD:-}" ] || auth=(-a "$SENTINEL_PASSWORD" --no-auth-warning)


# start_process NAME ARGS...: runs `redis-server ARGS... --port P` (P fresh per attempt; NAME's
# config may use @PORT@) and prints "PID PORT".
start_process() {
  local name=$1
  shift
  for attempt in 1 2 3 4 5 6; do
    local port pid conf login=()
    port=$(free_port)
    mkdir -p "$dir/$name"
    if [ "${1:-}" = --sentinel-conf ]; then
      conf="$dir/$name/sentinel.conf"
      printf '%s\n' "port $port" "bind 127.0.0.1" "dir $dir/$name" \
        "sentinel monitor $service 127.0.0.1 $2 2" "sentinel down-after-milliseconds $service 1000" \
        "sentinel failover-timeout $service 3000" "sentinel parallel-syncs $service 1" >"$conf"
      if [ -n "${SENTINEL_PASSWORD:-}" ]; then
        printf '%s\n' "requirepass $SENTINEL_PASSWORD" "sentinel sentinel-pass $SENTINEL_PASSWORD" >>"$conf"
      fi
      login=("${auth[@]}")
      redis-server "$conf" --sentinel >"$dir/$name/log" 2>&1 &
    else
      redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir/$name" \
        --protected-mode no --daemonize no --repl-diskless-sync-delay 0 "$@" >"$dir/$name/log" 2>&1 &
    fi
    pid=$!
    if serves "$pid" "$port" "${login[@]}"; then
      echo "$pid" >>"$dir/pids"
      echo "$pid $port"
      return 0
    fi
    echo "$name did not serve port $port (attempt $attempt; log: $dir/$name/log)" >&2
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  return 1
}

stop_all() {
  if [ -f "$dir/pids" ]; then
    while read -r pid; do
      [ -n "$pid" ] || continue
      kill "$pid" 2>/dev/null || true
      wait_exit "$pid" || true
    done <"$dir/pids"
  fi
  rm -rf "$dir"
}

# SENTINEL MASTER field $2 as the sentinel on port $1 reports it.
master_field() {
  redis-cli -p "$1" "${auth[@]}" sentinel master "$service" 2>/dev/null | tr -d '\r' | awk -v k="$2" 'NR % 2 == 1 && $0 == k { getline; print; exit }'
}

case "$cmd" in
start)
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
    { echo "redis-server/redis-cli not found (apt-get install -y redis-server redis-tools)" >&2; exit 1; }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  : >"$dir/pids"
  read -r _ master < <(start_process master) || { stop_all; exit 1; }
  read -r _ replica < <(start_process replica --replicaof 127.0.0.1 "$master") || { stop_all; exit 1; }
  sentinels=()
  for i in 1 2 3; do
    read -r _ port < <(start_process "sentinel$i" --sentinel-conf "$master") || { stop_all; exit 1; }
    sentinels+=("$port")
  done
  for _ in $(seq 1 300); do
    ready=1
    for s in "${sentinels[@]}"; do
      [ "$(master_field "$s" num-slaves)" = 1 ] && [ "$(master_field "$s" num-other-sentinels)" = 2 ] || ready=0
    done
    link=$(redis-cli -p "$replica" info replication 2>/dev/null | tr -d '\r' | sed -n 's/^master_link_status://p')
    if [ "$ready" = 1 ] && [ "$link" = up ]; then
      urls=()
      for s in "${sentinels[@]}"; do urls+=("redis://127.0.0.1:$s"); done
      (IFS=,; echo "${urls[*]}")
      exit 0
    fi
    sleep 0.1
  done
  echo "the sentinels did not discover the replica and each other within 30 s" >&2
  stop_all
  exit 1
  ;;
stop)
  stop_all
  ;;
*)
  echo "usage: $0 start|stop DIR" >&2
  exit 2
  ;;
esac
