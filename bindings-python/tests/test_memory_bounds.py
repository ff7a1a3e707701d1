"""A default MemoryStore is bounded: keys beyond the bound are evicted (and counted), keys
longer than max_key_length are refused, and a flood of distinct keys keeps resident memory
flat at the documented bound (measured in a child process, from /proc/self/status)."""

import os
import subprocess
import sys

import pytest
import throttlekit as tk

DEFAULT_MAX_KEYS = 917_504
# The documented resident memory of a full default store (105-125 MB: the allocator keeps some
# of the tables the shards outgrew), above the process's own.
CEILING_KIB = 130 * 1024

FLOOD = r"""
import sys, throttlekit as tk

def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

keys, settled_at = int(sys.argv[1]), int(sys.argv[2])
baseline = rss_kib()
store = tk.MemoryStore()
check = tk.Limiter(tk.Strategy.gcra(10, 60_000, burst=5), store=store, clock=tk.ManualClock(1_000_000)).check_sync
settled = 0
for i in range(keys):
    check(f"user:{i}")
    if i + 1 == settled_at:
        settled = rss_kib()
print(baseline, settled, rss_kib(), len(store), store.evictions)
"""


def test_a_flood_of_distinct_keys_keeps_a_default_store_flat_at_its_bound() -> None:
    # CI floods 3M keys (more than 3x the bound); scripts/key-flood.sh floods 10M.
    keys = int(os.environ.get("TK_FLOOD_TOTAL", 3_000_000))
    out = subprocess.run(
        [sys.executable, "-c", FLOOD, str(keys), str(2 * DEFAULT_MAX_KEYS)],
        capture_output=True, text=True, timeout=600, check=True,
    )
    baseline, settled, end, held, evictions = map(int, out.stdout.split())
    print(f"python flood of {keys} keys: baseline {baseline} settled {settled} end {end} KiB, {evictions} evictions")
    assert held <= DEFAULT_MAX_KEYS
    assert evictions >= keys - DEFAULT_MAX_KEYS
    assert end - baseline <= CEILING_KIB, f"{end - baseline} KiB resident above the baseline"
    assert end <= settled * 1.02, f"grew from {settled} to {end} KiB"


def test_the_defaults_are_core_s_and_none_lifts_the_bound() -> None:
    long_key = "k" * 256
    limiter = tk.Limiter(tk.Strategy.gcra(1, 1000))
    assert limiter.check_sync(long_key).allowed
    with pytest.raises(tk.ConfigInvalidError, match="maxKeyLength") as e:
        limiter.check_sync(long_key + "k")
    assert e.value.code == "config_invalid"
    unbounded = tk.MemoryStore(max_keys=None)
    lim = tk.Limiter(tk.Strategy.gcra(1, 1000), store=unbounded, clock=tk.ManualClock(0))
    for i in range(5_000):
        lim.check_sync(f"k{i}")
    assert len(unbounded) == 5_000 and unbounded.evictions == 0


def test_max_key_length_counts_the_prefix_and_applies_to_every_call() -> None:
    store = tk.MemoryStore(max_key_length=8)
    limiter = tk.Limiter(tk.Strategy.fixed_window(5, 1000), store=store, prefix="p")
    assert limiter.check_sync("123456").allowed  # "p:123456" is 8 bytes
    for call in (lambda: limiter.check_sync("1234567"), lambda: limiter.peek_sync("1234567"),
                 lambda: limiter.reset_sync("1234567")):
        with pytest.raises(tk.ConfigInvalidError, match="maxKeyLength"):
            call()
    with pytest.raises(tk.ConfigInvalidError, match="max_key_length"):
        tk.MemoryStore(max_key_length=-1)
    with pytest.raises(tk.ConfigInvalidError, match="maxKeyLength"):
        tk.MemoryStore(max_key_length=0)


def test_evictions_count_live_keys_the_bound_pushed_out() -> None:
    store = tk.MemoryStore(max_keys=64)
    limiter = tk.Limiter(tk.Strategy.gcra(10, 60_000), store=store, clock=tk.ManualClock(0))
    for i in range(164):
        limiter.check_sync(f"k{i}")
    assert store.evictions == 100
    assert len(store) == 64
