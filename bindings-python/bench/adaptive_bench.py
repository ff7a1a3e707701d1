"""The adaptive limiter's try_acquire + release through the Python binding, against issue
#35's 1 µs per binding (docs/adaptive.md, "Speed").

    python bindings-python/bench/adaptive_bench.py [N]

Run with the interpreter that has the release build (bench/run.sh uses bench.py's
bench/.venv-ours). Prints a `ROW` line for bench/summarize.py.
"""

import sys
import time

import throttlekit as tk

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000


def per_call_us(fn, n: int) -> float:
    for _ in range(n // 10):
        fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


limiter = tk.AdaptiveLimiter("gradient2", initial_limit=64, min_limit=64, min_rtt_us=0)


def acquire_release() -> None:
    limiter.try_acquire().release("success")


us = per_call_us(acquire_release, N)
assert limiter.inflight() == 0
print(f"python {sys.version.split()[0]}: try_acquire + release {us:.2f} us (N={N})")
print(
    f"ROW\tadaptive acquire + release through Python (PyO3)\t1000 ns target\t{1 / us:.2f}\t>=1\t"
    f"{us * 1000:.0f} ns per try_acquire + release"
)
