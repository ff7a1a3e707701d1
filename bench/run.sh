#!/usr/bin/env bash
# `make bench`: throttlekit against the peers a user would pick instead, side by side in one run
# on this machine, then ONE table of ratios (scenario | peer | ratio | target | met?), which lists
# every row of issue #20's table (a row no part printed shows as "not measured"; summarize.py).
#
#   bench/run.sh [--quick]
#   BENCH_SETUP_ONLY=1 bench/run.sh      # only install what the bench needs, measure nothing
#   BENCH_PARTS='^(redis-core|node|cluster)$' bench/run.sh   # only the parts whose names match
#                                        # (the summary shows the others as "not measured";
#                                        # wasm, postgres, node-http and adaptive-bindings use
#                                        # what the node and python parts built: select those too)
#
# Parts (each logs to $OUT/<part>.log; a part that cannot run becomes a "not measured" row):
#   rust        bench/rust: check_sync on the memory store vs governor 0.10.4 (1 key of a keyed
#               limiter, 100k keys, 2 threads, denied path), DirectLimiter vs governor direct,
#               and memory per key (counting allocator)
#   redis       bench/rust redis_scripts: server time per call and MEMORY USAGE of our Lua scripts
#               vs the original ThrottleKit's (from the throttlekit-py 0.5.1 wheel), and
#               check_many of 16 vs redis-benchmark -P 16
#   redis-instructions  bench/redis_instructions.py: the same scripts' instructions per call
#               inside the server (valgrind callgrind), the row a loaded machine cannot blur
#   redis-core  core/benches/redis.rs (the Redis store's own bench vs redis-benchmark: paired
#               rounds, servers and clients pinned to one CPU, CPU per call of each side;
#               TK_BENCH_PIN=off leaves placement to the scheduler)
#   redis-topology  core/benches/redis_topology.rs: FCALL vs EVALSHA server time per call, and
#               cluster (3 masters) throughput next to one standalone server
#   adaptive    core/benches/adaptive.rs: the adaptive limiter's acquire + release, 1 thread and
#               8 threads (criterion-free; ROW lines); and the same through Go (cgo,
#               bindings-c/go's BenchmarkAdaptiveTryAcquireRelease)
#   adaptive-bindings  the same acquire + release through Python, Node and Ruby
#               (bindings-python/bench/adaptive_bench.py, bindings-node/bench/adaptive.js,
#               bindings-uniffi/ruby/bench/adaptive.rb), after the python and node parts
#   lease       core/benches/lease.rs: one hot key, 1 and 8 processes, leased (batch 100) and
#               cached_deny vs strict: decisions/s and Redis commands per 1k decisions
#   python      bindings-python/bench/bench.py (vs limits 5.x and throttlekit-py 0.5.1)
#   python-http bindings-python/bench/http_bench.py: HTTP middleware overhead per request on one
#               FastAPI app, vs slowapi 0.1.10 (decorator and ASGI middleware)
#   node        bindings-node/bench/run.sh (vs rate-limiter-flexible 11)
#   wasm        bindings-wasm/bench.mjs: the WebAssembly build's checkSync vs the native addon's in one
#               Node process, and the module's gzipped size; bench/rest/run.sh: its RedisRestStore vs
#               @upstash/ratelimit 2.2 over one REST front end and Redis, sequential and 64 in flight
#   postgres    bindings-node/bench/postgres-run.sh: Node check on PostgresStore vs
#               rate-limiter-flexible's RateLimiterPostgres (pg), sequential and 64 in flight, and
#               vs pgbench's bare one-row upsert at 64 clients (the ceiling); one hot key, strict
#               and leased; bench/postgres-cost.sh: the server's CPU per statement (the store's
#               statements vs the bare upsert) and the share of HOT updates
#   jvm         bindings-jvm/bench/run.sh: the JVM library's check vs Guava's RateLimiter (Debian
#               libguava-java; 1 key, 100k keys, 2 threads; each side in forked JVMs, then both
#               in one JVM, interleaved), tryAcquire's allocation per call, and Redis sequential /
#               64 CompletableFutures vs the Rust peer on the same server
#   node-http   bindings-node/bench/http.js: the Express middleware's and the Fastify plugin's
#               added time per request vs express-rate-limit 8 / @fastify/rate-limit 11 (in
#               process, CPU time on Node's own request objects; and over sockets)
#   cluster     bench/cluster/run.sh: Python check_sync and Node check over a 3-master cluster vs
#               the same binding on one standalone server (Python's part placed as redis-core's:
#               TK_BENCH_PIN)
#   serve       bench/serve/run.sh: `throttlekit serve` ShouldRateLimit throughput and p50/p99 at 1
#               and 64 streams, 1 and 3 descriptors, memory and Redis (vs redis-benchmark EVALSHA)
#   go-http     bench/go-http/run.sh: tkhttp's cost per request vs a golang.org/x/time/rate
#               per-IP middleware (Debian's golang-golang-x-time-dev) and a plain handler
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
# Whether the part named $1 runs (BENCH_PARTS, an extended regex; every part when unset).
part() { [[ $1 =~ ${BENCH_PARTS:-.} ]]; }
not_measured() { echo "NOT MEASURED: $2" >>"$OUT/$1.log"; echo "not measured: $2"; }

section "setup: system packages and the Python build tools"
# Like `make test`, on a fresh checkout: redis-server, redis-benchmark, node and npm from apt when
# missing, and a venv of our own for maturin (bench.py builds our wheel with it), so nothing here
# depends on the .venv that `make test` creates.
"$ROOT/scripts/install-deps.sh" || not_measured setup "could not install the system packages"
TOOLS_VENV=$PEERS/venv-tools
[ -x "$TOOLS_VENV/bin/python" ] || python3 -m venv "$TOOLS_VENV"
"$TOOLS_VENV/bin/python" -m pip install -q --disable-pip-version-check "maturin>=1.9,<2" \
    || not_measured python "could not install maturin into $TOOLS_VENV"
[ "${BENCH_SETUP_ONLY:-0}" = 1 ] && { echo "setup done ($TOOLS_VENV/bin/maturin)"; exit 0; }

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

if part rust; then
    section "rust: check_sync vs governor"
    if [ -n "$BIN" ] && [ -x "$BIN/throttlekit-bench" ]; then
        "$BIN/throttlekit-bench" $QUICK 2>&1 | tee "$OUT/rust.log" | grep -v '^ROW'
    else
        not_measured rust "bench/rust did not build"
    fi
fi

# The original's scripts (the redis and redis-instructions parts' peer).
SCRIPTS_DIR=$PEERS/throttlekit-py-0.5.1/throttlekit/_scripts
if [ ! -d "$SCRIPTS_DIR" ] && { part redis || part redis-instructions; }; then
    (cd "$PEERS" && python3 -m pip download -q --disable-pip-version-check --no-deps throttlekit-py==0.5.1 -d wheels \
        && python3 -m zipfile -e wheels/throttlekit_py-0.5.1-py3-none-any.whl throttlekit-py-0.5.1) >/dev/null 2>&1
fi

if part redis; then
    section "redis: our scripts vs the original's; check_many of 16"
    if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
        not_measured redis "redis-server / redis-benchmark not installed (apt-get install redis-server)"
    elif [ ! -d "$SCRIPTS_DIR" ]; then
        not_measured redis "could not download throttlekit-py==0.5.1 from PyPI"
    elif [ -n "$BIN" ]; then
        "$BIN/redis_scripts" "$SCRIPTS_DIR" $QUICK 2>&1 | tee "$OUT/redis.log" | grep -v '^ROW'
    else
        not_measured redis "bench/rust did not build"
    fi
fi

if part redis-instructions; then
    section "redis-instructions: bench/redis_instructions.py (callgrind, deterministic)"
    if [ -d "$SCRIPTS_DIR" ]; then
        command -v valgrind >/dev/null || { SUDO=$([ "$(id -u)" = 0 ] || echo sudo); DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq valgrind >/dev/null 2>&1; }
        python3 "$HERE/redis_instructions.py" "$SCRIPTS_DIR" --calls $([ -n "$QUICK" ] && echo 1000 || echo 2000) 2>&1 \
            | tee "$OUT/redis-instructions.log" | grep -v '^ROW'
    else
        not_measured redis-instructions "could not download throttlekit-py==0.5.1 from PyPI"
    fi
fi

if part redis-core; then
    section "redis-core: core/benches/redis.rs"
    if [ -f "$ROOT/core/benches/redis.rs" ] && command -v redis-server >/dev/null; then
        (cd "$ROOT" && TK_BENCH_ROUNDS=${TK_BENCH_ROUNDS:-$([ -n "$QUICK" ] && echo 3 || echo 5)} \
            cargo bench -q -p throttlekit --bench redis 2>&1) | tee "$OUT/redis-core.log" | grep -v '^ROW' | tail -14
    else
        not_measured redis-core "core/benches/redis.rs is missing (or redis-server is)"
    fi
fi

if part redis-topology; then
    section "redis-topology: core/benches/redis_topology.rs"
    if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
        (cd "$ROOT" && TK_BENCH_N=${TK_BENCH_N:-$([ -n "$QUICK" ] && echo 5000 || echo 20000)} \
            cargo bench -q -p throttlekit --bench redis_topology 2>&1) | tee "$OUT/redis-topology.log"
    else
        not_measured redis-topology "redis-server / redis-cli not installed (apt-get install redis-server)"
    fi
fi

if part lease; then
    section "lease: core/benches/lease.rs (one hot key: leased and cached_deny vs strict, 1 and 8 processes)"
    if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
        (cd "$ROOT" && TK_BENCH_MS=${TK_BENCH_MS:-$([ -n "$QUICK" ] && echo 1000 || echo 3000)} \
            cargo bench -q -p throttlekit --bench lease 2>&1) | tee "$OUT/lease.log"
    else
        not_measured lease "redis-server / redis-cli not installed (apt-get install redis-server)"
    fi
fi

if part adaptive; then
    section "adaptive: core/benches/adaptive.rs (acquire + release, 1 and 8 threads)"
    (cd "$ROOT" && TK_BENCH_N=$([ -n "$QUICK" ] && echo 500000 || echo 2000000) \
        cargo bench -q -p throttlekit --bench adaptive 2>&1) | tee "$OUT/adaptive.log"
    # Through the Go binding (cgo into the release libthrottlekit): the issue's 1 µs per binding.
    GO_PREFIX=$CARGO_TARGET_DIR/go-http-bench-prefix
    if command -v go >/dev/null && make -s -C "$ROOT/bindings-c" install PROFILE=release PREFIX="$GO_PREFIX" >&2; then
        ns=$(cd "$ROOT/bindings-c/go" && PKG_CONFIG_PATH=$GO_PREFIX/lib/pkgconfig CGO_LDFLAGS="-Wl,-rpath,$GO_PREFIX/lib" \
            go test -run '^$' -bench '^BenchmarkAdaptiveTryAcquireRelease$' -benchtime "$([ -n "$QUICK" ] && echo 200000 || echo 1000000)x" . \
            | awk '/^BenchmarkAdaptiveTryAcquireRelease/ {print $3}')
        if [ -n "$ns" ]; then
            awk -v ns="$ns" 'BEGIN {printf "ROW\tadaptive acquire + release through Go (cgo)\t1000 ns target\t%.2f\t>=1\t%s ns per TryAcquire + Release\n", 1000 / ns, ns}' \
                | tee -a "$OUT/adaptive.log"
        else
            echo "NOT MEASURED: the Go adaptive benchmark printed no result" | tee -a "$OUT/adaptive.log"
        fi
    else
        echo "NOT MEASURED: go or the release libthrottlekit is missing" | tee -a "$OUT/adaptive.log"
    fi
fi

if part python; then
    section "python: bindings-python/bench/bench.py"
    if [ -f "$ROOT/bindings-python/bench/bench.py" ]; then
        # bench.py builds our wheel with the maturin next to its interpreter (the setup's venv).
        PATH="$TOOLS_VENV/bin:$PATH" "$TOOLS_VENV/bin/python" "$ROOT/bindings-python/bench/bench.py" $([ -n "$QUICK" ] && echo --seconds 0.5) 2>&1 | tee "$OUT/python.log" | tail -8
    else
        not_measured python "bindings-python/bench/bench.py does not exist yet"
    fi
fi

if part python-http; then
    section "python-http: bindings-python/bench/http_bench.py"
    if [ -f "$ROOT/bindings-python/bench/http_bench.py" ]; then
        # Like bench.py: the setup's venv holds maturin (a fresh clone has no .venv; http_bench.py
        # would otherwise look for maturin beside the system Python and lose its rows).
        PATH="$TOOLS_VENV/bin:$PATH" "$TOOLS_VENV/bin/python" "$ROOT/bindings-python/bench/http_bench.py" \
            $([ -n "$QUICK" ] && echo --rounds 3) 2>&1 | tee "$OUT/python-http.log" | tail -4
    else
        not_measured python-http "bindings-python/bench/http_bench.py does not exist yet"
    fi
fi

if part node; then
    section "node: bindings-node/bench/run.sh"
    if [ -x "$ROOT/bindings-node/bench/run.sh" ]; then
        "$ROOT/bindings-node/bench/run.sh" 2>&1 | tee "$OUT/node.log" | grep -E '^(memory|redis)'
    elif [ -f "$ROOT/bindings-node/bench/bench.js" ]; then
        node "$ROOT/bindings-node/bench/bench.js" 2>&1 | tee "$OUT/node.log" | tail -5
    else
        not_measured node "bindings-node/bench has no run.sh or bench.js yet"
    fi
fi

if part wasm; then
    section "wasm: bindings-wasm/bench.mjs (WebAssembly checkSync vs the native addon's; module size)"
    # After the node part, which built the release addon; the module's build is cached in target/wasm.
    if "$ROOT/bindings-wasm/build.sh" >"$OUT/wasm-build.log" 2>&1; then
        {
            ROUNDS=$([ -n "$QUICK" ] && echo 2 || echo 5) node "$ROOT/bindings-wasm/bench.mjs" 2>&1
            ROUNDS=$([ -n "$QUICK" ] && echo 1 || echo 5) "$ROOT/bench/rest/run.sh" "$([ -n "$QUICK" ] && echo 500 || echo 2000)" 2>&1
        } | tee "$OUT/wasm.log" | grep -v '^ROW'
    else
        not_measured wasm "bindings-wasm/build.sh failed: $(tail -1 "$OUT/wasm-build.log")"
    fi
fi

if part postgres; then
    section "postgres: bindings-node/bench/postgres-run.sh (vs RateLimiterPostgres; the pgbench upsert ceiling)"
    if [ -x /usr/lib/postgresql/15/bin/pgbench ]; then
        # bindings-node/bench/run.sh (above) installed the pinned peers and built the release addon.
        SKIP_BUILD=1 ROUNDS=$([ -n "$QUICK" ] && echo 2 || echo 3) "$ROOT/bindings-node/bench/postgres-run.sh" 2>&1 \
            | tee "$OUT/postgres.log" | tail -5
        ROUNDS=$([ -n "$QUICK" ] && echo 1 || echo 3) "$ROOT/bench/postgres-cost.sh" 2>&1 | tee -a "$OUT/postgres.log" | tail -6
    else
        not_measured postgres "postgresql-15 (pgbench) is not installed"
    fi
fi

if part jvm; then
    section "jvm: bindings-jvm/bench/run.sh (vs Guava; Redis vs the Rust peer)"
    if [ -x "$ROOT/bindings-jvm/bench/run.sh" ]; then
        "$ROOT/bindings-jvm/bench/run.sh" $QUICK 2>&1 | tee "$OUT/jvm.log" | grep -v '^ROW' | tail -20
    else
        not_measured jvm "bindings-jvm/bench/run.sh is missing"
    fi
fi

if part node-http; then
    section "node-http: bindings-node/bench/http.js (Express / Fastify vs express-rate-limit / @fastify/rate-limit)"
    if [ -f "$ROOT/bindings-node/bench/http.js" ]; then
        # bindings-node/bench/run.sh (above) installed the pinned peers and built the release addon.
        (cd "$ROOT/bindings-node/bench" && npm install --no-audit --no-fund --loglevel=error --ignore-scripts >/dev/null 2>&1;
            ROUNDS=$([ -n "$QUICK" ] && echo 2 || echo 5) node http.js) 2>&1 | tee "$OUT/node-http.log" | grep -v '^ROW'
    else
        not_measured node-http "bindings-node/bench/http.js does not exist"
    fi
fi

if part cluster; then
    section "cluster: bench/cluster/run.sh (Python and Node over a 3-master cluster vs one standalone server)"
    if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
        # python_cluster.py builds our wheel with the setup venv's maturin, as bench.py does.
        PATH="$TOOLS_VENV/bin:$PATH" "$HERE/cluster/run.sh" 2>&1 | tee "$OUT/cluster.log" | grep -v '^ROW' | tail -3
    else
        not_measured cluster "redis-server / redis-cli not installed (apt-get install redis-server)"
    fi
fi

if part go-http; then
    section "go-http: bench/go-http/run.sh (tkhttp vs x/time/rate middleware)"
    if [ -x "$HERE/go-http/run.sh" ]; then
        "$HERE/go-http/run.sh" $QUICK 2>&1 | tee "$OUT/go-http.log" | tail -5
    else
        not_measured go-http "bench/go-http/run.sh is missing"
    fi
fi

if part serve; then
    section "serve: bench/serve/run.sh (ShouldRateLimit over gRPC, memory and Redis)"
    if command -v redis-benchmark >/dev/null && command -v bc >/dev/null; then
        "$HERE/serve/run.sh" $QUICK 2>&1 | tee "$OUT/serve.log" | grep -v '^ROW'
    else
        not_measured serve "redis-benchmark or bc not installed"
    fi
fi

if part adaptive-bindings; then
    section "adaptive-bindings: acquire + release through Python, Node and Ruby (the 1 us target)"
    # Go's row is in the adaptive part and the JVM's in the jvm part; these use what the python and
    # node parts built (bench.py's release wheel in bindings-python/bench/.venv-ours, the release
    # addon behind bindings-node/bench/node_modules) and the release uniffi library for Ruby.
    {
        PY_OURS=$ROOT/bindings-python/bench/.venv-ours/bin/python
        if [ -x "$PY_OURS" ]; then
            "$PY_OURS" "$ROOT/bindings-python/bench/adaptive_bench.py" $([ -n "$QUICK" ] && echo 50000) 2>&1
        else
            echo "NOT MEASURED: Python adaptive row: the python part built no wheel ($PY_OURS)"
        fi
        if [ -d "$ROOT/bindings-node/bench/node_modules/@throttlekit/core" ]; then
            node "$ROOT/bindings-node/bench/adaptive.js" $([ -n "$QUICK" ] && echo 100000) 2>&1
        else
            echo "NOT MEASURED: Node adaptive row: the node part installed no addon"
        fi
        if command -v ruby >/dev/null && ruby -e 'require "ffi"' 2>/dev/null \
            && (cd "$ROOT" && cargo build -q --release -p throttlekit-uniffi >&2); then
            THROTTLEKIT_LIB=$CARGO_TARGET_DIR/release/libthrottlekit_uniffi.so \
                ruby "$ROOT/bindings-uniffi/ruby/bench/adaptive.rb" $([ -n "$QUICK" ] && echo 10000) 2>&1
        else
            echo "NOT MEASURED: Ruby adaptive row: ruby, ruby-ffi or the release uniffi library is missing"
        fi
    } | tee "$OUT/adaptive-bindings.log"
fi

section "summary ($(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
python3 "$HERE/summarize.py" rust="$OUT/rust.log" redis="$OUT/redis.log" redis-instructions="$OUT/redis-instructions.log" \
    redis-core="$OUT/redis-core.log" \
    redis-topology="$OUT/redis-topology.log" adaptive="$OUT/adaptive.log" adaptive-bindings="$OUT/adaptive-bindings.log" \
    python="$OUT/python.log" python-http="$OUT/python-http.log" node="$OUT/node.log" wasm="$OUT/wasm.log" \
    postgres="$OUT/postgres.log" jvm="$OUT/jvm.log" \
    node-http="$OUT/node-http.log" cluster="$OUT/cluster.log" go-http="$OUT/go-http.log"
