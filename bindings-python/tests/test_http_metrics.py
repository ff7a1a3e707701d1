"""The HTTP middleware counts through the limiter's metrics: on every stack (ASGI, the FastAPI
dependency, WSGI), over a Redis limiter, each 200 is one allowed decision, a 429 one denied and a
503 (Redis gone, fail policy raise) one store_unavailable error; nothing else moves."""

from __future__ import annotations

import pytest
import throttlekit as tk
from conftest import RedisServer
from http_apps import SERVER, STACKS, build
from servers import serve


@pytest.mark.parametrize("stack", STACKS)
def test_a_200_a_429_and_a_503_are_each_counted_once(stack: str) -> None:
    server = RedisServer()
    try:
        store = tk.RedisStore(server.url, timeout_ms=2000)
        limiter = tk.Limiter(tk.Strategy.gcra(2, 3_600_000, burst=2), store=store, prefix=f"http-metrics-{stack}",
                             fail_policy="raise", metrics=True)
        with serve(SERVER[stack], build(stack, limiter, fail_policy="raise")) as client:
            assert [client.get("/limited").status_code for _ in range(3)] == [200, 200, 429]
            server.stop()
            assert client.get("/limited").status_code == 503
            assert client.get("/healthz").status_code == 200  # not limited: not counted
    finally:
        server.stop()
    m = limiter.metrics()
    assert m is not None
    assert (m["allowed"], m["denied"], m["fallback_allowed"] + m["fallback_denied"]) == (2, 1, 0), m
    assert m["errors"]["store_unavailable"] == 1 and sum(m["errors"].values()) == 1, m
