//! The adaptive limiter's time: a monotonic nanosecond count, injected.
//!
//! Round-trip times are differences of two readings, so the wall clock (which may jump) is never
//! used: [`MonotonicClock`] reads `std::time::Instant`, and [`VirtualClock`] moves only when told
//! to, which the simulator and the vectors use to replay exact timelines.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A source of monotonic nanoseconds for measuring round trips.
pub trait Ticks: Send + Sync + 'static {
    /// Nanoseconds since an arbitrary fixed origin; never decreases.
    fn now_ns(&self) -> u64;
}

/// The process's monotonic clock (`Instant`), counted from the clock's creation.
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    origin: Instant,
}

impl Default for MonotonicClock {
    fn default() -> MonotonicClock {
        MonotonicClock { origin: Instant::now() }
    }
}

impl Ticks for MonotonicClock {
    #[inline]
    fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }
}

/// A clock that moves only when told to; clones share the same time.
#[derive(Clone, Debug, Default)]
pub struct VirtualClock {
    now: Arc<AtomicU64>,
}

impl VirtualClock {
    /// A clock showing `now_ns`.
    pub fn new(now_ns: u64) -> VirtualClock {
        VirtualClock { now: Arc::new(AtomicU64::new(now_ns)) }
    }

    /// Moves time forward by `ns`.
    pub fn advance(&self, ns: u64) {
        self.now.fetch_add(ns, Ordering::SeqCst);
    }

    /// Sets the time; a value earlier than the current one is ignored (the clock is monotonic).
    pub fn set(&self, now_ns: u64) {
        self.now.fetch_max(now_ns, Ordering::SeqCst);
    }
}

impl Ticks for VirtualClock {
    fn now_ns(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}
