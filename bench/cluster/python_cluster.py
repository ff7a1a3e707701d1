"""Python `check_sync` and `await check` over a 3-master Redis Cluster against the same binding on
one standalone server, in one run (not part of the tests):

    python bench/cluster/python_cluster.py [--seconds 2] [--rounds 5]

Reuses bindings-python/bench/bench.py's machinery: a release wheel of this checkout in
`bench/.venv-ours`, each measurement in its own process. Starts a private standalone server
(`tests/redis-server.sh`) and a private cluster (`tests/redis-cluster.sh`), stops both by PID.
Prints `ROW` lines for `bench/summarize.py` (ratio: cluster over standalone; target >= 0.9).

After the rows, one more asyncio x64 run per side reports CPU per call (wall time on a shared
machine says little): the client process's (`getrusage`, every thread) and the servers'
(`/proc/PID/schedstat` of the PIDs in the helpers' pid files), with the servers' reads per 1k
calls (Redis `total_reads_processed`: how many writes a master's share of the calls came in).

Each row is several rounds, each measuring both sides back to back (which side goes first
alternates), and reports the median of the rounds' ratios with their spread: on a shared 2-core
machine one pair of 2-second runs is at the mercy of whatever else ran in those seconds.
"""

from __future__ import annotations

import argparse
import json
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


CPU_PROBE = """
import asyncio, json, re, resource, socket, sys, time
URL, MODE, SECONDS, PIDS = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4].split(",")
import throttlekit as tk
store = tk.RedisStore(URL, mode=MODE, server_clock=True)
limiter = tk.Limiter(tk.Strategy.gcra(1_000_000, 1000, burst=1_000_000), store=store, prefix="bench-cl")
KEYS_ = [f"user:{i}" for i in range(1000)]

def servers_ns():
    return sum(int(open(f"/proc/{p}/schedstat").read().split()[0]) for p in PIDS)

def reads():
    total = 0
    for url in URL.split(","):
        with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as s:
            s.sendall(b"INFO stats\\r\\n")
            buf = b""
            while b"io_threaded_writes_processed" not in buf:
                buf += s.recv(65536)
        total += int(re.search(rb"total_reads_processed:(\\d+)", buf).group(1))
    return total

async def run(in_flight=64):
    n = 0
    async def worker(w):
        nonlocal n
        i = w
        while time.perf_counter() < deadline:
            await limiter.check(KEYS_[i % 1000]); i += in_flight; n += 1
    global deadline
    deadline = time.perf_counter() + 0.3
    await asyncio.gather(*(worker(w) for w in range(in_flight)))  # warm up
    n = 0
    r0, s0, q0 = resource.getrusage(resource.RUSAGE_SELF), servers_ns(), reads()
    deadline = time.perf_counter() + SECONDS
    await asyncio.gather(*(worker(w) for w in range(in_flight)))
    r1, s1, q1 = resource.getrusage(resource.RUSAGE_SELF), servers_ns(), reads()
    client = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    # The INFO connections' own reads (one per server) are not the calls'.
    return {"client_us": client / n * 1e6, "servers_us": (s1 - s0) / 1e3 / n,
            "reads_per_1k": (q1 - q0 - len(URL.split(","))) / n * 1e3}

print(json.dumps(asyncio.run(run())))
"""


def cpu_per_call(python: Path, url: str, mode: str, pidfile: Path, seconds: float) -> dict[str, float]:
    """CPU_PROBE's numbers for one side (asyncio x64)."""
    pids = ",".join(pidfile.read_text().split())
    out = subprocess.run([str(python), "-c", CPU_PROBE, url, mode, str(seconds), pids], capture_output=True,
                         text=True, check=False, cwd=ROOT)
    if out.returncode != 0:
        raise SystemExit(f"benchmark process failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


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
    sides = {"standalone": single, "cluster": seeds}
    try:
        for mode, label in (("sync", "sequential check_sync"), ("async", "asyncio x64 await check")):
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
        pidfiles = {"standalone": tmp / "single", "cluster": tmp / "cluster"}
        cpu = {side: cpu_per_call(ours, sides[side], side, pidfiles[side], args.seconds) for side in sides}
        print("asyncio x64 CPU per call: " + "; ".join(
            f"{side}: client {c['client_us']:.2f} us, servers {c['servers_us']:.2f} us, "
            f"server reads per 1k calls {c['reads_per_1k']:.0f}" for side, c in cpu.items()))
    finally:
        subprocess.run([str(helpers / "redis-cluster.sh"), "stop", str(tmp / "cluster")], check=False)
        subprocess.run([str(helpers / "redis-server.sh"), "stop", str(tmp / "single")], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
