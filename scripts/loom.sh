#!/usr/bin/env bash
# The loom model checks (run by `make lint`): every interleaving of a few threads through the
# memory store's `ShardLock` and the clock ticker's publish/read protocol. `--cfg loom` goes to
# the throttlekit crate alone (through `cargo rustc`), in its own target directory so the
# everyday build is not invalidated. Bounded: the models are small (2-3 threads, a preemption
# bound), about a second of checking.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${LOOM_TARGET_DIR:-$PWD/target/loom}"
cargo rustc -q -p throttlekit --lib --profile test --features loom --locked -- --cfg loom
bin=$(ls -t "$CARGO_TARGET_DIR"/debug/deps/throttlekit-* | grep -v '\.d$' | head -n 1)
LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}" "$bin" loom_model
