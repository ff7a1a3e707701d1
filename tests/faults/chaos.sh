#!/usr/bin/env bash
# `make chaos`: builds what it needs (tests/faults/build.sh) and runs tests/faults/chaos.py
# (CHAOS_SECONDS, default 300; CI passes 60).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# The stall sum a call's time bound adds (tests/faults/stalls.py), checked on hand-worked cases.
python3 "$HERE/stalls_test.py"
# shellcheck source=tests/faults/build.sh
source "$HERE/build.sh"
trap 'rm -rf "$FAULTS_WORK"' EXIT
python3 "$HERE/chaos.py" "$@"
