"""Python `check_sync` and `await check` over a 3-master Redis Cluster against the same binding on
one standalone server, in one run (not part of the tests):

    python bench/cluster/python_cluster.py [--seconds 2] [--rounds 5]

Reuses bindings-python/bench/bench.py's machinery: a release wheel of this checkout in
`bench/.venv-ours`, each measurement in its own process. Starts a private standalone server
(`tests/redis-server.sh`) and a private cluster (`tests/redis-cluster.sh`), stops both by PID.
Prints `ROW` lines for `bench/summarize.py` (ratio: cluster over standalone; target >= 0.9).

After the rows, asyncio x64 runs (`--cpu-repeats`, 3 by default, each side in turn; the medians
are printed) report CPU per call, which says more than wall time on a shared machine: the
client process's (`getrusage`, every thread), split into the event loop's thread and the rest
(the Tokio workers that read the replies; `/proc/self/task/*/schedstat`), and the servers'
(`/proc/PID/schedstat` of the PIDs in the helpers' pid files), with the servers' reads per 1k
calls (Redis `total_reads_processed`: how many reads a master's share of the calls came in), the
event loop's sleeps per 1k calls (its thread's voluntary context switches: how many loop turns
a wake-up began) and
their scripts' time per call (`INFO commandstats`, the `FCALL`/`EVALSHA`/`EVAL` time: running the
decision itself, apart from reading and writing; Redis times it by the wall clock, so a server
descheduled mid-script counts the wait too). A third side, the cluster with every key on
one master (a hash tag), separates what cluster mode costs from what spreading the calls over
three server processes on the machine's cores costs.

Placement is the Rust Redis benches' (`core/benches/support/placement.rs`, which says why):
by default every server and every measuring process (the client, all its threads) share one
CPU, the same for both sides, so a row's rate follows the client's and the servers' work per
call added up and no call pays a cross-vCPU hand-off (40-50 us of CPU each on the 2-vCPU guests).
`TK_BENCH_PIN=S,C` puts the servers on CPU S and the clients on CPU C; `TK_BENCH_PIN=off`
leaves placement to the scheduler (the three masters and the client then spread over the
cores, and what a row measures moves with where the scheduler puts them and what else runs).

Each row is several rounds, each measuring both sides back to back (which side goes first
alternates), and reports the median of the rounds' ratios with their spread: on a shared 2-core
machine one pair of 2-second runs is at the mercy of whatever else ran in those seconds.
"""

from __future__ import annotations

import argparse
import json
import os
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
import asyncio, json, os, re, resource, socket, sys, time
URL, MODE, SECONDS, PIDS, TAG = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4].split(","), sys.argv[5]
import throttlekit as tk
store = tk.RedisStore(URL, mode=MODE, server_clock=True)
limiter = tk.Limiter(tk.Strategy.gcra(1_000_000, 1000, burst=1_000_000), store=store, prefix="bench-cl")
KEYS_ = [f"{TAG}user:{i}" for i in range(1000)]

def servers_ns():
    return sum(int(open(f"/proc/{p}/schedstat").read().split()[0]) for p in PIDS)

def loop_thread_ns():
    return int(open(f"/proc/self/task/{os.getpid()}/schedstat").read().split()[0])

def loop_sleeps():
    # The event loop thread's voluntary context switches: each is a sleep (in the selector)
    # between loop turns that a wake-up then ends.
    status = open(f"/proc/self/task/{os.getpid()}/status").read()
    return int(re.search(r"voluntary_ctxt_switches:\s+(\d+)", status).group(1))

def info(section):
    for url in URL.split(","):
        with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as s:
            s.sendall(b"INFO " + section + b"\\r\\n")
            buf = b""
            while not re.match(rb"\\$(\\d+)\\r\\n", buf) or len(buf) < int(buf[1:buf.index(b"\\r")]) + len(buf[:buf.index(b"\\n") + 1]):
                buf += s.recv(65536)
        yield buf

def reads():
    return sum(int(re.search(rb"total_reads_processed:(\\d+)", b).group(1)) for b in info(b"stats"))

def script_us():
    # The decision's own run on the servers: FCALL, EVALSHA or EVAL, as the store's scripting uses.
    return sum(int(u) for b in info(b"commandstats")
               for u in re.findall(rb"cmdstat_(?:fcall|evalsha|eval):calls=\\d+,usec=(\\d+)", b))

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
    q0, x0 = reads(), script_us()
    r0, l0, s0, w0 = resource.getrusage(resource.RUSAGE_SELF), loop_thread_ns(), servers_ns(), loop_sleeps()
    deadline = time.perf_counter() + SECONDS
    await asyncio.gather(*(worker(w) for w in range(in_flight)))
    r1, l1, s1, w1 = resource.getrusage(resource.RUSAGE_SELF), loop_thread_ns(), servers_ns(), loop_sleeps()
    q1, x1 = reads(), script_us()
    client = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    # The INFO connections' own reads (one per server and INFO) are not the calls'.
    return {"client_us": client / n * 1e6, "loop_us": (l1 - l0) / 1e3 / n, "servers_us": (s1 - s0) / 1e3 / n,
            "reads_per_1k": (q1 - q0 - 2 * len(URL.split(","))) / n * 1e3, "script_us": (x1 - x0) / n,
            "loop_sleeps_per_1k": (w1 - w0) / n * 1e3}

print(json.dumps(asyncio.run(run())))
"""


def placement() -> tuple[int, int] | None:
    """The (servers' CPU, clients' CPU) from `TK_BENCH_PIN`, as placement.rs reads it; `None`: unpinned."""
    value = os.environ.get("TK_BENCH_PIN", "")
    if value == "off":
        return None
    if value:
        cpus = [int(c) for c in value.split(",") if c.strip()]
        if len(cpus) != 2:
            raise SystemExit(f"TK_BENCH_PIN={value}: want `off` or SERVER_CPU,CLIENT_CPU")
        return cpus[0], cpus[1]
    last = max(os.sched_getaffinity(0))
    return last, last


def pin_process(pid: int, cpu: int) -> None:
    """Every thread of `pid` on `cpu` (threads it starts later inherit the mask)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        os.sched_setaffinity(int(tid), {cpu})


def describe(place: tuple[int, int] | None) -> str:
    if place is None:
        return "not pinned (TK_BENCH_PIN=off)"
    if place[0] == place[1]:
        return f"servers and clients pinned to CPU {place[0]} (TK_BENCH_PIN)"
    return f"servers pinned to CPU {place[0]}, clients to CPU {place[1]} (TK_BENCH_PIN)"


def cpu_per_call(python: Path, url: str, mode: str, pidfile: Path, seconds: float, tag: str = "") -> dict[str, float]:
    """CPU_PROBE's numbers for one side (asyncio x64); `tag` prefixes every key (a hash tag puts
    them all on one master)."""
    pids = ",".join(pidfile.read_text().split())
    out = subprocess.run([str(python), "-c", CPU_PROBE, url, mode, str(seconds), pids, tag], capture_output=True,
                         text=True, check=False, cwd=ROOT)
    if out.returncode != 0:
        raise SystemExit(f"benchmark process failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def report_cpu(python: Path, sides: dict[str, str], pidfiles: dict[str, Path], seconds: float, repeats: int) -> None:
    """The CPU split of asyncio x64 per side: `repeats` runs of each side in turn, medians printed."""
    probes = {"one server": ("standalone", ""), "3 masters": ("cluster", ""),
              "3 masters, every key on one": ("cluster", "{one}")}
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in probes}
    for _ in range(repeats):
        for label, (side, tag) in probes.items():
            runs[label].append(cpu_per_call(python, sides[side], side, pidfiles[side], seconds, tag))
    for label, rs in runs.items():
        med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        print(f"asyncio x64 CPU per call, {label} (median of {repeats}): client {med['client_us']:.2f} us "
              f"(event loop thread {med['loop_us']:.2f}), servers {med['servers_us']:.2f} us "
              f"(scripts' wall time {med['script_us']:.2f}), server reads per 1k calls {med['reads_per_1k']:.0f}, "
              f"event loop sleeps per 1k calls {med['loop_sleeps_per_1k']:.0f}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per side and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpu-repeats", type=int, default=3, help="asyncio x64 CPU-split runs per side")
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
    place = placement()
    try:
        if place is not None:
            for pidfile in (tmp / "single", tmp / "cluster"):
                for pid in pidfile.read_text().split():
                    pin_process(int(pid), place[0])
            # This process's measuring children inherit its mask.
            pin_process(os.getpid(), place[1])
        print(f"placement: {describe(place)}")
        where = "unpinned" if place is None else "pinned"
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
                  f"{args.rounds} rounds; ratio {min(ratios):.2f}-{max(ratios):.2f}; {where})")
        pidfiles = {"standalone": tmp / "single", "cluster": tmp / "cluster"}
        report_cpu(ours, sides, pidfiles, args.seconds, args.cpu_repeats)
    finally:
        subprocess.run([str(helpers / "redis-cluster.sh"), "stop", str(tmp / "cluster")], check=False)
        subprocess.run([str(helpers / "redis-server.sh"), "stop", str(tmp / "single")], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
