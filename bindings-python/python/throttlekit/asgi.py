"""ASGI middleware (Starlette, FastAPI, Quart, Litestar, any ASGI app).

    from throttlekit.asgi import RateLimitMiddleware
    app = RateLimitMiddleware(app, limiter)                 # plain ASGI
    app.add_middleware(RateLimitMiddleware, limiter=limiter)  # Starlette / FastAPI

Every HTTP request is checked with the limiter's awaitable ``check`` (on Redis one round trip
that never blocks the event loop). Admitted requests get the rate-limit fields on their
response; denied ones get a ``429`` with the fields, ``Retry-After`` and core's RFC 9457 body.
The options are ``throttlekit.http.RateLimitOptions``'; ``key_func``, ``cost_func`` and
``skip`` receive the ASGI scope and may be async.

``SheddingMiddleware(app, adaptive_limiter)`` sheds load instead: each request holds a permit of
an ``AdaptiveLimiter`` while the app runs, and a refused one is answered ``503`` with
``Retry-After`` (``throttlekit.http.shed_outcome`` says how a permit is released).
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, MutableMapping, Optional, Union

from throttlekit._throttlekit import AdaptiveLimiter, Limiter, MultiLimiter, Permit, ThrottleKitError
from throttlekit.http import RateLimitOptions, Verdict, resolve, shed_headers, shed_outcome

__all__ = ["RateLimitMiddleware", "SheddingMiddleware"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _encoded(lines: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    # Core's values are printable ASCII by construction.
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in lines]


class RateLimitMiddleware:
    """Rate-limits every HTTP request of ``app`` (lifespan and websocket scopes pass through)."""

    def __init__(self, app: ASGIApp, limiter: Union[Limiter, MultiLimiter], **options: Any) -> None:
        self.app = app
        self.options: RateLimitOptions[Scope] = RateLimitOptions(limiter, **options)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        o = self.options
        if o.skip is not None and await resolve(o.skip(scope)):
            await self.app(scope, receive, send)
            return
        try:
            if o.key_func is not None:
                key = await resolve(o.key_func(scope))
            else:
                client = scope.get("client")
                key = o.identity.key(client[0] if client else "", scope.get("headers"))
            cost = 1 if o.cost_func is None else await resolve(o.cost_func(scope))
            result = await o.limiter.check(key, cost)
        except ThrottleKitError as err:
            await _answer(send, o.failed(err))
            return
        verdict = o.verdict(result, key, scope.get("method", ""), scope.get("path", ""))
        if verdict.forward:
            await self.app(scope, receive, _adding(send, verdict.headers))
        elif o.deny_response is not None:
            await o.deny_response(result.decision)(scope, receive, _adding(send, result.headers))
        else:
            await _answer(send, verdict)


def _adding(send: Send, lines: list[tuple[str, str]]) -> Send:
    """``send`` with ``lines`` appended to the response's headers."""
    if not lines:
        return send
    extra = _encoded(lines)

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *extra]}
        await send(message)

    return sending


async def _answer(send: Send, verdict: Verdict) -> None:
    headers = [*_encoded(verdict.headers), (b"content-length", str(len(verdict.body)).encode())]
    await send({"type": "http.response.start", "status": verdict.status, "headers": headers})
    await send({"type": "http.response.body", "body": verdict.body})


class SheddingMiddleware:
    """Sheds HTTP requests of ``app`` that ``limiter`` (an ``AdaptiveLimiter``) has no room for.

    ``partition(scope)`` names a request's partition (default none); ``timeout_ms`` makes a
    request wait that long for a permit (the awaitable ``acquire``) before it is shed.
    """

    def __init__(
        self,
        app: ASGIApp,
        limiter: AdaptiveLimiter,
        *,
        partition: Optional[Callable[[Scope], Optional[str]]] = None,
        timeout_ms: Optional[int] = None,
    ) -> None:
        self.app, self.limiter, self.partition, self.timeout_ms = app, limiter, partition, timeout_ms

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        name = None if self.partition is None else self.partition(scope)
        if self.timeout_ms is None:
            answer = self.limiter.try_acquire(name)
        else:
            answer = await self.limiter.acquire(name, timeout_ms=self.timeout_ms)
        if not isinstance(answer, Permit):
            headers = [*_encoded(shed_headers(answer)), (b"content-length", b"0")]
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        status = 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except BaseException as err:
            answer.release(shed_outcome(None, err))
            raise
        answer.release(shed_outcome(status, None))
