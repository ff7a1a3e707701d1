"""Prints the docs/reliability.md table from `prove.py --json OUT`: one row per fault and store,
one cell per language: executions/calls, the slowest call, and whether it held.

    python3 table.py OUT.json
"""

import json
import sys

INJECTED = {
    "delay": "one script call in 5 held 450 ms (timeout 250)",
    "stall": "one script call in 5: the connection frozen both ways 450 ms",
    "drop_request": "one script call in 5 cut after 20 bytes, connection closed",
    "drop_reply": "one script call in 5 run by the server, reply dropped, connection closed",
    "reset": "one script call in 5 answered with a TCP RST, never forwarded",
    "blackhole": "one script call in 5: nothing forwarded on that connection again",
    "silent": "every connection closed, new ones accepted and never answered (8 calls)",
    "blackhole_recovery": "one script call black-holed, then 11 calls with no outside help",
}


def main() -> None:
    rows = json.load(open(sys.argv[1]))
    langs = list(dict.fromkeys(r["lang"] for r in rows))
    print("| fault (injected) | store | " + " | ".join(langs) + " |")
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
        where = {"standalone": "one node", "cluster": "cluster, 3 masters", "sentinel": "Sentinel, master behind the proxy"}.get(store, store)
        print(f"| `{fault}`: {INJECTED[fault]} | {where} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
