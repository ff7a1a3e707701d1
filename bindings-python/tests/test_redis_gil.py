"""A blocking call on a RedisStore releases the GIL while it waits for Redis.

Why it matters: a thread that held the GIL through a call that waits out its timeout kept every
other Python thread from running, and from starting its own call, for that long; a second
thread's call then took up to twice its timeout (seen in the chaos suite: a cluster
`check_sync` answered after 1042 ms against 500 ms, issue #19). Not a timing test: it counts
how often another thread ran while a call was waiting on a frozen (SIGSTOP) server, which is
never more than once if the call holds the GIL.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import throttlekit as tk
from conftest import RedisServer

TIMEOUT_MS = 1000


def observed_during_a_frozen_call(call) -> int:
    """How many separate times a ticker thread ran while `call` waited on the frozen server."""
    state = {"in_call": False, "seen": 0, "stop": False}

    def ticker() -> None:
        while not state["stop"]:
            if state["in_call"]:
                state["seen"] += 1
            time.sleep(0.01)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        state["in_call"] = True
        with pytest.raises(tk.StoreUnavailableError):
            call()
        state["in_call"] = False
    finally:
        state["stop"] = True
        t.join()
    return state["seen"]


@pytest.mark.parametrize("what", ["limiter", "multi", "shaper"])
def test_a_call_waiting_on_a_frozen_server_lets_other_threads_run(what: str) -> None:
    server = RedisServer()
    try:
        store = tk.RedisStore(server.url, timeout_ms=TIMEOUT_MS)
        strategy = tk.Strategy.gcra(5, 1000)
        if what == "limiter":
            limiter = tk.Limiter(strategy, store=store, fail_policy="raise")
            call = lambda: limiter.check_sync("k")  # noqa: E731
        elif what == "multi":
            dims = [tk.Dimension("a", strategy), tk.Dimension("b", strategy)]
            multi = tk.MultiLimiter("all", dims, store=store, fail_policy="raise")
            call = lambda: multi.check_sync(["x", "y"])  # noqa: E731
        else:
            shaper = tk.Shaper(10, 1000, store=store)
            call = lambda: shaper.reserve_sync("k")  # noqa: E731
        os.kill(server.proc.pid, signal.SIGSTOP)
        try:
            seen = observed_during_a_frozen_call(call)
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
        # Released: ~100 ticks in the second the call waits. Held: at most the one tick that can
        # slip in between setting the flag and entering the call.
        assert seen >= 5, f"another thread ran {seen} time(s) during a {TIMEOUT_MS} ms call"
        store.close_sync()
    finally:
        server.stop()
