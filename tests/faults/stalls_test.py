"""Checks of stalls.stall_sum, the stall a call's time bound adds in the fault suites (no clock,
no process: hand-worked events). tests/faults/prove.sh and chaos.sh run it before the suites
trust it:

    python3 tests/faults/stalls_test.py
"""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stalls import driver_stall, stall_sum, stall_within  # noqa: E402

TIMEOUT_MS = 250
BASE_MS = TIMEOUT_MS + 100  # prove.py's bound before stalls


def sleeper(woke_ms: float, late_ms: float) -> list:
    """A meter thread's event: it woke at `woke_ms`, `late_ms` late."""
    return [woke_ms - late_ms, woke_ms, late_ms]


def within(took_ms: float, machine: list, runs: tuple = ()) -> bool:
    """The suites' check of the slowest call (prove.py, chaos.py): the orchestrator's events,
    and the driver's runs."""
    return took_ms <= BASE_MS + stall_within(machine, runs, took_ms).ms


class StallSum(unittest.TestCase):
    def test_no_events(self):
        self.assertEqual(stall_sum([], 500), 0)
        self.assertFalse(within(351, []))

    def test_two_stalls_in_one_call_both_count(self):
        # A call of 800 ms held by two 300 ms stalls 700 ms apart: 200 ms of its own work, so
        # it is fine. The worst single stall (300) gave a bound of 650 and failed it.
        events = [sleeper(300, 300), sleeper(1000, 300)]
        self.assertEqual(stall_sum(events, 800), 600)
        self.assertTrue(within(800, events))
        self.assertFalse(800 <= BASE_MS + max(e[2] for e in events))

    def test_stalls_too_far_apart_for_one_call_count_once(self):
        events = [sleeper(300, 300), sleeper(2300, 300)]
        self.assertEqual(stall_sum(events, 800), 300)
        # A call of 800 ms met one of them: 500 ms of its own, past 350.
        self.assertFalse(within(800, events))

    def test_window_edges(self):
        # [0, 10] and [110, 120]: a 100 ms window reaches both from 10 to 110, not one less.
        events = [[0, 10, 10], [110, 120, 10]]
        self.assertEqual(stall_sum(events, 100), 20)
        self.assertEqual(stall_sum(events, 99.9), 10)
        self.assertEqual(stall_sum(list(reversed(events)), 100), 20)

    def test_overlapping_events_of_concurrent_calls(self):
        # Two callers' run-queue waits, each somewhere within its own call.
        events = [[0, 300, 50], [100, 400, 60], [500, 600, 7]]
        self.assertEqual(stall_sum(events, 0), 110)
        self.assertEqual(stall_sum(events, 199.9), 110)
        self.assertEqual(stall_sum(events, 200), 117)

    def test_a_slow_client_on_a_quiet_machine_still_fails(self):
        # Five seconds of a quiet meter: every 10 ms wake-up 0.1 ms late, one 40 ms hiccup.
        events = [sleeper(10.1 * i, 0.1) for i in range(1, 500)] + [sleeper(2000, 40)]
        self.assertLess(stall_sum(events, 500), 50)
        # A call that waited twice its timeout (plus its few ms of work) is past its bound.
        self.assertFalse(within(2 * TIMEOUT_MS + 5, events))
        self.assertTrue(within(BASE_MS, events))

    def test_the_driver_and_the_machine_take_the_worst_not_the_total(self):
        # The orchestrator's and the driver's meter often see the same stall.
        machine, run = [sleeper(300, 200)], {"stalls": [sleeper(305, 210)]}
        self.assertEqual(driver_stall([run], 400), 210)
        self.assertTrue(within(BASE_MS + 210, machine, (run,)))
        self.assertFalse(within(BASE_MS + 211, machine, (run,)))

    def test_a_driver_joins_its_runs_and_takes_a_calls_own_wait_whole(self):
        # prove.py's two runs per row; each call's wait is already its own stalls' sum, so
        # many short calls' waits near the slow one are not added up.
        runs = ({"stalls": [sleeper(300, 100)], "call_stall_ms": 30}, {"stalls": [sleeper(600, 100)], "call_stall_ms": 150})
        self.assertEqual(driver_stall(runs, 199), 150)
        self.assertEqual(driver_stall(runs, 200), 200)
        self.assertEqual(driver_stall([{"stalls": []}], 300), 0)


def run() -> bool:
    result = unittest.TextTestRunner(verbosity=0).run(unittest.defaultTestLoader.loadTestsFromTestCase(StallSum))
    return result.wasSuccessful()


if __name__ == "__main__":
    sys.exit(0 if run() else 1)
