"""The `python-flask-ext` example of examples/http/run.sh: GET /healthz (never limited) and
GET /limited, limited by client IP with GCRA 5 per 60 s, burst 5, draft-10 fields, policy name
"default", no trusted proxies.

    gunicorn app:app        (start.sh: one worker, four threads)
"""

from flask import Flask

from throttlekit.flask import Limiter

app = Flask(__name__)
limiter = Limiter(
    app,
    default_limits=["100/minute"],  # views without a limit of their own, each counted apart
    storage_uri="memory://",        # or "redis://localhost:6379": one limit for every worker
    strategy="gcra",                # "5/minute" is GCRA 5 per 60 s with a burst of 5
    family="draft-10",
    policy_name="default",
)


@app.get("/healthz")
@limiter.exempt
def healthz() -> str:
    return "ok"


@app.get("/limited")
@limiter.limit("5/minute")
def limited() -> str:
    return "ok"
