"""Decision and Reservation: hand-built non-GC types that must behave exactly as the pyclasses did."""

from __future__ import annotations

import copy
import gc
import pickle
import subprocess
import sys
import tracemalloc

import pytest

import throttlekit as tk

FIELDS = dict(allowed=True, limit=5, remaining=4, reset_at=1_000, retry_after_ms=0)


def test_values_are_not_tracked_by_the_garbage_collector() -> None:
    # The point of the hand-built types: no GC header, no tracking, no gen-0 collections.
    assert not gc.is_tracked(tk.Decision(**FIELDS))
    assert not gc.is_tracked(tk.Reservation(accepted=True, delay_ms=0))
    assert not tk.Decision.__flags__ & (1 << 14)  # Py_TPFLAGS_HAVE_GC


def test_equal_fields_are_equal_with_equal_hashes_and_other_types_are_not_implemented() -> None:
    a, b = tk.Decision(**FIELDS), tk.Decision(**FIELDS)
    assert a is not b and a == b and not a != b and hash(a) == hash(b)
    c = tk.Decision(**{**FIELDS, "fallback": True})
    assert a != c and not a == c
    assert a.__eq__(1) is NotImplemented and a.__ne__("x") is NotImplemented
    assert a.__eq__(tk.Reservation(accepted=True, delay_ms=0)) is NotImplemented
    assert (a == 1, a != 1) == (False, True)
    with pytest.raises(TypeError, match="'<' not supported"):
        a < b  # noqa: B015
    assert len({a, b, c}) == 2
    # PyO3's hash (SipHash of the Rust struct), so hashes did not change with the type.
    assert hash(tk.Decision(allowed=True, limit=2, remaining=1, reset_at=100, retry_after_ms=0)) == -6976367422427450766
    assert hash(tk.Reservation(accepted=True, delay_ms=5)) == -7791454292387763521


def test_repr_attributes_and_to_dict() -> None:
    d = tk.Decision(allowed=False, limit=-1, remaining=2**63 - 1, reset_at=-(2**63), retry_after_ms=7, fallback=True)
    assert repr(d) == (
        "Decision(allowed=False, limit=-1, remaining=9223372036854775807, reset_at=-9223372036854775808, "
        "retry_after_ms=7, fallback=True)"
    )
    assert (d.allowed, d.fallback) == (False, True) and d.fallback is True
    assert [type(getattr(d, f)) for f in ("limit", "remaining", "reset_at", "retry_after_ms")] == [int] * 4
    assert d.to_dict() == {
        "allowed": False, "limit": -1, "remaining": 2**63 - 1, "resetAt": -(2**63), "retryAfterMs": 7, "fallback": True,
    }
    assert "fallback" not in tk.Decision(**FIELDS).to_dict()
    with pytest.raises(TypeError, match=r"to_dict\(\) takes no arguments"):
        d.to_dict(1)  # type: ignore[call-arg]
    assert repr(tk.Reservation(accepted=False, delay_ms=12)) == "Reservation(accepted=False, delay_ms=12)"
    assert tk.Decision.__module__ == "throttlekit" and tk.Decision.__qualname__ == "Decision"
    assert tk.Decision.__text_signature__ == "(*, allowed, limit, remaining, reset_at, retry_after_ms, fallback=False)"
    assert tk.Decision.__doc__ and tk.Decision.__doc__.startswith("The result of one check.")
    assert tk.Decision.allowed.__doc__ == "Whether the request was admitted (and, for a check, consumed)."


def test_values_are_immutable_final_and_not_picklable() -> None:
    d, r = tk.Decision(**FIELDS), tk.Reservation(accepted=True, delay_ms=1)
    with pytest.raises(AttributeError, match="attribute 'allowed' of 'throttlekit.Decision' objects is not writable"):
        d.allowed = False  # type: ignore[misc]
    with pytest.raises(AttributeError, match="not writable"):
        del d.limit  # type: ignore[misc]
    with pytest.raises(AttributeError):
        d.extra = 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="not writable"):
        r.delay_ms = 2  # type: ignore[misc]
    with pytest.raises(TypeError, match="not an acceptable base type"):
        type("Sub", (tk.Decision,), {})
    with pytest.raises(TypeError, match="cannot pickle"):
        pickle.dumps(d)
    with pytest.raises(TypeError, match="cannot pickle"):
        copy.copy(r)


@pytest.mark.parametrize(
    ("kwargs", "error", "message", "note"),
    [
        ({}, TypeError, "Decision.__new__() missing 5 required keyword arguments: "
                        "'allowed', 'limit', 'remaining', 'reset_at', and 'retry_after_ms'", None),
        ({"allowed": True, "limit": 1, "remaining": 1}, TypeError,
         "Decision.__new__() missing 2 required keyword arguments: 'reset_at' and 'retry_after_ms'", None),
        ({**FIELDS, "nope": 1}, TypeError, "Decision.__new__() got an unexpected keyword argument 'nope'", None),
        ({**FIELDS, "allowed": 1}, TypeError, "'int' object is not an instance of 'bool'", "allowed"),
        ({**FIELDS, "limit": "1"}, TypeError, "'str' object cannot be interpreted as an integer", "limit"),
        ({**FIELDS, "fallback": None}, TypeError, "'None' is not an instance of 'bool'", "fallback"),
        ({**FIELDS, "reset_at": 2**63}, OverflowError, "Python int too large to convert to C long", "reset_at"),
    ],
)
def test_the_constructor_is_keyword_only_with_pyo3s_errors(
    kwargs: dict[str, object], error: type[Exception], message: str, note: str | None
) -> None:
    with pytest.raises(error) as info:
        tk.Decision(**kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message
    if sys.version_info >= (3, 11):  # PyO3 names the argument in a note
        assert getattr(info.value, "__notes__", None) == (None if note is None else [f"while processing '{note}'"])


def test_the_constructor_refuses_positional_arguments() -> None:
    with pytest.raises(TypeError, match=r"^Decision.__new__\(\) takes 0 positional arguments but 1 was given$"):
        tk.Decision(True)  # type: ignore[misc]
    with pytest.raises(TypeError, match=r"^Reservation.__new__\(\) missing 1 required keyword argument: 'delay_ms'$"):
        tk.Reservation(accepted=True)  # type: ignore[call-arg]


def test_every_api_returns_the_same_type() -> None:
    limiter = tk.Limiter(tk.Strategy.gcra(10, 1000), clock=tk.ManualClock(0))
    results = [limiter.check_sync("k"), limiter.peek_sync("k"), limiter.forecast_sync("k"), *limiter.check_many_sync(["a"])]
    multi = tk.MultiLimiter("all", [tk.Dimension("a", tk.Strategy.gcra(1, 1000))], clock=tk.ManualClock(0)).check_sync(["x"])
    results += [multi.decision, *multi.dimensions]
    assert all(type(d) is tk.Decision for d in results)
    assert type(tk.Shaper(10, 1000, clock=tk.ManualClock(0)).reserve_sync("k")) is tk.Reservation
    assert multi.decision == multi.dimensions[0] and multi.decision is not multi.decision


def test_millions_of_values_leave_memory_flat() -> None:
    limiter = tk.Limiter(tk.Strategy.gcra(10, 1000), clock=tk.ManualClock(0))
    shaper = tk.Shaper(1_000_000, 1000, clock=tk.ManualClock(0))
    keep: list[object] = []

    def churn(n: int) -> None:
        for i in range(n):
            d = limiter.check_sync("k")
            r = shaper.reserve_sync("k")
            if i % 1000 == 0:  # some held while others are made: the freelist fills and overflows
                keep.extend((d, r, tk.Decision(**FIELDS)))
                if len(keep) > 300:
                    keep.clear()
        keep.clear()

    churn(50_000)  # warm up: freelist, caches, the store's one key
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        churn(1_000_000)
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert after - before < 64 * 1024, (before, after)


def test_values_outlive_the_module_at_interpreter_shutdown() -> None:
    # Decisions alive in globals, in a cycle with a GC-tracked container, and created from an
    # atexit hook are freed during finalization, after the module's namespace is torn down.
    code = """
import atexit, throttlekit as tk
limiter = tk.Limiter(tk.Strategy.gcra(10, 1000))
held = [limiter.check_sync(str(i)) for i in range(100)]
cycle = [tk.Decision(allowed=True, limit=1, remaining=1, reset_at=1, retry_after_ms=0)]
cycle.append(cycle)
atexit.register(lambda: held.extend(limiter.check_sync("late") for _ in range(100)))
print("ok")
"""
    for extra in ([], ["-X", "dev"]):
        out = subprocess.run(
            [sys.executable, *extra, "-c", code], capture_output=True, text=True, timeout=60,
            env={"PYTHONMALLOC": "debug", "PATH": ""},
        )
        assert (out.returncode, out.stdout.strip()) == (0, "ok"), out.stderr
