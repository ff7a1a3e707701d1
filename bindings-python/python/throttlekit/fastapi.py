"""A FastAPI dependency for per-route limits.

    from fastapi import Depends, FastAPI
    from throttlekit.fastapi import RateLimit, install

    app = FastAPI()
    install(app)                                  # 429s as application/problem+json
    per_ip = RateLimit(tk.Limiter(tk.Strategy.gcra(5, 60_000, burst=5)))

    @app.get("/limited", dependencies=[Depends(per_ip)])
    async def limited() -> dict: ...

The dependency awaits the limiter's ``check`` and adds the rate-limit fields to the route's
response (FastAPI merges a dependency's ``Response`` headers into it, unless the route returns
a ``Response`` object itself). A denial raises ``RateLimited``, an ``HTTPException`` whose
status (429) and header lines FastAPI sends even without ``install``; ``install`` registers the
handler that sends core's problem body as ``application/problem+json``. The options are
``throttlekit.http.RateLimitOptions``'; the callables receive the Starlette ``Request`` and may be
async.
"""

from __future__ import annotations

from typing import Any, Union

from fastapi import FastAPI, HTTPException, Request, Response

from throttlekit._throttlekit import HttpDecision, Limiter, MultiLimiter, ThrottleKitError
from throttlekit.http import RateLimitOptions, Verdict, resolve

__all__ = ["RateLimit", "RateLimited", "install", "rate_limited_handler"]


class RateLimited(HTTPException):
    """Raised by ``RateLimit`` instead of running the route: ``response`` is what to send."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code, detail=bytes(response.body).decode("utf-8", "replace"),
                         headers={k: v for k, v in response.headers.items() if k != "content-length"})
        self.response = response


def _response(verdict: Verdict) -> Response:
    response = Response(verdict.body, status_code=verdict.status)
    for name, value in verdict.headers:
        if name.lower() == "content-type":
            response.headers["content-type"] = value
        else:
            response.headers.append(name, value)
    return response


class RateLimit:
    """A dependency that checks each request of the routes it guards (``Depends(RateLimit(...))``).

    It returns the ``HttpDecision`` (``None`` when ``skip`` said so), so a route that declares
    ``decision: HttpDecision = Depends(limit)`` can read it.
    """

    def __init__(self, limiter: Union[Limiter, MultiLimiter], **options: Any) -> None:
        self.options: RateLimitOptions[Request] = RateLimitOptions(limiter, **options)

    async def __call__(self, request: Request, response: Response) -> Union[HttpDecision, None]:
        o = self.options
        if o.skip is not None and await resolve(o.skip(request)):
            return None
        try:
            if o.key_func is not None:
                key = await resolve(o.key_func(request))
            else:
                client = request.scope.get("client")
                key = o.identity.key(client[0] if client else "", request.scope.get("headers"))
            cost = 1 if o.cost_func is None else await resolve(o.cost_func(request))
            result = await o.limiter.check(key, cost)
        except ThrottleKitError as err:
            raise RateLimited(_response(o.failed(err))) from err
        # The scope's path, not `request.url`, which builds a URL object for each request.
        verdict = o.verdict(result, key, request.method, request.scope.get("path", ""))
        if verdict.forward:
            for name, value in verdict.headers:
                response.headers.append(name, value)
            return result
        if o.deny_response is not None:
            denial: Response = o.deny_response(result.decision)
            for name, value in result.headers:
                denial.headers.append(name, value)
            raise RateLimited(denial)
        raise RateLimited(_response(verdict))


async def rate_limited_handler(request: Request, exc: Exception) -> Response:
    """Sends a ``RateLimited``'s response as it is (problem body, fields, ``Retry-After``)."""
    assert isinstance(exc, RateLimited)
    return exc.response


def install(app: FastAPI) -> None:
    """Registers ``rate_limited_handler`` for ``RateLimited`` on ``app``."""
    app.add_exception_handler(RateLimited, rate_limited_handler)
