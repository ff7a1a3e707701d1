//! Injected time. [`SystemClock`] is the only place throttlekit reads the wall clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

// wasm32-unknown-unknown has no threads to tick (nor a wall clock: its binding always passes
// the host's clock), so its build carries no ticker.
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
mod ticker;

/// A source of epoch milliseconds. A limiter reads it once per call, also for batches.
pub trait Clock: Send + Sync + 'static {
    /// The current time in epoch milliseconds.
    fn now_ms(&self) -> i64;

    /// Whether this is [`SystemClock`]. A limiter asks once, when it is built, and then reads
    /// the system clock with a direct call instead of a virtual one on its hot path. Leave the
    /// default.
    #[doc(hidden)]
    fn is_system_clock(&self) -> bool {
        false
    }
}

/// The wall clock, in epoch milliseconds.
///
/// A read is one relaxed atomic load: while the clock is in use, a background thread
/// (`throttlekit-clk`) publishes the wall clock's millisecond just after each boundary, so a
/// reading is never ahead of `SystemTime::now()` and normally at most one millisecond behind
/// (more only if that thread is starved of CPU). A lagging clock judges a request a little
/// early: GCRA and the buckets get stricter, never looser. The thread exits after a second
/// without reads; until it has ticked, and where no thread can be spawned, a read is
/// `SystemTime::now()`. Why this design, and the fork story, are in `clock/ticker.rs`. A caller
/// who needs every read fresh implements [`Clock`] over `SystemTime::now()`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[inline]
    fn now_ms(&self) -> i64 {
        #[cfg(all(target_family = "wasm", target_os = "unknown"))]
        return wall_ns().div_euclid(1_000_000);
        #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
        match ticker::recent_ms() {
            Some(ms) => ms,
            None => read_and_start_ticker(),
        }
    }

    fn is_system_clock(&self) -> bool {
        true
    }
}

/// The slow path of [`SystemClock::now_ms`]: no ticker is publishing yet.
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
#[cold]
#[inline(never)]
fn read_and_start_ticker() -> i64 {
    let ms = wall_ns().div_euclid(1_000_000);
    ticker::start(ms);
    ms
}

/// The wall clock's epoch millisecond, read now and not through the ticker: for calls that
/// wait for a network round trip anyway (a binding's own Postgres socket), where the read's
/// ~30 ns are nothing and a ticker thread waking 1,000 times a second takes CPU from the two
/// processes the round trip waits for.
#[cfg(feature = "postgres")]
pub(crate) fn wall_ms() -> i64 {
    wall_ns().div_euclid(1_000_000)
}

/// `SystemTime::now()` in epoch nanoseconds (negative before 1970).
fn wall_ns() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i64,
        // A clock set before 1970 still yields a usable, ordered instant.
        Err(e) => -(e.duration().as_nanos() as i64),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_system_clock_says_it_is_one() {
        // A limiter trusts this to read the system clock directly: a false yes would ignore an
        // injected clock.
        assert!(SystemClock.is_system_clock());
        assert!(!ManualClock::new(0).is_system_clock());
        let injected: Arc<dyn Clock> = Arc::new(ManualClock::new(5));
        let limiter = crate::Limiter::builder(crate::Strategy::fixed_window(1, 1000).unwrap()).clock(injected).build();
        assert_eq!(limiter.check_sync("k", 1).unwrap().reset_at, 1000, "the injected clock's time, not the wall's");
    }
}
