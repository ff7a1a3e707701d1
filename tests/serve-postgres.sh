#!/usr/bin/env bash
# `throttlekit serve --store postgres`: the grpcio conformance and migration cases
# (tests/serve/*.json) answered on a throwaway Postgres 15 exactly as on the memory store.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. tests/serve-lib.sh

cargo build -q --locked -p throttlekit-cli --features postgres --bin throttlekit
serve_venv
PY=$VENV/bin/python

WORK=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do stop_pid "$p" || true; done
  tests/postgres-server.sh stop "$WORK/postgres.pid" || true
  rm -rf "$WORK"
}
trap cleanup EXIT

CASES=(tests/serve/cases.json tests/serve/migration.json)
mkdir "$WORK/conf"
"$PY" tests/serve/rls_client.py --write-configs "$WORK/conf" "${CASES[@]}"
postgres_url=$(tests/postgres-server.sh start "$WORK/postgres.pid")

for store in memory postgres; do
  flags=()
  [ "$store" = postgres ] && flags=(--store postgres --postgres-url "$postgres_url")
  start_serve "$WORK/$store.log" --config "$WORK/conf" --prefix "t$RANDOM$RANDOM" "${flags[@]}"
  pids+=("$SERVE_PID")
  "$PY" tests/serve/rls_client.py "$SERVE_GRPC" "${CASES[@]}" >"$WORK/$store.out" \
    || { grep FAIL "$WORK/$store.out" >&2 || true; tail -1 "$WORK/$store.out"; fail "$store cases"; }
  tail -1 "$WORK/$store.out"
  stop_pid "$SERVE_PID"
done
diff <(grep -v passed "$WORK/memory.out") <(grep -v passed "$WORK/postgres.out") || fail "postgres answered differently from memory"
echo "identical answers on memory and postgres ($(grep -vc passed "$WORK/memory.out") responses)"
