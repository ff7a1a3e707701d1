"""Open-loop HTTP load for tests/adaptive-service.sh: GET / at a constant rate, one connection
per request (so a slow server cannot slow the arrivals down), for a duration; prints one JSON
line: how many requests got each status, and the 99th percentile latency of the 200s counted
from `--measure-after` seconds on (the limiter's warm-up left out).

    python3 loadgen.py --port P --rate R --seconds S [--measure-after W]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time


async def one(port: int, started: float, results: list[tuple[float, int, float]]) -> None:
    t0 = time.monotonic()
    status = 0
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nHost: loadgen\r\nConnection: close\r\n\r\n")
        await writer.drain()
        line = await reader.readline()
        status = int(line.split()[1]) if line else 0
        await reader.read()
        writer.close()
    except (OSError, ValueError, IndexError):
        status = -1
    results.append((t0 - started, status, time.monotonic() - t0))


async def run(port: int, rate: float, seconds: float) -> list[tuple[float, int, float]]:
    results: list[tuple[float, int, float]] = []
    tasks = []
    started = time.monotonic()
    n = int(rate * seconds)
    for i in range(n):
        # Arrivals on a fixed schedule: a late wake-up sends the overdue requests at once.
        delay = started + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(port, started, results)))
    await asyncio.gather(*tasks)
    return results


def p99(values: list[float]) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(0.99 * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rate", type=float, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--measure-after", type=float, default=0.0)
    args = parser.parse_args()
    results = asyncio.run(run(args.port, args.rate, args.seconds))
    statuses: dict[str, int] = {}
    for _, status, _ in results:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    ok = [lat for at, status, lat in results if status == 200 and at >= args.measure_after]
    print(json.dumps({"statuses": statuses, "measured": len(ok), "p99_ms": round(p99(ok) * 1000, 1)}))


if __name__ == "__main__":
    main()
