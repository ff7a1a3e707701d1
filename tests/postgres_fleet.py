"""Exactly K across processes on one Postgres: 4 Python and 4 Node processes (tests/postgres-fleet.sh).

    python tests/postgres_fleet.py URL          # the driver: runs every scenario, exits 1 on a miss
    python tests/postgres_fleet.py worker JSON  # one Python worker (the driver starts them)

Every worker waits for the same start instant, then checks as fast as it can; each prints how
many checks it was admitted. Scenarios:
- one key of limit K that does not exist yet (every process races to create its row), on GCRA
  (the caller's clock) and on a fixed window (the server's clock): admitted in all == K;
- one key that exists (one admission made before the start): admitted in all == K - 1;
- 8 processes on multi `all` limiters over overlapping dimensions named in different orders
  ([a, b], [b, a], [b, a, c], [c, b, a]): every admission charged every one of its dimensions
  and nothing else (each dimension's count, read back, equals what its limiters were admitted),
  `a` (the tightest) admitted exactly its limit, and no call failed (a deadlock would fail one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NODE_WORKER = ROOT / "tests" / "postgres_fleet_worker.js"
ATTEMPTS = 40  # per process: 8 processes try 320 times at limits of at most 60
LONG = 3_600_000  # GCRA's period: far longer than a run, so no slot refills meanwhile


def worker(spec: dict[str, Any]) -> None:
    import throttlekit as tk

    store = tk.PostgresStore(spec["url"], pool_size=2, timeout_ms=5000, sweep_interval_ms=0)
    server_clock = spec.get("serverClock", False)
    if "dimensions" in spec:
        dims = [tk.Dimension(d["name"], tk.Strategy.from_dict(d["strategy"])) for d in spec["dimensions"]]
        target: Any = tk.MultiLimiter("all", dims, store=store, prefix=spec["prefix"], server_clock=server_clock,
                                      fail_policy="raise")
        key: Any = spec["keys"]
    else:
        target = tk.Limiter(tk.Strategy.from_dict(spec["strategy"]), store=store, prefix=spec["prefix"],
                            server_clock=server_clock, fail_policy="raise")
        key = spec["key"]
    late = time.time() * 1000 > spec["startAt"]
    time.sleep(max(0.0, spec["startAt"] / 1000 - time.time()))
    admitted = errors = 0
    for _ in range(spec["attempts"]):
        try:
            admitted += target.check_sync(key).allowed
        except tk.ThrottleKitError as e:
            errors += 1
            print(f"python worker: {e.code}: {e}", file=sys.stderr)
    print(json.dumps({"admitted": admitted, "errors": errors, "late": late}))


def run(specs: list[dict[str, Any]]) -> list[dict[str, int]]:
    """Starts every worker (even ones Python, odd ones Node) at one instant; their reports."""
    start_at = int(time.time() * 1000) + 2500  # all processes up and connected by then
    procs = []
    for i, spec in enumerate(specs):
        arg = json.dumps({**spec, "startAt": start_at, "attempts": ATTEMPTS})
        cmd = [sys.executable, __file__, "worker", arg] if i % 2 == 0 else ["node", str(NODE_WORKER), arg]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True))
    reports = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0, f"a worker exited {p.returncode}"
        reports.append(json.loads(out.strip().splitlines()[-1]))
    late = sum(r["late"] for r in reports)
    if late:  # still a race among the rest; said so that a run on a loaded machine reads right
        print(f"  ({late} of {len(reports)} workers connected after the start instant)")
    return reports


def used(url: str, strategy: dict[str, Any], prefix: str, key: str) -> int:
    """How much of `strategy`'s limit the key has used, read with a peek."""
    import throttlekit as tk

    store = tk.PostgresStore(url, pool_size=1, sweep_interval_ms=0)
    d = tk.Limiter(tk.Strategy.from_dict(strategy), store=store, prefix=prefix).peek_sync(key)
    return int(d.limit - d.remaining)


def main(url: str) -> int:
    import throttlekit as tk

    failures = []

    def expect(name: str, got: int, want: int) -> None:
        print(f"{name}: {got} (expected {want})")
        if got != want:
            failures.append(name)

    k = 50
    gcra = {"kind": "gcra", "options": {"limit": k, "periodMs": LONG}}
    # Fixed windows are epoch-aligned: a day's window, and the run is moved past a boundary it
    # would cross (two windows would each admit K).
    day = 86_400_000
    window = {"kind": "fixedWindow", "options": {"limit": k, "windowMs": day}}
    if int(time.time() * 1000) % day > day - 120_000:
        time.sleep((day - int(time.time() * 1000) % day) / 1000 + 1)
    for name, strategy, server_clock in (("gcra", gcra, False), ("fixed window (server clock)", window, True)):
        for exists in (False, True):
            prefix = f"fleet:{uuid.uuid4().hex[:10]}"
            if exists:
                store = tk.PostgresStore(url, pool_size=1, sweep_interval_ms=0)
                lim = tk.Limiter(tk.Strategy.from_dict(strategy), store=store, prefix=prefix, server_clock=server_clock)
                assert lim.check_sync("hot").allowed
            spec = {"url": url, "prefix": prefix, "key": "hot", "strategy": strategy, "serverClock": server_clock}
            reports = run([spec] * 8)
            expect(f"{name}, {'an existing' if exists else 'a new'} key: admitted of {k}",
                   sum(r["admitted"] for r in reports), k - 1 if exists else k)
            expect(f"{name}, {'an existing' if exists else 'a new'} key: errors",
                   sum(r["errors"] for r in reports), 0)

    # Multi: a is the tightest; b and c bind no one alone.
    limits = {"a": 30, "b": 60, "c": 60}
    strategies = {n: {"kind": "gcra", "options": {"limit": v, "periodMs": LONG}} for n, v in limits.items()}
    keys = {"a": "ka", "b": "kb", "c": "kc"}
    orders = [["a", "b"], ["b", "a"], ["b", "a", "c"], ["c", "b", "a"]] * 2
    prefix = f"fleet:{uuid.uuid4().hex[:10]}"
    specs = [
        {"url": url, "prefix": prefix, "dimensions": [{"name": n, "strategy": strategies[n]} for n in order],
         "keys": [keys[n] for n in order]}
        for order in orders
    ]
    reports = run(specs)
    expect("multi: errors (a deadlock fails a call)", sum(r["errors"] for r in reports), 0)
    total = sum(r["admitted"] for r in reports)
    with_c = sum(r["admitted"] for r, order in zip(reports, orders) if "c" in order)
    expect("multi: admitted in all (a's limit)", total, limits["a"])
    for n, want in (("a", total), ("b", total), ("c", with_c)):
        got = used(url, strategies[n], prefix, f"{{{prefix}}}:{n}:{keys[n]}")
        expect(f"multi: charged to {n} (no partial charge)", got, want)
    print("ok" if not failures else f"FAILED: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "worker":
        worker(json.loads(sys.argv[2]))
    elif len(sys.argv) == 2:
        sys.exit(main(sys.argv[1]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
