//! [`MemoryStore`], and reading a limiter's `store` option (a `MemoryStore`, a `RedisStore`, a
//! `PostgresStore` or a `SqliteStore`).

use std::sync::Arc;

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi_derive::napi;
use throttlekit::{FailPolicy, MemoryLimits, Store};

use crate::convert::Options;
use crate::error::{CoreResult, OrThrow, config};

/// An in-process store: sharded, bounded by default, expiring on the limiter's clock. Share
/// one between limiters (keys are namespaced by each limiter's `prefix`).
#[napi]
pub struct MemoryStore {
    pub(crate) inner: Arc<throttlekit::MemoryStore>,
}

/// Options of `new MemoryStore()`.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // Declares the TypeScript shape; `convert::Options` reads the values.
pub struct MemoryStoreOptions {
    /// Keep at most about this many keys, evicting the least recently used (integer >= 1, or
    /// `Infinity` for no bound; default 917504, about 110 MB). Expired keys are swept either way.
    pub max_keys: Option<f64>,
    /// Refuse full keys (`prefix:key`) longer than this many bytes with `config_invalid`
    /// (integer >= 1, or `Infinity`; default 256).
    pub max_key_length: Option<f64>,
}

/// A bound option: `undefined` is core's default, `Infinity` no bound, else an integer >= 1.
fn bound(o: &Options<'_>, name: &str, default: usize) -> throttlekit::Result<usize> {
    match o.number(name)? {
        None => Ok(default),
        Some(n) if n == f64::INFINITY => Ok(usize::MAX),
        Some(n) => Ok(throttlekit::validate::integer_at_least(&format!("memoryStore.{name}"), n, 1.0)? as usize),
    }
}

#[napi]
impl MemoryStore {
    /// A new, empty store.
    #[napi(constructor, ts_args_type = "options?: MemoryStoreOptions")]
    pub fn new(env: &Env, options: Unknown) -> napi::Result<MemoryStore> {
        let inner = (|| {
            let o = Options::read(&options, "memoryStore", &["maxKeys", "maxKeyLength"], true)?;
            throttlekit::MemoryStore::with_limits(MemoryLimits {
                max_keys: bound(&o, "maxKeys", MemoryLimits::DEFAULT_MAX_KEYS)?,
                max_key_length: bound(&o, "maxKeyLength", MemoryLimits::DEFAULT_MAX_KEY_LENGTH)?,
            })
        })()
        .or_throw(env)?;
        Ok(MemoryStore { inner: Arc::new(inner) })
    }

    /// How many keys the store holds (expired ones included until swept).
    #[napi(getter)]
    pub fn size(&self) -> u32 {
        u32::try_from(self.inner.len()).unwrap_or(u32::MAX)
    }

    /// Live keys evicted to stay within `maxKeys` since the store was made: when it climbs,
    /// the bound is too small for the traffic.
    #[napi(getter)]
    pub fn evictions(&self) -> f64 {
        self.inner.evictions() as f64
    }
}

/// A `RedisStore` whose Promise calls index.js carries on its own socket (transport.rs).
#[cfg(feature = "redis")]
pub(crate) type RedisSlot = Option<crate::transport::RedisRef>;
/// Without Redis there is none.
#[cfg(not(feature = "redis"))]
pub(crate) type RedisSlot = Option<std::convert::Infallible>;

/// A store chosen by a limiter's options, with the defaults the store suggests for the
/// limiter (a `RedisStore` may carry `serverClock` and `failPolicy`).
pub(crate) struct Chosen {
    pub store: Arc<dyn Store>,
    /// The same store when it is a `RedisStore` whose Promise calls index.js carries on its own
    /// socket (not in deterministic-replay mode), with the store's number (see transport.rs).
    pub redis: RedisSlot,
    pub server_clock: Option<bool>,
    pub fail_policy: Option<FailPolicy>,
}

/// Reads a `store` option: absent means a fresh `MemoryStore`.
pub(crate) fn from_options(env: &Env, o: &Options) -> CoreResult<Chosen> {
    let Some(v) = o.get("store") else {
        return Ok(Chosen {
            store: Arc::new(throttlekit::MemoryStore::new()),
            redis: None,
            server_clock: None,
            fail_policy: None,
        });
    };
    let path = o.path("store");
    if let Some(m) = crate::instance::<MemoryStore>(env, v, &path)? {
        return Ok(Chosen { store: m.inner.clone(), redis: None, server_clock: None, fail_policy: None });
    }
    #[cfg(feature = "redis")]
    if let Some(r) = crate::instance::<crate::redis::RedisStore>(env, v, &path)? {
        return Ok(r.chosen());
    }
    #[cfg(feature = "postgres")]
    if let Some(p) = crate::instance::<crate::postgres::PostgresStore>(env, v, &path)? {
        return Ok(p.chosen());
    }
    #[cfg(feature = "sqlite")]
    if let Some(s) = crate::instance::<crate::sqlite::SqliteStore>(env, v, &path)? {
        return Ok(s.chosen());
    }
    Err(config(&path, "must be a MemoryStore, a RedisStore, a PostgresStore or a SqliteStore"))
}

/// Reads a `clock` option: a `ManualClock`, or absent for the system clock.
pub(crate) fn clock_from_options(env: &Env, o: &Options) -> CoreResult<Option<Arc<dyn throttlekit::Clock>>> {
    let Some(v) = o.get("clock") else { return Ok(None) };
    let path = o.path("clock");
    match crate::instance::<crate::clock::ManualClock>(env, v, &path)? {
        Some(c) => Ok(Some(Arc::new(c.inner.clone()))),
        None => Err(config(&path, "must be a ManualClock (omit it for the system clock)")),
    }
}

/// Reads a `failPolicy` option (`'fail_closed'`, `'fail_open'` or `'raise'`).
pub(crate) fn fail_policy_from_options(o: &Options) -> CoreResult<Option<FailPolicy>> {
    o.string("failPolicy")?
        .map(|s| {
            FailPolicy::parse(&s)
                .map_err(|_| config(&o.path("failPolicy"), "must be 'fail_closed', 'fail_open' or 'raise'"))
        })
        .transpose()
}
