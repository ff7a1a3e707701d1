"""`Limiter.check_sync` is a raw method for `check_sync(key)` on a memory store (src/fast_check.rs)
and PyO3's method for every other call: both ways decide alike and look alike."""

from __future__ import annotations

import inspect
import random
from pathlib import Path
from typing import Any, Callable

import pytest

import throttlekit as tk
from conftest import VECTORS
from throttlekit import conformance

STRATEGIES = [
    tk.Strategy.gcra(5, 1000),
    tk.Strategy.gcra(3, 1000, burst=6),
    tk.Strategy.token_bucket(5, 2.5),
    tk.Strategy.fixed_window(5, 1000),
    tk.Strategy.sliding_window(5, 1000, buckets=4),
    tk.Strategy.sliding_window_log(5, 1000),
    tk.Strategy.quota(5, "rolling", period_ms=1000, buckets=5),
]


class Key(str):
    """A `str` subclass: the raw method passes it to PyO3's method."""


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.kind)
@pytest.mark.parametrize("prefix", [None, "app"])
def test_every_way_of_calling_check_sync_decides_alike(strategy: tk.Strategy, prefix: str | None) -> None:
    # One limiter per way of calling, each with a store of its own, on one clock: the raw way
    # (one positional str) and the ways PyO3's method answers must give the same decisions.
    clock = tk.ManualClock(1_700_000_000_000)
    ways = [
        lambda lim, k: lim.check_sync(k),
        lambda lim, k: tk.Limiter.check_sync(lim, k),
        lambda lim, k: lim.check_sync(k, 1),
        lambda lim, k: lim.check_sync(key=k),
        lambda lim, k: lim.check_sync(Key(k)),
    ]
    limiters = [tk.Limiter(strategy, clock=clock, prefix=prefix, store=tk.MemoryStore()) for _ in ways]
    rng = random.Random(20)
    denied = 0
    for _ in range(600):
        key = f"user:{rng.randrange(4)}"
        decisions = [way(lim, key) for way, lim in zip(ways, limiters)]
        assert all(d == decisions[0] for d in decisions), (key, decisions)
        denied += not decisions[0].allowed
        clock.advance(rng.choice([0, 0, 0, 1, 7, 150, 1200]))
    assert 0 < denied < 600  # both answers were exercised


def test_check_sync_keeps_its_signature_and_doc() -> None:
    method = tk.Limiter.check_sync
    assert str(inspect.signature(method)) == "(self, key, cost=1)"
    assert method.__text_signature__ == "(self, key, cost=1)"
    assert method.__qualname__ == "Limiter.check_sync"
    assert method.__doc__ == "Checks a request of `cost` units for `key`, consuming them when allowed."


def test_bad_calls_raise_what_they_raised() -> None:
    limiter = tk.Limiter(tk.Strategy.gcra(5, 1000), store=tk.MemoryStore(max_key_length=8))
    with pytest.raises(tk.ConfigTypeError, match="key must be a str, not int") as err:
        limiter.check_sync(1)  # type: ignore[arg-type]
    assert err.value.code == "config_invalid"
    with pytest.raises(TypeError, match=r"Limiter.check_sync\(\) missing 1 required positional argument: 'key'"):
        limiter.check_sync()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"Limiter.check_sync\(\) takes from 1 to 2 positional arguments"):
        limiter.check_sync("a", 1, 2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        limiter.check_sync("a", foo=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="descriptor 'check_sync' for 'throttlekit.Limiter' objects doesn't apply"):
        tk.Limiter.check_sync(3, "a")  # type: ignore[arg-type]
    with pytest.raises(UnicodeEncodeError):
        limiter.check_sync("\udc80")
    with pytest.raises(tk.ConfigInvalidError, match="cost must be a positive integer"):
        limiter.check_sync("a", 0)
    # A key over the store's bound: the same error from the raw way and from PyO3's.
    with pytest.raises(tk.ThrottleKitError) as raw:
        limiter.check_sync("k" * 9)
    with pytest.raises(tk.ThrottleKitError) as pyo3:
        limiter.check_sync("k" * 9, 1)
    assert (type(raw.value), str(raw.value), raw.value.code) == (type(pyo3.value), str(pyo3.value), pyo3.value.code)


@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.name)
def test_the_shared_vectors_pass_through_the_one_argument_call(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The runner passes every cost; here a check of cost 1 on a `Limiter` is `check_sync(key)`,
    # the call the raw method answers itself.
    runner_call = conformance._call
    raw_calls = 0

    def call(target: Any, op: str, key: Any, cost: Any, use_async: bool) -> Callable[[], Any]:
        nonlocal raw_calls
        if op == "check" and not use_async and type(cost) is int and cost == 1 and type(target) is tk.Limiter:
            raw_calls += 1
            return lambda: target.check_sync(key)
        return runner_call(target, op, key, cost, use_async)

    monkeypatch.setattr(conformance, "_call", call)
    report = conformance.replay_files([str(path)], conformance.StoreFactory("memory"))
    assert report.failed == 0, "\n".join(report.failures[:20])
    assert report.passed > 0 and raw_calls > 0
