"""SqliteStore: the vectors replay on it through both APIs and the CLI runner's flags; processes
sharing one file admit exactly the limit; bad files and options raise coded errors."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import throttlekit as tk
from conftest import VECTORS
from throttlekit.conformance import StoreFactory, replay_files

LIMIT = 40
NOW = 1_700_000_000_000

# One child process: CALLS checks of key "hot" at one instant on the file argv[1]; prints how
# many were admitted. Started by the test four at a time.
CHILD = """
import sys
import throttlekit as tk
store = tk.SqliteStore(sys.argv[1])
clock = tk.ManualClock(%d)
limiter = tk.Limiter(tk.Strategy.fixed_window(%d, 3_600_000), store=store, clock=clock)
print(sum(limiter.check_sync("hot").allowed for _ in range(30)))
""" % (NOW, LIMIT)


@pytest.mark.parametrize("api", ["sync", "async"])
@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.name)
def test_vectors_on_sqlite(path: Path, api: str, tmp_path: Path) -> None:
    stores = StoreFactory("sqlite", sqlite_path=str(tmp_path / "v.db"))
    report = replay_files([str(path)], stores, use_async=api == "async")
    assert report.failed == 0, "\n".join(report.failures[:20])
    assert report.passed > 0


def test_the_runner_takes_store_sqlite_and_a_path(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    run = [sys.executable, "-m", "throttlekit.conformance", "--store", "sqlite"]
    out = subprocess.run([*run, "--sqlite-path", str(db), *map(str, VECTORS)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().endswith(" passed, 0 failed")
    assert db.exists()
    missing = subprocess.run([*run, *map(str, VECTORS)], capture_output=True, text=True)
    assert missing.returncode == 2 and "--sqlite-path" in missing.stderr


@pytest.mark.parametrize("existing", [False, True], ids=["new key", "existing key"])
def test_four_processes_on_one_key_admit_exactly_the_limit(tmp_path: Path, existing: bool) -> None:
    db = tmp_path / "k.db"
    store = tk.SqliteStore(db)
    limiter = tk.Limiter(tk.Strategy.fixed_window(LIMIT, 3_600_000), store=store, clock=tk.ManualClock(NOW))
    already = 7 if existing else 0
    if existing:
        assert limiter.check_sync("hot", already).allowed
    children = [
        subprocess.Popen([sys.executable, "-c", CHILD, str(db)], stdout=subprocess.PIPE, text=True) for _ in range(4)
    ]
    admitted = 0
    for c in children:
        out, _ = c.communicate(timeout=120)
        assert c.returncode == 0
        admitted += int(out.strip())
    assert admitted == LIMIT - already
    assert limiter.peek_sync("hot").remaining == 0


def test_state_is_shared_through_the_file_and_survives_a_reopen(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    strategy = tk.Strategy.gcra(3, 60_000)
    a = tk.Limiter(strategy, store=tk.SqliteStore(db, table="limits"), clock=tk.ManualClock(NOW))
    assert a.check_sync("k").remaining == 2
    store = tk.SqliteStore(str(db), table="limits")
    b = tk.Limiter(strategy, store=store, clock=tk.ManualClock(NOW))
    assert b.check_sync("k").remaining == 1
    assert (store.path, store.table) == (str(db), "limits")
    assert "limits" in repr(store)
    store.close_sync()
    with pytest.raises(tk.StoreUnavailableError):
        b.check_sync("k")


def test_bad_files_and_options_raise_coded_errors(tmp_path: Path) -> None:
    with pytest.raises(tk.ConfigInvalidError, match="no/such"):
        tk.SqliteStore(tmp_path / "no" / "such" / "x.db")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"Z" * 8192)
    with pytest.raises(tk.ConfigInvalidError, match="not a database"):
        tk.SqliteStore(junk)
    shaped = tmp_path / "shaped.db"
    with sqlite3.connect(shaped) as conn:
        conn.execute("CREATE TABLE throttlekit (key TEXT PRIMARY KEY, hits INTEGER)")
    with pytest.raises(tk.ConfigInvalidError, match="another shape") as e:
        tk.SqliteStore(shaped)
    assert e.value.code == "config_invalid"
    with pytest.raises(tk.ConfigInvalidError, match="does not exist"):
        tk.SqliteStore(tmp_path / "fresh.db", migrate=False)
    for kwargs in ({"table": "a;b"}, {"synchronous": "sometimes"}, {"max_key_length": 0}):
        with pytest.raises(tk.ConfigInvalidError):
            tk.SqliteStore(tmp_path / "o.db", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(tk.ConfigTypeError):
        tk.SqliteStore(42)  # type: ignore[arg-type]


# Holds the file's write lock until a line arrives on stdin. In another process: POSIX locks are
# per process, so a second copy of SQLite in this one (Python's sqlite3) would not exclude the
# store's (docs/sqlite.md).
HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def test_a_lock_held_past_the_busy_timeout_answers_by_the_fail_policy(tmp_path: Path) -> None:
    db = tmp_path / "busy.db"
    store = tk.SqliteStore(db, busy_timeout_ms=50, fail_policy="fail_open")
    limiter = tk.Limiter(tk.Strategy.gcra(1, 60_000), store=store, clock=tk.ManualClock(NOW))
    raising = tk.Limiter(tk.Strategy.gcra(1, 60_000), store=store, clock=tk.ManualClock(NOW), fail_policy="raise")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        d = limiter.check_sync("k")
        assert d.allowed and d.fallback
        with pytest.raises(tk.StoreUnavailableError) as e:
            raising.check_sync("k")
        assert e.value.code == "store_unavailable"
    finally:
        holder.communicate("release\n", timeout=30)
    d = limiter.check_sync("k")
    assert d.allowed and not d.fallback
