"""Redis-only behaviour: fail policies when Redis goes away, the server clock, closing."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import throttlekit as tk
from conftest import RedisServer


@pytest.fixture
def doomed() -> RedisServer:
    """A private Redis server the test may stop."""
    server = RedisServer()
    yield server
    server.stop()


def test_fail_policies_decide_when_redis_is_gone(doomed: RedisServer) -> None:
    store = tk.RedisStore(doomed.url, timeout_ms=300)
    strategy = tk.Strategy.gcra(10, 1000)
    opened = tk.Limiter(strategy, store=store, fail_policy="fail_open")
    closed = tk.Limiter(strategy, store=store, fail_policy="fail_closed")
    raising = tk.Limiter(strategy, store=store)
    assert opened.check_sync("k").fallback is False  # Redis answers for now
    doomed.stop()

    started = time.monotonic()
    d = opened.check_sync("k")
    assert d.allowed and d.fallback
    d = closed.check_sync("k")
    assert not d.allowed and d.fallback and d.retry_after_ms > 0
    with pytest.raises(tk.StoreUnavailableError) as err:
        raising.check_sync("k")
    assert err.value.code == "store_unavailable"
    assert time.monotonic() - started < 10  # bounded by the timeout, not a hang


async def test_fail_policies_apply_to_awaitables_and_multi(doomed: RedisServer) -> None:
    store = tk.RedisStore(doomed.url, timeout_ms=300, fail_policy="fail_open")
    limiter = tk.Limiter(tk.Strategy.gcra(10, 1000), store=store)
    multi = tk.MultiLimiter("all", [tk.Dimension("a", tk.Strategy.gcra(1, 1000))], store=store)
    assert limiter.fail_policy == "fail_open"  # the store's default
    doomed.stop()
    assert (await limiter.check("k")).fallback
    assert (await multi.check(["k"])).fallback
    override = tk.Limiter(tk.Strategy.gcra(10, 1000), store=store, fail_policy="raise")
    with pytest.raises(tk.StoreUnavailableError):
        await override.check("k")


async def test_the_server_clock_ignores_the_callers_clock(redis_store: tk.RedisStore, prefix: str) -> None:
    clock = tk.ManualClock(0)  # 1970: far from Redis's TIME
    limiter = tk.Limiter(tk.Strategy.fixed_window(5, 60_000), store=redis_store, clock=clock, prefix=prefix,
                         server_clock=True)
    d = await limiter.check("k")
    assert abs(d.reset_at - tk.SystemClock().now_ms()) <= 61_000
    on_store = tk.RedisStore(redis_store.url, server_clock=True)
    d = await tk.Limiter(tk.Strategy.fixed_window(5, 60_000), store=on_store, clock=clock, prefix=prefix).check("j")
    assert d.reset_at > 1_000_000_000_000


async def test_a_closed_store_is_unavailable(redis_url: str, prefix: str) -> None:
    store = tk.RedisStore(redis_url)
    limiter = tk.Limiter(tk.Strategy.gcra(10, 1000), store=store, prefix=prefix)
    assert (await limiter.check("k")).allowed
    await store.close()
    with pytest.raises(tk.StoreUnavailableError):
        await limiter.check("k")
    other = tk.RedisStore(redis_url)
    other.close_sync()
    with pytest.raises(tk.StoreUnavailableError):
        tk.Limiter(tk.Strategy.gcra(10, 1000), store=other).check_sync("k")


def test_memory_and_redis_agree_on_a_timeline(redis_store: tk.RedisStore, prefix: str) -> None:
    results = []
    for store in (tk.MemoryStore(), redis_store):
        clock = tk.ManualClock(1_000)
        limiter = tk.Limiter(tk.Strategy.sliding_window(4, 1000, buckets=3), store=store, clock=clock, prefix=prefix)
        timeline = []
        for step in range(40):
            clock.advance(37 * (step % 5))
            timeline.append(limiter.check_sync("k", 1 + step % 2))
        results.append(timeline)
    assert results[0] == results[1]


def test_a_blocking_call_waiting_on_redis_releases_the_gil(doomed: RedisServer) -> None:
    store = tk.RedisStore(doomed.url, timeout_ms=400)
    limiter = tk.Limiter(tk.Strategy.gcra(10, 1000), store=store, fail_policy="fail_open")
    limiter.check_sync("k")
    counter = 0
    done = threading.Event()

    def spin() -> None:
        nonlocal counter
        while not done.is_set():
            counter += 1

    spinner = threading.Thread(target=spin)
    spinner.start()
    os.kill(doomed.proc.pid, signal.SIGSTOP)  # Redis stops answering: the call waits out its timeout
    try:
        before = counter
        started = time.monotonic()
        d = limiter.check_sync("k")
        waited = time.monotonic() - started
        during = counter - before
    finally:
        os.kill(doomed.proc.pid, signal.SIGCONT)
        done.set()
        spinner.join()
    assert d.fallback and waited >= 0.3
    # While the call waited, another Python thread ran: the GIL was released.
    assert during > 10_000
