#!/usr/bin/env bash
# Exactly K across processes on one Postgres (issue #34): 4 Python and 4 Node processes on one
# key, new and existing, and 8 on multi limiters over overlapping dimensions in different orders
# (tests/postgres_fleet.py). Runs after the python and node suites, whose builds it uses (built
# here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-$PWD/.venv}
if ! "$VENV/bin/python" -c 'import throttlekit; throttlekit.PostgresStore' 2>/dev/null; then
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "maturin>=1.9,<2"
  (cd bindings-python && VIRTUAL_ENV=$VENV "$VENV/bin/maturin" develop --quiet)
fi
node -e "require('./bindings-node').PostgresStore.connect" 2>/dev/null || node bindings-node/scripts/build.js
pidfile=$(mktemp -u)
url=$(tests/postgres-server.sh start "$pidfile")
trap 'tests/postgres-server.sh stop "$pidfile"' EXIT
"$VENV/bin/python" tests/postgres_fleet.py "$url"
