#!/usr/bin/env bash
# Builds what the fault proofs, chaos and soak need (debug, the shared target/), and exports
# where it is: sourced by prove.sh, chaos.sh and soak.sh.
#   TK_FAULTPROXY     the proxy binary
#   TK_DRIVER_PYTHON  the venv's python, with the throttlekit extension installed
#   TK_DRIVER_GO      the Go driver, linked against libthrottlekit (rpath set)
#   TK_DRIVER_RUST    the Rust driver (tests/faultproxy/examples/driver.rs)
# Node's driver loads bindings-node/index.js (its debug addon is built here).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
FAULTS_WORK=${FAULTS_WORK:-$(mktemp -d)}
export FAULTS_WORK
for tool in redis-server redis-cli node go pkg-config; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: run scripts/install-deps.sh (or the binding suites' test.sh)" >&2; exit 1; }
done

echo "== build the fault proxy and the Rust driver"
(cd "$ROOT" && cargo build -q --locked -p throttlekit-faultproxy --bin throttlekit-faultproxy --example driver)
export TK_FAULTPROXY=$CARGO_TARGET_DIR/debug/throttlekit-faultproxy
export TK_DRIVER_RUST=$CARGO_TARGET_DIR/debug/examples/driver

echo "== python extension (maturin develop, debug)"
VENV=${VENV:-$ROOT/.venv}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
[ -x "$VENV/bin/maturin" ] || "$VENV/bin/python" -m pip install -q --disable-pip-version-check "maturin>=1.9,<2"
"$ROOT/bindings-python/develop.sh" "$VENV"
export TK_DRIVER_PYTHON=$VENV/bin/python

echo "== node addon (debug)"
(cd "$ROOT/bindings-node" && { [ -d node_modules ] || npm install --no-audit --no-fund --loglevel=error --ignore-scripts; } && node scripts/build.js >/dev/null)

echo "== libthrottlekit and the Go driver"
make -s -C "$ROOT/bindings-c" install PREFIX="$FAULTS_WORK/prefix" >/dev/null
export PKG_CONFIG_PATH="$FAULTS_WORK/prefix/lib/pkgconfig"
LIBDIR=$(pkg-config --variable=libdir throttlekit)
(cd "$ROOT/tests/faults/go" && CGO_LDFLAGS="-Wl,-rpath,$LIBDIR" go build -o "$FAULTS_WORK/faultdriver" .)
export TK_DRIVER_GO=$FAULTS_WORK/faultdriver
