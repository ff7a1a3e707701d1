"""Cross-language check: the same request sequence gives byte-identical rate-limit fields from
every named example server and from the rust-axum example (the reference).

    python tests/http_cross_language.py NAME...   (tests/http-cross-language.sh sets up the venv)

Each server is started with examples/http/run.sh on a fresh loopback port and stopped by PID
(tests/http_blackbox.py's start/stop). The sequence: six GET /limited (five admitted, one
denied), one with a spoofed X-Forwarded-For, one GET /healthz. For each response the status and
the RateLimit, RateLimit-Policy and Retry-After values must equal the reference's, byte for byte.
Every value here is a whole number of seconds rounded up from about 12 s away, so two correct
servers agree as long as each sequence takes less than a second; one that took longer is run
again on a fresh server.
"""
import sys
import time

from http_blackbox import request, start, stop

FIELDS = ("ratelimit", "ratelimit-policy", "retry-after")
SEQUENCE = [("/limited", {})] * 6 + [("/limited", {"X-Forwarded-For": "203.0.113.99"}), ("/healthz", {})]


def run_once(name):
    """The responses to SEQUENCE from a fresh server, and how long the sequence took."""
    proc, port = start(name)
    try:
        out = []
        began = time.monotonic()
        for path, headers in SEQUENCE:
            status, got, _ = request(port, path, headers)
            out.append((status, tuple((f, got.get(f)) for f in FIELDS)))
        return out, time.monotonic() - began
    finally:
        stop(proc)


def run(name):
    """As run_once, on a fresh server again when the sequence took a second or more (a loaded
    machine): only then may a correct `t` fall from 12 to 11, so such a run proves nothing."""
    for _ in range(3):
        out, took = run_once(name)
        if took < 0.9:
            return out
        print(f"{name}: the sequence took {took:.2f} s; running it again on a fresh server", file=sys.stderr)
    raise SystemExit(f"{name}: every sequence took a second or more; the machine is too loaded to compare")


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
