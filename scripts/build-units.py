#!/usr/bin/env python3
"""What `make test` compiles, per cargo invocation, without compiling anything.

    scripts/build-units.py          # needs the nightly toolchain (cargo's --unit-graph)
    scripts/build-units.py -v       # also names the workspace's units each invocation adds

For each cargo build that scripts/test.sh's suites run (in order; the list below mirrors them),
prints how many compile units it needs and how many no earlier invocation already compiled into
target/, then the crates compiled in more than one variant (features, profile or dependencies).
A dependency that shows up there with two feature sets in the debug profile is a rebuild of it
and of everything above it: add the union of its features to workspace-hack/Cargo.toml.
Expected variants: the dist profile (release artifacts; not listed), the `metrics` feature of
one suite, the hack crate's own feature groups, and what the two "apart:" builds bring (cbindgen's
build-time dependencies; the unpacked .crate of tests/dist.sh, built outside the workspace on
purpose), which are not listed. docs/testing.md, "Test suite speed", has the numbers.
"""
import collections
import hashlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIST = "--profile dist --target x86_64-unknown-linux-gnu"
# (suite, cargo arguments). "own:": builds into a target dir of its own. "apart:": a build that
# differs on purpose (left out of the variants report).
INVOCATIONS = [
    ("core", "test -p throttlekit --locked --features sqlite --no-run"),
    ("core metrics facade", "test -p throttlekit --locked --features metrics --test metrics --no-run"),
    ("vectors (CLI)", "build -p throttlekit-cli --locked"),
    ("tower layer", "test -p throttlekit-tower --locked --no-run"),
    ("http (rust-axum)", "build -p throttlekit-tower --locked --example axum_server"),
    ("http (go-nethttp)", "build -p throttlekit-c --locked"),
    ("fault proxy", "test -p throttlekit-faultproxy --locked --no-run"),
    ("serve", "test -p throttlekit-serve --locked --no-run"),
    ("postgres", "test -p throttlekit --locked --features postgres,sqlite --test postgres --test postgres_lease --test postgres_lease_multi --test postgres_faults --test postgres_session --no-run"),
    ("serve on postgres", "build -p throttlekit-cli --locked --features postgres --bin throttlekit"),
    ("python (maturin develop)", "build -p throttlekit-python --locked --lib"),
    ("lease fleet", "build -p throttlekit --locked --features sqlite --example lease_worker"),
    ("node", "build -p throttlekit-node --locked"),
    ("apart:c and go (header, cbindgen)", "build -p throttlekit-c --locked --features header"),
    ("uniffi", "build -p throttlekit-uniffi --locked --features bindgen"),
    ("uniffi (unit tests)", "test -p throttlekit-uniffi --locked --features bindgen --no-run"),
    ("jvm", "build -p throttlekit-jvm --locked"),
    ("dist (zig: C, Node, JVM)", f"build --locked {DIST} -p throttlekit-c -p throttlekit-node -p throttlekit-jvm"),
    ("dist (maturin: wheel, linked as the above)", f"build --locked {DIST} -p throttlekit-python --lib"),
    ("apart:dist (the unpacked .crate)", "build -p throttlekit --locked --lib"),
    ("shutdown", "build -p throttlekit --locked --features sqlite --example shutdown_child"),
    ("adaptive service", "build -p throttlekit-tower --locked --example adaptive_service"),
    ("faults", "build -p throttlekit-faultproxy --locked --bin throttlekit-faultproxy --example driver"),
    ("lint (loom)", "rustc -p throttlekit --lib --profile test --features loom --locked"),
    ("lint (clippy)", "check --workspace --all-targets --locked"),
]


VERBOSE = "-v" in sys.argv


def unit_keys(units):
    """A key per unit that changes whenever cargo's -C metadata hash would (dependencies included)."""
    memo = {}

    def key(i):
        if i not in memo:
            u = units[i]
            profile = {k: v for k, v in u["profile"].items() if k != "name"}
            t = u["target"]
            memo[i] = hashlib.sha1(json.dumps([
                u["pkg_id"], t["name"], t["kind"], t["crate_types"], u["mode"], sorted(u["features"]),
                profile, u["platform"], sorted(key(d["index"]) for d in u["dependencies"]),
            ], sort_keys=True).encode()).hexdigest()
        return memo[i]

    return [key(i) for i in range(len(units))]


def main() -> int:
    seen = {}
    total = 0
    for suite, args in INVOCATIONS:
        cmd = ["cargo", "+nightly", *args.split(), "--unit-graph", "-Z", "unstable-options"]
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if out.returncode:
            print(f"{suite}: {' '.join(cmd)} failed:\n{out.stderr}", file=sys.stderr)
            return 1
        units = json.loads(out.stdout)["units"]
        own = suite.startswith("own:")
        new = 0
        for u, k in zip(units, unit_keys(units)):
            if own or k not in seen:
                new += 1
                if not own:
                    seen[k] = (suite, u)
        total += new
        print(f"{new:5d} new of {len(units):4d}  {suite}")
        if VERBOSE:
            mine = sorted({f'{u["pkg_id"].split("#")[0].split("/")[-1]}:{u["target"]["name"]}:{u["mode"]}' for u, k in zip(units, unit_keys(units)) if seen.get(k, (None,))[0] == suite and "file://" in u["pkg_id"]})
            if mine:
                print("        workspace:", " ".join(mine))
    print(f"{total:5d} compile units in all (the asan suite's nightly build not counted)")
    variants = collections.Counter()
    for suite, u in seen.values():
        if u["mode"] == "build" and u["profile"]["name"] != "dist" and not suite.startswith("apart:"):
            variants[f'{u["pkg_id"].split("#")[-1]} {u["target"]["name"]}'] += 1
    multi = sorted(((n, c) for c, n in variants.items() if n > 1), reverse=True)
    print("outside the dist profile, compiled more than once:", ", ".join(f"{c} x{n}" for n, c in multi) or "nothing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
