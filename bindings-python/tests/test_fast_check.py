"""`Limiter.check_sync` is a raw method that reads well-formed arguments itself and passes every
other call to PyO3's method (src/fast_check.rs): every way of calling decides alike, and the
method looks and fails as it did."""

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
    """A `str` subclass, read as the `str` it is."""


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.kind)
@pytest.mark.parametrize("prefix", [None, "app"])
def test_every_way_of_calling_check_sync_decides_alike(strategy: tk.Strategy, prefix: str | None) -> None:
    # One limiter per way of passing the key and the cost, each with a store of its own, on one
    # clock: every way must give the same decisions, costs above 1 included.
    clock = tk.ManualClock(1_700_000_000_000)
    ways: list[Callable[[tk.Limiter, str, int], tk.Decision]] = [
        lambda lim, k, c: lim.check_sync(k) if c == 1 else lim.check_sync(k, c),
        lambda lim, k, c: lim.check_sync(k, c),
        lambda lim, k, c: lim.check_sync(k, cost=c),
        lambda lim, k, c: lim.check_sync(key=k, cost=c),
        lambda lim, k, c: lim.check_sync(cost=c, key=k),
        lambda lim, k, c: tk.Limiter.check_sync(lim, Key(k), float(c)),
    ]
    limiters = [tk.Limiter(strategy, clock=clock, prefix=prefix, store=tk.MemoryStore()) for _ in ways]
    rng = random.Random(20)
    denied = 0
    for _ in range(600):
        key, cost = f"user:{rng.randrange(4)}", rng.choice([1, 1, 1, 2, 3])
        decisions = [way(lim, key, cost) for way, lim in zip(ways, limiters)]
        assert all(d == decisions[0] for d in decisions), (key, cost, decisions)
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
    with pytest.raises(TypeError, match="got multiple values for argument 'key'"):
        limiter.check_sync("a", key="b")  # type: ignore[misc]
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'key'"):
        limiter.check_sync(cost=1)  # type: ignore[call-arg]
    with pytest.raises(tk.ConfigTypeError, match="cost must be an int") as err:
        limiter.check_sync("a", cost=True)
    assert "while processing 'cost'" in "".join(getattr(err.value, "__notes__", []))
    with pytest.raises(TypeError, match="descriptor 'check_sync' for 'throttlekit.Limiter' objects doesn't apply"):
        tk.Limiter.check_sync(3, "a")  # type: ignore[arg-type]
    with pytest.raises(UnicodeEncodeError):
        limiter.check_sync("\udc80")
    with pytest.raises(tk.ConfigInvalidError, match="cost must be a positive integer"):
        limiter.check_sync("a", 0)
    # A key over the store's bound: core's error, as the method raised it.
    with pytest.raises(tk.ConfigInvalidError) as err:
        limiter.check_sync("k" * 9)
    assert err.value.code == "config_invalid"


@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.name)
def test_the_shared_vectors_pass_through_the_one_argument_call(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The runner passes every cost; here a check of cost 1 on a `Limiter` is `check_sync(key)`.
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
