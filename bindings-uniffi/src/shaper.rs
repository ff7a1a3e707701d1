//! `Shaper`: the leaky bucket as a traffic shaper — it delays instead of denying.

use std::sync::Arc;

use throttlekit::LeakyBucketOptions;

use crate::clock::{self, ManualClock};
use crate::error::Result;
use crate::records::Reservation;
use crate::store::{Resolved, Store};

/// How a shaper is built. Every field is optional.
#[derive(uniffi::Record)]
pub struct ShaperOptions {
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
    /// Keep counters of its reservations (accepted as allowed, rejected as denied), read with
    /// `metrics()`.
    #[uniffi(default = false)]
    pub metrics: bool,
}

/// Departures at `rate_per_sec`, queueing at most `max_queue_ms` of wait.
///
/// `reserve` books a departure and says how long to wait; `schedule` books and waits, and fails
/// with `queue_full` (with `retry_after_ms`) when the wait would exceed `max_queue_ms`.
#[derive(uniffi::Object)]
pub struct Shaper {
    inner: Arc<throttlekit::Shaper>,
}

#[uniffi::export(async_runtime = "tokio")]
impl Shaper {
    /// A shaper of `rate_per_sec` departures a second (> 0) and at most `max_queue_ms` of
    /// queue (>= 0).
    #[uniffi::constructor]
    pub fn new(rate_per_sec: f64, max_queue_ms: f64, options: ShaperOptions) -> Result<Arc<Self>> {
        let store = Resolved::from_option(options.store.as_ref());
        let (server_clock, _) = store.settings(options.server_clock, None);
        let inner = throttlekit::Shaper::new(&LeakyBucketOptions { rate_per_sec, max_queue_ms })?
            .with_store(store.store)
            .with_clock(clock::from_option(options.clock.as_ref()))
            .with_server_clock(server_clock)
            .with_prefix(options.prefix)
            // After the prefix: the metrics are labelled with it.
            .with_metrics(options.metrics);
        Ok(Arc::new(Shaper { inner: Arc::new(inner) }))
    }

    /// The counters (all zero and `enabled == false` unless made with `metrics = true`).
    pub fn metrics(&self) -> crate::records::Metrics {
        crate::records::Metrics::from_core(self.inner.metrics())
    }

    /// Books a departure for `cost` units of `key` now, without waiting; blocks for a Redis
    /// round trip.
    #[uniffi::method(default(cost = 1))]
    pub fn reserve_blocking(&self, key: String, cost: i64) -> Result<Reservation> {
        Ok(self.inner.reserve_sync(&key, crate::convert::cost(cost)?)?.into())
    }

    /// Books a departure for `cost` units of `key` now, without waiting.
    #[uniffi::method(default(cost = 1))]
    pub async fn reserve(&self, key: String, cost: i64) -> Result<Reservation> {
        let cost = crate::convert::cost(cost)?;
        Ok(self.inner.reserve(&key, cost).await?.into())
    }

    /// Books a departure and sleeps the calling thread until it.
    #[uniffi::method(default(cost = 1))]
    pub fn schedule_blocking(&self, key: String, cost: i64) -> Result<Reservation> {
        Ok(self.inner.schedule_blocking(&key, crate::convert::cost(cost)?)?.into())
    }

    /// Books a departure and suspends until it (a timer, not a blocked thread).
    #[uniffi::method(default(cost = 1))]
    pub async fn schedule(&self, key: String, cost: i64) -> Result<Reservation> {
        let cost = crate::convert::cost(cost)?;
        Ok(self.inner.schedule(&key, cost).await?.into())
    }

    /// Forgets `key`'s queue; blocks.
    pub fn reset_blocking(&self, key: String) -> Result<()> {
        Ok(self.inner.reset_sync(&key)?)
    }

    /// Forgets `key`'s queue.
    pub async fn reset(&self, key: String) -> Result<()> {
        Ok(self.inner.reset(&key).await?)
    }

    /// Departures per second.
    pub fn rate_per_sec(&self) -> f64 {
        self.inner.options().rate_per_sec
    }

    /// Longest accepted wait, ms.
    pub fn max_queue_ms(&self) -> f64 {
        self.inner.options().max_queue_ms
    }
}
