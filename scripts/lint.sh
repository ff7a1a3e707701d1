#!/usr/bin/env bash
# Formatting and clippy (warnings are errors) over the whole workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The loom model checks (bounded, a few seconds once built).
scripts/loom.sh
