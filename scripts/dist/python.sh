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

# A target dir of its own: maturin's zig wrapper and cargo-zigbuild's (build.sh) set different
# environments, and in one target dir each build would invalidate the other's whole dependency
# tree (the wheel's features differ anyway, so they share no compiled crate).
CARGO_TARGET_DIR=$CARGO_TARGET_DIR/dist-python \
    maturin build --locked --profile dist --zig --compatibility manylinux2014 --target "$TRIPLE" -o "$DIST"
maturin sdist -o "$DIST"

wheel=$(ls "$DIST"/throttlekit_core-"$VERSION"-cp310-abi3-*.whl)
shown=$(auditwheel show "$wheel")
echo "$shown"
grep -q '"manylinux_2_17_x86_64"' <<<"$shown" || { echo "auditwheel does not place $wheel at manylinux_2_17" >&2; exit 1; }
