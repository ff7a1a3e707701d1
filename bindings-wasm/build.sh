#!/usr/bin/env bash
# Builds the WebAssembly module of @throttlekit/core into bindings-node/wasm/pkg/ (build output,
# gitignored): the core for wasm32-unknown-unknown with a standard library built from source
# (-Zbuild-std: this machine's rustup has no wasm32 std), wasm-bindgen's `web` glue (loaded with
# `initSync({module})`, so a Worker can hand it the module it imported), then wasm-opt -Os.
# Prints the module's size, raw and gzipped. Reruns reuse target/wasm/ (cargo's incremental
# state): only a change to the core or this crate recompiles anything.
#
#   bindings-wasm/build.sh            # release build (what the package ships)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
eval "$(scripts/wasm-toolchain.sh)"
out="$root/bindings-node/wasm/pkg"
target="$root/target/wasm"

# The build-std profile: size first (a Worker's script budget: opt-level z), one codegen unit,
# LTO, no unwinding (panic = abort: nothing in bindings-wasm panics, see its lib.rs). The
# standard library and every crate are built with `-Cpanic=immediate-abort` as well: a panic
# traps at once instead of formatting a message nobody reads (wasm32-unknown-unknown has no
# stderr), which drops core's panic and formatting machinery from the module;
# `-Zlocation-detail=none` drops the source paths and lines those panics would have named.
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-Zunstable-options -Cpanic=immediate-abort -Zlocation-detail=none"
export CARGO_PROFILE_WASM_INHERITS=release
export CARGO_PROFILE_WASM_OPT_LEVEL=z
export CARGO_PROFILE_WASM_LTO=true
export CARGO_PROFILE_WASM_CODEGEN_UNITS=1
export CARGO_PROFILE_WASM_PANIC=abort
export CARGO_PROFILE_WASM_DEBUG=0
# wasm-bindgen then warns that it cannot read the module's `target_features` section and falls
# back to its defaults (the glue keeps JS objects in a table, not as externref), which work.
# The linked module keeps its function names (target/wasm/wasm32-unknown-unknown/wasm/
# throttlekit_wasm.wasm), for a size profile (`twiggy top`, `wasm-opt --func-metrics`); wasm-opt
# drops them from the module the package ships. One setting for both: a profile setting changed
# between builds would rebuild the standard library.
export CARGO_PROFILE_WASM_STRIP=false
# The standard library's `optimize_for_size`: its smaller sorts, integer formatting and float
# parsing (nothing on a check's path).
# A failed build stops here (a module left by an earlier build would otherwise be packed and
# its size reported as this one's).
if ! CARGO_TARGET_DIR="$target" cargo build --quiet -p throttlekit-wasm --profile wasm \
  --target wasm32-unknown-unknown -Zbuild-std=std,panic_abort -Zbuild-std-features=optimize_for_size \
  2> >(grep -v '^warning: unused config key' >&2); then
  echo "bindings-wasm: cargo build failed (above)" >&2
  exit 1
fi
wasm="$target/wasm32-unknown-unknown/wasm/throttlekit_wasm.wasm"
[ -s "$wasm" ] || { echo "bindings-wasm: the build made no $wasm" >&2; exit 1; }

rm -rf "$out.tmp" && mkdir -p "$out.tmp"
"$WASM_BINDGEN" --target web --out-dir "$out.tmp" --out-name throttlekit "$wasm"
# wasm-opt's -Os, not -Oz: the module is larger (by 2.7 KB) but compresses better (by 0.2 KB
# gzipped), and gzipped is what a Worker is charged. The producers and target-features sections
# are for tools (wasm-bindgen has read them): 0.2 KB gzipped. `--low-memory-unused` lets it fold a
# pointer's constant offset into the load or store (1.1 KB gzipped): that differs from the add
# only where the add would wrap into the first 1 KB of memory, which this module never uses:
# wasm-ld lays it out stack first (the stack grows down from 1 MiB to 0, the data and the heap
# sit above), so the first KB is reached only by a stack 1 MiB deep, already overflowing.
# `--precompute-propagate` between two `-Os` passes propagates constants through locals that
# the first pass left: 0.2 KB gzipped.
"$WASM_OPT" -Os --precompute-propagate -Os --low-memory-unused --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  --strip-producers --strip-target-features \
  "$out.tmp/throttlekit_bg.wasm" -o "$out.tmp/throttlekit_bg.wasm"
# The glue is an ES module; bindings-node/package.json has no "type" (index.js is CommonJS).
echo '{ "type": "module" }' > "$out.tmp/package.json"
rm -rf "$out" && mv "$out.tmp" "$out"
raw=$(stat -c %s "$out/throttlekit_bg.wasm")
gz=$(gzip -9 -c "$out/throttlekit_bg.wasm" | wc -c)
echo "bindings-wasm: $out/throttlekit_bg.wasm: $raw bytes, $gz gzipped"
