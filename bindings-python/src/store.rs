//! Stores: `MemoryStore` (in process) and `RedisStore` (atomic across a fleet).
//!
//! A store object is shared by every limiter, multi limiter and shaper it is handed to (keys are
//! namespaced by their prefixes). `RedisStore` also carries the per-deployment defaults that
//! belong with the connection — whether to read time from the Redis server and what to answer
//! when Redis is unreachable — which a limiter may override.

use std::sync::Arc;

use pyo3::prelude::*;
use throttlekit::{FailPolicy, MemoryLimits, Store};

use crate::error::{self, IntoPyResult};
use crate::validate::{self, MaxKeyLength, MaxKeys};

/// An in-process store: sharded, expiring on the limiter's clock, bounded by default.
#[pyclass(frozen, module = "throttlekit")]
pub struct MemoryStore {
    inner: Arc<throttlekit::MemoryStore>,
}

#[pymethods]
impl MemoryStore {
    /// A store holding about `max_keys` keys at most (least recently used keys are evicted
    /// beyond that; `None`: no bound) and refusing full keys longer than `max_key_length`
    /// bytes with `ConfigInvalidError`. The defaults are core's `MemoryLimits`.
    #[new]
    #[pyo3(signature = (*, max_keys = MaxKeys(MemoryLimits::DEFAULT_MAX_KEYS), max_key_length = MaxKeyLength(MemoryLimits::DEFAULT_MAX_KEY_LENGTH)))]
    #[pyo3(text_signature = "(*, max_keys=917504, max_key_length=256)")]
    fn new(max_keys: MaxKeys, max_key_length: MaxKeyLength) -> PyResult<Self> {
        let limits = MemoryLimits { max_keys: max_keys.0, max_key_length: max_key_length.0 };
        Ok(MemoryStore { inner: Arc::new(throttlekit::MemoryStore::with_limits(limits).py()?) })
    }

    /// The number of keys held (expired keys not yet swept included).
    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Live keys evicted to stay within `max_keys` since the store was made: when it climbs,
    /// the bound is too small for the traffic.
    #[getter]
    fn evictions(&self) -> u64 {
        self.inner.evictions()
    }

    fn __repr__(&self) -> String {
        format!("MemoryStore(len={})", self.inner.len())
    }
}

/// What a limiter takes from its `store=` argument.
pub struct StoreArg {
    /// The store itself.
    pub store: Arc<dyn Store>,
    /// The store's default for `server_clock`.
    pub server_clock: bool,
    /// The store's default fail policy, if it sets one.
    pub fail_policy: Option<FailPolicy>,
}

/// Runs a blocking call `f` with the GIL released when `io` (its store's [`StoreArg::does_io`]):
/// the one place a `*_sync` method decides whether to let other Python threads run meanwhile.
#[inline]
pub fn blocking<T: Send>(py: Python<'_>, io: bool, f: impl FnOnce() -> T + Send) -> T {
    if io { py.detach(f) } else { f() }
}

impl StoreArg {
    /// Whether a blocking call on this store waits on I/O, so releases the GIL meanwhile: every
    /// store but the in-process one. Not `!Store::is_sync()`, which says whether the sync
    /// methods exist: a `RedisStore`'s do, and block on Redis. Holding the GIL through them kept
    /// every other Python thread from running, and from starting its own call, for as long as
    /// a call waited (up to its timeout: a second thread's call then took twice it, issue #19).
    pub fn does_io(&self) -> bool {
        self.store.as_memory().is_none()
    }

    /// Applies a limiter's overrides to the store's defaults.
    pub fn settings(
        &self,
        server_clock: Option<&Bound<'_, PyAny>>,
        fail_policy: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(bool, Option<FailPolicy>)> {
        let server_clock = match server_clock {
            Some(v) if !v.is_none() => validate::flag(v, "server_clock")?,
            _ => self.server_clock,
        };
        let fail_policy = match fail_policy {
            Some(v) if !v.is_none() => Some(validate::fail_policy(v)?),
            _ => self.fail_policy,
        };
        Ok((server_clock, fail_policy))
    }
}

/// The `store=` argument: `None` (a fresh `MemoryStore`), a `MemoryStore`, a `RedisStore` or a
/// `SqliteStore` or a `PostgresStore`.
pub fn from_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<StoreArg> {
    let fresh =
        || StoreArg { store: Arc::new(throttlekit::MemoryStore::new()), server_clock: false, fail_policy: None };
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(fresh()) };
    if let Ok(m) = obj.cast::<MemoryStore>() {
        return Ok(StoreArg { store: m.get().inner.clone(), server_clock: false, fail_policy: None });
    }
    #[cfg(feature = "redis")]
    if let Ok(r) = obj.cast::<redis::RedisStore>() {
        return Ok(r.get().arg());
    }
    #[cfg(feature = "sqlite")]
    if let Ok(s) = obj.cast::<crate::sqlite_store::SqliteStore>() {
        return Ok(s.get().arg());
    }
    #[cfg(feature = "postgres")]
    if let Ok(p) = obj.cast::<crate::postgres::PostgresStore>() {
        return Ok(p.get().arg());
    }
    Err(error::wrong_type("store", "a MemoryStore, a RedisStore, a SqliteStore, a PostgresStore or None", obj))
}

#[cfg(feature = "redis")]
pub use redis::RedisStore;

#[cfg(feature = "redis")]
mod redis {
    use super::*;
    use throttlekit::redis::RedisOptions;

    /// A Redis store: every decision is one atomic script call on the server, so a fleet of
    /// processes shares each limit exactly.
    #[pyclass(frozen, module = "throttlekit")]
    pub struct RedisStore {
        inner: Arc<throttlekit::redis::RedisStore>,
        url: String,
        server_clock: bool,
        fail_policy: Option<FailPolicy>,
    }

    impl RedisStore {
        pub(super) fn arg(&self) -> StoreArg {
            StoreArg { store: self.inner.clone(), server_clock: self.server_clock, fail_policy: self.fail_policy }
        }
    }

    /// The keyword arguments of `RedisStore(...)` that are core's connection options.
    struct Connection<'a, 'py> {
        urls: &'a Bound<'py, PyAny>,
        mode: Option<&'a Bound<'py, PyAny>>,
        service_name: Option<&'a Bound<'py, PyAny>>,
        tls_ca_file: Option<&'a Bound<'py, PyAny>>,
        tls_cert_file: Option<&'a Bound<'py, PyAny>>,
        tls_key_file: Option<&'a Bound<'py, PyAny>>,
        scripting: Option<&'a Bound<'py, PyAny>>,
        timeout_ms: Option<&'a Bound<'py, PyAny>>,
        deterministic_replay: Option<&'a Bound<'py, PyAny>>,
        durable_replicas: Option<&'a Bound<'py, PyAny>>,
        durable_timeout_ms: Option<&'a Bound<'py, PyAny>>,
        sentinel_password: Option<&'a Bound<'py, PyAny>>,
        sentinel_username: Option<&'a Bound<'py, PyAny>>,
    }

    /// A `str` or an `os.PathLike` (a TLS file option).
    fn path(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<std::path::PathBuf> {
        obj.extract::<std::path::PathBuf>().map_err(|_| error::wrong_type(arg, "a str or an os.PathLike", obj))
    }

    use validate::given;

    impl Connection<'_, '_> {
        /// The one place Python's arguments become core's `RedisOptions` (`docs/redis.md`):
        /// same names, types checked here, every value and combination checked by core.
        fn options(&self) -> PyResult<RedisOptions> {
            use throttlekit::redis::{RedisMode, Scripting, split_urls};
            let urls = match self.urls.cast::<pyo3::types::PyString>() {
                Ok(s) => split_urls(s.to_str()?),
                Err(_) if self.urls.try_iter().is_err() || self.urls.is_instance_of::<pyo3::types::PyBytes>() => {
                    return Err(error::wrong_type("urls", "a str or a list of str", self.urls));
                }
                Err(_) => validate::strings(self.urls, "urls")?,
            };
            let mut o = RedisOptions { urls, ..RedisOptions::default() };
            if let Some(m) = given(self.mode) {
                o.mode = RedisMode::parse(validate::string(m, "mode")?).py()?;
            }
            if let Some(n) = given(self.service_name) {
                o.service_name = Some(validate::string(n, "service_name")?.to_owned());
            }
            if let Some(f) = given(self.tls_ca_file) {
                o.tls_ca_file = Some(path(f, "tls_ca_file")?);
            }
            if let Some(f) = given(self.tls_cert_file) {
                o.tls_cert_file = Some(path(f, "tls_cert_file")?);
            }
            if let Some(f) = given(self.tls_key_file) {
                o.tls_key_file = Some(path(f, "tls_key_file")?);
            }
            if let Some(s) = given(self.scripting) {
                o.scripting = Scripting::parse(validate::string(s, "scripting")?).py()?;
            }
            if let Some(t) = given(self.timeout_ms) {
                o.timeout_ms = validate::count(t, "timeout_ms")?;
            }
            if let Some(d) = given(self.deterministic_replay) {
                o.deterministic_replay = validate::flag(d, "deterministic_replay")?;
            }
            if let Some(n) = given(self.durable_replicas) {
                // Past u32, core's "at most 64" is the message that applies.
                o.durable_replicas = u32::try_from(validate::count(n, "durable_replicas")?).unwrap_or(u32::MAX);
            }
            if let Some(t) = given(self.durable_timeout_ms) {
                o.durable_timeout_ms = validate::count(t, "durable_timeout_ms")?;
            }
            if let Some(p) = given(self.sentinel_password) {
                o.sentinel_password = Some(validate::string(p, "sentinel_password")?.to_owned());
            }
            if let Some(u) = given(self.sentinel_username) {
                o.sentinel_username = Some(validate::string(u, "sentinel_username")?.to_owned());
            }
            Ok(o)
        }
    }

    #[pymethods]
    impl RedisStore {
        /// Connects to `urls`: one URL (`redis://[user:password@]host:port/db`, `rediss://` for
        /// TLS, `redis+unix:///path`), or several (a list, or one comma-separated str) for the
        /// seed nodes of a cluster (`mode="cluster"`) or the sentinels (`mode="sentinel"`,
        /// with `service_name`). `tls_ca_file` trusts that CA instead of the system's roots;
        /// `tls_cert_file`/`tls_key_file` are a client certificate (mutual TLS); certificates
        /// and host names are always verified. `scripting` is `"auto"`, `"functions"` or
        /// `"eval"`. `timeout_ms` bounds every call (a call that times out is never retried:
        /// it may have counted). `server_clock` makes limiters read time from Redis (`TIME`)
        /// instead of this host; `fail_policy` (`"fail_closed"`, `"fail_open"` or `"raise"`)
        /// is what limiters answer when Redis is unreachable. `deterministic_replay` makes
        /// expiry follow the callers' `now` (conformance replays). `durable_replicas` makes each
        /// charge durable before it is admitted (that many replicas acknowledge it within
        /// `durable_timeout_ms`, else `StoreUnavailableError`); `sentinel_password` and
        /// `sentinel_username` log in to sentinels that require it. Bad options raise
        /// `ConfigInvalidError` naming the option; an unreachable server or a certificate that
        /// fails verification raises `StoreUnavailableError`.
        #[new]
        #[pyo3(signature = (
            urls, *, mode = None, service_name = None, tls_ca_file = None, tls_cert_file = None,
            tls_key_file = None, scripting = None, timeout_ms = None, server_clock = None,
            fail_policy = None, deterministic_replay = None, durable_replicas = None,
            durable_timeout_ms = None, sentinel_password = None, sentinel_username = None
        ))]
        #[pyo3(
            text_signature = "(urls, *, mode='standalone', service_name=None, tls_ca_file=None, tls_cert_file=None, tls_key_file=None, scripting='auto', timeout_ms=1000, server_clock=False, fail_policy=None, deterministic_replay=False, durable_replicas=0, durable_timeout_ms=100, sentinel_password=None, sentinel_username=None)"
        )]
        #[allow(clippy::too_many_arguments)] // Python keyword arguments, one per option.
        fn new(
            py: Python<'_>,
            urls: &Bound<'_, PyAny>,
            mode: Option<&Bound<'_, PyAny>>,
            service_name: Option<&Bound<'_, PyAny>>,
            tls_ca_file: Option<&Bound<'_, PyAny>>,
            tls_cert_file: Option<&Bound<'_, PyAny>>,
            tls_key_file: Option<&Bound<'_, PyAny>>,
            scripting: Option<&Bound<'_, PyAny>>,
            timeout_ms: Option<&Bound<'_, PyAny>>,
            server_clock: Option<&Bound<'_, PyAny>>,
            fail_policy: Option<&Bound<'_, PyAny>>,
            deterministic_replay: Option<&Bound<'_, PyAny>>,
            durable_replicas: Option<&Bound<'_, PyAny>>,
            durable_timeout_ms: Option<&Bound<'_, PyAny>>,
            sentinel_password: Option<&Bound<'_, PyAny>>,
            sentinel_username: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<Self> {
            let options = Connection {
                urls,
                mode,
                service_name,
                tls_ca_file,
                tls_cert_file,
                tls_key_file,
                scripting,
                timeout_ms,
                deterministic_replay,
                durable_replicas,
                durable_timeout_ms,
                sentinel_password,
                sentinel_username,
            }
            .options()?;
            let server_clock = match server_clock.filter(|s| !s.is_none()) {
                Some(s) => validate::flag(s, "server_clock")?,
                None => false,
            };
            let fail_policy = match fail_policy.filter(|f| !f.is_none()) {
                Some(f) => Some(validate::fail_policy(f)?),
                None => None,
            };
            let url = options.urls.join(",");
            let store = py.detach(|| throttlekit::redis::RedisStore::connect_blocking(options)).py()?;
            {
                // The runtime that drives the awaitables (`aio.rs`; multi-threaded, IO and timers
                // enabled) gets a connection driven on it: an awaited call then never crosses to
                // the store's own runtime. Best effort: the store's connections serve until it
                // is up (and the sync methods never use it). A cluster store gives it a
                // connection to each master instead (made as calls first reach that master);
                // a Sentinel store, whose calls follow the master, ignores this.
                let _context = pyo3_async_runtimes::tokio::get_runtime().enter();
                let _ = store.bind_current_runtime();
            }
            Ok(RedisStore { inner: Arc::new(store), url, server_clock, fail_policy })
        }

        /// `"standalone"`, `"cluster"` or `"sentinel"`.
        #[getter]
        fn mode(&self) -> &'static str {
            self.inner.options().mode.as_str()
        }

        /// The URL it was opened with (the URLs, comma-separated, when there are several).
        #[getter]
        fn url(&self) -> &str {
            &self.url
        }

        /// Closes the connections (awaitable). Later calls fail with `store_unavailable`.
        fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
            let store = self.inner.clone();
            crate::aio::awaitable(py, async move { store.close().await.py().map(|()| crate::none()) })
        }

        /// Closes the connections, blocking.
        fn close_sync(&self, py: Python<'_>) -> PyResult<()> {
            let store = self.inner.clone();
            py.detach(|| pyo3_async_runtimes::tokio::get_runtime().block_on(store.close())).py()
        }

        fn __repr__(&self) -> String {
            // The URL may carry a password: keep it out of logs.
            "RedisStore(...)".to_owned()
        }
    }
}
