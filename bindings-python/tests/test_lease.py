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
    # Time stands still at the start of the current minute: the counts below are one window's,
    # across connections made in between, and on the system clock a minute boundary would start
    # them over. Redis expires the window's key on its own clock at the window's end, a minute away.
    now = tk.SystemClock().now_ms()
    clock = tk.ManualClock(now - now % 60_000)
    opts = {"mode": "leased", "lease": {"batch": 7, "window_coupled": True}, "clock": clock}
    fleet = [tk.Limiter(spec, store=tk.RedisStore(redis_url), prefix=prefix, **opts) for _ in range(3)]
    admitted = sum(l.check_sync("hot").allowed for _ in range(20) for l in fleet)
    assert admitted == 30
    # The async path leases too, and unspent credits go back on release.
    other = tk.Limiter(spec, store=tk.RedisStore(redis_url), prefix=prefix + "b", **opts)

    async def go() -> int:
        n = sum([(await other.check("hot")).allowed for _ in range(3)])
        return n + await other.release_leases()

    assert asyncio.run(go()) == 3 + 4
    strict = tk.Limiter(spec, store=tk.RedisStore(redis_url), prefix=prefix + "b", clock=clock)
    assert strict.peek_sync("hot").remaining == 27


DIMS = [
    ("ip", {"kind": "fixedWindow", "options": {"limit": 10, "windowMs": 1000}}),
    ("user", {"kind": "fixedWindow", "options": {"limit": 100, "windowMs": 1000}}),
]


def multi(**kwargs: object) -> tk.MultiLimiter:
    dims = [tk.Dimension(name, spec) for name, spec in DIMS]
    return tk.MultiLimiter("all", dims, **kwargs)  # type: ignore[arg-type]


def test_a_leased_multi_limiter_spends_every_dimensions_credits_locally() -> None:
    clock = tk.ManualClock(T0)
    m = multi(clock=clock, mode="leased", lease={"batch": 4, "window_coupled": True})
    assert m.mode == "leased"
    allowed = [m.check_sync(["1.2.3.4", "u1"]).allowed for _ in range(15)]
    assert allowed.count(True) == 10, "exactly the ip limit in the window"
    stats = m.tier_stats()
    assert stats["local_admits"] == 7 and stats["leases"] == 4  # 4 + 4 + 2, then a denial, cached
    assert stats["local_denials"] == 4
    clock.set(T0 + 1000)
    assert m.check_sync(["1.2.3.4", "u1"]).allowed


def test_a_cached_multi_denial_is_answered_locally_and_release_gives_back() -> None:
    clock = tk.ManualClock(T0)
    m = multi(clock=clock, mode="cached_deny")
    for _ in range(10):
        assert m.check_sync(["ip", "u"]).allowed
    first = m.check_sync(["ip", "u"])
    assert not first.allowed and first.binding == "ip"
    clock.advance(300)
    again = m.check_sync(["ip", "u"])
    assert not again.allowed and again.retry_after_ms == first.retry_after_ms - 300
    assert m.tier_stats()["local_denials"] == 1
    leased = multi(clock=clock, mode="leased", lease={"batch": 5, "window_coupled": True})
    assert leased.check_sync(["a", "b"]).allowed
    assert leased.release_leases_sync() == 8, "4 credits back to each dimension"


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"mode": "leased", "lease": {"batch": 4, "low_water": 1}}, "lease.lowWater"),
        ({"mode": "leased", "lease": {"window_coupled": True}}, "lease.windowCoupled"),
        ({"mode": "hot"}, "mode"),
    ],
)
def test_bad_multi_modes_are_config_invalid(kwargs: dict, field: str) -> None:
    dims = [tk.Dimension("g", {"kind": "gcra", "options": {"limit": 10, "periodMs": 1000}})]
    with pytest.raises(tk.ConfigInvalidError) as e:
        tk.MultiLimiter("all", dims, **kwargs)
    assert field in str(e.value)


def test_a_leased_multi_fleet_on_redis_admits_exactly_each_limit(redis_url: str, prefix: str) -> None:
    opts = {"mode": "leased", "lease": {"batch": 3, "window_coupled": True}}
    dims = [
        tk.Dimension("tenant", {"kind": "fixedWindow", "options": {"limit": 20, "windowMs": 60_000}}),
        tk.Dimension("user", {"kind": "fixedWindow", "options": {"limit": 12, "windowMs": 60_000}}),
    ]
    clock = tk.ManualClock(T0)  # one window for the whole test, whatever the wall clock does
    fleet = [
        tk.MultiLimiter("all", dims, store=tk.RedisStore(redis_url), clock=clock, prefix=prefix, **opts)
        for _ in range(3)
    ]
    users = ["u0", "u1", "u2"]
    admitted = {u: 0 for u in users}
    for i in range(30):
        for lim in fleet:
            u = users[i % 3]
            admitted[u] += lim.check_sync(["t", u]).allowed
    assert sum(admitted.values()) == 20, admitted
    assert all(n <= 12 for n in admitted.values()), admitted

    async def go() -> int:
        store = tk.RedisStore(redis_url)
        other = tk.MultiLimiter("all", dims, store=store, clock=clock, prefix=prefix + "b", **opts)
        n = sum([(await other.check(["t", "u"])).allowed for _ in range(2)])
        return n + await other.release_leases()

    assert asyncio.run(go()) == 2 + 2, "2 admitted, 1 credit back per dimension"
