#!/usr/bin/env bash
# The adaptive limiter in a real service, for Rust (throttlekit-tower's AdaptiveLayer), Python
# (throttlekit.asgi.SheddingMiddleware under uvicorn) and Node (@throttlekit/core/shedding on
# node:http): each serves a fixed pool of workers with a lognormal service time and is driven at
# twice its capacity; behind the shedding middleware the admitted p99 stays within 2x the
# unloaded p99, without it the p99 grows past that (tests/adaptive-service/run.py). About 30 s
# per language. Run after the Python and Node suites have built their packages (scripts/test.sh
# does); uses the Python suite's venv (.venv) for uvicorn.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
VENV=${VENV:-$ROOT/.venv}
RUN="$VENV/bin/python tests/adaptive-service/run.py"

cargo build -q --locked -p throttlekit-tower --example adaptive_service
status=0
$RUN rust -- "${CARGO_TARGET_DIR:-$ROOT/target}/debug/examples/adaptive_service" || status=1
$RUN python -- "$VENV/bin/python" tests/adaptive-service/server.py || status=1
$RUN node -- node tests/adaptive-service/server.mjs || status=1
exit $status
