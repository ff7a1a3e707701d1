"""Writes hand-checked.json: suites whose every expectation was worked out by hand.

The working is in each suite's `comment` (and in op comments where a step is subtle). This
script only lays the JSON out; it computes nothing. Run: python3 conformance-vectors/src/hand_checked.py
"""
import json
import pathlib

D = lambda a, l, r, s, t: {"allowed": a, "limit": l, "remaining": r, "resetAt": s, "retryAfterMs": t}
R = lambda a, d: {"accepted": a, "delayMs": d}


def op(now, expect=None, cost=None, kind=None, err=None, comment=None, **extra):
    o = {"now": now}
    if kind:
        o["op"] = kind
    if cost is not None:
        o["cost"] = cost
    if expect is not None:
        o["expect"] = expect
    if err:
        o["expectError"] = err
    if comment:
        o["comment"] = comment
    o.update(extra)
    return o


suites = []

suites.append({
    "id": "fixedWindow/boundary-doubles",
    "comment": "Seed 000/001's documented gotcha: limit 3 per 1000 ms windows [k*1000, (k+1)*1000). "
    "Three at 998 fill window 0 (remaining 2,1,0; resetAt 1000). At 999 the fourth is denied: "
    "retryAfterMs = 1000 - 999 = 1. At 1000 window 1 opens: three more pass (resetAt 2000), so six are "
    "admitted within 3 ms (2 x limit). The fourth at 1000 waits the whole window: 2000 - 1000 = 1000.",
    "strategy": {"kind": "fixedWindow", "options": {"limit": 3, "windowMs": 1000}},
    "key": "client",
    "ops": [
        op(998, D(True, 3, 2, 1000, 0)), op(998, D(True, 3, 1, 1000, 0)), op(998, D(True, 3, 0, 1000, 0)),
        op(999, D(False, 3, 0, 1000, 1)),
        op(1000, D(True, 3, 2, 2000, 0)), op(1000, D(True, 3, 1, 2000, 0)), op(1000, D(True, 3, 0, 2000, 0)),
        op(1000, D(False, 3, 0, 2000, 1000)),
    ],
})

cf = ("Seed 000's S = 1 estimator, Cloudflare's worked example: limit 50 per minute, 42 requests in the "
      "previous minute and 18 in the current one, 15 s into it: 18 + 42 * (60 - 15) / 60 = 49.5. buckets = 1, "
      "so w = 60000 and the window is ticks c-1 (weighted) and c. Op 0: 42 at t=0 (tick 0): 42 <= 50, remaining "
      "8, resetAt (0+1)*60000 + 60000 = 120000. Op 1: 18 at 74999 (tick 1, elapsed 14999, weight "
      "45001/60000): 42*0.75001667 + 18 = 49.5007 <= 50, remaining floor(0.4993) = 0, resetAt 2*60000+60000 = "
      "180000. Op 2: 1 at 75000, weight 0.75: estimate 49.5, +1 = 50.5 > 50, denied; remaining floor(0.5) = 0; "
      "D = 0.5 <= 42*0.75, so retryAfterMs = ceil(0.5*60000/42) = ceil(714.29) = 715. Op 3: at 75714, weight "
      "44286/60000: estimate 49.0002, D = 0.0002, retry ceil(0.29) = 1. Op 4: at 75715 = 75000 + 715: weight "
      "44285/60000, estimate 48.9995 + 1 <= 50: allowed, remaining floor(0.0005) = 0.")
cf_ops = [
    op(0, D(True, 50, 8, 120000, 0), cost=42),
    op(74999, D(True, 50, 0, 180000, 0), cost=18),
    op(75000, D(False, 50, 0, 180000, 715)),
    op(75714, D(False, 50, 0, 180000, 1)),
    op(75715, D(True, 50, 0, 180000, 0)),
]


def sliding_and_rolling(sw_id, quota_id, quota_comment, comment, limit, window_ms, buckets, ops):
    """A sliding-window suite and the rolling quota's twin: the same window under periodMs, the same ops."""
    suites.append({"id": sw_id, "comment": comment,
                   "strategy": {"kind": "slidingWindow", "options": {"limit": limit, "windowMs": window_ms, "buckets": buckets}},
                   "key": "k", "ops": ops})
    suites.append({"id": quota_id, "comment": quota_comment + comment,
                   "strategy": {"kind": "quota", "options": {"limit": limit, "resetCadence": "rolling", "periodMs": window_ms,
                                                             "buckets": buckets}},
                   "key": "k", "ops": ops})


sliding_and_rolling("slidingWindow/cloudflare-s1", "quota/rolling-is-the-sliding-window",
                    "A rolling quota is the sliding window with windowMs = periodMs: the Cloudflare timeline "
                    "above gives the same decisions. ", cf, 50, 60000, 1, cf_ops)

suites.append({
    "id": "slidingWindowLog/seed-001-timeline",
    "comment": "Seed 001's log example (limit 5 per 60 s, arrivals at 10, 20, 50, 60, 70, 80, 81, 90, 111, 121 s), "
    "with our exact rule that a stamp at t stops counting at exactly t + 60000 (the seed's table forgets to "
    "drop t=20 at t=80 and t=81). 10..60: remaining 4,3,2,1, resetAt 10000+60000. 70: 10 ages out, [20,50,60,70], "
    "remaining 1, resetAt 80000. 80: 20 ages out, [50,60,70,80], remaining 1, resetAt 110000. 81: five live, "
    "remaining 0. 90: 5 live, denied; rank 5+1-5 = 1 -> oldest 50000 -> retry 50000+60000-90000 = 20000. 110: 50 "
    "ages out, allowed, resetAt 120000. 111: denied, oldest 60000 -> retry 9000. 121: 60 ages out, allowed, "
    "resetAt 130000. Then cost 6 > limit: rank clamps to count 5, the newest stamp 121000 -> retry 60000.",
    "strategy": {"kind": "slidingWindowLog", "options": {"limit": 5, "windowMs": 60000}},
    "key": "reset-password:alice",
    "ops": [
        op(10000, D(True, 5, 4, 70000, 0)), op(20000, D(True, 5, 3, 70000, 0)),
        op(50000, D(True, 5, 2, 70000, 0)), op(60000, D(True, 5, 1, 70000, 0)),
        op(70000, D(True, 5, 1, 80000, 0)), op(80000, D(True, 5, 1, 110000, 0)),
        op(81000, D(True, 5, 0, 110000, 0)), op(90000, D(False, 5, 0, 110000, 20000)),
        op(110000, D(True, 5, 0, 120000, 0)), op(111000, D(False, 5, 0, 120000, 9000)),
        op(121000, D(True, 5, 0, 130000, 0)), op(121000, D(False, 5, 0, 130000, 60000), cost=6),
    ],
})

suites.append({
    "id": "gcra/peek-forecast-reset",
    "comment": "limit 10 per 1000 ms, burst 2: T = 100, tau = 200. Peek on an idle key: remaining "
    "floor((200 - 0)/100) = 2, resetAt = now. Forecast of cost 2: newTat 200, allowAt 0 -> allowed, remaining "
    "0, resetAt 200 -- and nothing is consumed (the next peek still says 2). Check 1: newTat 100, remaining 1. "
    "Check 2: newTat 300, allowAt 100 > 0: denied, remaining floor((200-100)/100) = 1, resetAt ceil(100), "
    "retry 100. Peek: remaining 1. Reset forgets the key. Cost 3 > burst: newTat 300, allowAt 100: denied "
    "with a finite retry (100) on an idle key, at any time (cost > burst can never pass).",
    "strategy": {"kind": "gcra", "options": {"limit": 10, "periodMs": 1000, "burst": 2}},
    "key": "k",
    "ops": [
        op(0, D(True, 2, 2, 0, 0), kind="peek"),
        op(0, D(True, 2, 0, 200, 0), kind="forecast", cost=2),
        op(0, D(True, 2, 2, 0, 0), kind="peek"),
        op(0, D(True, 2, 1, 100, 0)),
        op(0, D(False, 2, 1, 100, 100), cost=2),
        op(0, D(True, 2, 1, 100, 0), kind="peek"),
        op(0, kind="reset"),
        op(0, D(True, 2, 2, 0, 0), kind="peek"),
        op(0, D(False, 2, 2, 0, 100), cost=3),
        op(5000, D(False, 2, 2, 5000, 100), cost=3),
    ],
})

suites.append({
    "id": "tokenBucket/backward-jump",
    "comment": "capacity 2, 1 token/s (refillPerMs 0.001). 10000: full bucket, 1 left, resetAt 10000 + "
    "ceil(1/0.001) = 11000; then 0 left, resetAt 12000. The clock jumps back to 9000: no refill for negative "
    "time, 0 tokens -> denied, retry ceil(1/0.001) = 1000, resetAt 9000 + 2000. 10500: 500 ms since last = "
    "10000 -> 0.5 tokens, denied, retry ceil(0.5/0.001) = 500, resetAt 10500 + ceil(1.5/0.001) = 12000. "
    "11000: 1 token -> allowed, 0 left, resetAt 13000.",
    "strategy": {"kind": "tokenBucket", "options": {"capacity": 2, "refillPerSec": 1}},
    "key": "k",
    "ops": [
        op(10000, D(True, 2, 1, 11000, 0)), op(10000, D(True, 2, 0, 12000, 0)),
        op(9000, D(False, 2, 0, 11000, 1000)), op(10500, D(False, 2, 0, 12000, 500)),
        op(11000, D(True, 2, 0, 13000, 0)),
    ],
})

suites.append({
    "id": "quota/calendar-month-offset-leap-year",
    "comment": "limit 2 per calendar month at UTC+01:00 (offsetMinutes 60). now = 2024-02-29T23:30Z = "
    "1709249400000, which is 2024-03-01T00:30 local: the March period, starting 2024-03-01T00:00 local = "
    "2024-02-29T23:00Z and resetting at 2024-04-01T00:00 local = 2024-03-31T23:00Z = 1711926000000. Cost 2 "
    "after one is denied: remaining 1, retry 1711926000000 - 1709249400000 = 2676600000. One ms before the "
    "reset: denied, retry 1. At the reset: April, resetAt 2024-05-01T00:00 local = 1714518000000.",
    "strategy": {"kind": "quota", "options": {"limit": 2, "resetCadence": "calendar-month", "offsetMinutes": 60}},
    "key": "tenant:acme",
    "ops": [
        op(1709249400000, D(True, 2, 1, 1711926000000, 0)),
        op(1709249400000, D(False, 2, 1, 1711926000000, 2676600000), cost=2),
        op(1709249400000, D(True, 2, 0, 1711926000000, 0)),
        op(1711925999999, D(False, 2, 0, 1711926000000, 1)),
        op(1711926000000, D(True, 2, 1, 1714518000000, 0)),
    ],
})

suites.append({
    "id": "quota/calendar-week-monday",
    "comment": "2026-11-22 is a Sunday (day 20779; (20779 + 4) mod 7 = 0). With weeks starting on Monday "
    "(the default) the week began on Monday 2026-11-16 (day 20773) and resets on Monday 2026-11-23 = "
    "20780 * 86400000 = 1795392000000. limit 1: allowed once, then denied with retry "
    "1795392000000 - 1795305600001 = 86399999.",
    "strategy": {"kind": "quota", "options": {"limit": 1, "resetCadence": "calendar-week"}},
    "key": "k",
    "ops": [op(1795305600001, D(True, 1, 0, 1795392000000, 0)), op(1795305600001, D(False, 1, 0, 1795392000000, 86399999))],
})

suites.append({
    "id": "quota/calendar-day-negative-offset",
    "comment": "UTC-05:00 (offsetMinutes -300). 2026-11-22T00:00:00.001Z is 2026-11-21 19:00 local, so the day "
    "runs from 2026-11-21T00:00 local = 20778*86400000 + 18000000 = 1795237200000 to 1795323600000.",
    "strategy": {"kind": "quota", "options": {"limit": 3, "resetCadence": "calendar-day", "offsetMinutes": -300}},
    "key": "k",
    "ops": [op(1795305600001, D(True, 3, 0, 1795323600000, 0), cost=3), op(1795323599999, D(False, 3, 0, 1795323600000, 1)),
            op(1795323600000, D(True, 3, 2, 1795410000000, 0))],
})

suites.append({
    "id": "quota/fixed-anchor",
    "comment": "limit 2 per 1000 ms periods aligned to anchor 250: [250, 1250), [1250, 2250).",
    "strategy": {"kind": "quota", "options": {"limit": 2, "resetCadence": "fixed", "periodMs": 1000, "anchor": 250}},
    "key": "k",
    "ops": [op(1249, D(True, 2, 1, 1250, 0)), op(1249, D(True, 2, 0, 1250, 0)), op(1249, D(False, 2, 0, 1250, 1)),
            op(1250, D(True, 2, 1, 2250, 0))],
})

suites.append({
    "primitive": "shaper",
    "id": "shaper/rate10-queue250",
    "comment": "10 per second: T = 100 ms between departures, at most 250 ms of queue. At 0: departures at "
    "0, 100, 200 (delays 0, 100, 200); the next would wait 300 > 250: rejected, delayMs = ceil(300 - 250) = "
    "50, nothing stored. At 50 the next departure (300) is 250 away: accepted exactly at the limit. Cost 2 "
    "would wait 350: rejected by 100. At 400 the queue has drained: delay 0.",
    "shaper": {"ratePerSec": 10, "maxQueueMs": 250},
    "key": "outbound",
    "ops": [op(0, R(True, 0)), op(0, R(True, 100)), op(0, R(True, 200)), op(0, R(False, 50)),
            op(50, R(True, 250)), op(50, R(False, 100), cost=2), op(400, R(True, 0))],
})

suites.append({
    "primitive": "shaper",
    "id": "shaper/fractional-rate",
    "comment": "3 per second: T = 333.33 ms. Delays 0, ceil(333.33) = 334, ceil(666.67) = 667; the fourth "
    "would wait 1000 > 900: rejected by ceil(1000 - 900) = 100.",
    "shaper": {"ratePerSec": 3, "maxQueueMs": 900},
    "key": "k",
    "ops": [op(0, R(True, 0)), op(0, R(True, 334)), op(0, R(True, 667)), op(0, R(False, 100))],
})

ab = [{"name": "a", "strategy": {"kind": "gcra", "options": {"limit": 1, "periodMs": 5000, "burst": 2}}},
      {"name": "b", "strategy": {"kind": "fixedWindow", "options": {"limit": 1, "windowMs": 10000}}}]
suites.append({
    "primitive": "multi", "rule": "all", "id": "multi/all-no-partial-consumption",
    "comment": "a: GCRA T = 5000, tau = 10000 (burst 2); b: fixed window 1 per 10000. Op 0: a allows "
    "(remaining 1, resetAt 5000), b allows (remaining 0, resetAt 10000): admitted, binding = smallest "
    "remaining = b. Ops 1-2: a would allow but b denies (retry 10000): denied, binding b, and a must not be "
    "charged. Op 3 at 10000 proves it: a's TAT is still 5000 -> max(5000, 10000) + 5000 = 15000, remaining 1; "
    "b's new window, remaining 0 -> binding b, resetAt 20000. (Had ops 1-2 charged a, its TAT would be 15000, "
    "remaining 0 and resetAt 20000 with limit 2 from a.) Op 4: a allows (TAT 20000, remaining 0), b denies.",
    "dimensions": ab, "keys": ["k", "k"],
    "ops": [
        op(0, dict(D(True, 1, 0, 10000, 0), binding="b")),
        op(0, dict(D(False, 1, 0, 10000, 10000), binding="b")),
        op(0, dict(D(False, 1, 0, 10000, 10000), binding="b")),
        op(10000, dict(D(True, 1, 0, 20000, 0), binding="b")),
        op(10000, dict(D(False, 1, 0, 20000, 10000), binding="b")),
    ],
})
suites.append({
    "primitive": "multi", "rule": "any", "id": "multi/any-commits-only-allowers",
    "comment": "Same dimensions under any. Op 0: both allow; binding = allower with the largest remaining = "
    "a (1). Op 1: a allows (TAT 10000, remaining 0), b denies: admitted, only a commits, binding a. Op 2: a "
    "denies (newTat 15000, allowAt 5000: retry 5000), b denies (retry 10000): denied, binding = smallest "
    "retry = a. Op 3 at 5000: a allows on equality (allowAt 5000), resetAt 15000.",
    "dimensions": ab, "keys": ["k", "k"],
    "ops": [
        op(0, dict(D(True, 2, 1, 5000, 0), binding="a")),
        op(0, dict(D(True, 2, 0, 10000, 0), binding="a")),
        op(0, dict(D(False, 2, 0, 10000, 5000), binding="a")),
        op(5000, dict(D(True, 2, 0, 15000, 0), binding="a")),
    ],
})
suites.append({
    "primitive": "multi", "rule": "all", "id": "multi/cost-multiplier",
    "comment": "a costs 3 per unit, b 1; both 10 per 1000 ms. Cost 2: a spends 6 (remaining 4), b 2 "
    "(remaining 8): binding a. Again: a would need 12 > 10: denied (remaining 4, retry 1000), b untouched.",
    "dimensions": [{"name": "a", "costMultiplier": 3, "strategy": {"kind": "fixedWindow", "options": {"limit": 10, "windowMs": 1000}}},
                   {"name": "b", "strategy": {"kind": "fixedWindow", "options": {"limit": 10, "windowMs": 1000}}}],
    "keys": ["x", "y"],
    "ops": [op(0, dict(D(True, 10, 4, 1000, 0), binding="a"), cost=2),
            op(0, dict(D(False, 10, 4, 1000, 1000), binding="a"), cost=2),
            op(0, dict(D(True, 10, 1, 1000, 0), binding="a"), cost=1)],
})

suites.append({
    "id": "expiry/gcra-state-expires-at-tat",
    "comment": "Expiry is part of the semantics: GCRA's TTL is ceil(newTat - now). limit 1 per 1000, burst 1: "
    "at 0, TAT 1000, TTL 1000, deadline 1000. At 1000 the key still exists (expired only when now > "
    "deadline) and allows (allowAt 1000 = now). A backward jump to 500 then finds TAT 2000: denied: "
    "allowAt = 2000 + 1000 - 1000 = 2000, retry 2000 - 500 = 1500, resetAt 2000.",
    "strategy": {"kind": "gcra", "options": {"limit": 1, "periodMs": 1000, "burst": 1}},
    "key": "k",
    "ops": [op(0, D(True, 1, 0, 1000, 0)), op(1000, D(True, 1, 0, 2000, 0)), op(500, D(False, 1, 0, 2000, 1500))],
})

narrow = ("The narrowest bucket allowed: windowMs 1 in 1000 buckets, w = 1/1000 = 0.001 ms (1 microsecond; "
          "1001 buckets is config_invalid). Limit 2, the window ticks c-1000 (weighted) ..= c. Op 0 at 0: c = 0, "
          "empty: 1 <= 2, remaining 1, resetAt ceil((0+1)*0.001 + 1) = ceil(1.001) = 2. Op 1 at 0: tick 0 holds 1, "
          "1+1 = 2 <= 2, remaining 0, resetAt 2. Op 2 at 0: 2+1 = 3 > 2, denied, remaining 0; D = 1, the oldest "
          "tick (-1000) is empty, so the wait is the next tick: ceil((0+1)*0.001 - 0) = ceil(0.001) = 1. Op 3 at 1: "
          "c = floor(1/0.001) = 1000, elapsed 1 - 1000*0.001 = 0, weight 1: tick 0 is the oldest, weighted in full: "
          "estimate 2, +1 = 3 > 2, denied, remaining 0, resetAt ceil(1001*0.001 + 1) = ceil(2.001) = 3; D = 1 <= "
          "2*1, so retryAfterMs = ceil(1*0.001/2) = ceil(0.0005) = 1. Op 4 at 2: c = 2000, tick 0 has left the "
          "window: 1 <= 2, remaining 1, resetAt ceil(2001*0.001 + 1) = ceil(3.001) = 4.")
narrow_ops = [op(0, D(True, 2, 1, 2, 0)), op(0, D(True, 2, 0, 2, 0)), op(0, D(False, 2, 0, 2, 1)),
              op(1, D(False, 2, 0, 3, 1)), op(2, D(True, 2, 1, 4, 0))]
sliding_and_rolling("slidingWindow/narrowest-bucket", "quota/rolling-narrowest-bucket",
                    "The rolling quota's narrowest bucket, periodMs 1 in 1000 buckets: the "
                    "slidingWindow/narrowest-bucket timeline, decided the same. ", narrow, 2, 1, 1000, narrow_ops)

bad = [
    ("gcra/limit-zero", {"kind": "gcra", "options": {"limit": 0, "periodMs": 1000}}),
    ("gcra/limit-negative", {"kind": "gcra", "options": {"limit": -1, "periodMs": 1000}}),
    ("gcra/limit-fractional", {"kind": "gcra", "options": {"limit": 1.5, "periodMs": 1000}}),
    ("gcra/period-zero", {"kind": "gcra", "options": {"limit": 1, "periodMs": 0}}),
    ("gcra/period-string", {"kind": "gcra", "options": {"limit": 1, "periodMs": "1s"}}),
    ("gcra/burst-zero", {"kind": "gcra", "options": {"limit": 1, "periodMs": 1000, "burst": 0}}),
    ("gcra/huge", {"kind": "gcra", "options": {"limit": 1e300, "periodMs": 1000}}),
    ("gcra/unknown-option", {"kind": "gcra", "options": {"limit": 1, "periodMs": 1000, "brust": 2}}),
    ("unknown-kind", {"kind": "leakyGcra", "options": {"limit": 1}}),
    ("tokenBucket/capacity-zero", {"kind": "tokenBucket", "options": {"capacity": 0, "refillPerSec": 1}}),
    ("tokenBucket/refill-negative", {"kind": "tokenBucket", "options": {"capacity": 1, "refillPerSec": -1}}),
    ("fixedWindow/window-zero", {"kind": "fixedWindow", "options": {"limit": 1, "windowMs": 0}}),
    ("fixedWindow/window-fractional", {"kind": "fixedWindow", "options": {"limit": 1, "windowMs": 1.5}}),
    ("slidingWindow/buckets-zero", {"kind": "slidingWindow", "options": {"limit": 1, "windowMs": 1000, "buckets": 0}}),
    ("slidingWindow/buckets-fractional", {"kind": "slidingWindow", "options": {"limit": 1, "windowMs": 1000, "buckets": 2.5}}),
    # Every bucket at least 1 microsecond wide (buckets <= 1000 * windowMs): narrower ticks pass 2^53 at
    # today's clock, where Redis's own clock would decide them inexactly.
    ("slidingWindow/buckets-narrower-than-a-microsecond", {"kind": "slidingWindow", "options": {"limit": 1, "windowMs": 1, "buckets": 1001}}),
    ("quota/rolling-buckets-narrower-than-a-microsecond", {"kind": "quota", "options": {"limit": 1, "resetCadence": "rolling", "periodMs": 1, "buckets": 1001}}),
    ("slidingWindowLog/limit-zero", {"kind": "slidingWindowLog", "options": {"limit": 0, "windowMs": 1000}}),
    ("quota/offset-above-840", {"kind": "quota", "options": {"limit": 1, "resetCadence": "calendar-day", "offsetMinutes": 841}}),
    ("quota/offset-below-minus-840", {"kind": "quota", "options": {"limit": 1, "resetCadence": "calendar-day", "offsetMinutes": -841}}),
    ("quota/offset-fractional", {"kind": "quota", "options": {"limit": 1, "resetCadence": "calendar-day", "offsetMinutes": 1.5}}),
    ("quota/week-starts-on-7", {"kind": "quota", "options": {"limit": 1, "resetCadence": "calendar-week", "weekStartsOn": 7}}),
    ("quota/fixed-without-period", {"kind": "quota", "options": {"limit": 1, "resetCadence": "fixed"}}),
    ("quota/unknown-cadence", {"kind": "quota", "options": {"limit": 1, "resetCadence": "hourly"}}),
]
for name, spec in bad:
    suites.append({"id": "invalid/" + name, "comment": "config_invalid, naming the field; no limiter is built.",
                   "strategy": spec, "key": "k", "expectError": "config_invalid", "ops": []})
for name, shaper in [("rate-zero", {"ratePerSec": 0, "maxQueueMs": 0}), ("queue-negative", {"ratePerSec": 1, "maxQueueMs": -1})]:
    suites.append({"primitive": "shaper", "id": "invalid/shaper-" + name, "comment": "config_invalid.",
                   "shaper": shaper, "key": "k", "expectError": "config_invalid", "ops": []})
suites.append({"primitive": "multi", "rule": "all", "id": "invalid/multi-duplicate-names",
               "comment": "Dimension names must be unique: config_invalid.",
               "dimensions": [ab[0], dict(ab[1], name="a")], "keys": ["k", "k"], "expectError": "config_invalid", "ops": []})
suites.append({"primitive": "multi", "rule": "any", "id": "invalid/multi-no-dimensions",
               "comment": "At least one dimension: config_invalid.", "dimensions": [], "keys": [],
               "expectError": "config_invalid", "ops": []})
suites.append({
    "id": "invalid/costs",
    "comment": "Cost must be a positive integer: 0, -1 and 1.5 are config_invalid and change nothing (the "
    "check after them still sees a full burst of 2).",
    "strategy": {"kind": "gcra", "options": {"limit": 2, "periodMs": 1000}},
    "key": "k",
    "ops": [op(0, err="config_invalid", cost=0), op(0, err="config_invalid", cost=-1),
            op(0, err="config_invalid", cost=1.5), op(0, D(True, 2, 1, 500, 0))],
})

doc = {"description": "Hand-checked suites: every expectation was worked out by hand; the working is in each comment.",
       "suites": suites}
out = pathlib.Path(__file__).resolve().parent.parent / "hand-checked.json"
out.write_text(json.dumps(doc, indent=1) + "\n")
print(f"wrote {out} ({len(suites)} suites)")
