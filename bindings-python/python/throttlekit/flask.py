"""Flask: an extension in Flask-Limiter's shape.

    from flask import Flask
    from throttlekit.flask import Limiter

    app = Flask(__name__)
    limiter = Limiter(app, default_limits=["200/day", "50/hour"], storage_uri="redis://localhost:6379")

    @app.get("/login")
    @limiter.limit("5/minute", methods=["POST"])
    def login(): ...

    @app.get("/healthz")
    @limiter.exempt
    def healthz(): ...

``Limiter(app)`` or ``Limiter()`` then ``limiter.init_app(app)`` (application factories). Each
option may also be set in ``app.config`` as ``THROTTLEKIT_<OPTION>`` (``THROTTLEKIT_STORAGE_URI``);
an argument given to ``Limiter`` wins. ``init_app`` validates everything: a bad option or limit
raises ``ConfigInvalidError`` naming it, at start-up, never at a request.

A view's own ``@limiter.limit`` decorators replace the ``default_limits`` for it; the default
limits count each endpoint apart (as Flask-Limiter's do). ``@limiter.request_filter`` functions
that return true let a request through unlimited; ``@limiter.blocklist`` functions that return
true answer 403 (``abort(403)``, so an ``errorhandler(403)`` shapes it). A denial raises
``RateLimitExceeded``, a werkzeug ``TooManyRequests`` that answers with core's problem body:
an ``@app.errorhandler(429)`` replaces that response, and the rate-limit fields are still
added to it. Every decision, header line and problem body comes from core through
``throttlekit.http``'s flow; the check is the limiter's blocking ``check_sync``.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, Optional, Union

from flask import Flask, Response, abort, current_app, g, request
from werkzeug.exceptions import TooManyRequests

from throttlekit._throttlekit import Decision, MultiDecision, Strategy
from throttlekit.http import Verdict
from throttlekit.rules import (
    FLOW_OPTIONS,
    LimitSpec,
    Rule,
    build_limiter,
    config_error,
    fields,
    flow_options,
    methods_set,
    parse_limits,
    prefix_text,
    store_from_uri,
    strategy_name,
)

__all__ = ["Limiter", "RateLimitExceeded"]

#: The options and their defaults; ``app.config["THROTTLEKIT_" + name.upper()]`` sets one.
#: The header and identity options are ``throttlekit.http.RateLimitOptions``'.
DEFAULTS: dict[str, Any] = {
    "key_func": None,
    "default_limits": [],
    "storage_uri": "memory://",
    "storage_options": {},
    "strategy": "gcra",
    "key_prefix": "throttlekit",
    "family": "draft-10",
    "policy_name": "default",
    "partition_key_secret": None,
    "trusted_proxies": [],
    "ipv6_prefix": 64,
    "forwarded_header": "x-forwarded-for",
    "fail_policy": "raise",
    "shadow": False,
}
_UNSET: Any = object()


class RateLimitExceeded(TooManyRequests):
    """A denied request: answers with core's 429 (problem body, fields, ``Retry-After``).
    ``decision`` is core's decision (a ``MultiDecision`` for ``"5/minute;100/day"``)."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(description=verdict.body.decode("utf-8", "replace"))
        self.verdict = verdict

    @property
    def decision(self) -> Union[Decision, MultiDecision, None]:
        return self.verdict.result.decision if self.verdict.result is not None else None

    def get_response(self, environ: Any = None, scope: Any = None) -> Response:  # type: ignore[override]
        return _response(self.verdict)


def _response(verdict: Verdict) -> Response:
    return Response(verdict.body, status=verdict.status, headers=verdict.headers)


def _no_args(f: Optional[Callable[[], Any]], setting: str) -> Optional[Callable[[Any], Any]]:
    """A Flask-style callable (it reads ``flask.request``) as a ``Rule`` callable."""
    if f is None:
        return None
    if not callable(f):
        raise config_error(setting, "a callable that takes no arguments (it reads flask.request)")
    return lambda _req: f()


class _Spec:
    """One ``@limiter.limit``: its arguments, checked when the decorator is applied."""

    def __init__(self, limit: LimitSpec, key_func: Any, methods: Any, scope: Optional[str],
                 cost: Any, strategy: Optional[str]) -> None:
        if strategy is not None:
            strategy_name(strategy, "strategy")
        parse_limits(limit, strategy or "gcra", "limit")  # the syntax, at import time
        if not callable(cost) and (not isinstance(cost, int) or isinstance(cost, bool)):
            raise config_error("cost", "an int or a callable that takes no arguments")
        if scope is not None and (not isinstance(scope, str) or not scope):
            raise config_error("scope", "a non-empty string")
        self.limit = limit
        self.key = _no_args(key_func, "key_func")
        self.methods = methods_set(methods, "methods")
        self.scope = scope
        self.cost = (lambda _req: cost()) if callable(cost) else cost
        self.strategy = strategy


class _State:
    """One application's limits: its store, options and rules (``app.extensions["throttlekit"]``)."""

    def __init__(self, limiter: Limiter, app: Flask) -> None:
        known = {"THROTTLEKIT_" + name.upper() for name in DEFAULTS}
        unknown = sorted(k for k in app.config if k.startswith("THROTTLEKIT_") and k not in known)
        if unknown:
            raise config_error(unknown[0], f"unknown setting (known: {', '.join(sorted(known))})")
        c = {name: given if given is not _UNSET else app.config.get("THROTTLEKIT_" + name.upper(), DEFAULTS[name])
             for name, given in limiter.given.items()}
        self.store = store_from_uri(c["storage_uri"], "storage_uri", c["storage_options"], "storage_options")
        self.prefix = prefix_text(c["key_prefix"], "key_prefix")
        self.strategy = strategy_name(c["strategy"], "strategy")
        self.key = _no_args(c["key_func"], "key_func")
        self.options = flow_options({name: c[name] for name in FLOW_OPTIONS}, lambda name: name)
        defaults = c["default_limits"]
        if isinstance(defaults, str) or not isinstance(defaults, (list, tuple)):
            raise config_error("default_limits", "a list of limits such as [\"200/day\", \"50/hour\"]")
        # All of them in one limiter: one decision, one field line with a member per limit.
        self.defaults = [limit for i, d in enumerate(defaults)
                         for limit in parse_limits(d, self.strategy, f"default_limits[{i}]")]
        if self.defaults:  # a limiter of them now, so that what core refuses is refused at start-up
            build_limiter(self.defaults, store=self.store, prefix=self.prefix, setting="default_limits")
        self.rules: dict[tuple[int, str], Rule] = {}
        self.lock = threading.Lock()

    def rule(self, limits: list[tuple[str, Strategy]], name: str, *, key: Any, methods: Any = None,
             cost: Any = 1, setting: str = "limit") -> Rule:
        limiter = build_limiter(limits, store=self.store, prefix=f"{self.prefix}:{name}", setting=setting)
        return Rule(limiter, methods=methods, key=key, cost=cost, **self.options)

    def validate(self, spec: _Spec) -> None:
        """Makes a ``@limiter.limit``'s limiter with this application's strategy and store, at
        start-up, so that what core refuses is refused then."""
        build_limiter(parse_limits(spec.limit, spec.strategy or self.strategy, "limit"), store=self.store,
                      prefix=self.prefix, setting="limit")

    def spec_rule(self, spec: _Spec, name: str) -> Rule:
        """The rule of a ``@limiter.limit`` for the endpoint (or scope) ``name``, built at its
        first request (``validate`` read the limit at start-up)."""
        found = self.rules.get((id(spec), name))
        if found is None:
            limits = parse_limits(spec.limit, spec.strategy or self.strategy, "limit")
            found = self.rule(limits, name, key=spec.key or self.key, methods=spec.methods, cost=spec.cost)
            with self.lock:
                found = self.rules.setdefault((id(spec), name), found)
        return found

    def default_rule(self, endpoint: str) -> Optional[Rule]:
        """The default limits' rule for an endpoint, counted apart from other endpoints'."""
        if not self.defaults:
            return None
        found = self.rules.get((0, endpoint))
        if found is None:
            found = self.rule(self.defaults, f"{endpoint}:default", key=self.key)
            with self.lock:
                found = self.rules.setdefault((0, endpoint), found)
        return found


class Limiter:
    """The extension. Options (each also ``app.config["THROTTLEKIT_<OPTION>"]``):

    - ``key_func()``: the request's key (default: the client IP, from the socket peer through
      ``trusted_proxies``, by core);
    - ``default_limits``: limits for every view without its own (``["200/day", "50/hour"]``);
    - ``storage_uri``: ``"memory://"`` (default) or ``"redis://..."`` / ``"rediss://..."``,
      with ``storage_options`` passed to ``RedisStore``;
    - ``strategy``: how limit strings are read: ``"gcra"`` (default), ``"fixed-window"``,
      ``"sliding-window"``, ``"sliding-window-log"``;
    - ``key_prefix``: the store keys' prefix (``"throttlekit"``);
    - ``family``, ``policy_name``, ``partition_key_secret``, ``trusted_proxies``,
      ``ipv6_prefix``, ``forwarded_header``, ``fail_policy``, ``shadow``: as
      ``throttlekit.http.RateLimitOptions``.
    """

    def __init__(self, app: Optional[Flask] = None, **options: Any) -> None:
        unknown = sorted(set(options) - set(DEFAULTS))
        if unknown:
            raise config_error(unknown[0], f"unknown option (known: {', '.join(DEFAULTS)})")
        self.given = {name: options.get(name, _UNSET) for name in DEFAULTS}
        self.specs: list[_Spec] = []
        self.states: list[_State] = []
        self.filters: list[Callable[[], Any]] = []
        self.blocks: list[Callable[[], Any]] = []
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Validates the options against ``app.config`` and hooks the limiter into ``app``."""
        state = _State(self, app)
        for spec in self.specs:
            state.validate(spec)
        app.extensions["throttlekit"] = state
        self.states.append(state)
        app.before_request(self._before_request)
        app.after_request(self._after_request)

    def limit(self, limit_value: LimitSpec, *, key_func: Optional[Callable[[], str]] = None,
              methods: Optional[list[str]] = None, scope: Optional[str] = None,
              cost: Union[int, Callable[[], int]] = 1, strategy: Optional[str] = None) -> Callable[[Any], Any]:
        """Limits a view: ``limit_value`` is a limit string (``"10/second"``,
        ``"5/minute;100/day"``) or a ``Strategy``; ``key_func()`` its key (default the
        limiter's); ``methods`` the methods it counts; ``scope`` a counter name shared by the
        views that give it (default: one per endpoint); ``cost`` an int or ``cost()``;
        ``strategy`` how the string is read (default the limiter's). Stacked decorators each
        count; the response carries the fields of the one nearest the view, or of the denial.
        On a ``MethodView``, list it in ``decorators``."""
        spec = _Spec(limit_value, key_func, methods, scope, cost, strategy)

        self.specs.append(spec)
        for state in self.states:
            state.validate(spec)

        def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
            # Stacked on one view, each decorator counts under a name of its own.
            depth = getattr(view, "throttlekit_depth", -1) + 1
            suffix = f"#{depth}" if depth else ""

            @functools.wraps(view)
            def limited(*args: Any, **kwargs: Any) -> Any:
                state = current_app.extensions["throttlekit"]
                if not self._screened(state):
                    self._apply(state.spec_rule(spec, spec.scope or f"{request.endpoint}{suffix}"))
                return current_app.ensure_sync(view)(*args, **kwargs)

            limited.throttlekit_limited = True  # type: ignore[attr-defined]
            limited.throttlekit_depth = depth  # type: ignore[attr-defined]
            return limited

        return decorate

    def exempt(self, view: Callable[..., Any]) -> Callable[..., Any]:
        """Leaves a view out of the default limits (``blocklist`` still applies)."""
        view.throttlekit_exempt = True  # type: ignore[attr-defined]
        return view

    def request_filter(self, f: Callable[[], Any]) -> Callable[[], Any]:
        """Registers ``f()``: when it returns true, the request is not limited at all."""
        self.filters.append(f)
        return f

    def blocklist(self, f: Callable[[], Any]) -> Callable[[], Any]:
        """Registers ``f()``: when it returns true, the request is refused with ``abort(403)``."""
        self.blocks.append(f)
        return f

    def _screened(self, state: _State) -> bool:
        """True when a request filter lets the request through; ``abort(403)`` when a blocklist
        function refuses it. Judged once per request."""
        safe = g.get("_throttlekit_safe")
        if safe is None:
            if any(f() for f in self.blocks):
                abort(403)
            safe = g._throttlekit_safe = any(f() for f in self.filters)
        return bool(safe)

    def _apply(self, rule: Rule) -> None:
        """Checks the request against ``rule``: notes the fields for ``_after_request``, or
        raises the denial (429) or the failure (503, 500)."""
        if not rule.counts(request.method):
            return
        verdict = rule.check(request.environ, None)
        g.setdefault("_throttlekit_fields", []).append(fields(verdict))
        if verdict.forward:
            return
        if verdict.status == 429:
            raise RateLimitExceeded(verdict)
        abort(_response(verdict))

    def _before_request(self) -> None:
        view = current_app.view_functions.get(request.endpoint) if request.endpoint else None
        state = current_app.extensions["throttlekit"]
        if view is None or self._screened(state):
            return
        if getattr(view, "throttlekit_exempt", False) or getattr(view, "throttlekit_limited", False):
            return
        rule = state.default_rule(request.endpoint)
        if rule is not None:
            self._apply(rule)

    def _after_request(self, response: Response) -> Response:
        # The last check (the one nearest the view, or the denial) speaks first.
        for lines in reversed(g.get("_throttlekit_fields", [])):
            for name, value in lines:
                if name not in response.headers:
                    response.headers[name] = value
        return response
