#!/usr/bin/env bash
# `make fuzz`: runs every cargo-fuzz target for FUZZ_SECONDS (default 60) each, starting from
# the committed corpus in fuzz/corpus/<target>/ (small: seeds from the vectors and hand-made
# RESP replies). The run grows a working copy under target/fuzz/corpus/; `FUZZ_MERGE=1` merges
# what it learned back into fuzz/corpus/ minimized (libFuzzer -merge=1), for committing. A crash
# stops the run and leaves its input in fuzz/artifacts/<target>/: copy it to
# fuzz/regressions/<target>/ and fix the bug; every run first replays every committed
# regression input.
#
#   make fuzz                      # every target, 60 s each
#   FUZZ_SECONDS=600 make fuzz     # the issue's 10-minute runs
#   FUZZ_TARGETS="c_abi" make fuzz
#
# Installs what it needs, idempotently: the nightly toolchain (rustup) and cargo-fuzz (from
# crates.io, pinned).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
TARGETS=${FUZZ_TARGETS:-"strategy_spec vectors redis_reply c_abi http_fields"}
CARGO_FUZZ_VERSION=0.13.2

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
if ! cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi

# Shared with the workspace's target/ would rebuild both: libFuzzer instruments everything.
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$PWD/target/fuzz}
for t in $TARGETS; do
    echo "== $t: regressions"
    mkdir -p "fuzz/corpus/$t" "fuzz/regressions/$t"
    # -runs=0 executes each given input once and exits.
    cargo +nightly fuzz run --fuzz-dir fuzz "$t" "fuzz/regressions/$t" -- -runs=0
    work="$CARGO_TARGET_DIR/corpus/$t"
    mkdir -p "$work"
    cp -n "fuzz/corpus/$t"/* "$work"/ 2>/dev/null || true
    echo "== $t: ${SECONDS_EACH}s from fuzz/corpus/$t ($(date -u +%FT%TZ))"
    cargo +nightly fuzz run --fuzz-dir fuzz "$t" "$work" -- \
        -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 2>&1 \
        | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+== ERROR|SUMMARY)|panicked" || true
    if ls "fuzz/artifacts/$t"/crash-* >/dev/null 2>&1; then
        echo "$t: crash inputs in fuzz/artifacts/$t" >&2
        exit 1
    fi
    if [ "${FUZZ_MERGE:-0}" = 1 ]; then
        cargo +nightly fuzz run --fuzz-dir fuzz "$t" "fuzz/corpus/$t" "$work" -- -merge=1 2>&1 | tail -n 1
    fi
done
echo "fuzz: ${SECONDS_EACH}s per target, no crash"
