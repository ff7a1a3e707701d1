#!/usr/bin/env bash
# The README's test command: installs what is missing, then runs every test suite — the Rust
# core, the Redis path, Python, Node, C and Go — and the lints. Each suite runs even if an
# earlier one failed; the script exits non-zero if any failed and ends with one summary line.
#
#   scripts/test.sh                          # every suite (`make test`, CI)
#   SUITES='^(core|redis)' scripts/test.sh   # only the suites whose name matches (grep -E)
#
# Every suite builds into the one target/ in the debug profile, with the same features for
# every shared dependency (workspace-hack/), so a suite compiles only what no earlier suite
# did; docs/testing.md ("Test suite speed") lists what each one builds.
set -uo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# A fresh checkout's build is compiled once: incremental compilation's bookkeeping only costs.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
# The Python HTTP examples (examples/http/python-env.sh) use the python suite's venv, which holds
# their packages: in a venv of their own, pyo3's build script (it follows VIRTUAL_ENV) reran and
# the extension was compiled again, then once more for the fault suites' build in .venv.
export EXAMPLE_VENV=${EXAMPLE_VENV:-$PWD/.venv}
SUITES=${SUITES:-}

passed=0
failed=0
failures=()
failure_logs=()
skipped=()
times=()
# Each suite's output is kept too, so a failed one's last lines can be printed again beside the
# summary: CI reports only the end of the log, which the per-suite times fill.
LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT

suite() {
  local name=$1
  shift
  if [ -n "$SUITES" ] && ! grep -qE -- "$SUITES" <<<"$name"; then
    skipped+=("$name")
    return
  fi
  echo
  echo "=== $name: $*"
  local start=$SECONDS
  # tee through a process substitution, which the script does not wait for: a process a suite
  # leaves behind holding its output cannot hold the run.
  if "$@" > >(tee "$LOGS/${#times[@]}") 2>&1; then
    passed=$((passed + 1))
    echo "=== $name: ok ($((SECONDS - start)) s)"
    times+=("$((SECONDS - start)) s  $name")
  else
    failed=$((failed + 1))
    failures+=("$name")
    failure_logs+=("$LOGS/${#times[@]}")
    echo "=== $name: FAILED ($((SECONDS - start)) s)"
    times+=("$((SECONDS - start)) s  $name (FAILED)")
  fi
}

scripts/install-deps.sh || { echo "could not install system packages"; exit 1; }

# With `sqlite`: the SQLite store's tests (a temp file each, seconds), and core built with the
# features the CLI builds it with, so the next suites reuse it.
suite "core" cargo test -p throttlekit --locked --features sqlite
suite "redis rest (the REST protocol half builds without networking: --features rest alone)" cargo check -p throttlekit --locked --no-default-features --features rest
suite "core metrics facade" cargo test -p throttlekit --locked --features metrics --test metrics
suite "cli (the CLI's own tests: the demo)" cargo test -p throttlekit-cli --locked
suite "vectors (CLI, memory)" bash -c 'set -o pipefail; cargo run -q -p throttlekit-cli --locked -- conformance conformance-vectors/*.json | tail -n 4'
suite "vectors (CLI, sqlite)" bash -c 'set -o pipefail; f=$(mktemp -d)/v.db; cargo run -q -p throttlekit-cli --locked -- conformance --store sqlite --sqlite-path "$f" conformance-vectors/*.json | tail -n 4; s=$?; rm -rf "$(dirname "$f")"; exit $s'
suite "vectors (CLI, adaptive concurrency)" bash -c 'set -o pipefail; cargo run -q -p throttlekit-cli --locked -- conformance conformance-vectors/adaptive/*.json | tail -n 2'
suite "http vectors (CLI)" bash -c 'set -o pipefail; cargo run -q -p throttlekit-cli --locked -- conformance conformance-vectors/http/*.json | tail -n 2'
suite "demo (the README's table and docs/throttlekit-demo.svg are its output)" scripts/check-demo.sh
suite "tower layer" cargo test -p throttlekit-tower --locked
suite "http black-box (rust-axum)" tests/http-blackbox.sh rust-axum
suite "http black-box (go-nethttp)" tests/http-blackbox.sh go-nethttp
suite "http black-box (go-gin)" tests/http-blackbox.sh go-gin
suite "fault proxy" cargo test -p throttlekit-faultproxy --locked
suite "redis" env REDIS_RUST_TESTS=0 tests/redis.sh
suite "postgres (vectors and timelines vs memory, also through the sans-IO session; exactly K, multi, faults, bad config, each sslmode against a private CA; a real Postgres 15)" cargo test -p throttlekit --locked --features postgres,sqlite --test postgres --test postgres_lease --test postgres_lease_multi --test postgres_faults --test postgres_session --test postgres_tls
suite "serve (grpcio cases on memory/redis/cluster, HTTP, reload, SIGTERM, a real Envoy)" tests/serve.sh
suite "serve on postgres (the grpcio cases answer as on memory)" tests/serve-postgres.sh
suite "python" bindings-python/test.sh
suite "lease fleet (rust + python processes on one key)" tests/lease-fleet.sh
suite "http black-box (python-fastapi)" tests/http-blackbox.sh python-fastapi
suite "http black-box (python-flask)" tests/http-blackbox.sh python-flask
suite "http black-box (python-flask-ext)" tests/http-blackbox.sh python-flask-ext
suite "http black-box (python-django)" tests/http-blackbox.sh python-django
suite "node" bindings-node/test.sh
suite "wasm (the WebAssembly build: vectors under Node, Deno, Bun, workerd and headless Chromium; fetch and Hono middleware; same decisions and errors as the addon)" bindings-wasm/test.sh
suite "postgres fleet (4 python + 4 node processes: exactly K on a new and an existing key, multi in any order)" tests/postgres-fleet.sh
suite "http black-box (node-express)" tests/http-blackbox.sh node-express
suite "http black-box (node-fastify)" tests/http-blackbox.sh node-fastify
suite "http black-box (node-fetch)" tests/http-blackbox.sh node-fetch
suite "http black-box (node-koa)" tests/http-blackbox.sh node-koa
suite "http black-box (node-nestjs)" tests/http-blackbox.sh node-nestjs
suite "http black-box (wasm-fetch)" tests/http-blackbox.sh wasm-fetch
suite "http black-box (wasm-hono)" tests/http-blackbox.sh wasm-hono
suite "http same bytes (every example vs rust-axum)" tests/http-same-bytes.sh rust-axum go-nethttp go-gin python-fastapi python-flask python-flask-ext python-django node-express node-fastify node-fetch node-koa node-nestjs wasm-fetch wasm-hono java-servlet ruby-rack ruby-rails
suite "c and go" bindings-c/test.sh
suite "uniffi (ruby)" bindings-uniffi/test.sh
suite "jvm (java, JNI)" bindings-jvm/test.sh
suite "http black-box (java-servlet)" tests/http-blackbox.sh java-servlet
suite "http black-box (ruby-rack)" tests/http-blackbox.sh ruby-rack
suite "http black-box (ruby-rails)" tests/http-blackbox.sh ruby-rails
suite "shutdown hygiene (rust, python, node)" tests/shutdown.sh
suite "adaptive service (rust, python, node at 2x capacity: shedding keeps p99 within 2x unloaded)" tests/adaptive-service.sh
suite "at-most-once proofs (rust, python, node, go; one node, cluster, Sentinel; behind the fault proxy)" env PROVE_FAULT_CALLS=20 tests/faults/prove.sh
suite "chaos (60 s: cluster 3+3 and Sentinel, four languages, kills, pauses, proxy faults)" env CHAOS_SECONDS=60 tests/faults/chaos.sh
suite "soak (60 s, four languages, faults every few seconds)" env SOAK_SECONDS=60 tests/faults/soak.sh
# After the suites that build the Python extension in .venv: the sdist's pip build shares
# target/ and runs pyo3's build script with its own interpreter, which recompiles pyo3 for them.
suite "dist (release artifacts, installed without a Rust toolchain)" tests/dist.sh
suite "asan (memory store, C ABI)" scripts/asan.sh
suite "lint" scripts/lint.sh

echo
if [ ${#times[@]} -gt 0 ]; then
  echo "seconds per suite:"
  printf '  %s\n' "${times[@]}"
fi
[ ${#skipped[@]} -eq 0 ] || echo "skipped (SUITES='$SUITES'): ${#skipped[@]} suites"
for i in "${!failures[@]}"; do
  echo "--- the last lines of ${failures[$i]}:"
  tail -n 12 "${failure_logs[$i]}"
done
[ ${#failures[@]} -eq 0 ] || echo "failed suites: ${failures[*]}"
echo "total: $SECONDS s"
echo "suites: $passed passed, $failed failed"
[ $((passed + failed)) -gt 0 ] || { echo "no suite's name matches SUITES='$SUITES'"; exit 2; }
[ "$failed" -eq 0 ]
