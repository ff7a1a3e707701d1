#!/usr/bin/env python3
"""The README is a front door whose every snippet is run by some test (part of `make lint`).

Checks:
  * README.md has at most 250 lines;
  * every language under "## Quick start" has a snippet, and each snippet is an excerpt (the
    same lines, in order, indentation aside) of code a suite runs:
      Rust    the README's own blocks are doctests (core/src/lib.rs, `ReadmeDoctests`)
      Python  a block of bindings-python/README.md (tests/test_package.py runs them all)
      Node    a block of bindings-node/README.md (__test__/readme.test.mjs runs them)
      C       the "C quick start" of bindings-c/README.md (bindings-c/test.sh compiles and runs it)
      Go      Example() in bindings-c/go/example_test.go (`go test` checks its output)
      Java    bindings-jvm/example/QuickStart.java (bindings-jvm/test.sh runs it)
      Ruby    bindings-uniffi/ruby/example/quickstart.rb (bindings-uniffi/test.sh runs it)
      serve   the config and the request of tests/serve.sh's HTTP door (200, 200, then 429)
The demo's table and picture are checked against the demo itself by scripts/check-demo.sh.
Pages under docs/ whose snippets a test runs are checked the same way (DOC_EXCERPTS): each
```LANG block of the page is an excerpt of the named test sources.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_LINES = 250


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def blocks(markdown, lang):
    return re.findall(r"^```" + re.escape(lang) + r"\n(.*?)^```", markdown, re.S | re.M)


def lines(text):
    return [line.strip() for line in text.splitlines() if line.strip()]


def excerpt_of(snippet, sources):
    want = lines(snippet)
    for source in sources:
        have = lines(source)
        for i in range(len(have) - len(want) + 1):
            if have[i:i + len(want)] == want:
                return True
    return False


def between(text, start, end):
    i = text.index(start) + len(start)
    return text[i:text.index(end, i)]


def go_example():
    text = read("bindings-c/go/example_test.go")
    return [between(text, "func Example() {\n", "\n}\n")]


def c_quick_start():
    text = read("bindings-c/README.md")
    return blocks(text[text.index("## C quick start"):], "c")[:1]


def serve_sources():
    script = read("tests/serve.sh")
    return [between(script, "cat >\"$WORK/http/a.yaml\" <<'YAML'\n", "YAML\n")]


# heading prefix -> (code block language, the sources it must be an excerpt of)
SECTIONS = {
    "Rust": ("rust", None),
    "Python": ("python", lambda: blocks(read("bindings-python/README.md"), "python")),
    "Node": ("js", lambda: blocks(read("bindings-node/README.md"), "js")),
    "C": ("c", c_quick_start),
    "Go": ("go", go_example),
    "Java": ("java", lambda: [read("bindings-jvm/example/QuickStart.java")]),
    "Ruby": ("ruby", lambda: [read("bindings-uniffi/ruby/example/quickstart.rb")]),
    "serve": ("yaml", serve_sources),
}

# docs page -> {code block language: the test sources every such block must be an excerpt of}
DOC_EXCERPTS = {
    "docs/postgres.md": {
        "java": ["bindings-jvm/test/dev/throttlekit/PostgresStoreTest.java"],
        "ruby": ["bindings-uniffi/ruby/test/test_sql.rb"],
    },
    "docs/sqlite.md": {
        "java": ["bindings-jvm/test/dev/throttlekit/SqliteStoreTest.java"],
        "ruby": ["bindings-uniffi/ruby/test/test_sql.rb"],
    },
}


def doc_excerpt_errors():
    errors = []
    checked = 0
    for page, langs in DOC_EXCERPTS.items():
        text = read(page)
        for lang, paths in langs.items():
            snippets = blocks(text, lang)
            if not snippets:
                errors.append(f"{page} has no ```{lang} block (its test is {', '.join(paths)})")
            for snippet in snippets:
                checked += 1
                if not excerpt_of(snippet, [read(p) for p in paths]):
                    errors.append(f"{page}: this {lang} block is not an excerpt of {', '.join(paths)}:\n{snippet}")
    return errors, checked


def main():
    errors = []
    readme = read("README.md")
    n = len(readme.splitlines())
    if n > MAX_LINES:
        errors.append(f"README.md has {n} lines; the front door keeps to {MAX_LINES} (the rest belongs in docs/)")
    if "\n## Quick start\n" not in readme:
        errors.append("README.md has no '## Quick start' section")
        quick = ""
    else:
        quick = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    seen = set()
    for part in re.split(r"^### ", quick, flags=re.M)[1:]:
        heading = part.splitlines()[0]
        name = heading.split(" ")[0]
        if name not in SECTIONS:
            errors.append(f"README.md quick start '{heading}': no test named for it in scripts/check-readme.py")
            continue
        seen.add(name)
        lang, sources = SECTIONS[name]
        snippets = blocks(part, lang)
        if not snippets:
            errors.append(f"README.md quick start '{heading}' has no ```{lang} block")
        if sources is None:
            continue
        found = sources()
        for snippet in snippets:
            if not excerpt_of(snippet, found):
                errors.append(f"README.md quick start '{heading}': this {lang} block is not an excerpt of "
                              f"the code its test runs:\n{snippet}")
    for name in SECTIONS:
        if name not in seen:
            errors.append(f"README.md has no quick start for {name}")
    # serve: the request is the one tests/serve.sh sends (200, 200, then 429 on that config).
    body = re.search(r"^body='(.*)'$", read("tests/serve.sh"), re.M)
    if "serve" in seen and not (body and f"-d '{body.group(1)}'" in quick):
        errors.append("README.md's serve request is not the body tests/serve.sh sends to /json")
    doc_errors, doc_blocks = doc_excerpt_errors()
    errors += doc_errors
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    print(f"check-readme: {n} lines; {len(seen)} quick starts and {doc_blocks} docs/ blocks, each an excerpt of what its test runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
