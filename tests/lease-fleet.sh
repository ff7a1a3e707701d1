#!/usr/bin/env bash
# The leased mode measured against its bound (issue #23): per strategy, 2 Rust and 2 Python
# processes on one Redis key (tests/lease_fleet.py). Runs after the python suite, whose venv
# holds the built package (built here with maturin when it does not).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-$PWD/.venv}
if ! "$VENV/bin/python" -c 'import throttlekit' 2>/dev/null; then
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "maturin>=1.9,<2"
  (cd bindings-python && VIRTUAL_ENV=$VENV "$VENV/bin/maturin" develop --quiet)
fi
cargo build --locked -q -p throttlekit --features sqlite --example lease_worker
pidfile=$(mktemp -u)
url=$(tests/redis-server.sh start "$pidfile")
trap 'tests/redis-server.sh stop "$pidfile"' EXIT
"$VENV/bin/python" tests/lease_fleet.py "$url" "${CARGO_TARGET_DIR:-target}/debug/examples/lease_worker" "$VENV/bin/python"
