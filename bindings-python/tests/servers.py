"""Real HTTP servers on loopback for the middleware tests: uvicorn (ASGI) and werkzeug's WSGI
server (what Flask's dev server runs), each in a thread of this process, on a socket bound to
port 0 by the test itself (so no other process can take the port between choosing and binding).
Clients are real too: httpx over TCP. ``server_process`` runs a server in a process of its own
(gunicorn or uvicorn serving a project in a folder).
"""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn
from werkzeug.serving import make_server


def _bound(host: str) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    sock.listen(128)
    return sock


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@contextmanager
def uvicorn_server(app: Any, host: str = "127.0.0.1") -> Iterator[str]:
    """Serves the ASGI `app` with uvicorn; yields its base URL."""
    sock = _bound(host)
    # proxy_headers=False: uvicorn's own default believes X-Forwarded-For from 127.0.0.1 and
    # rewrites the peer before any middleware sees it (the README says so).
    config = uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False, proxy_headers=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield _url(host, sock.getsockname()[1])
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


@contextmanager
def wsgi_server(app: Any, host: str = "127.0.0.1") -> Iterator[str]:
    """Serves the WSGI `app` with werkzeug's threaded server (Flask's dev server); yields its URL."""
    server = make_server(host, 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield _url(host, server.server_port)
    finally:
        server.shutdown()
        thread.join(timeout=30)
        server.server_close()


@contextmanager
def serve(kind: str, app: Any, host: str = "127.0.0.1") -> Iterator[httpx.Client]:
    """A real client for `app` served by the server `kind` needs ("asgi" or "wsgi")."""
    runner = uvicorn_server if kind == "asgi" else wsgi_server
    with runner(app, host) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


@contextmanager
def server_process(argv: list[str], cwd: str, timeout_s: float = 60) -> Iterator[httpx.Client]:
    """Runs a server command in its own process (``{port}`` in ``argv`` becomes a free port, a
    fresh one on each of three attempts) until it answers GET /healthz; yields a client, then
    stops it by PID. Its output is kept for the failure message."""
    log = ""
    for _attempt in range(3):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = subprocess.Popen([a.replace("{port}", str(port)) for a in argv], cwd=cwd,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout_s
        try:
            while proc.poll() is None and time.monotonic() < deadline:
                try:
                    if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            if proc.poll() is None and time.monotonic() < deadline:
                with httpx.Client(base_url=url, timeout=30) as client:
                    yield client
                return
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            log = proc.stdout.read() if proc.stdout else ""
    raise RuntimeError(f"{argv} never answered GET /healthz:\n{log}")
