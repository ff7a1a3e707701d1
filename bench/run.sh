#!/usr/bin/env bash
# `make bench`: throttlekit against the peers a user would pick instead, side by side in one run
# on this machine, then ONE table of ratios (scenario | peer | ratio | target | met?).
#
#   bench/run.sh [--quick]
#
# Parts (each logs to $OUT/<part>.log; a part that cannot run becomes a "not measured" row):
#   rust        bench/rust: check_sync on the memory store vs governor 0.10.4 (1 key, 100k keys,
#               2 threads, denied path) and memory per key (counting allocator)
#   redis       bench/rust redis_scripts: server time per call and MEMORY USAGE of our Lua scripts
#               vs the original ThrottleKit's (from the throttlekit-py 0.5.1 wheel), and
#               check_many of 16 vs redis-benchmark -P 16
#   redis-core  core/benches/redis.rs (the Redis store's own bench vs redis-benchmark)
#   python      bindings-python/bench/bench.py (vs limits 5.x and throttlekit-py 0.5.1)
#   python-http bindings-python/bench/http_bench.py: HTTP middleware overhead per request on one
#               FastAPI app, vs slowapi 0.1.10 (decorator and ASGI middleware)
#   node        bindings-node/bench/run.sh (vs rate-limiter-flexible 11)
# Peers are pinned: governor in bench/rust/Cargo.lock, throttlekit-py==0.5.1 below, the Python
# and Node peers by their benches. Downloads go to bench/.peers (git-ignored).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
QUICK=""
[ "${1:-}" = "--quick" ] && QUICK=--quick
OUT=${BENCH_OUT:-$HERE/.peers/logs}
PEERS=$HERE/.peers
mkdir -p "$OUT" "$PEERS"
rm -f "$OUT"/*.log

section() { printf '\n==== %s ====\n' "$*"; }
not_measured() { echo "NOT MEASURED: $2" >>"$OUT/$1.log"; echo "not measured: $2"; }

section "machine"
{
    echo "nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
    echo "$(uname -sr); rustc $(rustc --version | cut -d' ' -f2); load average $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/machine.log"

section "build bench/rust (release)"
if cargo build --release --manifest-path "$HERE/rust/Cargo.toml" 2>&1 | tail -2; then
    BIN=$CARGO_TARGET_DIR/release
else
    BIN=""
fi

section "rust: check_sync vs governor"
if [ -n "$BIN" ] && [ -x "$BIN/throttlekit-bench" ]; then
    "$BIN/throttlekit-bench" $QUICK 2>&1 | tee "$OUT/rust.log" | grep -v '^ROW'
else
    not_measured rust "bench/rust did not build"
fi

section "redis: our scripts vs the original's; check_many of 16"
SCRIPTS_DIR=$PEERS/throttlekit-py-0.5.1/throttlekit/_scripts
if [ ! -d "$SCRIPTS_DIR" ]; then
    (cd "$PEERS" && python3 -m pip download -q --disable-pip-version-check --no-deps throttlekit-py==0.5.1 -d wheels \
        && python3 -m zipfile -e wheels/throttlekit_py-0.5.1-py3-none-any.whl throttlekit-py-0.5.1) >/dev/null 2>&1
fi
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    not_measured redis "redis-server / redis-benchmark not installed (apt-get install redis-server)"
elif [ ! -d "$SCRIPTS_DIR" ]; then
    not_measured redis "could not download throttlekit-py==0.5.1 from PyPI"
elif [ -n "$BIN" ]; then
    "$BIN/redis_scripts" "$SCRIPTS_DIR" $QUICK 2>&1 | tee "$OUT/redis.log" | grep -v '^ROW'
else
    not_measured redis "bench/rust did not build"
fi

section "redis-core: core/benches/redis.rs"
if [ -f "$ROOT/core/benches/redis.rs" ] && command -v redis-server >/dev/null; then
    (cd "$ROOT" && TK_BENCH_ROUNDS=${TK_BENCH_ROUNDS:-$([ -n "$QUICK" ] && echo 3 || echo 5)} \
        cargo bench -q -p throttlekit --bench redis 2>&1) | tee "$OUT/redis-core.log" | tail -8
else
    not_measured redis-core "core/benches/redis.rs is missing (or redis-server is)"
fi

section "python: bindings-python/bench/bench.py"
if [ -f "$ROOT/bindings-python/bench/bench.py" ]; then
    # bench.py builds our wheel with maturin: take it from the project venv when there is one.
    PATH="$ROOT/.venv/bin:$PATH" python3 "$ROOT/bindings-python/bench/bench.py" $([ -n "$QUICK" ] && echo --seconds 0.5) 2>&1 | tee "$OUT/python.log" | tail -8
else
    not_measured python "bindings-python/bench/bench.py does not exist yet"
fi

section "python-http: bindings-python/bench/http_bench.py"
if [ -f "$ROOT/bindings-python/bench/http_bench.py" ]; then
    PATH="$ROOT/.venv/bin:$PATH" python3 "$ROOT/bindings-python/bench/http_bench.py" \
        $([ -n "$QUICK" ] && echo --rounds 3) 2>&1 | tee "$OUT/python-http.log" | tail -4
else
    not_measured python-http "bindings-python/bench/http_bench.py does not exist yet"
fi

section "node: bindings-node/bench/run.sh"
if [ -x "$ROOT/bindings-node/bench/run.sh" ]; then
    "$ROOT/bindings-node/bench/run.sh" 2>&1 | tee "$OUT/node.log" | tail -5
elif [ -f "$ROOT/bindings-node/bench/bench.js" ]; then
    node "$ROOT/bindings-node/bench/bench.js" 2>&1 | tee "$OUT/node.log" | tail -5
else
    not_measured node "bindings-node/bench has no run.sh or bench.js yet"
fi

section "summary ($(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
python3 "$HERE/summarize.py" rust="$OUT/rust.log" redis="$OUT/redis.log" redis-core="$OUT/redis-core.log" \
    python="$OUT/python.log" python-http="$OUT/python-http.log" node="$OUT/node.log"
