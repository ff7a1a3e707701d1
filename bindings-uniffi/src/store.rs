//! Stores: `MemoryStore` (in process) and `RedisStore` (atomic across a fleet), and `Store`,
//! the one argument type that names any store (the SQL stores are `sql`'s).
//!
//! A store object is shared by every limiter, multi limiter and shaper it is handed to (keys are
//! namespaced by their prefixes). `RedisStore` also carries the per-deployment defaults that
//! belong with the connection — whether to read time from the Redis server and what to answer
//! when Redis is unreachable — which a limiter may override.

use std::sync::Arc;

use throttlekit::redis::RedisOptions;

use crate::error::Result;

/// What a limiter answers when its store cannot (connection refused, timeout).
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
pub enum FailPolicy {
    /// Deny, with `fallback = true` on the decision (the default for quotas).
    FailClosed,
    /// Allow, with `fallback = true` on the decision (availability over accuracy).
    FailOpen,
    /// Fail with `store_unavailable` (the default for other strategies).
    Raise,
}

impl From<FailPolicy> for throttlekit::FailPolicy {
    fn from(p: FailPolicy) -> Self {
        match p {
            FailPolicy::FailClosed => throttlekit::FailPolicy::FailClosed,
            FailPolicy::FailOpen => throttlekit::FailPolicy::FailOpen,
            FailPolicy::Raise => throttlekit::FailPolicy::Raise,
        }
    }
}

impl From<throttlekit::FailPolicy> for FailPolicy {
    fn from(p: throttlekit::FailPolicy) -> Self {
        match p {
            throttlekit::FailPolicy::FailClosed => FailPolicy::FailClosed,
            throttlekit::FailPolicy::FailOpen => FailPolicy::FailOpen,
            throttlekit::FailPolicy::Raise => FailPolicy::Raise,
        }
    }
}

/// An in-process store: sharded, expiring on the limiter's clock, optionally bounded.
#[derive(uniffi::Object)]
pub struct MemoryStore {
    inner: Arc<throttlekit::MemoryStore>,
}

#[uniffi::export]
impl MemoryStore {
    /// An in-process store holding at most about `max_keys` keys (least recently used keys are
    /// evicted beyond that) whose full keys (`prefix:key`) are at most `max_key_length` bytes
    /// (longer is `config_invalid`). `null` takes core's default for either (917,504 keys, 256
    /// bytes: bounded by default); `Long.MAX_VALUE` lifts a bound.
    #[uniffi::constructor(default(max_keys = None, max_key_length = None))]
    pub fn new(max_keys: Option<i64>, max_key_length: Option<i64>) -> Result<Arc<Self>> {
        let bound = |v: Option<i64>, default: usize, name: &str| match v {
            None => Ok(default),
            Some(n) if n >= 1 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
            Some(_) => Err(crate::ThrottleKitError::config(name, "must be >= 1")),
        };
        let limits = throttlekit::MemoryLimits {
            max_keys: bound(max_keys, throttlekit::MemoryLimits::DEFAULT_MAX_KEYS, "max_keys")?,
            max_key_length: bound(max_key_length, throttlekit::MemoryLimits::DEFAULT_MAX_KEY_LENGTH, "max_key_length")?,
        };
        Ok(Arc::new(MemoryStore { inner: Arc::new(throttlekit::MemoryStore::with_limits(limits)?) }))
    }

    /// How many live keys the store has evicted to stay within its bound since it was made:
    /// when it climbs, the bound is too small for the traffic.
    pub fn evictions(&self) -> u64 {
        self.inner.evictions()
    }

    /// The number of keys held (expired keys not yet swept included). A `Long`, not an
    /// unsigned type, so Java can call it.
    pub fn len(&self) -> i64 {
        i64::try_from(self.inner.len()).unwrap_or(i64::MAX)
    }

    /// Whether it holds no key.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }
}

/// How to reach Redis and the defaults limiters on this store take. The connection options are
/// core's `RedisOptions` under the same names (`docs/redis.md`); core validates them.
#[derive(Clone, Debug, uniffi::Record)]
pub struct RedisStoreOptions {
    /// Longest wait for any one call (connecting included), ms; past it the call fails with
    /// `store_unavailable` and is never retried (it may have counted). `null`: 1000.
    #[uniffi(default = None)]
    pub timeout_ms: Option<i64>,
    /// Limiters read time from Redis (`TIME`) instead of this host.
    #[uniffi(default = false)]
    pub server_clock: bool,
    /// What limiters answer when Redis is unreachable (`null`: fail-closed for quotas, raise
    /// otherwise).
    #[uniffi(default = None)]
    pub fail_policy: Option<FailPolicy>,
    /// Expire keys on the callers' clock instead of Redis's (conformance replays and tests
    /// only: it serialises every call).
    #[uniffi(default = false)]
    pub deterministic_replay: bool,
    /// `"standalone"` (one node), `"cluster"` (the URLs are seed nodes) or `"sentinel"` (the
    /// URLs are sentinels; set `service_name`). `null`: standalone.
    #[uniffi(default = None)]
    pub mode: Option<String>,
    /// The Sentinel service whose master to use (sentinel mode only).
    #[uniffi(default = None)]
    pub service_name: Option<String>,
    /// A PEM file of CAs to trust for `rediss://` instead of the system roots.
    #[uniffi(default = None)]
    pub tls_ca_file: Option<String>,
    /// A PEM client certificate for mutual TLS (with `tls_key_file`).
    #[uniffi(default = None)]
    pub tls_cert_file: Option<String>,
    /// The PEM private key of `tls_cert_file`.
    #[uniffi(default = None)]
    pub tls_key_file: Option<String>,
    /// `"auto"` (Redis Functions where the server allows them, else scripts), `"functions"` or
    /// `"eval"`. `null`: auto.
    #[uniffi(default = None)]
    pub scripting: Option<String>,
    /// Make each charge durable before admitting it: this many replicas (0–64) must acknowledge
    /// the call's writes within `durable_timeout_ms`, else the call fails with
    /// `store_unavailable` and the fail policy decides. `null`: 0, off.
    #[uniffi(default = None)]
    pub durable_replicas: Option<i64>,
    /// How long the server waits for those replicas, ms (>= 1, less than `timeout_ms`).
    /// `null`: 100.
    #[uniffi(default = None)]
    pub durable_timeout_ms: Option<i64>,
    /// Sentinel mode: the password the sentinels themselves require (`requirepass` in
    /// sentinel.conf); the URLs' credentials stay the master's.
    #[uniffi(default = None)]
    pub sentinel_password: Option<String>,
    /// Sentinel mode: the sentinels' ACL user for `sentinel_password` (`null`: their default
    /// user).
    #[uniffi(default = None)]
    pub sentinel_username: Option<String>,
}

/// A Redis store: every decision is one atomic script call on the server, so a fleet of
/// processes shares each limit exactly.
#[derive(uniffi::Object)]
pub struct RedisStore {
    inner: Arc<throttlekit::redis::RedisStore>,
    server_clock: bool,
    fail_policy: Option<throttlekit::FailPolicy>,
}

#[uniffi::export(async_runtime = "tokio")]
impl RedisStore {
    /// Connects to `urls` (`redis://host:port/db`, `rediss://…`, `redis://user:password@host`;
    /// several comma-separated for a cluster's seed nodes or a list of sentinels), blocking until
    /// connected or `store_unavailable`.
    #[uniffi::constructor]
    pub fn connect(urls: String, options: RedisStoreOptions) -> Result<Arc<Self>> {
        let mut core = RedisOptions::from_urls(&urls);
        if let Some(mode) = &options.mode {
            core.mode = throttlekit::redis::RedisMode::parse(mode)?;
        }
        if let Some(scripting) = &options.scripting {
            core.scripting = throttlekit::redis::Scripting::parse(scripting)?;
        }
        core.service_name = options.service_name.clone();
        core.tls_ca_file = options.tls_ca_file.clone().map(Into::into);
        core.tls_cert_file = options.tls_cert_file.clone().map(Into::into);
        core.tls_key_file = options.tls_key_file.clone().map(Into::into);
        if let Some(t) = options.timeout_ms {
            core.timeout_ms =
                u64::try_from(t).map_err(|_| crate::ThrottleKitError::config("timeout_ms", "must be >= 0"))?;
        }
        core.deterministic_replay = options.deterministic_replay;
        if let Some(n) = options.durable_replicas {
            if n < 0 {
                return Err(crate::ThrottleKitError::config("redis.durable_replicas", "must be >= 0"));
            }
            // Past u32, core's "at most 64" is the message that applies.
            core.durable_replicas = u32::try_from(n).unwrap_or(u32::MAX);
        }
        if let Some(t) = options.durable_timeout_ms {
            core.durable_timeout_ms = u64::try_from(t)
                .map_err(|_| crate::ThrottleKitError::config("redis.durable_timeout_ms", "must be >= 0"))?;
        }
        core.sentinel_password = options.sentinel_password.clone();
        core.sentinel_username = options.sentinel_username.clone();
        let store = throttlekit::redis::RedisStore::connect_blocking(core)?;
        Ok(Arc::new(RedisStore {
            inner: Arc::new(store),
            server_clock: options.server_clock,
            fail_policy: options.fail_policy.map(Into::into),
        }))
    }

    /// Closes the connections, blocking. Later calls fail with `store_unavailable`. (Not
    /// `close`: Kotlin objects are `AutoCloseable`, whose `close()` frees the handle.)
    pub fn disconnect_blocking(&self) -> Result<()> {
        crate::sql::close_blocking(&*self.inner)
    }

    /// Closes the connections. Later calls fail with `store_unavailable`.
    pub async fn disconnect(&self) -> Result<()> {
        Ok(throttlekit::Store::close(&*self.inner).await?)
    }
}

/// Which store a limiter, multi limiter or shaper uses.
#[derive(uniffi::Enum)]
pub enum Store {
    /// An in-process store.
    Memory { store: Arc<MemoryStore> },
    /// A Redis store (its `server_clock` and `fail_policy` are the limiter's defaults).
    Redis { store: Arc<RedisStore> },
    /// A Postgres store (its `server_clock` and `fail_policy` are the limiter's defaults).
    Postgres { store: Arc<crate::sql::PostgresStore> },
    /// A SQLite store (its `fail_policy` is the limiter's default).
    Sqlite { store: Arc<crate::sql::SqliteStore> },
}

/// A store as core takes it, with the defaults it carries.
pub struct Resolved {
    /// The store itself.
    pub store: Arc<dyn throttlekit::Store>,
    /// The store's default for `server_clock`.
    pub server_clock: bool,
    /// The store's default fail policy, if it sets one.
    pub fail_policy: Option<throttlekit::FailPolicy>,
}

impl Resolved {
    /// The `store` option: the named store, or a fresh memory store when `null`.
    pub fn from_option(store: Option<&Store>) -> Resolved {
        match store {
            None => {
                Resolved { store: Arc::new(throttlekit::MemoryStore::new()), server_clock: false, fail_policy: None }
            }
            Some(Store::Memory { store }) => {
                Resolved { store: store.inner.clone(), server_clock: false, fail_policy: None }
            }
            Some(Store::Redis { store }) => Resolved {
                store: store.inner.clone(),
                server_clock: store.server_clock,
                fail_policy: store.fail_policy,
            },
            Some(Store::Postgres { store }) => Resolved {
                store: store.inner.clone(),
                server_clock: store.server_clock,
                fail_policy: store.fail_policy,
            },
            Some(Store::Sqlite { store }) => {
                Resolved { store: store.inner.clone(), server_clock: false, fail_policy: store.fail_policy }
            }
        }
    }

    /// Applies a limiter's overrides to the store's defaults.
    pub fn settings(
        &self,
        server_clock: Option<bool>,
        fail_policy: Option<FailPolicy>,
    ) -> (bool, Option<throttlekit::FailPolicy>) {
        (server_clock.unwrap_or(self.server_clock), fail_policy.map(Into::into).or(self.fail_policy))
    }
}
