#!/usr/bin/env bash
# Installs what the Node package needs, builds the addon (debug) and runs every Node test:
# the API, every bad input, the conformance vectors on the memory store and on Redis, Redis
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
command -v redis-server >/dev/null && command -v redis-cli >/dev/null || apt_install redis-server
command -v cargo >/dev/null || { echo "cargo is required (https://rustup.rs)" >&2; exit 1; }

cd "$PKG"
# `npm install`, not `npm ci` (BUILDING.md, pitfall 5). Scripts are skipped: the install hook
# would build a release addon, and the tests want the debug build below.
npm install --no-audit --no-fund --loglevel=error --ignore-scripts

node scripts/build.js
# The conformance runner on every vectors file, the HTTP vectors included: "N passed, 0 failed".
node bin/throttlekit-conformance.js "$ROOT"/conformance-vectors/*.json "$ROOT"/conformance-vectors/http/*.json 2>/dev/null
node --test __test__/
