#!/usr/bin/env bash
# node-koa: see server.mjs. Installs on first run, then execs the server (its PID is yours).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
source ../node-common.sh
exec node server.mjs "$1"
