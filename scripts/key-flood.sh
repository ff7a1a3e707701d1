#!/usr/bin/env bash
# The issue's full key flood: 10 million distinct keys (TK_FLOOD_TOTAL) against a default
# MemoryStore in every language, each in a child process that reads VmRSS from
# /proc/self/status; each test fails unless resident memory stays flat at the documented
# bound. `make test` runs the same tests with 3 million keys (more than 3x the bound) to keep
# CI quick. Run after `make test` has set up the venv, the Node addon and Go.
set -euo pipefail
cd "$(dirname "$0")/.."
export TK_FLOOD_TOTAL=${TK_FLOOD_TOTAL:-10000000}
echo "== rust"
cargo test -q --release -p throttlekit --locked --test key_flood -- --nocapture flood 2>&1 | grep -E "flood of|test result"
echo "== python"
(cd bindings-python && ../.venv/bin/python -m pytest -q -s tests/test_memory_bounds.py -k flood 2>&1 | grep -E "flood of|passed|failed")
echo "== node"
(cd bindings-node && node --test __test__/memory-bounds.test.mjs 2>&1 | grep -E "flood of|^# (pass|fail)")
echo "== c and go"
bindings-c/test.sh 2>&1 | grep -E "flood of|all passed|FAIL"
