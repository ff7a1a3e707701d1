"""Limit strings (throttlekit.rules), as the Django and Flask integrations read them: core reads
each (Strategy.from_rates, every language's one reader), so a string or a count core refuses is
core's config_invalid, with core's words."""

from __future__ import annotations

from typing import Any

import pytest

import throttlekit as tk
from throttlekit.rules import build_limiter, parse_limits, store_from_uri


@pytest.mark.parametrize("text, count, period_ms", [
    ("10/second", 10, 1_000),
    ("10 per second", 10, 1_000),
    ("10/seconds", 10, 1_000),
    ("  7 PER Minute ", 7, 60_000),
    ("1 per 5 minutes", 1, 300_000),
    ("100/5m", 100, 300_000),
    ("3/h", 3, 3_600_000),
    ("2/2hours", 2, 7_200_000),
    ("50/day", 50, 86_400_000),
    ("5/s", 5, 1_000),
])
def test_a_limit_string_is_a_count_per_period(text: str, count: int, period_ms: int) -> None:
    [(name, strategy)] = parse_limits(text)
    assert name == text.strip()
    assert strategy.to_dict() == {"kind": "gcra", "options": {"limit": count, "periodMs": period_ms, "burst": count}}
    for kind, spec_kind in (("fixed-window", "fixedWindow"), ("sliding-window-log", "slidingWindowLog")):
        [(_, other)] = parse_limits(text, kind)
        assert other.to_dict() == {"kind": spec_kind, "options": {"limit": count, "windowMs": period_ms}}
    [(_, sliding)] = parse_limits(text, "sliding-window")
    assert sliding.kind == "slidingWindow" and sliding.to_dict()["options"]["windowMs"] == period_ms


def test_several_limits_become_one_multi_limiter_under_all() -> None:
    limits = parse_limits("5/minute; 100/day;")
    assert [name for name, _ in limits] == ["5/minute", "100/day"]
    limiter = build_limiter(limits, store=tk.MemoryStore(), prefix="t")
    assert isinstance(limiter, tk.MultiLimiter) and limiter.rule == "all"
    assert [d.name for d in limiter.dimensions] == ["5/minute", "100/day"]
    single = build_limiter(parse_limits("5/minute"), store=tk.MemoryStore(), prefix="t")
    assert isinstance(single, tk.Limiter) and single.prefix == "t"


def test_a_strategy_or_its_spec_is_taken_as_it_is() -> None:
    bucket = tk.Strategy.token_bucket(10, 2)
    assert parse_limits(bucket, "fixed-window") == [("", bucket)]
    [(_, from_dict)] = parse_limits({"kind": "tokenBucket", "options": {"capacity": 10, "refillPerSec": 2}})
    assert from_dict == bucket


@pytest.mark.parametrize("limit, strategy, says", [
    ("", "gcra", "an empty rate"),
    ("10", "gcra", "is not a rate"),
    ("ten/second", "gcra", "is not a rate"),
    ("10/fortnight", "gcra", "is not a rate"),
    ("10/month", "gcra", "quota"),
    ("10/second/extra", "gcra", "is not a rate"),
    ("0/second", "gcra", '"0/second"'),
    ("5/0seconds", "fixed-window", '"5/0seconds"'),
    ("5/minute", "token-bucket", "unknown strategy"),
    (5, "gcra", "a limit string"),
    ({"kind": "gcra", "options": {"limit": 0, "periodMs": 1}}, "gcra", "my.setting"),
])
def test_bad_limits_are_config_invalid_naming_the_setting(limit: Any, strategy: str, says: str) -> None:
    with pytest.raises(tk.ConfigInvalidError) as raised:
        parse_limits(limit, strategy, "my.setting")
    assert raised.value.code == "config_invalid"
    assert str(raised.value).startswith("my.setting: ") and says in str(raised.value), str(raised.value)


def test_store_uris() -> None:
    assert isinstance(store_from_uri("memory://"), tk.MemoryStore)
    assert isinstance(store_from_uri(None), tk.MemoryStore)
    assert isinstance(store_from_uri("memory://", options={"max_keys": 10}), tk.MemoryStore)
    for bad in ("memcached://x", "", ["redis://a", 5], 7, "http://redis"):
        with pytest.raises(tk.ConfigInvalidError, match="^STORE: "):
            store_from_uri(bad, "STORE")  # type: ignore[arg-type]
    with pytest.raises(tk.ConfigInvalidError, match="^STORE: "):
        store_from_uri("redis://127.0.0.1:1", "STORE", {"no_such_option": 1})


def test_a_redis_uri_is_a_redis_store(redis_url: str) -> None:
    store = store_from_uri(redis_url, "STORE", {"timeout_ms": 500})
    assert isinstance(store, tk.RedisStore) and store.mode == "standalone"
