#!/usr/bin/env bash
# The Rust crate: `cargo package` and `cargo publish --dry-run` for every workspace crate meant
# for the registry (only `throttlekit`; the bindings say `publish = false`), then
# dist/throttlekit-V.crate.
#
# Packaging builds the crate from the packaged sources, so it proves the Lua is inside. The only
# accepted warnings are the deliberate ones: tests, benches and examples stay out of the package
# (they read files only a checkout has: the repository's conformance-vectors/ and README.md).
# DIST_ALLOW_DIRTY=1 packages a worktree with uncommitted changes (the test suite's case).
# DIST_PACKAGE_NO_VERIFY=1 leaves the build from the packaged sources to the caller: tests/dist.sh
# unpacks the .crate outside the workspace and builds it right after, so verifying here too
# compiled the crate twice.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

publishable=$(cargo metadata --locked --no-deps --format-version 1 \
    | python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin)["packages"] if p["publish"] != []))')
if [ "$publishable" != "throttlekit" ]; then
    echo "crates meant for the registry: '$publishable'; expected only 'throttlekit' (mark bindings publish = false)" >&2
    exit 1
fi
dirty=()
[ "${DIST_ALLOW_DIRTY:-0}" = 1 ] && dirty=(--allow-dirty)
verify=()
[ "${DIST_PACKAGE_NO_VERIFY:-0}" = 1 ] && verify=(--no-verify)
log=$STAGE/cargo-publish.log
mkdir -p "$STAGE" "$DIST"
# `cargo package` writes the .crate (a dry-run publish does not leave one behind) and builds it
# from the packaged sources; the dry-run publish then checks what the registry would be sent.
{
    cargo package -p throttlekit --locked "${dirty[@]}" "${verify[@]}"
    cargo publish -p throttlekit --locked --dry-run --no-verify "${dirty[@]}"
} 2>&1 | tee "$log"
unexpected=$(grep '^warning:' "$log" \
    | grep -v -E '^warning: ignoring (test|benchmark|example) `[a-z_]+` as `(tests|benches|examples)/[a-z_]+\.rs` is not included in the published package$' \
    | grep -v '^warning: aborting upload due to dry run$' || true)
if [ -n "$unexpected" ]; then
    echo "cargo publish --dry-run warned:" >&2
    echo "$unexpected" >&2
    exit 1
fi
cp "$CARGO_TARGET_DIR/package/throttlekit-$VERSION.crate" "$DIST/"
files=$(tar -tzf "$DIST/throttlekit-$VERSION.crate")
grep -qx "throttlekit-$VERSION/lua/multi.lua" <<<"$files" || { echo "the .crate has no lua/multi.lua" >&2; exit 1; }
echo "dist/throttlekit-$VERSION.crate"
