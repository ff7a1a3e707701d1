"""Black-box check of one HTTP example server (examples/http/run.sh NAME PORT).

Starts the example on a free loopback port (a fresh port on every attempt), makes sure the PID
it started is the one listening, and checks the sequence every example must answer:
  - five GET /limited -> 200 with RateLimit r = 4, 3, 2, 1, 0 and RateLimit-Policy q=5;w=60;
  - the sixth -> 429 with Retry-After >= 1 and an application/problem+json body;
  - a spoofed X-Forwarded-For / Forwarded gets no fresh bucket (still 429);
  - GET /healthz is never limited and carries no rate-limit field.
The fields are parsed with PyPI's http-sfv, an independent Structured Fields parser.
Usage: python tests/http_blackbox.py NAME   (tests/http-blackbox.sh sets up the venv)
"""
import http.client
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

import http_sfv

ROOT = pathlib.Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = float(os.environ.get("HTTP_BLACKBOX_READY_TIMEOUT", "900"))  # first run builds


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening_pid_owns(pid, port):
    """True when `pid` holds a listening TCP socket on `port` (read from /proc, no tools)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = pathlib.Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f[9])
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            return True
    return False


def request(port, path, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
    finally:
        conn.close()


def start(name):
    """Starts the example; returns (process, port) once its own PID answers on the port."""
    for attempt in range(3):
        port = free_port()
        proc = subprocess.Popen([str(ROOT / "examples/http/run.sh"), name, str(port)], start_new_session=True)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline and proc.poll() is None:
            if listening_pid_owns(proc.pid, port):
                try:
                    if request(port, "/healthz")[0] == 200:
                        return proc, port
                except OSError:
                    pass
            time.sleep(0.2)
        stop(proc)
        print(f"{name} did not serve port {port} (attempt {attempt}); trying a fresh port", file=sys.stderr)
    raise SystemExit(f"{name}: the example never answered")


def stop(proc):
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def sf_list(value):
    parsed = http_sfv.List()
    parsed.parse(value.encode())
    return [(m.value, dict(m.params)) for m in parsed]


def check(name, port):
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    for i in range(2):
        status, headers, _ = request(port, "/healthz")
        expect(status == 200, f"/healthz #{i}: status {status}")
        expect(not any("ratelimit" in h for h in headers), f"/healthz carries rate-limit fields: {headers}")

    for want_r in (4, 3, 2, 1, 0):
        status, headers, _ = request(port, "/limited")
        expect(status == 200, f"request r={want_r}: status {status}")
        policy = sf_list(headers.get("ratelimit-policy", ""))
        expect(policy == [("default", {"q": 5, "w": 60})], f"RateLimit-Policy {headers.get('ratelimit-policy')!r}")
        state = sf_list(headers.get("ratelimit", ""))
        ok = len(state) == 1 and state[0][0] == "default" and state[0][1].get("r") == want_r
        expect(ok and 1 <= state[0][1].get("t", -1) <= 12, f"RateLimit {headers.get('ratelimit')!r}, want r={want_r}")
        expect("retry-after" not in headers, f"Retry-After on an admitted request: {headers}")

    status, headers, body = request(port, "/limited")
    expect(status == 429, f"sixth request: status {status}")
    retry = headers.get("retry-after", "")
    expect(retry.isdigit() and int(retry) >= 1, f"Retry-After {retry!r}")
    expect(headers.get("content-type", "").startswith("application/problem+json"), f"content-type {headers.get('content-type')!r}")
    try:
        problem = json.loads(body)
        expect(problem.get("status") == 429, f"problem status {problem.get('status')!r}")
        expect(all(isinstance(problem.get(k), str) and problem[k] for k in ("type", "title", "detail")), f"problem {problem}")
    except ValueError:
        failures.append(f"429 body is not JSON: {body!r}")
    state = sf_list(headers.get("ratelimit", ""))
    expect(state and state[0][1].get("r") == 0, f"429 RateLimit {headers.get('ratelimit')!r}")
    if state and retry.isdigit():
        expect(state[0][1].get("t", 10**9) <= int(retry), "t later than Retry-After")

    for spoof in ({"X-Forwarded-For": "203.0.113.99"}, {"Forwarded": "for=203.0.113.98"}):
        status, _, _ = request(port, "/limited", spoof)
        expect(status == 429, f"spoofed {spoof} got a fresh bucket (status {status})")

    status, _, _ = request(port, "/healthz")
    expect(status == 200, f"/healthz after the limit: status {status}")

    for f in failures:
        print(f"FAIL {name}: {f}")
    checks = 2 + 5 + 1 + 2 + 1
    print(f"{name}: {checks - min(len(failures), checks)} passed, {len(failures)} failed")
    return not failures


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: http_blackbox.py NAME")
    name = sys.argv[1]
    proc, port = start(name)
    try:
        ok = check(name, port)
    finally:
        stop(proc)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
