#!/usr/bin/env python3
"""Every link and doc path in the repository points inside it (part of `make lint`).

Fails, naming file and line, on:
  * a relative markdown link in a tracked .md file whose file does not exist, or whose
    `#anchor` names no heading of the markdown file it points at;
  * a path to a markdown file written anywhere in a tracked text file (code comments included),
    `docs/redis.md` or `../docs/redis.md`, that does not exist: a path whose first part is a
    top-level entry of the repository is read from the root, one starting with `.` or `..` from
    the file's own directory;
  * a section named after a markdown file's path, `docs/redis.md, "Fixed windows"` or
    `docs/http-go.md ("Go: net/http middleware")`, that no heading of that file starts with;
  * any reference to the files that sit beside the project on the machines it was written on
    (the `shared/` folder, its SEMANTICS/DESIGN/STYLE/BUILDING/HTTP-FIELDS pages): a clone has
    none of them.

    scripts/check-links.py          # from anywhere in the repository
"""

import os
import re
import subprocess
import sys

ROOT = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                      check=True, cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
FILES = subprocess.run(["git", "ls-files", "-z"], capture_output=True, text=True, check=True,
                       cwd=ROOT).stdout.split("\0")
FILES = [f for f in FILES if f]
TRACKED = set(FILES)
DIRS = {os.path.dirname(f) for f in FILES}
while "" in DIRS:
    DIRS.discard("")
for d in list(DIRS):
    while d:
        DIRS.add(d)
        d = os.path.dirname(d)
TOP = {f.split("/")[0] for f in FILES}
SELF = os.path.relpath(os.path.abspath(__file__), ROOT)

# Built from parts so this file does not match itself.
OUTSIDE = re.compile(
    r"(?<![\w.-])(?:\.\./)*" + "sha" + r"red/"
    r"|\b(?:" + "|".join(["SEMAN" + "TICS", "DES" + "IGN", "STY" + "LE", "BUILD" + "ING", "HTTP-" + "FIELDS"]) + r")\.md\b")
URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s)>\]'\"`]+")
MD_LINK = re.compile(r"(?<!!)\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?\s*\)")
MD_PATH = re.compile(r"(?<![\w./$-])((?:\.{1,2}/)*[\w.-]+(?:/[\w.-]+)*\.md)\b(?:#([\w-]+))?")
FENCE = re.compile(r"^\s*(```|~~~)")
SECTION = re.compile(r"((?:\.{1,2}/)*[\w.-]+(?:/[\w.-]+)*\.md)`?,? \(?\"([^\"]{3,})\"")


def exists(path):
    return path in TRACKED or path in DIRS or (os.path.exists(os.path.join(ROOT, path)) and path != "")


def slug(heading):
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_parsed = {}


def parse(path):
    """A markdown file's headings (outside code fences) and its explicit `<a name|id>` anchors."""
    if path not in _parsed:
        heads, named, fenced = [], set(), False
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            for line in f:
                if FENCE.match(line):
                    fenced = not fenced
                    continue
                m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if m:
                    heads.append(m.group(1))
                named.update(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", line))
        _parsed[path] = (heads, named)
    return _parsed[path]


def headings(path):
    return [h.replace("`", "") for h in parse(path)[0]]


def anchors(path):
    heads, named = parse(path)
    found, seen = set(named), {}
    for h in heads:
        s = slug(h)
        n = seen.get(s, 0)
        seen[s] = n + 1
        found.add(s if n == 0 else f"{s}-{n}")
    return found


def resolve(source, target):
    """The repository path `target` names from `source`, or None when it leaves the repository."""
    base = os.path.dirname(source)
    full = os.path.normpath(os.path.join(base, target))
    return None if full.startswith("..") or os.path.isabs(full) else ("" if full == "." else full)


def check_target(source, target, errors, where):
    path, _, anchor = target.partition("#")
    if path == "":
        dest = source
    else:
        dest = resolve(source, path)
        if dest is None:
            errors.append(f"{where}: {target} points outside the repository")
            return
        if not exists(dest):
            errors.append(f"{where}: {target} does not exist ({dest})")
            return
    if anchor and dest.endswith(".md") and dest in TRACKED and anchor not in anchors(dest):
        errors.append(f"{where}: {target}: {dest} has no heading with the anchor #{anchor}")


def main():
    errors = []
    for f in FILES:
        if f == SELF or f.endswith((".lock", ".proptest-regressions")) or f.startswith("fuzz/regressions/"):
            continue
        full = os.path.join(ROOT, f)
        if os.path.islink(full) or not os.path.isfile(full):
            continue
        try:
            with open(full, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        markdown = f.endswith(".md")
        for n, line in enumerate(lines, 1):
            where = f"{f}:{n}"
            if OUTSIDE.search(line):
                errors.append(f"{where}: refers to a file outside the repository: {line.strip()[:120]}")
            text = URL.sub(" ", line)
            if markdown:
                for m in list(MD_LINK.finditer(text)) + list(IMAGE.finditer(text)):
                    target = m.group(1)
                    if not re.match(r"^[a-z][a-z0-9+.-]*:", target):
                        check_target(f, target, errors, where)
            for m in SECTION.finditer(text):
                path, title = m.group(1), m.group(2).replace("`", "")
                first = path.split("/")[0]
                dest = resolve(f, path) if first in (".", "..") else os.path.normpath(path)
                if dest and dest in TRACKED and not any(h.startswith(title) for h in headings(dest)):
                    errors.append(f"{where}: {path} has no section \"{title}\"")
            for m in MD_PATH.finditer(text):
                path = m.group(1)
                first = path.split("/")[0]
                if "/" not in path or not (first in TOP or first in (".", "..")):
                    continue
                dest = resolve(f, path) if first in (".", "..") else os.path.normpath(path)
                if dest is None:
                    errors.append(f"{where}: {path} points outside the repository")
                elif not exists(dest):
                    errors.append(f"{where}: {path} does not exist")
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"check-links: {len(errors)} broken link(s) or path(s)", file=sys.stderr)
        return 1
    print(f"check-links: {len(FILES)} files, every link and doc path points inside the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main())
