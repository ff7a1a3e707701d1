"""The `python-flask` example of examples/http/run.sh: GET /healthz (never limited) and
GET /limited, limited by client IP with GCRA 5 per 60 s, burst 5, draft-10 fields, policy name
"default", no trusted proxies.

    python app.py PORT        (Flask's development server; binds 127.0.0.1, or $HOST)
"""

import os
import sys

from flask import Flask

import throttlekit as tk
from throttlekit.wsgi import RateLimitMiddleware

app = Flask(__name__)


@app.get("/healthz")
def healthz() -> str:
    return "ok"


@app.get("/limited")
def limited() -> str:
    return "ok"


app.wsgi_app = RateLimitMiddleware(  # type: ignore[method-assign]
    app.wsgi_app,
    tk.Limiter(tk.Strategy.gcra(5, 60_000, burst=5)),
    family="draft-10",
    policy_name="default",
    skip=lambda environ: environ["PATH_INFO"] == "/healthz",
)

if __name__ == "__main__":
    app.run(host=os.environ.get("HOST", "127.0.0.1"), port=int(sys.argv[1]), threaded=True)
