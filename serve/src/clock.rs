//! The clock serve's decisions read: the wall clock itself, read once per request.
//!
//! Why not core's [`throttlekit::SystemClock`]: it publishes the millisecond from a background
//! thread (`throttlekit-clk`) that wakes 1,000 times a second while the clock is read, which
//! pays off for in-process checks at millions per second, where a `clock_gettime` per check is
//! the dearest step. A service makes at most ~100k decisions a second, each already costing
//! several µs of HTTP/2, so one `clock_gettime` (vDSO, ~30 ns) per request is cheaper than the
//! ticker's wake-ups: on the bench VM a wake-up of an idle vCPU costs tens of µs of CPU, and
//! `perf` put the ticker at 5.7% of serve's CPU at one stream on memory (about 3 ms of CPU for
//! every 100 ms of wall time, whether requests arrive or not). Core's docs name this choice for a caller
//! that wants every read fresh: implement [`Clock`] over `SystemTime::now()`. A reading is also
//! exact instead of up to a tick behind.

use std::time::{SystemTime, UNIX_EPOCH};

use throttlekit::Clock;

/// `SystemTime::now()` in epoch milliseconds, floored (negative before 1970, as core's clock).
#[derive(Clone, Copy, Debug, Default)]
pub struct WallClock;

impl Clock for WallClock {
    fn now_ms(&self) -> i64 {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_millis() as i64,
            // A clock set before 1970 still yields an ordered instant: floor, as core's does.
            Err(e) => (-(e.duration().as_nanos() as i64)).div_euclid(1_000_000),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wall_ms() -> i64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
    }

    /// A reading is the wall clock's millisecond at the call, not an older published one.
    #[test]
    fn reads_the_wall_clock_at_the_call() {
        for _ in 0..1000 {
            let before = wall_ms();
            let now = WallClock.now_ms();
            let after = wall_ms();
            assert!(before <= now && now <= after, "{before} <= {now} <= {after}");
        }
    }
}
