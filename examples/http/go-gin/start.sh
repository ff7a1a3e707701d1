#!/usr/bin/env bash
# go-gin: tkgin's gin middleware (bindings-c/go/tkgin/examples/gin/main.go), built against
# Debian's gin by bindings-c/go/tkgin/go.sh. Like go-nethttp, it builds libthrottlekit into a
# project-local prefix ($CARGO_TARGET_DIR/go-http-prefix, not committed) on first run, then
# execs the binary itself, so the PID you started is the server's.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
command -v cargo >/dev/null || { echo "go-gin needs cargo (https://rustup.rs)" >&2; exit 1; }
command -v go >/dev/null && command -v pkg-config >/dev/null || "$ROOT/scripts/install-deps.sh" >&2
PREFIX=$CARGO_TARGET_DIR/go-http-prefix
make -s -C "$ROOT/bindings-c" install PREFIX="$PREFIX" >&2
export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
BIN=$CARGO_TARGET_DIR/go-gin
CGO_LDFLAGS="-Wl,-rpath,$PREFIX/lib" "$ROOT/bindings-c/go/tkgin/go.sh" build -o "$BIN" ./examples/gin
exec "$BIN" "$1"
