#!/usr/bin/env python3
"""Prints bench/run.sh's one final table from the logs of every benchmark it ran.

    summarize.py SOURCE=LOG [SOURCE=LOG ...]

A log either holds `ROW<TAB>scenario<TAB>peer<TAB>ratio<TAB>target<TAB>detail` lines (bench/rust's
binaries), or is another helper's bench output, whose result lines carry a ratio and, usually,
a target (`1.23x (target >= 1.1x)`, `12.3x  >= 40x met`): those are picked up as they are. A log
that holds no result (the bench is missing, or failed) becomes a "not measured" row with the
reason written into the log by run.sh (a line starting with `NOT MEASURED:`) or its last line.
"""

from __future__ import annotations

import re
import sys

RATIO = re.compile(r"(\d+(?:\.\d+)?)x\b")
TARGET = re.compile(r"(>=|<=)\s*(\d+(?:\.\d+)?)x?")
NUMBERS = re.compile(r"\s{2,}[\d,.]+|\s+\d[\d,.]*\s*(ops|checks|calls)?/s|\bratio\b")


def verdict(ratio: float, target: str) -> str:
    m = TARGET.search(target)
    if not m:
        return "-"
    op, bound = m.group(1), float(m.group(2))
    ok = ratio >= bound if op == ">=" else ratio <= bound
    return "met" if ok else "NOT MET"


PEERS = {
    "redis-core": "redis-benchmark, same EVALSHA",
    "node": "rate-limiter-flexible (pinned in its bench)",
    "python": "limits 5.x / throttlekit-py 0.5.1",
    "go-http": "golang.org/x/time/rate per-IP middleware (Debian golang-golang-x-time-dev 0.3.0)",
    "python-http": "slowapi 0.1.10 (same FastAPI app)",
}


def external_rows(source: str, lines: list[str]) -> list[tuple[str, str, str, str, str]]:
    rows = []
    for line in lines:
        ratios = RATIO.findall(line)
        if not ratios or line.startswith(("ROW", "NOT MEASURED")):
            continue
        tm = TARGET.search(line)
        # The ratio is the last "N.NNx" before the target (or the last one on the line).
        head = line[: tm.start()] if tm else line
        rs = RATIO.findall(head)
        if not rs:
            continue
        ratio = float(rs[-1])
        if not tm and "ratio" not in line and not re.search(r"\d\.\d+x\s*$", line.rstrip()):
            continue
        label = NUMBERS.split(line.strip(), maxsplit=1)[0].strip(" :")
        target = f"{tm.group(1)} {tm.group(2)}x" if tm else "-"
        rows.append((f"{source}: {label}", PEERS.get(source, "(see its bench)"), f"{ratio:.2f}x", target, verdict(ratio, target)))
    return rows


def main() -> int:
    table: list[tuple[str, str, str, str, str]] = []
    for arg in sys.argv[1:]:
        source, _, path = arg.partition("=")
        try:
            lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
        except OSError as e:
            table.append((source, "-", "not measured", "-", f"no log ({e.strerror})"))
            continue
        found = False
        for line in lines:
            if line.startswith("ROW\t"):
                _, scenario, peer, ratio, target, detail = (line.split("\t") + [""] * 6)[:6]
                r = float(ratio)
                table.append((scenario, peer, f"{r:.2f}x", target.replace(">=", ">= ").replace("<=", "<= ") + "x"
                              if target not in ("-", "") else "-", verdict(r, target) + (f"  [{detail}]" if detail else "")))
                found = True
        ext = external_rows(source, lines) if not found else []
        table.extend(ext)
        if not found and not ext:
            reason = next((l.split(":", 1)[1].strip() for l in lines if l.startswith("NOT MEASURED:")), None)
            if reason is None:
                reason = next((l.strip() for l in reversed(lines) if l.strip()), "empty log")
            table.append((source, "-", "not measured", "-", reason[:150]))
    w0 = max(len(r[0]) for r in table)
    w1 = max(len(r[1]) for r in table)
    print(f"{'scenario':<{w0}} | {'peer':<{w1}} | {'ratio':>12} | {'target':<9} | met?")
    print(f"{'-' * w0}-+-{'-' * w1}-+-{'-' * 12}-+-{'-' * 9}-+-----")
    for s, p, r, t, v in table:
        print(f"{s:<{w0}} | {p:<{w1}} | {r:>12} | {t:<9} | {v}")
    print("\nratio: peer time / our time (> 1: throttlekit faster), except rows whose target is <= (ours / theirs).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
