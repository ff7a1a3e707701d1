"""throttlekit: the Rust rate-limiting core's exact decisions, in-process or atomically over Redis.

Every class here comes from the native module ``throttlekit._throttlekit``; this package only
re-exports it, so ``throttlekit.Limiter`` *is* the core's limiter. Methods ending in ``_sync``
block; their counterparts without the suffix return awaitables (asyncio).

The HTTP middleware lives in submodules, imported on demand so the frameworks stay optional:
``throttlekit.asgi`` (ASGI), ``throttlekit.fastapi`` (a per-route dependency),
``throttlekit.wsgi`` (any WSGI app), ``throttlekit.django`` (a settings-driven middleware and
``@ratelimit``) and ``throttlekit.flask`` (a ``Limiter`` extension); ``throttlekit.http`` holds
the flow they share, ``throttlekit.rules`` the limit strings and store URIs of the last two.
"""

from throttlekit._throttlekit import (
    ERROR_CODES,
    AdaptiveLimiter,
    ClientIdentity,
    ConfigInvalidError,
    ConfigTypeError,
    Decision,
    Dimension,
    HttpDecision,
    HttpLimiter,
    Limiter,
    ManualClock,
    MemoryStore,
    MultiDecision,
    MultiLimiter,
    OperationNotImplementedError,
    Permit,
    QueueFullError,
    RateLimitExceededError,
    Rejection,
    Reservation,
    Shaper,
    StoreUnavailableError,
    Strategy,
    SystemClock,
    ThrottleKitError,
    VirtualClock,
    __version__,
)

try:  # The Redis store is a build option of the native module (on by default).
    from throttlekit._throttlekit import RedisStore
except ImportError:  # pragma: no cover - only in builds without the `redis` feature
    pass

try:  # So is the SQLite store (on by default).
    from throttlekit._throttlekit import SqliteStore
except ImportError:  # pragma: no cover - only in builds without the `sqlite` feature
    pass
try:  # So is the Postgres store.
    from throttlekit._throttlekit import PostgresStore
except ImportError:  # pragma: no cover - only in builds without the `postgres` feature
    pass

__all__ = [
    "ERROR_CODES",
    "AdaptiveLimiter",
    "ClientIdentity",
    "ConfigInvalidError",
    "ConfigTypeError",
    "Decision",
    "Dimension",
    "HttpDecision",
    "HttpLimiter",
    "Limiter",
    "ManualClock",
    "MemoryStore",
    "MultiDecision",
    "MultiLimiter",
    "OperationNotImplementedError",
    "Permit",
    "PostgresStore",
    "QueueFullError",
    "RateLimitExceededError",
    "RedisStore",
    "Rejection",
    "Reservation",
    "Shaper",
    "SqliteStore",
    "StoreUnavailableError",
    "Strategy",
    "SystemClock",
    "ThrottleKitError",
    "VirtualClock",
    "__version__",
]
