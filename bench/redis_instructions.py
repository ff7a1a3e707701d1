#!/usr/bin/env python3
"""Redis server instructions per script call: our single-key scripts against the original
ThrottleKit's, counted by valgrind's callgrind inside the server (inclusive under
`evalShaCommand`), on the workload of bench/rust/src/bin/redis_scripts.rs.

    redis_instructions.py <dir of the original's *.check.lua> [--calls N]

Why next to the timed row: `usec_per_call` is wall time inside the server, and on a shared
2-core machine a neighbour's compile stretches it by 2x from one round to the next (measured:
the token bucket script at 0.94x in one run and 1.85x in the next). An instruction count is
the same on every run, so it tells whether a script change made the server do less work, which
the timed row then confirms on a quiet machine. Prints `ROW` lines for bench/summarize.py.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LUA = ROOT / "core" / "lua"

# name, our file, our ARGV after now, the original's file, its ARGV after now, ms between calls.
CASES = [
    ("gcra", "gcra.lua", ["check", "1", "3600", "3600000", "1000000000"],
     "gcra.check.lua", ["3600000", "3600", "1000000000", "1"], 1),
    ("tokenBucket", "token_bucket.lua", ["check", "1", "1000000", "10000"],
     "tokenBucket.check.lua", ["1000000", "10000", "1"], 1),
    ("fixedWindow", "fixed_window.lua", ["check", "1", "1000000000", "60000"],
     "fixedWindow.check.lua", ["1000000000", "60000", "1"], 1),
    ("slidingWindow", "sliding_window.lua", ["check", "1", "1000000000", "60000", "10"],
     "slidingWindow.check.lua", ["60000", "1000000000", "1", "10"], 1),
    ("slidingWindowLog", "sliding_window_log.lua", ["check", "1", "1000000000", "1000"],
     "slidingWindowLog.check.lua", ["1000", "1000000000", "1"], 10),
]


def assemble(path: Path) -> str:
    """A single-key script as the crate assembles it (core/src/redis/scripts.rs, `assemble`):
    a standalone one is its `-- #main standalone` section (the header above it is comments
    only); another has each `-- #include`d fragment spliced in, minus the fragment's comment
    header and its `-- #main` section."""
    lines = path.read_text().splitlines()
    if "-- #main standalone" in lines:
        return "\n".join(lines[lines.index("-- #main standalone"):]) + "\n"
    out: list[str] = []
    for line in lines:
        if line.startswith("-- #include "):
            body = (LUA / line.split()[-1]).read_text().splitlines()
            while body and body[0].startswith("--"):
                body.pop(0)
            for b in body:
                if b.rstrip().startswith("-- #main"):
                    break
                out.append(b)
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def encode(args: list[str]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class Conn:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        self.f = self.sock.makefile("rb")

    def read(self) -> object:
        line = self.f.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2].decode()
        if kind == b"*":
            return [self.read() for _ in range(int(rest))]
        return rest.decode()

    def cmd(self, *args: str) -> object:
        self.sock.sendall(encode(list(args)))
        return self.read()

    def pipeline(self, calls: list[list[str]]) -> None:
        for i in range(0, len(calls), 500):
            chunk = calls[i:i + 500]
            self.sock.sendall(b"".join(encode(c) for c in chunk))
            for _ in chunk:
                self.read()


def instructions_per_call(script: str, args: list[str], step: int, calls: int, out: Path) -> float:
    port = free_port()
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--toggle-collect=evalShaCommand", f"--callgrind-out-file={out}",
         "redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                conn = Conn(port)
                conn.cmd("PING")
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("redis-server under valgrind did not start")
        sha = str(conn.cmd("SCRIPT", "LOAD", script))
        now = 1_800_000_000_000
        batch = []
        for _ in range(calls):
            now += step
            batch.append(["EVALSHA", sha, "1", "k", str(now), *args])
        conn.pipeline(batch)
        try:
            conn.cmd("SHUTDOWN", "NOSAVE")
        except (RuntimeError, OSError):
            pass
        server.wait(timeout=120)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    for line in out.read_text().splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1]) / calls
    raise RuntimeError(f"no totals in {out}")


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    theirs = Path(sys.argv[1])
    calls = int(sys.argv[sys.argv.index("--calls") + 1]) if "--calls" in sys.argv else 2000
    missing = [t for t in ("valgrind", "redis-server") if shutil.which(t) is None]
    if missing:
        print(f"NOT MEASURED: {' and '.join(missing)} not installed (apt-get install valgrind redis-server)")
        return 0
    print(f"callgrind, {calls} EVALSHA per side, instructions inside evalShaCommand per call")
    with tempfile.TemporaryDirectory() as tmp:
        for name, ours_file, ours_args, theirs_file, theirs_args, step in CASES:
            o = instructions_per_call(assemble(LUA / ours_file), ours_args, step, calls, Path(tmp) / f"{name}.0")
            t = instructions_per_call((theirs / theirs_file).read_text(), theirs_args, step, calls,
                                      Path(tmp) / f"{name}.1")
            print(f"{name:<18} instructions per call: ours {o:,.0f}, original {t:,.0f}, ours/theirs {o / t:.3f}")
            print(f"ROW\tRedis server instructions per call (callgrind), {name} check script\t"
                  f"original ThrottleKit script\t{o / t:.3f}\t<=1.0\t{o:,.0f} vs {t:,.0f} instructions (ours/theirs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
