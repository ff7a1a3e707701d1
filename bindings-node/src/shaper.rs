//! [`Shaper`]: the leaky bucket as a traffic shaper — the core's `Shaper`. It delays instead
//! of denying: `reserve` says how long to wait, `schedule` waits that long.

use std::sync::Arc;

use napi::Env;
use napi::bindgen_prelude::{PromiseRaw, Unknown};
use napi_derive::napi;
use serde_json::json;

use crate::convert::{self, Options};
use crate::decision::Reservation;
use crate::error::{CoreResult, OrThrow, Settled, config, settle};
use crate::store;

/// Options of `new Shaper()`.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // Declares the TypeScript shape; `convert::Options` reads the values.
pub struct ShaperOptions {
    /// Departures per second (> 0, may be fractional).
    pub rate_per_sec: f64,
    /// Longest accepted wait in ms (>= 0); a longer one is refused.
    pub max_queue_ms: f64,
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
    /// Keep counters of this shaper's reservations (accepted as `allowed`, rejected as
    /// `denied`), read with `metrics()` (default: false).
    pub metrics: Option<bool>,
}

/// A leaky-bucket shaper: spaces requests out at `ratePerSec` per key.
#[napi]
pub struct Shaper {
    pub(crate) inner: Arc<throttlekit::Shaper>,
    /// Its store when index.js carries its Promise calls (transport.rs).
    #[cfg_attr(test, allow(dead_code))] // Read by transport.rs's exports only (see there).
    pub(crate) redis: store::RedisSlot,
}

fn build(env: &Env, options: &Unknown) -> CoreResult<(throttlekit::Shaper, store::RedisSlot)> {
    let o = Options::read(
        options,
        "shaper",
        &["ratePerSec", "maxQueueMs", "store", "clock", "prefix", "serverClock", "metrics"],
        false,
    )?;
    let rate = o.number("ratePerSec")?.ok_or_else(|| config(&o.path("ratePerSec"), "is required"))?;
    let max_queue = o.number("maxQueueMs")?.ok_or_else(|| config(&o.path("maxQueueMs"), "is required"))?;
    // NaN and infinities have no JSON form; the core's validator gives them their message.
    let spec = serde_json::from_value(json!({ "ratePerSec": finite(rate), "maxQueueMs": finite(max_queue) }))
        .map_err(|e| config("shaper", &format!("is not valid: {e}")))?;
    let chosen = store::from_options(env, &o)?;
    let redis = chosen.redis;
    let mut s = throttlekit::Shaper::new(&spec)?.with_store(chosen.store);
    if let Some(clock) = store::clock_from_options(env, &o)? {
        s = s.with_clock(clock);
    }
    if let Some(prefix) = o.string("prefix")? {
        s = s.with_prefix(prefix);
    }
    if let Some(on) = o.boolean("serverClock")?.or(chosen.server_clock) {
        s = s.with_server_clock(on);
    }
    // After the prefix: the metrics are labelled with it.
    if let Some(on) = o.boolean("metrics")? {
        s = s.with_metrics(on);
    }
    Ok((s, redis))
}

/// A non-finite number mapped to one the core rejects with the same words (`-1` is `> 0`'s
/// and `>= 0`'s failure alike), since JSON cannot carry NaN.
fn finite(v: f64) -> f64 {
    if v.is_finite() { v } else { -1.0 }
}

#[napi]
impl Shaper {
    /// A shaper; see `ShaperOptions`.
    #[napi(constructor, ts_args_type = "options: ShaperOptions")]
    pub fn new(env: &Env, options: Unknown) -> napi::Result<Shaper> {
        let (inner, redis) = build(env, &options).or_throw(env)?;
        Ok(Shaper { inner: Arc::new(inner), redis })
    }

    /// Reserves a departure for `cost` units (default 1) of `key` now; in-process stores only.
    #[napi(ts_args_type = "key: string, cost?: number")]
    pub fn reserve_sync(&self, env: &Env, key: Unknown, cost: Unknown) -> napi::Result<Reservation> {
        convert::cost(&cost)
            .and_then(|c| convert::with_str(&key, "key", |k| self.inner.reserve_sync(k, c)))
            .map(Reservation::from)
            .or_throw(env)
    }

    /// `reserveSync` through the store (Redis: one round trip).
    #[napi(ts_args_type = "key: string, cost?: number", ts_return_type = "Promise<Reservation>")]
    pub fn reserve<'e>(
        &self,
        env: &'e Env,
        key: Unknown,
        cost: Unknown,
    ) -> napi::Result<PromiseRaw<'e, Settled<Reservation>>> {
        let args = convert::key_and_cost(&key, &cost);
        let inner = self.inner.clone();
        settle(env, args, move |(key, cost)| async move { inner.reserve(&key, cost).await.map(Reservation::from) })
    }

    /// Reserves, then resolves once the delay has passed (waiting in chunks below the 2^31 − 1
    /// ms timer ceiling, so even very long delays are honoured). A refused reservation rejects
    /// with `queue_full`, carrying `retryAfterMs`.
    #[napi(ts_args_type = "key: string, cost?: number", ts_return_type = "Promise<Reservation>")]
    pub fn schedule<'e>(
        &self,
        env: &'e Env,
        key: Unknown,
        cost: Unknown,
    ) -> napi::Result<PromiseRaw<'e, Settled<Reservation>>> {
        let args = convert::key_and_cost(&key, &cost);
        let inner = self.inner.clone();
        settle(env, args, move |(key, cost)| async move { inner.schedule(&key, cost).await.map(Reservation::from) })
    }

    /// The counters (see `LimiterMetrics`: reservations accepted as `allowed`, rejected as
    /// `denied`), or `null` unless made with `metrics: true`. Every reservation is counted
    /// once, whichever way it goes (sync or Promise, memory or Redis, the event loop's own
    /// socket included).
    #[napi]
    pub fn metrics(&self) -> Option<crate::metrics::LimiterMetrics> {
        crate::metrics::of(self.inner.metrics())
    }

    /// Forgets `key`'s queue.
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
}
