"""Python `check_sync` and `await check` over a 3-master Redis Cluster against the same binding on
one standalone server, in one run (not part of the tests):

    python bench/cluster/python_cluster.py [--seconds 2] [--rounds 5]

Reuses bindings-python/bench/bench.py's machinery: a release wheel of this checkout in
`bench/.venv-ours`, each measurement in its own process. Starts a private standalone server
(`tests/redis-server.sh`) and a private cluster (`tests/redis-cluster.sh`), stops both by PID.
Prints `ROW` lines for `bench/summarize.py` (ratio: cluster over standalone; target >= 0.9).

Each row is several rounds, each measuring both sides back to back (which side goes first
alternates), and reports the median of the rounds' ratios with their spread: on a shared 2-core
machine one pair of 2-second runs is at the mercy of whatever else ran in those seconds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bindings-python" / "bench"))
import bench  # noqa: E402  (bindings-python/bench/bench.py)

SNIPPET = """
import throttlekit as tk
store = tk.RedisStore(URL, mode=MODE, server_clock=True)
limiter = tk.Limiter(tk.Strategy.gcra(1_000_000, 1000, burst=1_000_000), store=store, prefix="bench-cl")
check_sync, check = limiter.check_sync, limiter.check
def sync_call(i): return check_sync(KEYS_[i % 1000])
def async_call(i): return check(KEYS_[i % 1000])
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per side and round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    ours = bench.venv("ours", [])
    subprocess.run([str(ours), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--force-reinstall",
                    "--no-deps", bench.build_wheel()], check=True)
    tmp = Path(tempfile.mkdtemp())
    helpers = ROOT / "tests"
    single = subprocess.run([str(helpers / "redis-server.sh"), "start", str(tmp / "single")], check=True,
                            capture_output=True, text=True).stdout.strip()
    seeds = subprocess.run([str(helpers / "redis-cluster.sh"), "start", str(tmp / "cluster")], check=True,
                           capture_output=True, text=True).stdout.strip()
    try:
        for mode, label in (("sync", "sequential check_sync"), ("async", "asyncio x64 await check")):
            sides = {"standalone": single, "cluster": seeds}
            rates: dict[str, list[float]] = {"standalone": [], "cluster": []}
            for r in range(args.rounds):
                for side in (("standalone", "cluster") if r % 2 == 0 else ("cluster", "standalone")):
                    snippet = SNIPPET.replace("MODE", repr(side))
                    rates[side].append(bench.measure(ours, snippet, mode, sides[side], args.seconds))
            ratios = [c / s for c, s in zip(rates["cluster"], rates["standalone"])]
            print(f"{label}: cluster / standalone per round: " + ", ".join(f"{x:.2f}" for x in ratios))
            c, s = statistics.median(rates["cluster"]), statistics.median(rates["standalone"])
            print(f"ROW\tpython redis cluster (3 masters), {label}\tthe same on one standalone server\t"
                  f"{statistics.median(ratios):.2f}\t>=0.9\t{c:,.0f} vs {s:,.0f} checks/s (medians of "
                  f"{args.rounds} rounds; ratio {min(ratios):.2f}-{max(ratios):.2f})")
    finally:
        subprocess.run([str(helpers / "redis-cluster.sh"), "stop", str(tmp / "cluster")], check=False)
        subprocess.run([str(helpers / "redis-server.sh"), "stop", str(tmp / "single")], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
