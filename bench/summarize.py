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
    "postgres": "RateLimiterPostgres on pg / pgbench upsert (pinned in bindings-node/bench)",
    "python": "limits 5.x / throttlekit-py 0.5.1",
    "go-http": "golang.org/x/time/rate per-IP middleware (Debian golang-golang-x-time-dev 0.3.0)",
    "python-http": "slowapi 0.1.10 (same FastAPI app)",
}


# Every row of issue #20's table: (what the row measures, a regex over "scenario | peer" that a
# measured row matches, peer, target). A row no part printed becomes an explicit "not measured"
# line, so the table always shows the whole list and a part that stopped printing a row is seen.
# A part owner adding a row: print it with words these patterns find, or adjust its pattern here.
EXPECTED = [
    ("Rust check_sync over a 3-master cluster, sequential", r"cluster.*sequential", "one standalone node", ">= 0.9x"),
    ("Rust check_sync over a 3-master cluster, 50 in flight", r"cluster.*in flight", "one standalone node", ">= 0.9x"),
    ("Python check_sync over a cluster, sequential", r"python.*cluster|cluster.*python", "one standalone node", ">= 0.9x"),
    ("Node check over a cluster, sequential", r"node.*cluster|cluster.*node", "one standalone node", ">= 0.9x"),
    ("Go tkhttp per request", r"go-http.*tkhttp", "x/time/rate per-IP middleware", "<= 2x time"),
    ("Go Limiter.Check, 1 key", r"go.*(1 key|one key)", "rate.Limiter.Allow", ">= 0.5x"),
    ("Go Limiter.Check, 100k keys", r"go.*100k", "mutex-guarded map of rate.Limiter", ">= 1.0x"),
    ("Node Express middleware, added time per request over HTTP", r"express", "express-rate-limit", ">= 1.5x"),
    ("Node Fastify plugin, added time per request over HTTP", r"fastify", "@fastify/rate-limit", ">= 1.5x"),
    ("Node check over Redis, sequential", r"node.*redis.*sequential", "rate-limiter-flexible", ">= 1.1x"),
    ("Node check over Redis, 64 in flight", r"node.*redis.*64 in flight", "rate-limiter-flexible", ">= 1.0x"),
    ("Node check over Postgres, sequential", r"postgres.*sequential", "RateLimiterPostgres", ">= 1.2x"),
    ("Node check over Postgres, 64 in flight", r"postgres: .*check, 64 in flight, fixed", "RateLimiterPostgres", ">= 1.5x"),
    ("Node check over Postgres, 64 in flight, vs the bare upsert", r"postgres.*ceiling", "pgbench one-row upsert", ">= 0.8x"),
    ("Rust 1 key", r"rust directlimiter.*1 limit", "governor direct", ">= 0.8x"),
    ("Rust 100k keys (minimum of 5 runs)", r"rust check_sync.*100k.*1 thread", "governor keyed", ">= 3x"),
    ("Rust async sequential over Redis", r"redis-core: sequential async check", "redis-benchmark, same EVALSHA", ">= 0.9x"),
    ("Redis server time per call, every script", r"server time per call.*check script", "the original's scripts", "<= 1.0x"),
    ("Python HTTP middleware rows", r"python-http", "slowapi", "measured"),
    ("Node checkSync on a RedisStore", r"checksync.*redis|redis.*checksync", "Node check on the same store", "<= 1.2x time"),
]


def missing_rows(table: list[tuple[str, str, str, str, str]]) -> list[tuple[str, str, str, str, str]]:
    text = [f"{r[0]} | {r[1]}".lower() for r in table if r[2] != "not measured"]
    return [(f"#20: {what}", peer, "not measured", target, "no part printed this row")
            for what, pattern, peer, target in EXPECTED
            if not any(re.search(pattern, t) for t in text)]


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
    table.extend(missing_rows(table))
    w0 = max(len(r[0]) for r in table)
    w1 = max(len(r[1]) for r in table)
    w3 = max(9, *(len(r[3]) for r in table))
    print(f"{'scenario':<{w0}} | {'peer':<{w1}} | {'ratio':>12} | {'target':<{w3}} | met?")
    print(f"{'-' * w0}-+-{'-' * w1}-+-{'-' * 12}-+-{'-' * w3}-+-----")
    for s, p, r, t, v in table:
        print(f"{s:<{w0}} | {p:<{w1}} | {r:>12} | {t:<{w3}} | {v}")
    print("\nratio: peer time / our time (> 1: throttlekit faster), except rows whose target is <= (ours / theirs).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
