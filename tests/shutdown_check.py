#!/usr/bin/env python3
"""Shutdown hygiene: runs a child program that uses a Redis store, and checks it leaves
nothing behind.

    tests/shutdown_check.py REDIS_URL -- CHILD [ARGS...]

The child gets THROTTLEKIT_REDIS_URL, makes Redis calls (blocking and async), prints
`working` and waits for a line on stdin; then closes its stores and drops its references to
them, prints `closed`, and waits for another line before returning from main normally. The driver checks:
  1. after `closed`, the server's CLIENT LIST holds none of the child's connections while the
     child is still alive (they were really released), within 5 s;
  2. the child has no child processes of its own;
  3. told to finish, it exits with status 0 within 10 s (no thread keeps it alive, nothing
     hangs at exit), and afterwards none of its connections remain.
Prints one line per check and exits non-zero on the first failure.
"""

import os
import socket
import subprocess
import sys
import time


def client_list(port: int) -> str:
    """The CLIENT LIST bulk reply's text, read to its declared length."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"*2\r\n$6\r\nCLIENT\r\n$4\r\nLIST\r\n")
        data = b""
        while b"\r\n" not in data:
            data += s.recv(65536)
        header, _, body = data.partition(b"\r\n")
        assert header.startswith(b"$"), header
        while len(body) < int(header[1:]):
            body += s.recv(65536)
        return body[: int(header[1:])].decode()


def clients(port: int) -> list[str]:
    """Client addresses connected to the server, except this query's own connection."""
    lines = [l for l in client_list(port).splitlines() if l.startswith("id=") and "cmd=client|list" not in l]
    return [f.split("=", 1)[1] for l in lines for f in l.split() if f.startswith("addr=")]


def child_ports(pid: int) -> set[str]:
    """Local TCP addresses of the child's sockets (from /proc/net/tcp via its fds)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except FileNotFoundError:
        return set()
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = open(table).read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for row in rows:
            f = row.split()
            if f[9] in inodes:
                ip, port = f[1].split(":")
                out.add(f"127.0.0.1:{int(port, 16)}")
    return out


def fail(msg: str) -> None:
    print(f"shutdown: FAIL {msg}", file=sys.stderr)
    sys.exit(1)


def main() -> None:
    url, sep, *child = sys.argv[1:]
    assert sep == "--" and child, __doc__
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    env = dict(os.environ, THROTTLEKIT_REDIS_URL=url)
    proc = subprocess.Popen(child, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    # 0. while it works (it says `working` and waits), its connections are visible: this is
    # what the later checks look for.
    if proc.stdout.readline().strip() != "working":
        proc.kill()
        fail(f"the child did not report `working` (exit {proc.wait()})")
    seen = child_ports(proc.pid) & set(clients(port))
    if not seen:
        proc.kill()
        fail("none of the child's connections is visible in CLIENT LIST while it works")
    proc.stdin.write("go on\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if line.strip() != "closed":
        proc.kill()
        fail(f"the child did not report `closed` (exit {proc.wait()})")
    # 1. close() released every connection while the child lives.
    until = time.monotonic() + 5
    while True:
        mine = child_ports(proc.pid) & set(clients(port))
        if not mine:
            break
        if time.monotonic() > until:
            proc.kill()
            fail(f"connections still open after close() and release: {sorted(mine)}")
        time.sleep(0.05)
    print(f"shutdown: after close() and release, none of the child's {len(seen)} connection(s) remain")
    # 2. no helper processes.
    kids = subprocess.run(["ps", "-o", "pid=", "--ppid", str(proc.pid)], capture_output=True, text=True).stdout.split()
    if kids:
        proc.kill()
        fail(f"the child left processes behind: {kids}")
    print("shutdown: no child processes")
    # 3. a prompt, clean exit.
    started = time.monotonic()
    proc.stdin.write("exit\n")
    proc.stdin.close()
    try:
        code = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("the child did not exit within 10 s of being told to")
    if code != 0:
        fail(f"the child exited with status {code}")
    left = [c for c in clients(port) if c in seen]
    if left:
        fail(f"connections left after exit: {left}")
    print(f"shutdown: exited 0 in {time.monotonic() - started:.2f} s with nothing left")


if __name__ == "__main__":
    main()
