//! [`Shaper`]: the leaky bucket as a traffic shaper. It delays instead of denying: `reserve`
//! returns how long to wait, `schedule` waits that long, and a wait beyond `max_queue_ms` is
//! refused (`queue_full` from `schedule`, `accepted: false` from `reserve`).

use std::sync::Arc;
use std::time::Duration;

use crate::algorithms::leaky_bucket::LeakyBucket;
use crate::clock::{Clock, SystemClock};
use crate::decision::Reservation;
use crate::error::{Error, ErrorCode, Result};
use crate::key;
use crate::metrics::{LimiterMetrics, StoreTimer};
use crate::spec::LeakyBucketOptions;
use crate::store::{MemoryStore, Now, Store, Transform};
use crate::validate;

/// The longest single timer wait, 2^31 − 1 ms (~24.8 days). JavaScript's `setTimeout` silently
/// turns a longer delay into 1 ms; every `schedule` waits in chunks no longer than this.
pub const MAX_TIMER_MS: i64 = 2_147_483_647;

/// Splits a wait of `delay_ms` into timer-sized chunks (none when `delay_ms <= 0`).
pub fn timer_chunks(delay_ms: i64) -> impl Iterator<Item = i64> {
    let mut left = delay_ms.max(0);
    std::iter::from_fn(move || {
        if left == 0 {
            return None;
        }
        let chunk = left.min(MAX_TIMER_MS);
        left -= chunk;
        Some(chunk)
    })
}

/// A leaky-bucket shaper bound to a store, a clock and a prefix.
pub struct Shaper {
    pub(crate) bucket: LeakyBucket,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    prefix: String,
    server_clock: bool,
    /// `None` unless asked for (see [`Shaper::with_metrics`]).
    metrics: Option<Arc<LimiterMetrics>>,
}

impl std::fmt::Debug for Shaper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shaper").field("options", &self.bucket.options()).field("prefix", &self.prefix).finish()
    }
}

impl Shaper {
    /// A shaper with `options`, on a fresh memory store and the system clock.
    pub fn new(options: &LeakyBucketOptions) -> Result<Shaper> {
        Ok(Shaper {
            bucket: LeakyBucket::new(options)?,
            store: Arc::new(MemoryStore::new()),
            clock: Arc::new(SystemClock),
            prefix: String::new(),
            server_clock: false,
            metrics: None,
        })
    }

    /// Uses `store`.
    pub fn with_store(mut self, store: Arc<dyn Store>) -> Shaper {
        self.store = store;
        self
    }

    /// Uses `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Shaper {
        self.clock = clock;
        self
    }

    /// Namespaces keys under `prefix`.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Shaper {
        self.prefix = prefix.into();
        self
    }

    /// Reads time from the store's clock (Redis `TIME`) in async calls.
    pub fn with_server_clock(mut self, on: bool) -> Shaper {
        self.server_clock = on;
        self
    }

    /// Whether it keeps [`LimiterMetrics`] (default: no): a reservation accepted counts as
    /// allowed, one rejected as denied, a failed one by its error code. Read them with
    /// [`Shaper::metrics`].
    pub fn with_metrics(mut self, on: bool) -> Shaper {
        self.metrics = on.then(|| Arc::new(LimiterMetrics::new(&self.prefix)));
        self
    }

    /// The metrics, when it was built with them.
    pub fn metrics(&self) -> Option<&Arc<LimiterMetrics>> {
        self.metrics.as_ref()
    }

    pub(crate) fn observe(&self, result: Result<Reservation>) -> Result<Reservation> {
        if let Some(m) = &self.metrics {
            m.record_reservation(&result);
        }
        result
    }

    /// Times a store call (see [`StoreTimer`]).
    fn timer(&self) -> StoreTimer<'_> {
        StoreTimer::start(self.metrics.as_deref(), &*self.store)
    }

    /// The options.
    pub fn options(&self) -> LeakyBucketOptions {
        self.bucket.options()
    }

    /// Reserves a departure for `cost` units of `key` now.
    pub fn reserve_sync(&self, key: &str, cost: u64) -> Result<Reservation> {
        self.reserve_sync_at(key, cost, self.clock.now_ms())
    }

    /// [`Shaper::reserve_sync`] at an explicit `now`.
    pub fn reserve_sync_at(&self, key: &str, cost: u64, now: i64) -> Result<Reservation> {
        self.observe((|| {
            let full = self.admit(key, cost, Now::At(now))?;
            let at = if self.server_clock { Now::Server } else { Now::At(now) };
            let timer = self.timer();
            let reply = self.store.apply_sync(&full, at, Transform::Reserve { shaper: &self.bucket, cost });
            timer.stop();
            reply?.reservation()
        })())
    }

    /// Async [`Shaper::reserve_sync`] (Redis: one round trip).
    pub async fn reserve(&self, key: &str, cost: u64) -> Result<Reservation> {
        self.reserve_at(key, cost, self.now()).await
    }

    /// [`Shaper::reserve`] at an explicit time.
    pub async fn reserve_at(&self, key: &str, cost: u64, now: Now) -> Result<Reservation> {
        let result = async {
            let full = self.admit(key, cost, now)?;
            let timer = self.timer();
            let reply = self.store.apply(&full, now, Transform::Reserve { shaper: &self.bucket, cost }).await;
            timer.stop();
            reply?.reservation()
        }
        .await;
        self.observe(result)
    }

    /// Prepares [`Shaper::reserve`] for a transport other than the store's own
    /// ([`crate::redis::prepared`]): the script call on the prefixed key, at one clock read (or
    /// Redis's `TIME`).
    /// A call refused here (a bad argument) is counted as [`Shaper::reserve`] counts it.
    #[cfg(any(feature = "redis", feature = "rest"))]
    pub fn prepare(&self, key: &str, cost: u64) -> Result<crate::redis::prepared::PreparedCall> {
        let now = self.now();
        let full = self.admit(key, cost, now).map_err(|e| crate::metrics::count_error(self.metrics.as_deref(), e))?;
        let transform = Transform::Reserve { shaper: &self.bucket, cost };
        Ok(crate::redis::prepared::PreparedCall::single(&full, now, transform))
    }

    /// The reservation for a call from [`Shaper::prepare`], from its reply frame or its
    /// transport's error (passed through: a shaper has no fail policy). For `schedule`, refuse
    /// it with [`accepted`] and wait its `delay_ms` in [`timer_chunks`].
    #[cfg(feature = "redis")]
    pub fn finish(&self, call: &crate::redis::transport::PreparedCall, reply: Result<&[u8]>) -> Result<Reservation> {
        self.observe(call.single_reply(reply).and_then(|r| r.reservation()))
    }

    /// The time of an async reservation: the clock, read once, or Redis's `TIME`.
    pub(crate) fn now(&self) -> Now {
        Now::reading(self.server_clock, &*self.clock)
    }

    /// The full store key for `key` (what [`Shaper::reset`] deletes).
    pub fn full_key(&self, key: &str) -> String {
        key::join(&self.prefix, key)
    }

    /// What every reservation checks before it reaches the store, in one order (the store's
    /// paths and [`Shaper::prepare`] alike): the cost, the time, the key's length; the full key.
    pub(crate) fn admit(&self, key: &str, cost: u64, now: Now) -> Result<String> {
        validate::cost(cost)?;
        validate::now_at(now)?;
        self.checked_key(key)
    }

    /// [`Shaper::full_key`], or `config_invalid` when it is longer than the store accepts (one
    /// rule for every store, see [`key::check_length`]).
    pub(crate) fn checked_key(&self, key: &str) -> Result<String> {
        key::check_length(key::joined_len(&self.prefix, key), self.store.max_key_length())?;
        Ok(self.full_key(key))
    }

    /// Reserves, then waits out the delay (in timer-sized chunks). A rejected reservation is a
    /// `queue_full` error carrying the retry hint.
    pub async fn schedule(&self, key: &str, cost: u64) -> Result<Reservation> {
        let r = accepted(self.reserve(key, cost).await?)?;
        for chunk in timer_chunks(r.delay_ms) {
            tokio::time::sleep(Duration::from_millis(chunk as u64)).await;
        }
        Ok(r)
    }

    /// [`Shaper::schedule`] for callers without an async runtime: blocks the thread.
    pub fn schedule_blocking(&self, key: &str, cost: u64) -> Result<Reservation> {
        let r = accepted(self.reserve_sync(key, cost)?)?;
        for chunk in timer_chunks(r.delay_ms) {
            std::thread::sleep(Duration::from_millis(chunk as u64));
        }
        Ok(r)
    }

    /// Forgets `key`'s queue.
    pub fn reset_sync(&self, key: &str) -> Result<()> {
        self.store.reset_sync(&self.checked_key(key)?)
    }

    /// Async [`Shaper::reset_sync`].
    pub async fn reset(&self, key: &str) -> Result<()> {
        self.store.reset(&self.checked_key(key)?).await
    }
}

/// `Ok` for an accepted reservation, `queue_full` (with the retry hint) for a rejected one.
pub fn accepted(r: Reservation) -> Result<Reservation> {
    if r.accepted {
        Ok(r)
    } else {
        Err(Error::new(ErrorCode::QueueFull, format!("the queue is full: retry in {} ms", r.delay_ms))
            .with_retry_after(r.delay_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_waits_are_chunked_below_the_32_bit_timer_ceiling() {
        let delay = 3 * MAX_TIMER_MS + 5;
        let chunks: Vec<i64> = timer_chunks(delay).collect();
        assert_eq!(chunks.len(), 4);
        assert!(chunks.iter().all(|&c| c > 0 && c <= MAX_TIMER_MS));
        assert_eq!(chunks.iter().sum::<i64>(), delay);
        assert_eq!(timer_chunks(0).count(), 0);
    }
}
