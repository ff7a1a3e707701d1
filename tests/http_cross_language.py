"""Cross-language check: the same request sequence gives byte-identical rate-limit fields from
every named example server and from the rust-axum example (the reference).

    python tests/http_cross_language.py NAME...   (tests/http-cross-language.sh sets up the venv)

Each server is started with examples/http/run.sh on a fresh loopback port and stopped by PID
(tests/http_blackbox.py's start/stop). The sequence: six GET /limited (five admitted, one
denied), one with a spoofed X-Forwarded-For, one GET /healthz. For each response the status and
the RateLimit, RateLimit-Policy and Retry-After values must equal the reference's, byte for byte.
The requests of one sequence take far less than a second, and every value here is a whole
number of seconds rounded up from at least 12 s away, so the servers' clocks cannot make two
correct servers differ.
"""
import sys

from http_blackbox import request, start, stop

FIELDS = ("ratelimit", "ratelimit-policy", "retry-after")
SEQUENCE = [("/limited", {})] * 6 + [("/limited", {"X-Forwarded-For": "203.0.113.99"}), ("/healthz", {})]


def run(name):
    proc, port = start(name)
    try:
        out = []
        for path, headers in SEQUENCE:
            status, got, _ = request(port, path, headers)
            out.append((status, tuple((f, got.get(f)) for f in FIELDS)))
        return out
    finally:
        stop(proc)


def main():
    names = sys.argv[1:]
    if not names:
        raise SystemExit("usage: http_cross_language.py NAME...")
    reference = run("rust-axum")
    # Guard against a vacuous comparison: the reference itself must have sent the fields.
    if reference[0][1][0][1] is None or reference[5][0] != 429 or reference[5][1][2][1] is None:
        raise SystemExit(f"rust-axum sent no rate-limit fields: {reference}")
    failed = 0
    for name in names:
        got = run(name)
        for i, (want, have) in enumerate(zip(reference, got)):
            if want != have:
                failed += 1
                print(f"FAIL {name} request {i} {SEQUENCE[i][0]}: rust-axum {want}, {name} {have}")
        print(f"{name} vs rust-axum: {len(SEQUENCE) - sum(w != h for w, h in zip(reference, got))} identical, "
              f"{sum(w != h for w, h in zip(reference, got))} different")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
