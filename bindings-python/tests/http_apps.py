"""The same two-route application on every Python stack the middleware supports, for the
parametrised tests: GET /healthz (never limited) and GET /limited.

- ``asgi``: Starlette with ``throttlekit.asgi.RateLimitMiddleware`` (``skip`` leaves /healthz);
- ``fastapi``: FastAPI with the ``throttlekit.fastapi.RateLimit`` dependency on /limited only;
- ``flask``: Flask with ``throttlekit.wsgi.RateLimitMiddleware`` around ``app.wsgi_app``.

Options go to the middleware unchanged. The callables (``key_func``, ``cost_func``, ``skip``)
are written against a small ``Req`` view so one test can drive all three stacks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from fastapi import Depends, FastAPI
from flask import Flask
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from throttlekit.asgi import RateLimitMiddleware as AsgiMiddleware
from throttlekit.fastapi import RateLimit, install
from throttlekit.wsgi import RateLimitMiddleware as WsgiMiddleware

STACKS = ["asgi", "fastapi", "flask"]
SERVER = {"asgi": "asgi", "fastapi": "asgi", "flask": "wsgi"}


@dataclass(frozen=True)
class Req:
    """What a test's callable sees of a request, whatever the stack."""

    path: str
    headers: dict[str, str]


def _view(stack: str, raw: Any) -> Req:
    if stack == "asgi":
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw["headers"]}
        return Req(raw["path"], headers)
    if stack == "fastapi":
        return Req(raw.url.path, {k.lower(): v for k, v in raw.headers.items()})
    headers = {k[5:].replace("_", "-").lower(): v for k, v in raw.items() if k.startswith("HTTP_")}
    return Req(raw["PATH_INFO"], headers)


def _adapt(stack: str, options: dict[str, Any]) -> dict[str, Any]:
    out = dict(options)
    for name in ("key_func", "cost_func", "skip"):
        f: Callable[[Req], Any] | None = out.get(name)
        if f is not None:
            out[name] = (lambda f: lambda raw: f(_view(stack, raw)))(f)
    return out


def build(stack: str, limiter: Any, **options: Any) -> Any:
    """The application for `stack`, limited by `limiter` with `options`."""
    options = _adapt(stack, options)
    if stack == "asgi":
        async def ok(request: Request) -> PlainTextResponse:
            return PlainTextResponse("ok")

        user_skip = options.pop("skip", None)

        def skip(scope: Any) -> Any:
            return scope["path"] == "/healthz" or (user_skip is not None and user_skip(scope))

        app = Starlette(routes=[Route("/healthz", ok), Route("/limited", ok)])
        app.add_middleware(AsgiMiddleware, limiter=limiter, skip=skip, **options)
        return app
    if stack == "fastapi":
        fast = FastAPI()
        install(fast)
        limit = RateLimit(limiter, **options)

        @fast.get("/healthz")
        async def healthz() -> str:
            return "ok"

        @fast.get("/limited", dependencies=[Depends(limit)])
        async def limited() -> str:
            return "ok"

        return fast
    flask = Flask(__name__)

    @flask.get("/healthz")
    def flask_healthz() -> str:
        return "ok"

    @flask.get("/limited")
    def flask_limited() -> str:
        return "ok"

    user_skip = options.pop("skip", None)

    def wsgi_skip(environ: Any) -> Any:
        return environ["PATH_INFO"] == "/healthz" or (user_skip is not None and user_skip(environ))

    flask.wsgi_app = WsgiMiddleware(flask.wsgi_app, limiter, skip=wsgi_skip, **options)  # type: ignore[method-assign]
    return flask
