#!/usr/bin/env bash
# The at-most-once proofs from Python, Node and Go on one Redis behind the fault proxy
# (tests/faults/prove.py); the Rust ones are `cargo test -p throttlekit-faultproxy`.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# The stall sum a call's time bound adds (tests/faults/stalls.py), checked on hand-worked cases.
python3 "$HERE/stalls_test.py"
# shellcheck source=tests/faults/build.sh
source "$HERE/build.sh"
trap 'rm -rf "$FAULTS_WORK"' EXIT
python3 "$HERE/prove.py" "$@"
