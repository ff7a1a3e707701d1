#!/usr/bin/env bash
# The `cargo` maturin runs for the wheel (scripts/dist/python.sh sets CARGO to this file): its
# `cargo rustc` goes through cargo-zigbuild with the glibc floor, as build.sh's native libraries
# do, so the wheel's build has the same linker and C compiler wrappers. Cargo fingerprints the
# linker, so with maturin's own `--zig` (other wrappers) the wheel needed a target dir of its own
# and compiled the whole dependency tree in the dist profile a second time; this way it compiles
# only pyo3 and the extension on top of build.sh's units. Everything else goes to cargo itself.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
export CARGO=$REAL_CARGO
if [ "${1:-}" != rustc ]; then
    exec "$CARGO" "$@"
fi
args=()
for a in "$@"; do
    case $a in
        "$TRIPLE") a=$TRIPLE.$GLIBC_FLOOR ;;
        --target="$TRIPLE") a=--target=$TRIPLE.$GLIBC_FLOOR ;;
    esac
    args+=("$a")
done
exec cargo-zigbuild "${args[@]}"
