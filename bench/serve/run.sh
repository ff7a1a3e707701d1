#!/usr/bin/env bash
# `throttlekit serve` under load: ShouldRateLimit throughput and p50/p99 latency at 1 and 64
# concurrent streams (one HTTP/2 connection, as one Envoy worker multiplexes), with 1 and 3
# descriptors per request, on the memory store and on Redis, driven by two load generators:
# - h2load (Debian's nghttp2-client, C): the headline rows. It costs ~2-3 µs of CPU per request
#   where a tonic client costs ~9, and on two shared cores the generator's CPU is taken from
#   serve and Redis. h2load sends one fixed request (user-1; `rls_load --grpc-body` writes it)
#   and only sees HTTP 200, so each serve row also reads serve's /metrics before and after:
#   the row counts the gRPC requests serve decided, the OK and OVER_LIMIT statuses it answered
#   and its errors (every status must be OK: the limits are 10^9 per second);
# - serve/examples/rls_load.rs (a tonic client on a single-threaded runtime, 1000 users), which
#   checks every answer itself: the earlier rounds' generator, kept as a second table.
#
# Peers measured in the same run, because the machine is shared and absolute numbers drift:
# - the floor: `rls_load --empty`, the same service on serve's own gRPC threads answering OK
#   without deciding anything, driven by the same generator just before each row (what the
#   transport and the load generator cost on their own);
# - serve's CPU time per row (utime + stime from /proc), so "decisions per second per core" is
#   decisions divided by the CPU seconds serve used, whatever else the machine was doing;
# - redis-benchmark EVALSHA (an INCR + PEXPIRE script, envoyproxy/ratelimit's work per
#   descriptor) at the same concurrency, the issue's target; and redis-benchmark FCALL of the
#   very function serve sends (the fixed-window check for one descriptor, the fused multi
#   function for three, as the rows), which is what
#   Redis alone can do for the same decisions. Redis's own commandstats count the script calls
#   per request (one round trip per request) and the script's time inside Redis.
#
#   bench/serve/run.sh [--quick]      prints ROW lines and two tables
#
# For before/after pairs: BENCH_BIN=path runs that `throttlekit` binary instead of the one just
# built, and BENCH_STORES=redis runs the Redis rows alone (default "memory redis").
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT"
SECONDS_PER_RUN=3
[ "${1:-}" = "--quick" ] && SECONDS_PER_RUN=1
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
# BENCH_PROFILE=debug only checks that this script runs; its numbers mean nothing.
PROFILE=${BENCH_PROFILE:-release}
cargo build $([ "$PROFILE" = release ] && echo --release) -q --locked \
  -p throttlekit-cli --bin throttlekit -p throttlekit-serve --example rls_load
. tests/serve-lib.sh
# The bench's own setup: h2load from Debian when missing (as bench/run.sh installs valgrind).
if ! command -v h2load >/dev/null; then
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nghttp2-client; } >/dev/null 2>&1 || true
fi
GENS="rls_load"
command -v h2load >/dev/null && GENS="h2load rls_load" || echo "h2load not installed (apt-get install nghttp2-client): only the rls_load rows"
BIN=${BENCH_BIN:-$TARGET/$PROFILE/throttlekit}
STORES=${BENCH_STORES:-memory redis}
LOAD=$TARGET/$PROFILE/examples/rls_load
TICK=$(getconf CLK_TCK)

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
echo "machine: $cores cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), load average $(cut -d' ' -f1-3 /proc/loadavg) before the run; serve, the load generator and Redis share the cores"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# A process's context switches, summed over its threads: "voluntary involuntary". At one stream
# they tell where serve's CPU went (docs/serve.md, "Where the time goes"): ~1 voluntary switch
# per request means serve's thread slept and was woken each time (the generator ran on the other
# vCPU: a wake-up of an idle vCPU, dear on this VM); involuntary ones mean the generator ran on
# serve's vCPU and preempted it.
ctx_switches() {
  cat /proc/"$1"/task/*/status 2>/dev/null \
    | awk '/^voluntary_ctxt_switches/ { v += $2 } /^nonvoluntary_ctxt_switches/ { n += $2 } END { printf "%d %d", v, n }'
}

# h2load's connections per row (the streams are split among them); 1 except in the row below.
CONNS=1
# A command h2load runs under (`taskset -c N` in the pinned rows below); empty otherwise.
H2_PIN=""
# CPU ticks of each of a process's gRPC threads ("tk-grpc-0=N tk-grpc-1=M").
grpc_thread_ticks() {
  for t in /proc/"$1"/task/*; do
    case "$(cat "$t/comm")" in tk-grpc-*) echo "$(cat "$t/comm")=$(awk '{print $14 + $15}' "$t/stat")" ;; esac
  done | sort | tr '\n' ' '
}

# serve's /metrics counters, summed: "grpc_requests ok_statuses over_statuses errors".
counters() {
  curl -s "http://$1/metrics" | awk '
    /^throttlekit_serve_requests_total\{door="grpc"\}/ { r += $2 }
    /^throttlekit_serve_descriptors_total\{code="ok"\}/ { ok += $2 }
    /^throttlekit_serve_descriptors_total\{code="over_limit"\}/ { over += $2 }
    /^throttlekit_serve_(errors|fail_policy)_total/ { e += $2 }
    END { printf "%d %d %d %d", r, ok, over, e }'
}

# row GEN NAME PID ADDR STREAMS DESCRIPTORS [HTTP]: one load run; appends the server's and the
# load generator's CPU milliseconds to the ROW line, and with HTTP (serve's), what serve counted.
row() {
  local gen=$1 name=$2 pid=$3 addr=$4 s=$5 d=$6 http=${7:-} before after out c0 c1
  [ -n "$http" ] && c0=$(counters "$http")
  local sw0 sw1
  sw0=$(ctx_switches "$pid")
  before=$(cpu_ticks "$pid")
  local TIMEFORMAT='%U %S'
  if [ "$gen" = h2load ]; then
    # No warm-up phase: every request h2load sends is counted, so serve's CPU over the row
    # divides by the requests it served.
    { time $H2_PIN h2load -c "$CONNS" -t 1 -m $((s / CONNS)) -D "$SECONDS_PER_RUN" -d "$WORK/body$d" --log-file="$WORK/h2.log" \
      -H 'content-type: application/grpc' -H 'te: trailers' \
      "http://$addr/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit" >"$WORK/h2.out"; } 2>"$WORK/row.time"
    after=$(cpu_ticks "$pid")
    local done ok2xx lat
    done=$(sed -n 's/^requests: \([0-9]*\) total.* \([0-9]*\) succeeded.*/\1/p' "$WORK/h2.out")
    ok2xx=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' "$WORK/h2.out")
    lat=$(cut -f3 "$WORK/h2.log" | sort -n | awk '{a[NR]=$1} END {printf "p50_us=%d p99_us=%d", a[int(NR*0.5)+1], a[int(NR*0.99)+1]}')
    out="ROW $name streams=$s descriptors=$d requests=$done rps=$(echo "$done / $SECONDS_PER_RUN" | bc) $lat errors=$((done - ok2xx)) over=n/a sent=$done"
  else
    { time "$LOAD" "$addr" "$s" "$d" "$SECONDS_PER_RUN" >"$WORK/row.out"; } 2>"$WORK/row.time"
    after=$(cpu_ticks "$pid")
    out=$(sed "s/^ROW serve/ROW $name/" "$WORK/row.out")
  fi
  sw1=$(ctx_switches "$pid")
  out="$out server_cpu_ms=$(((after - before) * 1000 / TICK)) load_cpu_ms=$(awk '{printf "%d", ($1 + $2) * 1000}' "$WORK/row.time")"
  read -r v0 n0 <<<"$sw0"
  read -r v1 n1 <<<"$sw1"
  out="$out server_switches_voluntary=$((v1 - v0)) server_switches_involuntary=$((n1 - n0))"
  if [ -n "$http" ]; then
    c1=$(counters "$http")
    # What serve answered during the row: every request decided, every status OK, no error.
    read -r r0 k0 o0 e0 <<<"$c0"
    read -r r1 k1 o1 e1 <<<"$c1"
    out="$out served=$((r1 - r0)) statuses_ok=$((k1 - k0)) statuses_over=$((o1 - o0)) serve_errors=$((e1 - e0))"
    if [ $((k1 - k0)) -ne $(((r1 - r0) * d)) ] || [ $((o1 - o0)) -ne 0 ] || [ $((e1 - e0)) -ne 0 ]; then
      echo "not every answer was OK in this row (serve errors or OVER_LIMIT): $out" >&2
      out="$out answers=NOT-ALL-OK"
    else
      out="$out answers=checked"
    fi
  fi
  echo "$out"
}

"$LOAD" --empty >"$WORK/empty.out" &
EMPTY_PID=$!
pids+=("$EMPTY_PID")
for _ in $(seq 1 100); do grep -q listening "$WORK/empty.out" && break; sleep 0.05; done
EMPTY=$(sed -n 's/^listening //p' "$WORK/empty.out")

"$LOAD" --grpc-body 1 "$WORK/body1"
"$LOAD" --grpc-body 3 "$WORK/body3"

# Redis's script calls and their total µs so far (EVALSHA, FCALL and EVAL): "calls usec".
script_calls() {
  redis-cli -p "$port" info commandstats | tr -d '\r' \
    | awk -F'[:=,]' '/^cmdstat_(evalsha|fcall|eval):/ { c += $3; u += $5 } END { printf "%d %d", c, u }'
}
script_calls_since() { # "calls usec" before
  local c0 u0 c1 u1
  read -r c0 u0 <<<"$1"
  read -r c1 u1 <<<"$(script_calls)"
  echo "calls=$((c1 - c0)) usec=$((u1 - u0))"
}

# redis-benchmark at the row's concurrency: the INCR + PEXPIRE EVALSHA (the issue's peer) and the
# very function serve sends for the row's descriptors. "evalsha=X same=Y" (requests/s).
bench_rps() { # clients, command...
  local c=$1
  shift
  redis-benchmark -p "$port" -c "$c" -n $((c == 1 ? 20000 : 100000)) -q "$@" 2>/dev/null \
    | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1
}
peers() { # streams descriptors
  local c=$1 d=$2 same=""
  [ -n "$sha" ] || sha=$(redis-cli -p "$port" script load "redis.call('INCR', KEYS[1]); return redis.call('PEXPIRE', KEYS[1], 1000)")
  # The functions serve calls (Redis >= 7 loads core's scripts as a function library, at
  # serve's first call): a request with one limit runs the fixed-window check itself, one with
  # several the fused multi function; both with the count reply serve asks for (fixed windows
  # on serve's clock: docs/redis.md, "Fixed windows").
  if [ -z "$single" ]; then
    local functions
    functions=$(redis-cli -p "$port" function list | tr -d '\r')
    multi=$(echo "$functions" | grep -o 'tk_multi_[0-9a-f]*' | head -1 || true)
    single=$(echo "$functions" | grep -o 'tk_fixed_window_[0-9a-f]*' | head -1 || true)
  fi
  local now=$(($(date +%s) * 1000))
  if [ "$d" = 1 ] && [ -n "$single" ]; then
    same=$(bench_rps "$c" fcall "$single" 1 "tk:{bench}:d0_user-1:fixed_window:1000" "$now" count 1 1000000000 1000)
  elif [ -n "$multi" ]; then
    same=$(bench_rps "$c" fcall "$multi" 3 \
      "tk:{bench}:d0_user-1:fixed_window:1000" "tk:{bench}:d1_user-1:fixed_window:1000" \
      "tk:{bench}:d2_user-1:fixed_window:1000" "$now" all 3 fixedWindow 1 2 1000000000 1000 \
      fixedWindow 1 2 1000000000 1000 fixedWindow 1 2 1000000000 1000 count)
  fi
  echo "evalsha=$(bench_rps "$c" evalsha "$sha" 1 bench:key) same=${same:-n/a}"
}
sha="" single="" multi=""

run_matrix() { # store-name
  for gen in $GENS; do
    for streams in 1 64; do
      for desc in 1 3; do
        row "$gen" "empty store=$1 gen=$gen" "$EMPTY_PID" "$EMPTY" "$streams" "$desc"
        if [ "$1" = redis ]; then
          local before_calls
          before_calls=$(script_calls)
          row "$gen" "serve store=$1 gen=$gen" "$SERVE_PID" "$SERVE_GRPC" "$streams" "$desc" "$SERVE_HTTP"
          echo "ROW serve-script-calls $(script_calls_since "$before_calls")"
          # The peers right after the row, so that the ratio compares one moment of the machine.
          echo "ROW peers store=$1 gen=$gen streams=$streams descriptors=$desc $(peers "$streams" "$desc")"
        else
          row "$gen" "serve store=$1 gen=$gen" "$SERVE_PID" "$SERVE_GRPC" "$streams" "$desc" "$SERVE_HTTP"
        fi
      done
    done
  done
}

if [[ " $STORES " == *" memory "* ]]; then
  start_serve "$WORK/mem.log" --config "$WORK/bench.yaml" --reload-interval-ms 0
  pids+=("$SERVE_PID")
  run_matrix memory | tee "$WORK/rows"
  # One stream, one descriptor, with the generator pinned to the other vCPU (apart) or to the
  # server's (together): where the scheduler puts the generator decides the one-stream rows' CPU
  # per request on this VM (docs/serve.md, "Where the time goes"), so both are measured, for
  # serve and for the empty service, whatever the machine's load picks above.
  if [[ " $GENS " == *" h2load "* ]] && [ "$cores" -ge 2 ]; then
    for placement in apart together; do
      for who in empty serve; do
        if [ "$who" = serve ]; then p=$SERVE_PID a=$SERVE_GRPC h=$SERVE_HTTP; else p=$EMPTY_PID a=$EMPTY h=""; fi
        taskset -a -p -c 1 "$p" >/dev/null
        H2_PIN="taskset -c $([ "$placement" = apart ] && echo 0 || echo 1)"
        row h2load "pinned-$who placement=$placement store=memory gen=h2load" "$p" "$a" 1 1 "$h" | tee -a "$WORK/rows"
        taskset -a -p -c "0-$((cores - 1))" "$p" >/dev/null
      done
    done
    H2_PIN=""
  fi
  stop_pid "$SERVE_PID"
fi

url=$(tests/redis-server.sh start "$WORK/redis.pid")
port=${url##*:}
start_serve "$WORK/redis.log" --config "$WORK/bench.yaml" --reload-interval-ms 0 --store redis --redis-url "$url"
pids+=("$SERVE_PID")
redis-cli -p "$port" config resetstat >/dev/null
served0=$(counters "$SERVE_HTTP" | cut -d' ' -f1)
run_matrix redis | tee -a "$WORK/rows"
# 64 streams over two connections, as two Envoy workers open (h2load -c 2 -m 32), one
# descriptor: the kernel's SO_REUSEPORT hash picks each connection's gRPC thread, so the row
# prints how serve's CPU split between its threads (both on one thread happens by chance).
if [[ " $GENS " == *" h2load "* ]]; then
  CONNS=2
  row h2load "empty2 store=redis gen=h2load" "$EMPTY_PID" "$EMPTY" 64 1 | tee -a "$WORK/rows"
  t0=$(grpc_thread_ticks "$SERVE_PID")
  before_calls=$(script_calls)
  row h2load "serve2 store=redis gen=h2load" "$SERVE_PID" "$SERVE_GRPC" 64 1 "$SERVE_HTTP" | tee -a "$WORK/rows"
  echo "ROW serve-script-calls $(script_calls_since "$before_calls")" | tee -a "$WORK/rows"
  echo "ROW serve2-threads before: $t0 after: $(grpc_thread_ticks "$SERVE_PID")" | tee -a "$WORK/rows"
  echo "ROW peers2 store=redis streams=64 descriptors=1 $(peers 64 1)" | tee -a "$WORK/rows"
  CONNS=1
fi
redis_requests=$(($(counters "$SERVE_HTTP" | cut -d' ' -f1) - served0))
calls=$(grep '^ROW serve-script-calls' "$WORK/rows" | sed 's/.* calls=\([0-9]*\).*/\1/' | paste -sd+ | bc)
usec=$(grep '^ROW serve-script-calls' "$WORK/rows" | sed 's/.* usec=\([0-9]*\).*/\1/' | paste -sd+ | bc)
peer_us=$(redis-cli -p "$port" info commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:.*usec_per_call=\([0-9.]*\).*/\1/p')
stop_pid "$SERVE_PID"
echo "ROW serve-redis-calls script_calls=$calls requests=$redis_requests per_request=$(echo "scale=3; $calls / $redis_requests" | bc) script_us_in_redis=$(echo "scale=2; $usec / $calls" | bc)" \
  | tee -a "$WORK/rows"

field() { echo "$2" | sed "s/.* $1=\([0-9.]*\).*/\1/"; }
for gen in $GENS; do
echo
echo "load generator: $gen"
echo "| store | streams | descriptors | requests/s | empty service requests/s | p50 | p99 | CPU µs/request: serve (empty) | generator CPU µs/request | decisions/s per core (CPU) | target | met? | answers |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
while read -r line; do
  case "$line" in
  "ROW serve store="*" gen=$gen "*)
    store=$(echo "$line" | sed 's/.*store=\([a-z]*\).*/\1/')
    s=$(field streams "$line")
    d=$(field descriptors "$line")
    rps=$(field rps "$line")
    sent=$(field sent "$line")
    cpu=$(field server_cpu_ms "$line")
    empty=$(grep "^ROW empty store=$store gen=$gen streams=$s descriptors=$d " "$WORK/rows" | head -1)
    empty_rps=$(field rps "$empty")
    us_per=$(echo "scale=1; $cpu * 1000 / $sent" | bc)
    empty_us=$(echo "scale=1; $(field server_cpu_ms "$empty") * 1000 / $(field sent "$empty")" | bc)
    per_core=$(echo "$sent * $d * 1000 / $cpu" | bc)
    gen_us=$(echo "scale=1; $(field load_cpu_ms "$line") * 1000 / $sent" | bc)
    answers=$(echo "$line" | sed -n 's/.* served=\([0-9]*\) statuses_ok=\([0-9]*\) statuses_over=\([0-9]*\) serve_errors=\([0-9]*\) answers=\([-A-Za-z]*\).*/\5: \1 decided, \2 OK, \3 over, \4 errors/p')
    [ "$gen" = rls_load ] && answers="checked by the client (errors=$(field errors "$line"), over=$(field over "$line")); $answers"
    if [ "$store" = memory ]; then
      target="≥ 50k decisions/s per CPU-second"
      met=$([ "$per_core" -ge 50000 ] && echo yes || echo no)
    else
      peers=$(grep "^ROW peers store=$store gen=$gen streams=$s descriptors=$d " "$WORK/rows" | head -1)
      peer=$(echo "$peers" | sed 's/.* evalsha=\([0-9]*\).*/\1/')
      ratio=$(echo "scale=2; $rps / $peer" | bc)
      floor=$(echo "scale=2; $empty_rps / $peer" | bc)
      same=$(echo "$peers" | sed -n 's/.* same=\([0-9]*\).*/\1/p')
      same_ratio=$([ -n "$same" ] && echo "scale=2; $rps / $same" | bc || echo "n/a")
      target="≥ 0.7× redis-benchmark EVALSHA ($peer/s): ${ratio}× (empty service ${floor}×; same script via redis-benchmark ${same:-n/a}/s: ${same_ratio}×)"
      met=$(echo "$ratio >= 0.7" | bc | sed 's/1/yes/;s/0/no/')
    fi
    echo "| $store | $s | $d | $rps | $empty_rps | $(field p50_us "$line") µs | $(field p99_us "$line") µs | $us_per ($empty_us) | $gen_us | $per_core | $target | $met | $answers |"
    ;;
  esac
done <"$WORK/rows"
done
if grep -q '^ROW serve2 ' "$WORK/rows"; then
  l=$(grep '^ROW serve2 ' "$WORK/rows")
  e=$(grep '^ROW empty2 ' "$WORK/rows")
  p=$(grep '^ROW peers2 ' "$WORK/rows")
  peer=$(echo "$p" | sed 's/.* evalsha=\([0-9]*\).*/\1/')
  echo
  echo "redis, 64 streams over 2 connections (h2load -c 2 -m 32), 1 descriptor: $(field rps "$l")/s = $(echo "scale=2; $(field rps "$l") / $peer" | bc)× of redis-benchmark EVALSHA ($peer/s right after; empty service $(field rps "$e")/s = $(echo "scale=2; $(field rps "$e") / $peer" | bc)×), p50 $(field p50_us "$l") µs, p99 $(field p99_us "$l") µs, serve $(echo "scale=1; $(field server_cpu_ms "$l") * 1000 / $(field sent "$l")" | bc) µs of CPU per request; $(grep '^ROW serve2-threads' "$WORK/rows" | sed 's/^ROW serve2-threads //') (CPU ticks of serve's gRPC threads); answers $(echo "$l" | sed -n 's/.* answers=\([-A-Za-z]*\).*/\1/p')"
fi
echo "script calls per request on Redis: $(grep serve-redis-calls "$WORK/rows" | sed 's/.*per_request=\([0-9.]*\).*/\1/'); µs per script call inside Redis: $(grep serve-redis-calls "$WORK/rows" | sed 's/.*script_us_in_redis=//') (redis-benchmark's INCR + PEXPIRE script: $peer_us)"
# Context switches per request at one stream: whether each request slept and woke serve's thread
# (voluntary, the generator on the other vCPU) or the generator preempted it on its own vCPU.
per_req() { echo "scale=2; $(field "$1" "$2") / $(field sent "$2")" | bc; }
grep '^ROW serve store=[a-z]* gen=[a-z0-9_]* streams=1 ' "$WORK/rows" | while read -r l; do
  e=$(grep "^ROW empty $(echo "$l" | sed 's/^ROW serve \(store=[a-z]* gen=[a-z0-9_]* streams=1 descriptors=[0-9]\).*/\1/') " "$WORK/rows" | head -1)
  echo "one stream, $(echo "$l" | sed 's/^ROW serve \(store=[a-z]* gen=[a-z0-9_]*\) streams=1 \(descriptors=[0-9]\).*/\1 \2/'): serve's context switches per request $(per_req server_switches_voluntary "$l") voluntary + $(per_req server_switches_involuntary "$l") involuntary at $(echo "scale=1; $(field server_cpu_ms "$l") * 1000 / $(field sent "$l")" | bc) µs of CPU; the empty service's $(per_req server_switches_voluntary "$e") + $(per_req server_switches_involuntary "$e") at $(echo "scale=1; $(field server_cpu_ms "$e") * 1000 / $(field sent "$e")" | bc) µs"
done
for placement in apart together; do
  l=$(grep "^ROW pinned-serve placement=$placement " "$WORK/rows" || true)
  e=$(grep "^ROW pinned-empty placement=$placement " "$WORK/rows" || true)
  [ -n "$l" ] && [ -n "$e" ] || continue
  echo "one stream, one descriptor, memory, h2load pinned $placement (h2load on vCPU $([ "$placement" = apart ] && echo 0 || echo 1), the server on vCPU 1): serve $(echo "scale=1; $(field server_cpu_ms "$l") * 1000 / $(field sent "$l")" | bc) µs of CPU per request, $(field rps "$l")/s, switches $(per_req server_switches_voluntary "$l") + $(per_req server_switches_involuntary "$l"); the empty service $(echo "scale=1; $(field server_cpu_ms "$e") * 1000 / $(field sent "$e")" | bc) µs, $(field rps "$e")/s, switches $(per_req server_switches_voluntary "$e") + $(per_req server_switches_involuntary "$e")"
done
echo "load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
