#!/usr/bin/env bash
# The Python distribution `throttlekit-core` (import name `throttlekit`):
# - the abi3 wheel (CPython >= 3.10), built by maturin in the dist profile and linked by zig
#   against glibc 2.17, so it is tagged manylinux_2_17 (manylinux2014); `auditwheel show` must
#   agree, or the build fails;
# - the sdist, which carries the workspace pieces maturin needs (the core crate with its Lua) and
#   builds from source wherever cargo exists.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT/bindings-python"

# Linked by zig through cargo-zigbuild (zig-cargo.sh), with the very wrappers build.sh's native
# libraries were linked with, in the same target dir: cargo fingerprints the linker, and maturin's
# own `--zig` wrappers made every unit of build.sh's dependency tree (the same features: the
# workspace-hack) a new one, so the wheel compiled 162 units in the dist profile instead of 17
# (pyo3 and the extension). maturin still refuses a library that needs more than glibc 2.17.
export REAL_CARGO=${CARGO:-$(command -v cargo)}
CARGO=$ROOT/scripts/dist/zig-cargo.sh \
    maturin build --locked --profile dist --compatibility manylinux2014 --target "$TRIPLE" -o "$DIST"
maturin sdist -o "$DIST"

wheel=$(ls "$DIST"/throttlekit_core-"$VERSION"-cp310-abi3-*.whl)
shown=$(auditwheel show "$wheel")
echo "$shown"
grep -q '"manylinux_2_17_x86_64"' <<<"$shown" || { echo "auditwheel does not place $wheel at manylinux_2_17" >&2; exit 1; }
