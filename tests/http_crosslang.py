"""Cross-language check: the same request sequence gives byte-identical rate-limit fields.

Starts examples/http/run.sh rust-axum (the reference) and NAME, each on a free port with its
own PID checked (tests/http_blackbox.py's start/stop), then sends both the same sequence, six
GET /limited, interleaved request by request so that both servers see the same elapsed times.
For every request the status and the RateLimit, RateLimit-Policy and Retry-After values must
be equal byte for byte.

The values carry whole seconds rounded up from milliseconds (t, Retry-After), so a sequence
that straddles a second boundary on one server and not the other could differ without either
being wrong. That can only happen when the sequence took longer than a second; then the check
is repeated from a fresh client address (127.0.0.N, a fresh bucket), at most three times. A
difference in a sequence that took less than 900 ms is a failure at once.
Usage: python tests/http_crosslang.py NAME   (tests/http-blackbox.sh sets up the same venv)
"""
import http.client
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from http_blackbox import start, stop  # noqa: E402

FIELDS = ("ratelimit-policy", "ratelimit", "retry-after")


def request(port, source):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        conn.request("GET", "/limited")
        r = conn.getresponse()
        r.read()
        headers = {k.lower(): v for k, v in r.getheaders()}
        return (r.status,) + tuple(headers.get(f) for f in FIELDS)
    finally:
        conn.close()


def compare(name, ports, source):
    """Returns (differences, elapsed seconds) for one interleaved sequence from `source`."""
    began = time.monotonic()
    diffs = []
    for i in range(6):
        ref = request(ports[0], source)
        got = request(ports[1], source)
        if ref != got:
            diffs.append(f"request {i + 1}: rust-axum {ref!r}, {name} {got!r}")
    return diffs, time.monotonic() - began


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: http_crosslang.py NAME")
    name = sys.argv[1]
    procs = []
    try:
        ports = []
        for example in ("rust-axum", name):
            proc, port = start(example)
            procs.append(proc)
            ports.append(port)
        for attempt in range(3):
            diffs, elapsed = compare(name, ports, f"127.0.0.{10 + attempt}")
            if not diffs:
                print(f"{name} vs rust-axum: 6 passed, 0 failed (identical fields, {elapsed * 1000:.0f} ms)")
                return
            if elapsed < 0.9:
                break
            print(f"sequence took {elapsed:.2f} s and differed; again from a fresh address", file=sys.stderr)
        for d in diffs:
            print(f"FAIL {d}")
        print(f"{name} vs rust-axum: {6 - len(diffs)} passed, {len(diffs)} failed")
        sys.exit(1)
    finally:
        for proc in procs:
            stop(proc)


if __name__ == "__main__":
    main()
