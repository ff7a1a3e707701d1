"""Drives one language's service for tests/adaptive-service.sh and checks the issue's proof:
driven at twice its capacity, the service behind the adaptive shedding middleware keeps its
admitted p99 within 2x the p99 it has unloaded, and without the middleware it does not.

    python3 run.py NAME -- COMMAND...    (COMMAND gets PORT WORKERS SERVICE_MS [--no-shed])

The service has 16 workers and a lognormal service time (median 350 ms, sigma 0.5), so its
capacity is about 40 requests a second: light enough for a loaded 2-core machine to serve the
HTTP overhead on time, with the same load generator for every language. Both p99s are measured
in the same run, seconds apart, so a slow machine moves both. The first 8 s of the overload are
the limiter's warm-up and are not measured: slow start overshoots the 16 workers (it doubles
until the first congestion signal) and gradient2 takes its decreases half a step per window.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKERS, MEDIAN_MS = 16, 350
UNLOADED = ("--rate", "30", "--seconds", "6")
OVERLOAD = ("--rate", "80", "--seconds", "17", "--measure-after", "8")
UNSHED = ("--rate", "80", "--seconds", "4")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(command: list[str], *extra: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen([*command, str(port), str(WORKERS), str(MEDIAN_MS), *extra])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"the server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    sys.exit("the server did not listen within 30 s")


def load(port: int, args: tuple[str, ...]) -> dict:
    out = subprocess.run(
        [sys.executable, str(HERE / "loadgen.py"), "--port", str(port), *args],
        check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main() -> int:
    name, command = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
    proc, port = start(command)
    try:
        unloaded = load(port, UNLOADED)
        shed = load(port, OVERLOAD)
    finally:
        stop(proc)
    proc, port = start(command, "--no-shed")
    try:
        unshed = load(port, UNSHED)
    finally:
        stop(proc)
    u, a, n = unloaded["p99_ms"], shed["p99_ms"], unshed["p99_ms"]
    print(f"{name}: unloaded p99 {u} ms; at 2x capacity with shedding p99 {a} ms ({a / u:.2f}x, "
          f"statuses {shed['statuses']}); without it p99 {n} ms ({n / u:.2f}x)")
    problems = []
    if unloaded["statuses"] != {"200": unloaded["measured"]}:
        problems.append(f"the unloaded phase was not all 200s: {unloaded['statuses']}")
    if not shed["statuses"].get("503"):
        problems.append("nothing was shed at 2x capacity")
    if not a <= 2 * u:
        problems.append(f"with shedding the admitted p99 {a} ms is above 2x the unloaded {u} ms")
    if not n > 2 * u:
        problems.append(f"without shedding the p99 {n} ms did not grow past 2x the unloaded {u} ms")
    for p in problems:
        print(f"{name}: FAIL: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
