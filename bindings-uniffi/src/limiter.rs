//! `Limiter`: a strategy bound to a store, a clock and a key prefix.
//!
//! Each method converts its arguments, calls the core method of the same name and converts the
//! result. `*_blocking` methods block the calling thread; the others are `async` (Kotlin
//! `suspend` functions), driven by uniffi's tokio support, so a Redis round trip suspends the
//! coroutine instead of holding a thread.

use std::sync::Arc;

use crate::clock::{self, ManualClock};
use crate::convert::refs;
use crate::error::Result;
use crate::records::Decision;
use crate::store::{FailPolicy, Resolved, Store};
use crate::strategy::Strategy;

/// How a limiter is built. Every field is optional.
#[derive(uniffi::Record)]
pub struct LimiterOptions {
    /// The store (`null`: a fresh `MemoryStore` of its own).
    #[uniffi(default = None)]
    pub store: Option<Store>,
    /// A manual clock (`null`: the system clock).
    #[uniffi(default = None)]
    pub clock: Option<Arc<ManualClock>>,
    /// Keys are stored as `prefix:key` (`""`: no prefix).
    #[uniffi(default = "")]
    pub prefix: String,
    /// Read time from Redis instead of this host (`null`: the store's default).
    #[uniffi(default = None)]
    pub server_clock: Option<bool>,
    /// What to answer when the store cannot (`null`: the store's default, else fail-closed for
    /// quotas and raise otherwise).
    #[uniffi(default = None)]
    pub fail_policy: Option<FailPolicy>,
    /// Count checks (allowed, denied, fallbacks, errors by code) and time Redis calls; read
    /// them with `metrics()`. Off by default, and free when off.
    #[uniffi(default = false)]
    pub metrics: bool,
    /// The two-tier mode: `"strict"`, `"cached_deny"` or `"leased"` (`nil`: `"leased"` when
    /// `lease` is given, else `"strict"`); see docs/leasing.md.
    #[uniffi(default = None)]
    pub mode: Option<String>,
    /// The leased mode's options (`nil`: core's defaults).
    #[uniffi(default = None)]
    pub lease: Option<crate::lease::LeaseOptions>,
}

/// A strategy bound to a store, a clock and a key prefix. Thread-safe: share one limiter
/// between threads and coroutines.
#[derive(uniffi::Object)]
pub struct Limiter {
    inner: Arc<throttlekit::Limiter>,
}

impl Limiter {
    /// The core limiter, for the HTTP edge (`http.rs`).
    pub(crate) fn core(&self) -> &throttlekit::Limiter {
        &self.inner
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Limiter {
    /// A limiter for `strategy` with `options`; `config_invalid` for a bad mode or lease option.
    #[uniffi::constructor]
    pub fn new(strategy: Arc<Strategy>, options: LimiterOptions) -> Result<Arc<Self>> {
        let mode = crate::lease::mode(options.mode.as_deref(), options.lease.as_ref())?;
        let store = Resolved::from_option(options.store.as_ref());
        let (server_clock, fail_policy) = store.settings(options.server_clock, options.fail_policy);
        let mut builder = throttlekit::Limiter::builder(strategy.inner.clone())
            .store(store.store)
            .clock(clock::from_option(options.clock.as_ref()))
            .server_clock(server_clock)
            .prefix(options.prefix)
            .metrics(options.metrics)
            .mode(mode)?;
        if let Some(policy) = fail_policy {
            builder = builder.fail_policy(policy);
        }
        Ok(Arc::new(Limiter { inner: Arc::new(builder.build()) }))
    }

    /// The two-tier mode: `"strict"`, `"cached_deny"` or `"leased"`.
    pub fn mode(&self) -> String {
        self.inner.mode().name().to_owned()
    }

    /// The local tier's counters (all 0 in strict mode).
    pub fn tier_stats(&self) -> crate::lease::TierStats {
        self.inner.tier_stats().into()
    }

    /// Gives back the leased credits of keys unused for `idle_ms` (`nil`: every key, as on
    /// shutdown) where the strategy can take them back; returns the units taken back. Blocks
    /// for the store calls.
    #[uniffi::method(default(idle_ms = None))]
    pub fn release_leases_blocking(&self, idle_ms: Option<i64>) -> Result<u64> {
        Ok(self.inner.release_leases_sync(crate::lease::idle(idle_ms)?)?)
    }

    /// Gives back the leased credits of keys unused for `idle_ms` (`nil`: every key).
    #[uniffi::method(default(idle_ms = None))]
    pub async fn release_leases(&self, idle_ms: Option<i64>) -> Result<u64> {
        let idle = crate::lease::idle(idle_ms)?;
        Ok(self.inner.release_leases(idle).await?)
    }

    /// The limiter's counters, cumulative since it was made (`enabled` false and all zero unless
    /// made with `metrics = true`): feed them to OpenTelemetry observable counters and an
    /// explicit-bucket histogram.
    pub fn metrics(&self) -> crate::records::Metrics {
        crate::records::Metrics::from_core(self.inner.metrics())
    }

    /// Checks a request of `cost` units for `key`, consuming them when allowed; blocks the
    /// calling thread for a Redis round trip.
    #[uniffi::method(default(cost = 1))]
    pub fn check_blocking(&self, key: String, cost: i64) -> Result<Decision> {
        Ok(self.inner.check_sync(&key, crate::convert::cost(cost)?)?.into())
    }

    /// Checks a request of `cost` units for `key`, consuming them when allowed.
    #[uniffi::method(default(cost = 1))]
    pub async fn check(&self, key: String, cost: i64) -> Result<Decision> {
        let cost = crate::convert::cost(cost)?;
        Ok(self.inner.check(&key, cost).await?.into())
    }

    /// One check of `cost` per key, all at one clock reading (not atomic together).
    #[uniffi::method(default(cost = 1))]
    pub fn check_many_blocking(&self, keys: Vec<String>, cost: i64) -> Result<Vec<Decision>> {
        let cost = crate::convert::cost(cost)?;
        Ok(self.inner.check_many_sync(&refs(&keys), cost)?.into_iter().map(Decision::from).collect())
    }

    /// One check of `cost` per key, all at one clock reading; pipelined on Redis.
    #[uniffi::method(default(cost = 1))]
    pub async fn check_many(&self, keys: Vec<String>, cost: i64) -> Result<Vec<Decision>> {
        let cost = crate::convert::cost(cost)?;
        Ok(self.inner.check_many(&refs(&keys), cost).await?.into_iter().map(Decision::from).collect())
    }

    /// The key's current capacity, consuming nothing: `allowed` says whether a cost-1 request
    /// would pass, `remaining` how many units would.
    pub fn peek_blocking(&self, key: String) -> Result<Decision> {
        Ok(self.inner.peek_sync(&key)?.into())
    }

    /// The key's current capacity, consuming nothing.
    pub async fn peek(&self, key: String) -> Result<Decision> {
        Ok(self.inner.peek(&key).await?.into())
    }

    /// The decision a check of `cost` would get now, consuming nothing.
    #[uniffi::method(default(cost = 1))]
    pub fn forecast_blocking(&self, key: String, cost: i64) -> Result<Decision> {
        Ok(self.inner.forecast_sync(&key, crate::convert::cost(cost)?)?.into())
    }

    /// The decision a check of `cost` would get now, consuming nothing.
    #[uniffi::method(default(cost = 1))]
    pub async fn forecast(&self, key: String, cost: i64) -> Result<Decision> {
        let cost = crate::convert::cost(cost)?;
        Ok(self.inner.forecast(&key, cost).await?.into())
    }

    /// Forgets `key`'s state.
    pub fn reset_blocking(&self, key: String) -> Result<()> {
        Ok(self.inner.reset_sync(&key)?)
    }

    /// Forgets `key`'s state.
    pub async fn reset(&self, key: String) -> Result<()> {
        Ok(self.inner.reset(&key).await?)
    }

    /// The strategy.
    pub fn strategy(&self) -> Arc<Strategy> {
        Arc::new(Strategy { inner: self.inner.strategy().clone() })
    }

    /// The key prefix (`""` for none).
    pub fn prefix(&self) -> String {
        self.inner.prefix().to_owned()
    }

    /// What it answers when the store cannot.
    pub fn fail_policy(&self) -> FailPolicy {
        self.inner.fail_policy().into()
    }
}
