#!/usr/bin/env bash
# `throttlekit serve` under load: ShouldRateLimit throughput and p50/p99 latency at 1 and 64
# concurrent streams (one HTTP/2 connection, as Envoy multiplexes), with 1 and 3 descriptors
# per request, on the memory store and on Redis, driven by serve/examples/rls_load.rs (a tonic
# client). Peers measured in the same run: redis-benchmark EVALSHA (an INCR + PEXPIRE script,
# envoyproxy/ratelimit's work per descriptor) at the same concurrency, and Redis's own
# commandstats count the script calls per request (one round trip per request).
#
#   bench/serve/run.sh [--quick]      prints ROW lines and a table; logs nothing else
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT"
SECONDS_PER_RUN=3
[ "${1:-}" = "--quick" ] && SECONDS_PER_RUN=1
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
# BENCH_PROFILE=debug only checks that this script runs; its numbers mean nothing.
PROFILE=${BENCH_PROFILE:-release}
cargo build $([ "$PROFILE" = release ] && echo --release) -q --locked -p throttlekit-cli -p throttlekit-serve --example rls_load
. tests/serve-lib.sh
BIN=$TARGET/$PROFILE/throttlekit
LOAD=$TARGET/$PROFILE/examples/rls_load

WORK=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do stop_pid "$p" || true; done
  tests/redis-server.sh stop "$WORK/redis.pid" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
cat >"$WORK/bench.yaml" <<'YAML'
domain: bench
descriptors:
  - key: d0
    rate_limit: {unit: second, requests_per_unit: 1000000000}
  - key: d1
    rate_limit: {unit: second, requests_per_unit: 1000000000}
  - key: d2
    rate_limit: {unit: second, requests_per_unit: 1000000000}
YAML
cores=$(nproc)
echo "machine: $cores cores, load average $(cut -d' ' -f1-3 /proc/loadavg); serve and the load generator share them"

run_matrix() { # store-name
  for streams in 1 64; do
    for desc in 1 3; do
      row=$("$LOAD" "$SERVE_GRPC" "$streams" "$desc" "$SECONDS_PER_RUN" | sed "s/^ROW serve/ROW serve store=$1/")
      echo "$row"
    done
  done
}

start_serve "$WORK/mem.log" --config "$WORK/bench.yaml" --reload-interval-ms 0
pids+=("$SERVE_PID")
run_matrix memory | tee "$WORK/rows"
stop_pid "$SERVE_PID"

url=$(tests/redis-server.sh start "$WORK/redis.pid")
port=${url##*:}
start_serve "$WORK/redis.log" --config "$WORK/bench.yaml" --reload-interval-ms 0 --store redis --redis-url "$url"
pids+=("$SERVE_PID")
redis-cli -p "$port" config resetstat >/dev/null
run_matrix redis | tee -a "$WORK/rows"
calls=$(redis-cli -p "$port" info commandstats | tr -d '\r' | sed -n 's/^cmdstat_\(evalsha\|fcall\|eval\):calls=\([0-9]*\).*/\2/p' | paste -sd+ | bc)
stop_pid "$SERVE_PID"
redis_requests=$(grep 'store=redis' "$WORK/rows" | sed 's/.* sent=\([0-9]*\).*/\1/' | paste -sd+ | bc)
echo "ROW serve-redis-calls script_calls=$calls requests=$redis_requests per_request=$(echo "scale=3; $calls / $redis_requests" | bc)" \
  | tee -a "$WORK/rows"

sha=$(redis-cli -p "$port" script load "redis.call('INCR', KEYS[1]); return redis.call('PEXPIRE', KEYS[1], 1000)")
for c in 1 64; do
  rps=$(redis-benchmark -p "$port" -c "$c" -n $((c == 1 ? 20000 : 100000)) -q evalsha "$sha" 1 bench:key 2>/dev/null \
    | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1)
  echo "ROW redis-benchmark evalsha clients=$c rps=$rps"
done | tee -a "$WORK/rows"

echo
echo "| store | streams | descriptors | requests/s | decisions/s per core | p50 | p99 | target | met? |"
echo "|---|---|---|---|---|---|---|---|---|"
while read -r line; do
  case "$line" in
  "ROW serve store="*)
    store=$(echo "$line" | sed 's/.*store=\([a-z]*\).*/\1/')
    s=$(echo "$line" | sed 's/.*streams=\([0-9]*\).*/\1/')
    d=$(echo "$line" | sed 's/.*descriptors=\([0-9]*\).*/\1/')
    rps=$(echo "$line" | sed 's/.* rps=\([0-9]*\).*/\1/')
    p50=$(echo "$line" | sed 's/.*p50_us=\([0-9]*\).*/\1/')
    p99=$(echo "$line" | sed 's/.*p99_us=\([0-9]*\).*/\1/')
    per_core=$((rps * d / cores))
    if [ "$store" = memory ]; then
      target="≥ 50k decisions/s/core"
      met=$([ "$per_core" -ge 50000 ] && echo yes || echo no)
    else
      peer=$(grep "redis-benchmark evalsha clients=$([ "$s" = 1 ] && echo 1 || echo 64) " "$WORK/rows" | sed 's/.*rps=\([0-9.]*\).*/\1/' | cut -d. -f1)
      ratio=$(echo "scale=2; $rps / $peer" | bc)
      target="≥ 0.7× redis-benchmark EVALSHA ($peer/s): $ratio×"
      met=$(echo "$ratio >= 0.7" | bc | sed 's/1/yes/;s/0/no/')
    fi
    echo "| $store | $s | $d | $rps | $per_core | ${p50} µs | ${p99} µs | $target | $met |"
    ;;
  esac
done <"$WORK/rows"
echo "script calls per request on Redis: $(grep serve-redis-calls "$WORK/rows" 2>/dev/null | sed 's/.*per_request=//' || true)"
