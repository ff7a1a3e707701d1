#!/usr/bin/env bash
# The Redis path's integration suite, runnable on a fresh CI machine from the repo root:
# installs redis-server (and redis-tools, openssl) when missing, runs the Rust Redis integration tests
# (each starts its own redis-server), then replays every conformance-vectors/*.json through the
# CLI on a throwaway Redis in deterministic-replay mode.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null || ! command -v openssl >/dev/null; then
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server redis-tools openssl >/dev/null
fi
redis-server --version
version=$(redis-server --version | sed -n 's/.*v=\([0-9]*\)\..*/\1/p')
[ "${version:-0}" -ge 7 ] || { echo "redis-server 7.0+ is needed (PEXPIRETIME)" >&2; exit 1; }

# The Rust Redis integration tests: every core/tests/redis_*.rs, found here so the list cannot
# drift from the files. A test file of the crate that talks to Redis must be named redis_*.rs;
# the check below fails on one that is not (it would drop out of this suite).
# `make test` (scripts/test.sh) sets REDIS_RUST_TESTS=0: its "core" suite, `cargo test -p
# throttlekit`, has just run every one of these binaries (every test of the crate), and running
# them twice cost two minutes. Run on its own, this script runs them.
tests=()
for f in core/tests/redis_*.rs; do t=${f#core/tests/}; tests+=("${t%.rs}"); done
[ -f "core/tests/${tests[0]}.rs" ] || { echo "no core/tests/redis_*.rs found" >&2; exit 1; }
misnamed=$(grep -lE 'RedisStore|mod redis_(server|store|cluster)\b' core/tests/*.rs | grep -v '^core/tests/redis_' || true)
[ -z "$misnamed" ] || { echo "these tests talk to Redis but are not named redis_*.rs, so this suite would skip them: $misnamed" >&2; exit 1; }
args=()
for t in "${tests[@]}"; do args+=(--test "$t"); done
if [ "${REDIS_RUST_TESTS:-1}" = 1 ]; then
  cargo test --locked -p throttlekit "${args[@]}"
else
  echo "the Rust Redis tests (${tests[*]}) ran in the core suite (cargo test -p throttlekit)"
fi

cargo build --locked -q -p throttlekit-cli --bin throttlekit
bin=${CARGO_TARGET_DIR:-target}/debug/throttlekit
pidfile=$(mktemp -u)
cluster_pids=$(mktemp -u)
tls_dir=$(mktemp -d)
urls=$(mktemp -d)
trap 'wait; tests/redis-server.sh stop "$pidfile"; tests/redis-cluster.sh stop "$cluster_pids"; tests/redis-tls.sh stop "$tls_dir"; rm -rf "$urls"' EXIT
# The cluster (about 4 s of waiting for it to form) and the TLS server start in the background
# while the vectors run on the first server; `wait PID` below fails the script if a start failed.
tests/redis-cluster.sh start "$cluster_pids" >"$urls/cluster" &
cluster_started=$!
tests/redis-tls.sh start "$tls_dir" >"$urls/tls" 2>/dev/null &
tls_started=$!
url=$(tests/redis-server.sh start "$pidfile")
"$bin" conformance --store redis --redis-url "$url" conformance-vectors/*.json

# The same files on a 3-master cluster, from its seed nodes.
wait "$cluster_started"
seeds=$(cat "$urls/cluster")
"$bin" conformance --store redis-cluster --redis-url "$seeds" conformance-vectors/*.json

# And over TLS, verified against the throwaway CA.
wait "$tls_started"
tls_url=$(cat "$urls/tls")
"$bin" conformance --store redis --redis-url "$tls_url" --redis-tls-ca "$tls_dir/ca.crt" conformance-vectors/*.json
