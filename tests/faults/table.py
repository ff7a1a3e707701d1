"""Prints the docs/reliability.md table from `prove.py --json OUT`: one row per fault and store,
one cell per language: whether it held, executions/calls, admitted by the server/60, the slowest
call. The page explains each fault in prose.

    python3 table.py OUT.json
"""

import json
import sys


def main() -> None:
    rows = json.load(open(sys.argv[1]))
    langs = list(dict.fromkeys(r["lang"] for r in rows))
    print("| fault | store | " + " | ".join(langs) + " |")
    print("|---|---|" + "---|" * len(langs))
    keys = list(dict.fromkeys((r["fault"], r["store"]) for r in rows))
    for fault, store in keys:
        cells = []
        for lang in langs:
            r = next((r for r in rows if (r["fault"], r["store"], r["lang"]) == (fault, store, lang)), None)
            if r is None:
                cells.append("")
                continue
            mark = "known ✗" if r.get("known") else ("✗" if r["problems"] else "✓")
            cells.append(f"{mark} {r['executions']}/{r['calls']}, {r['admitted_by_server']}/60, {round(r['worst_ms'])} ms")
        where = {"standalone": "one node", "cluster": "cluster", "sentinel": "Sentinel"}.get(store, store)
        print(f"| `{fault}` | {where} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
