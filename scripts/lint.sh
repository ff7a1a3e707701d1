#!/usr/bin/env bash
# Formatting, clippy and rustdoc (warnings are errors) over the whole workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The docs: a broken or private intra-doc link is an error. Seconds after clippy, whose
# dependency metadata rustdoc reuses.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
# The loom model checks (bounded, a few seconds once built).
scripts/loom.sh
