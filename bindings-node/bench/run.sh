#!/usr/bin/env bash
# Benchmarks @throttlekit/core against rate-limiter-flexible (not part of the tests):
# installs the pinned peers, builds the release addon, starts a throwaway Redis, places it and
# node as placement.sh says (one CPU for both by default; TK_BENCH_PIN=off leaves it to the
# scheduler), runs bench.js. TK_BENCH_BASELINE=DIR adds another build's check to the rows (bench.js).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
source "$HERE/placement.sh"
command -v redis-server >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }
(cd "$HERE" && npm install --no-audit --no-fund --loglevel=error --ignore-scripts)
node "$HERE/../scripts/build.js" --release
pidfile=$(mktemp)
url=$("$ROOT/tests/redis-server.sh" start "$pidfile")
trap '"$ROOT/tests/redis-server.sh" stop "$pidfile"' EXIT
pin_servers "$(cat "$pidfile")"
TK_BENCH_PLACEMENT=$(describe_placement) REDIS_PIDFILE="$pidfile" pinned node "$HERE/bench.js" "$url"
