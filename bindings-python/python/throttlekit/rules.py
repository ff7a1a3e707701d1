"""What the Django and Flask integrations (``throttlekit.django``, ``throttlekit.flask``) share:
limit strings, store URIs, strategy names, and one limit's check of a request.

A *limit* is written as Flask-Limiter and django-ratelimit users write it: ``"10/second"``,
``"10 per second"``, ``"100/5minutes"``, ``"1 per 5 minutes"``, several joined by ``;``
(``"5/minute;100/day"``: every one applies, and a request counts against all of them only if
all admit it, core's multi rule ``all``). A ``throttlekit.Strategy`` (or its spec dict) is
taken as it is, for the strategies a count per period cannot describe (token bucket, quota).
Core reads the string (``Strategy.from_rates``, the same reader every language uses) and
validates it: a count of 0 is core's ``config_invalid``. Months and years are not fixed
durations: a ``quota`` strategy says what one means.

Every decision and header line comes from core through ``throttlekit.http``'s flow
(``RateLimitOptions.verdict``): nothing here formats a field or does arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Callable, Optional, Union

from throttlekit._throttlekit import (
    ConfigInvalidError,
    Dimension,
    Limiter,
    MemoryStore,
    MultiLimiter,
    Strategy,
    ThrottleKitError,
)
from throttlekit.http import RateLimitOptions, Verdict
from throttlekit.wsgi import _FORWARDING

__all__ = ["FLOW_OPTIONS", "STRATEGIES", "Rule", "build_limiter", "config_error", "flow_options", "methods_set",
           "parse_limits", "prefix_text", "store_from_uri", "strategy_name"]

#: The strategy names a limit string may be read with (core's ``RateStrategy`` names). Token
#: bucket and quota take other parameters than a count per period: pass a ``Strategy``.
STRATEGIES = ("gcra", "fixed-window", "sliding-window", "sliding-window-log")

StrategyLike = Union[Strategy, dict[str, Any]]
LimitSpec = Union[str, StrategyLike]
Store = Any  # a MemoryStore or a RedisStore


def config_error(setting: str, message: str) -> ConfigInvalidError:
    """A ``config_invalid`` error that names the setting it is about."""
    return ConfigInvalidError(f"{setting}: {message}")


def parse_limits(limit: LimitSpec, strategy: str = "gcra", setting: str = "limit") -> list[tuple[str, Strategy]]:
    """The ``(name, Strategy)`` of each limit in ``limit``: a limit string (one or several,
    joined by ``;``) read with ``strategy`` (one of ``STRATEGIES``: a GCRA limit of N per
    period has a burst of N), or a ``Strategy`` / spec dict taken as it is (named ``""``).
    Errors are ``config_invalid`` and name ``setting``."""
    if isinstance(limit, Strategy):
        return [("", limit)]
    if isinstance(limit, dict):
        try:
            return [("", Strategy.from_dict(limit))]
        except ThrottleKitError as err:
            raise config_error(setting, str(err)) from err
    if not isinstance(limit, str):
        raise config_error(setting, f"a limit string such as \"10/second\" or a Strategy, not {type(limit).__name__}")
    if not isinstance(strategy, str):
        raise config_error(setting, f"a strategy name ({', '.join(STRATEGIES)}), not {type(strategy).__name__}")
    try:
        # Core reads the rates, so every language takes exactly the same strings.
        return Strategy.from_rates(limit, strategy)
    except ThrottleKitError as err:
        raise config_error(setting, str(err)) from err


def build_limiter(limits: Sequence[tuple[str, Strategy]], *, store: Store, prefix: str,
                  setting: str = "limit") -> Union[Limiter, MultiLimiter]:
    """One ``Limiter`` for one limit; a ``MultiLimiter`` (rule ``all``, one dimension per
    limit, named as written, or ``limit<i>`` for a ``Strategy``) for several."""
    try:
        if len(limits) == 1:
            return Limiter(limits[0][1], store=store, prefix=prefix)
        return MultiLimiter("all", [Dimension(name or f"limit{i}", strategy)
                                   for i, (name, strategy) in enumerate(limits)], store=store,
                            prefix=prefix)
    except ThrottleKitError as err:
        raise config_error(setting, str(err)) from err


def store_from_uri(uri: Union[str, Sequence[str], None], setting: str = "store",
                   options: Optional[dict[str, Any]] = None, options_setting: str = "store options") -> Store:
    """The store a URI names: ``memory://`` (the default), or ``redis://`` / ``rediss://``
    (a list of them for a cluster's seeds or Sentinel's sentinels), with ``options`` passed to
    ``RedisStore`` (``mode``, ``timeout_ms``, ``tls_ca_file``, ...)."""
    if options is not None and not isinstance(options, dict):
        raise config_error(options_setting, "a dict of store options, such as {\"timeout_ms\": 500}")
    options = dict(options or {})
    if uri is None or uri == "memory://":
        try:
            return MemoryStore(**options)
        except (ThrottleKitError, TypeError) as err:
            raise config_error(setting, str(err)) from err
    urls = [uri] if isinstance(uri, str) else list(uri) if isinstance(uri, (list, tuple)) else None
    if not urls or not all(isinstance(u, str) and u.startswith(("redis://", "rediss://")) for u in urls):
        raise config_error(setting, f"{uri!r} is not \"memory://\" or a redis:// or rediss:// URL (or a list of them)")
    try:
        from throttlekit._throttlekit import RedisStore
    except ImportError as err:  # pragma: no cover - only in builds without the `redis` feature
        raise config_error(setting, "this build of throttlekit has no Redis store") from err
    try:
        return RedisStore(urls if len(urls) > 1 else urls[0], **options)
    except (ThrottleKitError, TypeError) as err:
        raise config_error(setting, str(err)) from err


#: ``throttlekit.http.RateLimitOptions``' options that the integrations take from their
#: configuration (the callables are the integrations' own).
FLOW_OPTIONS = ("family", "policy_name", "partition_key_secret", "trusted_proxies", "ipv6_prefix",
                "forwarded_header", "fail_policy", "shadow")


def flow_options(values: dict[str, Any], setting: Callable[[str], str]) -> dict[str, Any]:
    """``values`` (``FLOW_OPTIONS``' values), each checked alone by the flow, so that an error
    names its own setting (``setting(option)``)."""
    for name, value in values.items():
        try:
            RateLimitOptions(Limiter(Strategy.gcra(1, 1000)), **{name: value})
        except (ValueError, TypeError) as err:
            raise config_error(setting(name), str(err)) from err
    return values


def strategy_name(name: Any, setting: str) -> str:
    """``name``, if limit strings can be read with it (one of ``STRATEGIES``)."""
    if name not in STRATEGIES:
        raise config_error(setting, f"unknown strategy {name!r} (one of {', '.join(STRATEGIES)}; "
                           "pass a Strategy as the limit for the others)")
    return str(name)


def prefix_text(prefix: Any, setting: str) -> str:
    if not isinstance(prefix, str):
        raise config_error(setting, "a string")
    return prefix


def methods_set(methods: Optional[Iterable[str]], setting: str = "methods") -> Optional[frozenset[str]]:
    """The upper-cased HTTP methods a limit counts (``None``: every method)."""
    if methods is None:
        return None
    if isinstance(methods, str) or not all(isinstance(m, str) and m for m in methods):
        raise config_error(setting, "a list of HTTP method names such as [\"POST\"]")
    return frozenset(m.upper() for m in methods)


class Rule:
    """One limit as an integration applies it: the shared flow's options over a limiter, the
    methods it counts, how it keys a request and what it costs.

    ``key(req)`` returns the key (``None``: the client IP, from the WSGI-style ``environ``
    through core's client identity); ``cost`` is an int or ``cost(req)``. ``req`` is whatever
    the integration hands its callables (Django's ``HttpRequest``; nothing for Flask's, which
    read ``flask.request``).
    """

    __slots__ = ("options", "methods", "key", "cost")

    def __init__(self, limiter: Union[Limiter, MultiLimiter], *, methods: Optional[frozenset[str]] = None,
                 key: Optional[Callable[[Any], Optional[str]]] = None,
                 cost: Union[int, Callable[[Any], int]] = 1, **options: Any) -> None:
        self.options: RateLimitOptions[Any] = RateLimitOptions(limiter, **options)
        self.methods = methods
        self.key = key
        self.cost = cost

    def counts(self, method: str) -> bool:
        return self.methods is None or method.upper() in self.methods

    def check(self, environ: dict[str, Any], req: Any) -> Verdict:
        """Checks one request: forward with the fields, or the 429/503/500 to send."""
        o = self.options
        key: Any
        try:
            key = self.key(req) if self.key is not None else None
            if key is None:
                headers = [(name, environ[var]) for var, name in _FORWARDING if var in environ]
                key = o.identity.key(environ.get("REMOTE_ADDR", ""), headers)
            cost = self.cost(req) if callable(self.cost) else self.cost
            result = o.limiter.check_sync(key, cost)
        except ThrottleKitError as err:
            return o.failed(err)
        return o.verdict(result, key, environ.get("REQUEST_METHOD", ""), environ.get("PATH_INFO", ""))


def fields(verdict: Verdict) -> list[tuple[str, str]]:
    """The rate-limit lines of a verdict (without its Content-Type)."""
    return verdict.result.headers if verdict.result is not None else []
