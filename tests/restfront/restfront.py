#!/usr/bin/env python3
"""A REST front end for tests: the Upstash REST protocol in front of a real redis-server.

    restfront.py --redis-port P [--port 0] [--token T] [--fault MODE]

It prints `listening <port>` on its first line of stdout, then serves until killed (tests stop
it by PID). Standard library only.

The protocol (Upstash's, as docs/redis-rest.md describes it):
- `POST /` with a JSON array of strings, one command: `{"result": R}` (HTTP 200) or
  `{"error": "..."}` (HTTP 400). `POST /pipeline` with an array of such arrays: an array of
  `{"result"}`/`{"error"}` (HTTP 200), the commands run in order on one connection.
  `POST /multi-exec`: the same, inside `MULTI`/`EXEC`.
- `Authorization: Bearer <token>` must match, else HTTP 401 `{"error": "Unauthorized"}`.
- `R` is the Redis reply as JSON: integers as numbers, bulk and status strings as strings
  (base64 with `Upstash-Encoding: base64`, as Upstash does), nil as `null`, arrays as arrays,
  an error inside an array as `{"error": "..."}`.
- A script whose first line sets Upstash's `allow-key-locking` flag runs on Redis without
  that flag (redis-server rejects flags it does not know); its SHA1 is mapped to the stripped
  script's, so `EVALSHA` of the flagged SHA1 works once `EVAL` or `SCRIPT LOAD` has seen it.
- Test-only: `Throttlekit-Encoding: hex` makes every argument and every reply string hex
  (binary-safe, for `DUMP`/`RESTORE` in deterministic replay).
- `GET /__stats` (no token): `{"requests": n, "flagged": n}` (requests served, scripts seen with
  the flag).

Fault modes (`--fault`): `hang` reads each request and never answers; `refuse` closes its
listening socket after printing the port (connections are refused); `garbage` answers HTTP 200
with a body that is no reply; `drop` reads each request and closes the connection unanswered.
"""

import argparse
import base64
import hashlib
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FLAG = "allow-key-locking"


class RedisError(Exception):
    pass


class Redis:
    """A minimal RESP2 client on one connection."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.file = self.sock.makefile("rb")

    def send(self, commands):
        out = bytearray()
        for args in commands:
            out += b"*%d\r\n" % len(args)
            for a in args:
                out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return [self.read() for _ in commands]

    def read(self):
        line = self.file.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("redis closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest
        if kind == b"-":
            return RedisError(rest.decode("utf-8", "replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.file.read(n + 2)
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ConnectionError(f"not RESP: {line!r}")


def sha1(b):
    return hashlib.sha1(b).hexdigest().encode()


class State:
    def __init__(self, redis_port, token, fault):
        self.redis_port = redis_port
        self.token = token
        self.fault = fault
        self.local = threading.local()
        self.lock = threading.Lock()
        self.shas = {}  # flagged script's SHA1 -> the stripped script's
        self.requests = 0
        self.flagged = 0

    def conn(self):
        c = getattr(self.local, "redis", None)
        if c is None:
            c = self.local.redis = Redis(self.redis_port)
        return c

    def strip(self, script):
        """The script without Upstash's flag (and its SHA1 mapped), or as it is."""
        first, nl, rest = script.partition(b"\n")
        if not (first.startswith(b"#!lua") and FLAG.encode() in first):
            return script
        flags = [f for f in first.split(b"flags=", 1)[1].split(b",") if f.strip() != FLAG.encode()] if b"flags=" in first else []
        stripped = (b"#!lua flags=" + b",".join(flags) + nl + rest) if flags else rest
        with self.lock:
            self.shas[sha1(script)] = sha1(stripped)
            self.flagged += 1
        return stripped

    def rewrite(self, args):
        name = args[0].upper() if args else b""
        if name in (b"EVAL", b"EVAL_RO") and len(args) > 1:
            return [args[0], self.strip(args[1])] + args[2:]
        if name in (b"EVALSHA", b"EVALSHA_RO") and len(args) > 1:
            with self.lock:
                return [args[0], self.shas.get(args[1].lower(), args[1])] + args[2:]
        if name == b"SCRIPT" and len(args) > 2 and args[1].upper() == b"LOAD":
            stripped = self.strip(args[2])
            return [args[0], args[1], stripped], sha1(args[2]) if stripped != args[2] else None
        return args


def to_json(value, encode):
    if isinstance(value, RedisError):
        return {"error": str(value)}
    if isinstance(value, list):
        return [to_json(v, encode) for v in value]
    if isinstance(value, bytes):
        return encode(value)
    return value


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body leave in separate writes: with Nagle's algorithm a kept-alive client's
    # delayed ACK holds the body back ~40 ms.
    disable_nagle_algorithm = True
    state: State = None

    def log_message(self, *args):
        pass

    def reply(self, status, obj=None, raw=None):
        body = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/__stats":
            s = self.state
            return self.reply(200, {"requests": s.requests, "flagged": s.flagged})
        self.reply(404, {"error": "not found"})

    def do_POST(self):
        s = self.state
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if s.fault == "hang":
            time.sleep(3600)
        if s.fault == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if s.fault == "garbage":
            return self.reply(200, raw=b"\x00garbage{")
        if self.headers.get("Authorization") != f"Bearer {s.token}":
            return self.reply(401, {"error": "Unauthorized"})
        hexed = self.headers.get("Throttlekit-Encoding", "").lower() == "hex"
        b64 = self.headers.get("Upstash-Encoding", "").lower() == "base64"
        if hexed:
            encode = bytes.hex
        elif b64:
            encode = lambda b: base64.b64encode(b).decode()  # noqa: E731
        else:
            encode = lambda b: b.decode("utf-8", "replace")  # noqa: E731
        try:
            payload = json.loads(body)
            path = self.path.rstrip("/") or "/"
            many = path in ("/pipeline", "/multi-exec")
            commands = payload if many else [payload]
            if path not in ("/", "/pipeline", "/multi-exec") or not isinstance(commands, list) or not commands:
                raise ValueError("bad request")
            args = [[bytes.fromhex(a) if hexed else str(a).encode() for a in c] for c in commands]
        except (ValueError, TypeError) as e:
            return self.reply(400, {"error": f"ERR {e}"})
        loaded = {}
        sent = []
        for i, a in enumerate(args):
            r = s.rewrite(a)
            if isinstance(r, tuple):
                r, loaded[i] = r
            sent.append(r)
        if path == "/multi-exec":
            sent = [[b"MULTI"]] + sent + [[b"EXEC"]]
        try:
            replies = s.conn().send(sent)
        except (OSError, ConnectionError) as e:
            s.local.redis = None
            return self.reply(500, {"error": f"ERR redis: {e}"})
        if path == "/multi-exec":
            replies = replies[-1] if isinstance(replies[-1], list) else [replies[-1]] * len(args)
        for i, sha in loaded.items():
            if not isinstance(replies[i], RedisError):
                replies[i] = sha
        with s.lock:
            s.requests += 1
        items = [{"error": str(r)} if isinstance(r, RedisError) else {"result": to_json(r, encode)} for r in replies]
        if many:
            return self.reply(200, items)
        return self.reply(400 if "error" in items[0] else 200, items[0])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--redis-port", type=int, required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--token", default="test-token")
    p.add_argument("--fault", choices=["none", "hang", "refuse", "garbage", "drop"], default="none")
    a = p.parse_args()
    Handler.state = State(a.redis_port, a.token, a.fault)
    # socketserver's default listen backlog is 5: of many connections opened at once (a test's
    # concurrent checks) the kernel would drop SYNs, which clients resend after 1, 3, 7... s.
    ThreadingHTTPServer.request_queue_size = 256
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    print(f"listening {server.server_address[1]}", flush=True)
    if a.fault == "refuse":
        server.socket.close()
        while True:
            time.sleep(3600)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
