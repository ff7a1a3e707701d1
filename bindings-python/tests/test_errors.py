"""Bad input is refused with the right class, a stable `.code` and a message naming the argument.

Never a panic message, never a crash: every case below goes through the native module.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

import throttlekit as tk

NAN, INF = float("nan"), float("inf")
HUGE = 2**80


def test_every_code_has_its_class_and_the_classes_form_one_hierarchy() -> None:
    classes = {
        "config_invalid": tk.ConfigInvalidError,
        "store_unavailable": tk.StoreUnavailableError,
        "rate_limit_exceeded": tk.RateLimitExceededError,
        "queue_full": tk.QueueFullError,
        "not_implemented": tk.OperationNotImplementedError,
    }
    assert sorted(tk.ERROR_CODES) == sorted(classes)
    for code, cls in classes.items():
        assert cls.code == code and issubclass(cls, tk.ThrottleKitError)
        assert cls.__module__ == "throttlekit"
    assert issubclass(tk.ConfigInvalidError, ValueError)
    assert issubclass(tk.ConfigTypeError, tk.ConfigInvalidError) and issubclass(tk.ConfigTypeError, TypeError)
    assert tk.ConfigTypeError.code == "config_invalid"
    assert issubclass(tk.OperationNotImplementedError, NotImplementedError)


def limiter() -> tk.Limiter:
    return tk.Limiter(tk.Strategy.gcra(10, 1000), clock=tk.ManualClock(0))


BAD_COSTS: list[tuple[Any, type[Exception], str]] = [
    (0, tk.ConfigInvalidError, "cost must be a positive integer"),
    (-1, tk.ConfigInvalidError, "cost must be a positive integer"),
    (-HUGE, tk.ConfigInvalidError, "cost must be a positive integer"),
    (1.5, tk.ConfigInvalidError, "cost must be a positive integer"),
    (NAN, tk.ConfigInvalidError, "cost must be a positive integer"),
    (INF, tk.ConfigInvalidError, "cost must be a positive integer"),
    (2**53 + 1, tk.ConfigInvalidError, "cost must be <= 2^53"),
    (2**64, tk.ConfigInvalidError, "cost must be <= 2^53"),
    (HUGE, tk.ConfigInvalidError, "cost must be <= 2^53"),
    (True, tk.ConfigTypeError, "cost must be an int, not bool"),
    (None, tk.ConfigTypeError, "cost must be an int, not NoneType"),
    ("1", tk.ConfigTypeError, "cost must be an int, not str"),
    ([1], tk.ConfigTypeError, "cost must be an int, not list"),
]


@pytest.mark.parametrize(("cost", "cls", "message"), BAD_COSTS, ids=repr)
def test_bad_costs_are_refused_everywhere_a_cost_is_taken(cost: Any, cls: type[Exception], message: str) -> None:
    lim = limiter()
    multi = tk.MultiLimiter("all", [tk.Dimension("a", tk.Strategy.gcra(1, 1000))])
    shaper = tk.Shaper(1, 1000)
    calls: list[Callable[[], object]] = [
        lambda: lim.check_sync("k", cost),
        lambda: lim.forecast_sync("k", cost),
        lambda: lim.check_many_sync(["k"], cost),
        lambda: lim.check("k", cost),  # refused before any awaitable is made
        lambda: multi.check_sync(["k"], cost),
        lambda: shaper.reserve_sync("k", cost),
        lambda: shaper.schedule_sync("k", cost),
    ]
    for call in calls:
        with pytest.raises(cls, match=message.replace("^", r"\^")) as err:
            call()
        assert err.value.code == "config_invalid"
    # Nothing was consumed by the refused calls.
    assert lim.peek_sync("k").remaining == 10


def test_whole_float_costs_are_accepted_like_json_numbers() -> None:
    assert limiter().check_sync("k", 2.0).remaining == 8


def test_costs_up_to_2_53_are_accepted_and_simply_denied() -> None:
    d = limiter().check_sync("k", 2**53)
    assert not d.allowed and d.retry_after_ms > 0


BAD_OPTIONS: list[tuple[Callable[[], object], type[Exception], str]] = [
    (lambda: tk.Strategy.gcra(0, 1000), tk.ConfigInvalidError, "gcra.limit must be >= 1"),
    (lambda: tk.Strategy.gcra(-5, 1000), tk.ConfigInvalidError, "gcra.limit must be >= 1"),
    (lambda: tk.Strategy.gcra(1.5, 1000), tk.ConfigInvalidError, "gcra.limit must be an integer"),
    (lambda: tk.Strategy.gcra(NAN, 1000), tk.ConfigInvalidError, "gcra.limit must be a finite number"),
    (lambda: tk.Strategy.gcra(10, 0), tk.ConfigInvalidError, "gcra.periodMs must be > 0"),
    (lambda: tk.Strategy.gcra(10, -1), tk.ConfigInvalidError, "gcra.periodMs must be > 0"),
    (lambda: tk.Strategy.gcra(10, INF), tk.ConfigInvalidError, "gcra.periodMs must be a finite number"),
    (lambda: tk.Strategy.gcra(10, 1000, burst=0), tk.ConfigInvalidError, "gcra.burst must be >= 1"),
    (lambda: tk.Strategy.gcra(HUGE, 1000), tk.ConfigInvalidError, "limit must be <= 2"),
    (lambda: tk.Strategy.gcra(2**53 + 1, 1000), tk.ConfigInvalidError, "limit must be <= 2"),
    (lambda: tk.Strategy.gcra(True, 1000), tk.ConfigTypeError, "limit must be an int or a float, not bool"),
    (lambda: tk.Strategy.gcra(None, 1000), tk.ConfigTypeError, "limit must be an int or a float, not NoneType"),  # type: ignore[arg-type]
    (lambda: tk.Strategy.gcra("10", 1000), tk.ConfigTypeError, "limit must be an int or a float, not str"),  # type: ignore[arg-type]
    (lambda: tk.Strategy.token_bucket(10, 0), tk.ConfigInvalidError, "tokenBucket.refillPerSec must be > 0"),
    (lambda: tk.Strategy.token_bucket(0.5, 1), tk.ConfigInvalidError, "tokenBucket.capacity must be an integer"),
    (lambda: tk.Strategy.fixed_window(10, 0), tk.ConfigInvalidError, "fixedWindow.windowMs must be >= 1"),
    (lambda: tk.Strategy.sliding_window(10, 1000, buckets=0), tk.ConfigInvalidError, "slidingWindow.buckets must be >= 1"),
    (lambda: tk.Strategy.sliding_window(10, 1000, buckets=2.5), tk.ConfigInvalidError, "slidingWindow.buckets must be an integer"),
    (lambda: tk.Strategy.sliding_window_log(-1, 1000), tk.ConfigInvalidError, "slidingWindowLog.limit must be >= 1"),
    (lambda: tk.Strategy.quota(10, "fixed"), tk.ConfigInvalidError, "quota.periodMs is required"),
    (lambda: tk.Strategy.quota(10, "calendar-day", offset_minutes=841), tk.ConfigInvalidError, "quota.offsetMinutes"),
    (lambda: tk.Strategy.quota(10, "calendar-day", offset_minutes=-841), tk.ConfigInvalidError, "quota.offsetMinutes"),
    (lambda: tk.Strategy.quota(10, "calendar-day", offset_minutes=1.5), tk.ConfigInvalidError, "quota.offsetMinutes"),
    (lambda: tk.Strategy.quota(10, "calendar-week", week_starts_on=7), tk.ConfigInvalidError, "quota.weekStartsOn"),
    (lambda: tk.Strategy.quota(10, "rolling", period_ms=1000, buckets=0), tk.ConfigInvalidError, "buckets must be >= 1"),
    (lambda: tk.Strategy.quota(10, "hourly"), tk.ConfigInvalidError, "reset_cadence must be"),  # type: ignore[arg-type]
    (lambda: tk.Strategy.quota(10, 3), tk.ConfigTypeError, "reset_cadence must be a str, not int"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("build", "cls", "message"), BAD_OPTIONS, ids=range(len(BAD_OPTIONS)))
def test_bad_strategy_options_name_the_option(build: Callable[[], object], cls: type[Exception], message: str) -> None:
    with pytest.raises(cls, match=message) as err:
        build()
    assert err.value.code == "config_invalid"


BAD_SPECS: list[tuple[Any, type[Exception], str]] = [
    ({"kind": "gcra"}, tk.ConfigInvalidError, "not a valid spec"),
    ({"kind": "leaky", "options": {}}, tk.ConfigInvalidError, "unknown variant"),
    ({"kind": "gcra", "options": {"limit": 1, "periodMs": 1, "extra": 1}}, tk.ConfigInvalidError, "unknown field"),
    ({"kind": "gcra", "options": {"limit": True, "periodMs": 1}}, tk.ConfigInvalidError, "boolean"),
    ({"kind": "gcra", "options": {"limit": NAN, "periodMs": 1}}, tk.ConfigInvalidError, "strategy.options.limit must be a finite number"),
    ({"kind": "gcra", "options": {"limit": 10, "periodMs": -INF}}, tk.ConfigInvalidError, "strategy.options.periodMs must be a finite number"),
    ({"kind": "gcra", "options": {"limit": HUGE, "periodMs": 1}}, tk.ConfigInvalidError, "gcra.limit must be <= 2"),
    ({"kind": "gcra", "options": {"limit": 10**400, "periodMs": 1}}, tk.ConfigInvalidError, "strategy.options.limit is too large"),
    ({"kind": "gcra", "options": {1: 2}}, tk.ConfigTypeError, "strategy.options keys must be str"),
    ({"kind": "gcra", "options": {"limit": object(), "periodMs": 1}}, tk.ConfigTypeError, "strategy.options.limit must be a JSON-like value"),
    ({"kind": "gcra", "options": {"limit": 0, "periodMs": 1}}, tk.ConfigInvalidError, "gcra.limit must be >= 1"),
]


@pytest.mark.parametrize(("spec", "cls", "message"), BAD_SPECS, ids=range(len(BAD_SPECS)))
def test_bad_dict_specs_are_refused(spec: Any, cls: type[Exception], message: str) -> None:
    for build in (tk.Strategy.from_dict, tk.Limiter, lambda s: tk.Dimension("d", s)):
        with pytest.raises(cls, match=message):
            build(spec)


def test_a_spec_must_be_a_dict_or_a_strategy() -> None:
    with pytest.raises(tk.ConfigTypeError, match="spec must be a dict, not list"):
        tk.Strategy.from_dict([])  # type: ignore[arg-type]
    with pytest.raises(tk.ConfigTypeError, match="strategy must be a Strategy or a dict spec, not str"):
        tk.Limiter("gcra")  # type: ignore[arg-type]
    with pytest.raises(tk.ConfigInvalidError, match="not a valid spec"):
        tk.Strategy.from_json("{not json")


BAD_ARGUMENTS: list[tuple[Callable[[], object], type[Exception], str]] = [
    (lambda: limiter().check_sync(42), tk.ConfigTypeError, "key must be a str, not int"),  # type: ignore[arg-type]
    (lambda: limiter().check_sync(None), tk.ConfigTypeError, "key must be a str, not NoneType"),  # type: ignore[arg-type]
    (lambda: limiter().check_many_sync("abc"), tk.ConfigTypeError, "keys must be a list of str, not str"),
    (lambda: limiter().check_many_sync(["a", 1]), tk.ConfigTypeError, r"keys\[1\] must be a str, not int"),  # type: ignore[list-item]
    (lambda: limiter().peek_sync(b"k"), tk.ConfigTypeError, "key must be a str, not bytes"),  # type: ignore[arg-type]
    (lambda: tk.Limiter(tk.Strategy.gcra(1, 1), clock=123), tk.ConfigTypeError, "clock must be"),  # type: ignore[arg-type]
    (lambda: tk.Limiter(tk.Strategy.gcra(1, 1), store={}), tk.ConfigTypeError, "store must be"),  # type: ignore[arg-type]
    (lambda: tk.Limiter(tk.Strategy.gcra(1, 1), prefix=3), tk.ConfigTypeError, "prefix must be a str"),  # type: ignore[arg-type]
    (lambda: tk.Limiter(tk.Strategy.gcra(1, 1), fail_policy="open"), tk.ConfigInvalidError, "failPolicy must be"),  # type: ignore[arg-type]
    (lambda: tk.Limiter(tk.Strategy.gcra(1, 1), server_clock=1), tk.ConfigTypeError, "server_clock must be a bool"),  # type: ignore[arg-type]
    (lambda: tk.ManualClock(NAN), tk.ConfigInvalidError, "now_ms must be an integer"),
    (lambda: tk.ManualClock(1.5), tk.ConfigInvalidError, "now_ms must be an integer"),
    (lambda: tk.ManualClock(HUGE), tk.ConfigInvalidError, "now_ms must be an integer"),
    (lambda: tk.ManualClock(True), tk.ConfigTypeError, "now_ms must be an int, not bool"),
    (lambda: tk.ManualClock(0).advance(-1), tk.ConfigInvalidError, "advance must be a non-negative"),
    (lambda: tk.ManualClock(0).set("x"), tk.ConfigTypeError, "now_ms must be an int, not str"),  # type: ignore[arg-type]
    (lambda: tk.MemoryStore(max_keys=0), tk.ConfigInvalidError, "maxKeys must be >= 1"),
    (lambda: tk.MemoryStore(max_keys=-1), tk.ConfigInvalidError, "max_keys must be an integer >= 0"),
    (lambda: tk.MultiLimiter("both", [tk.Dimension("a", tk.Strategy.gcra(1, 1))]), tk.ConfigInvalidError, "rule must be"),  # type: ignore[arg-type]
    (lambda: tk.MultiLimiter("all", []), tk.ConfigInvalidError, "dimensions must not be empty"),
    (lambda: tk.MultiLimiter("all", [1]), tk.ConfigTypeError, r"dimensions\[0\] must be a Dimension"),  # type: ignore[list-item]
    (lambda: tk.MultiLimiter("all", 5), tk.ConfigTypeError, "dimensions must be"),  # type: ignore[arg-type]
    (lambda: tk.MultiLimiter("all", [tk.Dimension("a", tk.Strategy.gcra(1, 1))] * 2), tk.ConfigInvalidError, "declared twice"),
    (lambda: tk.MultiLimiter("all", [tk.Dimension("a", tk.Strategy.gcra(1, 1))], hash_tag="{x}"), tk.ConfigInvalidError, "hashTag"),
    (lambda: tk.Dimension("", tk.Strategy.gcra(1, 1)) and tk.MultiLimiter("all", [tk.Dimension("", tk.Strategy.gcra(1, 1))]), tk.ConfigInvalidError, "name must not be empty"),
    (lambda: tk.Dimension("a", tk.Strategy.gcra(1, 1), cost_multiplier=0) and tk.MultiLimiter("all", [tk.Dimension("a", tk.Strategy.gcra(1, 1), cost_multiplier=0)]), tk.ConfigInvalidError, "costMultiplier"),
    (lambda: tk.Dimension("a", tk.Strategy.gcra(1, 1), cost_multiplier=1.5), tk.ConfigInvalidError, "cost_multiplier must be an integer"),
    (lambda: tk.Shaper(0, 100), tk.ConfigInvalidError, "leakyBucket.ratePerSec must be > 0"),
    (lambda: tk.Shaper(NAN, 100), tk.ConfigInvalidError, "leakyBucket.ratePerSec must be a finite number"),
    (lambda: tk.Shaper(1, -1), tk.ConfigInvalidError, "leakyBucket.maxQueueMs must be >= 0"),
    (lambda: tk.Shaper(1, None), tk.ConfigTypeError, "max_queue_ms must be an int or a float"),  # type: ignore[arg-type]
    (lambda: tk.RedisStore(5), tk.ConfigTypeError, "urls must be a str or a list of str, not int"),  # type: ignore[arg-type]
    (lambda: tk.RedisStore("redis://127.0.0.1:1", timeout_ms=-5), tk.ConfigInvalidError, "timeout_ms must be an integer"),
    (lambda: tk.RedisStore("redis://127.0.0.1:1", deterministic_replay="yes"), tk.ConfigTypeError, "deterministic_replay must be a bool"),  # type: ignore[arg-type]
    (lambda: tk.RedisStore("not a url"), tk.ConfigInvalidError, r"redis.urls \"not a url\" is not a valid Redis URL"),
]


@pytest.mark.parametrize(("call", "cls", "message"), BAD_ARGUMENTS, ids=range(len(BAD_ARGUMENTS)))
def test_bad_arguments_are_refused_with_a_code(call: Callable[[], object], cls: type[Exception], message: str) -> None:
    with pytest.raises(cls, match=message) as err:
        call()
    assert err.value.code in tk.ERROR_CODES  # type: ignore[attr-defined]


def test_an_unreachable_redis_is_store_unavailable_not_a_hang() -> None:
    import time

    from conftest import free_port

    started = time.monotonic()
    with pytest.raises(tk.StoreUnavailableError) as err:
        store = tk.RedisStore(f"redis://127.0.0.1:{free_port()}", timeout_ms=300)
        tk.Limiter(tk.Strategy.gcra(1, 1000), store=store).check_sync("k")
    assert err.value.code == "store_unavailable"
    assert time.monotonic() - started < 5
