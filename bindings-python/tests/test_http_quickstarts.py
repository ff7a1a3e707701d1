"""The README's HTTP quick starts, copied into an empty project and served for real.

Each ``# quick start: NAME`` block is written to a fresh folder as ``app.py`` (a block headed
``# quick start: NAME (FILE)`` goes into FILE; Django's start from ``django-admin
startproject``'s files, and a settings block is appended to its settings.py). Then the
project is served in a process of its own, by uvicorn (ASGI) or gunicorn (WSGI), and sent the
examples' sequence with httpx: five 200s with r = 4..0, a 429 with Retry-After and a problem
body, and an unlimited /healthz without fields."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import http_sfv
import pytest

from conftest import PACKAGE
from servers import server_process

BLOCKS: dict[str, dict[str, str]] = {}
for _m in re.finditer(r"```python\n# quick start: ([\w-]+)(?: \(([\w.]+)\))?\n(.*?)```",
                      (PACKAGE / "README.md").read_text(), re.S):
    BLOCKS.setdefault(_m.group(1), {})[_m.group(2) or "app.py"] = _m.group(0)[len("```python\n"):-3]

UVICORN = [sys.executable, "-m", "uvicorn", "--no-proxy-headers", "--port", "{port}", "--log-level", "warning"]
GUNICORN = [sys.executable, "-m", "gunicorn", "--bind", "127.0.0.1:{port}", "--workers", "1", "--threads", "2",
            "--log-level", "warning"]
SERVE = {
    "fastapi": [*UVICORN, "app:app"],
    "asgi": [*UVICORN, "app:app"],
    "wsgi": [*GUNICORN, "app:app"],
    "flask": [*GUNICORN, "app:app"],
    "django": [*GUNICORN, "mysite.wsgi"],
}


def test_the_readme_has_every_quick_start() -> None:
    assert sorted(BLOCKS) == sorted(SERVE)
    assert sorted(BLOCKS["django"]) == ["settings.py", "urls.py"]


def project(name: str, folder: Path) -> None:
    """Lays the quick start ``name`` out in the empty ``folder``."""
    if name == "django":
        subprocess.run([sys.executable, "-m", "django", "startproject", "mysite", str(folder)], check=True)
        with open(folder / "mysite" / "settings.py", "a") as settings:
            settings.write("\n" + BLOCKS[name]["settings.py"])
        (folder / "mysite" / "urls.py").write_text(BLOCKS[name]["urls.py"])
        return
    for file, text in BLOCKS[name].items():
        (folder / file).write_text(text)


@pytest.mark.parametrize("name", sorted(SERVE))
def test_each_quick_start_serves_the_examples_sequence(name: str, tmp_path: Path) -> None:
    assert not any(tmp_path.iterdir())
    project(name, tmp_path)
    with server_process(SERVE[name], str(tmp_path)) as client:
        health = client.get("/healthz")
        assert health.status_code == 200 and "ratelimit" not in health.headers
        for want_r in (4, 3, 2, 1, 0):
            r = client.get("/limited")
            assert r.status_code == 200
            parsed = http_sfv.List()
            parsed.parse(r.headers["ratelimit"].encode())
            assert [(m.value, m.params["r"]) for m in parsed] == [("default", want_r)]
            assert r.headers["ratelimit-policy"] == '"default";q=5;w=60'
        denied = client.get("/limited")
        assert denied.status_code == 429 and int(denied.headers["retry-after"]) >= 1
        assert denied.headers["content-type"] == "application/problem+json"
        assert denied.json()["status"] == 429
        assert client.get("/healthz").status_code == 200
        if name in ("flask", "django"):
            # The API view's own limit, keyed by X-Api-Key: its own policy and counter.
            api = client.get("/api", headers={"X-Api-Key": "k1"})
            assert api.status_code == 200 and api.headers["ratelimit-policy"] == '"default";q=100;w=3600'
