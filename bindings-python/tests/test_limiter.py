"""The limiter, its strategies and its decisions, as a Python caller sees them."""

from __future__ import annotations

import dataclasses

import pytest

import throttlekit as tk


def gcra_limiter(clock: tk.ManualClock, store: object = None, prefix: str = "") -> tk.Limiter:
    # 10 per second, burst 2: T = 100 ms, tau = 200 ms.
    return tk.Limiter(tk.Strategy.gcra(10, 1000, burst=2), clock=clock, store=store, prefix=prefix)


def test_gcra_admits_the_burst_then_says_when_to_retry(store: object, prefix: str) -> None:
    clock = tk.ManualClock(1_000)
    limiter = gcra_limiter(clock, store, prefix)
    first = limiter.check_sync("user:1")
    assert first == tk.Decision(allowed=True, limit=2, remaining=1, reset_at=1_100, retry_after_ms=0)
    assert limiter.check_sync("user:1").allowed
    denied = limiter.check_sync("user:1")
    assert (denied.allowed, denied.remaining, denied.retry_after_ms, denied.fallback) == (False, 0, 100, False)
    clock.advance(100)
    assert limiter.check_sync("user:1").allowed
    assert limiter.check_sync("user:2").remaining == 1  # keys are independent


def test_peek_and_forecast_consume_nothing_and_reset_forgets(store: object, prefix: str) -> None:
    clock = tk.ManualClock(0)
    limiter = gcra_limiter(clock, store, prefix)
    assert limiter.peek_sync("k").remaining == 2
    forecast = limiter.forecast_sync("k", 2)
    assert forecast.allowed and forecast.remaining == 0
    assert limiter.peek_sync("k").remaining == 2
    limiter.check_sync("k", 2)
    assert limiter.peek_sync("k").remaining == 0
    assert not limiter.forecast_sync("k").allowed
    limiter.reset_sync("k")
    assert limiter.peek_sync("k").remaining == 2


def test_check_many_reads_the_clock_once_and_returns_one_decision_per_key(store: object, prefix: str) -> None:
    limiter = gcra_limiter(tk.ManualClock(5_000), store, prefix)
    decisions = limiter.check_many_sync(["a", "b", "a", "a"])
    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert {d.reset_at for d in decisions if d.allowed} == {5_100, 5_200}


def test_a_cost_above_the_burst_is_denied_with_a_finite_retry_not_an_error() -> None:
    d = gcra_limiter(tk.ManualClock(0)).check_sync("k", 3)
    assert not d.allowed and 0 < d.retry_after_ms < 10_000


def test_every_strategy_builds_and_decides() -> None:
    strategies = [
        tk.Strategy.gcra(5, 1000),
        tk.Strategy.token_bucket(5, 2.5),
        tk.Strategy.fixed_window(5, 1000),
        tk.Strategy.sliding_window(5, 1000, buckets=4),
        tk.Strategy.sliding_window_log(5, 1000),
        tk.Strategy.quota(5, "calendar-day", offset_minutes=-300),
        tk.Strategy.quota(5, "calendar-week", week_starts_on=0),
        tk.Strategy.quota(5, "calendar-month"),
        tk.Strategy.quota(5, "fixed", period_ms=1000, anchor=500),
        tk.Strategy.quota(5, "rolling", period_ms=1000, buckets=5),
    ]
    for s in strategies:
        limiter = tk.Limiter(s, clock=tk.ManualClock(1_700_000_000_000))
        results = [limiter.check_sync("k").allowed for _ in range(6)]
        assert results == [True] * 5 + [False], s
        assert s.limit == 5


def test_fixed_window_reports_the_window_end() -> None:
    d = tk.Limiter(tk.Strategy.fixed_window(3, 1000), clock=tk.ManualClock(2_500)).check_sync("k")
    assert (d.limit, d.remaining, d.reset_at) == (3, 2, 3_000)


def test_a_dict_spec_is_the_same_strategy_as_the_typed_constructor() -> None:
    typed = tk.Strategy.sliding_window(100, 60_000, buckets=6)
    spec = {"kind": "slidingWindow", "options": {"limit": 100, "windowMs": 60_000, "buckets": 6}}
    assert tk.Strategy.from_dict(spec) == typed
    assert typed.to_dict() == spec
    assert tk.Strategy.from_json('{"kind": "slidingWindow", "options": {"limit": 100, "windowMs": 60000, "buckets": 6}}') == typed
    assert typed.kind == "slidingWindow"
    assert "slidingWindow" in repr(typed)
    # A limiter also takes the dict directly.
    assert tk.Limiter(spec).strategy == typed


def test_decisions_are_frozen_values() -> None:
    d = gcra_limiter(tk.ManualClock(0)).check_sync("k")
    with pytest.raises(AttributeError):
        d.allowed = False  # type: ignore[misc]
    same = tk.Decision(allowed=True, limit=2, remaining=1, reset_at=100, retry_after_ms=0)
    assert d == same and hash(d) == hash(same)
    assert d.to_dict() == {"allowed": True, "limit": 2, "remaining": 1, "resetAt": 100, "retryAfterMs": 0}
    assert repr(d).startswith("Decision(allowed=True")
    assert not dataclasses.is_dataclass(d)  # a native value, not a Python dataclass


def test_prefixes_namespace_one_shared_store() -> None:
    store, clock = tk.MemoryStore(), tk.ManualClock(0)
    a = gcra_limiter(clock, store, "a")
    b = gcra_limiter(clock, store, "b")
    a.check_sync("k", 2)
    assert b.check_sync("k").allowed
    assert len(store) == 2
    assert (a.prefix, b.prefix) == ("a", "b")


def test_the_memory_store_expires_on_the_limiters_clock() -> None:
    clock = tk.ManualClock(0)
    limiter = tk.Limiter(tk.Strategy.fixed_window(1, 1000), clock=clock)
    assert limiter.check_sync("k").allowed
    assert not limiter.check_sync("k").allowed
    clock.set(1_000)
    assert limiter.check_sync("k").allowed


def test_a_bounded_memory_store_evicts() -> None:
    store = tk.MemoryStore(max_keys=16)
    limiter = tk.Limiter(tk.Strategy.gcra(1, 1000), store=store, clock=tk.ManualClock(0))
    for i in range(1_000):
        limiter.check_sync(f"k{i}")
    assert 0 < len(store) <= 32


def test_quotas_fail_closed_by_default_and_others_raise() -> None:
    assert tk.Limiter(tk.Strategy.quota(5, "calendar-day")).fail_policy == "fail_closed"
    assert tk.Limiter(tk.Strategy.gcra(5, 1000)).fail_policy == "raise"
    assert tk.Limiter(tk.Strategy.gcra(5, 1000), fail_policy="fail_open").fail_policy == "fail_open"


def test_the_clock_moves_only_when_told() -> None:
    clock = tk.ManualClock(10)
    assert clock.advance(5) == 15
    clock.set(3)  # backwards is allowed
    assert clock.now_ms() == 3
    assert abs(tk.SystemClock().now_ms() - tk.Limiter(tk.Strategy.gcra(1, 1000)).check_sync("k").reset_at) < 60_000
