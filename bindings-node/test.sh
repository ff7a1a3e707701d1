#!/usr/bin/env bash
# Installs what the Node package needs, builds the addon (debug) and runs every Node test:
# the API, every bad input, the conformance vectors on the memory store, on Redis, on a
# 3-master cluster, through sentinels and over TLS, connection options, Redis
# concurrency and fail policies, the index.d.ts drift check, the README examples and a fresh
# `npm install`. Run from anywhere; exits non-zero on any failure. Idempotent.
#
#   bindings-node/test.sh            # CARGO_TARGET_DIR defaults to <repo>/target
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PKG=$ROOT/bindings-node
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
apt_install() {
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

command -v node >/dev/null && command -v npm >/dev/null || apt_install nodejs npm
command -v redis-server >/dev/null && command -v redis-cli >/dev/null || apt_install redis-server redis-tools
command -v openssl >/dev/null || apt_install openssl
# tests/postgres-server.sh runs initdb and postgres from here (__test__/postgres.test.mjs).
[ -x /usr/lib/postgresql/15/bin/initdb ] || apt_install postgresql-15
command -v cargo >/dev/null || { echo "cargo is required (https://rustup.rs)" >&2; exit 1; }

cd "$PKG"
# `npm install`, not `npm ci`: the registry serves older versions of some of @napi-rs/lzma's
# platform packages than it lists, so npm leaves them out of the lock and `npm ci` fails on
# them; `npm install` respects the lock. Scripts are skipped: the install hook
# would build a release addon, and the tests want the debug build below.
npm install --no-audit --no-fund --loglevel=error --ignore-scripts

node scripts/build.js

# One 3-master cluster, one Sentinel setup and one TLS server (throwaway CA) for the whole suite, stopped by PID on
# exit; the tests find them through these variables (__test__/helpers/redis.mjs).
work=$(mktemp -d)
trap '"$ROOT/tests/redis-cluster.sh" stop "$work/cluster.pids"; "$ROOT/tests/redis-sentinels.sh" stop "$work/sentinel"; "$ROOT/tests/redis-tls.sh" stop "$work/tls"; rm -rf "$work"' EXIT
THROTTLEKIT_REDIS_CLUSTER_URLS=$("$ROOT/tests/redis-cluster.sh" start "$work/cluster.pids")
THROTTLEKIT_REDIS_SENTINEL_URLS=$("$ROOT/tests/redis-sentinels.sh" start "$work/sentinel")
THROTTLEKIT_REDIS_TLS_URL=$("$ROOT/tests/redis-tls.sh" start "$work/tls" 2>/dev/null)
export THROTTLEKIT_REDIS_CLUSTER_URLS THROTTLEKIT_REDIS_SENTINEL_URLS THROTTLEKIT_REDIS_TLS_URL THROTTLEKIT_REDIS_TLS_DIR=$work/tls
# The conformance runner on every vectors file, the HTTP and adaptive vectors included: "N passed, 0 failed".
node bin/throttlekit-conformance.js "$ROOT"/conformance-vectors/*.json "$ROOT"/conformance-vectors/http/*.json \
  "$ROOT"/conformance-vectors/adaptive/*.json 2>/dev/null
# Two test files at a time at least: node's default is one fewer than the cores, so one at a time
# on a 2-core machine, where most of a file's time is its process starting and its tests waiting
# on servers and timers (a debug addon: --test-concurrency=1 took 254 s of wall time for 80 s of
# CPU at load 9). Machines with more cores already ran these files side by side.
cores=$(nproc 2>/dev/null || echo 2)
node --test --test-concurrency=$((cores > 3 ? cores - 1 : 2)) __test__/
