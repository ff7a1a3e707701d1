#!/usr/bin/env bash
# go-nethttp: tkhttp's net/http middleware (bindings-c/go/examples/nethttp/main.go).
# On first run it apt-installs Go and pkg-config if missing (as bindings-c/test.sh does),
# builds libthrottlekit and installs it into a project-local prefix ($CARGO_TARGET_DIR/go-http-prefix,
# not committed), then builds the example and execs the binary itself, so the PID you started
# is the server's.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
command -v cargo >/dev/null || { echo "go-nethttp needs cargo (https://rustup.rs)" >&2; exit 1; }
need=()
command -v go >/dev/null || need+=(golang-go)
command -v pkg-config >/dev/null || need+=(pkg-config)
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "go-nethttp needs: ${need[*]} (apt-get install)" >&2; exit 1; }
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi
PREFIX=$CARGO_TARGET_DIR/go-http-prefix
make -s -C "$ROOT/bindings-c" install PREFIX="$PREFIX" >&2
export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
BIN=$CARGO_TARGET_DIR/go-nethttp
(cd "$ROOT/bindings-c/go" && CGO_LDFLAGS="-Wl,-rpath,$PREFIX/lib" go build -o "$BIN" ./examples/nethttp)
exec "$BIN" "$1"
