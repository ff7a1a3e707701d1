#!/usr/bin/env bash
# node-nestjs: see server.mjs. Installs on first run, then execs the server (its PID is yours).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
source ../node-common.sh
# --preserve-symlinks: @throttlekit/core is a link to bindings-node, whose `require("@nestjs/common")`
# must find this app's copy (one Nest: its filters know the guard's HttpException), as an installed
# package would.
exec node --preserve-symlinks server.mjs "$1"
