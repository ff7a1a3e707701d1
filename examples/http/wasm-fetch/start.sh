#!/usr/bin/env bash
# wasm-fetch: see server.mjs. Installs on first run, then execs `deno serve` (its PID is yours).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
source ../wasm-common.sh
serve "$1"
