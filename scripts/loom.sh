#!/usr/bin/env bash
# The loom model checks (run by `make lint`): every interleaving of a few threads through the
# memory store's `ShardLock` and the clock ticker's publish/read protocol. `--cfg loom` goes to
# the throttlekit crate alone (through `cargo rustc`). Bounded: the models are small (2-3
# threads, a preemption bound), about a second of checking.
#
# The shared target/: the `loom` feature makes this test build of the crate a unit of its own
# (nothing else is invalidated), and its dependencies are exactly those `cargo test -p
# throttlekit` compiled, so only loom and the crate itself are compiled here (a target dir of
# its own compiled the whole dependency tree again: a minute of `make test`).
set -euo pipefail
cd "$(dirname "$0")/.."
# The test binary's path, from cargo's own report rather than the newest file in deps/.
bin=$(cargo rustc -q -p throttlekit --lib --profile test --features loom --locked --message-format json-render-diagnostics -- --cfg loom \
    | python3 -c 'import json, sys
exe = [m["executable"] for m in map(json.loads, sys.stdin) if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "throttlekit"]
print(exe[-1] if exe else "")')
[ -x "$bin" ] || { echo "loom: cargo reported no test binary" >&2; exit 1; }
LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}" "$bin" loom_model
