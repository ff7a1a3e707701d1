"""HTTP middleware overhead per request: throttlekit against slowapi, the same FastAPI app, side by
side in one process (not part of the tests; `make bench` runs it).

    python bindings-python/bench/http_bench.py [--requests 300] [--rounds 40]

Contenders, each a FastAPI app with one route, `GET /limited` returning "ok", whose handler
takes `(request, response)` in every app (slowapi needs both):
- baseline: no rate limiting;
- per route: our `Depends(throttlekit.fastapi.RateLimit(...))` against slowapi's
  `@limiter.limit(...)` decorator with `headers_enabled=True`;
- whole app: our `throttlekit.asgi.RateLimitMiddleware` against slowapi's
  `SlowAPIASGIMiddleware` (its pure-ASGI middleware, the faster of its two) with a default limit.
Both sides use a fixed window (slowapi's default strategy) of 10^9 per minute on the memory
store, keyed by client IP (1,000 distinct addresses, round robin), so every request is admitted
and carries rate-limit fields (draft-10 for us; slowapi's X-RateLimit-* trio).

Requests are driven in process: each is a call of the ASGI app with a fresh scope, awaited on one
event loop, with no socket, so the time is the framework's plus the limiter's. The rounds
interleave the contenders (baseline, ours, theirs, ... repeated), and each contender's time per
request is its fastest round: on a shared machine, other work only ever adds time, so many short
interleaved rounds and their minimum estimate each contender's own cost best (the medians are
printed too). Overhead = that time minus the baseline's; the ratio is
slowapi's overhead / ours (> 1: ours is cheaper). Everything runs in `bench/.venv-http`, with a
release wheel of this checkout and pinned slowapi.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import build_wheel, venv  # noqa: E402  (the Python bench's venv and wheel helpers)

PEERS = ["slowapi==0.1.10", "limits>=3.13,<6", "fastapi>=0.110,<1"]

HARNESS = r'''
import asyncio, json, statistics, sys, time
from fastapi import Depends, FastAPI, Request, Response

import throttlekit as tk
from throttlekit.asgi import RateLimitMiddleware
from throttlekit.fastapi import RateLimit, install
from slowapi import Limiter as SlowLimiter, _rate_limit_exceeded_handler
from slowapi.errors import RateLimitExceeded
from slowapi.middleware import SlowAPIASGIMiddleware
from slowapi.util import get_remote_address

N, ROUNDS = int(sys.argv[1]), int(sys.argv[2])
LIMIT, WINDOW_MS, SPEC = 10**9, 60_000, "1000000000/minute"


def ours_limiter():
    return tk.Limiter(tk.Strategy.fixed_window(LIMIT, WINDOW_MS))


def baseline():
    app = FastAPI()

    @app.get("/limited")
    async def limited(request: Request, response: Response):
        return "ok"

    return app


def ours_dependency():
    app = FastAPI()
    install(app)
    limit = RateLimit(ours_limiter())

    @app.get("/limited", dependencies=[Depends(limit)])
    async def limited(request: Request, response: Response):
        return "ok"

    return app


def slowapi_decorator():
    app = FastAPI()
    limiter = SlowLimiter(key_func=get_remote_address, headers_enabled=True)
    app.state.limiter = limiter
    app.add_exception_handler(RateLimitExceeded, _rate_limit_exceeded_handler)

    @app.get("/limited")
    @limiter.limit(SPEC)
    async def limited(request: Request, response: Response):
        return "ok"

    return app


def ours_middleware():
    app = baseline()
    app.add_middleware(RateLimitMiddleware, limiter=ours_limiter())
    return app


def slowapi_middleware():
    app = baseline()
    limiter = SlowLimiter(key_func=get_remote_address, headers_enabled=True, default_limits=[SPEC])
    app.state.limiter = limiter
    app.add_exception_handler(RateLimitExceeded, _rate_limit_exceeded_handler)
    app.add_middleware(SlowAPIASGIMiddleware)
    return app


SCOPES = [{
    "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
    "path": "/limited", "raw_path": b"/limited", "query_string": b"", "root_path": "",
    "headers": [(b"host", b"bench")], "client": (f"10.0.{i // 256}.{i % 256}", 40000), "server": ("127.0.0.1", 80),
} for i in range(1000)]


async def receive():
    return {"type": "http.request", "body": b"", "more_body": False}


async def drive(app, n):
    """Seconds per request over n requests; checks every one is a 200 with rate-limit fields."""
    seen = {"bad": 0}

    async def send(message):
        if message["type"] == "http.response.start":
            names = {k.lower() for k, _ in message["headers"]}
            if message["status"] != 200 or not (b"ratelimit" in names or b"x-ratelimit-remaining" in names):
                seen["bad"] += 1

    start = time.perf_counter()
    for i in range(n):
        await app(dict(SCOPES[i % 1000]), receive, send)
    elapsed = time.perf_counter() - start
    return elapsed / n, seen["bad"]


async def main():
    apps = {name: f() for name, f in (("baseline", baseline), ("ours_dependency", ours_dependency),
            ("slowapi_decorator", slowapi_decorator), ("ours_middleware", ours_middleware),
            ("slowapi_middleware", slowapi_middleware))}
    for app in apps.values():  # warm up (Starlette builds its middleware stack on first call)
        await drive(app, 200)
    times = {name: [] for name in apps}
    bad = {name: 0 for name in apps}
    for _ in range(ROUNDS):
        for name, app in apps.items():
            t, b = await drive(app, N)
            times[name].append(t)
            bad[name] += b
    bad["baseline"] = 0  # the baseline sends no fields by design
    print(json.dumps({"min_s": {k: min(v) for k, v in times.items()},
                      "median_s": {k: statistics.median(v) for k, v in times.items()}, "bad": bad}))


asyncio.run(main())
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=textwrap.dedent(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="requests per contender per round")
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()

    print("preparing bench/.venv-http (first run installs it) ...", flush=True)
    python = venv("http", PEERS)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--force-reinstall",
                    "--no-deps", build_wheel()], check=True)
    out = subprocess.run([str(python), "-c", HARNESS, str(args.requests), str(args.rounds)],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"benchmark process failed:\n{out.stderr}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if any(result["bad"].values()):
        raise SystemExit(f"some requests were not admitted with rate-limit fields: {result['bad']}")
    best = {k: v * 1e6 for k, v in result["min_s"].items()}
    med = {k: v * 1e6 for k, v in result["median_s"].items()}
    print(f"FastAPI app, no limiter: {best['baseline']:.1f} us per request (in process, no socket; "
          f"median round {med['baseline']:.1f} us)")
    for label, ours, theirs in (
        ("FastAPI per-route dependency vs slowapi @limiter.limit", "ours_dependency", "slowapi_decorator"),
        ("FastAPI app-wide ASGI middleware vs slowapi SlowAPIASGIMiddleware", "ours_middleware", "slowapi_middleware"),
    ):
        a, b = best[ours] - best["baseline"], best[theirs] - best["baseline"]
        ratio = b / a if a > 0 else float("inf")
        print(f"{label}: overhead/request  {a:.1f} us vs {b:.1f} us  ratio {ratio:.2f}x (target >= 1.0x)"
              f"  [medians {med[ours] - med['baseline']:.1f} vs {med[theirs] - med['baseline']:.1f} us]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
