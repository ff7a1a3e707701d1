#!/usr/bin/env bash
# The Postgres server's CPU per statement (docs/postgres.md, "Numbers"):
# builds core's postgres_statement_cost example, starts a throwaway Postgres 15
# (tests/postgres-server.sh; the example reads the server's processes in /proc, so it must run
# here), and runs the store's statements and a bare one-row upsert against it. ROUNDS and
# STATEMENTS (a round's count) pass through.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cargo build -q --release -p throttlekit --features postgres --example postgres_statement_cost
pidfile=$(mktemp)
url=$("$ROOT/tests/postgres-server.sh" start "$pidfile")
trap '"$ROOT/tests/postgres-server.sh" stop "$pidfile"; rm -f "$pidfile"' EXIT
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
"$ROOT/target/release/examples/postgres_statement_cost" "$url" 2>/dev/null
