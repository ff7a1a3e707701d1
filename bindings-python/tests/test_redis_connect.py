"""Connecting: Redis Cluster from seed nodes, Sentinel, TLS with a throwaway CA, an ACL user,
and bad options.

One cluster, one Sentinel setup and one TLS server serve the whole session (conftest's
`redis_cluster_urls`, `redis_sentinel_urls` and `redis_tls`, started by the repository's
tests/redis-cluster.sh, tests/redis-sentinels.sh and tests/redis-tls.sh).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import throttlekit as tk
from conftest import PACKAGE, ROOT, VECTORS
from throttlekit.conformance import StoreFactory, replay_files

# The fixed windows below are a day long: they run on the system clock (Redis expires keys on its
# own), and a window boundary between two checks of a test would start the count over. A test of
# a few seconds meets one with a probability of about 1 in 20,000.
DAY = 86_400_000


def cli(*args: str) -> tuple[int, int]:
    """Runs `python -m throttlekit.conformance` on every vectors file; (passed, failed)."""
    out = subprocess.run([sys.executable, "-m", "throttlekit.conformance", *args, *map(str, VECTORS)],
                         capture_output=True, text=True, timeout=300, cwd=PACKAGE)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr
    passed, failed = out.stdout.strip().splitlines()[-1].replace(",", "").split()[::2]
    return int(passed), int(failed)


def memory_totals() -> tuple[int, int]:
    report = replay_files([str(p) for p in VECTORS], StoreFactory("memory"))
    return report.passed, report.failed


def test_the_runner_replays_every_vectors_file_on_a_cluster(redis_cluster_urls: str) -> None:
    passed, failed = cli("--store", "redis-cluster", "--redis-url", redis_cluster_urls)
    assert (passed, failed) == memory_totals() and failed == 0


def test_the_awaitables_replay_every_vectors_file_on_a_cluster(redis_cluster_urls: str) -> None:
    report = replay_files([str(p) for p in VECTORS], StoreFactory("redis-cluster", redis_cluster_urls), use_async=True)
    assert report.failed == 0, "\n".join(report.failures[:20])
    assert (report.passed, report.failed) == memory_totals()


def test_the_runner_replays_every_vectors_file_over_tls(redis_tls: tuple[str, Path]) -> None:
    url, pki = redis_tls
    passed, failed = cli("--store", "redis", "--redis-url", url, "--redis-tls-ca", str(pki / "ca.crt"))
    assert (passed, failed) == memory_totals() and failed == 0


def test_the_runner_replays_every_vectors_file_through_sentinels(redis_sentinel_urls: str) -> None:
    passed, failed = cli("--store", "redis-sentinel", "--redis-url", redis_sentinel_urls, "--redis-service-name", "tkmain")
    assert (passed, failed) == memory_totals() and failed == 0


def test_a_sentinel_store_finds_the_master(redis_sentinel_urls: str, prefix: str) -> None:
    store = tk.RedisStore(redis_sentinel_urls, mode="sentinel", service_name="tkmain", timeout_ms=5000)
    assert store.mode == "sentinel"
    limiter = tk.Limiter(tk.Strategy.fixed_window(2, DAY), store=store, prefix=prefix)
    assert [limiter.check_sync("k").allowed for _ in range(3)] == [True, True, False]
    with pytest.raises(tk.StoreUnavailableError):  # no such service: the sentinels know no master
        tk.RedisStore(redis_sentinel_urls, mode="sentinel", service_name="nosuch", timeout_ms=2000)


def test_a_cluster_store_shares_each_limit_over_every_master(redis_cluster_urls: str, prefix: str) -> None:
    seeds = redis_cluster_urls.split(",")
    store = tk.RedisStore(seeds, mode="cluster", timeout_ms=5000)  # a list works like the comma string
    assert store.mode == "cluster" and store.url == redis_cluster_urls
    limiter = tk.Limiter(tk.Strategy.fixed_window(3, DAY), store=store, prefix=prefix)
    keys = [f"user:{i}" for i in range(30)]  # 30 keys fall in slots of all three masters
    admitted = sum(limiter.check_sync(k).allowed for k in keys for _ in range(5))
    assert admitted == 3 * len(keys)

    async def concurrently() -> int:
        results = await asyncio.gather(*(limiter.check(f"async:{i % 10}") for i in range(50)))
        return sum(d.allowed for d in results)

    assert asyncio.run(concurrently()) == 3 * 10
    multi = tk.MultiLimiter("all", [tk.Dimension("a", tk.Strategy.fixed_window(2, DAY)),
                                    tk.Dimension("b", tk.Strategy.fixed_window(5, DAY))],
                            store=store, prefix=prefix)
    assert [multi.check_sync(["x", "y"]).decision.allowed for _ in range(3)] == [True, True, False]


def test_tls_verifies_against_the_given_ca(redis_tls: tuple[str, Path], prefix: str) -> None:
    url, pki = redis_tls
    store = tk.RedisStore(url, tls_ca_file=pki / "ca.crt", timeout_ms=5000)  # an os.PathLike works too
    limiter = tk.Limiter(tk.Strategy.fixed_window(1, DAY), store=store, prefix=prefix)
    assert limiter.check_sync("k").allowed and not limiter.check_sync("k").allowed

    async def awaited() -> bool:
        return (await limiter.check("k")).allowed

    assert not asyncio.run(awaited())


def test_a_wrong_ca_is_store_unavailable_naming_the_certificate(redis_tls: tuple[str, Path]) -> None:
    url, pki = redis_tls
    with pytest.raises(tk.StoreUnavailableError) as err:
        tk.RedisStore(url, tls_ca_file=str(pki / "other-ca.crt"), timeout_ms=5000)
    assert err.value.code == "store_unavailable" and "certificate" in str(err.value)
    with pytest.raises(tk.StoreUnavailableError):  # no CA option: the system roots do not know it
        tk.RedisStore(url, timeout_ms=5000)


def test_mutual_tls_needs_the_client_certificate(redis_mutual_tls: tuple[str, Path], prefix: str) -> None:
    url, pki = redis_mutual_tls
    store = tk.RedisStore(url, tls_ca_file=pki / "ca.crt", tls_cert_file=pki / "client.crt",
                          tls_key_file=pki / "client.key", timeout_ms=5000)
    limiter = tk.Limiter(tk.Strategy.fixed_window(1, DAY), store=store, prefix=prefix)
    assert limiter.check_sync("k").allowed and not limiter.check_sync("k").allowed
    with pytest.raises(tk.StoreUnavailableError):  # the server refuses a client without one
        tk.Limiter(tk.Strategy.fixed_window(1, DAY), prefix=prefix,
                   store=tk.RedisStore(url, tls_ca_file=pki / "ca.crt", timeout_ms=5000)).check_sync("k")


@pytest.mark.parametrize(
    ("urls", "options", "named"),
    [
        ("redis://127.0.0.1:1", {"mode": "Cluster"}, "redis.mode"),
        ("redis://127.0.0.1:1", {"scripting": "lua"}, "redis.scripting"),
        ("redis://127.0.0.1:1", {"tls_ca_file": "/etc/hostname"}, "redis.tls_ca_file"),
        ("rediss://127.0.0.1:1", {"tls_ca_file": "/nonexistent.pem"}, "redis.tls_ca_file"),
        ("rediss://127.0.0.1:1", {"tls_cert_file": "/etc/hostname"}, "redis.tls_key_file"),
        ("redis://127.0.0.1:1", {"mode": "sentinel"}, "redis.service_name"),
        ("redis://127.0.0.1:1", {"service_name": "main"}, "redis.service_name"),
        (["redis://u:secret@127.0.0.1:1", "redis://127.0.0.1:2"], {}, "redis.urls"),
        ("http://127.0.0.1:1", {}, "redis.urls"),
        ([], {"mode": "cluster"}, "redis.urls"),
    ],
)
def test_bad_options_are_config_invalid_naming_the_option(urls: object, options: dict, named: str) -> None:
    with pytest.raises(tk.ConfigInvalidError) as err:
        tk.RedisStore(urls, **options)  # type: ignore[arg-type]
    assert err.value.code == "config_invalid" and named in str(err.value)
    assert "secret" not in str(err.value)


@pytest.mark.parametrize(
    ("urls", "options"),
    [(42, {}), ("redis://127.0.0.1:1", {"mode": 1}), ("rediss://127.0.0.1:1", {"tls_ca_file": 3}),
     ([b"redis://127.0.0.1:1"], {})],
)
def test_options_of_the_wrong_type_are_config_type_errors(urls: object, options: dict) -> None:
    with pytest.raises(tk.ConfigTypeError):
        tk.RedisStore(urls, **options)  # type: ignore[arg-type]


def documented_acl_rules(prefix: str, password: str) -> list[str]:
    """The smallest ACL of docs/redis.md (scripting auto), for `prefix` and `password`."""
    text = (ROOT / "docs" / "redis.md").read_text()
    line = next(x for x in text.splitlines() if x.startswith("ACL SETUSER throttlekit >PASSWORD "))
    rules = line.split()[3:]
    assert "~api:*" in rules, line
    return [f">{password}"] + [f"~{prefix}:*" if r == "~api:*" else r for r in rules]


def test_an_acl_user_with_the_documented_rules_is_enough(redis_url: str, prefix: str) -> None:
    port = redis_url.rsplit(":", 1)[1].split("/")[0]
    user, password = f"tk-py-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    subprocess.run(["redis-cli", "-p", port, "ACL", "SETUSER", user, *documented_acl_rules(prefix, password)],
                   check=True, capture_output=True, timeout=30)
    try:
        store = tk.RedisStore(f"redis://{user}:{password}@127.0.0.1:{port}", timeout_ms=5000)
        limiter = tk.Limiter(tk.Strategy.fixed_window(2, DAY), store=store, prefix=prefix)
        assert [limiter.check_sync("k").allowed for _ in range(3)] == [True, True, False]

        async def awaited() -> bool:
            return (await limiter.check("k")).allowed

        assert asyncio.run(awaited()) is False
        limiter.reset_sync("k")
        outside = tk.Limiter(tk.Strategy.fixed_window(2, DAY), store=store, prefix="not-granted")
        with pytest.raises(tk.StoreUnavailableError):  # NOPERM: the key is outside the pattern
            outside.check_sync("k")
        with pytest.raises(tk.StoreUnavailableError):
            tk.RedisStore(f"redis://{user}:wrong@127.0.0.1:{port}", timeout_ms=5000)
    finally:
        subprocess.run(["redis-cli", "-p", port, "ACL", "DELUSER", user], capture_output=True, timeout=30)
