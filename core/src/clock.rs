//! Injected time. [`SystemClock`] is the only place throttlekit reads the wall clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// A source of epoch milliseconds. A limiter reads it once per call, also for batches.
pub trait Clock: Send + Sync + 'static {
    /// The current time in epoch milliseconds.
    fn now_ms(&self) -> i64;
}

/// The wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_millis() as i64,
            // A clock set before 1970 still yields a usable, ordered instant.
            Err(e) => -(e.duration().as_millis() as i64),
        }
    }
}

/// A clock that moves only when told to; clones share the same time.
///
/// `advance` only goes forward; `set` may go backwards, so tests can prove that every
/// algorithm survives a backward jump of the wall clock.
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    now: Arc<AtomicI64>,
}

impl ManualClock {
    /// A clock showing `now_ms`.
    pub fn new(now_ms: i64) -> ManualClock {
        ManualClock { now: Arc::new(AtomicI64::new(now_ms)) }
    }

    /// Moves time forward by `ms`; a negative step is `config_invalid`.
    pub fn advance(&self, ms: i64) -> Result<i64> {
        if ms < 0 {
            return Err(Error::config("advance", "must be a non-negative number of milliseconds"));
        }
        Ok(self.now.fetch_add(ms, Ordering::SeqCst).saturating_add(ms))
    }

    /// Sets the time, backwards included.
    pub fn set(&self, now_ms: i64) {
        self.now.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }
}
