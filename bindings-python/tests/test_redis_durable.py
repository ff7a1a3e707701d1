"""Durable charges (`durable_replicas`, `durable_timeout_ms`) and passworded sentinels
(`sentinel_password`, `sentinel_username`): the options reach core, and core's answers reach
Python (docs/bindings-redis.md). The semantics are core's (`core/tests/redis_durable.rs`,
`core/tests/redis_sentinel.rs`); these tests prove the mapping against real servers.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from conftest import RedisServer

import throttlekit as tk

# A day's window on the system clock: a window boundary between a test's checks (around a
# sentinel's failover or a replica's acknowledgement) would start the count over; a test of a few
# seconds meets one with a probability of about 1 in 20,000.
DAY = 86_400_000


def limiter(store: tk.RedisStore, prefix: str) -> tk.Limiter:
    return tk.Limiter(tk.Strategy.fixed_window(1000, DAY), store=store, prefix=prefix, fail_policy="raise")


def test_without_a_replica_a_durable_charge_is_store_unavailable_within_its_timeout(prefix: str) -> None:
    server = RedisServer()  # a private server: certainly no replica
    try:
        store = tk.RedisStore(server.url, timeout_ms=1000, durable_replicas=1, durable_timeout_ms=100)
        l = limiter(store, prefix)
        start = time.monotonic()
        with pytest.raises(tk.StoreUnavailableError) as err:
            l.check_sync("k")
        took = time.monotonic() - start
        assert "durable_replicas" in str(err.value) and "0 of 1 replicas" in str(err.value), err.value
        # The server's WAIT waits durable_timeout_ms; the call answers well within timeout_ms.
        assert 0.1 <= took < 1.0 + 0.1, took

        async def awaited() -> None:
            await l.check("k")

        with pytest.raises(tk.StoreUnavailableError):
            asyncio.run(awaited())
        # fail_open admits on the same failure: the fail policy decides, as for any outage.
        opened = tk.Limiter(tk.Strategy.fixed_window(1000, DAY), store=store, prefix=prefix,
                            fail_policy="fail_open")
        d = opened.check_sync("k")
        assert d.allowed and d.fallback
    finally:
        server.stop()


def test_passworded_sentinels_need_sentinel_password_and_a_durable_charge_is_admitted_with_a_replica(
        redis_passworded_sentinel_urls: str, prefix: str) -> None:
    urls = redis_passworded_sentinel_urls
    with pytest.raises(tk.StoreUnavailableError) as err:
        tk.RedisStore(urls, mode="sentinel", service_name="tkmain", timeout_ms=2000)
    assert "NOAUTH" in str(err.value) or "uthentication" in str(err.value), err.value
    with pytest.raises(tk.StoreUnavailableError):
        tk.RedisStore(urls, mode="sentinel", service_name="tkmain", timeout_ms=2000, sentinel_password="nope")
    # The master has one replica: with durable_replicas=1 it acknowledges every charge. A
    # generous WAIT timeout: on a loaded machine the acknowledgement can take a while.
    store = tk.RedisStore(urls, mode="sentinel", service_name="tkmain", timeout_ms=5000,
                          sentinel_password="spw", durable_replicas=1, durable_timeout_ms=4000)
    l = tk.Limiter(tk.Strategy.fixed_window(3, DAY), store=store, prefix=prefix, fail_policy="raise")
    assert [l.check_sync("k").allowed for _ in range(4)] == [True, True, True, False]

    async def awaited() -> bool:
        return (await l.check("k2")).allowed

    assert asyncio.run(awaited()) is True
    # The default user spelled out is the same login.
    named = tk.RedisStore(urls, mode="sentinel", service_name="tkmain", timeout_ms=5000,
                          sentinel_username="default", sentinel_password="spw")
    assert tk.Limiter(tk.Strategy.fixed_window(3, DAY), store=named, prefix=prefix).check_sync("k").allowed is False


@pytest.mark.parametrize(
    ("urls", "options", "named"),
    [
        ("redis://127.0.0.1:1", {"durable_replicas": 65}, "redis.durable_replicas"),
        ("redis://127.0.0.1:1", {"durable_replicas": 2**40}, "redis.durable_replicas"),
        ("redis://127.0.0.1:1", {"durable_replicas": -1}, "durable_replicas"),
        ("redis://127.0.0.1:1", {"durable_replicas": 1, "durable_timeout_ms": 0}, "redis.durable_timeout_ms"),
        ("redis://127.0.0.1:1", {"durable_replicas": 1, "timeout_ms": 100, "durable_timeout_ms": 100},
         "redis.durable_timeout_ms"),
        ("redis://127.0.0.1:1", {"durable_replicas": 1, "deterministic_replay": True}, "redis.durable_replicas"),
        ("redis://127.0.0.1:1", {"sentinel_password": "pw"}, "redis.sentinel_password"),
        ("redis://127.0.0.1:1", {"mode": "sentinel", "service_name": "m", "sentinel_username": "u"},
         "redis.sentinel_password"),
    ],
)
def test_bad_durable_and_sentinel_options_are_config_invalid(urls: str, options: dict, named: str) -> None:
    with pytest.raises(tk.ConfigInvalidError) as err:
        tk.RedisStore(urls, **options)
    assert err.value.code == "config_invalid" and named in str(err.value)
    assert "pw" not in str(err.value).replace("sentinel_password", "")


@pytest.mark.parametrize("options", [{"durable_replicas": "1"}, {"sentinel_password": 5}, {"durable_timeout_ms": 1.5}])
def test_durable_and_sentinel_options_of_the_wrong_type_are_refused(options: dict) -> None:
    with pytest.raises((tk.ConfigTypeError, tk.ConfigInvalidError)):
        tk.RedisStore("redis://127.0.0.1:1", **options)
