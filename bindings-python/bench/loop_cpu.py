"""`bench.py`'s hot-key loop alone, in thread CPU ns an iteration (not part of the tests).

    python bindings-python/bench/loop_cpu.py MODE [calls] [repeats]

MODE: `log` or `gcra` (our `check_sync`, 1k keys, 10 a second, as `bench.py`'s "1k hot keys over"
rows), `logm` or `gcram` (the same on a `ManualClock` that never moves, so every call after a
key's first 10 is a denial: for callgrind, where the system clock's slower pace admits ~20% of
calls), `limits` (the peer, `MovingWindowRateLimiter.hit`), or `loop` (`len` in place of the
call: the loop's own cost). `log-under`, `gcra-under`: the "100k keys under" rows instead (100k
keys, 100 a minute). Prints the best of `repeats` runs of `calls` iterations. Run it with
the interpreter of a venv holding the package to measure (`bench.py` builds one under
`bench/.venv-ours`); docs/performance.md shows the numbers and the callgrind and `perf` commands.

Thread CPU time rather than wall time, because the load of a shared machine moves it less; the
loop runs inside a function, as `bench.py`'s does (at module level the loop's names are dict
items, and their lookups were a fifth of a profile).
"""

import itertools
import sys
import time

MODE, _, SHAPE = sys.argv[1].partition("-")
CALLS = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
REPEATS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
# bench.py's two shapes: (keys, limit, window ms).
NKEYS, LIMIT, WINDOW = (100_000, 100, 60_000) if SHAPE == "under" else (1000, 10, 1000)
KEYS = [f"user:{i}" for i in range(NKEYS)]


def make_call():
    if MODE.rstrip("m") in ("log", "gcra"):
        import throttlekit as tk

        kind = tk.Strategy.sliding_window_log if MODE.startswith("log") else tk.Strategy.gcra
        strategy = kind(LIMIT, WINDOW)
        clock = tk.ManualClock(1_700_000_000_000) if MODE.endswith("m") else None
        return tk.Limiter(strategy, clock=clock).check_sync
    if MODE == "limits":
        import functools

        from limits import RateLimitItemPerSecond, storage, strategies

        limiter = strategies.MovingWindowRateLimiter(storage.MemoryStorage())
        return functools.partial(limiter.hit, RateLimitItemPerSecond(LIMIT, WINDOW // 1000))
    if MODE == "loop":
        return len
    raise SystemExit(f"unknown mode {MODE!r}")


def best_ns(call) -> float:
    keys = itertools.cycle(KEYS)
    for key in itertools.islice(keys, max(20_000, NKEYS)):  # warm up: every key seen (over its limit)
        call(key)
    best = float("inf")
    for _ in range(REPEATS):
        start = time.thread_time_ns()
        for key in itertools.islice(keys, CALLS):
            call(key)
        best = min(best, (time.thread_time_ns() - start) / CALLS)
    return best


if __name__ == "__main__":
    print(f"{sys.argv[1]} {best_ns(make_call()):.1f} ns")
