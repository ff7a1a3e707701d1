#!/usr/bin/env python3
"""One version everywhere: the workspace's `[workspace.package] version` is the source, and
every manifest and every release artifact must carry exactly it.

    scripts/dist/check_versions.py            # the manifests in the checkout
    scripts/dist/check_versions.py dist/      # ...and every artifact in dist/

Exits 1 with one line per disagreement. An unknown file in the artifacts directory is also an
error: a leftover from another version must not be published by accident.
"""

from __future__ import annotations

import io
import json
import re
import sys
import tarfile
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NODE_PLATFORM_PACKAGES = ("@throttlekit/core-linux-x64-gnu",)
MEMBERS = ("core", "bindings-python", "bindings-node", "bindings-c", "bindings-jvm")

errors: list[str] = []


def expect(what: str, got: object, want: str) -> None:
    if got != want:
        errors.append(f"{what}: {got!r}, expected {want!r}")


def header_version(text: str) -> str | None:
    m = re.search(r'^#define TK_VERSION "([^"]*)"', text, re.M)
    return m.group(1) if m else None


def workspace_version() -> str:
    ws = tomllib.loads((ROOT / "Cargo.toml").read_text())
    return ws["workspace"]["package"]["version"]


def check_sources(v: str) -> None:
    ws = tomllib.loads((ROOT / "Cargo.toml").read_text())
    expect("Cargo.toml [workspace.dependencies] throttlekit", ws["workspace"]["dependencies"]["throttlekit"].get("version"), v)
    for member in MEMBERS:
        pkg = tomllib.loads((ROOT / member / "Cargo.toml").read_text())["package"]
        expect(f"{member}/Cargo.toml version", pkg.get("version"), {"workspace": True})  # type: ignore[arg-type]
    py = tomllib.loads((ROOT / "bindings-python/pyproject.toml").read_text())["project"]
    if "version" in py or "version" not in py.get("dynamic", []):
        errors.append("bindings-python/pyproject.toml: the version must be dynamic (maturin takes Cargo's)")
    node = json.loads((ROOT / "bindings-node/package.json").read_text())
    expect("bindings-node/package.json version", node["version"], v)
    lock = json.loads((ROOT / "bindings-node/package-lock.json").read_text())
    expect("bindings-node/package-lock.json version", lock.get("version"), v)
    expect("bindings-node/package-lock.json packages[''].version", lock["packages"][""].get("version"), v)
    expect("bindings-c/include/throttlekit.h TK_VERSION", header_version((ROOT / "bindings-c/include/throttlekit.h").read_text()), v)


def tar_member(tar: tarfile.TarFile, name: str) -> str:
    f = tar.extractfile(name)
    if f is None:
        raise KeyError(name)
    return f.read().decode()


def check_crate(path: Path, v: str) -> None:
    with tarfile.open(path) as tar:
        manifest = tomllib.loads(tar_member(tar, f"throttlekit-{v}/Cargo.toml"))
    expect(f"{path.name}: Cargo.toml version", manifest["package"]["version"], v)


def check_c_tarball(path: Path, v: str) -> None:
    top = f"libthrottlekit-{v}-x86_64-linux-gnu"
    with tarfile.open(path) as tar:
        names = set(tar.getnames())
        pc = tar_member(tar, f"{top}/lib/pkgconfig/throttlekit.pc")
        header = tar_member(tar, f"{top}/include/throttlekit.h")
    expect(f"{path.name}: throttlekit.pc Version", re.search(r"^Version: (.*)$", pc, re.M).group(1), v)  # type: ignore[union-attr]
    expect(f"{path.name}: throttlekit.h TK_VERSION", header_version(header), v)
    if f"{top}/lib/libthrottlekit.so.{v}" not in names:
        errors.append(f"{path.name}: no lib/libthrottlekit.so.{v}")


def check_wheel(path: Path, v: str) -> None:
    with zipfile.ZipFile(path) as whl:
        meta = Parser().parsestr(whl.read(f"throttlekit_core-{v}.dist-info/METADATA").decode())
    expect(f"{path.name}: METADATA Version", meta["Version"], v)
    expect(f"{path.name}: METADATA Name", meta["Name"], "throttlekit-core")


def check_sdist(path: Path, v: str) -> None:
    with tarfile.open(path) as tar:
        meta = Parser().parsestr(tar_member(tar, f"throttlekit_core-{v}/PKG-INFO"))
        cargo = tomllib.loads(tar_member(tar, f"throttlekit_core-{v}/Cargo.toml"))
    expect(f"{path.name}: PKG-INFO Version", meta["Version"], v)
    expect(f"{path.name}: Cargo.toml workspace version", cargo.get("workspace", {}).get("package", {}).get("version"), v)


def check_npm(path: Path, v: str, name: str) -> None:
    with tarfile.open(path) as tar:
        pkg = json.loads(tar_member(tar, "package/package.json"))
    expect(f"{path.name}: name", pkg["name"], name)
    expect(f"{path.name}: version", pkg["version"], v)
    if name == "@throttlekit/core":
        optional = pkg.get("optionalDependencies", {})
        expect(f"{path.name}: optionalDependencies", optional, {p: v for p in NODE_PLATFORM_PACKAGES})


def check_jar(path: Path, v: str) -> None:
    with zipfile.ZipFile(path) as jar:
        manifest = jar.read("META-INF/MANIFEST.MF").decode()
        names = set(jar.namelist())
    m = re.search(r"^Implementation-Version: (.*?)\r?$", manifest, re.M)
    expect(f"{path.name}: MANIFEST Implementation-Version", m.group(1) if m else None, v)
    if "native/linux-x86_64/libthrottlekit_jvm.so" not in names:
        errors.append(f"{path.name}: no native/linux-x86_64/libthrottlekit_jvm.so")


def check_artifacts(dist: Path, v: str) -> None:
    expected = {
        f"throttlekit-{v}.crate": check_crate,
        f"libthrottlekit-{v}-x86_64-linux-gnu.tar.gz": check_c_tarball,
        f"throttlekit_core-{v}.tar.gz": check_sdist,
        f"throttlekit-{v}.jar": check_jar,
        "throttlekit-core-{v}.tgz".format(v=v): lambda p, v: check_npm(p, v, "@throttlekit/core"),
    }
    for platform in NODE_PLATFORM_PACKAGES:
        flat = platform.lstrip("@").replace("/", "-")
        expected[f"{flat}-{v}.tgz"] = lambda p, v, n=platform: check_npm(p, v, n)
    wheel = re.compile(rf"throttlekit_core-{re.escape(v)}-cp310-abi3-(manylinux2014_x86_64\.)?manylinux_2_(\d+)_x86_64\.whl")
    seen = set()
    for path in sorted(dist.iterdir()):
        if path.name in expected:
            expected[path.name](path, v)
            seen.add(path.name)
        elif wheel.fullmatch(path.name):
            check_wheel(path, v)
            seen.add("wheel")
        elif path.name == "SHA256SUMS":
            continue
        else:
            errors.append(f"{dist}/{path.name}: not an artifact of version {v}")
    for name in [*expected, "wheel"]:
        if name not in seen:
            errors.append(f"{dist}: missing {'the wheel' if name == 'wheel' else name}")


def main() -> int:
    v = workspace_version()
    check_sources(v)
    if len(sys.argv) > 1:
        check_artifacts(Path(sys.argv[1]), v)
    for e in errors:
        print(f"version mismatch: {e}", file=sys.stderr)
    if not errors:
        print(f"version {v}: every manifest{' and artifact' if len(sys.argv) > 1 else ''} agrees")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
