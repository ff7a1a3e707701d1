#!/usr/bin/env bash
# Shutdown hygiene in Rust, Python and Node (Go's runs in bindings-c/test.sh, which builds the
# C library it needs): each language's child program uses a private redis-server, closes and
# releases its store, and tests/shutdown_check.py checks that none of its connections remain,
# that it has no child processes, and that it exits 0 within 10 s when told to.
# Run after the Python and Node suites have built their packages (scripts/test.sh does).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
WORK=$(mktemp -d)
cleanup() {
    "$ROOT/tests/redis-server.sh" stop "$WORK/redis.pid" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
URL=$("$ROOT/tests/redis-server.sh" start "$WORK/redis.pid")

echo "== rust"
cargo build -q --locked -p throttlekit --features sqlite --example shutdown_child
python3 tests/shutdown_check.py "$URL" -- "${CARGO_TARGET_DIR:-$ROOT/target}/debug/examples/shutdown_child"
echo "== python"
(cd bindings-python && python3 ../tests/shutdown_check.py "$URL" -- "${VENV:-$ROOT/.venv}/bin/python" tests/shutdown_child.py)
echo "== node"
(cd bindings-node && python3 ../tests/shutdown_check.py "$URL" -- node --expose-gc __test__/helpers/shutdown-child.mjs)
echo "shutdown: rust, python and node leave nothing behind"
