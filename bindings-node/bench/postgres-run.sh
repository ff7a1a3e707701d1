#!/usr/bin/env bash
# Benchmarks @throttlekit/core's PostgresStore against rate-limiter-flexible's RateLimiterPostgres
# and pgbench's one-row upsert (not part of the tests): installs the pinned peers, builds the
# release addon, starts a throwaway Postgres 15 (tests/postgres-server.sh), runs postgres.js.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
(cd "$HERE" && npm install --no-audit --no-fund --loglevel=error --ignore-scripts)
[ "${SKIP_BUILD:-0}" = 1 ] || node "$HERE/../scripts/build.js" --release
pidfile=$(mktemp)
url=$("$ROOT/tests/postgres-server.sh" start "$pidfile")
trap '"$ROOT/tests/postgres-server.sh" stop "$pidfile"' EXIT
node "$HERE/postgres.js" "$url"
