"""The Python side of the fault proofs, chaos and soak: a long-lived process that owns one
RedisStore and makes limiter calls when told to.

    python driver.py URLS MODE TIMEOUT_MS

reads one JSON command per line on stdin and answers one JSON line on stdout (`run`, `reopen`,
`collect`, `close`, `quit`: `main` below; `run`'s fields: `run`; harness.py's `Driver` sends them for
prove.py, chaos.py and soak.py). Every language's driver speaks
the same protocol, so the orchestrators treat them alike.
"""

import gc
import json
import sys
import threading
import time

import throttlekit as tk


def runqueue_ms() -> float:
    """How long the calling thread has waited, runnable, for a CPU (Linux schedstat): the
    scheduling stall a call on this thread suffers, measured where it is made. A thread that
    sleeps and records how late it woke would not do here: it needs the GIL, so a call that
    holds it would look like a stall. A call's wait is the sum of the stalls it met on this
    thread; each run reports the longest (`call_stall_ms`, tests/faults/stalls.py), and no
    sleeper's events (`stalls` is empty)."""
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1]) / 1e6


def open_store(urls: str, mode: str, timeout_ms: int) -> tk.RedisStore:
    """MODE is `standalone`, `cluster` or `sentinel:SERVICE`."""
    mode, _, service = mode.partition(":")
    extra = {"service_name": service} if service else {}
    return tk.RedisStore(urls.split(","), mode=mode, timeout_ms=timeout_ms, **extra)


def run(store: tk.RedisStore, cmd: dict) -> dict:
    limiter = tk.Limiter(
        tk.Strategy.gcra(cmd["limit"], cmd["window_ms"]),
        store=store,
        prefix=cmd["prefix"],
        fail_policy="raise",
    )
    keys = cmd["keys"]
    calls_wanted = cmd.get("calls")
    deadline = time.monotonic() + cmd["seconds"] if cmd.get("seconds") else None
    stop_on_deny = cmd.get("stop_on_deny", False)
    pace = cmd.get("pace_ms", 0) / 1000
    lock = threading.Lock()
    out = {"calls": 0, "allowed": 0, "denied": 0, "errors": 0, "codes": {}, "allowed_by_key": {}}
    latencies: list = []
    state = {"next": 0, "stop": False}
    out["call_stall_ms"] = 0.0

    def worker() -> None:
        while True:
            with lock:
                if state["stop"] or (calls_wanted is not None and state["next"] >= calls_wanted):
                    return
                if deadline is not None and time.monotonic() >= deadline:
                    return
                key = keys[state["next"] % len(keys)]
                state["next"] += 1
            started, waited = time.monotonic(), runqueue_ms()
            try:
                d = limiter.check_sync(key)
                kind = "allowed" if d.allowed else "denied"
            except tk.ThrottleKitError as e:
                kind = e.code
            took = (time.monotonic() - started) * 1000
            waited = runqueue_ms() - waited
            with lock:
                out["call_stall_ms"] = max(out["call_stall_ms"], round(waited, 1))
                latencies.append(took)
                out["calls"] += 1
                if kind == "allowed":
                    out["allowed"] += 1
                    out["allowed_by_key"][key] = out["allowed_by_key"].get(key, 0) + 1
                elif kind == "denied":
                    out["denied"] += 1
                    if stop_on_deny:
                        state["stop"] = True
                else:
                    out["errors"] += 1
                    out["codes"][kind] = out["codes"].get(kind, 0) + 1
            if pace:
                time.sleep(pace)

    threads = [threading.Thread(target=worker) for _ in range(cmd.get("concurrency", 1))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    latencies.sort()
    out["worst_ms"] = round(latencies[-1], 1) if latencies else 0
    out["p99_ms"] = round(latencies[int(len(latencies) * 0.99)] if latencies else 0, 1)
    out["stalls"] = []
    return out


def open_retrying(urls: str, mode: str, timeout_ms: int) -> tk.RedisStore:
    """The first connection is set-up, not under test: a loaded machine gets a few tries."""
    for attempt in range(5):
        try:
            return open_store(urls, mode, timeout_ms)
        except tk.StoreUnavailableError:
            if attempt == 4:
                raise
            time.sleep(0.2)


def main() -> None:
    urls, mode, timeout_ms = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = open_retrying(urls, mode, timeout_ms)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "run":
            reply = run(store, cmd)
        elif cmd["cmd"] == "reopen":
            store.close_sync()
            store = open_retrying(urls, mode, timeout_ms)
            reply = {"ok": True}
        elif cmd["cmd"] == "collect":
            # Before soak.py samples this process's memory: garbage counts only once retained.
            gc.collect()
            reply = {"ok": True}
        elif cmd["cmd"] == "close":
            store.close_sync()
            reply = {"ok": True}
        elif cmd["cmd"] == "quit":
            return
        else:
            reply = {"error": f"unknown command {cmd['cmd']}"}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
