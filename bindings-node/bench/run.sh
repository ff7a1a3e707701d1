#!/usr/bin/env bash
# Benchmarks @throttlekit/core against rate-limiter-flexible (not part of the tests):
# installs the pinned peers, builds the release addon, starts a throwaway Redis, runs bench.js.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
command -v redis-server >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }
(cd "$HERE" && npm install --no-audit --no-fund --loglevel=error --ignore-scripts)
node "$HERE/../scripts/build.js" --release
pidfile=$(mktemp)
url=$("$ROOT/tests/redis-server.sh" start "$pidfile")
trap '"$ROOT/tests/redis-server.sh" stop "$pidfile"' EXIT
node "$HERE/bench.js" "$url"
