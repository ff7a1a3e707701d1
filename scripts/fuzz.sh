#!/usr/bin/env bash
# `make fuzz`: runs every cargo-fuzz target for FUZZ_SECONDS (default 60) each, starting from
# the committed corpus in fuzz/corpus/<target>/ (new inputs libFuzzer finds are kept there;
# `FUZZ_MINIMIZE=1` shrinks it back with `cargo fuzz cmin` before committing). A crash stops
# the run and leaves its input in fuzz/artifacts/<target>/: copy it to fuzz/regressions/<target>/
# and fix the bug; every run first replays every committed regression input.
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
TARGETS=${FUZZ_TARGETS:-"strategy_spec vectors redis_reply c_abi"}
CARGO_FUZZ_VERSION=0.13.1

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
    echo "== $t: ${SECONDS_EACH}s from fuzz/corpus/$t ($(date -u +%FT%TZ))"
    cargo +nightly fuzz run --fuzz-dir fuzz "$t" "fuzz/corpus/$t" -- \
        -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 2>&1 \
        | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+== ERROR|SUMMARY)|panicked" || true
    if ls "fuzz/artifacts/$t"/crash-* >/dev/null 2>&1; then
        echo "$t: crash inputs in fuzz/artifacts/$t" >&2
        exit 1
    fi
    if [ "${FUZZ_MINIMIZE:-0}" = 1 ]; then
        cargo +nightly fuzz cmin --fuzz-dir fuzz "$t" "fuzz/corpus/$t"
    fi
done
echo "fuzz: ${SECONDS_EACH}s per target, no crash"
