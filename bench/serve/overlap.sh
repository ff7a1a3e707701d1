#!/usr/bin/env bash
# Whether serve, Redis and the load generator overlap or take turns: one `h2load` run against
# `throttlekit serve` (64 streams over CONNS connections, one descriptor), printing the busiest
# gRPC thread's share of the run spent running and waiting for a CPU
# (/proc/<pid>/task/<tid>/schedstat), Redis's, the requests per second, and the CPU µs per
# request of serve, Redis and h2load. It was made for the round "Redis at 64 streams: the three
# processes took turns" (docs/bench-history.md lists it); docs/serve.md, "Where the time goes".
#
#   bench/serve/overlap.sh [BIN] [SECONDS] [CONNS]      (BIN: target/release/throttlekit)
#
# FIFO=1 runs serve, Redis and h2load at real-time priority (`chrt -f 10`, needs root), so that
# other work on a shared machine cannot take their CPUs and blur the shares: A/B pairs of two
# binaries are then comparable. STORE=memory runs serve on the memory store (no Redis figures).
# Builds nothing: `cargo build --release -p throttlekit-cli --bin throttlekit -p throttlekit-serve
# --example rls_load` first.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. tests/serve-lib.sh
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=${1:-$TARGET/release/throttlekit}
SECS=${2:-5}
CONNS=${3:-1}
STORE=${STORE:-redis}
LOAD=${LOAD:-$TARGET/release/examples/rls_load}
W=$(mktemp -d)
cat >"$W/bench.yaml" <<'YAML'
domain: bench
descriptors:
  - key: d0
    rate_limit: {unit: second, requests_per_unit: 1000000000}
YAML
"$LOAD" --grpc-body 1 "$W/body1"
rpid=""
if [ "$STORE" = redis ]; then
  url=$(tests/redis-server.sh start "$W/redis.pid")
  rpid=$(cat "$W/redis.pid")
  start_serve "$W/serve.log" --config "$W/bench.yaml" --reload-interval-ms 0 --store redis --redis-url "$url"
else
  start_serve "$W/serve.log" --config "$W/bench.yaml" --reload-interval-ms 0
fi
cleanup() {
  stop_pid "$SERVE_PID"
  [ -z "$rpid" ] || tests/redis-server.sh stop "$W/redis.pid" >/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
if [ -n "${FIFO:-}" ]; then
  chrt -a -f -p 10 "$SERVE_PID" >/dev/null
  [ -z "$rpid" ] || chrt -a -f -p 10 "$rpid" >/dev/null
fi
# The busiest gRPC thread's schedstat: "run_ns wait_ns slices".
grpc_sched() {
  for t in /proc/"$SERVE_PID"/task/*; do
    case "$(cat "$t/comm")" in tk-grpc-*) cat "$t/schedstat" ;; esac
  done | sort -n | tail -1
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# CPU ticks of each gRPC thread, "N M" in thread order: whether the kernel's SO_REUSEPORT hash
# gave the connections one thread each or both to one.
grpc_ticks() {
  for t in /proc/"$SERVE_PID"/task/*; do
    case "$(cat "$t/comm")" in tk-grpc-*) echo "$(cat "$t/comm") $(awk '{print $14 + $15}' "$t/stat")" ;; esac
  done | sort | cut -d' ' -f2 | tr '\n' ' '
}
h2() {
  ${FIFO:+chrt -f 10} h2load -c "$CONNS" -t 1 -m $((64 / CONNS)) -D "$1" -d "$W/body1" \
    -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://$SERVE_GRPC/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
}
h2 1 >/dev/null # warm-up
g0=$(grpc_sched); s0=$(ticks "$SERVE_PID"); gt0=$(grpc_ticks)
if [ -n "$rpid" ]; then r0=$(cat "/proc/$rpid/schedstat"); rt0=$(ticks "$rpid"); fi
TIMEFORMAT='%U %S'
{ time h2 "$SECS" >"$W/h2.out"; } 2>"$W/time"
g1=$(grpc_sched); s1=$(ticks "$SERVE_PID"); gt1=$(grpc_ticks)
if [ -n "$rpid" ]; then r1=$(cat "/proc/$rpid/schedstat"); rt1=$(ticks "$rpid"); fi
n=$(sed -n 's/^requests: \([0-9]*\) total.*/\1/p' "$W/h2.out")
read -r hu hs <"$W/time"
share() { echo "scale=2; ($2 - $1) / ($SECS * 10^9)" | bc; }
read -r ga0 gb0 _ <<<"$g0"
read -r ga1 gb1 _ <<<"$g1"
line="store=$STORE conns=$CONNS rps=$((n / SECS)) grpc_thread_running=$(share "$ga0" "$ga1") grpc_thread_waiting=$(share "$gb0" "$gb1")"
line="$line serve_us=$(echo "scale=1; ($s1 - $s0) * 10000 / $n" | bc) h2load_us=$(echo "scale=1; ($hu + $hs) * 1000000 / $n" | bc)"
if [ -n "$rpid" ]; then
  read -r ra0 _ <<<"$r0"
  read -r ra1 _ <<<"$r1"
  line="$line redis_running=$(share "$ra0" "$ra1") redis_us=$(echo "scale=1; ($rt1 - $rt0) * 10000 / $n" | bc)"
fi
# Each gRPC thread's CPU ticks over the run ("a/b").
split=$(paste -d' ' <(echo "$gt0" | tr ' ' '\n') <(echo "$gt1" | tr ' ' '\n') | awk 'NF == 2 { printf "%s%d", s, $2 - $1; s = "/" }')
echo "$line grpc_threads_ticks=$split"
