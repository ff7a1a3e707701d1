#!/usr/bin/env bash
# Black-box test of one HTTP example:  tests/http-blackbox.sh NAME   (e.g. rust-axum)
# Sets up a venv with PyPI's http-sfv (an independent Structured Fields parser), then runs
# tests/http_blackbox.py, which starts examples/http/run.sh NAME on a free port and stops it
# by PID. Idempotent. Environment: VENV (default .venv, shared with the Python binding's tests).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
[ $# -eq 1 ] || { echo "usage: tests/http-blackbox.sh NAME" >&2; exit 2; }
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -c 'import http_sfv' 2>/dev/null ||
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "http-sfv>=0.9.9,<0.10"
exec "$VENV/bin/python" "$ROOT/tests/http_blackbox.py" "$1"
