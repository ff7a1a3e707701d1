#!/usr/bin/env bash
# The Go HTTP middleware bench (bench/run.sh's go-http part):  bench/go-http/run.sh [--quick]
# Installs what is missing (golang-go, pkg-config, golang-golang-x-time-dev for the peer) from
# apt, builds libthrottlekit (release) into $CARGO_TARGET_DIR/go-http-bench-prefix, then runs
# main.go. No Go module proxy is used: both modules come from local directories (go.mod).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
need=()
command -v go >/dev/null || need+=(golang-go)
command -v pkg-config >/dev/null || need+=(pkg-config)
[ -f /usr/share/gocode/src/golang.org/x/time/rate/rate.go ] || need+=(golang-golang-x-time-dev)
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "bench/go-http needs: ${need[*]} (apt-get install)" >&2; exit 1; }
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi
PREFIX=$CARGO_TARGET_DIR/go-http-bench-prefix
make -s -C "$ROOT/bindings-c" install PROFILE=release PREFIX="$PREFIX" >&2
export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig GOFLAGS=-mod=mod GOPROXY=off
ARGS=()
[ "${1:-}" = "--quick" ] && ARGS=(-seconds 0.2 -rounds 5)
cd "$HERE"
CGO_LDFLAGS="-Wl,-rpath,$PREFIX/lib" go build -o "$CARGO_TARGET_DIR/go-http-bench" .
exec "$CARGO_TARGET_DIR/go-http-bench" "${ARGS[@]}"
