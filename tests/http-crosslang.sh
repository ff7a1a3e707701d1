#!/usr/bin/env bash
# Cross-language check of one HTTP example against rust-axum:  tests/http-crosslang.sh NAME
# (tests/http_crosslang.py). Same venv as tests/http-blackbox.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
[ $# -eq 1 ] || { echo "usage: tests/http-crosslang.sh NAME" >&2; exit 2; }
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -c 'import http_sfv' 2>/dev/null ||
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "http-sfv>=0.9.9,<0.10"
exec "$VENV/bin/python" "$ROOT/tests/http_crosslang.py" "$1"
