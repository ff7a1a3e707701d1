"""Python `check_sync` and `await check` over a 3-master Redis Cluster against the same binding on
one standalone server, in one run (not part of the tests):

    python bench/cluster/python_cluster.py [--seconds 2]

Reuses bindings-python/bench/bench.py's machinery: a release wheel of this checkout in
`bench/.venv-ours`, each measurement in its own process. Starts a private standalone server
(`tests/redis-server.sh`) and a private cluster (`tests/redis-cluster.sh`), stops both by PID.
Prints `ROW` lines for `bench/summarize.py` (ratio: cluster over standalone; target >= 0.9).
"""

from __future__ import annotations

import argparse
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
    parser.add_argument("--seconds", type=float, default=2.0)
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
            s = bench.measure(ours, SNIPPET.replace("MODE", "'standalone'"), mode, single, args.seconds)
            c = bench.measure(ours, SNIPPET.replace("MODE", "'cluster'"), mode, seeds, args.seconds)
            print(f"ROW\tpython redis cluster (3 masters), {label}\tthe same on one standalone server\t"
                  f"{c / s:.2f}\t>=0.9\t{c:,.0f} vs {s:,.0f} checks/s")
    finally:
        subprocess.run([str(helpers / "redis-cluster.sh"), "stop", str(tmp / "cluster")], check=False)
        subprocess.run([str(helpers / "redis-server.sh"), "stop", str(tmp / "single")], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
