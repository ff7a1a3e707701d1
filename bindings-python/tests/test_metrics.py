"""Per-limiter metrics: off unless asked; checks counted by outcome, errors by code, fallbacks,
and the latency histogram of calls to a store outside the process (Redis). Every call is counted
once whichever way it goes: N calls down each path (sync and asyncio; memory, one node, a cluster,
Sentinel; limiter, leased limiter, multi limiter, shaper) move the counters by exactly N."""

from collections.abc import Iterator
from typing import Any, Optional

import pytest
import throttlekit as tk
from conftest import RedisServer


@pytest.fixture
def doomed() -> Iterator[RedisServer]:
    """A private Redis server the test may stop."""
    server = RedisServer()
    yield server
    server.stop()


def test_metrics_are_off_unless_asked() -> None:
    assert tk.Limiter(tk.Strategy.gcra(1, 1000)).metrics() is None


def test_checks_are_counted_by_outcome_and_errors_by_code() -> None:
    limiter = tk.Limiter(tk.Strategy.fixed_window(2, 1000), clock=tk.ManualClock(0), metrics=True)
    for _ in range(5):
        limiter.check_sync("k")
    with pytest.raises(tk.ConfigInvalidError):
        limiter.check_sync("k" * 300)  # longer than the store takes: core's error, counted
    limiter.peek_sync("k")  # not a check
    m = limiter.metrics()
    assert m is not None
    assert (m["allowed"], m["denied"], m["fallback_allowed"], m["fallback_denied"]) == (2, 3, 0, 0)
    assert m["errors"] == {"config_invalid": 1, "store_unavailable": 0, "rate_limit_exceeded": 0,
                           "queue_full": 0, "not_implemented": 0}
    latency = m["store_latency"]
    assert len(latency["counts"]) == len(latency["bounds_us"]) + 1
    assert latency["count"] == 0  # the memory store is in process: counted, not timed


def test_metrics_must_be_a_bool() -> None:
    with pytest.raises(tk.ConfigInvalidError, match="metrics"):
        tk.Limiter(tk.Strategy.gcra(1, 1000), metrics=1)  # type: ignore[arg-type]


async def test_redis_calls_are_timed_and_fallbacks_counted(doomed: RedisServer) -> None:
    store = tk.RedisStore(doomed.url, timeout_ms=300)
    opened = tk.Limiter(tk.Strategy.gcra(10, 1000), store=store, fail_policy="fail_open", metrics=True)
    raising = tk.Limiter(tk.Strategy.gcra(10, 1000), store=store, metrics=True)
    await opened.check("k")
    opened.check_sync("k")
    m = opened.metrics()
    assert m is not None and m["allowed"] == 2
    assert m["store_latency"]["count"] == 2 and m["store_latency"]["sum_us"] > 0
    doomed.stop()
    assert (await opened.check("k")).fallback
    with pytest.raises(tk.StoreUnavailableError):
        raising.check_sync("k")
    m = opened.metrics()
    assert m is not None and (m["allowed"], m["fallback_allowed"]) == (2, 1)
    r = raising.metrics()
    assert r is not None and r["errors"]["store_unavailable"] == 1


def test_peeks_and_forecasts_are_counted_apart_from_checks() -> None:
    limiter = tk.Limiter(tk.Strategy.fixed_window(2, 1000), clock=tk.ManualClock(0), metrics=True)
    limiter.check_sync("k")
    limiter.peek_sync("k")
    limiter.peek_sync("other")
    limiter.forecast_sync("k", 2)
    m = limiter.metrics()
    assert m is not None
    assert (m["allowed"], m["denied"], m["peeks"], m["forecasts"]) == (1, 0, 2, 1)


def test_the_key_length_rule_is_the_same_on_redis(redis_store: tk.RedisStore, prefix: str) -> None:
    """One rule on every store: 256 bytes, prefix included, refused before Redis sees the key."""
    limiter = tk.Limiter(tk.Strategy.gcra(10, 1000), store=redis_store, prefix=prefix)
    fits = "k" * (256 - len(prefix) - 1)
    assert limiter.check_sync(fits).allowed
    with pytest.raises(tk.ConfigInvalidError, match="at most 256 bytes"):
        limiter.check_sync(fits + "k")
    memory = tk.Limiter(tk.Strategy.gcra(10, 1000), prefix=prefix)
    assert memory.check_sync(fits).allowed
    with pytest.raises(tk.ConfigInvalidError, match="at most 256 bytes"):
        memory.check_sync(fits + "k")


def test_a_multi_limiter_counts_its_combined_decisions() -> None:
    assert tk.MultiLimiter("all", [tk.Dimension("ip", tk.Strategy.fixed_window(2, 1000))]).metrics() is None
    multi = tk.MultiLimiter("all", [tk.Dimension("ip", tk.Strategy.fixed_window(3, 1000)),
                                    tk.Dimension("user", tk.Strategy.fixed_window(2, 1000))],
                            clock=tk.ManualClock(0), metrics=True)
    got = [multi.check_sync(["1.2.3.4", "u"]).decision.allowed for _ in range(4)]
    assert got == [True, True, False, False]
    with pytest.raises(tk.ConfigInvalidError):
        multi.check_sync(["only one key"])
    m = multi.metrics()
    assert m is not None
    assert (m["allowed"], m["denied"], m["peeks"], m["forecasts"]) == (2, 2, 0, 0)
    assert m["errors"]["config_invalid"] == 1
    with pytest.raises(tk.ConfigInvalidError, match="metrics"):
        tk.MultiLimiter("all", [tk.Dimension("ip", tk.Strategy.gcra(1, 1000))], metrics="yes")  # type: ignore[arg-type]


async def test_a_shaper_counts_reservations_accepted_and_rejected(redis_store: tk.RedisStore, prefix: str) -> None:
    assert tk.Shaper(5, 1000).metrics() is None
    shaper = tk.Shaper(5, 300, clock=tk.ManualClock(0), metrics=True)  # 200 ms apart, 300 ms of queue
    got = [shaper.reserve_sync("k").accepted for _ in range(4)]
    assert got == [True, True, False, False]
    m = shaper.metrics()
    assert m is not None and (m["allowed"], m["denied"]) == (2, 2)
    assert m["store_latency"]["count"] == 0
    # On Redis the same counts, and each call is timed.
    remote = tk.Shaper(5, 300, store=redis_store, prefix=prefix, metrics=True)
    got = [(await remote.reserve("k")).accepted for _ in range(4)]
    r = remote.metrics()
    assert r is not None and (r["allowed"], r["denied"]) == (got.count(True), got.count(False))
    assert r["store_latency"]["count"] == 4


N = 7


def _moved(m: dict[str, Any]) -> tuple[int, int, int, int, int]:
    """What the counters moved: checks decided, fallbacks, peeks, forecasts, errors."""
    return (m["allowed"] + m["denied"], m["fallback_allowed"] + m["fallback_denied"], m["peeks"], m["forecasts"],
            sum(m["errors"].values()))


async def _every_path_counts_once(store: Optional[tk.RedisStore], tag: str) -> None:
    """N calls of fresh limiters, a multi limiter and a shaper on `store` (None: memory) down each
    of their sync and asyncio methods: each check, peek, forecast and reservation counted once,
    and on Redis each store call timed."""
    remote = store is not None

    def limiter(path: str, **options: Any) -> tk.Limiter:
        return tk.Limiter(tk.Strategy.fixed_window(4, 60_000), store=store, clock=tk.ManualClock(1_000),
                          prefix=f"{tag}:{path}", metrics=True, **options)

    async def check(lim: tk.Limiter) -> object:
        return await lim.check("k")

    async def check_many(lim: tk.Limiter) -> object:
        return await lim.check_many(["k"])

    async def check_sync(lim: tk.Limiter) -> object:
        return lim.check_sync("k")

    async def check_many_sync(lim: tk.Limiter) -> object:
        return lim.check_many_sync(["k"])

    for path in (check_sync, check, check_many_sync, check_many):
        lim = limiter(path.__name__)
        for _ in range(N):
            await path(lim)
        m = lim.metrics()
        assert m is not None
        assert (m["allowed"], m["denied"]) == (4, 3), (tag, path.__name__)
        assert _moved(m) == (N, 0, 0, 0, 0), (tag, path.__name__, m)
        assert m["store_latency"]["count"] == (N if remote else 0), (tag, path.__name__)
    reads = limiter("reads")
    for _ in range(N):
        reads.peek_sync("k")
        await reads.peek("k")
        reads.forecast_sync("k")
        await reads.forecast("k")
    m = reads.metrics()
    assert m is not None and _moved(m) == (0, 0, 2 * N, 2 * N, 0), (tag, m)
    refused = limiter("refused")
    with pytest.raises(tk.ConfigInvalidError):
        refused.check_sync("k" * 600)
    for call in (refused.check, refused.peek, refused.forecast):
        with pytest.raises(tk.ConfigInvalidError):
            await call("k" * 600)
    m = refused.metrics()
    assert m is not None and _moved(m) == (0, 0, 0, 0, 4), (tag, m)
    leased = limiter("leased", lease={"batch": 2})
    for _ in range(N):
        leased.check_sync("sync")
        await leased.check("async")
    m = leased.metrics()
    assert m is not None and _moved(m) == (2 * N, 0, 0, 0, 0), (tag, m)

    multi = tk.MultiLimiter("all", [tk.Dimension("a", tk.Strategy.fixed_window(4, 60_000)),
                                    tk.Dimension("b", tk.Strategy.gcra(100, 60_000))],
                            store=store, clock=tk.ManualClock(1_000), prefix=f"{tag}:multi", metrics=True)
    shaper = tk.Shaper(1000, 60_000, store=store, prefix=f"{tag}:shaper", metrics=True)
    for _ in range(N):
        multi.check_sync(["x", "y"])
        await multi.check(["x", "y"])
        shaper.reserve_sync("x")
        await shaper.reserve("x")
        shaper.schedule_sync("y")
        await shaper.schedule("y")
    mm, sm = multi.metrics(), shaper.metrics()
    assert mm is not None and sm is not None
    assert (mm["allowed"], mm["denied"]) == (4, 2 * N - 4), (tag, mm)
    assert _moved(mm) == (2 * N, 0, 0, 0, 0), (tag, mm)
    assert _moved(sm) == (4 * N, 0, 0, 0, 0), (tag, sm)
    assert (mm["store_latency"]["count"], sm["store_latency"]["count"]) == ((2 * N, 4 * N) if remote else (0, 0))


async def test_every_path_counts_each_call_once_on_memory() -> None:
    await _every_path_counts_once(None, "memory")


async def test_every_path_counts_each_call_once_on_one_node(redis_url: str, prefix: str) -> None:
    await _every_path_counts_once(tk.RedisStore(redis_url, timeout_ms=3000), prefix)


async def test_every_path_counts_each_call_once_on_a_cluster(redis_cluster_urls: str, prefix: str) -> None:
    await _every_path_counts_once(tk.RedisStore(redis_cluster_urls, mode="cluster", timeout_ms=3000), prefix)


async def test_every_path_counts_each_call_once_under_sentinel(redis_sentinel_urls: str, prefix: str) -> None:
    store = tk.RedisStore(redis_sentinel_urls, mode="sentinel", service_name="tkmain", timeout_ms=3000)
    await _every_path_counts_once(store, prefix)


async def test_an_unreachable_store_counts_each_call_once_by_the_fail_policy(doomed: RedisServer) -> None:
    store = tk.RedisStore(doomed.url, timeout_ms=500)
    opened = tk.Limiter(tk.Strategy.gcra(10, 1000), store=store, fail_policy="fail_open", metrics=True)
    raising = tk.Limiter(tk.Strategy.gcra(10, 1000), store=store, metrics=True)
    doomed.stop()
    for _ in range(N):
        assert opened.check_sync("k").fallback and (await opened.check("k")).fallback
        with pytest.raises(tk.StoreUnavailableError):
            raising.check_sync("k")
        with pytest.raises(tk.StoreUnavailableError):
            await raising.check("k")
    o, r = opened.metrics(), raising.metrics()
    assert o is not None and r is not None
    assert (o["fallback_allowed"], _moved(o)) == (2 * N, (0, 2 * N, 0, 0, 0))
    assert (r["errors"]["store_unavailable"], _moved(r)) == (2 * N, (0, 0, 0, 0, 2 * N))
