#!/usr/bin/env bash
# `make dist`: every release artifact of the workspace's version, into dist/ (see docs/release.md).
#
#   throttlekit-V.crate                             cargo package (core, with its Lua)
#   libthrottlekit-V-x86_64-linux-gnu.tar.gz        include/, lib/ (.so + soname links, .a, pkgconfig), README, LICENSE
#   throttlekit_core-V-cp310-abi3-manylinux_2_17_x86_64.whl, throttlekit_core-V.tar.gz (sdist)
#   throttlekit-core-V.tgz, throttlekit-core-linux-x64-gnu-V.tgz   npm: @throttlekit/core and its prebuilt addon
#   throttlekit-V.jar                               the JVM library, its JNI library inside (native/linux-x86_64/)
#
# Native code is built once per artifact kind in the `dist` profile (thin LTO) and linked by zig
# against glibc 2.17. Fails if any manifest or artifact disagrees on the version.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

step "version $VERSION: manifests"
python3 scripts/dist/check_versions.py
dist_tools
rm -rf "$DIST" "$STAGE"
mkdir -p "$DIST" "$STAGE"

step "crate: cargo package (builds it from the package) and cargo publish --dry-run"
scripts/dist/crate.sh

step "native libraries (C, Node and JVM), dist profile, glibc $GLIBC_FLOOR"
cargo-zigbuild zigbuild --locked --profile dist --target "$TRIPLE.$GLIBC_FLOOR" -p throttlekit-c -p throttlekit-node -p throttlekit-jvm

step "C tarball"
scripts/dist/c.sh

step "npm packages"
scripts/dist/node.sh

step "JVM jar"
scripts/dist/jvm.sh

step "Python wheel and sdist"
scripts/dist/python.sh

step "artifacts"
python3 scripts/dist/check_versions.py "$DIST"
(cd "$DIST" && sha256sum -- * > SHA256SUMS && cat SHA256SUMS)
