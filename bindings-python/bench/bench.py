"""Throughput of throttlekit's Python package against two peers, in one run (not part of the tests).

    python bindings-python/bench/bench.py [--seconds 2] [--redis-url URL]

1. In memory, `Limiter.check_sync` against the `limits` package 5.x (`MemoryStorage` +
   `MovingWindowRateLimiter.hit`, the peer the comparison is pinned to), same limit, same keys,
   in two shapes: 100k users each under their limit (100 a minute: most calls admitted), and 1k
   hot keys far over theirs (10 a second: most calls denied, which `limits` answers cheaply).
   Two rows per shape, one per throttlekit strategy: the sliding-window log (the exact analogue
   of a moving window) and GCRA (the default strategy, `Strategy.gcra(limit, period_ms)` with its
   default burst, what a user would pick). The peer is measured once per shape. Both sides run
   the same loop, `for key in keys: key_call(key)`, where `key_call` is a C-level callable taking
   the key: our bound `check_sync`, and `functools.partial(limiter.hit, item)` for `limits`. No
   Python-level wrapper function sits between the loop and either library, so the ratio is of the
   libraries' own per-call cost (a wrapper adds ~50 ns to each side, which at tens of nanoseconds
   per call hides most of the difference being measured).
2. Over one local Redis, `check` against throttlekit-py 0.5.1's `RedisBackend` (the original
   ThrottleKit's Python client, on redis-py): GCRA, server clock on both sides (their default),
   one EVALSHA per call on both sides. Measured two ways: sequential blocking calls (`check_sync`
   against `RedisBackend.check`), and asyncio with 64 calls in flight (`await check` against
   `AsyncRedisBackend.check` on `redis.asyncio`).

Every contender runs in its own process and its own virtual environment under `bench/.venv-*`,
created on first use. This matters because throttlekit-py installs a top-level `throttlekit`
package, the same import name as ours, and also pulls in grpcio. Our package is a release wheel
built from this checkout into `bench/.venv-ours`, so a debug build in the test venv cannot skew
the numbers. Without `--redis-url`, the script starts a private redis-server and stops it by PID.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REDIS_HELPER = BENCH.parents[1] / "tests" / "redis-server.sh"
PACKAGE = BENCH.parent
KEYS = 1000

PEERS = {
    "limits": ["limits>=5,<6"],
    "throttlekit-py": ["throttlekit-py==0.5.1", "redis>=5"],
}

# Each snippet defines `key_call(key)` (memory), `sync_call(i)` and/or `async_call(i)` (Redis);
# the harness below times them.
# Memory: {keys} keys, {limit} per {window} ms. Two shapes: many users each under their limit
# (most calls admitted: the common case), and a few hot keys far over it (most calls denied).
OURS_MEMORY = """
import throttlekit as tk
NKEYS = {keys}
limiter = tk.Limiter(tk.Strategy.{strategy}({limit}, {window}))
key_call = limiter.check_sync
"""
LIMITS_MEMORY = """
import functools
from limits import RateLimitItemPerSecond, storage, strategies
NKEYS = {keys}
limiter = strategies.MovingWindowRateLimiter(storage.MemoryStorage())
item = RateLimitItemPerSecond({limit}, {window} // 1000)
key_call = functools.partial(limiter.hit, item)
"""
UNDER_LIMIT = dict(keys=100_000, limit=100, window=60_000)
# 10 a second: at the peer's 100k-350k calls a second, each key gets 100+ calls a second, so
# both sides are far over the limit from the first second (at 100 a second the peer sat right
# at the limit, and its rate swung 3x between runs with how many of its calls were admitted).
OVER_LIMIT = dict(keys=1000, limit=10, window=1000)
OURS_REDIS = """
import throttlekit as tk
store = tk.RedisStore(URL, server_clock=True)
limiter = tk.Limiter(tk.Strategy.gcra(100, 1000, burst=100), store=store, prefix="bench-ours")
check_sync, check = limiter.check_sync, limiter.check
def sync_call(i): return check_sync(KEYS_[i % 1000])
def async_call(i): return check(KEYS_[i % 1000])
"""
PEER_REDIS = """
import redis, redis.asyncio
from throttlekit import Gcra
from throttlekit.redis_backend import RedisBackend
from throttlekit.redis_backend_async import AsyncRedisBackend
strategy = Gcra(limit=100, period_ms=1000, burst=100)
backend = RedisBackend(redis.Redis.from_url(URL), strategy, prefix="bench-peer")
abackend = None
def sync_call(i): return backend.check(KEYS_[i % 1000])
def async_call(i):
    global abackend
    if abackend is None:  # the asyncio client must be made inside the running loop
        abackend = AsyncRedisBackend(redis.asyncio.Redis.from_url(URL, max_connections=64), strategy, prefix="bench-peer")
    return abackend.check(KEYS_[i % 1000])
"""

HARNESS = """
import asyncio, json, sys, time
URL = sys.argv[2] if len(sys.argv) > 2 else ""
SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
MODE = sys.argv[1]
exec(compile(SNIPPET, "snippet", "exec"))
KEYS_ = [f"user:{i}" for i in range(globals().get("NKEYS", 1000))]

def run_keys():
    # The keys in order, round and round: one next() and one call per iteration, nothing else.
    import itertools
    keys, call = itertools.cycle(KEYS_), key_call
    for key in itertools.islice(keys, 2000): call(key)  # warm up
    n, start, deadline = 0, time.perf_counter(), time.perf_counter() + SECONDS
    while time.perf_counter() < deadline:
        for key in itertools.islice(keys, 200): call(key)
        n += 200
    return n / (time.perf_counter() - start)

def run_sync():
    for i in range(2000): sync_call(i)  # warm up
    n, start, deadline = 0, time.perf_counter(), time.perf_counter() + SECONDS
    while time.perf_counter() < deadline:
        for _ in range(200):
            sync_call(n); n += 1
    return n / (time.perf_counter() - start)

async def run_async(in_flight=64):
    n = 0
    async def worker(w):
        nonlocal n
        i = w
        while time.perf_counter() < deadline:
            await async_call(i); i += in_flight; n += 1
    global deadline
    deadline = time.perf_counter() + 0.3
    await asyncio.gather(*(worker(w) for w in range(in_flight)))  # warm up
    n = 0
    start = time.perf_counter(); deadline = start + SECONDS
    await asyncio.gather(*(worker(w) for w in range(in_flight)))
    return n / (time.perf_counter() - start)

rate = run_keys() if MODE == "keys" else run_sync() if MODE == "sync" else asyncio.run(run_async())
print(json.dumps({"calls_per_sec": rate}))
"""


def venv(name: str, packages: list[str]) -> Path:
    """bench/.venv-<name> with `packages` installed (skipped when already there)."""
    path = BENCH / f".venv-{name}"
    python = path / "bin" / "python"
    stamp = path / ".installed"
    want = json.dumps(packages)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    if packages and (not stamp.exists() or stamp.read_text() != want):
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--force-reinstall",
                        *packages], check=True)
        stamp.write_text(want)
    return python


MATURIN = "maturin>=1.9,<2"


def find_maturin() -> str:
    """maturin on PATH, beside this interpreter, or else installed into bench/.venv-tools.

    Why the last resort: on a fresh clone neither of the first two exists (the system Python
    has no maturin, and `make test`'s .venv may not be there yet), and a bench that depends on
    how it was started loses its rows (`FileNotFoundError`).
    """
    found = shutil.which("maturin")
    if found:
        return found
    beside = Path(sys.executable).parent / "maturin"
    if beside.exists():
        return str(beside)
    return str(venv("tools", [MATURIN]).parent / "maturin")


def build_wheel() -> str:
    """A release wheel of this checkout (the workspace target dir is reused)."""
    out = BENCH / ".venv-ours-dist"
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([find_maturin(), "build", "--release", "--quiet", "-o", str(out)], cwd=PACKAGE, check=True)
    return str(next(out.glob("*.whl")))


def measure(python: Path, snippet: str, mode: str, url: str, seconds: float) -> float:
    code = f"SNIPPET = {snippet!r}\n{HARNESS}"
    out = subprocess.run([str(python), "-c", code, mode, url, str(seconds)], capture_output=True, text=True,
                         check=False, cwd=BENCH)
    if out.returncode != 0:
        raise SystemExit(f"benchmark process failed:\n{out.stderr}")
    return float(json.loads(out.stdout.strip().splitlines()[-1])["calls_per_sec"])


def main() -> int:
    parser = argparse.ArgumentParser(description=textwrap.dedent(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per contender")
    parser.add_argument("--redis-url", default=None)
    args = parser.parse_args()

    print("preparing virtual environments (first run installs them) ...", flush=True)
    ours = venv("ours", [])
    # A fresh wheel of this checkout on every run.
    subprocess.run([str(ours), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--force-reinstall",
                    "--no-deps", build_wheel()], check=True)
    limits = venv("limits", PEERS["limits"])
    peer = venv("throttlekit-py", PEERS["throttlekit-py"])

    server = None
    url = args.redis_url
    if url is None:
        # The repository's helper: a fresh port per attempt, and our own PID answering.
        pidfile = Path(tempfile.mkdtemp()) / "redis.pid"
        url = subprocess.run([str(REDIS_HELPER), "start", str(pidfile)], check=True, capture_output=True,
                             text=True).stdout.strip()
        server = pidfile
    try:
        s = args.seconds
        rows = []
        for shape, params in (("100k keys under", UNDER_LIMIT), ("1k hot keys over", OVER_LIMIT)):
            b = measure(limits, LIMITS_MEMORY.format(**params), "keys", url, s)
            for label, strategy in (("log", "sliding_window_log"), ("GCRA", "gcra")):
                a = measure(ours, OURS_MEMORY.format(strategy=strategy, **params), "keys", url, s)
                rows.append((f"memory, {shape}, {label}", "check_sync", a, "limits MovingWindowRateLimiter.hit", b,
                             40.0))
        a = measure(ours, OURS_REDIS, "sync", url, s)
        b = measure(peer, PEER_REDIS, "sync", url, s)
        rows.append(("Redis, GCRA, sequential", "check_sync", a, "throttlekit-py RedisBackend.check", b, None))
        a = measure(ours, OURS_REDIS, "async", url, s)
        b = measure(peer, PEER_REDIS, "async", url, s)
        rows.append(("Redis, GCRA, asyncio x64", "await check", a, "throttlekit-py AsyncRedisBackend.check", b, 2.5))
    finally:
        if server is not None:
            subprocess.run([str(REDIS_HELPER), "stop", str(server)], check=False)

    print(f"\n{'workload':<32}{'throttlekit':>26}{'peer':>46}{'ratio':>9}  target")
    for workload, ours_name, a, peer_name, b, target in rows:
        ratio = a / b
        verdict = "" if target is None else (f">= {target:g}x " + ("met" if ratio >= target else "MISSED"))
        print(f"{workload:<32}{ours_name:>12} {a:>11,.0f}/s  {peer_name:>36} {b:>9,.0f}/s {ratio:>7.1f}x  {verdict}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
