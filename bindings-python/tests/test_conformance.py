"""Every vectors file replays through the public API, on both stores, through both APIs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import VECTORS
from throttlekit.conformance import StoreFactory, VectorFormatError, replay, replay_files


def test_there_are_vectors_to_replay() -> None:
    names = {p.name for p in VECTORS}
    assert "upstream-golden-1.5.2.json" in names
    assert len(VECTORS) >= 2


@pytest.mark.parametrize("api", ["sync", "async"])
@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.name)
def test_vectors_on_memory(path: Path, api: str) -> None:
    report = replay_files([str(path)], StoreFactory("memory"), use_async=api == "async")
    assert report.failed == 0, "\n".join(report.failures[:20])
    assert report.passed > 0


@pytest.mark.parametrize("api", ["sync", "async"])
@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.name)
def test_vectors_on_redis(path: Path, api: str, redis_url: str) -> None:
    report = replay_files([str(path)], StoreFactory("redis", redis_url), use_async=api == "async")
    assert report.failed == 0, "\n".join(report.failures[:20])
    assert report.passed > 0


GOOD = {
    "suites": [
        {
            "id": "gcra/one",
            "comment": "burst 1: the second check at the same instant is denied",
            "strategy": {"kind": "gcra", "options": {"limit": 1, "periodMs": 1000}},
            "key": "k",
            "ops": [
                {"now": 0, "expect": {"allowed": True, "remaining": 0, "resetAt": 1000}},
                {"now": 0, "expect": {"allowed": False, "retryAfterMs": 1000}},
            ],
        }
    ]
}


def test_a_wrong_expectation_is_reported_with_suite_op_expected_and_got() -> None:
    bad = json.loads(json.dumps(GOOD))
    bad["suites"][0]["ops"][1]["expect"]["retryAfterMs"] = 999
    report = replay(bad)
    assert (report.passed, report.failed) == (1, 1)
    line = report.failures[0]
    assert "gcra/one op 1" in line and "999" in line and "1000" in line


def test_an_unknown_field_is_a_format_error_not_a_silent_pass() -> None:
    bad = json.loads(json.dumps(GOOD))
    bad["suites"][0]["ops"][0]["expcet"] = {}
    with pytest.raises(VectorFormatError, match="expcet"):
        replay(bad)


def test_expect_error_suites_and_ops_count_once_each() -> None:
    data = {
        "suites": [
            {"id": "bad", "comment": "", "strategy": {"kind": "gcra", "options": {"limit": 0, "periodMs": 1}},
             "key": "k", "expectError": "config_invalid", "ops": []},
            {"id": "cost", "comment": "", "strategy": {"kind": "gcra", "options": {"limit": 1, "periodMs": 1}},
             "key": "k", "ops": [{"now": 0, "cost": 1.5, "expectError": "config_invalid"}]},
        ]
    }
    report = replay(data)
    assert (report.passed, report.failed) == (2, 0)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "throttlekit.conformance", *args],
                          capture_output=True, text=True, timeout=120)


def test_cli_ends_with_the_summary_and_exits_0(redis_url: str) -> None:
    files = [str(p) for p in VECTORS]
    for extra in ([], ["--store", "redis", "--redis-url", redis_url]):
        out = run_cli(*extra, *files)
        assert out.returncode == 0, out.stdout + out.stderr
        last = out.stdout.strip().splitlines()[-1]
        passed, failed = last.replace(",", "").split()[::2]
        assert int(passed) > 0 and int(failed) == 0, last


def test_cli_exits_1_on_a_mismatch_and_2_on_a_malformed_file(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(GOOD))
    bad["suites"][0]["ops"][0]["expect"]["remaining"] = 7
    mismatch = tmp_path / "mismatch.json"
    mismatch.write_text(json.dumps(bad))
    out = run_cli(str(mismatch))
    assert out.returncode == 1
    assert out.stdout.strip().endswith("1 passed, 1 failed")

    bad["suites"][0]["bogus"] = True
    malformed = tmp_path / "malformed.json"
    malformed.write_text(json.dumps(bad))
    out = run_cli(str(malformed))
    assert out.returncode == 2
    assert "bogus" in out.stderr


HTTP_VECTORS = sorted((Path(__file__).resolve().parents[2] / "conformance-vectors" / "http").glob("*.json"))


@pytest.mark.parametrize("path", HTTP_VECTORS, ids=lambda p: p.name)
def test_http_vectors_replay_with_no_failure(path: Path) -> None:
    data = json.loads(path.read_text())
    report = replay_files([str(path)], StoreFactory("memory"))
    assert report.failed == 0, "\n".join(report.failures[:20])
    assert report.passed == len(data.get("headerCases", [])) + len(data.get("clientKeyCases", [])) > 0


def test_a_wrong_http_expectation_is_reported(tmp_path: Path) -> None:
    data = json.loads(HTTP_VECTORS[0].read_text())
    data["headerCases"][0]["expect"][0][1] += " "
    data["clientKeyCases"][0]["expect"] = "192.0.2.250"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    report = replay_files([str(bad)], StoreFactory("memory"))
    assert report.failed == 2
    assert any(data["headerCases"][0]["id"] in line for line in report.failures)
    assert any("192.0.2.250" in line for line in report.failures)


def test_the_cli_replays_the_http_vectors() -> None:
    out = subprocess.run([sys.executable, "-m", "throttlekit.conformance", *map(str, HTTP_VECTORS)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().endswith(" passed, 0 failed")
