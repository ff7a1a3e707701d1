#!/usr/bin/env bash
# The adaptive limiter in a real service, for Rust (throttlekit-tower's AdaptiveLayer), Python
# (throttlekit.asgi.SheddingMiddleware under uvicorn) and Node (@throttlekit/core/shedding on
# node:http): each serves a fixed pool of workers with a lognormal service time and is driven at
# twice its capacity; behind the shedding middleware the admitted p99 stays within 2x the
# unloaded p99, without it the p99 grows past that (tests/adaptive-service/run.py). About 30 s
# per language, the three at once: the time is the services' simulated work (each request sleeps
# a lognormal ~350 ms in one of 16 workers) and the load generator's fixed schedule, not CPU
# (three services at 80 requests a second use a fraction of one core), and each language compares
# p99s it measured itself, phase for phase alongside the others, so a machine the other two slow
# down moves its unloaded and loaded p99 alike (servers on free ports, one log line each). Run
# after the Python and Node suites have built their packages (scripts/test.sh does); uses the
# Python suite's venv (.venv) for uvicorn.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
VENV=${VENV:-$ROOT/.venv}
RUN="$VENV/bin/python tests/adaptive-service/run.py"

cargo build -q --locked -p throttlekit-tower --example adaptive_service
$RUN rust -- "${CARGO_TARGET_DIR:-$ROOT/target}/debug/examples/adaptive_service" &
rust=$!
$RUN python -- "$VENV/bin/python" tests/adaptive-service/server.py &
python=$!
$RUN node -- node tests/adaptive-service/server.mjs &
node=$!
status=0
for pid in $rust $python $node; do wait "$pid" || status=1; done
exit $status
