"""throttlekit.django on a real server: the middleware configured by ``THROTTLEKIT``, the
``@ratelimit`` decorator (key by IP, user, header or a callable; method filter; stacked; groups;
class-based and async views), exemption, the safelist and blocklist, the fail policy with Redis
stopped, and bad settings refused when the project starts (never at a request)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.utils.decorators import method_decorator
from django.views import View
from django.test.utils import override_settings

import throttlekit as tk
from conftest import RedisServer
from http_checks import FAIL_POLICIES, assert_fail_policy, members, spend
from django_apps import build, ok, served, throttlekit
from throttlekit.django import ratelimit, ratelimit_exempt




def test_the_app_wide_rate_sends_cores_fields_and_a_problem_on_denial() -> None:
    with throttlekit(RATE="5/minute"):
        with served([path("limited", ok), path("healthz", ratelimit_exempt(ok))]) as client:
            for want_r in (4, 3, 2, 1, 0):
                r = client.get("/limited")
                assert r.status_code == 200 and members(r) == [("default", want_r)]
                assert r.headers["ratelimit-policy"] == '"default";q=5;w=60'
                assert "retry-after" not in r.headers
            denied = client.get("/limited")
            assert denied.status_code == 429 and int(denied.headers["retry-after"]) >= 1
            assert denied.headers["content-type"] == "application/problem+json"
            assert denied.json()["status"] == 429 and members(denied) == [("default", 0)]
            health = client.get("/healthz")  # exempt: never limited, no fields
            assert health.status_code == 200 and "ratelimit" not in health.headers
            # A spoofed forwarding header earns no fresh bucket (no TRUSTED_PROXIES).
            assert client.get("/limited", headers={"X-Forwarded-For": "203.0.113.9"}).status_code == 429


def test_under_asgi_the_middleware_and_an_async_view_answer_the_same() -> None:
    with throttlekit(RATE="2/minute"):
        @ratelimit("1/minute")
        async def hello(request: HttpRequest) -> HttpResponse:
            return HttpResponse("hello")

        with served([path("limited", ok), path("hello", hello)], "asgi") as client:
            first = client.get("/limited")
            assert first.status_code == 200 and members(first) == [("default", 1)]
            assert spend(client, "/limited", 2) == [200, 429]
            denied = client.get("/limited")
            assert denied.headers["content-type"] == "application/problem+json" and members(denied) == [("default", 0)]
            assert spend(client, "/hello", 2) == [200, 429]


def test_trusted_proxies_let_the_forwarded_client_be_the_key() -> None:
    with throttlekit(RATE="1/minute", TRUSTED_PROXIES=["127.0.0.1"]):
        with served([path("app", ok)]) as client:
            for hop in ("203.0.113.1", "203.0.113.2"):
                assert spend(client, "/app", 2, headers={"X-Forwarded-For": hop}) == [200, 429]


def test_without_a_rate_the_middleware_limits_nothing_and_unknown_urls_pass() -> None:
    with throttlekit(RATE="1/minute"):
        with served([path("limited", ok)]) as client:
            assert spend(client, "/nowhere", 3) == [404, 404, 404]  # no view: not counted
            assert client.get("/limited").status_code == 200
    with throttlekit():
        with served([path("limited", ok)]) as client:
            assert spend(client, "/limited", 3) == [200, 200, 200]
            assert "ratelimit" not in client.get("/limited").headers


def test_decorator_keys_by_ip_header_user_or_a_callable() -> None:
    with throttlekit():  # one view function for all: a group each, or they would share a counter
        by_header = ratelimit("1/minute", key="header:X-Api-Key", group="header")(ok)
        by_user = ratelimit("1/minute", key="user", group="user")(ok)
        by_callable = ratelimit("1/minute", key=lambda request: request.GET.get("tenant"), group="callable")(ok)
        by_path = ratelimit("1/minute", key="test_http_django.tenant_key", group="dotted")(ok)
        by_ip = ratelimit("1/minute", group="ip")(ok)
        with served([path("header", by_header), path("user", by_user), path("callable", by_callable),
                     path("dotted", by_path), path("ip", by_ip)]) as client:
            assert spend(client, "/ip", 2) == [200, 429]
            # One bucket per API key; a request without one is keyed by its IP.
            assert spend(client, "/header", 2, headers={"X-Api-Key": "a"}) == [200, 429]
            assert spend(client, "/header", 2, headers={"X-Api-Key": "b"}) == [200, 429]
            assert spend(client, "/header", 2) == [200, 429]
            # One bucket per signed-in user; anonymous requests share their IP's.
            assert spend(client, "/user", 2, headers={"X-Test-User": "1"}) == [200, 429]
            assert spend(client, "/user", 2, headers={"X-Test-User": "2"}) == [200, 429]
            assert spend(client, "/user", 2) == [200, 429]
            assert spend(client, "/callable?tenant=x", 2) == [200, 429]
            assert spend(client, "/callable?tenant=y", 2) == [200, 429]
            assert spend(client, "/dotted?tenant=x", 2) == [200, 429]
            assert client.get("/dotted?tenant=z").status_code == 200


def tenant_key(request: HttpRequest) -> str:
    return "tenant:" + request.GET.get("tenant", "")


def test_the_method_filter_counts_only_the_methods_named() -> None:
    with throttlekit(RATE="1/minute", METHODS=["POST"]):
        posts_only = ratelimit("1/minute", methods=["post"])(ok)
        with served([path("posts", posts_only), path("app", ok)]) as client:
            for url in ("/posts", "/app"):
                gets = [client.get(url) for _ in range(3)]
                assert [r.status_code for r in gets] == [200, 200, 200]
                assert all("ratelimit" not in r.headers for r in gets)
                assert [client.post(url).status_code for _ in range(2)] == [200, 429]


def test_stacked_decorators_each_count_and_the_nearest_speaks() -> None:
    with throttlekit():
        view = ratelimit("2/minute", policy_name="outer")(ratelimit("3/minute", key="header:X-Api-Key",
                                                                    policy_name="inner")(ok))
        with served([path("v", view)]) as client:
            first = client.get("/v", headers={"X-Api-Key": "k"})
            assert first.status_code == 200 and members(first) == [("inner", 2)]
            second = client.get("/v", headers={"X-Api-Key": "other"})
            assert second.status_code == 200 and members(second) == [("inner", 2)]
            denied = client.get("/v", headers={"X-Api-Key": "k"})  # the outer (by IP) is spent
            assert denied.status_code == 429 and members(denied) == [("outer", 0)]
    with throttlekit():  # two limits of one view on one key: two counters, not one counted twice
        twice = ratelimit("3/minute")(ratelimit("3/minute")(ok))
        with served([path("twice", twice)]) as client:
            assert spend(client, "/twice", 4) == [200, 200, 200, 429]


def test_a_view_with_its_own_limit_is_not_under_the_app_wide_rate() -> None:
    with throttlekit(RATE="1/minute"):
        own = ratelimit("3/minute")(ok)
        with served([path("own", own), path("app", ok)]) as client:
            assert spend(client, "/own", 4) == [200, 200, 200, 429]
            assert spend(client, "/app", 2) == [200, 429]


def test_a_group_shares_one_counter_and_several_limits_send_one_member_each() -> None:
    with throttlekit():
        a = ratelimit("2/minute", group="shared")(ok)
        b = ratelimit("2/minute", group="shared")(ok)
        both = ratelimit("5/minute;2/hour")(ok)
        with served([path("a", a), path("b", b), path("both", both)]) as client:
            assert [client.get(u).status_code for u in ("/a", "/b", "/a")] == [200, 200, 429]
            r = client.get("/both")
            assert r.status_code == 200
            assert sorted(members(r)) == [("2/hour", 1), ("5/minute", 4)]
            assert members(r)[0] == ("2/hour", 1)  # the binding dimension first
            assert spend(client, "/both", 2) == [200, 429]


class Hello(View):
    def get(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse("hello")

    def post(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse("posted")


def test_class_based_views_with_method_decorator() -> None:
    # RATE is GCRA on the system clock: at 10 an hour a credit comes back every 6 minutes, so
    # RATE's count below holds however long the requests before it take (at 10 a minute, 6 s).
    with throttlekit(RATE="10/hour"):
        whole = method_decorator(ratelimit("2/minute"), name="dispatch")(type("Whole", (Hello,), {}))
        posts = type("Posts", (Hello,), {"post": method_decorator(ratelimit("1/minute"))(Hello.post)})
        free = method_decorator(ratelimit_exempt, name="dispatch")(type("Free", (Hello,), {}))
        with served([path("whole", whole.as_view()), path("posts", posts.as_view()),
                     path("free", free.as_view())]) as client:
            # dispatch decorated: every method counts against its limit, and not against RATE.
            assert [client.get("/whole").status_code, client.post("/whole").status_code,
                    client.get("/whole").status_code] == [200, 200, 429]
            assert spend(client, "/free", 3) == [200, 200, 200]  # exempt: not counted either
            # One method decorated: that method has its own limit, and the view stays under RATE.
            assert [client.post("/posts").status_code, client.post("/posts").status_code] == [200, 429]
            get = client.get("/posts")
            assert get.status_code == 200 and members(get) == [("default", 7)]  # RATE: 3 counted, the posts'


def test_an_async_view_is_limited_and_stays_async() -> None:
    with throttlekit():
        @ratelimit("1/minute")
        async def hello(request: HttpRequest) -> HttpResponse:
            await asyncio.sleep(0)
            return HttpResponse("hello")

        assert asyncio.iscoroutinefunction(hello)
        with served([path("hello", hello)]) as client:
            first = client.get("/hello")
            assert first.status_code == 200 and first.text == "hello" and members(first) == [("default", 0)]
            assert client.get("/hello").status_code == 429


def is_internal(request: HttpRequest) -> bool:
    return request.headers.get("X-Internal") == "yes"


def is_banned(request: HttpRequest) -> bool:
    return request.headers.get("X-Banned") == "yes"


def test_safelist_and_blocklist() -> None:
    with throttlekit(RATE="1/minute", SAFELIST=["test_http_django.is_internal"], BLOCKLIST=[is_banned]):
        own = ratelimit("1/minute")(ok)
        with served([path("app", ok), path("own", own), path("free", ratelimit_exempt(ok))]) as client:
            for url in ("/app", "/own"):
                safe = [client.get(url, headers={"X-Internal": "yes"}) for _ in range(3)]
                assert [r.status_code for r in safe] == [200, 200, 200]
                assert all("ratelimit" not in r.headers for r in safe)
                assert spend(client, url, 2) == [200, 429]  # the safelist did not count
            for url in ("/app", "/own", "/free"):  # the blocklist reaches exempt views too
                assert client.get(url, headers={"X-Banned": "yes", "X-Internal": "yes"}).status_code == 403


def slow_down(request: HttpRequest, decision: tk.Decision) -> HttpResponse:
    return HttpResponse(f"slow down, retry in {decision.retry_after_ms} ms", status=429, content_type="text/plain")


def test_a_denied_view_replaces_the_429_and_keeps_the_fields() -> None:
    with throttlekit(RATE="1/minute", DENIED_VIEW="test_http_django.slow_down"):
        own = ratelimit("1/minute")(ok)
        with served([path("app", ok), path("own", own)]) as client:
            for url in ("/app", "/own"):
                assert client.get(url).status_code == 200
                denied = client.get(url)
                assert denied.status_code == 429 and denied.text.startswith("slow down, retry in ")
                assert denied.headers["content-type"] == "text/plain"
                assert members(denied) == [("default", 0)] and int(denied.headers["retry-after"]) >= 1


@pytest.mark.parametrize("policy, status", FAIL_POLICIES)
def test_fail_policy_when_redis_is_down(policy: str, status: int) -> None:
    server = RedisServer()
    try:
        with throttlekit(STORE=server.url, STORE_OPTIONS={"timeout_ms": 300}, RATE="5/minute",
                         FAIL_POLICY=policy, PREFIX=f"django-fail-{policy}"):
            own = ratelimit("5/minute")(ok)
            with served([path("app", ok), path("own", own)]) as client:
                assert_fail_policy(client, server, policy, status)
    finally:
        server.stop()


@pytest.mark.parametrize("conf, setting", [
    ({"RAET": "5/minute"}, "THROTTLEKIT['RAET']"),
    ({"STORE": "memcached://x"}, "THROTTLEKIT['STORE']"),
    ({"STORE": "redis://127.0.0.1:1", "STORE_OPTIONS": {"timeout": 1}}, "THROTTLEKIT['STORE']"),
    ({"STORE_OPTIONS": ["timeout_ms"]}, "THROTTLEKIT['STORE_OPTIONS']"),
    ({"PREFIX": 7}, "THROTTLEKIT['PREFIX']"),
    ({"RATE": "5/fortnight"}, "THROTTLEKIT['RATE']"),
    ({"RATE": "0/minute"}, "THROTTLEKIT['RATE']"),
    ({"STRATEGY": "leaky"}, "THROTTLEKIT['STRATEGY']"),
    ({"KEY": "cookie"}, "THROTTLEKIT['KEY']"),
    ({"KEY": "nowhere.to.be.found"}, "THROTTLEKIT['KEY']"),
    ({"FAMILY": "draft-99"}, "THROTTLEKIT['FAMILY']"),
    ({"TRUSTED_PROXIES": ["10.0.0.0/99"]}, "THROTTLEKIT['TRUSTED_PROXIES']"),
    ({"FAIL_POLICY": "ignore"}, "THROTTLEKIT['FAIL_POLICY']"),
    ({"METHODS": "POST", "RATE": "5/minute"}, "THROTTLEKIT['METHODS']"),
    ({"SAFELIST": ["test_http_django.nothing_here"]}, "THROTTLEKIT['SAFELIST'][0]"),
    ({"DENIED_VIEW": "test_http_django.nothing_here"}, "THROTTLEKIT['DENIED_VIEW']"),
])
def test_bad_settings_fail_when_the_project_starts_naming_the_setting(conf: dict[str, Any], setting: str) -> None:
    with throttlekit(**conf):
        with pytest.raises(tk.ConfigInvalidError) as raised:
            build()
    assert raised.value.code == "config_invalid"
    assert str(raised.value).startswith(setting), str(raised.value)


def test_a_bad_decorator_in_the_urlconf_fails_at_start_up() -> None:
    with throttlekit(), override_settings(ROOT_URLCONF="django_bad_urls"):
        with pytest.raises(tk.ConfigInvalidError) as raised:
            build()
    assert raised.value.code == "config_invalid" and str(raised.value).startswith("rate:")
    assert "fortnight" in str(raised.value)


@pytest.mark.parametrize("kwargs, setting", [
    ({"rate": "5/minute", "key": "nope"}, "key"),
    ({"rate": "5/minute", "methods": "GET"}, "methods"),
    ({"rate": "5/minute", "strategy": "token-bucket"}, "strategy"),
    ({"rate": "5/minute", "cost": 1.5}, "cost"),
    ({"rate": "5 a minute"}, "rate"),
    ({"rate": "5/minute;5/minute"}, "rate"),
    ({"rate": "5/minute", "family": "draft-0"}, "rate"),
])
def test_bad_decorator_arguments_are_config_invalid(kwargs: dict[str, Any], setting: str) -> None:
    with throttlekit():
        with pytest.raises(tk.ConfigInvalidError) as raised:
            ratelimit(**kwargs)(ok)
    assert str(raised.value).startswith(setting + ":"), str(raised.value)
