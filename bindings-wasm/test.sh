#!/usr/bin/env bash
# Builds the WebAssembly module (bindings-wasm/build.sh; cached under target/wasm/) and tests it:
# the conformance vectors replayed under Node, Deno, Bun, workerd and headless Chromium with 0
# mismatches; the same decisions and the same `config_invalid` codes and messages as the native
# addon; the host's frozen clock; the fetch wrapper and the Hono middleware, answering as the
# native wrapper (tests/http.test.mjs), and the declarations (tests/dts.test.mjs); the Redis REST
# store (tests/rest.test.mjs) against tests/restfront/ and a throwaway redis-server, deciding as
# the native RESP store, through faults, in Node, Deno and Bun; every vectors file on that REST
# store in deterministic-replay mode with 0 mismatches (tests/rest-replay.test.mjs); the Durable
# Object store inside workerd (tests/durable-object.test.mjs) and the Deno KV store in Deno
# (tests/deno-kv.test.ts): exactly the limit under concurrent checks, the vectors' decisions; the
# module's gzipped size ceiling (tests/size.test.mjs). Deno, Bun, workerd and Hono come from npm
# (bindings-wasm/package.json), Chromium from scripts/install-deps.sh. Exits non-zero on any
# failure.
#
#   bindings-wasm/test.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
cd "$ROOT"

bindings-wasm/build.sh
# The native addon the parity tests compare with (bindings-node/test.sh's debug build; cached).
(cd bindings-node && { [ -d node_modules ] || npm install --no-audit --no-fund --loglevel=error --ignore-scripts; } && node scripts/build.js >/dev/null)
(cd bindings-wasm && npm install --no-audit --no-fund --loglevel=error >/dev/null)
deno=bindings-wasm/node_modules/.bin/deno
bun=bindings-wasm/node_modules/.bin/bun

vectors=(conformance-vectors/*.json)
runner=bindings-node/wasm/conformance.mjs
# Each replay ends "N passed, M failed" and exits non-zero on a mismatch (pipefail).
node "$runner" "${vectors[@]}" | tail -n 1 | sed 's/^/node: /'
# Deno reads the package files and the environment only (no network, no subprocesses).
DENO_NO_UPDATE_CHECK=1 "$deno" run --quiet --allow-read --allow-env "$runner" "${vectors[@]}" | tail -n 1 | sed 's/^/deno: /'
"$bun" "$runner" "${vectors[@]}" | tail -n 1 | sed 's/^/bun: /'
# Inside workerd, the module imported as a Worker imports it (bindings-wasm/workerd/).
node bindings-wasm/workerd/replay.mjs "${vectors[@]}" | tail -n 1 | sed 's/^/workerd: /'
# In headless Chromium, the page importing the `browser` entry (bindings-wasm/browser/).
node bindings-wasm/browser/replay.mjs "${vectors[@]}" | tail -n 1 | sed 's/^/chromium: /'

node --test --test-reporter=dot bindings-wasm/tests/
# The Deno KV store, in Deno (its KV is Deno's own): --unstable-kv for Deno.openKv, write for its
# files, run for the second process on one file; --no-check: Deno would check the test against
# wasm-bindgen's raw glue types (pkg/throttlekit.d.ts), not the package's.
DENO_NO_UPDATE_CHECK=1 "$deno" test --quiet --no-check --unstable-kv --allow-read --allow-write --allow-env --allow-run \
  bindings-wasm/tests/deno-kv.test.ts
