"""The native HTTP adapters on their own: `ClientIdentity` (core's client key) and `HttpLimiter`
(a check and core's header lines at one clock reading), without a server."""

from __future__ import annotations

import asyncio
import json

import http_sfv
import pytest

import throttlekit as tk
from conftest import RedisServer
from throttlekit._throttlekit import http_error_response, http_unavailable_body

NOW = 1_700_000_000_000


def test_header_values_may_be_bytes_and_non_text_bytes_stop_the_walk() -> None:
    identity = tk.ClientIdentity(trusted_proxies=["10.0.0.0/8"])
    assert identity.key("10.0.0.1", [(b"X-Forwarded-For", b"1.1.1.1")]) == "1.1.1.1"
    assert identity.key("10.0.0.1", [("x-forwarded-for", "1.1.1.1")]) == "1.1.1.1"
    # As the vector xff/non-text-line-stops: a line that is not text is garbage, never dropped.
    lines = [(b"x-forwarded-for", b"1.1.1.1"), (b"x-forwarded-for", b"\xff\xfe")]
    assert identity.key("10.0.0.1", lines) == "10.0.0.1"


def test_headers_are_not_read_without_trusted_proxies() -> None:
    identity = tk.ClientIdentity()
    assert identity.key("192.0.2.7", [(b"x-forwarded-for", b"203.0.113.1")]) == "192.0.2.7"
    assert identity.key("[2001:db8:1:2::9]:443") == "2001:db8:1:2::/64"


def test_bad_arguments_have_stable_codes() -> None:
    with pytest.raises(tk.ConfigInvalidError):
        tk.ClientIdentity().key("not-an-ip")
    with pytest.raises(tk.ConfigTypeError):
        tk.ClientIdentity(trusted_proxies=["10.0.0.0/8"]).key("10.0.0.1", [("only-a-name",)])
    with pytest.raises(tk.ConfigTypeError):
        tk.ClientIdentity(trusted_proxies="10.0.0.0/8")
    with pytest.raises(tk.ConfigInvalidError):
        tk.ClientIdentity(ipv6_prefix=1000)
    with pytest.raises(tk.ConfigTypeError):
        tk.HttpLimiter(object())  # type: ignore[arg-type]
    with pytest.raises(tk.ConfigInvalidError):
        tk.HttpLimiter(tk.Limiter(tk.Strategy.gcra(5, 60_000)), partition_key_secret="")
    with pytest.raises(tk.ConfigInvalidError):
        tk.HttpLimiter(tk.Limiter(tk.Strategy.gcra(5, 60_000))).check_sync("k", cost=0)


def test_sync_and_async_checks_render_the_same_lines() -> None:
    def make() -> tk.HttpLimiter:
        return tk.HttpLimiter(tk.Limiter(tk.Strategy.gcra(5, 60_000, burst=5), clock=tk.ManualClock(NOW)),
                              family="legacy")

    sync = [make().check_sync("k").headers for _ in range(1)]
    limiter = make()

    async def run() -> list[list[tuple[str, str]]]:
        return [(await limiter.check("k")).headers]

    assert asyncio.run(run()) == sync == [[("X-RateLimit-Limit", "5"), ("X-RateLimit-Remaining", "4"),
                                          ("X-RateLimit-Reset", "1700000012")]]
    assert repr(limiter) == 'HttpLimiter(family="legacy", policy_name="default")'
    assert limiter.family == "legacy" and limiter.policy_name == "default" and limiter.fail_policy is None


def test_a_multi_limiter_with_a_dead_store_falls_back_by_the_middlewares_policy() -> None:
    server = RedisServer()
    store = tk.RedisStore(server.url, timeout_ms=2000)
    server.stop()  # by PID: the store now has nothing to talk to
    multi = tk.MultiLimiter("all", [tk.Dimension("ip", tk.Strategy.gcra(5, 60_000)),
                                    tk.Dimension("user", tk.Strategy.fixed_window(2, 1000))], store=store)
    closed = tk.HttpLimiter(multi, fail_policy="fail_closed").check_sync("k")
    assert not closed.allowed and closed.headers == [("Retry-After", "1")]
    assert (closed.action, closed.status) == ("deny", 429) and closed.body == (closed.problem or "").encode()
    assert isinstance(closed.decision, tk.MultiDecision) and closed.decision.fallback
    assert closed.decision.binding == "ip" and json.loads(closed.problem or "")["status"] == 429
    opened = tk.HttpLimiter(multi, fail_policy="fail_open").check_sync("k")
    assert opened.allowed and opened.headers == [] and opened.problem is None
    assert (opened.action, opened.status, opened.body) == ("forward", 0, b"")
    shadowed = tk.HttpLimiter(multi, fail_policy="fail_closed", shadow=True).check_sync("k")
    assert (shadowed.action, shadowed.status, shadowed.body) == ("shadow", 0, b"")
    assert shadowed.headers == [("Retry-After", "1")]
    with pytest.raises(tk.StoreUnavailableError):
        tk.HttpLimiter(multi).check_sync("k")


def test_cores_edge_decides_the_action_status_and_body() -> None:
    for shadow in (False, True):
        limiter = tk.HttpLimiter(tk.Limiter(tk.Strategy.gcra(2, 60_000, burst=2), clock=tk.ManualClock(NOW)),
                                 shadow=shadow)
        assert limiter.shadow is shadow
        results = [limiter.check_sync("k") for _ in range(3)]
        assert [(r.action, r.status) for r in results[:2]] == [("forward", 0)] * 2
        denied = results[2]
        assert not denied.allowed and denied.headers[-1] == ("Retry-After", "30")
        if shadow:
            assert (denied.action, denied.status, denied.body) == ("shadow", 0, b"")
        else:
            assert (denied.action, denied.status) == ("deny", 429)
            assert json.loads(denied.body) == {
                "type": "https://iana.org/assignments/http-problem-types#quota-exceeded",
                "title": "Too Many Requests", "status": 429,
                "detail": "Rate limit exceeded; retry in 30 seconds."}
        assert "action=" in repr(denied)
    with pytest.raises(TypeError):
        tk.HttpLimiter(tk.Limiter(tk.Strategy.gcra(2, 60_000)), shadow="yes")  # type: ignore[arg-type]


def test_an_undecided_requests_answer_is_cores() -> None:
    status, body = http_error_response("config_invalid")
    assert status == 500
    assert json.loads(body) == {"type": "about:blank", "title": "Internal Server Error", "status": 500,
                                "detail": "rate limiter: config_invalid"}
    status, body = http_error_response("store_unavailable")
    assert status == 503 and body == http_unavailable_body().encode()


def test_a_server_clock_limiter_renders_at_this_hosts_reading() -> None:
    server = RedisServer()
    try:
        store = tk.RedisStore(server.url, timeout_ms=2000, server_clock=True)
        limiter = tk.HttpLimiter(tk.Limiter(tk.Strategy.gcra(5, 60_000, burst=5), store=store, prefix="sc"))

        async def run() -> list[tk.HttpDecision]:
            return [await limiter.check("k") for _ in range(6)]

        results = asyncio.run(run())
    finally:
        server.stop()
    assert [r.allowed for r in results] == [True] * 5 + [False]
    # Redis decided at its own clock and the fields were rendered at this host's, which may lag
    # it by a few ms (the SystemClock is never ahead of the wall clock): `t` is then one second
    # more than the server's view would give, never less than 1 and never more than 13.
    for want_r, r in zip((4, 3, 2, 1, 0), results):
        parsed = http_sfv.List()
        parsed.parse(dict(r.headers)["RateLimit"].encode())
        assert parsed[0].params["r"] == want_r and 1 <= parsed[0].params["t"] <= 13
    assert 1 <= int(dict(results[5].headers)["Retry-After"]) <= 12
