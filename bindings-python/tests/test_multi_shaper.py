"""Multi-dimensional limits and the shaper."""

from __future__ import annotations

import time

import pytest

import throttlekit as tk


def multi(rule: str, store: object = None, prefix: str = "") -> tuple[tk.MultiLimiter, tk.ManualClock]:
    clock = tk.ManualClock(0)
    dims = [
        tk.Dimension("ip", tk.Strategy.fixed_window(3, 1000)),
        tk.Dimension("user", {"kind": "fixedWindow", "options": {"limit": 2, "windowMs": 1000}}),
    ]
    return tk.MultiLimiter(rule, dims, store=store, clock=clock, prefix=prefix), clock


def test_all_commits_nothing_when_one_dimension_denies(store: object, prefix: str) -> None:
    limiter, _ = multi("all", store, prefix)
    first = limiter.check_sync(["1.2.3.4", "alice"])
    assert first.allowed and first.binding == "user" and first.remaining == 1
    assert [d.remaining for d in first.dimensions] == [2, 1]
    limiter.check_sync(["1.2.3.4", "alice"])
    denied = limiter.check_sync(["1.2.3.4", "alice"])
    assert not denied.allowed and denied.binding == "user" and denied.retry_after_ms == 1000
    # The ip dimension was not charged for the denied request: bob still gets its last unit.
    assert limiter.check_sync(["1.2.3.4", "bob"]).allowed
    assert not limiter.check_sync(["1.2.3.4", "carol"]).allowed


def test_any_admits_while_one_dimension_allows(store: object, prefix: str) -> None:
    limiter, _ = multi("any", store, prefix)
    results = [limiter.check_sync(["ip", "u"]) for _ in range(4)]
    assert [r.allowed for r in results] == [True, True, True, False]
    assert results[2].binding == "ip"
    limiter.reset_sync(["ip", "u"])
    assert limiter.check_sync(["ip", "u"]).remaining == 2


def test_cost_multipliers_scale_each_dimension() -> None:
    dims = [tk.Dimension("a", tk.Strategy.gcra(10, 1000), cost_multiplier=3), tk.Dimension("b", tk.Strategy.gcra(10, 1000))]
    limiter = tk.MultiLimiter("all", dims, clock=tk.ManualClock(0))
    d = limiter.check_sync(["x", "x"], 2)
    assert (d.binding, d.remaining, [x.remaining for x in d.dimensions]) == ("a", 4, [4, 8])
    assert limiter.dimensions[0].cost_multiplier == 3 and limiter.rule == "all"


def test_one_key_per_dimension_is_required() -> None:
    limiter, _ = multi("all")
    with pytest.raises(tk.ConfigInvalidError, match="one key per dimension"):
        limiter.check_sync(["only-one"])


def test_the_shaper_queues_then_rejects_with_a_hint(store: object, prefix: str) -> None:
    clock = tk.ManualClock(0)
    shaper = tk.Shaper(10, 250, store=store, clock=clock, prefix=prefix)
    delays = [shaper.reserve_sync("out").delay_ms for _ in range(3)]
    assert delays == [0, 100, 200]
    assert shaper.reserve_sync("out") == tk.Reservation(accepted=False, delay_ms=50)
    with pytest.raises(tk.QueueFullError) as err:
        shaper.schedule_sync("out")
    assert err.value.code == "queue_full" and err.value.retry_after_ms == 50
    shaper.reset_sync("out")
    assert shaper.reserve_sync("out").delay_ms == 0


def test_schedule_sync_sleeps_the_delay_and_releases_the_gil() -> None:
    import threading

    shaper = tk.Shaper(5, 1000, clock=tk.ManualClock(0))  # 200 ms between departures
    shaper.reserve_sync("k")
    counter = 0
    done = threading.Event()

    def spin() -> None:
        nonlocal counter
        while not done.is_set():
            counter += 1

    spinner = threading.Thread(target=spin)
    spinner.start()
    started = time.monotonic()
    r = shaper.schedule_sync("k")
    elapsed = time.monotonic() - started
    done.set()
    spinner.join()
    assert r.delay_ms == 200 and elapsed >= 0.19
    # Had the GIL been held for those 200 ms, the spinning thread could not have counted.
    assert counter > 1_000
