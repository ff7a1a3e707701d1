#!/usr/bin/env bash
# The docs first (every link and doc path inside the repository; the README's quick starts each an
# excerpt of code a suite runs), then formatting, clippy and rustdoc (warnings are errors) over the
# whole workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/check-links.py
scripts/check-readme.py
scripts/check-adaptive-docs.py
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The fuzz targets live outside the workspace with a lock file of their own: it must still resolve
# as committed (a core dependency added or bumped without it fails here, not at `make fuzz`).
cargo metadata --manifest-path fuzz/Cargo.toml --format-version 1 --locked > /dev/null
# The docs: a broken or private intra-doc link is an error. Seconds after clippy, whose
# dependency metadata rustdoc reuses.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
# The loom model checks (bounded, a few seconds once built).
scripts/loom.sh
