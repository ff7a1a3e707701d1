"""The two-tier modes from Python: mode/lease arguments, local spends and cached denials, core's
errors for bad options, and a leased fleet on Redis (sync and async) that admits exactly the
limit per coupled window."""

import asyncio

import pytest

import throttlekit as tk

T0 = 1_800_000_000_000
WINDOW = {"kind": "fixedWindow", "options": {"limit": 10, "windowMs": 1000}}


def test_leased_spends_credits_locally_and_stops_at_the_limit() -> None:
    clock = tk.ManualClock(T0)
    lim = tk.Limiter(WINDOW, clock=clock, mode="leased", lease={"batch": 4, "window_coupled": True})
    assert lim.mode == "leased"
    allowed = [lim.check_sync("k").allowed for _ in range(15)]
    assert allowed.count(True) == 10
    stats = lim.tier_stats()
    assert stats["leases"] == 4  # 4 + 4 + 2, then one denied lease, cached
    assert stats["local_admits"] == 7
    clock.set(T0 + 1000)
    assert lim.check_sync("k").allowed, "the new window leases again"


def test_cached_deny_answers_denials_locally_until_the_retry() -> None:
    clock = tk.ManualClock(T0)
    lim = tk.Limiter({"kind": "gcra", "options": {"limit": 10, "periodMs": 1000, "burst": 1}}, clock=clock, mode="cached_deny")
    assert lim.check_sync("k").allowed
    assert lim.check_sync("k").retry_after_ms == 100
    clock.advance(30)
    d = lim.check_sync("k")
    assert not d.allowed and d.retry_after_ms == 70
    assert lim.tier_stats()["local_denials"] == 1


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"mode": "two_tier"}, "mode"),
        ({"mode": "leased", "lease": {"batch": 0}}, "lease.batch"),
        ({"mode": "leased", "lease": {"batch": 1.5}}, "lease.batch"),
        ({"mode": "leased", "lease": {"batch": 4, "low_water": 4}}, "lease.lowWater"),
        ({"lease": {"window_coupled": True}}, "lease.windowCoupled"),
        ({"lease": {"bach": 3}}, "lease.bach"),
    ],
)
def test_bad_lease_options_are_config_invalid(kwargs: dict, field: str) -> None:
    spec = {"kind": "gcra", "options": {"limit": 10, "periodMs": 1000}}
    with pytest.raises(tk.ConfigInvalidError) as e:
        tk.Limiter(spec, **kwargs)
    assert field in str(e.value)


def test_a_leased_fleet_on_redis_admits_exactly_the_limit_and_gives_back(redis_url: str, prefix: str) -> None:
    spec = {"kind": "fixedWindow", "options": {"limit": 30, "windowMs": 60_000}}
    opts = {"mode": "leased", "lease": {"batch": 7, "window_coupled": True}}
    fleet = [tk.Limiter(spec, store=tk.RedisStore(redis_url), prefix=prefix, **opts) for _ in range(3)]
    admitted = sum(l.check_sync("hot").allowed for _ in range(20) for l in fleet)
    assert admitted == 30
    # The async path leases too, and unspent credits go back on release.
    other = tk.Limiter(spec, store=tk.RedisStore(redis_url), prefix=prefix + "b", **opts)

    async def go() -> int:
        n = sum([(await other.check("hot")).allowed for _ in range(3)])
        return n + await other.release_leases()

    assert asyncio.run(go()) == 3 + 4
    strict = tk.Limiter(spec, store=tk.RedisStore(redis_url), prefix=prefix + "b")
    assert strict.peek_sync("hot").remaining == 27
