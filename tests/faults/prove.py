"""At most once from Rust, Python, Node (Promise and sync paths) and Go, on one Redis server and
on a 3-master cluster, behind the fault proxy: for each fault, one script call in five is delayed past the timeout, stalled,
cut after 20 bytes, executed with its reply lost, reset, or black-holed. Then:

- every call answers within its timeout + 100 ms, with a decision or `store_unavailable`;
- the server's script executions never exceed the calls made;
- with no failover, the servers admit exactly the limit (the admissions the client saw plus those whose reply was
  lost), never one more.

    python3 prove.py [--langs rust,python,node,node-sync,go] [--stores standalone,cluster] [--json OUT]

(tests/faults/prove.sh builds what it needs and runs this.)
"""

import argparse
import json
import sys

from harness import Cluster, Driver, Proxy, Redis, build_paths, executions

TIMEOUT_MS = 250
SLACK_MS = 100
LIMIT = 60
FAULT_CALLS = 40
LATE = TIMEOUT_MS + 200
FAULTS = {
    "delay": f"delay {LATE} scope=scripts every=5",
    "stall": f"stall {LATE} scope=scripts every=5",
    "drop_request": "drop_request 20 scope=scripts every=5",
    "drop_reply": "drop_reply scope=scripts every=5",
    "reset": "reset scope=scripts every=5",
    "blackhole": "blackhole scope=scripts every=5",
}


def prove(driver: Driver, proxy: Proxy, ports: list, store: str, lang: str, fault: str, rule: str) -> dict:
    base = {"limit": LIMIT, "window_ms": 1_000_000_000, "prefix": f"prove-{store}-{lang}-{fault}", "keys": ["k"]}
    before = sum(executions(p) for p in ports)
    faults_before = int(proxy.stats()["faults"])
    proxy.say(f"set {rule}")
    during = driver.call({"cmd": "run", "calls": FAULT_CALLS, **base})
    faults = int(proxy.stats()["faults"]) - faults_before
    proxy.say("clear")
    # A black-holed connection stays open and silent until something closes it (TCP keepalive,
    # CLIENT KILL): the proxy closes every held connection, for every fault alike.
    proxy.say("kill")
    after = driver.call({"cmd": "run", "calls": LIMIT * 2, "stop_on_deny": True, **base})
    executed = sum(executions(p) for p in ports) - before
    calls = during["calls"] + after["calls"]
    allowed = during["allowed"] + after["allowed"]
    denied = during["denied"] + after["denied"]
    errors = during["errors"] + after["errors"]
    worst = max(during["worst_ms"], after["worst_ms"])
    row = {"store": store, "lang": lang, "fault": fault, "calls": calls, "allowed": allowed, "denied": denied, "errors": errors,
           "faults": faults, "executions": executed, "admitted_by_server": executed - denied, "worst_ms": worst}
    problems = []
    codes = set(during["codes"]) | set(after["codes"])
    if codes - {"store_unavailable"}:
        problems.append(f"unexpected errors {codes}")
    if faults < 1:
        problems.append("no fault injected")
    if worst > TIMEOUT_MS + SLACK_MS:
        problems.append(f"a call took {worst} ms (bound {TIMEOUT_MS + SLACK_MS})")
    if executed > calls:
        problems.append(f"{executed} executions for {calls} calls")
    if allowed > LIMIT:
        problems.append(f"{allowed} admitted over a limit of {LIMIT}")
    if after["denied"] < 1:
        problems.append("never denied")
    if executed - denied != LIMIT:
        problems.append(f"the server admitted {executed - denied}, not the limit {LIMIT}")
    row["problems"] = problems
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--langs", default="rust,python,node,node-sync,go")
    ap.add_argument("--stores", default="standalone,cluster")
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    for store in args.stores.split(","):
        if store == "standalone":
            server = Redis()
            proxy = Proxy(build_paths()["proxy"], [(None, f"127.0.0.1:{server.port}")])
            urls, mode, ports, cleanup = f"redis://{proxy.routes[0]}", "standalone", [server.port], server.cleanup
        else:
            # Three masters, no replica: no failover, so the exact-limit check holds here too.
            cluster = Cluster(build_paths()["proxy"], masters=3, replicas=0)
            proxy, urls, mode = cluster.proxy, cluster.urls(), "cluster"
            ports, cleanup = [n.port for n in cluster.nodes], cluster.cleanup
        try:
            for lang in args.langs.split(","):
                driver = Driver(lang, urls, mode, TIMEOUT_MS)
                try:
                    for fault, rule in FAULTS.items():
                        row = prove(driver, proxy, ports, store, lang, fault, rule)
                        rows.append(row)
                        status = "ok" if not row["problems"] else "FAILED: " + "; ".join(row["problems"])
                        print(f"{store:10} {lang:9} {fault:12} calls={row['calls']} allowed={row['allowed']} "
                              f"denied={row['denied']} errors={row['errors']} faults={row['faults']} "
                              f"executions={row['executions']} server-admitted={row['admitted_by_server']}/{LIMIT} "
                              f"worst={row['worst_ms']} ms  {status}", flush=True)
                finally:
                    driver.stop()
        finally:
            proxy.stop()
            cleanup()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    failed = [r for r in rows if r["problems"]]
    print(f"at-most-once proofs: {len(rows) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
