"""Writes http/headers.json: the HTTP edge's vectors, every expectation worked out by hand.

The working is in each case's `comment`. This script only lays the JSON out; the expected
lines and keys below are literals, never computed. `pk` values were computed with Python's own
hmac/hashlib/base64 (an implementation independent of core's). Format: conformance-vectors/FORMAT.md.
Run: python3 conformance-vectors/src/http_vectors.py
"""
import json
import pathlib

N = 1_700_000_000_000  # a round epoch ms for "now"


def D(allowed, limit, remaining, reset_at, retry, fallback=False):
    d = {"allowed": allowed, "limit": limit, "remaining": remaining, "resetAt": reset_at, "retryAfterMs": retry}
    if fallback:
        d["fallback"] = True
    return d


def gcra(limit, period_ms, burst=None):
    o = {"limit": limit, "periodMs": period_ms}
    if burst is not None:
        o["burst"] = burst
    return {"kind": "gcra", "options": o}


def lim(strategy, decision, name=None, key=None):
    l = {}
    if name is not None:
        l["name"] = name
    if key is not None:
        l["key"] = key
    l["strategy"] = strategy
    l["decision"] = decision
    return l


def hcase(id, comment, limits, expect=None, now=N, options=None, err=None):
    req = {"nowMs": now, "limits": limits}
    if options is not None:
        req["options"] = options
    c = {"id": id, "comment": comment, "request": req}
    if err:
        c["expectError"] = err
    else:
        c["expect"] = [list(x) for x in expect]
    return c


def kcase(id, comment, peer, headers=(), options=None, expect=None, err=None):
    req = {"peer": peer, "headers": [list(h) for h in headers]}
    if options is not None:
        req["options"] = options
    c = {"id": id, "comment": comment, "request": req}
    if err:
        c["expectError"] = err
    else:
        c["expect"] = expect
    return c


G5 = gcra(5, 60_000, 5)
POLICY5 = ("RateLimit-Policy", '"default";q=5;w=60')
FW = {"kind": "fixedWindow", "options": {"limit": 2, "windowMs": 60_000}}
FW_NOW = 1_700_000_030_500
FW_DENIED = D(False, 2, 0, 1_700_000_040_000, 9_500)
FW_WORK = ("Fixed window 2 per 60 s at now = 1700000030500: windows are epoch-aligned, "
           "1700000030500 / 60000 = 28333333.84, so the window ends at 28333334 * 60000 = 1700000040000, "
           "9500 ms away. ")

headers = [
    hcase("draft10/gcra-first", "GCRA 5 per 60 s, burst 5: T = 12000 ms, tau = 60000. A fresh key's first request: "
          "TAT = now + 12000, remaining floor((60000 - 12000) / 12000) = 4, resetAt now + 12000. "
          "q = burst = 5, w = 5 * 12000 ms = 60 s. t = (12000 - (5 - 4 - 1) * 12000) ms = 12 s.",
          [lim(G5, D(True, 5, 4, N + 12_000, 0))], [POLICY5, ("RateLimit", '"default";r=4;t=12')]),
    hcase("draft10/gcra-fifth", "The fifth request at the same instant: TAT = now + 60000, remaining 0, resetAt "
          "now + 60000 (full replenishment a minute away). The next unit is back after one emission interval: "
          "t = (60000 - (5 - 0 - 1) * 12000) ms = 12 s, not 60 (resetAt).",
          [lim(G5, D(True, 5, 0, N + 60_000, 0))], [POLICY5, ("RateLimit", '"default";r=0;t=12')]),
    hcase("draft10/gcra-denied", "The sixth: denied, TAT stays now + 60000; retryAfterMs = TAT + T - tau - now = "
          "12000, so Retry-After 12; t = 12 as above (and <= Retry-After).",
          [lim(G5, D(False, 5, 0, N + 60_000, 12_000))],
          [POLICY5, ("RateLimit", '"default";r=0;t=12'), ("Retry-After", "12")]),
    hcase("draft10/gcra-denied-partway", "Five at N, a sixth at N + 5000: TAT = N + 60000 is 55000 ms away, "
          "remaining floor((60000 - 55000) / 12000) = 0, retryAfterMs = 60000 + 12000 - 60000 - 5000 = 7000. "
          "t = (55000 - 4 * 12000) ms = 7000 ms = 7 s; Retry-After = ceil(7000 / 1000) = 7.",
          [lim(G5, D(False, 5, 0, N + 60_000, 7_000))],
          [POLICY5, ("RateLimit", '"default";r=0;t=7'), ("Retry-After", "7")], now=N + 5_000),
    hcase("draft10/gcra-idle-full", "A peek at an idle key: remaining == limit, nothing in use, so no quota is "
          "pending: t = 0. resetAt = now.",
          [lim(G5, D(True, 5, 5, N, 0))], [POLICY5, ("RateLimit", '"default";r=5;t=0')]),
    hcase("draft10/gcra-subsecond-window", "GCRA 3 per 1000 ms, burst 1: T = 333.33 ms. q = 1, w = ceil(0.333 s) = 1. "
          "First request: resetAt = ceil(now + 333.33) = now + 334, remaining 0. t = 334 - (1 - 0 - 1) * T = 334 ms, "
          "rounded up to 1 s.",
          [lim(gcra(3, 1_000, 1), D(True, 1, 0, N + 334, 0))],
          [("RateLimit-Policy", '"default";q=1;w=1'), ("RateLimit", '"default";r=0;t=1')]),
    hcase("draft10/token-bucket", "Token bucket capacity 10, 2 tokens/s: one token per 500 ms, q = 10, "
          "w = 10 / 2 = 5 s. After 3 tokens at once: remaining 7, resetAt = now + 3 / 0.002 = now + 1500. "
          "t = 1500 - (10 - 7 - 1) * 500 = 500 ms, rounded up to 1 s.",
          [lim({"kind": "tokenBucket", "options": {"capacity": 10, "refillPerSec": 2}}, D(True, 10, 7, N + 1_500, 0))],
          [("RateLimit-Policy", '"default";q=10;w=5'), ("RateLimit", '"default";r=7;t=1')]),
    hcase("draft10/token-bucket-slow", "Capacity 3, 0.4 tokens/s: 2500 ms per token, w = ceil(3 * 2.5) = 8 s. After "
          "2 tokens: remaining 1, resetAt now + 5000. t = 5000 - (3 - 1 - 1) * 2500 = 2500 ms -> 3 s.",
          [lim({"kind": "tokenBucket", "options": {"capacity": 3, "refillPerSec": 0.4}}, D(True, 3, 1, N + 5_000, 0))],
          [("RateLimit-Policy", '"default";q=3;w=8'), ("RateLimit", '"default";r=1;t=3')]),
    hcase("draft10/fixed-window-denied", FW_WORK + "Both t and Retry-After are ceil(9500 / 1000) = 10.",
          [lim(FW, FW_DENIED)],
          [("RateLimit-Policy", '"default";q=2;w=60'), ("RateLimit", '"default";r=0;t=10'), ("Retry-After", "10")],
          now=FW_NOW),
    hcase("draft7/fixed-window-denied", FW_WORK + "draft-7: RateLimit-Policy is the integer quota with w; the "
          "RateLimit dictionary's reset is delta seconds to resetAt: 10.",
          [lim(FW, FW_DENIED)],
          [("RateLimit-Policy", "2;w=60"), ("RateLimit", "limit=2, remaining=0, reset=10"), ("Retry-After", "10")],
          now=FW_NOW, options={"family": "draft-7"}),
    hcase("draft6/fixed-window-denied", FW_WORK + "draft-6: three integer fields plus the policy; reset 10.",
          [lim(FW, FW_DENIED)],
          [("RateLimit-Policy", "2;w=60"), ("RateLimit-Limit", "2"), ("RateLimit-Remaining", "0"),
           ("RateLimit-Reset", "10"), ("Retry-After", "10")],
          now=FW_NOW, options={"family": "draft-6"}),
    hcase("legacy/fixed-window-denied", FW_WORK + "legacy: X-RateLimit-Reset is EPOCH seconds, "
          "1700000040000 / 1000 = 1700000040.",
          [lim(FW, FW_DENIED)],
          [("X-RateLimit-Limit", "2"), ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "1700000040"),
           ("Retry-After", "10")],
          now=FW_NOW, options={"family": "legacy"}),
    hcase("legacy/gcra-fifth-reset-is-full-replenishment", "legacy and draft-6/7 'reset' is resetAt (full "
          "replenishment), unlike draft-10's t: after five GCRA requests resetAt = N + 60000, epoch seconds "
          "1700000060; no Retry-After while allowed.",
          [lim(G5, D(True, 5, 0, N + 60_000, 0))],
          [("X-RateLimit-Limit", "5"), ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "1700000060")],
          options={"family": "legacy"}),
    hcase("legacy/reset-rounds-up", "resetAt = N + 1 ms is epoch second 1700000000.001, rounded up to "
          "1700000001 (the limit is not back at 1700000000).",
          [lim(G5, D(True, 5, 4, N + 1, 0))],
          [("X-RateLimit-Limit", "5"), ("X-RateLimit-Remaining", "4"), ("X-RateLimit-Reset", "1700000001")],
          options={"family": "legacy"}),
    hcase("draft6/gcra-fifth", "draft-6 after five GCRA requests: RateLimit-Reset = (N + 60000 - N) / 1000 = 60 "
          "(full replenishment).",
          [lim(G5, D(True, 5, 0, N + 60_000, 0))],
          [("RateLimit-Policy", "5;w=60"), ("RateLimit-Limit", "5"), ("RateLimit-Remaining", "0"),
           ("RateLimit-Reset", "60")],
          options={"family": "draft-6"}),
    hcase("draft10/log", "Sliding-window log 3 per 10 s with hits at now - 8000 and now: remaining 1, resetAt = "
          "oldest + window = now + 2000, which is when the next unit comes back: t = 2. w = 10.",
          [lim({"kind": "slidingWindowLog", "options": {"limit": 3, "windowMs": 10_000}}, D(True, 3, 1, N + 2_000, 0))],
          [("RateLimit-Policy", '"default";q=3;w=10'), ("RateLimit", '"default";r=1;t=2')]),
    hcase("draft10/sliding-window-denied-t-capped", "Sliding window 10 per 10 s: a denial whose resetAt is 9600 ms "
          "away but whose retryAfterMs is 400 (the oldest bucket's weight frees quota sooner). Retry-After = "
          "max(1, ceil(0.4)) = 1, and t (10 from resetAt) is capped at Retry-After: 1.",
          [lim({"kind": "slidingWindow", "options": {"limit": 10, "windowMs": 10_000}}, D(False, 10, 0, N + 9_600, 400))],
          [("RateLimit-Policy", '"default";q=10;w=10'), ("RateLimit", '"default";r=0;t=1'), ("Retry-After", "1")]),
    hcase("draft10/quota-month-has-no-w", "Quota 1000 per calendar month at 2026-11-24T07:00Z (1795503600000): "
          "the period ends 2026-12-01T00:00Z (1796083200000), 579600 s away. Months differ in length, so "
          "RateLimit-Policy omits w.",
          [lim({"kind": "quota", "options": {"limit": 1000, "resetCadence": "calendar-month"}},
               D(True, 1000, 999, 1_796_083_200_000, 0))],
          [("RateLimit-Policy", '"default";q=1000'), ("RateLimit", '"default";r=999;t=579600')],
          now=1_795_503_600_000),
    hcase("draft10/quota-day", "Quota 50 per calendar day at 2026-11-24T07:00Z: w = 86400, the day ends at "
          "1795564800000, 61200 s away.",
          [lim({"kind": "quota", "options": {"limit": 50, "resetCadence": "calendar-day"}},
               D(True, 50, 10, 1_795_564_800_000, 0))],
          [("RateLimit-Policy", '"default";q=50;w=86400'), ("RateLimit", '"default";r=10;t=61200')],
          now=1_795_503_600_000),
    hcase("retry-after/zero-is-one", "A denial with retryAfterMs 0 still says Retry-After: 1 (never 0); t is "
          "capped at 1 as well.",
          [lim(FW, D(False, 2, 0, FW_NOW + 9_500, 0))],
          [("RateLimit-Policy", '"default";q=2;w=60'), ("RateLimit", '"default";r=0;t=1'), ("Retry-After", "1")],
          now=FW_NOW),
    hcase("retry-after/rounds-up", "retryAfterMs 1001 is 2 s (ceil), never 1 (too early) nor 1001 (ms).",
          [lim(FW, D(False, 2, 0, FW_NOW + 9_500, 1_001))],
          [("X-RateLimit-Limit", "2"), ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "1700000040"),
           ("Retry-After", "2")],
          now=FW_NOW, options={"family": "legacy"}),
    hcase("retry-after/exact-second", "retryAfterMs 3000 is exactly 3 s.",
          [lim(FW, D(False, 2, 0, FW_NOW + 3_000, 3_000))],
          [("RateLimit-Policy", "2;w=60"), ("RateLimit", "limit=2, remaining=0, reset=3"), ("Retry-After", "3")],
          now=FW_NOW, options={"family": "draft-7"}),
    hcase("clamp/fifteen-digits", "Fixed window of 2^53 per 2^53 ms: q = 9007199254740992 has 16 digits and is "
          "clamped to 999999999999999; w = 9007199254740.992 s rounds up to 9007199254741 (13 digits, kept). "
          "remaining 9007199254740991 is clamped too; t = resetAt - now = 5 s.",
          [lim({"kind": "fixedWindow", "options": {"limit": 9007199254740992, "windowMs": 9007199254740992}},
               D(True, 9007199254740992, 9007199254740991, N + 5_000, 0))],
          [("RateLimit-Policy", '"default";q=999999999999999;w=9007199254741'),
           ("RateLimit", '"default";r=999999999999999;t=5')]),
    hcase("clamp/negative-and-past", "Numbers never go negative: a resetAt in the past (clock skew) gives t = 0 "
          "and draft-6 reset 0.",
          [lim(FW, D(True, 2, 1, N - 5_000, 0))],
          [("RateLimit-Policy", "2;w=60"), ("RateLimit-Limit", "2"), ("RateLimit-Remaining", "1"),
           ("RateLimit-Reset", "0")],
          options={"family": "draft-6"}),
    hcase("escape/quotes-and-backslashes", "policyName we\"ird\\name: in an sf-string \" and \\ are escaped "
          "with a backslash.",
          [lim(G5, D(True, 5, 4, N + 12_000, 0))],
          [("RateLimit-Policy", '"we\\"ird\\\\name";q=5;w=60'), ("RateLimit", '"we\\"ird\\\\name";r=4;t=12')],
          options={"policyName": "we\"ird\\name"}),
    hcase("escape/crlf-cannot-split", "A name carrying CR LF and a forged field cannot split the header: bytes "
          "outside printable ASCII are percent-encoded (%0D%0A), and so is % itself (%25) and UTF-8 (é = %C3%A9).",
          [lim(G5, D(True, 5, 4, N + 12_000, 0), name="x\r\nSet-Cookie: a=1 %é")],
          [("RateLimit-Policy", '"x%0D%0ASet-Cookie: a=1 %25%C3%A9";q=5;w=60'),
           ("RateLimit", '"x%0D%0ASet-Cookie: a=1 %25%C3%A9";r=4;t=12')]),
    hcase("pk/hmac-of-key", "partitionKeySecret s3cret, key 192.0.2.1: pk = base64(HMAC-SHA256(\"s3cret\", "
          "\"192.0.2.1\")) as an sf byte sequence on both fields; the key itself never appears.",
          [lim(G5, D(True, 5, 4, N + 12_000, 0), key="192.0.2.1")],
          [("RateLimit-Policy", '"default";q=5;w=60;pk=:zNYji3AhxU1QbWDISnmCDh8MZd1PRvtcY3Tjbmj9jog=:'),
           ("RateLimit", '"default";r=4;t=12;pk=:zNYji3AhxU1QbWDISnmCDh8MZd1PRvtcY3Tjbmj9jog=:')],
          options={"partitionKeySecret": "s3cret"}),
    hcase("pk/no-secret-no-pk", "A key without a secret sends no pk (and never the raw key).",
          [lim(G5, D(True, 5, 4, N + 12_000, 0), key="192.0.2.1")],
          [POLICY5, ("RateLimit", '"default";r=4;t=12')]),
    hcase("pk/draft7-has-none", "pk exists only in draft-10's fields; draft-7 ignores the secret.",
          [lim(G5, D(True, 5, 4, N + 12_000, 0), key="192.0.2.1")],
          [("RateLimit-Policy", "5;w=60"), ("RateLimit", "limit=5, remaining=4, reset=12")],
          options={"family": "draft-7", "partitionKeySecret": "s3cret"}),
    hcase("multi/all-denied-binding-first", "Multi all: ip = GCRA 100 per 60 s (T = 600, w = 60), user = fixed "
          "window 1 per 10 s, at now = 50000 after one admitted request. user denies (window [50000, 60000), "
          "retry 10000, binding); ip's own decision is as if charged: TAT 51200, remaining 98, t = 1200 - (100 - 98 - 1) "
          "* 600 = 600 ms -> 1. The binding dimension comes first; Retry-After = 10.",
          [lim({"kind": "fixedWindow", "options": {"limit": 1, "windowMs": 10_000}}, D(False, 1, 0, 60_000, 10_000),
               name="user", key="alice"),
           lim(gcra(100, 60_000, 100), D(True, 100, 98, 51_200, 0), name="ip", key="192.0.2.1")],
          [("RateLimit-Policy", '"user";q=1;w=10, "ip";q=100;w=60'),
           ("RateLimit", '"user";r=0;t=10, "ip";r=98;t=1'), ("Retry-After", "10")],
          now=50_000),
    hcase("multi/legacy-binding-numbers", "The same request in legacy: one set of numbers, the binding "
          "dimension's (user): limit 1, remaining 0, reset 60000 ms = epoch second 60.",
          [lim({"kind": "fixedWindow", "options": {"limit": 1, "windowMs": 10_000}}, D(False, 1, 0, 60_000, 10_000),
               name="user", key="alice"),
           lim(gcra(100, 60_000, 100), D(True, 100, 98, 51_200, 0), name="ip", key="192.0.2.1")],
          [("X-RateLimit-Limit", "1"), ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "60"),
           ("Retry-After", "10")],
          now=50_000, options={"family": "legacy"}),
    hcase("multi/draft6-policy-lists-all", "draft-6: numbers of the binding dimension, policy lists both.",
          [lim({"kind": "fixedWindow", "options": {"limit": 1, "windowMs": 10_000}}, D(False, 1, 0, 60_000, 10_000),
               name="user"),
           lim(gcra(100, 60_000, 100), D(True, 100, 98, 51_200, 0), name="ip")],
          [("RateLimit-Policy", "1;w=10, 100;w=60"), ("RateLimit-Limit", "1"), ("RateLimit-Remaining", "0"),
           ("RateLimit-Reset", "10"), ("Retry-After", "10")],
          now=50_000, options={"family": "draft-6"}),
    hcase("multi/pk-per-dimension", "Each dimension's pk is the HMAC of its own key: HMAC-SHA256(s3cret, alice) "
          "and HMAC-SHA256(s3cret, 192.0.2.1).",
          [lim({"kind": "fixedWindow", "options": {"limit": 1, "windowMs": 10_000}}, D(True, 1, 0, 60_000, 0),
               name="user", key="alice"),
           lim(gcra(100, 60_000, 100), D(True, 100, 99, 50_600, 0), name="ip", key="192.0.2.1")],
          [("RateLimit-Policy", '"user";q=1;w=10;pk=:dlVCrx8dWHvGDCGNylMqJY9WucIaQnzIGd4qH/bT4UY=:, '
            '"ip";q=100;w=60;pk=:zNYji3AhxU1QbWDISnmCDh8MZd1PRvtcY3Tjbmj9jog=:'),
           ("RateLimit", '"user";r=0;t=10;pk=:dlVCrx8dWHvGDCGNylMqJY9WucIaQnzIGd4qH/bT4UY=:, '
            '"ip";r=99;t=1;pk=:zNYji3AhxU1QbWDISnmCDh8MZd1PRvtcY3Tjbmj9jog=:')],
          now=50_000, options={"partitionKeySecret": "s3cret"}),
    hcase("fallback/fail-open-sends-nothing", "A fail-open fallback (store down) knows nothing about the quota: "
          "no rate-limit field at all, and no Retry-After since it is admitted.",
          [lim(G5, D(True, 5, 0, N, 0, fallback=True))], []),
    hcase("fallback/fail-closed-retry-only", "A fail-closed fallback denies with retryAfterMs 1000: only "
          "Retry-After: 1.",
          [lim(G5, D(False, 5, 0, N + 1_000, 1_000, fallback=True))], [("Retry-After", "1")]),
    hcase("error/no-limits", "At least one limit is required.", [], err="config_invalid"),
    hcase("error/unknown-family", "draft-8 is not a family we send.", [lim(G5, D(True, 5, 4, N + 12_000, 0))],
          options={"family": "draft-8"}, err="config_invalid"),
    hcase("error/empty-policy-name", "An empty policy name is refused.", [lim(G5, D(True, 5, 4, N + 12_000, 0))],
          options={"policyName": ""}, err="config_invalid"),
    hcase("error/bad-strategy", "The strategy is validated like everywhere else: gcra.limit 0.",
          [lim(gcra(0, 60_000), D(True, 5, 4, N + 12_000, 0))], err="config_invalid"),
    hcase("error/fractional-decision", "Decision numbers are read as JSON numbers and must be whole: remaining 1.5 "
          "is refused.", [lim(G5, D(True, 5, 1.5, N + 12_000, 0))], err="config_invalid"),
    hcase("input/whole-float-accepted", "A whole number written as a float (4.0, as cJSON and JavaScript may print "
          "it) is the integer 4: the same lines as draft10/gcra-first.",
          [lim(G5, D(True, 5.0, 4.0, float(N + 12_000), 0.0))], [POLICY5, ("RateLimit", '"default";r=4;t=12')]),
    hcase("error/unknown-option", "Options are parsed strictly.", [lim(G5, D(True, 5, 4, N + 12_000, 0))],
          options={"family": "draft-10", "colour": "red"}, err="config_invalid"),
]

XFF = "X-Forwarded-For"
T10 = {"trustedProxies": ["10.0.0.0/8"]}
keys = [
    kcase("peer/no-trust-ignores-xff", "No trusted proxies: the peer is the client; a spoofed X-Forwarded-For "
          "changes nothing.", "198.51.100.7", [(XFF, "6.6.6.6")], expect="198.51.100.7"),
    kcase("peer/untrusted-peer-ignores-xff", "The peer is outside the trust list, so its header is not believed.",
          "198.51.100.7", [(XFF, "6.6.6.6")], T10, expect="198.51.100.7"),
    kcase("xff/rightmost-untrusted", "Peer 10.0.0.1 is trusted; walking right to left, 203.0.113.7 is the first "
          "untrusted hop. The leftmost (6.6.6.6) is whatever the client wrote.",
          "10.0.0.1", [(XFF, "6.6.6.6, 203.0.113.7")], T10, expect="203.0.113.7"),
    kcase("xff/skips-trusted-chain", "Two trusted hops: 10.0.0.1 (peer) and 10.0.0.9 vouch for 203.0.113.7.",
          "10.0.0.1", [(XFF, "6.6.6.6, 203.0.113.7, 10.0.0.9")], T10, expect="203.0.113.7"),
    kcase("xff/all-trusted-takes-leftmost", "Every hop trusted: the leftmost is the client.",
          "10.0.0.1", [(XFF, "10.0.0.5, 10.0.0.6")], T10, expect="10.0.0.5"),
    kcase("xff/malformed-stops-at-trusted", "A hop that does not parse (unknown) stops the walk at the last "
          "trusted address, the peer: no fresh bucket from junk.",
          "10.0.0.1", [(XFF, "6.6.6.6, unknown")], T10, expect="10.0.0.1"),
    kcase("xff/malformed-in-the-middle", "Walk: 10.0.0.9 trusted, then garbage: stop at 10.0.0.9.",
          "10.0.0.1", [(XFF, "203.0.113.7, garbage, 10.0.0.9")], T10, expect="10.0.0.9"),
    kcase("xff/empty-header", "An empty X-Forwarded-For is no hop: the trusted peer itself.",
          "10.0.0.1", [(XFF, "")], T10, expect="10.0.0.1"),
    kcase("xff/repeated-lines-in-order", "Two header lines are one list in order (6.6.6.6, 203.0.113.7); names "
          "are case-insensitive.",
          "10.0.0.1", [(XFF, "6.6.6.6"), ("x-forwarded-for", "203.0.113.7")], T10, expect="203.0.113.7"),
    kcase("xff/non-text-line-stops", "Two lines, the second not text (a binding passes it lossily, as U+FFFD, and "
          "never drops it): the list 1.1.1.1, \ufffd\ufffd meets garbage first, so the walk stops at the trusted peer.",
          "10.0.0.1", [(XFF, "1.1.1.1"), (XFF, "\ufffd\ufffd")], T10, expect="10.0.0.1"),
    kcase("xff/port-suffix", "203.0.113.7:5555 is the address 203.0.113.7.",
          "10.0.0.1", [(XFF, "203.0.113.7:5555")], T10, expect="203.0.113.7"),
    kcase("xff/bracketed-v6-port", "[2001:db8::1]:443 is 2001:db8::1, grouped by /64: 2001:db8::/64.",
          "10.0.0.1", [(XFF, "[2001:db8::1]:443")], T10, expect="2001:db8::/64"),
    kcase("xff/mapped-hop", "An IPv4-mapped hop is IPv4.", "10.0.0.1", [(XFF, "::ffff:203.0.113.9")], T10,
          expect="203.0.113.9"),
    kcase("xff/spoof-appended-by-proxy", "A client behind one trusted proxy sends X-Forwarded-For: 1.1.1.1; the "
          "proxy appends the real address. The key is the real one, so spoofing gives no fresh bucket.",
          "10.0.0.1", [(XFF, "1.1.1.1, 198.51.100.23")], T10, expect="198.51.100.23"),
    kcase("v6/default-64", "IPv6 peers are grouped by /64 by default: the host bits are cleared.",
          "2001:db8:aaaa:bbbb:1:2:3:4", expect="2001:db8:aaaa:bbbb::/64"),
    kcase("v6/prefix-48", "ipv6Prefix 48.", "2001:db8:aaaa:bbbb:1:2:3:4", options={"ipv6Prefix": 48},
          expect="2001:db8:aaaa::/48"),
    kcase("v6/prefix-128", "ipv6Prefix 128: the address itself.", "2001:db8:aaaa:bbbb:1:2:3:4",
          options={"ipv6Prefix": 128}, expect="2001:db8:aaaa:bbbb:1:2:3:4/128"),
    kcase("v6/mapped-peer", "A dual-stack socket reports ::ffff:192.0.2.44; the key is the IPv4 address.",
          "::ffff:192.0.2.44", expect="192.0.2.44"),
    kcase("v6/mapped-peer-trusted", "A mapped peer matches an IPv4 trust list.", "::ffff:10.0.0.1",
          [(XFF, "203.0.113.7")], T10, expect="203.0.113.7"),
    kcase("v6/trusted-loopback", "Trusting ::1 (a local proxy over IPv6).", "::1", [(XFF, "203.0.113.7")],
          {"trustedProxies": ["::1"]}, expect="203.0.113.7"),
    kcase("forwarded/rfc7239", "forwardedHeader forwarded: the for= nodes, right to left; the quoted IPv6 with a "
          "port is 2001:db8:cafe::17, grouped to 2001:db8:cafe::/64.",
          "10.0.0.1", [("Forwarded", 'for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711"')],
          {"trustedProxies": ["10.0.0.0/8"], "forwardedHeader": "forwarded"}, expect="2001:db8:cafe::/64"),
    kcase("forwarded/case-and-spaces", "Parameter names are case-insensitive: For= with spaces around the element.",
          "10.0.0.1", [("Forwarded", "for=6.6.6.6 ,  For=198.51.100.4;proto=https")],
          {"trustedProxies": ["10.0.0.0/8"], "forwardedHeader": "forwarded"}, expect="198.51.100.4"),
    kcase("forwarded/obfuscated-stops", "An obfuscated node (_hidden) is not an address: stop at the trusted peer.",
          "10.0.0.1", [("Forwarded", "for=6.6.6.6, for=_hidden")],
          {"trustedProxies": ["10.0.0.0/8"], "forwardedHeader": "forwarded"}, expect="10.0.0.1"),
    kcase("forwarded/xff-ignored", "Configured for Forwarded, a client's X-Forwarded-For is not read.",
          "10.0.0.1", [(XFF, "6.6.6.6")], {"trustedProxies": ["10.0.0.0/8"], "forwardedHeader": "forwarded"},
          expect="10.0.0.1"),
    kcase("forwarded/ignored-under-xff", "Configured for X-Forwarded-For (the default), a client's Forwarded is "
          "not read.", "10.0.0.1", [("Forwarded", "for=6.6.6.6")], T10, expect="10.0.0.1"),
    kcase("peer/with-port", "A peer given as address:port is the address.", "192.0.2.1:1234", expect="192.0.2.1"),
    kcase("error/peer-not-ip", "A peer that is not an IP address (a Unix socket) is config_invalid: give a key "
          "function.", "unix:/tmp/app.sock", err="config_invalid"),
    kcase("error/prefix-zero", "ipv6Prefix must be in 1..=128.", "192.0.2.1", options={"ipv6Prefix": 0},
          err="config_invalid"),
    kcase("error/prefix-129", "ipv6Prefix must be in 1..=128.", "192.0.2.1", options={"ipv6Prefix": 129},
          err="config_invalid"),
    kcase("error/bad-cidr", "10.0.0.0/33 is not a network.", "192.0.2.1", options={"trustedProxies": ["10.0.0.0/33"]},
          err="config_invalid"),
    kcase("error/unknown-header", "forwardedHeader is one of two names.", "192.0.2.1",
          options={"forwardedHeader": "x-real-ip"}, err="config_invalid"),
]

doc = {
    "format": "throttlekit-http/1",
    "description": "The HTTP edge: header lines for decisions (headerCases) and client keys (clientKeyCases). "
    "Every expectation was worked out by hand; see each comment and docs/http.md.",
    "headerCases": headers,
    "clientKeyCases": keys,
}
out = pathlib.Path(__file__).resolve().parent.parent / "http" / "headers.json"
out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
print(f"wrote {out}: {len(headers)} header cases, {len(keys)} client key cases")
