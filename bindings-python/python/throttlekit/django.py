"""Django: a middleware configured in ``settings.py`` and a ``@ratelimit`` view decorator.

    # settings.py
    MIDDLEWARE = [..., "throttlekit.django.RateLimitMiddleware"]
    THROTTLEKIT = {"STORE": "redis://localhost:6379/0", "RATE": "100/minute", "KEY": "ip"}

    # views.py
    from throttlekit.django import ratelimit, ratelimit_exempt

    @ratelimit("5/minute", key="user", methods=["POST"])
    def login(request): ...

The middleware reads ``THROTTLEKIT`` once, when Django builds it (``get_wsgi_application()`` /
``get_asgi_application()``), and imports the URLconf there, so a bad setting or a bad
``@ratelimit`` fails at start-up with ``ConfigInvalidError`` naming it, never at a request. It
applies ``RATE`` to every view that has no ``@ratelimit`` of its own and is not
``@ratelimit_exempt``; it screens every request with ``SAFELIST`` (never limited) and
``BLOCKLIST`` (``PermissionDenied``: Django's 403); ``DENIED_VIEW`` replaces the 429. A view
decorated with ``@ratelimit`` answers to its own limits only. Every decision, header line and problem body comes from core
through ``throttlekit.http``'s flow; the check is the limiter's blocking ``check_sync`` (on
Redis it releases the GIL while it waits; an async view's check runs in a worker thread).
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Callable, Optional, Union

from django.conf import settings  # type: ignore[import-untyped]
from django.core.exceptions import PermissionDenied  # type: ignore[import-untyped]
from django.core.signals import setting_changed  # type: ignore[import-untyped]
from django.http import HttpRequest, HttpResponse  # type: ignore[import-untyped]
from django.utils.module_loading import import_string  # type: ignore[import-untyped]

from throttlekit.http import Verdict
from throttlekit.rules import (
    FLOW_OPTIONS,
    LimitSpec,
    Rule,
    build_limiter,
    config_error,
    flow_options,
    methods_set,
    parse_limits,
    prefix_text,
    store_from_uri,
    strategy_name,
)

__all__ = ["RateLimitMiddleware", "ratelimit", "ratelimit_exempt"]

#: ``THROTTLEKIT``'s keys and their defaults. The header and identity keys are
#: ``throttlekit.http.RateLimitOptions``' options in upper case.
DEFAULTS: dict[str, Any] = {
    "STORE": "memory://",
    "STORE_OPTIONS": {},
    "PREFIX": "throttlekit",
    "STRATEGY": "gcra",
    "RATE": None,
    "KEY": "ip",
    "METHODS": None,
    "SAFELIST": [],
    "DENIED_VIEW": None,
    "BLOCKLIST": [],
    "FAMILY": "draft-10",
    "POLICY_NAME": "default",
    "PARTITION_KEY_SECRET": None,
    "TRUSTED_PROXIES": [],
    "IPV6_PREFIX": 64,
    "FORWARDED_HEADER": "x-forwarded-for",
    "FAIL_POLICY": "raise",
    "SHADOW": False,
}

KeySpec = Union[str, Callable[[HttpRequest], Optional[str]], None]


def _setting(name: str) -> str:
    return f"THROTTLEKIT['{name}']"


def _callable(spec: Any, setting: str) -> Callable[..., Any]:
    """A callable, or the dotted path of one."""
    if isinstance(spec, str):
        try:
            spec = import_string(spec)
        except ImportError as err:
            raise config_error(setting, f"cannot import {spec!r}: {err}") from err
    if not callable(spec):
        raise config_error(setting, f"{spec!r} is not callable")
    return spec


def _user_key(request: HttpRequest) -> Optional[str]:
    user = getattr(request, "user", None)
    if user is None:
        raise config_error("key 'user'", "needs django.contrib.auth's AuthenticationMiddleware")
    return f"user:{user.pk}" if user.is_authenticated else None


def _key(spec: KeySpec, setting: str) -> Optional[Callable[[HttpRequest], Optional[str]]]:
    """A request's key: ``"ip"`` (core's client identity), ``"user"`` (the signed-in user, else
    the IP), ``"header:NAME"`` (that header's value, else the IP), or a callable (or its dotted
    path) returning the key (``None``: the IP)."""
    if spec is None or spec == "ip":
        return None
    if spec == "user":
        return _user_key
    if isinstance(spec, str) and spec.startswith("header:"):
        name = spec[len("header:"):].strip()
        if not name:
            raise config_error(setting, "\"header:\" needs a header name, e.g. \"header:X-Api-Key\"")
        return lambda request: request.headers.get(name) or None
    if isinstance(spec, str) and "." not in spec:
        raise config_error(setting, f"{spec!r} is not \"ip\", \"user\", \"header:NAME\", a callable or its dotted path")
    return _callable(spec, setting)


class _Config:
    """``THROTTLEKIT``, validated: the store, the defaults of every limit, and the app-wide rule."""

    def __init__(self) -> None:
        raw = getattr(settings, "THROTTLEKIT", {})
        if not isinstance(raw, dict):
            raise config_error("THROTTLEKIT", "a dict such as {\"STORE\": \"memory://\", \"RATE\": \"100/minute\"}")
        unknown = sorted(set(raw) - set(DEFAULTS))
        if unknown:
            raise config_error(_setting(unknown[0]), f"unknown setting (known: {', '.join(DEFAULTS)})")
        c = {**DEFAULTS, **raw}
        self.store = store_from_uri(c["STORE"], _setting("STORE"), c["STORE_OPTIONS"], _setting("STORE_OPTIONS"))
        self.prefix = prefix_text(c["PREFIX"], _setting("PREFIX"))
        self.strategy = strategy_name(c["STRATEGY"], _setting("STRATEGY"))
        self.key = _key(c["KEY"], _setting("KEY"))
        self.options = flow_options({name: c[name.upper()] for name in FLOW_OPTIONS},
                                    lambda name: _setting(name.upper()))
        self.safelist = [_callable(f, f"{_setting('SAFELIST')}[{i}]") for i, f in enumerate(_list(c, "SAFELIST"))]
        self.blocklist = [_callable(f, f"{_setting('BLOCKLIST')}[{i}]") for i, f in enumerate(_list(c, "BLOCKLIST"))]
        self.denied_view = None if c["DENIED_VIEW"] is None else _callable(c["DENIED_VIEW"], _setting("DENIED_VIEW"))
        self.rule: Optional[Rule] = None
        if c["RATE"] is not None:
            self.rule = self.build(c["RATE"], strategy=None, key=self.key,
                                   methods=methods_set(c["METHODS"], _setting("METHODS")),
                                   prefix=self.prefix, setting=_setting("RATE"))

    def build(self, rate: LimitSpec, *, strategy: Optional[str], key: Any, methods: Any, prefix: str,
              setting: str, cost: Any = 1, **options: Any) -> Rule:
        """A rule on the configured store, with the configured options unless overridden."""
        limits = parse_limits(rate, strategy or self.strategy, setting)
        limiter = build_limiter(limits, store=self.store, prefix=prefix, setting=setting)
        try:
            return Rule(limiter, methods=methods, key=key, cost=cost, **{**self.options, **options})
        except (ValueError, TypeError) as err:
            raise config_error(setting, str(err)) from err

    def screen(self, request: HttpRequest) -> bool:
        """True when ``SAFELIST`` lets the request through unlimited; raises ``PermissionDenied``
        when ``BLOCKLIST`` refuses it. Judged once per request."""
        verdict = getattr(request, "_throttlekit_safe", None)
        if verdict is None:
            if any(f(request) for f in self.blocklist):
                raise PermissionDenied("blocklisted")
            verdict = any(f(request) for f in self.safelist)
            request._throttlekit_safe = verdict  # type: ignore[attr-defined]
        return bool(verdict)


def _list(c: dict[str, Any], name: str) -> list[Any]:
    value = c[name]
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise config_error(_setting(name), "a list of callables or their dotted paths")
    return list(value)


_config_cache: list[_Config] = []


def _config() -> _Config:
    """The validated ``THROTTLEKIT`` (built once; again after a test changes the setting)."""
    if not _config_cache:
        _config_cache.append(_Config())
    return _config_cache[0]


def _forget(*, setting: str, **kwargs: Any) -> None:
    if setting == "THROTTLEKIT":
        _config_cache.clear()


setting_changed.connect(_forget)


def _response(verdict: Verdict) -> HttpResponse:
    """The 429, 503 or 500 core's flow answered, as a Django response."""
    response = HttpResponse(verdict.body, status=verdict.status)
    for name, value in verdict.headers:
        response[name] = value
    return response


def _add_fields(response: HttpResponse, lines: list[tuple[str, str]]) -> None:
    """Adds the rate-limit lines a response does not carry yet: with stacked limits, the one
    nearest the view speaks (a denial stops the request there)."""
    for name, value in lines:
        if name not in response:
            response[name] = value


def _answer(conf: _Config, rule: Rule, request: HttpRequest) -> Union[HttpResponse, list[tuple[str, str]]]:
    """The denial to send (``DENIED_VIEW``'s for a 429, with the fields added), or the lines
    to add to the view's response."""
    if not rule.counts(request.method or ""):
        return []
    verdict = rule.check(request.META, request)
    if verdict.forward:
        return verdict.headers
    if verdict.status == 429 and conf.denied_view is not None and verdict.result is not None:
        response = conf.denied_view(request, verdict.result.decision)
        _add_fields(response, verdict.result.headers)
        return response
    return _response(verdict)


def _view_name(view: Any) -> str:
    """The dotted name of a view: its function's, its class's (``as_view()``), or, for a
    method that ``method_decorator`` hands over bound, its class's and the method's."""
    bound = getattr(view, "func", None)
    owner = getattr(bound, "__self__", None)
    if owner is not None:
        cls = type(owner)
        return f"{cls.__module__}.{cls.__qualname__}.{getattr(bound, '__name__', '')}"
    target = getattr(view, "view_class", view)
    return f"{target.__module__}.{target.__qualname__}"


def ratelimit(rate: LimitSpec, *, key: KeySpec = "ip", methods: Optional[list[str]] = None,
              group: Optional[str] = None, strategy: Optional[str] = None,
              cost: Union[int, Callable[[HttpRequest], int]] = 1, **options: Any) -> Callable[[Any], Any]:
    """Limits a view (a function, or a class-based view's method through ``method_decorator``).

    - ``rate``: a limit string (``"5/minute"``, ``"5/minute;100/day"``) or a ``Strategy``;
    - ``key``: ``"ip"``, ``"user"``, ``"header:NAME"``, or a callable ``(request) -> str``;
    - ``methods``: the methods it counts (default every method);
    - ``group``: the counter's name (default the view's dotted name, with the class and the
      method for a class-based view, and ``#1``, ``#2``... for the decorators stacked above
      the first): views with one group share a counter;
    - ``strategy``: the limit string's strategy (default ``THROTTLEKIT['STRATEGY']``);
    - ``cost``: an int or ``(request) -> int``;
    - ``options``: ``RateLimitOptions`` options (``policy_name``, ``family``, ...) that replace
      ``THROTTLEKIT``'s for this limit.

    Stacked decorators each count the request; the response carries the fields of the one
    nearest the view, or of the one that denied. Bad arguments raise ``ConfigInvalidError``
    when the decorator is applied (the middleware imports the URLconf at start-up).
    """
    conf = _config()
    rule_key = _key(key, "key")
    rule_methods = methods_set(methods, "methods")
    if not callable(cost) and (not isinstance(cost, int) or isinstance(cost, bool)):
        raise config_error("cost", "an int or a callable (request) -> int")
    if group is not None and (not isinstance(group, str) or not group):
        raise config_error("group", "a non-empty string")
    if strategy is not None:
        strategy_name(strategy, "strategy")

    rules: dict[str, Rule] = {}

    def decorate(view: Any) -> Any:
        # method_decorator applies this once when the class is made and again at each request,
        # to the bound method: one rule per name, built at the first.
        # Stacked on one view, each decorator counts under a name of its own.
        depth = getattr(view, "throttlekit_depth", -1) + 1
        name = group or (_view_name(view) + (f"#{depth}" if depth else ""))
        rule = rules.get(name)
        if rule is None:
            rule = rules.setdefault(name, conf.build(rate, strategy=strategy, key=rule_key, methods=rule_methods,
                                                     prefix=f"{conf.prefix}:{name}", setting="rate", cost=cost,
                                                     **options))

        def limited(request: HttpRequest) -> Union[HttpResponse, list[tuple[str, str]]]:
            if conf.screen(request):
                return []
            return _answer(conf, rule, request)

        if asyncio.iscoroutinefunction(view):
            from asgiref.sync import sync_to_async

            check = sync_to_async(limited, thread_sensitive=False)

            @functools.wraps(view)
            async def wrapped_async(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
                answer = await check(request)
                if isinstance(answer, HttpResponse):
                    return answer
                response = await view(request, *args, **kwargs)
                _add_fields(response, answer)
                return response

            wrapped_async.throttlekit_limited = True  # type: ignore[attr-defined]
            wrapped_async.throttlekit_depth = depth  # type: ignore[attr-defined]
            return wrapped_async

        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            answer = limited(request)
            if isinstance(answer, HttpResponse):
                return answer
            response = view(request, *args, **kwargs)
            _add_fields(response, answer)
            return response

        wrapped.throttlekit_limited = True  # type: ignore[attr-defined]
        wrapped.throttlekit_depth = depth  # type: ignore[attr-defined]
        return wrapped

    return decorate


def ratelimit_exempt(view: Any) -> Any:
    """Leaves a view out of the middleware's app-wide ``RATE`` (``BLOCKLIST`` still applies).
    On a class-based view, decorate ``dispatch`` (``method_decorator(ratelimit_exempt,
    name="dispatch")``): Django copies its attributes to the view ``as_view()`` returns."""
    if asyncio.iscoroutinefunction(view):
        @functools.wraps(view)
        async def exempt_async(*args: Any, **kwargs: Any) -> Any:
            return await view(*args, **kwargs)

        exempt_async.throttlekit_exempt = True  # type: ignore[attr-defined]
        return exempt_async

    @functools.wraps(view)
    def exempt(*args: Any, **kwargs: Any) -> Any:
        return view(*args, **kwargs)

    exempt.throttlekit_exempt = True  # type: ignore[attr-defined]
    return exempt


class RateLimitMiddleware:
    """Applies ``THROTTLEKIT``: ``SAFELIST``/``BLOCKLIST`` to every view, ``RATE`` to every view
    without limits of its own (``process_view``, so it knows the view; unresolved URLs pass)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.conf = _config()
        if getattr(settings, "ROOT_URLCONF", None):
            from django.urls import get_resolver  # type: ignore[import-untyped]

            get_resolver().url_patterns  # noqa: B018 - imports the views: their @ratelimit is built now

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        lines = getattr(request, "_throttlekit_fields", None)
        if lines:
            _add_fields(response, lines)
        return response

    def process_view(self, request: HttpRequest, view: Any, args: Any, kwargs: Any) -> Optional[HttpResponse]:
        rule = self.conf.rule
        if self.conf.screen(request) or rule is None:
            return None
        if getattr(view, "throttlekit_exempt", False) or getattr(view, "throttlekit_limited", False):
            return None
        answer = _answer(self.conf, rule, request)
        if isinstance(answer, HttpResponse):
            return answer
        request._throttlekit_fields = answer  # type: ignore[attr-defined]
        return None
