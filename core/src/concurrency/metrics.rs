//! [`AdaptiveMetrics`]: a consistent snapshot of the limiter's counters.

/// Counters since the limiter was built, and its current state (exact while no other thread
/// acquires or releases; the limit and the in-flight count are always read together).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AdaptiveMetrics {
    /// The current limit.
    pub limit: u32,
    /// Permits held now.
    pub inflight: u32,
    /// Waiters in `acquire` now.
    pub waiting: u32,
    /// Permits granted (directly or to a waiter).
    pub acquired: u64,
    /// Requests refused (including `acquire` timeouts).
    pub rejected: u64,
    /// Releases with `success`.
    pub succeeded: u64,
    /// Releases with `dropped`.
    pub dropped: u64,
    /// Releases with `ignore`, leaked permits included.
    pub ignored: u64,
    /// Permits dropped without a release (counted as `ignore` too).
    pub leaked: u64,
    /// Successful samples shorter than `minRttUs`, left out of the windows.
    pub short_rtts: u64,
    /// Windows closed (limit updates).
    pub windows: u64,
    /// The no-load round trip in microseconds (0 before the first window).
    pub baseline_rtt_us: u64,
    /// The latest window's latency percentile in microseconds (0 before the first window, or when
    /// it landed among drops).
    pub latency_us: u64,
    /// Whether the limit is still in slow start.
    pub slow_start: bool,
    /// Per partition, in configuration order: its name and its permits in flight.
    pub partitions: Vec<(String, u32)>,
}
