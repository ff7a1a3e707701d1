"""The `python-django` example of examples/http/run.sh: GET /healthz (never limited) and
GET /limited, limited by client IP with GCRA 5 per 60 s, burst 5, draft-10 fields, policy name
"default", no trusted proxies; all of it set here, in THROTTLEKIT."""

import os

SECRET_KEY = "throttlekit-example-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]", os.environ.get("HOST", "127.0.0.1")]
ROOT_URLCONF = "project.urls"
INSTALLED_APPS: list[str] = []
MIDDLEWARE = ["throttlekit.django.RateLimitMiddleware"]
USE_TZ = True

THROTTLEKIT = {
    "STORE": "memory://",  # or "redis://localhost:6379/0": one limit for every worker
    "STRATEGY": "gcra",    # "5/minute" is GCRA 5 per 60 s with a burst of 5
    "RATE": "5/minute",    # every view without a @ratelimit of its own, unless @ratelimit_exempt
    "KEY": "ip",           # the socket peer (no TRUSTED_PROXIES: forwarding headers are not believed)
    "FAMILY": "draft-10",
    "POLICY_NAME": "default",
    "FAIL_POLICY": "raise",  # 503 when Redis cannot answer; "fail_open" lets requests through
}
