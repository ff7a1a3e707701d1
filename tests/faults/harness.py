"""What the fault proofs, the chaos run and the soak share: throwaway Redis servers (by PID),
the fault proxy binary and its control connection, the language drivers, and the server's
own counts (INFO commandstats, CLIENT LIST).

Everything is started on free loopback ports and stopped by PID; nothing is killed by name.
"""

import json
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ("fcall", "fcall_ro", "evalsha", "evalsha_ro", "eval", "eval_ro")


# Ports `free_port` handed out (and their bus ports): never handed out twice, since a port is
# bound only later, by a server this harness starts.
_HANDED_OUT: set = set()
# Its own generator: the chaos schedule's seeded `random` stays reproducible.
_PORTS = random.Random()


def _ephemeral_low() -> int:
    """The first port of the kernel's range for outgoing connections' local ports."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_port(with_bus: bool = False) -> int:
    """A loopback port nothing is bound to, below the kernel's range for outgoing connections'
    local ports (`ip_local_port_range`), so that no client connection can take it between now
    and when the server it is for binds it. `bind(("127.0.0.1", 0))` picks from that very range:
    a chaos run once failed to start because the fault proxy found its route's port taken
    ("Address already in use"). With `with_bus`, port + 10000 (a cluster node's bus) is free
    and below the range too."""
    top = min(_ephemeral_low(), 65536) - 1 - (10000 if with_bus else 0)
    while True:
        port = _PORTS.randint(10000, max(top, 10001))
        bus = port + 10000
        if port in _HANDED_OUT or (with_bus and bus in _HANDED_OUT):
            continue
        if _bindable(port) and (not with_bus or _bindable(bus)):
            _HANDED_OUT.add(port)
            if with_bus:
                _HANDED_OUT.add(bus)
            return port


def cli(port: int, *args: str, timeout: float = 10) -> str:
    out = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args],
                         capture_output=True, text=True, timeout=timeout)
    return out.stdout.replace("\r", "")


def executions(port: int) -> int:
    """Script and function executions the server ran (calls minus failed and rejected ones)."""
    total = 0
    for line in cli(port, "info", "commandstats").splitlines():
        name, _, rest = line.partition(":")
        if name.removeprefix("cmdstat_") in SCRIPTS and name.startswith("cmdstat_"):
            kv = dict(p.split("=", 1) for p in rest.split(","))
            total += int(kv.get("calls", 0)) - int(kv.get("failed_calls", 0)) - int(kv.get("rejected_calls", 0))
    return total


def client_count(port: int) -> int:
    """Connections the server holds, the one asking excluded."""
    return max(0, len([l for l in cli(port, "client", "list").splitlines() if l.strip()]) - 1)


class Redis:
    """One redis-server on a free port (cluster and replica options through `extra`)."""

    def __init__(self, extra: tuple = (), port: int = 0, with_bus: bool = False):
        self.dir = tempfile.mkdtemp(prefix="tk-faults-redis-")
        for attempt in range(6):
            self.port = port or free_port(with_bus)
            self.extra = list(extra)
            self.proc = self._spawn()
            if self._wait():
                return
            self.stop()
            if port:
                time.sleep(0.3)
        raise RuntimeError(f"redis-server did not start (dir {self.dir})")

    def _spawn(self) -> subprocess.Popen:
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", self.dir, "--protected-mode", "no",
                "--repl-diskless-sync-delay", "0", *[a.replace("{port}", str(self.port)).replace("{bus}", str(self.port + 10000)) for a in self.extra]]
        log = open(os.path.join(self.dir, "redis.log"), "ab")
        return subprocess.Popen(args, stdout=log, stderr=log)

    def _wait(self, limit: float = 10) -> bool:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                info = cli(self.port, "info", "server", timeout=2)
            except subprocess.TimeoutExpired:
                # A loaded machine (chaos under load average 13) can take longer than that to
                # answer a starting server: not an answer yet, try again until the limit.
                continue
            if f"process_id:{self.proc.pid}" in info:
                return True
            time.sleep(0.05)
        return False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGCONT)
                self.proc.send_signal(sig)
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self) -> None:
        """Starts it again on the same port and directory (after a stop or a kill)."""
        for _ in range(20):
            self.proc = self._spawn()
            if self._wait():
                return
            self.stop()
            time.sleep(0.3)
        raise RuntimeError(f"redis-server did not restart on {self.port}")

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class Proxy:
    """The fault proxy binary with one route per upstream and its control connection."""

    def __init__(self, binary: str, routes: list):
        args = [binary]
        for listen, upstream in routes:
            args += ["--route", f"{listen}={upstream}" if listen else upstream]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        self.routes = []
        control = None
        for line in self.proc.stdout:
            words = line.split()
            if words[0] == "route":
                self.routes.append(words[1])
            elif words[0] == "control":
                control = words[1]
            elif words[0] == "ready":
                break
        host, port = control.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.file = self.sock.makefile("r")

    def say(self, line: str) -> str:
        self.sock.sendall((line + "\n").encode())
        reply = self.file.readline().strip()
        if not reply.startswith("ok"):
            raise RuntimeError(f"proxy: {line}: {reply}")
        return reply

    def stats(self) -> dict:
        return dict(kv.split("=") for kv in self.say("stats").split()[1:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def build_paths() -> dict:
    """The artifacts tests/faults/build.sh made (its exported variables)."""
    return {
        "proxy": os.environ["TK_FAULTPROXY"],
        "python": os.environ.get("TK_DRIVER_PYTHON", "python3"),
        "go": os.environ.get("TK_DRIVER_GO", ""),
        "rust": os.environ.get("TK_DRIVER_RUST", ""),
    }


def driver_command(lang: str, urls: str, mode: str, timeout_ms: int) -> list:
    paths = build_paths()
    here = Path(__file__).resolve().parent
    if lang == "python":
        return [paths["python"], str(here / "driver.py"), urls, mode, str(timeout_ms)]
    if lang == "node":
        return ["node", "--expose-gc", str(here / "driver.mjs"), urls, mode, str(timeout_ms), "async"]
    if lang == "node-sync":
        return ["node", "--expose-gc", str(here / "driver.mjs"), urls, mode, str(timeout_ms), "sync"]
    if lang == "go":
        return [paths["go"], urls, mode, str(timeout_ms)]
    if lang == "rust":
        return [paths["rust"], urls, mode, str(timeout_ms)]
    if lang == "rust-durable":
        return [paths["rust"], urls, mode, str(timeout_ms), "1"]
    raise ValueError(lang)


class Driver:
    """One language's driver process: JSON commands in, JSON answers out."""

    def __init__(self, lang: str, urls: str, mode: str, timeout_ms: int):
        self.lang = lang
        self.proc = subprocess.Popen(driver_command(lang, urls, mode, timeout_ms), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        # A run of no call answers once the store is connected: nothing starts before that.
        self.call({"cmd": "run", "calls": 0, "keys": ["ready"], "limit": 1, "window_ms": 1000, "prefix": "ready"}, 120)

    def send(self, cmd: dict) -> None:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def receive(self, limit: float = 600) -> dict:
        ready, _, _ = select.select([self.proc.stdout], [], [], limit)
        if not ready:
            raise RuntimeError(f"{self.lang} driver did not answer within {limit} s")
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.lang} driver exited ({self.proc.wait()})")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{self.lang} driver: {reply['error']}")
        return reply

    def call(self, cmd: dict, limit: float = 600) -> dict:
        self.send(cmd)
        return self.receive(limit)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send({"cmd": "quit"})
                self.proc.wait(10)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def wait_until(what: str, check, limit: float = 30, every: float = 0.1) -> None:
    deadline = time.monotonic() + limit
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"never: {what}")
        time.sleep(every)


class Cluster:
    """`masters` masters with `replicas` replicas each, every node behind one fault proxy: each
    node announces its proxy port (`cluster-announce-port`), so clients reach the cluster only
    through the proxy while the nodes' bus stays direct."""

    def __init__(self, proxy_binary: str, masters: int = 3, replicas: int = 1):
        count = masters * (1 + replicas)
        self.listen = [free_port() for _ in range(count)]
        args = ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000",
                "--cluster-require-full-coverage", "no", "--cluster-announce-ip", "127.0.0.1")
        self.nodes = []
        for q in self.listen:
            node = Redis(args + ("--cluster-announce-port", str(q), "--cluster-announce-bus-port", "{bus}"),
                         with_bus=True)
            self.nodes.append(node)
        self.proxy = None
        try:
            self.proxy = Proxy(proxy_binary, [(f"127.0.0.1:{q}", f"127.0.0.1:{n.port}") for q, n in zip(self.listen, self.nodes)])
            create = ["redis-cli", "--cluster", "create", *[f"127.0.0.1:{n.port}" for n in self.nodes],
                      "--cluster-replicas", str(replicas), "--cluster-yes"]
            subprocess.run(create, capture_output=True, timeout=60, check=True)
            wait_until("the cluster is ok", self.ok, 60)
            wait_until("every replica is in sync", self.replicas_linked, 60)
        except BaseException:
            self.cleanup()  # nothing started here outlives a failed start
            raise

    def urls(self) -> str:
        return ",".join(f"redis://127.0.0.1:{q}" for q in self.listen)

    def ok(self) -> bool:
        for n in self.nodes:
            if not n.alive():
                continue
            info = cli(n.port, "cluster", "info", timeout=3)
            if "cluster_state:ok" not in info or "cluster_slots_ok:16384" not in info:
                return False
        return True

    def replicas_linked(self) -> bool:
        for n in self.nodes:
            if n.alive():
                repl = cli(n.port, "info", "replication", timeout=3)
                if "role:slave" in repl and "master_link_status:up" not in repl:
                    return False
        return True

    def masters(self) -> list:
        return [n for n in self.nodes if n.alive() and "role:master" in cli(n.port, "info", "replication", timeout=3)]

    def cleanup(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
        for n in self.nodes:
            n.cleanup()


class Sentinels:
    """A master, its replica and two sentinels (quorum 1) following them as `tkchaos`."""

    SERVICE = "tkchaos"

    def __init__(self):
        self.master = Redis()
        self.replica = Redis(("--replicaof", "127.0.0.1", str(self.master.port)))
        self.sentinels = []
        for _ in range(2):
            port = free_port()
            d = tempfile.mkdtemp(prefix="tk-faults-sentinel-")
            conf = os.path.join(d, "sentinel.conf")
            with open(conf, "w") as f:
                f.write(f"port {port}\nbind 127.0.0.1\ndir {d}\n"
                        f"sentinel monitor {self.SERVICE} 127.0.0.1 {self.master.port} 1\n"
                        f"sentinel down-after-milliseconds {self.SERVICE} 1000\n"
                        f"sentinel failover-timeout {self.SERVICE} 3000\n")
            log = open(os.path.join(d, "log"), "ab")
            proc = subprocess.Popen(["redis-server", conf, "--sentinel"], stdout=log, stderr=log)
            self.sentinels.append((port, proc, d))
        wait_until("the sentinels see the replica and each other", self.ready, 30)

    def ready(self) -> bool:
        for port, _, _ in self.sentinels:
            out = cli(port, "sentinel", "master", self.SERVICE, timeout=3).split("\n")
            fields = dict(zip(out[0::2], out[1::2]))
            if fields.get("num-slaves") != "1" or fields.get("num-other-sentinels") != "1":
                return False
        return "master_link_status:up" in cli(self.replica.port, "info", "replication")

    def urls(self) -> str:
        return ",".join(f"redis://127.0.0.1:{port}" for port, _, _ in self.sentinels)

    def data_nodes(self) -> list:
        return [self.master, self.replica]

    def cleanup(self) -> None:
        for _, proc, d in self.sentinels:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(10)
            shutil.rmtree(d, ignore_errors=True)
        self.master.cleanup()
        self.replica.cleanup()


class ProxiedSentinelMaster:
    """One master behind the fault proxy and one sentinel monitoring the proxy's address, so the
    sentinel hands clients the proxied address (no replica: nothing to fail over to)."""

    SERVICE = "tkprove"

    def __init__(self, proxy_binary: str):
        self.master = Redis()
        self.proxy = Proxy(proxy_binary, [(None, f"127.0.0.1:{self.master.port}")])
        host, port = self.proxy.routes[0].rsplit(":", 1)
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="tk-faults-sentinel-")
        conf = os.path.join(self.dir, "sentinel.conf")
        with open(conf, "w") as f:
            f.write(f"port {self.port}\nbind 127.0.0.1\ndir {self.dir}\n"
                    f"sentinel monitor {self.SERVICE} {host} {port} 1\n"
                    f"sentinel down-after-milliseconds {self.SERVICE} 60000\n")
        log = open(os.path.join(self.dir, "log"), "ab")
        self.proc = subprocess.Popen(["redis-server", conf, "--sentinel"], stdout=log, stderr=log)
        wait_until("the sentinel answers for the master", lambda: port in cli(
            self.port, "sentinel", "get-master-addr-by-name", self.SERVICE, timeout=3), 30)

    def urls(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.proxy.stop()
        self.master.cleanup()
