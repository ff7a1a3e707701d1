#!/usr/bin/env bash
# The JVM bench (bench/run.sh's "jvm" part): builds the release library and jar, starts a
# disposable redis-server, then runs JvmBench (memory vs Guava, allocation per call, Redis vs the
# Rust peer, examples/redis_peer.rs, which JvmBench runs between its own rounds). Prints JvmBench's
# table and ROW lines.   bindings-jvm/bench/run.sh [--quick]
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
ROOT=$(cd "$HERE/.." && pwd)
"$HERE/install-tools.sh"
PROFILE=release "$HERE/build.sh" --tests >/dev/null
(cd "$ROOT" && cargo build -q --locked --release -p throttlekit-jvm --example redis_peer)
PEER=${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/redis_peer
WORK=$(mktemp -d)
trap '"$ROOT/tests/redis-server.sh" stop "$WORK/redis.pid" || true; rm -rf "$WORK"' EXIT
URL=$("$ROOT/tests/redis-server.sh" start "$WORK/redis.pid")
N=$([ "${1:-}" = "--quick" ] && echo 5000 || echo 20000)
echo "java $(java -version 2>&1 | head -1); $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); load $(cut -d' ' -f1-3 /proc/loadavg)"
java -Xms512m -Xmx512m -cp "$HERE/build/throttlekit.jar:$HERE/build/tools:/usr/share/java/guava.jar" \
    -Dthrottlekit.tmpdir="$WORK/native" dev.throttlekit.bench.JvmBench ${1:-} --redis "$URL" --rust-peer "$PEER"
