#!/usr/bin/env python3
"""Redis server instructions per script call: our single-key scripts against the original
ThrottleKit's, counted by valgrind's callgrind inside the server (inclusive under
`evalShaCommand`), on the workload of bench/rust/src/bin/redis_scripts.rs.

    redis_instructions.py <dir of the original's *.check.lua> [--calls N]
    redis_instructions.py --multi [--calls N]      the fused multi rows alone

The fused multi script (core/lua/multi.lua, what `throttlekit serve` sends per request) has no
counterpart in the original, so its rows (1 and 3 fixed-window dimensions, one GCRA dimension,
a fixed window with a GCRA) are measured against envoyproxy/ratelimit's work per descriptor, an
`INCR` + `PEXPIRE` script (the issue-#22 peer), once per dimension; as `FCALL` of the function
library the crate loads on Redis >= 7 (inclusive under `fcallCommand`) and as `EVALSHA`. Each
multi row also prints `usec_per_call` from `INFO commandstats`, ours and the peer's measured on
one server in one run (wall time: noisy on a shared machine, the instructions are not).

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


# The fused multi rows: name, then per dimension (kind, options after m); cost 1, rule all.
FW = ("fixedWindow", ["1000000000", "60000"])
GCRA = ("gcra", ["3600", "3600000", "1000000000"])
MULTI_CASES = [
    ("1 fixedWindow", [FW]),
    ("3 fixedWindow", [FW, FW, FW]),
    ("1 gcra", [GCRA]),
    ("fixedWindow + gcra", [FW, GCRA]),
]
# envoyproxy/ratelimit's work per descriptor, as bench/serve/run.sh gives it to redis-benchmark.
PEER = "redis.call('INCR', KEYS[1]); return redis.call('PEXPIRE', KEYS[1], 1000)"


def multi_args(dims: list[tuple[str, list[str]]]) -> list[str]:
    """multi.lua's ARGV after now: rule, n, then per dimension kind, cost, m, options."""
    args = ["all", str(len(dims))]
    for kind, options in dims:
        args += [kind, "1", str(len(options)), *options]
    return args


def usec_per_call(script: str, calls: int) -> dict[str, dict[str, float]]:
    """`usec_per_call` of every multi row (FCALL and EVALSHA) and of the peer script, on one
    server, each row's calls pipelined, the rows interleaved over three rounds (best round)."""
    port = free_port()
    server = start_server(port, None, "")
    conn = None
    best: dict[str, dict[str, float]] = {}
    try:
        conn = connect(port)
        conn.cmd("FUNCTION", "LOAD", library(script, "tk_bench"))
        sha = str(conn.cmd("SCRIPT", "LOAD", script))
        peer = str(conn.cmd("SCRIPT", "LOAD", PEER))
        for _ in range(3):
            for name, dims in MULTI_CASES:
                keys = [f"{name}:{k}" for k in range(len(dims))]
                row = best.setdefault(name, {})
                for form, head, batch_keys, args in (
                        ("fcall", ["FCALL", "tk_bench"], keys, multi_args(dims)),
                        ("evalsha", ["EVALSHA", sha], keys, multi_args(dims)),
                        ("peer", ["EVALSHA", peer], ["peer"], [])):
                    conn.cmd("CONFIG", "RESETSTAT")
                    batch = calls_for(head, batch_keys, args, 1, calls)
                    if form == "peer":
                        batch = [c[:4] for c in batch]
                    conn.pipeline(batch)
                    stats = str(conn.cmd("INFO", "commandstats"))
                    cmd = "fcall" if form == "fcall" else "evalsha"
                    us = float(stats.split(f"cmdstat_{cmd}:")[1].split("usec_per_call=")[1].split(",")[0])
                    row[form] = min(row.get(form, us), us)
    finally:
        stop(server, conn)
    return best


def multi_rows(calls: int) -> None:
    script = assemble(LUA / "multi.lua")
    print(f"fused multi script (core/lua/multi.lua, rule all, cost 1), {calls} calls per side; peer: "
          "an INCR + PEXPIRE script once per dimension (envoyproxy/ratelimit's work per descriptor)")
    with tempfile.TemporaryDirectory() as tmp:
        peer = instructions_per_call(PEER, [], 1, calls, Path(tmp) / "peer", keys=("peer",))
        timed = usec_per_call(script, max(calls * 5, 5000))
        for name, dims in MULTI_CASES:
            keys = tuple(f"k{k}" for k in range(len(dims)))
            args = multi_args(dims)
            f = instructions_per_call(script, args, 1, calls, Path(tmp) / f"{name}.f", keys=keys, fcall=True)
            e = instructions_per_call(script, args, 1, calls, Path(tmp) / f"{name}.e", keys=keys)
            t, n = timed[name], len(dims)
            print(f"multi {name:<19} instructions per call: FCALL {f:,.0f}, EVALSHA {e:,.0f}, peer x{n} "
                  f"{peer * n:,.0f} (FCALL/peer {f / (peer * n):.2f}); usec_per_call FCALL {t['fcall']:.2f}, "
                  f"EVALSHA {t['evalsha']:.2f}, peer x{n} {t['peer'] * n:.2f}")
            print(f"ROW\tRedis server instructions per call (callgrind), multi {name} (FCALL)\t"
                  f"INCR + PEXPIRE script x{n}\t{f / (peer * n):.2f}\t-\t"
                  f"{f:,.0f} vs {peer * n:,.0f} instructions; EVALSHA {e:,.0f}; usec_per_call "
                  f"{t['fcall']:.2f} vs {t['peer'] * n:.2f}")
            if n > 1 and all(kind == "fixedWindow" for kind, _ in dims):
                # Every dimension a fixed window, on the caller's clock: the crate asks for the
                # counts alone (multi.lua's `count` reply, core/src/redis/call.rs WindowCounts),
                # what `throttlekit serve` sends for a request of several fixed-window limits.
                c = instructions_per_call(script, [*args, "count"], 1, calls, Path(tmp) / f"{name}.c",
                                          keys=keys, fcall=True)
                print(f"multi {name:<19} with the count reply (what serve sends): FCALL {c:,.0f} "
                      f"(FCALL/peer {c / (peer * n):.2f})")
                print(f"ROW\tRedis server instructions per call (callgrind), multi {name} count reply (FCALL)\t"
                      f"INCR + PEXPIRE script x{n}\t{c / (peer * n):.2f}\t-\t"
                      f"{c:,.0f} vs {peer * n:,.0f} instructions (six-integer reply {f:,.0f})")
        # A multi check of one dimension is sent as that strategy's own check
        # (core/src/redis/call.rs, `multi`): what `throttlekit serve` sends for a request with one
        # limit; a fixed window on the caller's clock (serve's default) in the script's `count`
        # mode, whose reply is one integer (the `check` mode's six-integer reply for reference).
        fw_script = assemble(LUA / "fixed_window.lua")
        fw = instructions_per_call(fw_script, ["count", "1", "1000000000", "1000"], 1,
                                   calls, Path(tmp) / "single.f", keys=("k0",), fcall=True)
        fw_check = instructions_per_call(fw_script, ["check", "1", "1000000000", "1000"], 1,
                                         calls, Path(tmp) / "single.c", keys=("k0",), fcall=True)
        print(f"one fixed window sent as its own check in count mode (what a one-dimension multi sends): "
              f"FCALL {fw:,.0f} instructions per call (check mode {fw_check:,.0f}), peer {peer:,.0f} "
              f"(FCALL/peer {fw / peer:.2f})")
        print(f"ROW\tRedis server instructions per call (callgrind), one-dimension multi as fixed_window check "
              f"(FCALL)\tINCR + PEXPIRE script\t{fw / peer:.2f}\t-\t{fw:,.0f} vs {peer:,.0f} instructions "
              f"(count mode; check mode {fw_check:,.0f})")


def splice(text: str, whole: bool, seen: set[str], out: list[str]) -> None:
    """core/src/redis/scripts.rs `splice`: each `-- #include`d fragment once, in place, minus its
    comment header and its `-- #main` section."""
    in_header = not whole
    for line in text.splitlines():
        if line.startswith("-- #include "):
            name = line[len("-- #include "):].strip()
            if name not in seen:
                seen.add(name)
                splice((LUA / name).read_text(), False, seen, out)
            in_header = False
            continue
        if not whole and line.rstrip().startswith("-- #main"):
            break
        if in_header and line.startswith("--"):
            continue
        in_header = False
        out.append(line)


def assemble(path: Path) -> str:
    """A script as the crate assembles it (core/src/redis/scripts.rs, `assemble`): a standalone
    one is its `-- #main standalone` section (the header above it is comments only); another
    has each `-- #include`d fragment spliced in."""
    lines = path.read_text().splitlines()
    if "-- #main standalone" in lines:
        return "\n".join(lines[lines.index("-- #main standalone"):]) + "\n"
    out: list[str] = []
    splice(path.read_text(), True, {path.name}, out)
    return "\n".join(out) + "\n"


def library(script: str, function: str) -> str:
    """A one-function library as the crate's `LIBRARY` registers each script: the definitions
    before the `-- #main` line run once at load, the main is the registered function's body."""
    at = 0 if script.startswith("-- #main") else script.find("\n-- #main") + 1
    return (f"#!lua name=tk_bench\ndo\n{script[:at]}redis.register_function('{function}', "
            f"function(KEYS, ARGV)\n{script[at:]}end)\nend\n")


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


def start_server(port: int, out: Path | None, toggle: str) -> subprocess.Popen:
    server_cmd = ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"]
    if out is not None:
        server_cmd = ["valgrind", "--tool=callgrind", f"--toggle-collect={toggle}",
                      f"--callgrind-out-file={out}", *server_cmd]
    return subprocess.Popen(server_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def connect(port: int) -> Conn:
    for _ in range(600):
        try:
            conn = Conn(port)
            conn.cmd("PING")
            return conn
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("redis-server did not start")


def stop(server: subprocess.Popen, conn: Conn | None) -> None:
    if conn is not None:
        try:
            conn.cmd("SHUTDOWN", "NOSAVE")
        except (RuntimeError, OSError):
            pass
    try:
        server.wait(timeout=120)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def total(out: Path, calls: int) -> float:
    for line in out.read_text().splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1]) / calls
    raise RuntimeError(f"no totals in {out}")


def calls_for(head: list[str], keys: list[str], args: list[str], step: int, calls: int) -> list[list[str]]:
    """`calls` commands `head numkeys keys now args`, now stepping by `step` ms."""
    now = 1_800_000_000_000
    batch = []
    for _ in range(calls):
        now += step
        batch.append([*head, str(len(keys)), *keys, str(now), *args])
    return batch


def instructions_per_call(script: str, args: list[str], step: int, calls: int, out: Path,
                          keys: tuple[str, ...] = ("k",), fcall: bool = False) -> float:
    """Instructions inside `evalShaCommand` (or `fcallCommand`, with the script loaded as a
    library) per call, over `calls` pipelined calls on a fresh server under callgrind."""
    port = free_port()
    server = start_server(port, out, "fcallCommand" if fcall else "evalShaCommand")
    conn = None
    try:
        conn = connect(port)
        if fcall:
            conn.cmd("FUNCTION", "LOAD", library(script, "tk_bench"))
            head = ["FCALL", "tk_bench"]
        else:
            head = ["EVALSHA", str(conn.cmd("SCRIPT", "LOAD", script))]
        conn.pipeline(calls_for(head, list(keys), args, step, calls))
    finally:
        stop(server, conn)
    return total(out, calls)


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
    if sys.argv[1] == "--multi":
        multi_rows(calls)
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
    multi_rows(calls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
