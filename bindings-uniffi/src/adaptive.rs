//! `AdaptiveLimiter` and `AdaptivePermit`: core's adaptive concurrency limiter.
//!
//! The configuration is core's JSON (the Ruby wrapper builds it from keyword arguments), so every
//! problem is core's `config_invalid` naming the field. Outcomes cross as their stable names
//! (`"success"`, `"ignore"`, `"dropped"`), parsed by core.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use throttlekit::concurrency::{self as core, Admission, Outcome, VirtualClock};

use crate::adaptive_fast::FastPath;
use crate::error::Result;

/// A refused acquire: the limit was full (or the wait ran out).
#[derive(uniffi::Record)]
pub struct AdaptiveRejection {
    /// The limit when the request was refused.
    pub limit: u32,
    /// The requests in flight then.
    pub inflight: u32,
    /// A retry hint: the latest window's latency percentile, ms (1000 before any window).
    pub retry_after_ms: u64,
    /// The `Retry-After` header's value: whole seconds, rounded up, at least 1.
    pub retry_after_secs: u64,
}

/// The answer to an acquire: exactly one of `permit` and `rejection`.
#[derive(uniffi::Record)]
pub struct AdaptiveAdmission {
    /// The permit, when granted.
    pub permit: Option<Arc<AdaptivePermit>>,
    /// Why not, when refused.
    pub rejection: Option<AdaptiveRejection>,
}

/// A snapshot of the limiter's counters and state.
#[derive(uniffi::Record)]
pub struct AdaptiveMetrics {
    pub limit: u32,
    pub inflight: u32,
    pub waiting: u32,
    pub acquired: u64,
    pub rejected: u64,
    pub succeeded: u64,
    pub dropped: u64,
    pub ignored: u64,
    pub leaked: u64,
    pub short_rtts: u64,
    pub windows: u64,
    pub baseline_rtt_us: u64,
    pub latency_us: u64,
    pub slow_start: bool,
    /// Per partition, in configuration order: its permits in flight.
    pub partitions: std::collections::HashMap<String, u32>,
}

/// A concurrency limit that follows the service's latency (docs/adaptive.md).
#[derive(uniffi::Object)]
pub struct AdaptiveLimiter {
    inner: core::AdaptiveLimiter,
    /// The virtual clock of a limiter made by `new_virtual`.
    clock: Option<VirtualClock>,
    /// The Ruby wrapper's integer-only try_acquire and release (`adaptive_fast`).
    fast: FastPath,
}

/// One admitted request: release it once with its outcome. Releasing twice is harmless (the
/// second returns false); a permit collected without a release is released as `ignore` and
/// counted as leaked.
#[derive(uniffi::Object)]
pub struct AdaptivePermit {
    inner: Mutex<core::Permit>,
}

fn partition_names(config: &core::AdaptiveConfig) -> Vec<String> {
    config.partitions.iter().map(|p| p.name.clone()).collect()
}

fn admission(a: Admission) -> AdaptiveAdmission {
    match a {
        Admission::Granted(p) => {
            AdaptiveAdmission { permit: Some(Arc::new(AdaptivePermit { inner: Mutex::new(p) })), rejection: None }
        }
        Admission::Rejected(r) => AdaptiveAdmission {
            permit: None,
            rejection: Some(AdaptiveRejection {
                limit: r.limit,
                inflight: r.inflight,
                retry_after_ms: r.retry_after_ms,
                retry_after_secs: r.retry_after_secs(),
            }),
        },
    }
}

#[uniffi::export]
impl AdaptiveLimiter {
    /// A limiter from core's JSON configuration (`"{}"`: gradient2 with every default), on the
    /// monotonic clock.
    #[uniffi::constructor]
    pub fn new(config_json: String) -> Result<Arc<Self>> {
        let config = core::AdaptiveConfig::from_json(&config_json)?;
        let names = partition_names(&config);
        let inner = core::AdaptiveLimiter::new(config)?;
        Ok(Arc::new(AdaptiveLimiter { fast: FastPath::new(inner.clone(), names), inner, clock: None }))
    }

    /// Like `new`, on a virtual clock at 0 that moves only with `advance_virtual` (tests, the
    /// vectors).
    #[uniffi::constructor]
    pub fn new_virtual(config_json: String) -> Result<Arc<Self>> {
        let config = core::AdaptiveConfig::from_json(&config_json)?;
        let clock = VirtualClock::new(0);
        let names = partition_names(&config);
        let inner = core::AdaptiveLimiter::with_clock(config, Arc::new(clock.clone()))?;
        Ok(Arc::new(AdaptiveLimiter { fast: FastPath::new(inner.clone(), names), inner, clock: Some(clock) }))
    }

    /// Moves the virtual clock forward `ns`; `not_implemented` on the monotonic clock.
    pub fn advance_virtual(&self, ns: u64) -> Result<()> {
        match &self.clock {
            Some(c) => {
                c.advance(ns);
                Ok(())
            }
            None => Err(throttlekit::Error::new(
                throttlekit::ErrorCode::NotImplemented,
                "not_implemented: this limiter has no virtual clock",
            )
            .into()),
        }
    }

    /// A permit if the limit has room, else a rejection; never waits. An unknown partition is
    /// `config_invalid`.
    #[uniffi::method(default(partition = None))]
    pub fn try_acquire(&self, partition: Option<String>) -> Result<AdaptiveAdmission> {
        Ok(admission(self.inner.try_acquire(partition.as_deref())?))
    }

    /// Waits up to `timeout_ms` for a permit (FIFO or LIFO, as configured), blocking the thread.
    #[uniffi::method(default(partition = None))]
    pub fn acquire_blocking(&self, timeout_ms: u64, partition: Option<String>) -> Result<AdaptiveAdmission> {
        Ok(admission(self.inner.acquire_blocking(partition.as_deref(), Duration::from_millis(timeout_ms))?))
    }

    /// The handle of this limiter's fast path (the `tk_rb_adaptive_*` functions): valid while
    /// this object lives.
    pub fn fast_path(&self) -> u64 {
        &self.fast as *const FastPath as usize as u64
    }

    /// The current limit.
    pub fn limit(&self) -> u32 {
        self.inner.limit()
    }

    /// Permits held now.
    pub fn inflight(&self) -> u32 {
        self.inner.inflight()
    }

    /// A consistent snapshot of the counters.
    pub fn metrics(&self) -> AdaptiveMetrics {
        let m = self.inner.metrics();
        AdaptiveMetrics {
            limit: m.limit,
            inflight: m.inflight,
            waiting: m.waiting,
            acquired: m.acquired,
            rejected: m.rejected,
            succeeded: m.succeeded,
            dropped: m.dropped,
            ignored: m.ignored,
            leaked: m.leaked,
            short_rtts: m.short_rtts,
            windows: m.windows,
            baseline_rtt_us: m.baseline_rtt_us,
            latency_us: m.latency_us,
            slow_start: m.slow_start,
            partitions: m.partitions.into_iter().collect(),
        }
    }
}

#[uniffi::export]
impl AdaptivePermit {
    /// Releases with `outcome` (`"success"`, `"ignore"` or `"dropped"`; another is
    /// `config_invalid`), the round trip measured by core; whether this call released it.
    pub fn release(&self, outcome: String) -> Result<bool> {
        let o = Outcome::parse(&outcome)?;
        Ok(self.inner.lock().unwrap_or_else(|e| e.into_inner()).release(o))
    }

    /// Releases with a round trip the caller measured (negative: `config_invalid` for `rtt`, and
    /// the permit stays held).
    pub fn release_with_rtt_ns(&self, outcome: String, rtt_ns: i64) -> Result<bool> {
        let o = Outcome::parse(&outcome)?;
        Ok(self.inner.lock().unwrap_or_else(|e| e.into_inner()).release_with_rtt_ns(o, rtt_ns)?)
    }

    /// Whether it was released.
    pub fn is_released(&self) -> bool {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).is_released()
    }
}
