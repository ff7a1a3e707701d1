"""The framework-neutral half of the HTTP middleware (``throttlekit.asgi``, ``throttlekit.fastapi``,
``throttlekit.wsgi``): the options, and what to do with one request's decision.

Every header line, client key, status and problem body comes from the Rust core through the
native module (``HttpLimiter``, ``ClientIdentity``): core's HTTP edge settles each check into an
outcome (forward, shadow, deny 429; an unavailable store is raised and answered 503 by
``failed``), and nothing here formats a field, parses an address, does arithmetic or decides
what a fail policy or shadow mode means. The option names follow the Rust tower layer's
(``docs/http.md``) in Python's spelling: ``key_func``, ``cost_func``, ``skip``, the header
options (``family``, ``policy_name``, ``partition_key_secret``), the client identity options
(``trusted_proxies``, ``ipv6_prefix``, ``forwarded_header``), ``fail_policy``, ``shadow``,
``on_limited`` and ``deny_response``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Generic, Literal, Optional, TypeVar, Union

from throttlekit._throttlekit import (
    ClientIdentity,
    Rejection,
    Decision,
    HttpDecision,
    HttpLimiter,
    MultiDecision,
    MultiLimiter,
    http_error_response,
)
from throttlekit._throttlekit import Limiter as _Limiter

__all__ = [
    "PROBLEM_CONTENT_TYPE",
    "ClientIdentity",
    "HttpDecision",
    "HttpLimiter",
    "LimitedEvent",
    "RateLimitOptions",
    "Verdict",
    "shed_headers",
    "shed_outcome",
]

#: The media type of the RFC 9457 bodies the middleware sends.
PROBLEM_CONTENT_TYPE = "application/problem+json"

Req = TypeVar("Req")
"""What the callables receive: the ASGI scope, the WSGI environ, or a Starlette ``Request``."""

MaybeAwaitable = Union[Any, Awaitable[Any]]
Family = Literal["draft-10", "draft-7", "draft-6", "legacy"]
FailPolicy = Literal["raise", "fail_open", "fail_closed"]
ForwardedHeader = Literal["x-forwarded-for", "forwarded"]


@dataclass(frozen=True)
class LimitedEvent:
    """What ``on_limited`` is told about each denied request (in shadow mode too)."""

    key: Union[str, list[str]]
    """The key(s) the request counted against."""
    decision: Union[Decision, MultiDecision]
    """The decision (a ``MultiDecision`` for a multi limiter)."""
    binding: Optional[str]
    """The binding dimension's name, for a multi limiter."""
    shadow: bool
    """True when shadow mode let the request through anyway."""
    method: str
    path: str


class Verdict:
    """What the middleware does with one request.

    ``status`` 0: forward it and add ``headers`` to the response. Otherwise answer with
    ``status``, ``headers`` and ``body`` (a 429 denial, a 503 when the store cannot answer, a 500
    when the key or cost could not be had). ``result`` is the check's, when there was one.
    (A plain slotted class: one is made per request, and a frozen dataclass costs more.)
    """

    __slots__ = ("status", "headers", "body", "result")

    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes = b"",
                 result: Optional[HttpDecision] = None) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.result = result

    @property
    def forward(self) -> bool:
        return self.status == 0


class RateLimitOptions(Generic[Req]):
    """The middleware's options, validated once (bad ones raise ``ConfigInvalidError``).

    - ``limiter``: a ``Limiter`` or a ``MultiLimiter``.
    - ``key_func(req)``: the request's key (default: the client IP from the socket peer, through
      ``trusted_proxies``); for a multi limiter a str for every dimension or a list with one per
      dimension. ``cost_func(req)``: its cost (default 1). ``skip(req)``: true to leave the
      request alone (not counted, no fields). Each may be async in the ASGI middleware.
    - ``family`` (``"draft-10"``, ``"draft-7"``, ``"draft-6"``, ``"legacy"``), ``policy_name``
      (``"default"``), ``partition_key_secret`` (draft-10's ``pk``).
    - ``trusted_proxies``, ``ipv6_prefix`` (64), ``forwarded_header`` (``"x-forwarded-for"``).
    - ``fail_policy`` when the store cannot answer: ``"raise"`` (default: 503 with a problem
      body), ``"fail_open"`` (forward, no fields) or ``"fail_closed"`` (429, ``Retry-After: 1``).
    - ``shadow``: decide, send the fields and call ``on_limited``, but never block.
    - ``on_limited(event)``: called with a ``LimitedEvent`` for every denied request.
    - ``deny_response(decision)``: replaces the 429 (an ASGI app, a WSGI app or a Starlette
      ``Response``, by middleware); the rate-limit fields are added to it.
    """

    def __init__(
        self,
        limiter: Union[_Limiter, MultiLimiter],
        *,
        key_func: Optional[Callable[[Req], MaybeAwaitable]] = None,
        cost_func: Optional[Callable[[Req], MaybeAwaitable]] = None,
        skip: Optional[Callable[[Req], MaybeAwaitable]] = None,
        family: Family = "draft-10",
        policy_name: str = "default",
        partition_key_secret: Optional[str] = None,
        trusted_proxies: Sequence[str] = (),
        ipv6_prefix: int = 64,
        forwarded_header: ForwardedHeader = "x-forwarded-for",
        fail_policy: FailPolicy = "raise",
        shadow: bool = False,
        on_limited: Optional[Callable[[LimitedEvent], Any]] = None,
        deny_response: Optional[Callable[[Union[Decision, MultiDecision]], Any]] = None,
    ) -> None:
        if not isinstance(shadow, bool):
            raise TypeError("shadow must be a bool")
        self.limiter = HttpLimiter(limiter, family=family, policy_name=policy_name,
                                   partition_key_secret=partition_key_secret, fail_policy=fail_policy,
                                   shadow=shadow)
        self.identity = ClientIdentity(trusted_proxies=list(trusted_proxies), ipv6_prefix=ipv6_prefix,
                                       forwarded_header=forwarded_header)
        for name, f in (("key_func", key_func), ("cost_func", cost_func), ("skip", skip),
                        ("on_limited", on_limited), ("deny_response", deny_response)):
            if f is not None and not callable(f):
                raise TypeError(f"{name} must be callable")
        self.key_func = key_func
        self.cost_func = cost_func
        self.skip = skip
        self.shadow = shadow
        self.on_limited = on_limited
        self.deny_response = deny_response

    def verdict(self, result: HttpDecision, key: Union[str, list[str]], method: str, path: str) -> Verdict:
        """What to do with a checked request, as core decided it (``result.action``, ``status``,
        ``body``): tell ``on_limited`` about a denial (in shadow mode too), then forward, or
        answer core's 429."""
        if result.action != "forward" and self.on_limited is not None:
            decision = result.decision
            binding = decision.binding if isinstance(decision, MultiDecision) else None
            self.on_limited(LimitedEvent(key, decision, binding, self.shadow, method, path))
        if result.status == 0:
            return Verdict(0, result.headers, result=result)
        headers = [("Content-Type", PROBLEM_CONTENT_TYPE), *result.headers]
        return Verdict(result.status, headers, result.body, result)

    @staticmethod
    def failed(err: Exception) -> Verdict:
        """The answer when no decision could be made, core's: 503 when the store could not answer
        (the fail policy was ``raise``), 500 when the key or cost was bad (``config_invalid``)."""
        status, body = http_error_response(getattr(err, "code", "internal"))
        return Verdict(status, [("Content-Type", PROBLEM_CONTENT_TYPE)], body)


async def resolve(value: MaybeAwaitable) -> Any:
    """``value``, awaited if it is awaitable (async and sync callables both work)."""
    if inspect.isawaitable(value):
        return await value
    return value


def shed_headers(rejection: Rejection) -> list[tuple[str, str]]:
    """The header lines of a shed request's ``503``: ``Retry-After`` in whole seconds (core's)."""
    return [("Retry-After", str(rejection.retry_after_secs))]


def shed_outcome(status: Optional[int], error: Optional[BaseException]) -> Literal["success", "ignore", "dropped"]:
    """How the shedding middleware releases a request's permit, the Rust tower layer's rule.

    ``503`` or ``504`` from the app, or a ``TimeoutError``, is ``dropped`` (a congestion
    signal); any other exception (a bug, a client that went away) is ``ignore``; any other
    response is ``success``, its round trip a latency sample.
    """
    if error is not None:
        return "dropped" if isinstance(error, TimeoutError) else "ignore"
    return "dropped" if status in (503, 504) else "success"
