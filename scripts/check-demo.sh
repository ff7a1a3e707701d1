#!/usr/bin/env bash
# The demo is what the README shows: `throttlekit demo` (what `make demo` runs, in a debug
# build: the demo is deterministic, a manual clock and fixed traffic) must write exactly
# docs/throttlekit-demo.svg, the README's picture, and print exactly the README's table.
# After a change to the demo, refresh both: `make demo && cp throttlekit-demo.svg docs/`, and
# paste its table into the README.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cargo run -q --locked -p throttlekit-cli -- demo --out "$tmp/demo.svg" >"$tmp/out"
cmp -s "$tmp/demo.svg" docs/throttlekit-demo.svg \
  || { echo "docs/throttlekit-demo.svg is not what the demo draws now (make demo && cp throttlekit-demo.svg docs/)" >&2; exit 1; }
python3 - "$tmp/out" README.md <<'PY'
import sys
out, readme = (open(p, encoding="utf-8").read() for p in sys.argv[1:])
lines = out.splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith("algorithm "))
end = next(i for i in range(start, len(lines)) if not lines[i].strip())
table = "\n".join(lines[start:end])
if "```text\n" + table + "\n```" not in readme:
    sys.exit("README.md does not show the demo's table as it prints it:\n" + table)
print(f"the demo draws docs/throttlekit-demo.svg and prints the README's table ({end - start - 1} algorithms)")
PY
