"""throttlekit.flask on a real server (werkzeug's WSGI server, httpx over TCP): ``Limiter(app)``
and ``init_app`` with ``app.config``, ``@limiter.limit`` (keys, method filter, stacked, scopes,
several limits, MethodView), default limits, exemption, request filters and the blocklist, a
custom 429 handler, the fail policy with Redis stopped, and bad options refused at start-up."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask, jsonify, request
from flask.views import MethodView

import throttlekit as tk
from conftest import RedisServer
from http_checks import FAIL_POLICIES, assert_fail_policy, members, spend
from servers import serve
from throttlekit.flask import Limiter, RateLimitExceeded




def app_with(limiter: Limiter, routes: dict[str, Any], app: Flask | None = None) -> Flask:
    """``app`` (a new one by default) with a view returning "ok" for each of ``routes``, each
    wrapped in the decorators listed for it (outermost first)."""
    app = app or Flask(__name__)
    for rule, decorators in routes.items():
        def view() -> str:
            return "ok"
        for decorator in reversed(decorators):
            view = decorator(view)
        app.add_url_rule(rule, rule.strip("/") or "root", view, methods=["GET", "POST"])
    if "throttlekit" not in app.extensions:
        limiter.init_app(app)
    return app


def test_a_limit_sends_cores_fields_and_a_problem_on_denial() -> None:
    limiter = Limiter()
    app = app_with(limiter, {"/limited": [limiter.limit("5/minute")], "/healthz": [limiter.exempt]})
    with serve("wsgi", app) as client:
        for want_r in (4, 3, 2, 1, 0):
            r = client.get("/limited")
            assert r.status_code == 200 and members(r) == [("default", want_r)]
            assert r.headers["ratelimit-policy"] == '"default";q=5;w=60' and "retry-after" not in r.headers
        denied = client.get("/limited")
        assert denied.status_code == 429 and int(denied.headers["retry-after"]) >= 1
        assert denied.headers["content-type"] == "application/problem+json"
        assert denied.json()["status"] == 429 and members(denied) == [("default", 0)]
        assert client.get("/limited", headers={"X-Forwarded-For": "203.0.113.9"}).status_code == 429
        health = client.get("/healthz")
        assert health.status_code == 200 and "ratelimit" not in health.headers


def test_default_limits_count_each_endpoint_apart_and_a_views_own_limit_replaces_them() -> None:
    limiter = Limiter(default_limits=["2/minute", "10/hour"])
    app = app_with(limiter, {"/a": [], "/b": [], "/own": [limiter.limit("3/minute")], "/free": [limiter.exempt]})
    with serve("wsgi", app) as client:
        first = client.get("/a")
        assert members(first) == [("2/minute", 1), ("10/hour", 9)]  # one limiter, binding first
        assert spend(client, "/a", 2) == [200, 429]
        assert spend(client, "/b", 3) == [200, 200, 429]
        assert spend(client, "/own", 4) == [200, 200, 200, 429]
        assert spend(client, "/free", 4) == [200] * 4
        assert spend(client, "/nowhere", 3) == [404] * 3


def test_trusted_proxies_let_the_forwarded_client_be_the_key() -> None:
    limiter = Limiter(trusted_proxies=["127.0.0.1"])
    app = app_with(limiter, {"/a": [limiter.limit("1/minute")]})
    with serve("wsgi", app) as client:
        for hop in ("203.0.113.1", "203.0.113.2"):
            assert spend(client, "/a", 2, headers={"X-Forwarded-For": hop}) == [200, 429]


def test_keys_methods_and_costs() -> None:
    limiter = Limiter(key_func=lambda: request.headers.get("X-Api-Key", "anonymous"))
    app = app_with(limiter, {
        "/by-key": [limiter.limit("1/minute")],
        "/by-tenant": [limiter.limit("1/minute", key_func=lambda: request.args["tenant"])],
        "/posts": [limiter.limit("1/minute", methods=["post"])],
        "/costly": [limiter.limit("5/minute", cost=lambda: int(request.args.get("cost", "1")))],
    })
    with serve("wsgi", app) as client:
        assert spend(client, "/by-key", 2, headers={"X-Api-Key": "a"}) == [200, 429]
        assert spend(client, "/by-key", 2, headers={"X-Api-Key": "b"}) == [200, 429]
        assert spend(client, "/by-tenant?tenant=x", 2) == [200, 429]
        assert spend(client, "/by-tenant?tenant=y", 2) == [200, 429]
        gets = [client.get("/posts") for _ in range(3)]
        assert [r.status_code for r in gets] == [200] * 3 and all("ratelimit" not in r.headers for r in gets)
        assert [client.post("/posts").status_code for _ in range(2)] == [200, 429]
        r = client.get("/costly?cost=3")
        assert r.status_code == 200 and members(r) == [("default", 2)]
        assert client.get("/costly?cost=3").status_code == 429


def test_stacked_limits_each_count_and_the_nearest_speaks() -> None:
    limiter = Limiter()
    app = app_with(limiter, {"/v": [limiter.limit("2/minute", scope="outer"),
                                    limiter.limit("3/minute", key_func=lambda: request.headers["X-Api-Key"])]})
    with serve("wsgi", app) as client:
        first = client.get("/v", headers={"X-Api-Key": "k"})
        assert first.status_code == 200 and members(first) == [("default", 2)]
        second = client.get("/v", headers={"X-Api-Key": "other"})
        assert second.status_code == 200 and members(second) == [("default", 2)]
        denied = client.get("/v", headers={"X-Api-Key": "k"})  # the outer (by IP) is spent
        assert denied.status_code == 429 and members(denied) == [("default", 0)]
    # Two limits of one view on one key: two counters, not one counted twice.
    other = Limiter()
    same = other.limit("3/minute")
    twice = app_with(other, {"/twice": [same, same], "/two": [other.limit("3/minute"), other.limit("3/minute")]})
    with serve("wsgi", twice) as client:
        assert spend(client, "/twice", 4) == [200, 200, 200, 429]
        assert spend(client, "/two", 4) == [200, 200, 200, 429]


def test_a_scope_shares_one_counter_between_views() -> None:
    limiter = Limiter()
    shared = limiter.limit("2/minute", scope="shared")
    app = app_with(limiter, {"/a": [shared], "/b": [shared], "/c": [limiter.limit("2/minute", scope="shared")]})
    with serve("wsgi", app) as client:
        assert [client.get(u).status_code for u in ("/a", "/b", "/c")] == [200, 200, 429]


class Items(MethodView):
    init_every_request = False

    def get(self) -> str:
        return "items"

    def post(self) -> str:
        return "created"


def test_method_views_take_limits_in_decorators() -> None:
    limiter = Limiter(default_limits=["1/minute"])
    app = Flask(__name__)
    limited = type("LimitedItems", (Items,), {"decorators": [limiter.limit("2/minute")]})
    app.add_url_rule("/items", view_func=limited.as_view("items"))
    app.add_url_rule("/plain", view_func=Items.as_view("plain"))
    limiter.init_app(app)
    with serve("wsgi", app) as client:
        assert [client.get("/items").status_code, client.post("/items").status_code,
                client.get("/items").status_code] == [200, 200, 429]
        assert spend(client, "/plain", 2) == [200, 429]  # the default limit


def test_request_filters_and_the_blocklist() -> None:
    limiter = Limiter(default_limits=["1/minute"])

    @limiter.request_filter
    def internal() -> bool:
        return request.headers.get("X-Internal") == "yes"

    @limiter.blocklist
    def banned() -> bool:
        return request.headers.get("X-Banned") == "yes"

    app = app_with(limiter, {"/app": [], "/own": [limiter.limit("1/minute")], "/free": [limiter.exempt]})

    @app.errorhandler(403)
    def forbidden(e: Exception) -> Any:
        return jsonify(error="blocked"), 403

    with serve("wsgi", app) as client:
        for url in ("/app", "/own"):
            safe = [client.get(url, headers={"X-Internal": "yes"}) for _ in range(3)]
            assert [r.status_code for r in safe] == [200] * 3 and all("ratelimit" not in r.headers for r in safe)
            assert spend(client, url, 2) == [200, 429]
        for url in ("/app", "/own", "/free"):
            refused = client.get(url, headers={"X-Banned": "yes", "X-Internal": "yes"})
            assert refused.status_code == 403 and refused.json() == {"error": "blocked"}


def test_a_custom_429_handler_keeps_the_fields() -> None:
    limiter = Limiter()
    app = app_with(limiter, {"/limited": [limiter.limit("1/minute")]})
    seen: list[Any] = []

    @app.errorhandler(429)
    def too_many(e: RateLimitExceeded) -> Any:
        seen.append(e.decision)
        return jsonify(error="slow down"), 429

    with serve("wsgi", app) as client:
        assert client.get("/limited").status_code == 200
        denied = client.get("/limited")
        assert denied.status_code == 429 and denied.json() == {"error": "slow down"}
        assert members(denied) == [("default", 0)] and int(denied.headers["retry-after"]) >= 1
        assert isinstance(seen[0], tk.Decision) and not seen[0].allowed


def test_an_app_factory_reads_app_config() -> None:
    limiter = Limiter()
    app = Flask(__name__)
    app.config.update(THROTTLEKIT_DEFAULT_LIMITS=["1/minute"], THROTTLEKIT_POLICY_NAME="site",
                      THROTTLEKIT_FAMILY="draft-7")
    app_with(limiter, {"/a": []}, app)
    with serve("wsgi", app) as client:
        first = client.get("/a")
        assert first.headers["ratelimit"].startswith("limit=1, remaining=0")
        assert client.get("/a").status_code == 429
    other = Flask(__name__)
    other.config.update(THROTTLEKIT_DEFAULT_LIMITS=["1/minute"], THROTTLEKIT_POLICY_NAME="site")
    app_with(Limiter(policy_name="given"), {"/a": []}, other)  # an argument wins over app.config
    with serve("wsgi", other) as client:
        assert members(client.get("/a")) == [("given", 0)]


@pytest.mark.parametrize("policy, status", FAIL_POLICIES)
def test_fail_policy_when_redis_is_down(policy: str, status: int) -> None:
    server = RedisServer()
    try:
        limiter = Limiter(storage_uri=server.url, storage_options={"timeout_ms": 300}, fail_policy=policy,
                          default_limits=["5/minute"], key_prefix=f"flask-fail-{policy}")
        app = app_with(limiter, {"/app": [], "/own": [limiter.limit("5/minute")]})
        with serve("wsgi", app) as client:
            assert_fail_policy(client, server, policy, status)
    finally:
        server.stop()


@pytest.mark.parametrize("options, config, name", [
    ({"storage_uri": "memcached://x"}, {}, "storage_uri"),
    ({}, {"THROTTLEKIT_STORAGE_URI": "mongodb://x"}, "storage_uri"),
    ({}, {"THROTTLEKIT_STORAG_URI": "memory://"}, "THROTTLEKIT_STORAG_URI"),
    ({"storage_options": 500}, {}, "storage_options"),
    ({}, {"THROTTLEKIT_KEY_PREFIX": None}, "key_prefix"),
    ({"default_limits": ["5/fortnight"]}, {}, "default_limits[0]"),
    ({"default_limits": "5/minute"}, {}, "default_limits"),
    ({"default_limits": ["5/minute", "5/minute"]}, {}, "default_limits"),
    ({"strategy": "leaky"}, {}, "strategy"),
    ({"family": "draft-99"}, {}, "family"),
    ({"trusted_proxies": ["10.0.0.0/99"]}, {}, "trusted_proxies"),
    ({"fail_policy": "ignore"}, {}, "fail_policy"),
    ({"key_func": "ip"}, {}, "key_func"),
    ({"storage_options": {"timeout": 1}, "storage_uri": "redis://127.0.0.1:1"}, {}, "storage_uri"),
])
def test_bad_options_fail_at_init_app_naming_the_option(options: dict[str, Any], config: dict[str, Any],
                                                        name: str) -> None:
    app = Flask(__name__)
    app.config.update(config)
    with pytest.raises(tk.ConfigInvalidError) as raised:
        Limiter(app, **options)
    assert raised.value.code == "config_invalid"
    assert str(raised.value).startswith(name + ":"), str(raised.value)


def test_an_unknown_argument_and_bad_limits_fail_where_they_are_written() -> None:
    with pytest.raises(tk.ConfigInvalidError, match="^storage:"):
        Limiter(storage="memory://")
    limiter = Limiter()
    for bad, name in ((lambda: limiter.limit("5 a minute"), "limit"),
                      (lambda: limiter.limit("5/minute", methods="GET"), "methods"),
                      (lambda: limiter.limit("5/minute", strategy="token-bucket"), "strategy"),
                      (lambda: limiter.limit("5/minute", cost=0.5), "cost")):
        with pytest.raises(tk.ConfigInvalidError) as raised:
            bad()
        assert str(raised.value).startswith(name + ":"), str(raised.value)
    with pytest.raises(tk.ConfigInvalidError, match='^limit: config_invalid: rate "0/minute"'):
        limiter.limit("0/minute")  # core's own check of the strategy, when the decorator is applied
    limiter.limit("5/minute;5/minute")  # two dimensions of one name: core refuses the limiter
    with pytest.raises(tk.ConfigInvalidError, match="^limit: "):
        limiter.init_app(Flask(__name__))
