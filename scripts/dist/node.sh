#!/usr/bin/env bash
# The npm packages, napi-rs's layout:
# - @throttlekit/core: the JS, the types and the conformance runner, no Rust sources; its
#   optionalDependencies name one package per prebuilt platform (package.json `napi.targets`),
#   of which npm installs the one whose os/cpu/libc match;
# - @throttlekit/core-linux-x64-gnu: the prebuilt addon (dist profile, linked by zig against
#   glibc 2.17).
# Where no platform package matches, install fails with what to do (lib/platform.js). The
# WebAssembly build (wasm/, for Workers, Deno, Bun and browsers) ships in @throttlekit/core.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
PKG=$ROOT/bindings-node
out=$STAGE/npm
rm -rf "$out"
mkdir -p "$out/core/scripts" "$out/core-linux-x64-gnu"

step "@throttlekit/core-linux-x64-gnu"
plat=$out/core-linux-x64-gnu
cp "$NATIVE_OUT/libthrottlekit_node.so" "$plat/throttlekit.linux-x64-gnu.node"
cp "$ROOT/LICENSE" "$plat/"
node "$ROOT/scripts/dist/npm-manifests.js" platform linux-x64-gnu > "$plat/package.json"
printf '# @throttlekit/core-linux-x64-gnu\n\nThe prebuilt native addon of [`@throttlekit/core`](https://www.npmjs.com/package/@throttlekit/core)\nfor Linux x86_64 with glibc >= 2.17. Install `@throttlekit/core`, not this package: it depends on\nthis one on the platforms it fits.\n' > "$plat/README.md"

step "@throttlekit/core"
core=$out/core
cp -r "$PKG/index.js" "$PKG/index.mjs" "$PKG/index.d.ts" "$PKG/bin" "$PKG/lib" "$PKG/README.md" "$ROOT/LICENSE" "$core/"
cp "$PKG/scripts/install.js" "$core/scripts/"
"$ROOT/bindings-wasm/build.sh" >&2
mkdir -p "$core/wasm"
cp "$PKG"/wasm/*.mjs "$core/wasm/"
cp -r "$PKG/wasm/pkg" "$core/wasm/"
node "$ROOT/scripts/dist/npm-manifests.js" core > "$core/package.json"

for dir in "$plat" "$core"; do
    (cd "$dir" && npm pack --silent --pack-destination "$DIST" >/dev/null)
done
ls -l "$DIST"/*.tgz
