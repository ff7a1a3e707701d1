#!/usr/bin/env bash
# `throttlekit serve` end to end: its unit tests; envoyproxy/ratelimit's answers on a manual clock
# (serve/src/compat_tests.rs) on Redis and Redis Cluster too; the grpcio conformance and migration cases
# (tests/serve/*.json) on memory, Redis and Redis Cluster with identical answers; the HTTP door
# (/json 200 then 429, /healthcheck, /metrics, /api); hot reload that keeps the old config on
# error; SIGTERM answering an in-flight call; then a real Envoy in front (tests/serve-envoy.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. tests/serve-lib.sh

cargo test -q --locked -p throttlekit-serve
cargo build -q --locked -p throttlekit-cli --bin throttlekit
serve_venv
PY=$VENV/bin/python

WORK=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do stop_pid "$p" || true; done
  tests/redis-server.sh stop "$WORK/redis.pid" || true
  tests/redis-cluster.sh stop "$WORK/cluster.pids" || true
  rm -rf "$WORK"
}
trap cleanup EXIT

CASES=(tests/serve/cases.json tests/serve/migration.json)
mkdir "$WORK/conf"
"$PY" tests/serve/rls_client.py --write-configs "$WORK/conf" "${CASES[@]}"

redis_url=$(tests/redis-server.sh start "$WORK/redis.pid")
cluster_urls=$(tests/redis-cluster.sh start "$WORK/cluster.pids")

echo "--- envoyproxy/ratelimit's answers on a manual clock, through gRPC and /json, on Redis and Redis Cluster"
TK_SERVE_TEST_REDIS=$redis_url TK_SERVE_TEST_CLUSTER=$cluster_urls \
  cargo test -q --locked -p throttlekit-serve compat_tests -- --ignored

run_store() { # name, store flags...
  local name=$1
  shift
  start_serve "$WORK/$name.log" --config "$WORK/conf" --prefix "t$RANDOM$RANDOM" "$@"
  pids+=("$SERVE_PID")
  echo "--- $name: grpcio conformance + migration cases"
  "$PY" tests/serve/rls_client.py "$SERVE_GRPC" "${CASES[@]}" >"$WORK/$name.out" \
    || { grep FAIL "$WORK/$name.out" >&2 || true; tail -1 "$WORK/$name.out"; fail "$name cases"; }
  tail -1 "$WORK/$name.out"
  stop_pid "$SERVE_PID"
}
run_store memory
run_store redis --store redis --redis-url "$redis_url"
run_store redis-cluster --store redis-cluster --redis-url "$cluster_urls"
diff <(grep -v passed "$WORK/memory.out") <(grep -v passed "$WORK/redis.out") >/dev/null || fail "redis answered differently from memory"
diff <(grep -v passed "$WORK/memory.out") <(grep -v passed "$WORK/redis-cluster.out") >/dev/null \
  || fail "redis-cluster answered differently from memory"
echo "identical answers on memory, redis and redis-cluster ($(grep -vc passed "$WORK/memory.out") responses)"

echo "--- HTTP door, hot reload, SIGTERM"
mkdir "$WORK/http"
# A day's fixed window (epoch-aligned, on the wall clock): the calls below count one window across
# reloads that take seconds, and a window boundary between two of them would start the count
# over; a run of a few seconds meets one with a probability of about 1 in 20,000.
cat >"$WORK/http/a.yaml" <<'YAML'
domain: web
descriptors:
  - key: user
    rate_limit: {unit: day, requests_per_unit: 2}
YAML
start_serve "$WORK/http.log" --config "$WORK/http" --headers draft-10 --reload-interval-ms 100
pids+=("$SERVE_PID")
H=http://$SERVE_HTTP
body='{"domain":"web","descriptors":[{"entries":[{"key":"user","value":"u1"}]}]}'
code() { curl -s -o "$WORK/body" -w '%{http_code}' -X POST -H 'content-type: application/json' -d "$1" "$H/json"; }
[ "$(code "$body")" = 200 ] || fail "/json first call"
grep -q '"limitRemaining":1' "$WORK/body" || fail "/json remaining: $(cat "$WORK/body")"
grep -Eq '"durationUntilReset":"[0-9]+s"' "$WORK/body" || fail "/json duration is not whole seconds: $(cat "$WORK/body")"
grep -q '"responseHeadersToAdd"' "$WORK/body" && grep -q 'RateLimit-Policy' "$WORK/body" || fail "no RateLimit fields: $(cat "$WORK/body")"
[ "$(code "$body")" = 200 ] || fail "/json second call"
[ "$(code "$body")" = 429 ] || fail "/json third call is not 429"
grep -q '"overallCode":"OVER_LIMIT"' "$WORK/body" || fail "429 body: $(cat "$WORK/body")"
[ "$(code '{"domain":"","descriptors":[]}')" = 400 ] || fail "empty domain is not 400"
[ "$(code 'not json')" = 400 ] || fail "bad JSON is not 400"
head -c 2000000 /dev/zero | tr '\0' a >"$WORK/huge"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary @"$WORK/huge" "$H/json")" = 413 ] || fail "2 MB body is not 413"
[ "$(curl -s "$H/healthcheck")" = OK ] || fail "/healthcheck"
curl -s "$H/metrics" | grep -q '^throttlekit_serve_descriptors_total{code="over_limit"} 1$' || fail "/metrics over_limit count"
curl -s "$H/api/config" | grep -q '"domains":\["web"\]' || fail "/api/config"

# Hot reload: raise the limit; the next call is admitted under the new config.
sed -i 's/requests_per_unit: 2/requests_per_unit: 5/' "$WORK/http/a.yaml"
for _ in $(seq 1 100); do curl -s "$H/api/config" | grep -q '"generation":2' && break; sleep 0.05; done
curl -s "$H/api/config" | grep -q '"generation":2' || fail "no reload after a change"
[ "$(code "$body")" = 200 ] || fail "reloaded limit not applied"
# A broken file: the error is reported, the previous config stays in force.
echo "domain: web
descriptors:
  - key: user
    rate_limit: {unit: day, requests_per_unit: 5, typo: 1}" >"$WORK/http/a.yaml"
for _ in $(seq 1 100); do curl -s "$H/api/config" | grep -q 'typo' && break; sleep 0.05; done
curl -s "$H/api/config" | grep -q 'a.yaml: error loading config file: descriptors\[0\].rate_limit: unknown field `typo`' \
  || fail "reload error not reported: $(curl -s "$H/api/config")"
grep -q 'config reload failed; keeping the previous config' "$WORK/http.log" || fail "reload failure not logged"
# 3 of 5 used so far: two more pass, the next is refused.
[ "$(code "$body")" = 200 ] && [ "$(code "$body")" = 200 ] && [ "$(code "$body")" = 429 ] \
  || fail "the previous config (5 a day) is not in force"
curl -s "$H/metrics" | grep -q '^throttlekit_serve_config_reloads_total{result="error"} 1$' || fail "reload error metric"
# serve reads the wall clock per request (serve/src/clock.rs), so core's 1 kHz clock thread,
# which starts at the first read of core's SystemClock, never runs in it.
[ "$(code "$body")" = 429 ] || fail "sixth call"
! grep -qx throttlekit-clk /proc/"$SERVE_PID"/task/*/comm || fail "core's clock thread (throttlekit-clk) runs in serve"

stop_pid "$SERVE_PID"

# SIGTERM: a call in flight when the signal lands is still answered, then the process exits 0.
# The client connects first and says so (a Python start-up can take a second on a loaded
# machine); Redis is then put to sleep, and only then is the call sent; the signal goes once the
# call waits in Redis's receive queue. Each step is read from the kernel, not guessed from a
# pause: fixed pauses (0.2 s for the sleep to start, 0.5 s for the call to arrive) raced a
# loaded machine.
sed -i 's/, typo: 1//' "$WORK/http/a.yaml"
start_serve "$WORK/term.log" --config "$WORK/http" --store redis --redis-url "$redis_url" \
  --redis-timeout-ms 10000 --timeout-ms 12000 --drain-ms 10000 --prefix "term$RANDOM"
pids+=("$SERVE_PID")
cat >"$WORK/one_call.py" <<'PYEOF'
import os, sys, time, grpc
from envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc
channel = grpc.insecure_channel(sys.argv[1])
grpc.channel_ready_future(channel).result(timeout=30)
stub = rls_pb2_grpc.RateLimitServiceStub(channel)
req = rls_pb2.RateLimitRequest(domain="web")
req.descriptors.add().entries.add(key="user", value=sys.argv[2])
if len(sys.argv) > 3:  # connected: say so, then wait for the go-ahead file
    print("ready", flush=True)
    while not os.path.exists(sys.argv[3]):
        time.sleep(0.01)
print(rls_pb2.RateLimitResponse.Code.Name(stub.ShouldRateLimit(req, timeout=20).overall_code))
PYEOF
[ "$("$PY" "$WORK/one_call.py" "$SERVE_GRPC" warm)" = OK ] || fail "warm-up call"
"$PY" "$WORK/one_call.py" "$SERVE_GRPC" inflight "$WORK/go" >"$WORK/inflight.out" 2>&1 &
client=$!
for _ in $(seq 1 600); do grep -q ready "$WORK/inflight.out" && break; sleep 0.05; done
grep -q ready "$WORK/inflight.out" || fail "the in-flight client never connected: $(cat "$WORK/inflight.out")"
# Redis in DEBUG SLEEP: its main thread waits in nanosleep (/proc/PID/wchan), which it does for
# nothing else (idle, it waits in epoll_wait).
redis_pid=$(cat "$WORK/redis.pid")
redis_port=${redis_url##*:}
redis-cli -u "$redis_url" DEBUG SLEEP 5 >/dev/null &
sleeper=$!
for _ in $(seq 1 200); do grep -q nanosleep "/proc/$redis_pid/wchan" && break; sleep 0.05; done
grep -q nanosleep "/proc/$redis_pid/wchan" || fail "DEBUG SLEEP never blocked Redis"
touch "$WORK/go"
# In flight: serve's request waits, unread, in the receive queue of a connection to Redis.
queued() { ss -Htn state established "( sport = :$redis_port )" | awk '$1 > 0 { n++ } END { exit n == 0 }'; }
for _ in $(seq 1 200); do queued && break; sleep 0.05; done
queued || fail "the call never reached Redis while it slept"
kill -TERM "$SERVE_PID"
wait "$client" || fail "the in-flight call failed: $(cat "$WORK/inflight.out")"
[ "$(tail -n 1 "$WORK/inflight.out")" = OK ] || fail "in-flight call answered $(cat "$WORK/inflight.out")"
wait "$SERVE_PID" && status=0 || status=$?
[ "$status" = 0 ] || fail "serve exited $status after SIGTERM"
grep -q '"msg":"stopped"' "$WORK/term.log" || fail "no orderly stop logged"
wait "$sleeper" || true
echo "SIGTERM: the in-flight call was answered OK, exit 0"

echo "--- Envoy"
tests/serve-envoy.sh
echo "serve: all checks passed"
