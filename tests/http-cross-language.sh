#!/usr/bin/env bash
# Cross-language check:  tests/http-cross-language.sh NAME...   (e.g. python-fastapi python-flask)
# Every named example must send byte-identical RateLimit / RateLimit-Policy / Retry-After
# values to rust-axum's for the same request sequence (tests/http_cross_language.py). Uses the
# venv of tests/http-blackbox.sh. Idempotent.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
[ $# -ge 1 ] || { echo "usage: tests/http-cross-language.sh NAME..." >&2; exit 2; }
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
# http_blackbox.py (whose start/stop/request this reuses) imports http-sfv.
"$VENV/bin/python" -c 'import http_sfv' 2>/dev/null ||
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "http-sfv>=0.9.9,<0.10"
exec "$VENV/bin/python" "$ROOT/tests/http_cross_language.py" "$@"
