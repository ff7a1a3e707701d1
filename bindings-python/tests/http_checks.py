"""What the Django and Flask integration tests check on a response."""

from __future__ import annotations

from typing import Any

import http_sfv
import httpx

#: Each fail policy and the status a request gets while the store cannot answer.
FAIL_POLICIES = [("raise", 503), ("fail_open", 200), ("fail_closed", 429)]


def members(response: httpx.Response) -> list[tuple[str, int]]:
    """The (policy, r) of each member of the RateLimit field (parsed by http-sfv)."""
    parsed = http_sfv.List()
    parsed.parse(response.headers["ratelimit"].encode())
    return [(m.value, m.params["r"]) for m in parsed]


def spend(client: httpx.Client, url: str, n: int, **kw: Any) -> list[int]:
    """The statuses of ``n`` GETs of ``url``."""
    return [client.get(url, **kw).status_code for _ in range(n)]


def assert_fail_policy(client: httpx.Client, server: Any, policy: str, status: int) -> None:
    """/app (the app-wide limit, 5 per minute) and /own (a view's own limit) of ``client``'s
    server answer from the store, then, once ``server`` (its Redis) is stopped, as
    ``policy`` says."""
    up = client.get("/app")
    assert up.status_code == 200 and members(up) == [("default", 4)]
    server.stop()
    for url in ("/app", "/own"):
        assert_store_down_answer(client.get(url), policy, status)


def assert_store_down_answer(response: httpx.Response, policy: str, status: int) -> None:
    """What a fail policy answers while the store cannot: core's 503 problem (``raise``), the
    view's own response without fields (``fail_open``), or a 429 with ``Retry-After: 1``."""
    assert response.status_code == status, response.text
    if policy == "raise":
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["status"] == 503
    if policy == "fail_open":
        assert response.text == "ok" and "ratelimit" not in response.headers
    if policy == "fail_closed":
        assert response.headers["retry-after"] == "1"
