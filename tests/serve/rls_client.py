"""Drives `throttlekit serve` over gRPC with an independent client: grpcio and the xds-protos
package's generated `rls_pb2` (Envoy's own proto definitions, not our Rust types).

    rls_client.py GRPC_ADDR CASES.json [CASES.json ...]

Every case's config is loaded by the server beforehand (one file per case, its domain the case
id). Each step sends one ShouldRateLimit and compares the response with `expect`. Prints one
canonical line per step (what the server answered), so runs on different stores can be diffed,
and ends with `N passed, M failed`.
"""

import json
import sys
import time

import grpc
from envoy.extensions.common.ratelimit.v3 import ratelimit_pb2
from envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc
from google.protobuf import wrappers_pb2

CODES = {0: "UNKNOWN", 1: "OK", 2: "OVER_LIMIT"}
UNITS = {0: "UNKNOWN", 1: "SECOND", 2: "MINUTE", 3: "HOUR", 4: "DAY", 5: "MONTH", 6: "YEAR", 7: "WEEK"}
UNIT_NUMBERS = {v: k for k, v in UNITS.items()}
UNIT_SECONDS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400, "WEEK": 604800, "MONTH": 2592000, "YEAR": 31536000}


def build_request(case_id, step):
    req = rls_pb2.RateLimitRequest(domain=step.get("domain", case_id), hits_addend=step.get("hits", 0))
    descriptors = step["descriptors"] * step.get("many", 1)
    for d in descriptors:
        desc = req.descriptors.add()
        for k, v in d["entries"]:
            desc.entries.add(key=k, value="x" * step["big"] if v == "BIG" else v)
        if "hits" in d:
            desc.hits_addend.CopyFrom(wrappers_pb2.UInt64Value(value=d["hits"]))
        if "limit" in d:
            desc.limit.CopyFrom(
                ratelimit_pb2.RateLimitDescriptor.RateLimitOverride(
                    requests_per_unit=d["limit"][0], unit=UNIT_NUMBERS[d["limit"][1]]
                )
            )
    return req


def summarize(resp):
    """The response in a canonical form (durations left out: they depend on the wall clock)."""
    out = {"overall": CODES[resp.overall_code], "statuses": []}
    for s in resp.statuses:
        st = {"code": CODES[s.code], "remaining": s.limit_remaining}
        if s.HasField("current_limit"):
            st["limit"] = [s.current_limit.requests_per_unit, UNITS[s.current_limit.unit]]
            if s.current_limit.name:
                st["name"] = s.current_limit.name
        out["statuses"].append(st)
    if resp.response_headers_to_add:
        out["headers"] = sorted(h.key.lower() for h in resp.response_headers_to_add)
    return out


def their_resets(unit, before, after):
    """envoyproxy/ratelimit's duration_until_reset (utils.CalculateReset: `unit - now % unit` on
    the whole epoch second) for every second the call may have been decided in."""
    u = UNIT_SECONDS[unit]
    return {u - s % u for s in range(int(before), int(after) + 1)}


def resets(resp):
    """Each status's duration_until_reset as (seconds, nanos), None when absent."""
    return [
        (s.duration_until_reset.seconds, s.duration_until_reset.nanos) if s.HasField("duration_until_reset") else None
        for s in resp.statuses
    ]


def reset_matches(want, got, before, after):
    """`want`: a unit name (whole seconds, as theirs computes it between `before` and `after`) or
    None (no duration at all)."""
    if want is None:
        return got is None
    return got is not None and got[1] == 0 and got[0] in their_resets(want, before, after)


def matches(expect, got, durations=(), before=0.0, after=0.0):
    """`expect` lists only what the case pins; every pinned field must equal. A status's
    `reset` is checked against `durations` (left out of `got`: it depends on the wall clock)."""
    if "error" in expect:
        return got.get("error") == expect["error"]
    if "error" in got:
        return False
    if "overall" in expect and expect["overall"] != got["overall"]:
        return False
    if "statuses" in expect:
        if len(expect["statuses"]) != len(got["statuses"]):
            return False
        for i, (e, g) in enumerate(zip(expect["statuses"], got["statuses"])):
            for k, v in e.items():
                if k == "reset":
                    if not reset_matches(v, durations[i], before, after):
                        return False
                elif k == "limit" and v is None:
                    if "limit" in g:
                        return False
                elif g.get(k) != v:
                    return False
    if "headers" in expect and not set(expect["headers"]) <= set(got.get("headers", [])):
        return False
    return True


def wait_clear_of_hour_boundary():
    """Cases count in hour and day windows; a run that would straddle an hour boundary waits
    for it to pass first (at most 20 s), so no window resets mid-case."""
    left = 3600 - time.time() % 3600
    if left < 20:
        time.sleep(left + 0.2)


def write_configs(directory, files):
    """Writes each case's config as DIRECTORY/<id>.yaml, its domain the case id."""
    for f in files:
        for case in json.load(open(f))["cases"]:
            with open(f"{directory}/{case['id']}.yaml", "w") as out:
                out.write(f"domain: {case['id']}\n" + case["config"])


def main():
    if sys.argv[1] == "--write-configs":
        write_configs(sys.argv[2], sys.argv[3:])
        return
    addr, files = sys.argv[1], sys.argv[2:]
    channel = grpc.insecure_channel(addr)
    stub = rls_pb2_grpc.RateLimitServiceStub(channel)
    wait_clear_of_hour_boundary()
    passed = failed = 0
    for f in files:
        for case in json.load(open(f))["cases"]:
            for i, step in enumerate(case["steps"]):
                repeat = step.get("repeat", 1)
                for r in range(repeat):
                    req = build_request(case["id"], step)
                    durations = []
                    before = time.time()
                    try:
                        resp = stub.ShouldRateLimit(req, timeout=5)
                        got, durations = summarize(resp), resets(resp)
                    except grpc.RpcError as e:
                        got = {"error": e.code().name}
                    after = time.time()
                    print(json.dumps({"case": case["id"], "step": i, "rep": r, "got": got}, sort_keys=True))
                    expect = step.get("expect_each") if r < repeat - 1 else step.get("expect")
                    if expect is None:
                        expect = step.get("expect_each", {})
                    if matches(expect, got, durations, before, after):
                        passed += 1
                    else:
                        failed += 1
                        print(
                            f"FAIL {case['id']} step {i} rep {r}: expected {expect}, got {got}, "
                            f"durations {durations} between {before:.3f} and {after:.3f}",
                            file=sys.stderr,
                        )
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
