#!/usr/bin/env bash
# rust-axum: throttlekit-tower's RateLimitLayer on axum (throttlekit-tower/examples/axum_server.rs).
# Builds the example on first run (cargo fetches the crates), then execs the binary itself.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
command -v cargo >/dev/null || { echo "rust-axum needs cargo (https://rustup.rs)" >&2; exit 1; }
cargo build -q --manifest-path "$ROOT/Cargo.toml" -p throttlekit-tower --example axum_server >&2
exec "$CARGO_TARGET_DIR/debug/examples/axum_server" "$1"
