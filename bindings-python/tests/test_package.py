"""Packaging: the stubs match the native module, the version is Cargo's, the README runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import throttlekit as tk
from conftest import PACKAGE, ROOT


def test_the_stubs_match_the_native_module() -> None:
    # mypy.stubtest imports the built module and compares every name, signature, default and
    # class property with python/throttlekit/_throttlekit.pyi; any drift is an error.
    out = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "throttlekit._throttlekit"],
        capture_output=True, text=True, timeout=300, cwd=PACKAGE,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_package_is_typed_and_exports_everything_the_stub_declares() -> None:
    pkg = Path(tk.__file__).parent
    assert (pkg / "py.typed").exists() and (pkg / "_throttlekit.pyi").exists()
    stub = (pkg / "_throttlekit.pyi").read_text()
    declared = set(re.findall(r"^class (\w+)", stub, re.M))
    assert declared <= set(tk.__all__)
    for name in tk.__all__:
        assert hasattr(tk, name), name


def test_the_version_is_cargos() -> None:
    cargo = (ROOT / "Cargo.toml").read_text()
    match = re.search(r'\[workspace\.package\][^\[]*?version\s*=\s*"([^"]+)"', cargo, re.S)
    assert match and tk.__version__ == match.group(1)


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, re.S)


def test_the_readme_examples_run(redis_url: str, redis_cluster_urls: str, redis_tls: tuple[str, Path]) -> None:
    blocks = python_blocks((PACKAGE / "README.md").read_text())
    assert len(blocks) >= 3, "README.md lost its python examples"
    tls_url, pki = redis_tls
    env = {**os.environ, "REDIS_URL": redis_url, "REDIS_CLUSTER_URLS": redis_cluster_urls,
           "REDIS_TLS_URL": tls_url, "REDIS_TLS_CA": str(pki / "ca.crt")}
    for block in blocks:
        if block.startswith("# quick start: "):
            continue  # test_http_quickstarts.py lays each out in a project of its own and serves it
        out = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, timeout=60, env=env)
        assert out.returncode == 0, f"{block}\n---\n{out.stdout}{out.stderr}"


def test_the_http_middleware_modules_type_check() -> None:
    # They ship in a typed package (py.typed): mypy must accept them against the stubs.
    names = ("http", "asgi", "wsgi", "fastapi", "rules", "django", "flask")
    modules = [str(PACKAGE / "python" / "throttlekit" / f"{m}.py") for m in names]
    out = subprocess.run([sys.executable, "-m", "mypy", *modules], capture_output=True, text=True, timeout=300,
                         cwd=PACKAGE)
    assert out.returncode == 0, out.stdout + out.stderr
