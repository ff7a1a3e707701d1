"""Replays conformance-vector files through the public Python API.

    python -m throttlekit.conformance [--store memory|redis|redis-cluster|redis-sentinel|sqlite|postgres]
        [--redis-url URL[,URL...]] [--redis-service-name NAME] [--redis-tls-ca FILE]
        [--redis-tls-cert FILE] [--redis-tls-key FILE] [--redis-scripting auto|functions|eval]
        [--sqlite-path FILE] [--postgres-url URL] [--api sync|async] FILE...

The ``--redis-*`` flags are the Rust CLI's: ``--redis-url`` takes one URL (redis), seed nodes
(redis-cluster) or sentinels (redis-sentinel, with ``--redis-service-name``); ``rediss://`` for
TLS, with ``--redis-tls-ca`` naming the CA to trust instead of the system's.

The format is ``conformance-vectors/FORMAT.md``. Each suite gets a fresh limiter (or multi
limiter, or shaper) on a fresh store, driven by a ``ManualClock`` set to every op's ``now``.
Everything goes through the same classes and methods an application uses, so a pass proves
what a Python caller gets, including how bad costs are refused. On Redis the store runs in
deterministic-replay mode (expiry follows ``now``), and each suite gets its own key prefix,
which stands in for a fresh store without flushing anybody's database. On SQLite
(``--sqlite-path``, created if missing) the store runs with ``sweep=False`` (expiry follows only
``now``, as on Redis's replay mode) and each suite gets its own key prefix too. On Postgres
(``--postgres-url``, default ``$THROTTLEKIT_POSTGRES_URL``) expiry follows ``now`` as it is, and
each suite gets its own key prefix too; its keys are reset after it.

HTTP vectors files (``conformance-vectors/http/*.json``, recognised by their top-level
``"format": "throttlekit-http/1"``) are replayed too: header cases through core's JSON entry
point, client key cases through it and through ``ClientIdentity``. Adaptive concurrency files
(``conformance-vectors/adaptive/*.json``, ``"format": "throttlekit-adaptive/1"``) are replayed by
``throttlekit.conformance_adaptive``.

Prints one line per mismatch (suite id, op index, expected, got) and ends with
``N passed, M failed``; the exit status is 0 only when M is 0 (2 when a file is malformed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Union

from throttlekit import (
    ClientIdentity,
    Decision,
    Dimension,
    Limiter,
    ManualClock,
    MemoryStore,
    MultiDecision,
    MultiLimiter,
    Reservation,
    Shaper,
    Strategy,
    ThrottleKitError,
)
from throttlekit._throttlekit import http_client_key_json, http_headers_json
from throttlekit.conformance_adaptive import FORMAT as ADAPTIVE_FORMAT
from throttlekit.conformance_adaptive import replay_adaptive

_FILE_FIELDS = {"contractVersion", "generatedFrom", "frozen", "decisionFields", "note", "description", "suites"}
_SUITE_FIELDS = {
    "id", "name", "comment", "primitive", "strategy", "shaper", "rule", "dimensions",
    "key", "keys", "prefix", "expectError", "ops",
}
_DIMENSION_FIELDS = {"name", "strategy", "costMultiplier"}
_SHAPER_FIELDS = {"ratePerSec", "maxQueueMs"}
_OP_FIELDS = {"now", "op", "cost", "key", "keys", "expect", "expectError", "comment"}
_DECISION_FIELDS = {"allowed", "limit", "remaining", "resetAt", "retryAfterMs"}
_EXPECT_FIELDS = {
    "rateLimit": _DECISION_FIELDS,
    "multi": _DECISION_FIELDS | {"binding"},
    "shaper": {"accepted", "delayMs"},
}
_OPS = {
    "rateLimit": {"check", "peek", "forecast", "reset"},
    "multi": {"check", "reset"},
    "shaper": {"reserve", "reset"},
}
_DEFAULT_OP = {"rateLimit": "check", "multi": "check", "shaper": "reserve"}

Target = Union[Limiter, MultiLimiter, Shaper]
Result = Union[Decision, MultiDecision, Reservation, None]


class VectorFormatError(ValueError):
    """A vectors file does not follow FORMAT.md (an unknown field, a missing one, a bad value)."""


def _check_fields(obj: Any, allowed: set[str], where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise VectorFormatError(f"{where}: expected an object, got {type(obj).__name__}")
    unknown = set(obj) - allowed
    if unknown:
        raise VectorFormatError(f"{where}: unknown field(s) {sorted(unknown)}")
    return obj


def _as_dict(result: Result) -> dict[str, Any]:
    """The fields `expect` may name, in the vectors' spelling."""
    if isinstance(result, Decision):
        return result.to_dict()
    if isinstance(result, MultiDecision):
        return {**result.decision.to_dict(), "binding": result.binding}
    if isinstance(result, Reservation):
        return {"accepted": result.accepted, "delayMs": result.delay_ms}
    return {}


@dataclass
class Report:
    """Counts per op (plus one per expectError suite) and the mismatch lines."""

    passed: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)

    def ok(self) -> None:
        self.passed += 1

    def fail(self, line: str) -> None:
        self.failed += 1
        self.failures.append(line)

    def merge(self, other: Report) -> None:
        self.passed += other.passed
        self.failed += other.failed
        self.failures.extend(other.failures)


# The runner's --store names and the RedisStore mode each stands for (sqlite and postgres: their
# own stores).
_STORE_MODES = {
    "memory": None,
    "redis": "standalone",
    "redis-cluster": "cluster",
    "redis-sentinel": "sentinel",
    "sqlite": None,
    "postgres": None,
}


class StoreFactory:
    """Fresh stores for suites: a new MemoryStore each, or one Redis, SQLite or Postgres store
    under fresh prefixes."""

    def __init__(
        self,
        kind: str = "memory",
        redis_url: str | None = None,
        sqlite_path: str | None = None,
        postgres_url: str | None = None,
        **redis_options: Any,
    ) -> None:
        """`kind` is memory, a Redis store (redis, redis-cluster or redis-sentinel), sqlite (with
        `sqlite_path`) or postgres (with `postgres_url` or $THROTTLEKIT_POSTGRES_URL). The keyword
        arguments are `RedisStore`'s connection options (`tls_ca_file=...`)."""
        if kind not in _STORE_MODES:
            raise ValueError(f"store must be one of {', '.join(_STORE_MODES)}, not {kind!r}")
        self.kind = kind if kind in ("memory", "sqlite", "postgres") else "redis"
        self._shared: Any = None
        self._run = uuid.uuid4().hex[:12]
        self._suites = 0
        if self.kind == "sqlite":
            from throttlekit import SqliteStore

            if sqlite_path is None:
                raise ValueError("the sqlite store needs sqlite_path")
            self._shared = SqliteStore(sqlite_path, sweep=False)
        if self.kind == "postgres":
            from throttlekit import PostgresStore

            url = postgres_url or os.environ.get("THROTTLEKIT_POSTGRES_URL")
            if not url:
                raise ValueError("--store postgres needs --postgres-url URL (or $THROTTLEKIT_POSTGRES_URL)")
            # 30 s to connect and per call: a replay checks decisions, not latency, and both
            # bounds cover new connections' logins (a SCRAM exchange, a backend forked), which a
            # loaded machine held past the defaults (3 s, 1 s), failing the run.
            self._shared = PostgresStore(url, sweep_interval_ms=0, timeout_ms=30_000, connect_timeout_ms=30_000)
        if self.kind == "redis":
            from throttlekit import RedisStore

            url = redis_url or os.environ.get("THROTTLEKIT_REDIS_URL", "redis://127.0.0.1:6379")
            self._shared = RedisStore(url, mode=_STORE_MODES[kind], deterministic_replay=True, **redis_options)

    def new(self, prefix: str) -> tuple[Any, str]:
        """A store for one suite and the prefix to use on it."""
        if self._shared is None:
            return MemoryStore(), prefix
        self._suites += 1
        isolated = f"tkconf:{self._run}:{self._suites}"
        return self._shared, f"{isolated}:{prefix}" if prefix else isolated


def _build(suite: dict[str, Any], primitive: str, store: Any, prefix: str, clock: ManualClock) -> Target:
    if primitive == "rateLimit":
        return Limiter(Strategy.from_dict(suite["strategy"]), store=store, clock=clock, prefix=prefix)
    if primitive == "shaper":
        options = _check_fields(suite.get("shaper"), _SHAPER_FIELDS, "shaper")
        return Shaper(options["ratePerSec"], options["maxQueueMs"], store=store, clock=clock, prefix=prefix)
    dims = []
    for i, d in enumerate(suite.get("dimensions") or []):
        d = _check_fields(d, _DIMENSION_FIELDS, f"dimensions[{i}]")
        dims.append(Dimension(d["name"], Strategy.from_dict(d["strategy"]), cost_multiplier=d.get("costMultiplier", 1)))
    return MultiLimiter(suite["rule"], dims, store=store, clock=clock, prefix=prefix)


def _call(target: Target, op: str, key: Any, cost: Any, use_async: bool) -> Callable[[], Any]:
    """The API call an op stands for, as a thunk (sync result, or an awaitable to run)."""
    suffix = "" if use_async else "_sync"
    if op == "reset":
        return lambda: getattr(target, "reset" + suffix)(key)
    if op == "peek":
        return lambda: getattr(target, "peek" + suffix)(key)
    name = {"check": "check", "forecast": "forecast", "reserve": "reserve"}[op]
    return lambda: getattr(target, name + suffix)(key, cost)


def _run(thunk: Callable[[], Any], use_async: bool, loop: asyncio.AbstractEventLoop | None) -> Any:
    if not use_async:
        return thunk()
    assert loop is not None
    return loop.run_until_complete(_invoke(thunk))


async def _invoke(thunk: Callable[[], Awaitable[Any]]) -> Any:
    # Called inside the loop: the awaitables need a running event loop when they are created.
    return await thunk()


def replay_suite(
    suite: Any,
    index: int,
    stores: StoreFactory,
    use_async: bool = False,
    loop: asyncio.AbstractEventLoop | None = None,
) -> Report:
    """Replays one suite; raises VectorFormatError when it is malformed."""
    report = Report()
    suite = _check_fields(suite, _SUITE_FIELDS, f"suites[{index}]")
    sid = suite.get("id") or suite.get("name") or f"suites[{index}]"
    primitive = suite.get("primitive", "rateLimit")
    if primitive not in _OPS:
        raise VectorFormatError(f"{sid}: unknown primitive {primitive!r}")
    ops = suite.get("ops")
    if not isinstance(ops, list):
        raise VectorFormatError(f"{sid}: ops must be a list")
    for i, op in enumerate(ops):
        op = _check_fields(op, _OP_FIELDS, f"{sid} op {i}")
        name = op.get("op", _DEFAULT_OP[primitive])
        if name not in _OPS[primitive]:
            raise VectorFormatError(f"{sid} op {i}: op {name!r} does not apply to {primitive}")
        if "now" not in op:
            raise VectorFormatError(f"{sid} op {i}: now is required")
        if "expect" in op:
            _check_fields(op["expect"], _EXPECT_FIELDS[primitive], f"{sid} op {i} expect")

    clock = ManualClock(0)
    store, prefix = stores.new(suite.get("prefix", ""))
    try:
        target = _build(suite, primitive, store, prefix, clock)
    except ThrottleKitError as e:
        if suite.get("expectError") == e.code:
            report.ok()
        else:
            for i in range(max(1, len(ops))):
                report.fail(f"{sid} op {i}: building failed: {type(e).__name__}: {e}")
        return report
    if "expectError" in suite:
        report.fail(f"{sid}: building should fail with {suite['expectError']}, but succeeded")
        return report

    key_field = "keys" if primitive == "multi" else "key"
    used_keys = []
    for i, op in enumerate(ops):
        clock.set(op["now"])
        name = op.get("op", _DEFAULT_OP[primitive])
        key = op.get(key_field, suite.get(key_field))
        used_keys.append(key)
        thunk = _call(target, name, key, op.get("cost", 1), use_async)
        try:
            got = _run(thunk, use_async, loop)
        except ThrottleKitError as e:
            if op.get("expectError") == e.code:
                report.ok()
            else:
                report.fail(f"{sid} op {i}: expected {op.get('expect')}, got {type(e).__name__}: {e}")
            continue
        if "expectError" in op:
            report.fail(f"{sid} op {i}: expected error {op['expectError']}, got {_as_dict(got)}")
            continue
        expect = op.get("expect") or {}
        fields = _as_dict(got)
        mismatched = {k: fields.get(k) for k, v in expect.items() if fields.get(k) != v}
        if mismatched:
            report.fail(f"{sid} op {i} ({name} at {op['now']}): expected {expect}, got {fields}")
        else:
            report.ok()
    if stores.kind != "memory":  # leave nothing behind on a shared server
        for key in {json.dumps(k) for k in used_keys}:
            target.reset_sync(json.loads(key))
    return report


def replay(
    data: Any,
    stores: StoreFactory | None = None,
    use_async: bool = False,
) -> Report:
    """Replays a parsed vectors file (a dict) and returns the report."""
    stores = stores or StoreFactory()
    data = _check_fields(data, _FILE_FIELDS, "file")
    suites = data.get("suites")
    if not isinstance(suites, list):
        raise VectorFormatError("file: suites must be a list")
    report = Report()
    loop = asyncio.new_event_loop() if use_async else None
    try:
        for index, suite in enumerate(suites):
            report.merge(replay_suite(suite, index, stores, use_async, loop))
    finally:
        if loop is not None:
            loop.close()
    return report


HTTP_FORMAT = "throttlekit-http/1"
_HTTP_FILE_FIELDS = {"format", "description", "headerCases", "clientKeyCases"}
_HTTP_CASE_FIELDS = {"id", "comment", "request", "expect", "expectError"}
# ClientKeyOptions' JSON names and ClientIdentity's keyword arguments.
_IDENTITY_ARGS = {"trustedProxies": "trusted_proxies", "ipv6Prefix": "ipv6_prefix",
                  "forwardedHeader": "forwarded_header"}


def _http_outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", call()
    except ThrottleKitError as e:
        return "error", e.code


def _client_key_by_identity(request: dict[str, Any]) -> Any:
    """The key through the middleware's own path: ``ClientIdentity(...).key(peer, headers)``."""
    options = request.get("options", {})
    unknown = set(options) - set(_IDENTITY_ARGS)
    if unknown:  # Not expressible as keywords: the JSON path alone decides such a case.
        return None
    identity = ClientIdentity(**{_IDENTITY_ARGS[k]: v for k, v in options.items()})
    return identity.key(request["peer"], [tuple(h) for h in request.get("headers", [])])


def replay_http(data: Any) -> Report:
    """Replays an HTTP vectors file (``"format": "throttlekit-http/1"``, FORMAT.md).

    Header cases go through core's JSON entry point (the middleware renders a decision it has
    just made, so it cannot be handed a recorded one). Client key cases go through it and
    through ``ClientIdentity``, the middleware's path; both must give the expected key or code.
    """
    data = _check_fields(data, _HTTP_FILE_FIELDS, "file")
    if data.get("format") != HTTP_FORMAT:
        raise VectorFormatError(f"file: format must be {HTTP_FORMAT}")
    report = Report()
    for kind in ("headerCases", "clientKeyCases"):
        for i, case in enumerate(data.get(kind, [])):
            case = _check_fields(case, _HTTP_CASE_FIELDS, f"{kind}[{i}]")
            if ("expect" in case) == ("expectError" in case):
                raise VectorFormatError(f"{kind}[{i}]: needs exactly one of expect, expectError")
            want = ("ok", case["expect"]) if "expect" in case else ("error", case["expectError"])
            text = json.dumps(case["request"])
            if kind == "headerCases":
                got = [_http_outcome(lambda: json.loads(http_headers_json(text)))]
            else:
                got = [_http_outcome(lambda: http_client_key_json(text))]
                by_identity = _http_outcome(lambda: _client_key_by_identity(case["request"]))
                if by_identity != ("ok", None):
                    got.append(by_identity)
            bad = [g for g in got if g != want]
            if bad:
                report.fail(f"{kind} {case['id']}: expected {want[1]!r}, got {bad[0][1]!r} ({bad[0][0]})")
            else:
                report.ok()
    return report


def replay_files(paths: Iterable[str], stores: StoreFactory, use_async: bool = False) -> Report:
    """Replays every file in `paths` (decision vectors, or HTTP vectors recognised by `format`)."""
    report = Report()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        try:
            if isinstance(data, dict) and data.get("format") == HTTP_FORMAT:
                report.merge(replay_http(data))
            elif isinstance(data, dict) and data.get("format") == ADAPTIVE_FORMAT:
                report.merge(replay_adaptive(data))
            else:
                report.merge(replay(data, stores, use_async))
        except VectorFormatError as e:
            raise VectorFormatError(f"{path}: {e}") from None
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m throttlekit.conformance", description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=tuple(_STORE_MODES), default="memory")
    parser.add_argument(
        "--redis-url", default=None,
        help="one URL, or comma-separated seed nodes / sentinels (default: $THROTTLEKIT_REDIS_URL or redis://127.0.0.1:6379)",
    )
    parser.add_argument("--redis-service-name", default=None, help="the Sentinel service (redis-sentinel)")
    parser.add_argument("--redis-tls-ca", default=None, help="PEM CA file to trust (rediss:// URLs)")
    parser.add_argument("--redis-tls-cert", default=None, help="PEM client certificate (mutual TLS)")
    parser.add_argument("--redis-tls-key", default=None, help="PEM client key (mutual TLS)")
    parser.add_argument("--redis-scripting", choices=("auto", "functions", "eval"), default=None)
    parser.add_argument("--sqlite-path", default=None, help="the SQLite file (sqlite; created if missing)")
    parser.add_argument("--postgres-url", default=None, help="postgres://... (default: $THROTTLEKIT_POSTGRES_URL)")
    parser.add_argument("--api", choices=("sync", "async"), default="sync", help="the *_sync methods or the awaitables")
    parser.add_argument("files", nargs="+", metavar="FILE")
    args = parser.parse_args(argv)
    try:
        if args.store == "sqlite" and args.sqlite_path is None:
            parser.error("--store sqlite needs --sqlite-path FILE")
        stores = StoreFactory(
            args.store,
            args.redis_url,
            sqlite_path=args.sqlite_path,
            postgres_url=args.postgres_url,
            **{
                name: value
                for name, value in (
                    ("service_name", args.redis_service_name),
                    ("tls_ca_file", args.redis_tls_ca),
                    ("tls_cert_file", args.redis_tls_cert),
                    ("tls_key_file", args.redis_tls_key),
                    ("scripting", args.redis_scripting),
                )
                if value is not None
            },
        )
        report = replay_files(args.files, stores, args.api == "async")
    except (VectorFormatError, OSError, json.JSONDecodeError, ThrottleKitError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for line in report.failures:
        print(line)
    print(f"{report.passed} passed, {report.failed} failed")
    return 0 if report.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
