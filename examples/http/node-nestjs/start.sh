#!/usr/bin/env bash
# node-nestjs: see server.mjs. Installs on first run, then execs the server (its PID is yours).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
source ../node-common.sh
# @throttlekit/core is a copy of bindings-node here (.npmrc: install-links), as an app installs
# it from a registry. A link would make the guard's `require('@nestjs/common')` find
# bindings-node's own devDependency: a second Nest, whose HttpException this app's exception
# filter does not know. The copy is made again whenever bindings-node has changed since.
PKG=../../../bindings-node
STAMP=node_modules/.throttlekit-core-copied
SINCE=$STAMP
[ -e "$STAMP" ] || SINCE=node_modules # node-common.sh's install, the first copy
if [ -n "$(find "$PKG/package.json" "$PKG/index.js" "$PKG/lib" "$PKG"/*.node -newer "$SINCE" 2>/dev/null | head -n 1)" ]; then
  rm -rf node_modules/@throttlekit/core
  npm install --no-audit --no-fund --loglevel=error --ignore-scripts >&2
fi
touch "$STAMP"
exec node server.mjs "$1"
