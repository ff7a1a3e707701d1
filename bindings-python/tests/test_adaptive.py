"""AdaptiveLimiter: the Python idiom around core's adaptive concurrency limiter, its vectors, and
the ASGI / WSGI shedding middleware."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from pathlib import Path

import pytest

import throttlekit as tk
from conftest import ROOT
from throttlekit.conformance import StoreFactory, replay_files

ADAPTIVE_VECTORS = sorted((ROOT / "conformance-vectors" / "adaptive").glob("*.json"))


@pytest.mark.parametrize("path", ADAPTIVE_VECTORS, ids=lambda p: p.name)
def test_the_adaptive_vectors_replay_with_no_mismatch(path: Path) -> None:
    report = replay_files([str(path)], StoreFactory("memory"))
    assert report.failed == 0, "\n".join(report.failures[:20])
    assert report.passed > 1000


def test_try_acquire_answers_a_permit_or_a_rejection_with_limit_and_inflight() -> None:
    limiter = tk.AdaptiveLimiter("fixed", initial_limit=2)
    a, b, c = limiter.try_acquire(), limiter.try_acquire(), limiter.try_acquire()
    assert isinstance(a, tk.Permit) and a.granted and isinstance(b, tk.Permit)
    assert isinstance(c, tk.Rejection) and not c.granted
    assert (c.limit, c.inflight, c.retry_after_secs) == (2, 2, 1)
    assert limiter.inflight() == 2 and limiter.limit() == 2
    assert a.release("success") is True
    assert a.release("dropped") is False  # twice: harmless, and says so
    assert b.release("ignore", rtt_ns=5_000_000) is True
    m = limiter.metrics()
    assert (m["inflight"], m["acquired"], m["rejected"], m["succeeded"], m["ignored"]) == (0, 2, 1, 1, 1)


def test_a_permit_as_context_manager_releases_by_the_documented_rule() -> None:
    limiter = tk.AdaptiveLimiter("fixed", initial_limit=5)
    with limiter.try_acquire():  # type: ignore[union-attr]
        assert limiter.inflight() == 1
    with pytest.raises(TimeoutError):
        with limiter.try_acquire():  # type: ignore[union-attr]
            raise TimeoutError
    with pytest.raises(KeyError):
        with limiter.try_acquire():  # type: ignore[union-attr]
            raise KeyError("x")
    permit = limiter.try_acquire()
    assert isinstance(permit, tk.Permit)
    with permit:
        permit.release("dropped")  # released in the body: the exit does nothing more
    m = limiter.metrics()
    assert (m["inflight"], m["succeeded"], m["dropped"], m["ignored"]) == (0, 1, 2, 1)


def test_a_permit_collected_unreleased_counts_as_leaked() -> None:
    limiter = tk.AdaptiveLimiter("fixed", initial_limit=1)
    limiter.try_acquire()
    gc.collect()
    m = limiter.metrics()
    assert (m["inflight"], m["leaked"], m["ignored"]) == (0, 1, 1)


def test_acquire_sync_waits_with_the_gil_released_and_times_out_with_a_rejection() -> None:
    limiter = tk.AdaptiveLimiter("fixed", initial_limit=1)
    held = limiter.try_acquire()
    assert isinstance(held, tk.Permit)
    start = time.monotonic()
    assert isinstance(limiter.acquire_sync(timeout_ms=100), tk.Rejection)
    assert time.monotonic() - start >= 0.09
    answers: list[object] = []
    waiter = threading.Thread(target=lambda: answers.append(limiter.acquire_sync(timeout_ms=5000)))
    start = time.monotonic()
    waiter.start()
    # This thread runs while the other waits: the wait released the GIL (holding it, the
    # waiter would have kept this loop from running for the whole 5 s).
    while limiter.metrics()["waiting"] == 0:
        time.sleep(0.001)
    assert time.monotonic() - start < 4
    held.release()
    waiter.join()
    assert isinstance(answers[0], tk.Permit)
    answers[0].release()


def test_acquire_is_an_awaitable_that_does_not_block_the_loop() -> None:
    async def main() -> None:
        limiter = tk.AdaptiveLimiter("fixed", initial_limit=1, order="lifo")
        held = limiter.try_acquire()
        assert isinstance(held, tk.Permit)
        waiter = asyncio.ensure_future(limiter.acquire(timeout_ms=2000))
        await asyncio.sleep(0.02)  # the loop runs while the acquire waits
        assert not waiter.done() and limiter.metrics()["waiting"] == 1
        held.release()
        permit = await waiter
        assert isinstance(permit, tk.Permit)
        async with permit:
            assert limiter.inflight() == 1
        assert permit.released and limiter.inflight() == 0
        timed_out = [limiter.try_acquire(), await limiter.acquire(timeout_ms=10)]
        assert isinstance(timed_out[1], tk.Rejection)

    asyncio.run(main())


def test_partitions_share_the_limit_by_percentage() -> None:
    limiter = tk.AdaptiveLimiter("fixed", initial_limit=10, partitions={"live": 80, "batch": 20})
    live = [limiter.try_acquire("live") for _ in range(10)]
    assert all(p.granted for p in live)  # not full: any partition may use any slot
    assert limiter.metrics()["partitions"] == {"live": 10, "batch": 0}
    for p in live[:3]:
        p.release()
    batch = [limiter.try_acquire("batch") for _ in range(2)]
    assert [p.granted for p in batch] == [True, True]  # batch's 20 % is kept for it
    assert limiter.inflight() <= limiter.limit()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"initial_limit": 0}, "initial_limit"),
        ({"initial_limit": -1}, "initial_limit must be at least 1"),
        ({"min_limit": -1}, "min_limit"),
        ({"max_limit": 2, "initial_limit": 3}, "initial_limit must be between min_limit and max_limit"),
        ({"min_rtt_us": -1}, "min_rtt_us"),
        ({"window_min_samples": 0}, "window_min_samples"),
        ({"partitions": {"a": 60, "b": 50}}, "partitions"),
        ({"partitions": {"a": -1}}, "partitions[0].percent"),
        ({"algorithm": "tcp"}, "algorithm"),
        ({"order": "random"}, "order"),
        ({"algorithm": "vegas", "backoff": 0.5}, "backoff"),
    ],
)
def test_bad_options_are_config_invalid_naming_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(tk.ConfigInvalidError) as e:
        tk.AdaptiveLimiter(**kwargs)
    assert e.value.code == "config_invalid" and field in str(e.value)


def test_the_json_form_names_fields_as_its_json_does() -> None:
    with pytest.raises(tk.ConfigInvalidError, match="initialLimit"):
        tk.AdaptiveLimiter.from_json('{"initialLimit": 0}')


def test_bad_calls_are_config_invalid() -> None:
    limiter = tk.AdaptiveLimiter(partitions={"live": 90})
    with pytest.raises(tk.ConfigInvalidError, match="partition"):
        limiter.try_acquire("nope")
    permit = limiter.try_acquire()
    assert isinstance(permit, tk.Permit)
    with pytest.raises(tk.ConfigInvalidError, match="rtt"):
        permit.release("success", rtt_ns=-1)
    with pytest.raises(tk.ConfigInvalidError, match="outcome"):
        permit.release("fine")
    with pytest.raises(tk.ConfigTypeError):
        tk.AdaptiveLimiter(initial_limit="10")  # type: ignore[arg-type]
    assert permit.release() is True


def _asgi_app(status: int = 200, raises: BaseException | None = None):  # type: ignore[no-untyped-def]
    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        if raises is not None:
            raise raises
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    return app


def _call_asgi(app) -> list[dict]:  # type: ignore[no-untyped-def]
    sent: list[dict] = []

    async def receive():  # type: ignore[no-untyped-def]
        return {"type": "http.request", "body": b""}

    async def send(message):  # type: ignore[no-untyped-def]
        sent.append(message)

    asyncio.run(app({"type": "http", "method": "GET", "path": "/", "headers": []}, receive, send))
    return sent


def test_asgi_shedding_answers_503_with_retry_after_and_releases_by_status() -> None:
    from throttlekit.asgi import SheddingMiddleware

    limiter = tk.AdaptiveLimiter("fixed", initial_limit=1)
    assert _call_asgi(SheddingMiddleware(_asgi_app(), limiter))[0]["status"] == 200
    assert _call_asgi(SheddingMiddleware(_asgi_app(504), limiter))[0]["status"] == 504
    with pytest.raises(KeyError):
        _call_asgi(SheddingMiddleware(_asgi_app(raises=KeyError()), limiter))
    m = limiter.metrics()
    assert (m["inflight"], m["succeeded"], m["dropped"], m["ignored"]) == (0, 1, 1, 1)
    held = limiter.try_acquire()
    shed = _call_asgi(SheddingMiddleware(_asgi_app(), limiter))
    assert shed[0]["status"] == 503 and (b"retry-after", b"1") in shed[0]["headers"]
    held.release()


def test_wsgi_shedding_holds_the_permit_until_the_response_is_closed() -> None:
    from throttlekit.wsgi import SheddingMiddleware

    limiter = tk.AdaptiveLimiter("fixed", initial_limit=1)

    def app(environ, start_response):  # type: ignore[no-untyped-def]
        start_response(environ.get("STATUS", "200 OK"), [])
        return [b"a", b"b"]

    wsgi = SheddingMiddleware(app, limiter)
    statuses: list[str] = []
    headers: list[list] = []

    def start_response(status, h, exc_info=None):  # type: ignore[no-untyped-def]
        statuses.append(status)
        headers.append(h)

    body = wsgi({}, start_response)
    assert b"".join(body) == b"ab" and limiter.inflight() == 1
    shed = wsgi({}, start_response)
    assert statuses[-1].startswith("503") and ("Retry-After", "1") in headers[-1] and list(shed) == [b""]
    body.close()  # type: ignore[attr-defined]
    assert limiter.inflight() == 0
    closing = wsgi({"STATUS": "503 Service Unavailable"}, start_response)
    list(closing)
    closing.close()  # type: ignore[attr-defined]
    m = limiter.metrics()
    assert (m["succeeded"], m["dropped"], m["rejected"]) == (1, 1, 1)


def test_the_docs_python_quick_start_runs() -> None:
    import re
    import subprocess
    import sys

    docs = (ROOT / "docs" / "adaptive.md").read_text()
    section = docs.split("## Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1
    out = subprocess.run([sys.executable, "-c", blocks[0]], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
