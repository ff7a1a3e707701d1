"""WSGI middleware (Flask, Django, any WSGI app).

    from throttlekit.wsgi import RateLimitMiddleware
    app.wsgi_app = RateLimitMiddleware(app.wsgi_app, limiter)         # Flask
    application = RateLimitMiddleware(get_wsgi_application(), limiter)  # Django's wsgi.py

Each request is checked with the limiter's blocking ``check_sync`` (a WSGI worker handles one
request at a time; on Redis the call releases the GIL while it waits). Admitted requests get the
rate-limit fields on their response; denied ones get a ``429`` with the fields,
``Retry-After`` and core's RFC 9457 body. The options are ``throttlekit.http.RateLimitOptions``';
``key_func``, ``cost_func`` and ``skip`` receive the WSGI environ.

``SheddingMiddleware(app, adaptive_limiter)`` sheds load instead: each request holds a permit of
an ``AdaptiveLimiter`` until its response is closed, and a refused one is answered ``503`` with
``Retry-After`` (``throttlekit.http.shed_outcome`` says how a permit is released).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from http import HTTPStatus
from typing import Any, Callable, Optional, Union

from throttlekit._throttlekit import AdaptiveLimiter, Limiter, MultiLimiter, Permit, ThrottleKitError
from throttlekit.http import RateLimitOptions, Verdict, shed_headers, shed_outcome

__all__ = ["RateLimitMiddleware", "SheddingMiddleware"]

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
WSGIApp = Callable[[Environ, StartResponse], Iterable[bytes]]

# The forwarding headers core may read, as WSGI names them. A server joins repeated lines
# with commas, which is how core reads them too.
_FORWARDING = (("HTTP_X_FORWARDED_FOR", "X-Forwarded-For"), ("HTTP_FORWARDED", "Forwarded"))


def _status_line(status: int) -> str:
    return f"{status} {HTTPStatus(status).phrase}"


class RateLimitMiddleware:
    """Rate-limits every request of the WSGI application ``app``."""

    def __init__(self, app: WSGIApp, limiter: Union[Limiter, MultiLimiter], **options: Any) -> None:
        self.app = app
        self.options: RateLimitOptions[Environ] = RateLimitOptions(limiter, **options)

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        o = self.options
        if o.skip is not None and o.skip(environ):
            return self.app(environ, start_response)
        key: Any  # what key_func returns: a str, or a list of str for a multi limiter
        try:
            if o.key_func is not None:
                key = o.key_func(environ)
            else:
                headers = [(name, environ[var]) for var, name in _FORWARDING if var in environ]
                key = o.identity.key(environ.get("REMOTE_ADDR", ""), headers)
            cost: Any = 1 if o.cost_func is None else o.cost_func(environ)
            result = o.limiter.check_sync(key, cost)
        except ThrottleKitError as err:
            return _answer(start_response, o.failed(err))
        verdict = o.verdict(result, key, environ.get("REQUEST_METHOD", ""), environ.get("PATH_INFO", ""))
        if verdict.forward:
            return self.app(environ, _adding(start_response, verdict.headers))
        if o.deny_response is not None:
            return o.deny_response(result.decision)(environ, _adding(start_response, result.headers))
        return _answer(start_response, verdict)


def _adding(start_response: StartResponse, lines: list[tuple[str, str]]) -> StartResponse:
    if not lines:
        return start_response

    def starting(status: str, headers: list[tuple[str, str]], exc_info: Optional[Any] = None) -> Any:
        return start_response(status, [*headers, *lines], exc_info)

    return starting


def _answer(start_response: StartResponse, verdict: Verdict) -> list[bytes]:
    headers = [*verdict.headers, ("Content-Length", str(len(verdict.body)))]
    start_response(_status_line(verdict.status), headers)
    return [verdict.body]


class SheddingMiddleware:
    """Sheds requests of the WSGI application ``app`` that ``limiter`` (an ``AdaptiveLimiter``)
    has no room for.

    ``partition(environ)`` names a request's partition (default none); ``timeout_ms`` makes a
    request wait that long for a permit (``acquire_sync``, the GIL released) before it is shed.
    The permit is held until the server closes the response, so streaming bodies count.
    """

    def __init__(
        self,
        app: WSGIApp,
        limiter: AdaptiveLimiter,
        *,
        partition: Optional[Callable[[Environ], Optional[str]]] = None,
        timeout_ms: Optional[int] = None,
    ) -> None:
        self.app, self.limiter, self.partition, self.timeout_ms = app, limiter, partition, timeout_ms

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        name = None if self.partition is None else self.partition(environ)
        if self.timeout_ms is None:
            answer = self.limiter.try_acquire(name)
        else:
            answer = self.limiter.acquire_sync(name, timeout_ms=self.timeout_ms)
        if not isinstance(answer, Permit):
            start_response(_status_line(503), [*shed_headers(answer), ("Content-Length", "0")])
            return [b""]
        held = _Held(answer)

        def starting(status: str, headers: list[tuple[str, str]], exc_info: Optional[Any] = None) -> Any:
            held.status = int(status.split(" ", 1)[0])
            return start_response(status, headers, exc_info)

        try:
            held.body = self.app(environ, starting)
        except BaseException as err:
            answer.release(shed_outcome(None, err))
            raise
        return held


class _Held:
    """A response body that releases its request's permit when the server closes it."""

    def __init__(self, permit: Permit) -> None:
        self.permit = permit
        self.status = 0
        self.body: Optional[Iterable[bytes]] = None
        self.error: Optional[BaseException] = None

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self.body or ()
        except BaseException as err:
            self.error = err
            raise

    def close(self) -> None:
        try:
            close = getattr(self.body, "close", None)
            if close is not None:
                close()
        finally:
            self.permit.release(shed_outcome(self.status, self.error))
