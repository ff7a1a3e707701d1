"""One Python process of the leased-mode fleet test (tests/lease_fleet.py): the same loop as
core/examples/lease_worker.rs, through the Python binding. Prints `sent_ms recv_ms reset_at` per
admitted request; for a list of `[name, spec]` pairs, a multi limiter (rule "all") whose first
dimension's key is `<key>` and the others' alternate `u0`/`u1`, printing
`sent_ms recv_ms reset_at user reset_at...`. Once its limiter is built it prints `ready` and
waits for a line on stdin, so the fleet's processes run side by side.

    python tests/lease_worker.py <redis-url> <strategy-json> <mode> <batch> <coupled 0|1> <run-ms> <key>
"""

import json
import sys
import time

import throttlekit as tk


def main() -> None:
    url, spec, mode, batch, coupled, run_ms, key = sys.argv[1:8]
    store = tk.RedisStore(url, fail_policy="raise")
    lease = {"batch": int(batch), "window_coupled": coupled == "1"}
    spec = json.loads(spec)
    multi = isinstance(spec, list)
    if multi:
        dims = [tk.Dimension(name, s) for name, s in spec]
        limiter = tk.MultiLimiter("all", dims, store=store, prefix="fleet", mode=mode, lease=lease)
    else:
        limiter = tk.Limiter(spec, store=store, prefix="fleet", mode=mode, lease=lease)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.readline()
    # The clock the limiter decides by (core's published millisecond, which lags the wall clock
    # when its ticker thread is starved): each decision's time lies between `sent` and `recv`, so
    # the fleet test puts an admission in the window the limiter put it in (core/examples/
    # lease_worker.rs says why).
    clock = tk.SystemClock()
    lines = []
    n = 0
    end = time.monotonic() + int(run_ms) / 1000
    while time.monotonic() < end:
        n += 1
        sent = clock.now_ms()
        if multi:
            user = f"u{n % 2}"
            d = limiter.check_sync([key] + [user] * (len(spec) - 1))
            recv = clock.now_ms()
            if d.allowed:
                rest = " ".join(str(x.reset_at) for x in d.dimensions[1:])
                lines.append(f"{sent} {recv} {d.dimensions[0].reset_at} {n % 2} {rest}")
        else:
            d = limiter.check_sync(key)
            recv = clock.now_ms()
            if d.allowed:
                lines.append(f"{sent} {recv} {d.reset_at}")
        time.sleep(0.0002)
    limiter.release_leases_sync()
    sys.stdout.write("\n".join(lines) + ("\n" if lines else ""))


if __name__ == "__main__":
    main()
