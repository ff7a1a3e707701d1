"""Shared fixtures: the vectors files and a throwaway Redis server.

Redis tests need `redis-server` on PATH (test.sh installs it). Set THROTTLEKIT_REDIS_URL to
use a running server instead; the tests only touch keys under their own prefixes.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import throttlekit as tk

PACKAGE = Path(__file__).resolve().parents[1]
ROOT = PACKAGE.parent
VECTORS = sorted((ROOT / "conformance-vectors").glob("*.json"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serving_pid(port: int) -> int | None:
    """The PID of the redis-server answering on `port`, from `INFO server` (None if none answers)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"INFO server\r\n")
            reply = b""
            while True:
                _, found, rest = reply.partition(b"process_id:")
                if found and b"\r\n" in rest:
                    return int(rest.split(b"\r\n", 1)[0])
                chunk = s.recv(4096)
                if not chunk:
                    return None
                reply += chunk
    except (OSError, ValueError):
        return None


class RedisServer:
    """A private redis-server (no persistence) stopped by PID."""

    def __init__(self) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            pytest.fail("redis-server is not installed (bindings-python/test.sh installs it), "
                        "or set THROTTLEKIT_REDIS_URL")
        # A port free when we asked may be taken before the server binds it (other suites start
        # servers too): each attempt takes a fresh port, and only our own PID answering counts.
        for _attempt in range(6):
            self.port = free_port()
            self.proc = subprocess.Popen(
                [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.proc.poll() is None:
                if serving_pid(self.port) == self.proc.pid:
                    return
                time.sleep(0.05)
            self.stop()
        pytest.fail("redis-server did not start on any of 6 fresh ports")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    url = os.environ.get("THROTTLEKIT_REDIS_URL")
    if url:
        yield url
        return
    server = RedisServer()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def redis_store(redis_url: str) -> tk.RedisStore:
    return tk.RedisStore(redis_url, timeout_ms=2000)


@pytest.fixture
def prefix() -> str:
    """A prefix no other test uses, so tests sharing one Redis never meet."""
    return f"pytest:{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest) -> object:
    """Each store in turn (Redis through the `redis_store` fixture)."""
    if request.param == "memory":
        return tk.MemoryStore()
    return request.getfixturevalue("redis_store")


def _helper(script: str, *args: str, env: dict[str, str] | None = None) -> str:
    """Runs tests/<script> (the repository's server launchers) and returns its stdout line."""
    out = subprocess.run([str(ROOT / "tests" / script), *args], capture_output=True, text=True, timeout=180,
                         env={**os.environ, **(env or {})})
    if out.returncode != 0:
        pytest.fail(f"tests/{script} {' '.join(args)} failed: {out.stderr}")
    return out.stdout.strip()


@pytest.fixture(scope="session")
def redis_cluster_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Seed URLs (comma-separated) of a private 3-master cluster, one per test session, stopped by PID."""
    pidfile = str(tmp_path_factory.mktemp("cluster") / "pids")
    seeds = _helper("redis-cluster.sh", "start", pidfile)
    try:
        yield seeds
    finally:
        _helper("redis-cluster.sh", "stop", pidfile)


@pytest.fixture(scope="session")
def redis_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A private TLS redis-server: its rediss:// URL and the folder with ca.crt and other-ca.crt."""
    folder = tmp_path_factory.mktemp("tls") / "pki"
    url = _helper("redis-tls.sh", "start", str(folder))
    try:
        yield url, folder
    finally:
        _helper("redis-tls.sh", "stop", str(folder))


@pytest.fixture(scope="session")
def redis_mutual_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A private TLS redis-server that requires a client certificate: its URL and the folder with
    ca.crt, client.crt and client.key."""
    folder = tmp_path_factory.mktemp("mtls") / "pki"
    url = _helper("redis-tls.sh", "start", str(folder), env={"MUTUAL": "1"})
    try:
        yield url, folder
    finally:
        _helper("redis-tls.sh", "stop", str(folder))


@pytest.fixture(scope="session")
def redis_sentinel_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The sentinels' URLs (comma-separated) of a private master + replica + 3 sentinels
    watching service "tkmain", one per test session, stopped by PID."""
    folder = str(tmp_path_factory.mktemp("sentinel") / "servers")
    urls = _helper("redis-sentinels.sh", "start", folder)
    try:
        yield urls
    finally:
        _helper("redis-sentinels.sh", "stop", folder)


@pytest.fixture(scope="session")
def redis_passworded_sentinel_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Like `redis_sentinel_urls`, but the sentinels require the password "spw"
    (`tests/redis-sentinels.sh` with SENTINEL_PASSWORD); the master has one replica."""
    folder = str(tmp_path_factory.mktemp("sentinel-pw") / "servers")
    urls = _helper("redis-sentinels.sh", "start", folder, env={"SENTINEL_PASSWORD": "spw"})
    try:
        yield urls
    finally:
        _helper("redis-sentinels.sh", "stop", folder)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A throwaway Postgres 15 (tests/postgres-server.sh, stopped by PID), or
    THROTTLEKIT_POSTGRES_URL's server. Skipped, saying why, where Postgres is not installed
    (test.sh installs it)."""
    url = os.environ.get("THROTTLEKIT_POSTGRES_URL")
    if url:
        yield url
        return
    if not Path("/usr/lib/postgresql/15/bin/initdb").exists():
        pytest.skip("postgresql-15 is not installed (scripts/install-deps.sh installs it)")
    pidfile = Path(os.environ.get("TMPDIR", "/tmp")) / f"tk-pytest-pg-{uuid.uuid4().hex[:8]}.pid"
    script = ROOT / "tests" / "postgres-server.sh"
    out = subprocess.run([str(script), "start", str(pidfile)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    try:
        yield out.stdout.strip()
    finally:
        subprocess.run([str(script), "stop", str(pidfile)], timeout=60)
