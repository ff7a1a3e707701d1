# Sourced by scripts/dist/*.sh and tests/dist.sh: where things are, the release version, and
# the build tools' own venv (pinned; created when missing, so a fresh checkout needs nothing
# but cargo, python3 and npm).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DIST=${DIST:-$ROOT/dist}
STAGE=$ROOT/build/dist-stage
TOOLS=$ROOT/build/dist-venv
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
# The one version: the workspace's.
VERSION=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml")
# Every prebuilt binary links against glibc 2.17 (manylinux2014) through zig, whatever glibc
# the build machine has: the one floor for the wheel, the npm addon and the C library.
GLIBC_FLOOR=2.17
TRIPLE=x86_64-unknown-linux-gnu
# cargo-zigbuild and maturin --zig build into target/<triple>/<profile>.
NATIVE_OUT=$CARGO_TARGET_DIR/$TRIPLE/dist

step() { printf '\n== %s\n' "$*"; }

dist_tools() {
    [ -x "$TOOLS/bin/python" ] || python3 -m venv "$TOOLS"
    "$TOOLS/bin/python" -m pip install -q --disable-pip-version-check \
        "maturin==1.16.0" "ziglang==0.17.1" "cargo-zigbuild==0.24.0" "auditwheel==6.8.2"
    # maturin and cargo-zigbuild look for zig as `python3 -m ziglang` on the PATH.
    export PATH="$TOOLS/bin:$PATH"
}
