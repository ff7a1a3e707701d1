# Sourced by the wasm-* examples' start.sh: makes sure the WebAssembly build of
# @throttlekit/core (bindings-wasm/build.sh, cached), Deno (bindings-wasm's npm devDependency)
# and the example's own node_modules exist (first run only). Deno then resolves
# `@throttlekit/core` through the example's node_modules under its `deno` export condition: the
# WebAssembly build, as a Deno Deploy app gets it.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
command -v node >/dev/null && command -v npm >/dev/null || {
  echo "the wasm examples need node and npm (apt-get install nodejs npm)" >&2
  exit 1
}
[ -s "$ROOT/bindings-node/wasm/pkg/throttlekit_bg.wasm" ] || "$ROOT/bindings-wasm/build.sh" >&2
DENO=$ROOT/bindings-wasm/node_modules/.bin/deno
[ -x "$DENO" ] || (cd "$ROOT/bindings-wasm" && npm install --no-audit --no-fund --loglevel=error >&2)
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  npm install --no-audit --no-fund --loglevel=error --ignore-scripts >&2
  touch node_modules
fi
export DENO_NO_UPDATE_CHECK=1
# `deno serve` on the loopback address (HOST to listen elsewhere), reading only the package's
# files; exec'd, so the PID the caller started is the server's.
serve() {
  exec "$DENO" serve --quiet --allow-read="$ROOT/bindings-node,$PWD/node_modules" --host "${HOST:-127.0.0.1}" --port "$1" server.mjs
}
