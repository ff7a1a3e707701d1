#!/usr/bin/env bash
# The REST rows: the WebAssembly build's RedisRestStore and its peer @upstash/ratelimit (npm,
# pinned in package.json), over one test REST front end (tests/restfront/restfront.py) in front
# of a fresh redis-server, both on free loopback ports, stopped by PID on exit. Prints the ROW
# lines of bench/rest/rest.mjs (needs bindings-wasm/build.sh's module), each with the CPU time
# the front end and redis-server spent per decision of each side.
#
# Placement, as the Rust Redis benches' (core/benches/support/placement.rs says why): by default
# redis-server, the front end and the Node process (both sides run in it) share one vCPU, the
# last this shell may use, so a round trip's hand-offs are context switches on that vCPU rather
# than wake-ups of the other one through the host (40-50 us of CPU each on the 2-vCPU Intel
# guest, charged to whichever process is woken, at a rate the scheduler picks anew per run).
# `TK_BENCH_PIN=S,C` puts the servers on CPU S and Node on CPU C; `TK_BENCH_PIN=off` leaves
# placement to the scheduler. Both sides run in the one Node process, so they always get the
# same placement.
#
#   bench/rest/run.sh [decisions per measurement, default 2000]
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
N=${1:-2000}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

case "${TK_BENCH_PIN:-}" in
  off) server_cpu="" client_cpu="" ;;
  "") server_cpu=$(python3 -c 'import os; print(max(os.sched_getaffinity(0)))') client_cpu=$server_cpu ;;
  *,*) server_cpu=${TK_BENCH_PIN%%,*} client_cpu=${TK_BENCH_PIN##*,} ;;
  *) echo "TK_BENCH_PIN=$TK_BENCH_PIN: want off or SERVER_CPU,CLIENT_CPU" >&2; exit 2 ;;
esac
# Prefixes that start a command on its CPU (taskset execs it: the PID stays the command's, and
# every thread it starts inherits the mask).
on_server=() on_client=()
if [ -n "$server_cpu" ]; then
  on_server=(taskset -c "$server_cpu") on_client=(taskset -c "$client_cpu")
  export REST_BENCH_PLACEMENT="servers on CPU $server_cpu, Node on CPU $client_cpu (TK_BENCH_PIN)"
else
  export REST_BENCH_PLACEMENT="not pinned (TK_BENCH_PIN=off)"
fi

dir=$(mktemp -d)
redis_pid="" front_pid=""
cleanup() {
  [ -n "$front_pid" ] && kill "$front_pid" 2>/dev/null
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

(cd "$HERE" && npm install --silent --no-audit --no-fund >/dev/null)
port=$(free_port)
"${on_server[@]}" redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" >/dev/null &
redis_pid=$!
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
"${on_server[@]}" python3 "$ROOT/tests/restfront/restfront.py" --redis-port "$port" --token bench >"$dir/front" &
front_pid=$!
for _ in $(seq 100); do grep -q listening "$dir/front" 2>/dev/null && break; sleep 0.05; done
front=$(awk '/listening/{print $2}' "$dir/front")
[ -n "$front" ] || { echo "the REST front end did not start" >&2; exit 1; }
REST_FRONT_PID=$front_pid REDIS_PID=$redis_pid "${on_client[@]}" node "$HERE/rest.mjs" "http://127.0.0.1:$front" bench "$N"
