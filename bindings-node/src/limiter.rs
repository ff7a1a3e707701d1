//! [`Limiter`]: a strategy bound to a store, a clock and a key prefix — the core's `Limiter`.
//!
//! Sync methods (`checkSync`, ...) run in the calling thread and are meant for the in-process
//! store (on Redis they block the event loop for a round trip). The Promise methods run on napi's
//! Tokio runtime; on a `RedisStore`, index.js replaces them with the same calls written on its
//! own socket (transport.rs), so Redis I/O never blocks the event loop either way.
//! Invalid arguments to a Promise method reject (they never throw synchronously).

use std::cell::OnceCell;
use std::sync::Arc;

use napi::Env;
use napi::bindgen_prelude::{PromiseRaw, Unknown};
use napi_derive::napi;

use crate::convert::{self, Options};
use crate::decision::Decision;
use crate::error::{CoreResult, OrThrow, Settled, settle};
use crate::handles::{self, Registration};
use crate::metrics::LimiterMetrics;
use crate::store;
use crate::strategy::{self, Strategy};

/// What a limiter does when its store cannot answer (`store_unavailable`): deny with
/// `fallback: true` (the default for quotas), allow with `fallback: true`, or throw.
#[napi(string_enum)]
pub enum FailPolicy {
    #[napi(value = "fail_closed")]
    FailClosed,
    #[napi(value = "fail_open")]
    FailOpen,
    #[napi(value = "raise")]
    Raise,
}

/// Options of `new Limiter()`.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // Declares the TypeScript shape; `convert::Options` reads the values.
pub struct LimiterOptions {
    /// The algorithm: a `Strategy`, or a spec object such as
    /// `{kind: 'gcra', options: {limit: 100, periodMs: 60000}}`.
    #[napi(ts_type = "Strategy | StrategySpec")]
    pub strategy: serde_json::Value,
    /// Where state lives (default: a new `MemoryStore`).
    #[napi(ts_type = "MemoryStore | RedisStore | PostgresStore | SqliteStore")]
    pub store: Option<serde_json::Value>,
    /// The clock (default: the system clock).
    #[napi(ts_type = "ManualClock")]
    pub clock: Option<serde_json::Value>,
    /// Namespaces every key as `prefix:key` (default: none).
    pub prefix: Option<String>,
    /// Promise methods read Redis's clock (`TIME`) instead of this process's (default: the
    /// store's setting, else false).
    pub server_clock: Option<bool>,
    /// What `store_unavailable` turns into (default: the store's setting, else
    /// `'fail_closed'` for quotas and `'raise'` otherwise).
    #[napi(ts_type = "FailPolicy")]
    pub fail_policy: Option<String>,
    /// Keep counters of this limiter's checks, read with `metrics()` (default: false, and then
    /// they cost nothing but a branch).
    pub metrics: Option<bool>,
    /// The two-tier mode for hot keys: `'strict'` (default), `'cachedDeny'` or `'leased'`
    /// (docs/leasing.md).
    #[napi(ts_type = "'strict' | 'cachedDeny' | 'leased'")]
    pub mode: Option<String>,
    /// The leased mode's options (giving them alone means `mode: 'leased'`).
    pub lease: Option<LeaseOptions>,
}

/// The leased mode's options; defaults `batch` 100, `lowWater` 0, `windowCoupled` false,
/// `maxKeys` 10000.
#[napi(object)]
pub struct LeaseOptions {
    /// Units leased per round trip (the asking request's included).
    pub batch: Option<f64>,
    /// Refill when a spend leaves this many credits or fewer.
    pub low_water: Option<f64>,
    /// Credits expire at the fixed window's reset: exactly `limit` per window.
    pub window_coupled: Option<bool>,
    /// Keys the local tier holds credits for at once.
    pub max_keys: Option<f64>,
}

/// The local tier's counters (a multi limiter's count requests and fused lease calls).
#[napi(object)]
pub struct TierStats {
    pub local_admits: f64,
    pub local_denials: f64,
    pub leases: f64,
    pub late_credits_dropped: f64,
    pub credits_returned: f64,
}

/// The tier's counters for JavaScript.
pub(crate) fn tier_stats(s: throttlekit::lease::TierStats) -> TierStats {
    TierStats {
        local_admits: s.local_admits as f64,
        local_denials: s.local_denials as f64,
        leases: s.leases as f64,
        late_credits_dropped: s.late_credits_dropped as f64,
        credits_returned: s.credits_returned as f64,
    }
}

/// A mode's name as JavaScript spells it.
pub(crate) fn mode_name(m: throttlekit::Mode) -> &'static str {
    match m {
        throttlekit::Mode::Strict => "strict",
        throttlekit::Mode::CachedDeny { .. } => "cachedDeny",
        throttlekit::Mode::Leased(_) => "leased",
    }
}

/// `mode` and `lease` from a limiter's options (parsing and checks are core's).
pub(crate) fn mode_from_options(o: &Options<'_>) -> CoreResult<throttlekit::Mode> {
    let lease = match o.get("lease") {
        Some(v) => {
            let l = Options::read(v, &o.path("lease"), &["batch", "lowWater", "windowCoupled", "maxKeys"], false)?;
            Some(throttlekit::LeaseOptions::from_fields(
                l.number("batch")?,
                l.number("lowWater")?,
                l.boolean("windowCoupled")?,
                l.number("maxKeys")?,
            )?)
        }
        None => None,
    };
    match (o.string("mode")?, lease) {
        (None, None) => Ok(throttlekit::Mode::Strict),
        (None, Some(l)) => Ok(throttlekit::Mode::Leased(l)),
        (Some(m), l) => throttlekit::Mode::parse(&m, l.unwrap_or_default()),
    }
}

pub(crate) const WIRING: [&str; 5] = ["store", "clock", "prefix", "serverClock", "failPolicy"];

/// A rate limiter: one strategy applied per key.
#[napi]
pub struct Limiter {
    pub(crate) inner: Arc<throttlekit::Limiter>,
    /// Its store when index.js carries its Promise calls (transport.rs).
    #[cfg_attr(test, allow(dead_code))] // Read by transport.rs's exports only (see there).
    pub(crate) redis: store::RedisSlot,
    /// Its `PostgresStore`'s socket route when index.js carries its Promise calls
    /// (postgres_socket.rs).
    #[cfg(feature = "postgres")]
    #[cfg_attr(test, allow(dead_code))]
    pub(crate) postgres: Option<Arc<crate::postgres_socket::Socket>>,
    /// This limiter's entry in its environment's handle table, made by the first `checkSync`
    /// (see handles.rs); dropping the `Limiter` frees it.
    handle: OnceCell<Registration>,
    /// This limiter's entry in its environment's table of Redis limiters (redis_fast.rs), made
    /// by its first Promise call over index.js's socket.
    #[cfg(feature = "redis")]
    redis_handle: OnceCell<Registration<RedisLimiter>>,
}

/// What the Promise path over index.js's socket finds by handle (redis_fast.rs): the core
/// limiter and the store whose socket carries its calls.
#[cfg(feature = "redis")]
pub(crate) struct RedisLimiter {
    pub inner: Arc<throttlekit::Limiter>,
    pub redis: crate::transport::RedisRef,
}

impl Limiter {
    /// The handle of this limiter in `table`, registering it on first use.
    pub(crate) fn handle(&self, table: &handles::Shared) -> CoreResult<f64> {
        handles::handle_in(&self.handle, table, || self.inner.clone())
    }

    /// The handle of this limiter in `table` of Redis limiters, registering it on first use;
    /// `None` when index.js does not carry its calls (no `RedisStore`, or a tier).
    #[cfg(feature = "redis")]
    pub(crate) fn redis_handle(&self, table: &handles::Shared<RedisLimiter>) -> CoreResult<Option<f64>> {
        let Some(redis) = &self.redis else { return Ok(None) };
        let entry = || Arc::new(RedisLimiter { inner: self.inner.clone(), redis: redis.clone() });
        handles::handle_in(&self.redis_handle, table, entry).map(Some)
    }
}

/// The limiter, and its store when index.js carries its Promise calls (on Redis, and on
/// Postgres).
type Built = (throttlekit::Limiter, store::RedisSlot, PostgresSlot);

#[cfg(feature = "postgres")]
type PostgresSlot = Option<Arc<crate::postgres_socket::Socket>>;
#[cfg(not(feature = "postgres"))]
type PostgresSlot = ();

/// The socket route of a limiter on a `PostgresStore` in strict mode (a tier answers in core).
#[cfg(feature = "postgres")]
fn postgres_slot(env: &Env, o: &Options, mode: &throttlekit::Mode) -> CoreResult<PostgresSlot> {
    let Some(v) = o.get("store") else { return Ok(None) };
    if *mode != throttlekit::Mode::Strict {
        return Ok(None);
    }
    Ok(crate::instance::<crate::postgres::PostgresStore>(env, v, &o.path("store"))?.and_then(|p| p.socket()))
}

#[cfg(not(feature = "postgres"))]
fn postgres_slot(_: &Env, _: &Options, _: &throttlekit::Mode) -> CoreResult<PostgresSlot> {
    Ok(())
}

fn build(env: &Env, options: &Unknown) -> CoreResult<Built> {
    let mut allowed = vec!["strategy"];
    allowed.extend(WIRING);
    allowed.extend(["metrics", "mode", "lease"]);
    let o = Options::read(options, "limiter", &allowed, false)?;
    let strategy = strategy::from_js(env, o.require("strategy")?, &o.path("strategy"))?;
    let chosen = store::from_options(env, &o)?;
    let mode = mode_from_options(&o)?;
    // A tier answers in core: its Promise calls take core's async path, not index.js's socket.
    let redis = if mode == throttlekit::Mode::Strict { chosen.redis } else { None };
    let postgres = postgres_slot(env, &o, &mode)?;
    let mut b = throttlekit::Limiter::builder(strategy).store(chosen.store);
    if let Some(clock) = store::clock_from_options(env, &o)? {
        b = b.clock(clock);
    }
    if let Some(prefix) = o.string("prefix")? {
        b = b.prefix(prefix);
    }
    if let Some(on) = o.boolean("serverClock")?.or(chosen.server_clock) {
        b = b.server_clock(on);
    }
    if let Some(p) = store::fail_policy_from_options(&o)?.or(chosen.fail_policy) {
        b = b.fail_policy(p);
    }
    if let Some(on) = o.boolean("metrics")? {
        b = b.metrics(on);
    }
    Ok((b.mode(mode)?.build(), redis, postgres))
}

#[napi]
impl Limiter {
    /// A limiter; see `LimiterOptions`. Bad options throw `config_invalid`.
    #[napi(constructor, ts_args_type = "options: LimiterOptions")]
    pub fn new(env: &Env, options: Unknown) -> napi::Result<Limiter> {
        let (inner, redis, _postgres) = build(env, &options).or_throw(env)?;
        Ok(Limiter {
            inner: Arc::new(inner),
            redis,
            #[cfg(feature = "postgres")]
            postgres: _postgres,
            handle: OnceCell::new(),
            #[cfg(feature = "redis")]
            redis_handle: OnceCell::new(),
        })
    }

    /// Checks (and, when allowed, consumes) `cost` units (default 1) for `key`, synchronously.
    /// The fast path of the in-process store. On a `RedisStore` it works but holds the event
    /// loop for a whole round trip: use `check` there.
    #[napi(ts_args_type = "key: string, cost?: number")]
    pub fn check_sync(&self, env: &Env, key: Unknown, cost: Unknown) -> napi::Result<Decision> {
        convert::cost(&cost)
            .and_then(|c| convert::with_str(&key, "key", |k| self.inner.check_sync(k, c)))
            .map(Decision::from)
            .or_throw(env)
    }

    /// `checkSync` through the store's asynchronous path (Redis: one round trip).
    #[napi(ts_args_type = "key: string, cost?: number", ts_return_type = "Promise<Decision>")]
    pub fn check<'e>(
        &self,
        env: &'e Env,
        key: Unknown,
        cost: Unknown,
    ) -> napi::Result<PromiseRaw<'e, Settled<Decision>>> {
        let args = convert::key_and_cost(&key, &cost);
        let inner = self.inner.clone();
        settle(env, args, move |(key, cost)| async move { inner.check(&key, cost).await.map(Decision::from) })
    }

    /// Checks one request of `cost` per key, all at one clock reading (each key on its own,
    /// not atomically together).
    #[napi(ts_args_type = "keys: string[], cost?: number")]
    pub fn check_many_sync(&self, env: &Env, keys: Unknown, cost: Unknown) -> napi::Result<Vec<Decision>> {
        (|| {
            let cost = convert::cost(&cost)?;
            let keys = convert::strings(&keys, "keys")?;
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            self.inner.check_many_sync(&keys, cost)
        })()
        .map(|ds| ds.into_iter().map(Decision::from).collect())
        .or_throw(env)
    }

    /// `checkManySync` through the store (Redis: sent together, pipelined).
    #[napi(ts_args_type = "keys: string[], cost?: number", ts_return_type = "Promise<Decision[]>")]
    pub fn check_many<'e>(
        &self,
        env: &'e Env,
        keys: Unknown,
        cost: Unknown,
    ) -> napi::Result<PromiseRaw<'e, Settled<Vec<Decision>>>> {
        let args = convert::cost(&cost).and_then(|c| Ok((convert::strings(&keys, "keys")?, c)));
        let inner = self.inner.clone();
        settle(env, args, move |(keys, cost)| async move {
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            inner.check_many(&keys, cost).await.map(|ds| ds.into_iter().map(Decision::from).collect())
        })
    }

    /// Current capacity of `key`, consuming nothing: `allowed` says whether a cost-1 request
    /// would pass, `remaining` how many units would.
    #[napi(ts_args_type = "key: string")]
    pub fn peek_sync(&self, env: &Env, key: Unknown) -> napi::Result<Decision> {
        convert::with_str(&key, "key", |k| self.inner.peek_sync(k)).map(Decision::from).or_throw(env)
    }

    /// `peekSync` through the store.
    #[napi(ts_args_type = "key: string", ts_return_type = "Promise<Decision>")]
    pub fn peek<'e>(&self, env: &'e Env, key: Unknown) -> napi::Result<PromiseRaw<'e, Settled<Decision>>> {
        let key = convert::string(&key, "key");
        let inner = self.inner.clone();
        settle(env, key, move |key| async move { inner.peek(&key).await.map(Decision::from) })
    }

    /// The decision a check of `cost` would get now, consuming nothing.
    #[napi(ts_args_type = "key: string, cost?: number")]
    pub fn forecast_sync(&self, env: &Env, key: Unknown, cost: Unknown) -> napi::Result<Decision> {
        convert::cost(&cost)
            .and_then(|c| convert::with_str(&key, "key", |k| self.inner.forecast_sync(k, c)))
            .map(Decision::from)
            .or_throw(env)
    }

    /// `forecastSync` through the store.
    #[napi(ts_args_type = "key: string, cost?: number", ts_return_type = "Promise<Decision>")]
    pub fn forecast<'e>(
        &self,
        env: &'e Env,
        key: Unknown,
        cost: Unknown,
    ) -> napi::Result<PromiseRaw<'e, Settled<Decision>>> {
        let args = convert::key_and_cost(&key, &cost);
        let inner = self.inner.clone();
        settle(env, args, move |(key, cost)| async move { inner.forecast(&key, cost).await.map(Decision::from) })
    }

    /// Forgets `key`'s state.
    #[napi(ts_args_type = "key: string")]
    pub fn reset_sync(&self, env: &Env, key: Unknown) -> napi::Result<()> {
        convert::with_str(&key, "key", |k| self.inner.reset_sync(k)).or_throw(env)
    }

    /// `resetSync` through the store.
    #[napi(ts_args_type = "key: string", ts_return_type = "Promise<void>")]
    pub fn reset<'e>(&self, env: &'e Env, key: Unknown) -> napi::Result<PromiseRaw<'e, Settled<()>>> {
        let key = convert::string(&key, "key");
        let inner = self.inner.clone();
        settle(env, key, move |key| async move { inner.reset(&key).await })
    }

    /// Closes the store's connections (a shared store is closed for every limiter using it).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'e>(&self, env: &'e Env) -> napi::Result<PromiseRaw<'e, Settled<()>>> {
        let inner = self.inner.clone();
        env.spawn_future(async move { Ok(Settled(inner.close().await)) })
    }

    /// The two-tier mode: `'strict'`, `'cachedDeny'` or `'leased'`.
    #[napi(getter, ts_return_type = "'strict' | 'cachedDeny' | 'leased'")]
    pub fn mode(&self) -> &'static str {
        mode_name(self.inner.mode())
    }

    /// The local tier's counters (all 0 in strict mode).
    #[napi]
    pub fn tier_stats(&self) -> TierStats {
        tier_stats(self.inner.tier_stats())
    }

    /// Gives back the leased credits of keys unused for `idleMs` (every key when left out, as
    /// `close()` does) where the strategy can take them back; resolves to the units taken back.
    #[napi(ts_args_type = "idleMs?: number", ts_return_type = "Promise<number>")]
    pub fn release_leases<'e>(&self, env: &'e Env, idle_ms: Unknown) -> napi::Result<PromiseRaw<'e, Settled<f64>>> {
        let idle =
            if convert::is_undefined(&idle_ms) { Ok(None) } else { convert::epoch_ms(&idle_ms, "idleMs").map(Some) };
        let inner = self.inner.clone();
        settle(env, idle, move |idle| async move { inner.release_leases(idle).await.map(|n| n as f64) })
    }

    /// The strategy.
    #[napi(getter)]
    pub fn strategy(&self) -> Strategy {
        Strategy { inner: self.inner.strategy().clone() }
    }

    /// The counters (see `LimiterMetrics`), or `null` unless made with `metrics: true`. Every
    /// call is counted once, whichever way it goes (sync or Promise, memory or Redis, the event
    /// loop's own socket or a cluster's).
    #[napi]
    pub fn metrics(&self) -> Option<LimiterMetrics> {
        crate::metrics::of(self.inner.metrics())
    }

    /// The key prefix (`''` for none).
    #[napi(getter)]
    pub fn prefix(&self) -> String {
        self.inner.prefix().to_owned()
    }

    /// The fail policy in effect.
    #[napi(getter)]
    pub fn fail_policy(&self) -> FailPolicy {
        match self.inner.fail_policy() {
            throttlekit::FailPolicy::FailClosed => FailPolicy::FailClosed,
            throttlekit::FailPolicy::FailOpen => FailPolicy::FailOpen,
            throttlekit::FailPolicy::Raise => FailPolicy::Raise,
        }
    }
}
