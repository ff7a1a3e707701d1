"""PostgresStore: the vectors replay on a real Postgres 15, both APIs decide on it, bad input is a
coded error (docs/postgres.md)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

import throttlekit as tk
from conftest import VECTORS
from throttlekit.conformance import StoreFactory, replay_files


def still() -> tk.ManualClock:
    """A clock that stands still at the present, for tests that count a window's checks: on the
    system clock a window boundary between two checks would start the count over. Postgres judges
    expiry by the caller's `now`, on read."""
    return tk.ManualClock(tk.SystemClock().now_ms())


@pytest.fixture(scope="module")
def pg_store(postgres_url: str) -> tk.PostgresStore:
    # 30 s to connect: the logins are not under test, and a loaded machine can hold them past the
    # 3 s default (the test of connect's own bound sets its own).
    return tk.PostgresStore(postgres_url, pool_size=2, timeout_ms=3000, connect_timeout_ms=30_000, sweep_interval_ms=0)


@pytest.mark.parametrize("api", ["sync", "async"])
@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.name)
def test_vectors_on_postgres(path: Path, api: str, postgres_url: str) -> None:
    report = replay_files([str(path)], StoreFactory("postgres", postgres_url=postgres_url), use_async=api == "async")
    assert report.failed == 0, "\n".join(report.failures[:20])
    assert report.passed > 0


def test_a_limiter_on_postgres_decides_sync_and_async(pg_store: tk.PostgresStore, prefix: str) -> None:
    lim = tk.Limiter(tk.Strategy.fixed_window(3, 60_000), store=pg_store, clock=still(), prefix=prefix)
    assert [lim.check_sync("k").allowed for _ in range(3)] == [True, True, True]

    async def fourth() -> tk.Decision:
        return await lim.check("k")

    d = asyncio.run(fourth())
    assert not d.allowed and d.remaining == 0 and d.retry_after_ms > 0
    assert lim.peek_sync("k").remaining == 0
    lim.reset_sync("k")
    assert lim.check_sync("k").remaining == 2
    assert [d.allowed for d in lim.check_many_sync(["a", "b", "a"], 2)] == [True, True, False]


def test_a_multi_limiter_on_postgres_charges_all_or_nothing(pg_store: tk.PostgresStore, prefix: str) -> None:
    multi = tk.MultiLimiter(
        "all",
        [tk.Dimension("a", tk.Strategy.fixed_window(2, 60_000)), tk.Dimension("b", tk.Strategy.fixed_window(3, 60_000))],
        store=pg_store, clock=still(), prefix=prefix,
    )
    assert multi.check_sync(["x", "y"]).allowed
    assert multi.check_sync(["x", "y"]).allowed
    assert not multi.check_sync(["x", "y"]).allowed  # a is full
    # The denied check charged nothing to b: exactly one more fits in its three.
    assert multi.check_sync(["other", "y"]).allowed
    assert not multi.check_sync(["third", "y"]).allowed


def test_the_store_carries_its_limiters_defaults(postgres_url: str, prefix: str) -> None:
    store = tk.PostgresStore(postgres_url, pool_size=1, server_clock=True, fail_policy="fail_open", sweep_interval_ms=0)
    assert store.table == "throttlekit" and store.pool_size == 1
    assert "secret" not in repr(store) and "throttlekit:throttlekit" not in repr(store)
    lim = tk.Limiter(tk.Strategy.gcra(1, 1000), store=store, prefix=prefix)
    assert lim.check_sync("k").allowed
    store.close_sync()
    # Closed: the store is unavailable, and the store's fail_open policy admits.
    assert lim.check_sync("k").allowed
    strict = tk.Limiter(tk.Strategy.gcra(1, 1000), store=store, prefix=prefix, fail_policy="raise")
    with pytest.raises(tk.StoreUnavailableError) as e:
        strict.check_sync("k")
    assert e.value.code == "store_unavailable"


def test_a_bad_url_is_config_invalid() -> None:
    with pytest.raises(tk.ConfigInvalidError) as e:
        tk.PostgresStore("postgres://[nope")
    assert e.value.code == "config_invalid" and "postgres.url" in str(e.value)


def test_a_wrong_password_is_store_unavailable(postgres_url: str) -> None:
    bad = postgres_url.replace("throttlekit:throttlekit@", "throttlekit:wrong@")
    assert bad != postgres_url
    with pytest.raises(tk.StoreUnavailableError) as e:
        tk.PostgresStore(bad, pool_size=1)
    assert e.value.code == "store_unavailable" and "auth" in str(e.value).lower()


def test_an_unreachable_server_is_store_unavailable_within_the_timeout() -> None:
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(tk.StoreUnavailableError):
        tk.PostgresStore(f"postgres://u:p@127.0.0.1:{port}/db", connect_timeout_ms=500, timeout_ms=500, pool_size=1)
    assert time.monotonic() - t0 < 5


def test_a_missing_table_with_migrate_off_is_config_invalid_until_migrated(postgres_url: str) -> None:
    table = f"tk_{uuid.uuid4().hex[:8]}"
    with pytest.raises(tk.ConfigInvalidError) as e:
        tk.PostgresStore(postgres_url, table=table, migrate=False, pool_size=1)
    assert e.value.code == "config_invalid" and table in str(e.value)
    tk.PostgresStore.migrate(postgres_url, table=table)
    store = tk.PostgresStore(postgres_url, table=table, migrate=False, pool_size=1, sweep_interval_ms=0)
    assert tk.Limiter(tk.Strategy.gcra(1, 1000), store=store).check_sync("k").allowed


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"table": "Bad-Name"}, tk.ConfigInvalidError),
        ({"pool_size": 0}, tk.ConfigInvalidError),
        ({"timeout_ms": 0}, tk.ConfigInvalidError),
        ({"pool_size": "4"}, tk.ConfigTypeError),
        ({"migrate": 1}, tk.ConfigTypeError),
        ({"fail_policy": "sometimes"}, tk.ConfigInvalidError),
    ],
)
def test_bad_options_are_coded_errors(kwargs: dict[str, object], error: type[Exception]) -> None:
    # Checked before connecting: no server needed.
    with pytest.raises(error) as e:
        tk.PostgresStore("postgres://u:p@127.0.0.1:1/db", **kwargs)  # type: ignore[arg-type]
    assert getattr(e.value, "code", None) == "config_invalid"


def test_migrate_with_a_wrong_password_is_store_unavailable(postgres_url: str) -> None:
    bad = postgres_url.replace("throttlekit:throttlekit@", "throttlekit:wrong@")
    with pytest.raises(tk.StoreUnavailableError):
        tk.PostgresStore.migrate(bad, table="tk_never")
