#!/usr/bin/env bash
# Shared by the python-* examples: `source python-env.sh PACKAGE...` makes a project-local venv
# (examples/http/.venv-python, not committed) with the throttlekit package built from this
# checkout and the PACKAGEs from PyPI, then sets $PYTHON. The build is the debug profile that
# bindings-python/test.sh also builds, so in `make test` it reuses that build instead of
# compiling the crate again; EXAMPLE_PROFILE=release builds an optimised one. Idempotent: the package is
# rebuilt only when a source of it (or of core) is newer than the last build (bindings-python/develop.sh).
# Its output goes to stderr, so a caller's stdout stays the server's.
set -euo pipefail
HTTP_EXAMPLES=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HTTP_EXAMPLES/../.." && pwd)
EXAMPLE_VENV=${EXAMPLE_VENV:-$HTTP_EXAMPLES/.venv-python}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
command -v cargo >/dev/null || { echo "the python examples build throttlekit from source and need cargo (https://rustup.rs)" >&2; exit 1; }
{
  [ -x "$EXAMPLE_VENV/bin/python" ] || python3 -m venv "$EXAMPLE_VENV"
  missing=()
  for req in "maturin>=1.9,<2" "$@"; do
    "$EXAMPLE_VENV/bin/python" -m pip show -q "${req%%[<>=]*}" >/dev/null 2>&1 || missing+=("$req")
  done
  [ ${#missing[@]} -eq 0 ] || "$EXAMPLE_VENV/bin/python" -m pip install -q --disable-pip-version-check "${missing[@]}"
  profile=()
  [ "${EXAMPLE_PROFILE:-debug}" = release ] && profile=(--release)
  "$ROOT/bindings-python/develop.sh" "$EXAMPLE_VENV" ${profile[@]+"${profile[@]}"}
} >&2
PYTHON=$EXAMPLE_VENV/bin/python
