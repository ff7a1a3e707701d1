"""Scheduling stalls, and how much of them one call may have suffered.

A call's time bound in the fault suites is its timeout + a slack + the scheduling stall it may
have suffered on a loaded machine (2 shared cores): the machine, not the client. Each meter (this
orchestrator's StallMeter, and each driver's own sleeper, reported as `stalls` with each run)
keeps its stall events, and the bound adds the largest total of them that can overlap one call
(`stall_sum`), not only the worst single one: a call hit by two stalls took both (seen once:
`go/sentinel: a call took 1284.8 ms (bound 1249.1)` at a load average of 11). The orchestrator's
and the driver's measures are not added (they often see the same stall): the larger counts.

A stall event is `[from_ms, to_ms, ms]`: `ms` of stall somewhere within [from, to] on that meter's
own clock (one meter's events are only compared with each other). A thread that sleeps 10 ms and
wakes `late` ms late reports `[woke - late, woke, late]`. Drivers that read, around each call,
how long the calling thread waited for a CPU (Linux schedstat: Rust, Python) report the longest
such wait as `call_stall_ms` (driver_stall).
"""

import threading
import time
from typing import NamedTuple


def stall_sum(stalls, window_ms: float) -> float:
    """The largest total of stalls (`[from_ms, to_ms, ms]` events) that overlap one window of
    `window_ms`; an event that overlaps it at all counts whole.

    The window is the worst call itself (`window_ms` = its duration). A call that took `took` ms
    because of stalls within it is then within `base + stall_sum(stalls, took)`: whatever the
    stalls it met, they overlap a window as long as the call. (A window as long as the bound,
    widened until the sum stops growing, can stop short: with two 300 ms stalls 700 ms apart it
    settles at 350 + 300 ms, while a call of 800 ms across both was held 600 ms of them.) On a
    quiet machine the events are tenths of a ms, so a client that waits too long still fails.

    A window [a, a + W] overlaps [from, to] for a in [from - W, to]: the largest total is the
    deepest point of those intervals, found by one sweep over their ends (entries first, so
    windows that touch an event count it)."""
    edges = []
    for start, end, ms in stalls:
        edges.append((start - window_ms, 0, ms))
        edges.append((end, 1, ms))
    edges.sort()
    total = worst = 0.0
    for _, leaving, ms in edges:
        total += -ms if leaving else ms
        worst = max(worst, total)
    return round(worst, 1)


def driver_stall(runs, window_ms: float) -> float:
    """The stall a call of `window_ms` may have suffered by a driver's own measures, over its
    runs (their replies): its sleeper's events (`stalls`) summed over one window, or the
    longest any one call waited for a CPU (`call_stall_ms`; already the sum of that call's own
    stalls, so not added across calls: summed over a window it would count every short call
    near the slow one), the larger. They watch the same process, often the same stall."""
    events = [e for run in runs for e in run["stalls"]]
    return max([stall_sum(events, window_ms)] + [run.get("call_stall_ms", 0) for run in runs])


class Stall(NamedTuple):
    """The stall one call's bound adds, by each measure: the driver's own (`driver_stall`) and
    the orchestrator's meter (`stall_sum` of its events). They often see the same stall, so they
    are not added: `ms`, the larger, is what the bound adds."""

    driver: float
    machine: float

    @property
    def ms(self) -> float:
        return max(self.driver, self.machine)


def stall_within(machine_events, runs, window_ms: float) -> Stall:
    """The stall a call of `window_ms` may have suffered: by the orchestrator's `machine_events`
    and by the driver's `runs` (their replies)."""
    return Stall(driver=driver_stall(runs, window_ms), machine=stall_sum(machine_events, window_ms))


class StallMeter:
    """The machine's own scheduling stalls, measured beside the calls: a thread that sleeps
    10 ms at a time and records each wake-up that came late (the orchestrator's meter; each
    driver has its own). `take()` hands over the events since the last take."""

    def __init__(self):
        self._events: list = []
        self._wakes = 0
        self._lock = threading.Lock()
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop:
            t = time.monotonic()
            time.sleep(0.01)
            woke = time.monotonic()
            late = round((woke - t) * 1000 - 10, 2)
            with self._lock:
                self._wakes += 1
                if late > 0:
                    self._events.append([woke * 1000 - late, woke * 1000, late])

    def take(self) -> list:
        """The stall events since the last take. It first waits (at most 2 s) for two more
        wake-ups, so a stall still going on now (the meter not yet awake to record it) is in."""
        with self._lock:
            wakes = self._wakes
        deadline = time.monotonic() + 2
        while self._wakes < wakes + 2 and time.monotonic() < deadline and not self._stop:
            time.sleep(0.005)
        with self._lock:
            events, self._events = self._events, []
        return events

    def stop(self) -> None:
        self._stop = True
