#!/usr/bin/env bash
# The REST rows: the WebAssembly build's RedisRestStore and its peer @upstash/ratelimit (npm,
# pinned in package.json), over one test REST front end (tests/restfront/restfront.py) in front
# of a fresh redis-server, both on free loopback ports, stopped by PID on exit. Prints the ROW
# lines of bench/rest/rest.mjs (needs bindings-wasm/build.sh's module), each with the CPU time
# the front end and redis-server spent per decision of each side.
#
# Placement, as every Node Redis bench's (bindings-node/bench/placement.sh reads `TK_BENCH_PIN`
# as core/benches/support/placement.rs does, whose doc says why): by default redis-server, the
# front end and the Node process (both sides run in it) share one vCPU, so a round trip's
# hand-offs are context switches there rather than wake-ups of the other vCPU through the host.
# Both sides run in the one Node process, so they always get the same placement.
#
#   bench/rest/run.sh [decisions per measurement, default 2000]
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
N=${1:-2000}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# shellcheck source=bindings-node/bench/placement.sh
source "$ROOT/bindings-node/bench/placement.sh"
REST_BENCH_PLACEMENT=$(describe_placement)
export REST_BENCH_PLACEMENT

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
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" >/dev/null &
redis_pid=$!
pin_servers "$redis_pid"
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
python3 "$ROOT/tests/restfront/restfront.py" --redis-port "$port" --token bench >"$dir/front" &
front_pid=$!
pin_servers "$front_pid"
for _ in $(seq 100); do grep -q listening "$dir/front" 2>/dev/null && break; sleep 0.05; done
front=$(awk '/listening/{print $2}' "$dir/front")
[ -n "$front" ] || { echo "the REST front end did not start" >&2; exit 1; }
REST_FRONT_PID=$front_pid REDIS_PID=$redis_pid pinned node "$HERE/rest.mjs" "http://127.0.0.1:$front" bench "$N"
