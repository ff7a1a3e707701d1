#!/usr/bin/env bash
# Byte-identical RateLimit/RateLimit-Policy/Retry-After across example servers:
#   tests/http-same-bytes.sh REFERENCE NAME...   (e.g. rust-axum node-express node-koa node-nestjs)
# Uses the venv that tests/http-blackbox.sh sets up (http-sfv is not needed here, the helpers are).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -c 'import http_sfv' 2>/dev/null ||
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "http-sfv>=0.9.9,<0.10"
exec "$VENV/bin/python" "$ROOT/tests/http_same_bytes.py" "$@"
