"""The HTTP middleware on real servers (uvicorn; werkzeug's WSGI server, which Flask's dev server
runs) with a real client (httpx over TCP), on every stack: ASGI, the FastAPI dependency, WSGI.

Limiters run on a ManualClock at the instant the header vectors use, so the exact lines can be
compared with ``conformance-vectors/http/headers.json``: the middleware must send, byte for
byte, what core renders for the same decision.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
from typing import Any

import http_sfv
import httpx
import pytest

import throttlekit as tk
from conftest import ROOT, RedisServer
from http_apps import SERVER, STACKS, Req, build
from servers import serve
from throttlekit.http import LimitedEvent

NOW = 1_700_000_000_000
HTTP_VECTORS = json.loads((ROOT / "conformance-vectors/http/headers.json").read_text())
VECTOR = {case["id"]: case for case in HTTP_VECTORS["headerCases"]}
FIELDS = ("ratelimit-policy", "ratelimit", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset",
          "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after")


def gcra(clock: tk.ManualClock | None = None, **kw: Any) -> tk.Limiter:
    """The examples' limiter: GCRA 5 per 60 s, burst 5."""
    return tk.Limiter(tk.Strategy.gcra(5, 60_000, burst=5), clock=clock or tk.ManualClock(NOW), **kw)


def fields(response: httpx.Response) -> list[tuple[str, str]]:
    """The rate-limit lines of a response, in order, names as core writes them."""
    canonical = {name.lower(): name for name in (
        "RateLimit-Policy", "RateLimit", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset",
        "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After")}
    return [(canonical[k.lower()], v) for k, v in response.headers.multi_items() if k.lower() in FIELDS]


def expected(case_id: str) -> list[tuple[str, str]]:
    return [(n, v) for n, v in VECTOR[case_id]["expect"]]


def sf_list(value: str) -> list[tuple[Any, dict[str, Any]]]:
    parsed = http_sfv.List()
    parsed.parse(value.encode())
    return [(m.value, dict(m.params)) for m in parsed]


@pytest.fixture(params=STACKS)
def stack(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_draft10_sequence_matches_the_vectors_and_an_independent_parser(stack: str) -> None:
    with serve(SERVER[stack], build(stack, gcra())) as client:
        first = client.get("/limited")
        assert first.status_code == 200 and first.text.strip('"') == "ok"
        assert fields(first) == expected("draft10/gcra-first")
        for want_r in (3, 2, 1):
            r = client.get("/limited")
            assert r.status_code == 200
            assert sf_list(r.headers["ratelimit"]) == [("default", {"r": want_r, "t": 12})]
        fifth = client.get("/limited")
        assert fields(fifth) == expected("draft10/gcra-fifth")
        denied = client.get("/limited")
        assert denied.status_code == 429
        assert fields(denied) == expected("draft10/gcra-denied")
        assert sf_list(denied.headers["ratelimit-policy"]) == [("default", {"q": 5, "w": 60})]
        assert denied.headers["content-type"].startswith("application/problem+json")
        problem = denied.json()
        assert problem["status"] == 429 and problem["title"] == "Too Many Requests"
        assert problem["type"].endswith("#quota-exceeded") and "12 seconds" in problem["detail"]
        health = client.get("/healthz")
        assert health.status_code == 200 and fields(health) == []


@pytest.mark.parametrize("family, case", [
    ("draft-6", "draft6/gcra-fifth"),
    ("legacy", "legacy/gcra-fifth-reset-is-full-replenishment"),
])
def test_every_family_sends_cores_lines(stack: str, family: str, case: str) -> None:
    with serve(SERVER[stack], build(stack, gcra(), family=family)) as client:
        responses = [client.get("/limited") for _ in range(6)]
    assert [r.status_code for r in responses] == [200] * 5 + [429]
    assert fields(responses[4]) == expected(case)
    assert fields(responses[5])[-1] == ("Retry-After", "12")


def test_draft7_and_the_policy_name(stack: str) -> None:
    with serve(SERVER[stack], build(stack, gcra(), family="draft-7", policy_name="per-ip")) as client:
        r = client.get("/limited")
    assert fields(r) == [("RateLimit-Policy", "5;w=60"), ("RateLimit", "limit=5, remaining=4, reset=12")]
    with serve(SERVER[stack], build(stack, gcra(), policy_name="per-ip")) as client:
        r = client.get("/limited")
    assert sf_list(r.headers["ratelimit"]) == [("per-ip", {"r": 4, "t": 12})]


def test_partition_key_is_an_hmac_never_the_key(stack: str) -> None:
    with serve(SERVER[stack], build(stack, gcra(), partition_key_secret="s3cret")) as client:
        r = client.get("/limited")
    (name, params), = sf_list(r.headers["ratelimit"])
    assert isinstance(params["pk"], bytes) and len(params["pk"]) == 32
    assert b"127.0.0.1" not in params["pk"] and "127.0.0.1" not in r.headers["ratelimit"]


def test_shadow_mode_decides_reports_and_never_blocks(stack: str) -> None:
    events: list[LimitedEvent] = []
    app = build(stack, gcra(), shadow=True, on_limited=events.append)
    with serve(SERVER[stack], app) as client:
        responses = [client.get("/limited") for _ in range(7)]
    assert [r.status_code for r in responses] == [200] * 7
    assert fields(responses[5]) == expected("draft10/gcra-denied")
    assert [(e.shadow, e.key, e.path, e.method, e.decision.allowed) for e in events] == \
        [(True, "127.0.0.1", "/limited", "GET", False)] * 2


def test_on_limited_deny_response_key_cost_and_skip(stack: str) -> None:
    events: list[LimitedEvent] = []
    from starlette.responses import PlainTextResponse
    from werkzeug.wrappers import Response as WerkzeugResponse

    def deny(decision: tk.Decision) -> Any:
        text = f"slow down {decision.retry_after_ms}"
        if SERVER[stack] == "wsgi":
            return WerkzeugResponse(text, status=429, content_type="text/plain")
        return PlainTextResponse(text, status_code=429)

    app = build(
        stack, gcra(),
        key_func=lambda req: req.headers.get("x-user", "anon"),
        cost_func=lambda req: int(req.headers.get("x-cost", "1")),
        skip=lambda req: "x-skip" in req.headers,
        on_limited=events.append,
        deny_response=deny,
    )
    with serve(SERVER[stack], app) as client:
        heavy = client.get("/limited", headers={"x-user": "alice", "x-cost": "5"})
        assert heavy.status_code == 200 and sf_list(heavy.headers["ratelimit"])[0][1]["r"] == 0
        denied = client.get("/limited", headers={"x-user": "alice"})
        assert denied.status_code == 429 and denied.text == "slow down 12000"
        assert fields(denied) == expected("draft10/gcra-denied")
        skipped = client.get("/limited", headers={"x-user": "alice", "x-skip": "1"})
        assert skipped.status_code == 200 and fields(skipped) == []
        bob = client.get("/limited", headers={"x-user": "bob"})
        assert bob.status_code == 200 and fields(bob) == expected("draft10/gcra-first")
    assert [(e.key, e.shadow) for e in events] == [("alice", False)]


def test_a_multi_limiter_lists_every_dimension_binding_first(stack: str) -> None:
    clock = tk.ManualClock(NOW)
    multi = tk.MultiLimiter("all", [
        tk.Dimension("ip", tk.Strategy.gcra(5, 60_000, burst=5)),
        tk.Dimension("burst", tk.Strategy.fixed_window(2, 10_000)),
    ], clock=clock)
    with serve(SERVER[stack], build(stack, multi)) as client:
        responses = [client.get("/limited") for _ in range(3)]
    assert [r.status_code for r in responses] == [200, 200, 429]
    assert [m[0] for m in sf_list(responses[2].headers["ratelimit"])] == ["burst", "ip"]
    assert sf_list(responses[2].headers["ratelimit-policy"]) == [
        ("burst", {"q": 2, "w": 10}), ("ip", {"q": 5, "w": 60})]
    assert responses[2].headers["retry-after"] == "10"


def test_the_key_function_may_give_one_key_per_dimension(stack: str) -> None:
    multi = tk.MultiLimiter("all", [
        tk.Dimension("ip", tk.Strategy.gcra(5, 60_000, burst=5)),
        tk.Dimension("user", tk.Strategy.fixed_window(1, 10_000)),
    ], clock=tk.ManualClock(NOW))
    app = build(stack, multi, key_func=lambda req: ["1.2.3.4", req.headers.get("x-user", "anon")])
    with serve(SERVER[stack], app) as client:
        statuses = [client.get("/limited", headers={"x-user": u}).status_code for u in ("a", "a", "b")]
    assert statuses == [200, 429, 200]


def test_a_spoofed_forwarding_header_gets_no_fresh_bucket_without_trust(stack: str) -> None:
    with serve(SERVER[stack], build(stack, gcra())) as client:
        assert [client.get("/limited").status_code for _ in range(5)] == [200] * 5
        for spoof in ({"X-Forwarded-For": "203.0.113.9"}, {"Forwarded": "for=203.0.113.8"}):
            assert client.get("/limited", headers=spoof).status_code == 429


def test_trusted_proxies_forward_the_rightmost_untrusted_hop(stack: str) -> None:
    events: list[LimitedEvent] = []
    app = build(stack, gcra(), trusted_proxies=["127.0.0.0/8", "10.0.0.0/8"], on_limited=events.append)
    with serve(SERVER[stack], app) as client:
        for _ in range(5):
            assert client.get("/limited", headers={"X-Forwarded-For": "198.51.100.7"}).status_code == 200
        # The client's own prefix is ignored: the rightmost untrusted hop is the same client.
        chained = {"X-Forwarded-For": "6.6.6.6, 198.51.100.7, 10.1.2.3"}
        assert client.get("/limited", headers=chained).status_code == 429
        assert client.get("/limited", headers={"X-Forwarded-For": "198.51.100.8"}).status_code == 200
        # `Forwarded` is not the configured header: the proxy (the peer) is the key.
        assert client.get("/limited", headers={"Forwarded": "for=198.51.100.9"}).status_code == 200
    assert [e.key for e in events] == ["198.51.100.7"]


def test_ipv6_clients_are_grouped_by_prefix(stack: str) -> None:
    def run(**options: Any) -> list[int]:
        # The proxy is the IPv4 loopback, so this needs no IPv6 on the machine; the clients
        # behind it are IPv6.
        app = build(stack, tk.Limiter(tk.Strategy.fixed_window(2, 60_000), clock=tk.ManualClock(NOW)),
                    trusted_proxies=["127.0.0.1"], **options)
        with serve(SERVER[stack], app) as client:
            hops = ["2001:db8:1:2::a", "2001:db8:1:2::b", "2001:db8:1:2:ffff::1", "2001:db8:1:3::a"]
            return [client.get("/limited", headers={"X-Forwarded-For": h}).status_code for h in hops]

    assert run() == [200, 200, 429, 200]
    assert run(ipv6_prefix=128) == [200, 200, 200, 200]


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="this machine has no IPv6 loopback (::1) to serve on; "
                    "the grouping itself is tested through a proxy above and by the vectors")
def test_an_ipv6_peer_without_trust_is_its_own_64(stack: str) -> None:
    events: list[LimitedEvent] = []
    limiter = tk.Limiter(tk.Strategy.fixed_window(1, 60_000), clock=tk.ManualClock(NOW))
    with serve(SERVER[stack], build(stack, limiter, on_limited=events.append), host="::1") as client:
        assert [client.get("/limited").status_code for _ in range(2)] == [200, 429]
    assert [e.key for e in events] == ["::/64"]


def test_bad_options_are_config_invalid_at_construction(stack: str) -> None:
    for bad in ({"family": "draft-8"}, {"trusted_proxies": ["10.0.0.0/33"]}, {"ipv6_prefix": 0},
                {"policy_name": ""}, {"fail_policy": "sometimes"}, {"forwarded_header": "via"}):
        with pytest.raises(tk.ConfigInvalidError):
            app = build(stack, gcra(), **bad)
            if stack == "asgi":  # Starlette builds its middleware on first use
                app.build_middleware_stack()


def test_a_key_function_error_is_a_500_problem(stack: str) -> None:
    app = build(stack, gcra(), cost_func=lambda req: 0)  # cost 0 is config_invalid in core
    with serve(SERVER[stack], app) as client:
        r = client.get("/limited")
    assert r.status_code == 500
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["detail"] == "rate limiter: config_invalid"


@pytest.fixture
def redis_down_limiter() -> Any:
    """A limiter on a private redis-server, and a function that kills that server by PID."""
    server = RedisServer()
    # A generous timeout: a loaded machine may take a while to answer the request made while
    # Redis is up, and a dead server refuses at once (no waiting for the timeout).
    store = tk.RedisStore(server.url, timeout_ms=2000)
    try:
        yield lambda: (gcra(tk.ManualClock(NOW), store=store, prefix="http-fail"), server.stop)
    finally:
        server.stop()


@pytest.mark.parametrize("policy", ["raise", "fail_open", "fail_closed"])
def test_fail_policy_with_redis_down(stack: str, policy: str, redis_down_limiter: Any) -> None:
    limiter, kill = redis_down_limiter()
    with serve(SERVER[stack], build(stack, limiter, fail_policy=policy)) as client:
        up = client.get("/limited")
        assert up.status_code == 200 and fields(up) == expected("draft10/gcra-first")
        kill()
        down = client.get("/limited")
        assert client.get("/healthz").status_code == 200
    if policy == "raise":
        assert down.status_code == 503
        assert down.headers["content-type"].startswith("application/problem+json")
        assert down.json()["type"].endswith("#temporary-reduced-capacity")
        assert fields(down) == []
    elif policy == "fail_open":
        assert down.status_code == 200 and fields(down) == expected("fallback/fail-open-sends-nothing")
    else:
        assert down.status_code == 429 and fields(down) == expected("fallback/fail-closed-retry-only")


def test_the_asgi_middleware_never_blocks_the_event_loop_on_redis() -> None:
    """While Redis is frozen (SIGSTOP), a limited request cannot finish; a /healthz sent once
    that request has reached the limiter must still be answered on the same event loop. Redis
    is thawed only after /healthz returns, so a blocking check would answer /healthz only after
    the limited request's 5 s store timeout, and the order below would be reversed."""
    server = RedisServer()
    try:
        store = tk.RedisStore(server.url, timeout_ms=5000)
        limiter = gcra(store=store, prefix="http-loop")
        entered = threading.Event()

        def key(req: Req) -> str:
            entered.set()
            return "k"

        for stack in ("asgi", "fastapi"):
            entered.clear()
            with serve("asgi", build(stack, limiter, key_func=key, fail_policy="fail_open")) as client:
                assert client.get("/limited").status_code == 200
                entered.clear()
                order: list[str] = []
                os.kill(server.proc.pid, signal.SIGSTOP)
                try:
                    slow = threading.Thread(
                        target=lambda: order.append(f"limited {client.get('/limited').status_code}"))
                    slow.start()
                    assert entered.wait(timeout=30)
                    order.append(f"healthz {client.get('/healthz').status_code}")
                finally:
                    os.kill(server.proc.pid, signal.SIGCONT)
                slow.join(timeout=30)
            assert order == ["healthz 200", "limited 200"], (stack, order)
    finally:
        server.stop()


def test_fastapi_without_install_still_sends_429_and_the_fields() -> None:
    from fastapi import Depends, FastAPI

    from throttlekit.fastapi import RateLimit

    app = FastAPI()
    limit = RateLimit(gcra())

    @app.get("/limited", dependencies=[Depends(limit)])
    async def limited() -> str:
        return "ok"

    @app.get("/open")
    async def open_route() -> str:
        return "ok"

    with serve("asgi", app) as client:
        responses = [client.get("/limited") for _ in range(6)]
        other = client.get("/open")
    assert [r.status_code for r in responses] == [200] * 5 + [429]
    assert fields(responses[5]) == expected("draft10/gcra-denied")
    assert other.status_code == 200 and fields(other) == []


def test_fastapi_routes_can_read_the_decision() -> None:
    from fastapi import Depends, FastAPI

    from throttlekit.fastapi import RateLimit

    app = FastAPI()
    limit = RateLimit(gcra())

    @app.get("/remaining")
    async def remaining(result: tk.HttpDecision = Depends(limit)) -> dict[str, int]:
        return {"remaining": result.decision.remaining}

    with serve("asgi", app) as client:
        assert [client.get("/remaining").json()["remaining"] for _ in range(2)] == [4, 3]


def test_peerless_requests_need_a_key_function() -> None:
    """A WSGI environ without REMOTE_ADDR (and an ASGI scope without `client`) is a 500 problem
    naming config_invalid, never a shared or random bucket."""
    from throttlekit.wsgi import RateLimitMiddleware

    app = RateLimitMiddleware(lambda env, start: [b"ok"], gcra())
    started: list[str] = []
    body = b"".join(app({"REQUEST_METHOD": "GET", "PATH_INFO": "/"}, lambda s, h, e=None: started.append(s)))
    assert started == ["500 Internal Server Error"]
    assert json.loads(body)["detail"] == "rate limiter: config_invalid"


def test_req_view_is_what_the_callables_get() -> None:
    # Guards the test helper itself: a view that lost its headers would make the key tests vacuous.
    seen: list[Req] = []
    with serve("wsgi", build("flask", gcra(), key_func=lambda req: seen.append(req) or "k")) as client:
        client.get("/limited", headers={"X-User": "z"})
    assert seen and seen[0].path == "/limited" and seen[0].headers["x-user"] == "z"



def test_fastapi_does_not_copy_the_fields_onto_a_response_the_route_returns() -> None:
    # The README says so; a route that returns a Response object loses the dependency's headers.
    from fastapi import Depends, FastAPI
    from fastapi.responses import PlainTextResponse

    from throttlekit.fastapi import RateLimit

    app = FastAPI()
    limit = RateLimit(gcra())

    @app.get("/own", dependencies=[Depends(limit)])
    async def own() -> PlainTextResponse:
        return PlainTextResponse("ok")

    with serve("asgi", app) as client:
        r = client.get("/own")
    assert r.status_code == 200 and fields(r) == []


def test_an_asgi_scope_without_a_peer_is_a_500_problem() -> None:
    import asyncio

    from throttlekit.asgi import RateLimitMiddleware

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the app must not run")

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request"}

    scope = {"type": "http", "method": "GET", "path": "/", "headers": [], "client": None}
    asyncio.run(RateLimitMiddleware(inner, gcra())(scope, receive, send))
    assert sent[0]["status"] == 500
    assert json.loads(sent[1]["body"])["detail"] == "rate limiter: config_invalid"


def test_uvicorns_own_proxy_headers_would_let_a_local_client_pick_its_bucket() -> None:
    # The README's warning: with uvicorn's default proxy_headers=True, X-Forwarded-For from
    # 127.0.0.1 replaces the peer before the middleware runs, so a spoofed header is a new key.
    import asyncio
    import time

    import uvicorn

    app = build("asgi", tk.Limiter(tk.Strategy.fixed_window(1, 60_000), clock=tk.ManualClock(NOW)))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive()
        time.sleep(0.01)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{sock.getsockname()[1]}") as client:
            statuses = [client.get("/limited", headers={"X-Forwarded-For": f"203.0.113.{i}"}).status_code
                        for i in range(3)]
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
    assert statuses == [200, 200, 200]
