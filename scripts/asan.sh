#!/usr/bin/env bash
# The memory store's and the C ABI's Rust tests under AddressSanitizer (nightly
# `-Zsanitizer=address`): the packed entries, the shard lock, eviction and every `tk_*` export
# fed random arguments. The C test programs themselves stay under valgrind (bindings-c/test.sh):
# linking gcc's ASan runtime with an LLVM-instrumented library is not a supported combination.
#
# `--target` keeps build scripts and proc macros uninstrumented; the separate target directory
# keeps the everyday build's artifacts. Measured on the 2-core machine (2026-11-24, loaded by
# other builds): 6 min cold (1.5 min of CPU), 7 s warm; docs/testing.md has today's numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${ASAN_TARGET_DIR:-$PWD/target/asan}"
export RUSTFLAGS="-Zsanitizer=address"
export RUSTDOCFLAGS="-Zsanitizer=address"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
# Property tests: fewer cases than the plain run (ASan is ~3x slower); the plain suite runs more.
export PROPTEST_CASES="${PROPTEST_CASES:-64}"
TARGET=x86_64-unknown-linux-gnu
if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
# `--no-default-features`: the Redis client (redis, rustls, tokio's net stack) is not what these
# tests exercise; leaving it out spares instrumenting its whole dependency tree (for the C
# library too: its `redis` feature is what turns the core crate's on).
# One cargo invocation for both crates: one build (the two used to resolve the workspace-hack's
# features apart and compiled proptest, num-traits and the hack twice), then each test binary.
# `lease::model` is skipped here, and only here: it is stateright model-checking an abstract
# transition system of the lease protocol (core/src/lease/model.rs), which calls no code of the
# store or the C ABI and has no unsafe; under ASan it took 90 of the suite's 159 s in CI. The
# core suite runs every one of its checks.
cargo +nightly test -q --locked --no-default-features --target "$TARGET" -p throttlekit -p throttlekit-c --lib \
    --test limiter --test decision_invariants --test metrics --test properties -- --test-threads 2 --skip lease::model::
echo "asan: memory store and C ABI tests passed"
