# Sourced by the node-* examples' start.sh: makes sure Node, the addon and the example's own
# node_modules exist (first run only), from the repository's bindings-node package.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
command -v node >/dev/null && command -v npm >/dev/null || {
  echo "the node examples need node and npm (apt-get install nodejs npm)" >&2
  exit 1
}
# The native addon: built (debug, like the binding's tests) when the package has none yet.
if ! node -e "require('$ROOT/bindings-node')" 2>/dev/null; then
  command -v cargo >/dev/null || { echo "building @throttlekit/core needs cargo (https://rustup.rs)" >&2; exit 1; }
  node "$ROOT/bindings-node/scripts/build.js" >&2
fi
# The example's dependencies, pinned by its package-lock.json; @throttlekit/core is a link to
# bindings-node. Scripts are skipped: the addon is built above.
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  npm install --no-audit --no-fund --loglevel=error --ignore-scripts >&2
  touch node_modules
fi
