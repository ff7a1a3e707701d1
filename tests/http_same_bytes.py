"""Cross-language check: every named example server answers the same request sequence with
byte-identical RateLimit, RateLimit-Policy and Retry-After fields (and the same statuses) as
the first one named (the reference, rust-axum in `make test`).

    python tests/http_same_bytes.py rust-axum node-express node-fastify node-fetch

All servers run at once (started and stopped by PID with tests/http_blackbox.py's helpers) and
get each request of the sequence in turn, so they see the same instants to within a few
milliseconds. The fields' numbers are whole seconds rounded up from exact multiples of GCRA's
12 s emission interval, so they agree as long as each server's sequence takes under a second;
an attempt where one took longer proves nothing either way and is run again on fresh servers
(it is reported, never counted as a pass).
"""
import sys
import time

from http_blackbox import request, start, stop

FIELDS = ("ratelimit", "ratelimit-policy", "retry-after")
SEQUENCE = [("/healthz", {})] + [("/limited", {})] * 6 + [("/limited", {"X-Forwarded-For": "203.0.113.99"})]
MAX_SEQUENCE_S = 0.9
ATTEMPTS = 3


def run_once(names):
    procs = {}
    try:
        for name in names:
            procs[name] = start(name)
        answers = {name: [] for name in names}
        began = {}
        for path, headers in SEQUENCE:
            for name in names:
                began.setdefault(name, time.monotonic())
                status, got, _ = request(procs[name][1], path, headers)
                answers[name].append((status,) + tuple(got.get(f) for f in FIELDS))
        took = {name: time.monotonic() - began[name] for name in names}
        return answers, took
    finally:
        for proc, _ in procs.values():
            stop(proc)


def main():
    names = sys.argv[1:]
    if len(names) < 2:
        raise SystemExit("usage: http_same_bytes.py REFERENCE NAME...")
    for attempt in range(1, ATTEMPTS + 1):
        answers, took = run_once(names)
        slow = [f"{n} {t:.2f}s" for n, t in took.items() if t > MAX_SEQUENCE_S]
        if slow:
            print(f"attempt {attempt}: a sequence took over {MAX_SEQUENCE_S}s ({', '.join(slow)}); fresh servers", file=sys.stderr)
            continue
        ref = names[0]
        failures = []
        for name in names[1:]:
            for i, (want, got) in enumerate(zip(answers[ref], answers[name])):
                if want != got:
                    failures.append(f"{name} step {i} {SEQUENCE[i][0]}: {got} != {ref}'s {want}")
        # The reference must itself have said something worth matching.
        statuses = [a[0] for a in answers[ref]]
        if statuses != [200] * 6 + [429, 429] or answers[ref][6][3] is None:
            failures.append(f"{ref}: unexpected reference sequence {answers[ref]}")
        for f in failures:
            print(f"FAIL {f}")
        for step, a in zip(SEQUENCE, answers[ref]):
            print(f"  {step[0]:9} {a}")
        print(f"{len(names) - 1} servers compared with {ref} over {len(SEQUENCE)} requests: {len(failures)} differences")
        sys.exit(1 if failures else 0)
    raise SystemExit(f"every attempt had a sequence slower than {MAX_SEQUENCE_S}s: nothing compared")


if __name__ == "__main__":
    main()
