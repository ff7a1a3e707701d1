"""Replays adaptive concurrency vectors (``conformance-vectors/adaptive/*.json``) through the
public Python API: ``AdaptiveLimiter.from_json`` on a ``VirtualClock``, ``try_acquire``,
``Permit.release`` and a permit dropped unreleased (a leak). ``throttlekit.conformance``
dispatches a file here when its top-level ``"format"`` is ``"throttlekit-adaptive/1"``.

Each event's result is compared with its ``expect`` (granted or released, then ``limit()`` and
``inflight()``) or its ``expectError`` code; a mismatch names the case, the event index, and
expected vs got, as the Rust runner (``core/src/concurrency/vectors.rs``) does.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from throttlekit import AdaptiveLimiter, Permit, ThrottleKitError, VirtualClock

FORMAT = "throttlekit-adaptive/1"
_FILE_FIELDS = {"format", "comment", "cases"}
_CASE_FIELDS = {"id", "comment", "config", "expectError", "events"}
_EVENT_FIELDS = {"op", "permit", "partition", "outcome", "rttUs", "us", "expect", "expectError"}
_EXPECT_FIELDS = {"granted", "released", "limit", "inflight"}


def _fields(obj: Any, allowed: set[str], where: str) -> dict[str, Any]:
    from throttlekit.conformance import _check_fields  # imported late: that module imports this one

    return _check_fields(obj, allowed, where)


def _event(limiter: AdaptiveLimiter, clock: VirtualClock, permits: dict[str, Permit], e: dict[str, Any]) -> Any:
    """What one event produced: the state dict (as ``expect`` spells it), or an error code."""
    name = e.get("permit", "")
    state: dict[str, Any] = {}
    try:
        if e["op"] == "advance":
            clock.advance(e.get("us", 0) * 1000)
        elif e["op"] == "acquire":
            answer = limiter.try_acquire(e.get("partition"))
            state["granted"] = answer.granted
            if isinstance(answer, Permit):
                permits[name] = answer
            del answer
        elif e["op"] == "release":
            if name not in permits:
                return ("error", "config_invalid")
            rtt = e.get("rttUs")
            state["released"] = permits[name].release(e.get("outcome", ""), rtt_ns=None if rtt is None else rtt * 1000)
        elif e["op"] == "drop":
            permits.pop(name, None)  # the last reference: the permit is released as a leak
        else:
            return ("error", f"unknown op {e['op']!r}")
    except ThrottleKitError as err:
        return ("error", err.code)
    return ("ok", {**state, "limit": limiter.limit(), "inflight": limiter.inflight()})


def replay_adaptive(data: Any) -> Any:
    """Replays one adaptive vectors file; returns a ``throttlekit.conformance.Report``."""
    from throttlekit.conformance import Report, VectorFormatError

    data = _fields(data, _FILE_FIELDS, "file")
    if data.get("format") != FORMAT:
        raise VectorFormatError(f"file: format must be {FORMAT}")
    report = Report()
    for i, case in enumerate(data.get("cases", [])):
        case = _fields(case, _CASE_FIELDS, f"cases[{i}]")
        clock = VirtualClock()
        try:
            limiter: Optional[AdaptiveLimiter] = AdaptiveLimiter.from_json(json.dumps(case["config"]), clock=clock)
            built = ("ok", None)
        except ThrottleKitError as err:
            limiter, built = None, ("error", err.code)
        want_error = case.get("expectError")
        if want_error is not None or limiter is None:
            if built == ("error", want_error):
                report.ok()
            else:
                report.fail(f"{case['id']}: expected error {want_error!r}, got {built}")
            continue
        permits: dict[str, Permit] = {}
        for j, event in enumerate(case.get("events", [])):
            event = _fields(event, _EVENT_FIELDS, f"{case['id']} event {j}")
            if "expectError" in event:
                want = ("error", event["expectError"])
            else:
                want = ("ok", _fields(event.get("expect", {}), _EXPECT_FIELDS, f"{case['id']} event {j} expect"))
            got = _event(limiter, clock, permits, event)
            if got == want:
                report.ok()
            else:
                report.fail(f"{case['id']} event {j} ({event['op']}): expected {want[1]!r}, got {got[1]!r}")
        permits.clear()
    return report
