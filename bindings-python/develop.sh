#!/usr/bin/env bash
# `maturin develop` of this checkout's extension into a venv, unless that venv already holds it,
# in that profile, built after every file it is built from last changed:
#
#   bindings-python/develop.sh VENV [--release]
#
# Used by bindings-python/test.sh, the Python HTTP examples (examples/http/python-env.sh) and the
# fault suites (tests/faults/build.sh). A maturin develop with nothing to compile still packs the
# 47 MB debug library into a wheel and reinstalls it: 28 s of wall time and 13 s of CPU at load
# 12, which `make test` paid four times over after the Python suite had built it.
# VENV/.throttlekit-develop records the profile and checkout of the last build; the extension is
# built again when it names another, when any file below is newer than it, or when the venv's
# throttlekit is not this checkout's editable install.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=$1
profile=debug
[ "${2:-}" = --release ] && profile=release
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
stamp=$VENV/.throttlekit-develop
want="$profile $ROOT"

up_to_date() {
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] || return 1
  # What the extension is built from: the workspace's manifests and lock, core, the binding.
  [ -z "$(find "$ROOT/Cargo.toml" "$ROOT/Cargo.lock" "$ROOT/workspace-hack" "$ROOT/core/Cargo.toml" \
      "$ROOT/core/src" "$ROOT/core/lua" "$ROOT/bindings-python/Cargo.toml" "$ROOT/bindings-python/pyproject.toml" \
      "$ROOT/bindings-python/src" "$ROOT/bindings-python/python" \
      -newer "$stamp" -not -name '*.so' -not -name '*.pyc' -not -path '*/__pycache__*' -print -quit)" ] || return 1
  "$VENV/bin/python" -c 'import sys, throttlekit._throttlekit as m; sys.exit(not m.__file__.startswith(sys.argv[1]))' \
    "$ROOT/bindings-python/python/" 2>/dev/null
}

if up_to_date; then
  echo "throttlekit's extension in $VENV is up to date ($profile)"
  exit 0
fi
rm -f "$stamp"
flags=(--quiet)
[ "$profile" = release ] && flags+=(--release)
(cd "$ROOT/bindings-python" && VIRTUAL_ENV=$VENV "$VENV/bin/maturin" develop "${flags[@]}")
echo "$want" >"$stamp"
