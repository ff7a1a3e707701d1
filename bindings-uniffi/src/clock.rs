//! `ManualClock`: time that moves only when told to (tests and replays). Without one, a
//! limiter reads core's system clock.

use std::sync::Arc;

use throttlekit::Clock;

use crate::error::Result;

/// A clock that moves only when told to. Limiters built with it read its time on every call,
/// and the memory store expires keys on it too. `advance` only goes forward; `set` may jump
/// back, to reproduce a wall clock that steps backwards.
#[derive(uniffi::Object)]
pub struct ManualClock {
    inner: throttlekit::ManualClock,
}

impl ManualClock {
    /// The clock as core's trait object (it shares the time with this handle).
    pub(crate) fn as_clock(&self) -> Arc<dyn Clock> {
        Arc::new(self.inner.clone())
    }
}

#[uniffi::export]
impl ManualClock {
    /// A clock showing `now_ms` (epoch milliseconds).
    #[uniffi::constructor]
    pub fn new(now_ms: i64) -> Arc<Self> {
        Arc::new(ManualClock { inner: throttlekit::ManualClock::new(now_ms) })
    }

    /// The current time, epoch milliseconds.
    pub fn now_ms(&self) -> i64 {
        self.inner.now_ms()
    }

    /// Moves time forward by `ms` (>= 0, else `config_invalid`) and returns the new time.
    pub fn advance(&self, ms: i64) -> Result<i64> {
        Ok(self.inner.advance(ms)?)
    }

    /// Sets the time, backwards included.
    pub fn set(&self, now_ms: i64) {
        self.inner.set(now_ms);
    }
}

/// The `clock` option: the manual clock when given, else the system clock.
pub fn from_option(clock: Option<&Arc<ManualClock>>) -> Arc<dyn Clock> {
    match clock {
        Some(c) => c.as_clock(),
        None => Arc::new(throttlekit::SystemClock),
    }
}
