"""Chaos: mixed load from Rust, Python, Node and Go against a 3+3 Redis Cluster (every node
behind the fault proxy) and a Sentinel-managed master/replica pair, while a scheduler kills and
restarts masters, pauses nodes (SIGSTOP), CLIENT KILLs connections and turns proxy faults on and
off. At the end it prints calls, answers by kind, p99 and worst latency, script executions
against calls, and over-admission per key against its bound, and fails on any broken invariant:

- every call answered within its timeout + slack, with a decision or `store_unavailable`;
- the servers executed no more script calls than were made (per store);
- no key admitted more than its limit plus what the failovers in the run may lose: a failover can
  lose at most the state a replica had not received, so the bound is the limit per failover of
  that store; keys charged durably (Rust, `durable_replicas=1`) are bounded by the limit itself.

    python3 chaos.py [--seconds 60] [--seed N] [--json OUT]
"""

import argparse
import json
import os
import random
import signal
import sys
import time

from harness import Cluster, Driver, Sentinels, build_paths, cli, executions
from stalls import StallMeter, stall_within

TIMEOUT_MS = 500
LIMIT = 100
KEYS = 24
LANGS = ("rust", "python", "node", "go")


class ExecCounter:
    """Script executions per server process, summed over the run: a node's counters restart
    with it, so each process's last reading is kept (read just before it is killed)."""

    def __init__(self):
        self.last = {}
        self.paused = set()

    def poll(self, node) -> None:
        if node.alive() and node.pid not in self.paused:
            try:
                self.last[(node.port, node.pid)] = executions(node.port)
            except Exception:  # a node that does not answer in time keeps its last reading
                pass

    def total(self, nodes) -> int:
        ports = {n.port for n in nodes}
        return sum(v for (port, _), v in self.last.items() if port in ports)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("CHAOS_SECONDS", 300)))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("CHAOS_SEED", time.time())))
    ap.add_argument("--slack-ms", type=float, default=float(os.environ.get("CHAOS_SLACK_MS", 100)))
    ap.add_argument("--json")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    print(f"chaos: {args.seconds:.0f} s, seed {args.seed}, timeout {TIMEOUT_MS} ms", flush=True)

    cluster = Cluster(build_paths()["proxy"])
    try:
        sentinels = Sentinels()
    except BaseException:
        cluster.cleanup()
        raise
    counter = ExecCounter()
    drivers = []
    cluster_base = {"limit": LIMIT, "window_ms": 1_000_000_000, "prefix": "chaos", "concurrency": 2, "pace_ms": 2}
    plans = []
    for lang in LANGS:
        plans.append((lang, "cluster", cluster.urls(), "cluster", [f"c{i}" for i in range(KEYS)]))
        plans.append((lang, "sentinel", sentinels.urls(), f"sentinel:{Sentinels.SERVICE}", [f"s{i}" for i in range(KEYS)]))
    plans.append(("rust-durable", "cluster-durable", cluster.urls(), "cluster", [f"d{i}" for i in range(KEYS)]))
    events = {}
    failovers = {"cluster": 0, "sentinel": 0}
    pending = []  # (when, action)
    problems = []
    known = []
    try:
        for n in cluster.nodes + sentinels.data_nodes():
            counter.poll(n)
        for lang, store, urls, mode, keys in plans:
            d = Driver(lang, urls, mode, TIMEOUT_MS)
            d.store, d.keys = store, keys
            drivers.append(d)
        for d in drivers:
            d.send({"cmd": "run", "seconds": args.seconds, "keys": d.keys, **cluster_base})
        meter = StallMeter()
        start = time.monotonic()
        next_event = start + 1.5
        next_poll = start + 1
        while time.monotonic() < start + args.seconds:
            now = time.monotonic()
            for item in [p for p in pending if p[0] <= now]:
                pending.remove(item)
                item[1]()
            if now >= next_poll:
                for n in cluster.nodes + sentinels.data_nodes():
                    counter.poll(n)
                next_poll = now + 1
            if now >= next_event and now < start + args.seconds - 4:
                kind = rng.choice(["kill", "stop", "client_kill", "proxy", "proxy", "sentinel_kill", "sentinel_stop"])
                if schedule(kind, rng, cluster, sentinels, counter, pending, failovers, now):
                    events[kind] = events.get(kind, 0) + 1
                next_event = now + rng.uniform(1.0, 2.5)
            time.sleep(0.05)
        # Undo whatever is still in effect, then collect the drivers' answers.
        for _, action in sorted(pending, key=lambda p: p[0]):
            action()
        pending.clear()
        results = [d.receive(args.seconds + 120) for d in drivers]
        machine_stalls = meter.take()
        meter.stop()
        for n in cluster.nodes + sentinels.data_nodes():
            counter.poll(n)
    finally:
        for d in drivers:
            d.stop()
        cluster.cleanup()
        sentinels.cleanup()

    print(f"events: {', '.join(f'{k}={v}' for k, v in sorted(events.items()))}; "
          f"failovers that may lose state: cluster {failovers['cluster']}, sentinel {failovers['sentinel']}")
    # Each driver's bound adds the scheduling stalls seen beside its calls, by the driver itself
    # (`stalls` and `call_stall_ms`, measured where the calls ran) or by this orchestrator
    # (stalls.StallMeter), the larger: the most of a meter's stalls that overlap one window as
    # long as its worst call (stalls.py says why a sum, and why that window).
    print(f"worst single scheduling stall of the orchestrator itself: {max((e[2] for e in machine_stalls), default=0)} ms")
    print(f"{'driver':14} {'store':16} {'calls':>7} {'allowed':>7} {'denied':>7} {'errors':>7} {'p99 ms':>7} {'worst ms':>8} "
          f"{'stall ms':>8} {'machine':>8}  codes")
    for d, r in zip(drivers, results):
        stall = stall_within(machine_stalls, [r], r["worst_ms"])
        own, machine = stall.driver, stall.machine
        r["stall_ms"], r["machine_stall_ms"] = own, machine
        bound_ms = round(TIMEOUT_MS + args.slack_ms + stall.ms, 1)
        print(f"{d.lang:14} {d.store:16} {r['calls']:7} {r['allowed']:7} {r['denied']:7} {r['errors']:7} "
              f"{r['p99_ms']:7} {r['worst_ms']:8} {own:8} {machine:8}  {r['codes']}")
        if r["worst_ms"] > bound_ms:
            problems.append(f"{d.lang}/{d.store}: a call took {r['worst_ms']} ms (bound {bound_ms}: "
                            f"{TIMEOUT_MS + args.slack_ms} + stalls within {r['worst_ms']} ms, driver {own}, machine {machine})")
        if set(r["codes"]) - {"store_unavailable"}:
            problems.append(f"{d.lang}/{d.store}: unexpected errors {r['codes']}")
        if r["calls"] == 0:
            problems.append(f"{d.lang}/{d.store}: made no call")
    summary = {"seconds": args.seconds, "seed": args.seed, "events": events, "failovers": failovers, "stores": {}}
    for store, nodes, groups in (("cluster", cluster.nodes, ("cluster", "cluster-durable")),
                                 ("sentinel", sentinels.data_nodes(), ("sentinel",))):
        calls = sum(r["calls"] for d, r in zip(drivers, results) if d.store in groups)
        executed = counter.total(nodes)
        print(f"{store}: {executed} script executions for {calls} calls")
        if executed > calls:
            problems.append(f"{store}: {executed} script executions for {calls} calls")
        summary["stores"][store] = {"calls": calls, "executions": executed}
    for group, bound in (("cluster", LIMIT * failovers["cluster"]), ("cluster-durable", 0),
                         ("sentinel", LIMIT * failovers["sentinel"])):
        allowed = {}
        for d, r in zip(drivers, results):
            if d.store == group:
                for k, v in r["allowed_by_key"].items():
                    allowed[k] = allowed.get(k, 0) + v
        over = max([v - LIMIT for v in allowed.values()] + [0])
        exhausted = sum(1 for v in allowed.values() if v >= LIMIT)
        print(f"over-admission {group}: worst key +{over} (bound +{bound}); {exhausted}/{KEYS} keys reached the limit")
        if over > bound:
            problems.append(f"{group}: a key admitted {over} over its limit (bound {bound})")
        summary["stores"].setdefault(group, {}).update({"over_admission": over, "bound": bound, "exhausted": exhausted})
    summary["drivers"] = [{"lang": d.lang, "store": d.store, **{k: v for k, v in r.items() if k not in ("allowed_by_key", "stalls")}}
                          for d, r in zip(drivers, results)]
    summary["problems"] = problems
    summary["known"] = known
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    for k in known:
        print(f"KNOWN: {k}")
    for p in problems:
        print(f"BROKEN: {p}")
    print("chaos: " + ("every invariant held" if not problems else f"{len(problems)} invariant(s) broken"))
    return 1 if problems else 0


def schedule(kind, rng, cluster, sentinels, counter, pending, failovers, now) -> bool:
    """Starts one event and queues what undoes it; False when it cannot run now."""
    busy = any(not n.alive() for n in cluster.nodes + sentinels.data_nodes()) or counter.paused
    if kind == "kill":
        if busy or not cluster.ok():
            return False
        node = rng.choice(cluster.masters())
        counter.poll(node)
        node.stop(signal.SIGKILL)
        failovers["cluster"] += 1
        pending.append((now + rng.uniform(3, 5), node.restart))
    elif kind == "stop":
        if busy:
            return False
        node = rng.choice(cluster.nodes)
        counter.poll(node)
        secs = rng.uniform(0.3, 2.5)
        if secs > 1.0 and node in cluster.masters():
            failovers["cluster"] += 1  # past the node timeout a replica may take over
        counter.paused.add(node.pid)
        node.proc.send_signal(signal.SIGSTOP)

        def resume(node=node):
            node.proc.send_signal(signal.SIGCONT)
            counter.paused.discard(node.pid)
        pending.append((now + secs, resume))
    elif kind == "client_kill":
        node = rng.choice([n for n in cluster.nodes + sentinels.data_nodes() if n.alive() and n.pid not in counter.paused])
        cli(node.port, "client", "kill", "type", "normal", timeout=3)
    elif kind == "proxy":
        every = rng.randint(3, 10)
        rule = rng.choice([f"drop_reply scope=scripts every={every}", f"reset scope=scripts every={every}",
                           f"drop_request 20 scope=scripts every={every}", f"delay {TIMEOUT_MS + 200} scope=scripts every={every}",
                           f"stall {TIMEOUT_MS + 200} scope=scripts every={every}", "blackhole scope=scripts times=1"])
        cluster.proxy.say(f"set {rule}")

        def clear():
            cluster.proxy.say("clear")
            if rule.startswith("blackhole"):
                cluster.proxy.say("kill")
        pending.append((now + rng.uniform(1, 3), clear))
    elif kind == "sentinel_kill":
        if busy or not sentinels.ready():
            return False
        master = next((n for n in sentinels.data_nodes() if "role:master" in cli(n.port, "info", "replication", timeout=3)), None)
        if master is None:
            return False
        counter.poll(master)
        master.stop(signal.SIGKILL)
        failovers["sentinel"] += 1
        pending.append((now + rng.uniform(3, 5), master.restart))
    elif kind == "sentinel_stop":
        if busy:
            return False
        node = rng.choice(sentinels.data_nodes())
        counter.poll(node)
        secs = rng.uniform(0.3, 1.5)
        if secs > 1.0:
            failovers["sentinel"] += 1
        counter.paused.add(node.pid)
        node.proc.send_signal(signal.SIGSTOP)

        def resume(node=node):
            node.proc.send_signal(signal.SIGCONT)
            counter.paused.discard(node.pid)
        pending.append((now + secs, resume))
    return True


if __name__ == "__main__":
    sys.exit(main())
