//! The published millisecond behind [`super::SystemClock`].
//!
//! Why: reading the wall clock per check is the dearest step of an in-memory check. A
//! `clock_gettime` costs about 30 ns, and even a bare `rdtsc` waits for the instructions before
//! it to finish, so a check that misses the cache pays its miss in full instead of overlapping
//! it with the next one (measured: 41 ns a check over 100k keys with the time read from memory,
//! 105 ns with an `rdtsc` per check). So while the clock is in use, one background thread
//! (`throttlekit-clk`) reads the wall clock just after each millisecond boundary and publishes
//! the millisecond in one atomic word; a read is one relaxed load.
//!
//! What that costs in accuracy: a reading is the wall clock's millisecond as of the last tick, so
//! it is never ahead and normally behind by at most the tick's wake-up latency (tens of
//! microseconds, with the thread's timer slack set to the minimum on Linux). A starved ticker
//! lags further; a lagging clock judges requests a little early, which makes GCRA and the
//! buckets stricter, never looser.
//!
//! Lifecycle: the first read starts the thread; after [`IDLE_TICKS`] ticks without a read it
//! withdraws the published value and exits, and the next read starts a new one, publishing the
//! millisecond it read before the thread runs. If a thread cannot be spawned, reads go to the
//! wall clock directly. Readings follow the wall clock, so they step back only when it does,
//! with one exception: a read that finds nothing published while another thread is starting the
//! ticker reads the wall clock itself and may be a millisecond ahead of what that thread then
//! publishes. The algorithms treat a step back as any clock jump (`shared/SEMANTICS.md`). A forked
//! child has no ticker (threads do not survive `fork`): a handler run in the child withdraws
//! the value, so the child reads the wall clock and starts its own.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, Ordering};
use std::time::Duration;

/// Ticks without a read before the ticker exits (one second).
const IDLE_TICKS: u32 = 1000;
/// How long after a millisecond boundary the ticker aims to wake.
const MARGIN_NS: i64 = 20_000;

/// "No published value": read the wall clock.
const NONE: i64 = i64::MIN;

const STOPPED: u8 = 0;
const RUNNING: u8 = 1;
/// A thread could not be spawned: every read goes to the wall clock.
const UNAVAILABLE: u8 = 2;

/// The published millisecond, on its own cache line: the ticker writes it once per tick and
/// every read loads it.
#[repr(align(128))]
struct Published(AtomicI64);
static PUBLISHED: Published = Published(AtomicI64::new(NONE));

/// Set by a read since the ticker's last tick (how the ticker knows it is still needed). Its own
/// line, so marking it does not evict the published value from other cores.
#[repr(align(128))]
struct Used(AtomicBool);
static USED: Used = Used(AtomicBool::new(false));

static STATE: AtomicU8 = AtomicU8::new(STOPPED);

/// The published millisecond, or `None` when no ticker is running.
#[inline]
pub(super) fn recent_ms() -> Option<i64> {
    let ms = PUBLISHED.0.load(Ordering::Relaxed);
    if ms == NONE {
        return None;
    }
    // Written once per tick at most, not per read, so readers do not fight over the line.
    if !USED.0.load(Ordering::Relaxed) {
        USED.0.store(true, Ordering::Relaxed);
    }
    Some(ms)
}

/// Starts the ticker unless one runs (or none can). `now_ms` is the wall-clock millisecond the
/// caller read and is about to return: the starter publishes it before the thread exists, so the
/// thread's first tick (read later) cannot publish a millisecond older than one a reader was
/// already given. Without this, a read between the thread's wall read and its store could see
/// the clock step back by a millisecond.
#[cold]
pub(super) fn start(now_ms: i64) {
    if STATE.compare_exchange(STOPPED, RUNNING, Ordering::AcqRel, Ordering::Relaxed).is_err() {
        return;
    }
    fork::register_child_handler();
    USED.0.store(true, Ordering::Relaxed);
    PUBLISHED.0.store(now_ms, Ordering::Relaxed);
    if std::thread::Builder::new().name("throttlekit-clk".into()).spawn(run).is_err() {
        // Never leave a value that no thread will advance.
        PUBLISHED.0.store(NONE, Ordering::Relaxed);
        STATE.store(UNAVAILABLE, Ordering::Release);
    }
}

/// The ticker: publish the millisecond just after each boundary until nobody reads it.
fn run() {
    minimize_timer_slack();
    let mut idle = 0;
    loop {
        let ns = super::wall_ns();
        PUBLISHED.0.store(ns.div_euclid(1_000_000), Ordering::Relaxed);
        if USED.0.swap(false, Ordering::Relaxed) {
            idle = 0;
        } else {
            idle += 1;
            if idle >= IDLE_TICKS {
                break;
            }
        }
        let to_boundary = 1_000_000 - ns.rem_euclid(1_000_000);
        std::thread::sleep(Duration::from_nanos((to_boundary + MARGIN_NS) as u64));
    }
    // Withdraw the value before letting a new ticker start, so a stale one is never read.
    PUBLISHED.0.store(NONE, Ordering::Relaxed);
    STATE.store(STOPPED, Ordering::Release);
}

/// Asks Linux to wake this thread on time rather than batching its timer with others (the
/// default slack is 50 µs).
fn minimize_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and affects only the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(unix)]
mod fork {
    use super::{NONE, PUBLISHED, RUNNING, STATE, STOPPED};
    use std::sync::Once;
    use std::sync::atomic::Ordering;

    /// Runs in a forked child: the ticker did not come along, so withdraw its value (only
    /// atomics here: a fork handler may not lock or allocate).
    extern "C" fn in_child() {
        PUBLISHED.0.store(NONE, Ordering::Relaxed);
        let _ = STATE.compare_exchange(RUNNING, STOPPED, Ordering::AcqRel, Ordering::Relaxed);
    }

    pub(super) fn register_child_handler() {
        static ONCE: Once = Once::new();
        // SAFETY: `in_child` is an `extern "C" fn()` that touches only atomics.
        ONCE.call_once(|| unsafe {
            libc::pthread_atfork(None, None, Some(in_child));
        });
    }
}

#[cfg(not(unix))]
mod fork {
    pub(super) fn register_child_handler() {}
}
