#!/usr/bin/env python3
"""docs/adaptive.md's C, Go, Java and Ruby examples are excerpts of code a suite runs (part of
`make lint`): each block's non-blank lines, indentation aside, appear in that order, one after
another, in one of these files.

  c     bindings-c/tests/test_adaptive.c                     (bindings-c/test.sh, under valgrind)
  go    bindings-c/go/adaptive_example_test.go               (go test checks the Examples' output)
  java  bindings-jvm/test/dev/throttlekit/AdaptiveLimiterTest.java   (bindings-jvm/test.sh)
  ruby  bindings-uniffi/ruby/test/test_adaptive.rb           (bindings-uniffi/test.sh)
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = {
    "c": "bindings-c/tests/test_adaptive.c",
    "go": "bindings-c/go/adaptive_example_test.go",
    "java": "bindings-jvm/test/dev/throttlekit/AdaptiveLimiterTest.java",
    "ruby": "bindings-uniffi/ruby/test/test_adaptive.rb",
}


def lines(text):
    return [line.strip() for line in text.splitlines() if line.strip()]


def main():
    doc = open(os.path.join(ROOT, "docs/adaptive.md"), encoding="utf-8").read()
    failures = 0
    for lang, path in SOURCES.items():
        have = lines(open(os.path.join(ROOT, path), encoding="utf-8").read())
        snippets = re.findall(r"^```" + lang + r"\n(.*?)^```", doc, re.S | re.M)
        if not snippets:
            print(f"docs/adaptive.md has no {lang} example")
            failures += 1
        for snippet in snippets:
            want = lines(snippet)
            if not any(have[i:i + len(want)] == want for i in range(len(have) - len(want) + 1)):
                print(f"docs/adaptive.md: a {lang} example is not an excerpt of {path}:\n{snippet}")
                failures += 1
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
