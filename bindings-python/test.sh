#!/usr/bin/env bash
# Builds and tests the Python package from a fresh machine or a warm checkout (idempotent).
# Run from anywhere; paths are resolved from the repository root.
#
#   bindings-python/test.sh            # venv + tools + redis-server + maturin develop + pytest
#
# The HTTP middleware tests need the frameworks (FastAPI/Starlette, uvicorn, Flask, Django),
# gunicorn (the quick starts' WSGI server), httpx as the client and http-sfv as an independent
# Structured Fields parser: all from PyPI.
#   PYTEST_ARGS="-k redis" bindings-python/test.sh
#
# Environment: CARGO_TARGET_DIR (default: the workspace target/), VENV (default: .venv),
# THROTTLEKIT_REDIS_URL (use a running Redis instead of a private redis-server per test session).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
VENV=${VENV:-$ROOT/.venv}
PY=${PYTHON:-python3}

step() { printf '\n== %s\n' "$*"; }

step "venv $VENV"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    "maturin>=1.9,<2" "pytest>=8" "pytest-asyncio>=0.23" "mypy>=1.10" \
    "fastapi>=0.110,<1" "starlette>=0.37" "uvicorn>=0.30,<1" "httpx>=0.27,<1" "flask>=3,<4" "django>=5,<6" \
    "gunicorn>=27,<28" "http-sfv>=0.9.9,<0.10"

# redis-cli forms the test cluster (tests/redis-cluster.sh); openssl makes the TLS test's CA.
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null || ! command -v openssl >/dev/null; then
    step "installing redis-server, redis-tools, openssl"
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server redis-tools openssl >/dev/null
fi
# tests/postgres-server.sh runs initdb and postgres from here (tests/test_postgres.py).
if [ ! -x /usr/lib/postgresql/15/bin/initdb ]; then
    step "installing postgresql-15"
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    $SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq postgresql-15 >/dev/null
fi

step "maturin develop (debug) -> $CARGO_TARGET_DIR"
"$ROOT/bindings-python/develop.sh" "$VENV"

step "pytest"
cd "$ROOT/bindings-python"
# shellcheck disable=SC2086
"$VENV/bin/python" -m pytest -q ${PYTEST_ARGS:-}
