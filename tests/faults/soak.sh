#!/usr/bin/env bash
# `make soak`: builds what it needs (tests/faults/build.sh) and runs tests/faults/soak.py
# (SOAK_SECONDS, default 600; CI passes 60).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/faults/build.sh
source "$HERE/build.sh"
trap 'rm -rf "$FAULTS_WORK"' EXIT
python3 "$HERE/soak.py" "$@"
