"""The README's HTTP quick starts, served for real: each block is run as a module of its own,
its `app` (or Django's `application`) served by uvicorn or werkzeug's WSGI server, and sent the
examples' sequence with httpx: five 200s with r = 4..0, a 429 with Retry-After and a problem
body, and an unlimited /healthz without fields."""

from __future__ import annotations

import re
import sys
import types
from typing import Any

import http_sfv
import pytest

from conftest import PACKAGE
from servers import serve

BLOCKS = {m.group(1): m.group(0)[len("```python\n"):-3] for m in re.finditer(
    r"```python\n# quick start: (\w+)\n.*?```", (PACKAGE / "README.md").read_text(), re.S)}
SERVER = {"fastapi": "asgi", "asgi": "asgi", "flask": "wsgi", "django": "wsgi"}


def test_the_readme_has_every_quick_start() -> None:
    assert sorted(BLOCKS) == sorted(SERVER)


def load(name: str) -> Any:
    module = types.ModuleType(f"readme_quickstart_{name}")
    sys.modules[module.__name__] = module  # Django imports ROOT_URLCONF (the module) by name
    exec(compile(BLOCKS[name], f"README.md quick start {name}", "exec"), module.__dict__)
    return getattr(module, "application", None) or module.app


@pytest.mark.parametrize("name", sorted(SERVER))
def test_each_quick_start_serves_the_examples_sequence(name: str) -> None:
    with serve(SERVER[name], load(name)) as client:
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
