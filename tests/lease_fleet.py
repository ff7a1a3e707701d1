"""The leased mode measured against its bound (issue #23, docs/leasing.md): per strategy, N
processes in two languages (Rust: core/examples/lease_worker.rs; Python: tests/lease_worker.py)
hammer one Redis key, and every admission is checked against the formula.

    python tests/lease_fleet.py <redis-url> <rust-worker-binary> [python]

An admission is known to lie in [sent, recv] (the moment its store call was sent and answered;
sent == recv for a local spend). An interval is charged only the admissions known to lie in it,
so a check never fails on timing noise. Coupled fixed windows are also counted by the store's
own window (the decision's reset_at): exactly `limit` in every window the fleet covered whole.
"""

import json
import subprocess
import sys

RUN_MS = 1300
BATCH = 5
RUST, PY = 2, 2
N = RUST + PY

STRATEGIES = [
    # name, spec, kind of bound, coupled
    ("fixedWindow coupled", {"kind": "fixedWindow", "options": {"limit": 40, "windowMs": 400}}, "window", True),
    ("fixedWindow", {"kind": "fixedWindow", "options": {"limit": 40, "windowMs": 400}}, "window", False),
    ("quota fixed", {"kind": "quota", "options": {"limit": 40, "resetCadence": "fixed", "periodMs": 400}}, "window", True),
    ("slidingWindowLog", {"kind": "slidingWindowLog", "options": {"limit": 40, "windowMs": 400}}, "log", False),
    ("slidingWindow", {"kind": "slidingWindow", "options": {"limit": 40, "windowMs": 400, "buckets": 4}}, "sliding", False),
    ("gcra", {"kind": "gcra", "options": {"limit": 100, "periodMs": 1000, "burst": 20}}, "bucket", False),
    ("tokenBucket", {"kind": "tokenBucket", "options": {"capacity": 20, "refillPerSec": 100}}, "bucket", False),
]


# Multi limiters (rule "all"): a tenant dimension on the hot key and a user dimension whose key
# alternates u0/u1 in every process. Per dimension key, the single limiter's bound holds.
MULTI = [
    # name, [[dimension, spec], ...], coupled
    (
        "multi coupled: tenant 40/400 ms + user 100/400 ms",
        [["tenant", {"kind": "fixedWindow", "options": {"limit": 40, "windowMs": 400}}],
         ["user", {"kind": "fixedWindow", "options": {"limit": 100, "windowMs": 400}}]],
        True,
    ),
    (
        "multi: tenant 40/400 ms + user 15/400 ms",
        [["tenant", {"kind": "fixedWindow", "options": {"limit": 40, "windowMs": 400}}],
         ["user", {"kind": "fixedWindow", "options": {"limit": 15, "windowMs": 400}}]],
        False,
    ),
]


def check_multi(name: str, dims: list, coupled: bool, adm: list) -> str:
    """Per dimension key, per window: <= limit (coupled) or <= limit + N*(batch-1); coupled
    tenant windows the fleet covered whole hold exactly the tenant limit (counted by its store's
    window, the decision's reset_at)."""
    carried = 0 if coupled else N * (BATCH - 1)
    w = dims[0][1]["options"]["windowMs"]
    tenant_limit, user_limit = (d[1]["options"]["limit"] for d in dims)
    first, last = min(a[0] for a in adm), max(a[1] for a in adm)
    worst = {"tenant": 0, "u0": 0, "u1": 0}
    for start in range(first - first % w, last, w):
        for key, limit, rows in [
            ("tenant", tenant_limit, adm),
            ("u0", user_limit, [a for a in adm if a[3] == 0]),
            ("u1", user_limit, [a for a in adm if a[3] == 1]),
        ]:
            n = inside(rows, start, start + w)
            worst[key] = max(worst[key], n)
            assert n <= limit + carried, f"{name}: {key}: {n} admitted in the window at {start} > {limit + carried}"
    text = f"{name}: worst windows tenant {worst['tenant']} <= {tenant_limit + carried}, users {worst['u0']}, {worst['u1']} <= {user_limit + carried}"
    if coupled:
        per = {}
        for a in adm:
            per[a[2]] = per.get(a[2], 0) + 1
        full = sorted(per)[1:-1]
        assert full and all(per[r] == tenant_limit for r in full), f"{name}: not exactly {tenant_limit}: {per}"
        text += f"; {len(full)} whole tenant windows, each exactly {tenant_limit}"
    return text


def run_fleet(url: str, rust_bin: str, python: str, spec, coupled: bool, key: str) -> list[tuple[int, ...]]:
    args = [url, json.dumps(spec), "leased", str(BATCH), "1" if coupled else "0", str(RUN_MS), key]
    spawn = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
    procs = [subprocess.Popen([rust_bin, *args], **spawn) for _ in range(RUST)]
    procs += [subprocess.Popen([python, "tests/lease_worker.py", *args], **spawn) for _ in range(PY)]
    # Every worker says "ready" once connected, and starts its timed loop on "go": a Python
    # start-up slower than RUN_MS (a loaded machine, a cold cache) must not leave a window that
    # the fleet covered for a moment only, short of its limit for want of workers.
    for p in procs:
        assert p.stdout.readline() == "ready\n", f"a worker did not start ({p.args[0]})"
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    out = []
    for p in procs:
        text, _ = p.communicate(timeout=60)
        assert p.returncode == 0, f"a worker failed ({p.args[0]})"
        out += [tuple(int(x) for x in line.split()) for line in text.splitlines() if line]
    return sorted(out, key=lambda a: (a[1], a[0]))


def inside(adm: list, lo: int, hi: int) -> int:
    """Admissions known to lie in [lo, hi)."""
    return sum(1 for s, r, *_ in adm if s >= lo and r < hi)


def check(name: str, spec: dict, kind: str, coupled: bool, adm: list) -> str:
    o = spec["options"]
    carried = N * (BATCH - 1)
    first, last = min(a[0] for a in adm), max(a[1] for a in adm)
    if kind == "window":
        w = int(o.get("windowMs") or o["periodMs"])
        bound = o["limit"] if coupled else o["limit"] + carried
        worst = 0
        for start in range(first - first % w, last, w):
            n = inside(adm, start, start + w)
            worst = max(worst, n)
            assert n <= bound, f"{name}: {n} admitted in the window at {start} > bound {bound}"
        if coupled:
            per = {}
            for _, _, reset in adm:
                per[reset] = per.get(reset, 0) + 1
            full = sorted(per)[1:-1]  # the first and last windows are partial
            assert full and all(per[r] == o["limit"] for r in full), f"{name}: not exactly {o['limit']}: {per}"
            return f"{name}: {len(full)} whole windows, each exactly {o['limit']} (bound {bound})"
        return f"{name}: worst window {worst} <= bound {bound} = {o['limit']} + {N}*({BATCH}-1)"
    if kind in ("log", "sliding"):
        w = int(o["windowMs"])
        # The bucketed sliding window's own guarantee is per bucket-aligned window of its length.
        step = w // int(o.get("buckets", 1)) if kind == "sliding" else 1
        bound = o["limit"] + carried
        starts = sorted({s - s % step for s, _, _ in adm})
        worst = max(inside(adm, a, a + w) for a in starts)
        assert worst <= bound, f"{name}: {worst} in a window of {w} ms > bound {bound}"
        return f"{name}: worst {w} ms window {worst} <= bound {bound}"
    # GCRA / token bucket: admitted in [a, b) <= burst + rate*(b - a) + N*(batch - 1).
    if spec["kind"] == "gcra":
        burst, rate = o["burst"], o["limit"] / o["periodMs"]
    else:
        burst, rate = o["capacity"], o["refillPerSec"] / 1000
    worst = -1e9
    stamps = sorted(a[0] for a in adm)
    ends = sorted(a[1] for a in adm)
    for a in stamps[:: max(1, len(stamps) // 200)]:
        for b in ends[:: max(1, len(ends) // 200)]:
            if b <= a:
                continue
            n = inside(adm, a, b + 1)
            slack = burst + rate * (b + 1 - a) + carried - n
            assert slack >= 0, f"{name}: {n} admitted in [{a}, {b}] > {burst} + {rate}*{b + 1 - a} + {carried}"
            worst = max(worst, -slack)
    return f"{name}: closest interval {-worst:.1f} units under burst + rate*t + {carried}"


def main() -> None:
    url, rust_bin = sys.argv[1], sys.argv[2]
    python = sys.argv[3] if len(sys.argv) > 3 else sys.executable
    for i, (name, spec, kind, coupled) in enumerate(STRATEGIES):
        adm = run_fleet(url, rust_bin, python, spec, coupled, f"hot{i}")
        assert len(adm) > 0, f"{name}: nothing admitted"
        print(check(name, spec, kind, coupled, adm), f"({len(adm)} admissions, {RUST} Rust + {PY} Python processes)")
    for i, (name, dims, coupled) in enumerate(MULTI):
        adm = run_fleet(url, rust_bin, python, dims, coupled, f"multi{i}")
        assert len(adm) > 0, f"{name}: nothing admitted"
        print(check_multi(name, dims, coupled, adm), f"({len(adm)} admissions, {RUST} Rust + {PY} Python processes)")


if __name__ == "__main__":
    main()
