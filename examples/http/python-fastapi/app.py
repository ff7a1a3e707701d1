"""The `python-fastapi` example of examples/http/run.sh: GET /healthz (never limited) and
GET /limited, limited by client IP with GCRA 5 per 60 s, burst 5, draft-10 fields, policy name
"default", no trusted proxies.

    python app.py PORT        (binds 127.0.0.1; set HOST to listen elsewhere)
"""

import os
import sys

import uvicorn
from fastapi import Depends, FastAPI

import throttlekit as tk
from throttlekit.fastapi import RateLimit, install

app = FastAPI()
install(app)  # 429s as application/problem+json
per_ip = RateLimit(tk.Limiter(tk.Strategy.gcra(5, 60_000, burst=5)), family="draft-10", policy_name="default")


@app.get("/healthz")
async def healthz() -> str:
    return "ok"


@app.get("/limited", dependencies=[Depends(per_ip)])
async def limited() -> str:
    return "ok"


if __name__ == "__main__":
    port = int(sys.argv[1])
    # proxy_headers=False: uvicorn would otherwise believe X-Forwarded-For from 127.0.0.1 and
    # hand the middleware a client address anyone can choose.
    uvicorn.run(app, host=os.environ.get("HOST", "127.0.0.1"), port=port, proxy_headers=False,
                log_level="warning")
