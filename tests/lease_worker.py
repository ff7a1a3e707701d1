"""One Python process of the leased-mode fleet test (tests/lease_fleet.py): the same loop as
core/examples/lease_worker.rs, through the Python binding. Prints `sent_ms recv_ms reset_at` per
admitted request.

    python tests/lease_worker.py <redis-url> <strategy-json> <mode> <batch> <coupled 0|1> <run-ms> <key>
"""

import json
import sys
import time

import throttlekit as tk


def main() -> None:
    url, spec, mode, batch, coupled, run_ms, key = sys.argv[1:8]
    store = tk.RedisStore(url, fail_policy="raise")
    limiter = tk.Limiter(
        json.loads(spec),
        store=store,
        prefix="fleet",
        mode=mode,
        lease={"batch": int(batch), "window_coupled": coupled == "1"},
    )
    lines = []
    end = time.monotonic() + int(run_ms) / 1000
    while time.monotonic() < end:
        sent = time.time_ns() // 1_000_000
        d = limiter.check_sync(key)
        recv = time.time_ns() // 1_000_000
        if d.allowed:
            lines.append(f"{sent} {recv} {d.reset_at}")
        time.sleep(0.0002)
    limiter.release_leases_sync()
    sys.stdout.write("\n".join(lines) + ("\n" if lines else ""))


if __name__ == "__main__":
    main()
