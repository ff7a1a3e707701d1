//! [`MultiLimiter`]: several named dimensions decided atomically under `all` or `any` — the
//! core's `MultiLimiter`.

use std::sync::Arc;

use napi::Env;
use napi::bindgen_prelude::{PromiseRaw, Unknown};
use napi_derive::napi;
use throttlekit::Rule;

use crate::convert::{self, Options};
use crate::decision::MultiDecision;
use crate::error::{CoreResult, OrThrow, Settled, config, settle};
use crate::limiter::WIRING;
use crate::store;
use crate::strategy;

/// One dimension of a `MultiLimiter`.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // Declares the TypeScript shape; `convert::Options` reads the values.
pub struct DimensionOptions {
    /// The dimension's name (unique, non-empty; part of its keys).
    pub name: String,
    /// Its algorithm.
    #[napi(ts_type = "Strategy | StrategySpec")]
    pub strategy: serde_json::Value,
    /// Its cost per unit of request cost (integer >= 1, default 1).
    pub cost_multiplier: Option<f64>,
}

/// Options of `new MultiLimiter()`.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // Declares the TypeScript shape; `convert::Options` reads the values.
pub struct MultiLimiterOptions {
    /// `'all'`: every dimension must allow, then all commit, else none does. `'any'`: one
    /// allowing dimension suffices, and only the allowing ones commit.
    #[napi(ts_type = "'all' | 'any'")]
    pub rule: String,
    /// The dimensions, in the order `keys` are given to `check`.
    pub dimensions: Vec<DimensionOptions>,
    /// Where state lives (default: a new `MemoryStore`).
    #[napi(ts_type = "MemoryStore | RedisStore | PostgresStore | SqliteStore")]
    pub store: Option<serde_json::Value>,
    /// The clock (default: the system clock).
    #[napi(ts_type = "ManualClock")]
    pub clock: Option<serde_json::Value>,
    /// Namespaces every key (default: none).
    pub prefix: Option<String>,
    /// Promise methods read Redis's clock instead of this process's.
    pub server_clock: Option<bool>,
    /// What `store_unavailable` turns into (default: the store's setting, else `'raise'`).
    #[napi(ts_type = "FailPolicy")]
    pub fail_policy: Option<String>,
    /// Redis Cluster hash tag shared by all keys of this limiter (default: the prefix, or `tk`).
    pub hash_tag: Option<String>,
    /// Keep counters of this limiter's checks (their combined decisions), read with
    /// `metrics()` (default: false).
    pub metrics: Option<bool>,
    /// The two-tier mode: `'strict'` (default), `'cachedDeny'` (a request's denial answered
    /// locally until its retry) or `'leased'` (credits per dimension key, a request admitted
    /// locally only when every dimension holds credits; docs/leasing.md).
    #[napi(ts_type = "'strict' | 'cachedDeny' | 'leased'")]
    pub mode: Option<String>,
    /// The leased mode's options (`lowWater` must be 0 on a multi limiter).
    pub lease: Option<crate::limiter::LeaseOptions>,
}

/// Several dimensions (per IP, per user, ...) decided together in one atomic step.
#[napi]
pub struct MultiLimiter {
    pub(crate) inner: Arc<throttlekit::MultiLimiter>,
    /// Its store when index.js carries its Promise calls (transport.rs).
    #[cfg_attr(test, allow(dead_code))] // Read by transport.rs's exports only (see there).
    pub(crate) redis: store::RedisSlot,
}

fn dimension(env: &Env, v: &Unknown, field: &str) -> CoreResult<throttlekit::Dimension> {
    let o = Options::read(v, field, &["name", "strategy", "costMultiplier"], false)?;
    let name = o.string("name")?.ok_or_else(|| config(&o.path("name"), "is required"))?;
    let strategy = strategy::from_js(env, o.require("strategy")?, &o.path("strategy"))?;
    let mut d = throttlekit::Dimension::new(name, strategy);
    if let Some(m) = o.number("costMultiplier")? {
        let m = throttlekit::validate::integer_at_least(&o.path("costMultiplier"), m, 1.0)?;
        d = d.cost_multiplier(m as u64);
    }
    Ok(d)
}

fn build(env: &Env, options: &Unknown) -> CoreResult<(throttlekit::MultiLimiter, store::RedisSlot)> {
    let mut allowed = vec!["rule", "dimensions", "hashTag", "metrics", "mode", "lease"];
    allowed.extend(WIRING);
    let o = Options::read(options, "multiLimiter", &allowed, false)?;
    let rule = match o.string("rule")?.as_deref() {
        Some("all") => Rule::All,
        Some("any") => Rule::Any,
        _ => return Err(config(&o.path("rule"), "must be 'all' or 'any'")),
    };
    let dims_path = o.path("dimensions");
    let dims = convert::array(o.require("dimensions")?, &dims_path)?
        .iter()
        .enumerate()
        .map(|(i, d)| dimension(env, d, &format!("{dims_path}[{i}]")))
        .collect::<CoreResult<Vec<_>>>()?;
    let mode = crate::limiter::mode_from_options(&o)?;
    let chosen = store::from_options(env, &o)?;
    // A tier answers in core: its Promise calls take core's async path, not index.js's socket.
    let redis = if mode == throttlekit::Mode::Strict { chosen.redis } else { None };
    let mut m = throttlekit::MultiLimiter::new(rule, dims)?.with_store(chosen.store);
    if let Some(clock) = store::clock_from_options(env, &o)? {
        m = m.with_clock(clock);
    }
    if let Some(prefix) = o.string("prefix")? {
        m = m.with_prefix(prefix);
    }
    if let Some(on) = o.boolean("serverClock")?.or(chosen.server_clock) {
        m = m.with_server_clock(on);
    }
    if let Some(p) = store::fail_policy_from_options(&o)?.or(chosen.fail_policy) {
        m = m.with_fail_policy(p);
    }
    if let Some(tag) = o.string("hashTag")? {
        m = m.with_hash_tag(tag)?;
    }
    // After the prefix: the metrics are labelled with it.
    if let Some(on) = o.boolean("metrics")? {
        m = m.with_metrics(on);
    }
    Ok((m.with_mode(mode)?, redis))
}

#[napi]
impl MultiLimiter {
    /// A multi-dimensional limiter; see `MultiLimiterOptions`.
    #[napi(constructor, ts_args_type = "options: MultiLimiterOptions")]
    pub fn new(env: &Env, options: Unknown) -> napi::Result<MultiLimiter> {
        let (inner, redis) = build(env, &options).or_throw(env)?;
        Ok(MultiLimiter { inner: Arc::new(inner), redis })
    }

    /// Checks one request of `cost` (default 1): `keys` holds one key per dimension, in
    /// declaration order.
    #[napi(ts_args_type = "keys: string[], cost?: number")]
    pub fn check_sync(&self, env: &Env, keys: Unknown, cost: Unknown) -> napi::Result<MultiDecision> {
        (|| {
            let cost = convert::cost(&cost)?;
            let keys = convert::strings(&keys, "keys")?;
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            self.inner.check_sync(&keys, cost)
        })()
        .map(MultiDecision::from)
        .or_throw(env)
    }

    /// `checkSync` through the store (Redis: one atomic script, one round trip).
    #[napi(ts_args_type = "keys: string[], cost?: number", ts_return_type = "Promise<MultiDecision>")]
    pub fn check<'e>(
        &self,
        env: &'e Env,
        keys: Unknown,
        cost: Unknown,
    ) -> napi::Result<PromiseRaw<'e, Settled<MultiDecision>>> {
        let args = convert::cost(&cost).and_then(|c| Ok((convert::strings(&keys, "keys")?, c)));
        let inner = self.inner.clone();
        settle(env, args, move |(keys, cost)| async move {
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            inner.check(&keys, cost).await.map(MultiDecision::from)
        })
    }

    /// Forgets every dimension's state for `keys`.
    #[napi(ts_args_type = "keys: string[]")]
    pub fn reset_sync(&self, env: &Env, keys: Unknown) -> napi::Result<()> {
        (|| {
            let keys = convert::strings(&keys, "keys")?;
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            self.inner.reset_sync(&keys)
        })()
        .or_throw(env)
    }

    /// `resetSync` through the store.
    #[napi(ts_args_type = "keys: string[]", ts_return_type = "Promise<void>")]
    pub fn reset<'e>(&self, env: &'e Env, keys: Unknown) -> napi::Result<PromiseRaw<'e, Settled<()>>> {
        let keys = convert::strings(&keys, "keys");
        let inner = self.inner.clone();
        settle(env, keys, move |keys| async move {
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            inner.reset(&keys).await
        })
    }

    /// The counters (see `LimiterMetrics`: each check's combined decision), or `null` unless
    /// made with `metrics: true`. Every check is counted once, whichever way it goes (sync or
    /// Promise, memory or Redis, the event loop's own socket included).
    #[napi]
    pub fn metrics(&self) -> Option<crate::metrics::LimiterMetrics> {
        crate::metrics::of(self.inner.metrics())
    }

    /// The dimension names, in declaration order.
    #[napi(getter)]
    pub fn dimension_names(&self) -> Vec<String> {
        self.inner.dimensions().iter().map(|d| d.name.clone()).collect()
    }

    /// The two-tier mode: `'strict'`, `'cachedDeny'` or `'leased'`.
    #[napi(getter, ts_return_type = "'strict' | 'cachedDeny' | 'leased'")]
    pub fn mode(&self) -> &'static str {
        crate::limiter::mode_name(self.inner.mode())
    }

    /// The local tier's counters (all 0 in strict mode): `localAdmits` and `localDenials`
    /// count requests answered locally, `leases` fused lease calls.
    #[napi]
    pub fn tier_stats(&self) -> crate::limiter::TierStats {
        crate::limiter::tier_stats(self.inner.tier_stats())
    }

    /// Gives back the leased credits of dimension keys unused for `idleMs` (every key when left
    /// out, as on shutdown) where the dimension can take them back; resolves to the units.
    #[napi(ts_args_type = "idleMs?: number", ts_return_type = "Promise<number>")]
    pub fn release_leases<'e>(&self, env: &'e Env, idle_ms: Unknown) -> napi::Result<PromiseRaw<'e, Settled<f64>>> {
        let idle =
            if convert::is_undefined(&idle_ms) { Ok(None) } else { convert::epoch_ms(&idle_ms, "idleMs").map(Some) };
        let inner = self.inner.clone();
        settle(env, idle, move |idle| async move { inner.release_leases(idle).await.map(|n| n as f64) })
    }
}
