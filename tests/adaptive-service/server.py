"""The Python service of tests/adaptive-service.sh: an ASGI app (uvicorn) with a fixed number of
workers, each request holding one for a lognormal service time (median SERVICE_MS, sigma 0.5, a
seeded generator), behind throttlekit's ASGI SheddingMiddleware with the default algorithm (or
not, with --no-shed).

    python server.py PORT WORKERS SERVICE_MS [--no-shed]
"""

import asyncio
import math
import random
import sys

import uvicorn

from throttlekit import AdaptiveLimiter
from throttlekit.asgi import SheddingMiddleware

port, workers, service_ms = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
pool = asyncio.Semaphore(workers)  # created before the loop starts; bound on first use (3.10+)
rng = random.Random(1)


async def app(scope, receive, send):  # type: ignore[no-untyped-def]
    if scope["type"] != "http":
        return
    async with pool:
        await asyncio.sleep(rng.lognormvariate(math.log(service_ms / 1000), 0.5))
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


limiter = AdaptiveLimiter(window_min_samples=20)
served = app if "--no-shed" in sys.argv else SheddingMiddleware(app, limiter)
uvicorn.run(served, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
