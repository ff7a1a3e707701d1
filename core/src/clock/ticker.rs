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
//! publishes. The algorithms treat a step back as any clock jump (docs/semantics.md, "Clock
//! jumps"). A forked child has no ticker (threads do not survive `fork`): a handler run in the
//! child withdraws the value, so the child reads the wall clock and starts its own.

#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicI64, AtomicU8};
use std::sync::atomic::Ordering;
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8};
#[cfg(not(loom))]
use std::time::Duration;

/// Ticks without a read before the ticker exits (one second).
#[cfg(not(loom))]
const IDLE_TICKS: u32 = 1000;
/// How long after a millisecond boundary the ticker aims to wake.
#[cfg(not(loom))]
const MARGIN_NS: i64 = 20_000;

/// "No published value": read the wall clock.
const NONE: i64 = i64::MIN;

const STOPPED: u8 = 0;
const RUNNING: u8 = 1;
/// A thread could not be spawned: every read goes to the wall clock. (The loom model spawns
/// no real thread, so it never reaches this state.)
#[cfg_attr(loom, allow(dead_code))]
const UNAVAILABLE: u8 = 2;

/// The published millisecond, on its own cache line: the ticker writes it once per tick and
/// every read loads it.
#[repr(align(128))]
struct Published(AtomicI64);

/// Set by a read since the ticker's last tick (how the ticker knows it is still needed). Its own
/// line, so marking it does not evict the published value from other cores.
#[repr(align(128))]
struct Used(AtomicBool);

/// The publish/read protocol between the ticker and its readers, in one place so that the loom
/// model at the bottom checks the very code the process runs (on `loom`'s atomics).
struct Protocol {
    published: Published,
    used: Used,
    state: AtomicU8,
}

#[cfg(not(loom))]
static TICKER: Protocol = Protocol::new();

impl Protocol {
    #[cfg(not(loom))]
    const fn new() -> Protocol {
        Protocol {
            published: Published(AtomicI64::new(NONE)),
            used: Used(AtomicBool::new(false)),
            state: AtomicU8::new(STOPPED),
        }
    }

    #[cfg(loom)]
    fn new() -> Protocol {
        Protocol {
            published: Published(AtomicI64::new(NONE)),
            used: Used(AtomicBool::new(false)),
            state: AtomicU8::new(STOPPED),
        }
    }

    /// The published millisecond, or `None` when no ticker is running.
    #[inline]
    fn read(&self) -> Option<i64> {
        let ms = self.published.0.load(Ordering::Relaxed);
        if ms == NONE {
            return None;
        }
        // Written once per tick at most, not per read, so readers do not fight over the line.
        if !self.used.0.load(Ordering::Relaxed) {
            self.used.0.store(true, Ordering::Relaxed);
        }
        Some(ms)
    }

    /// Claims the right to run the ticker; false when one runs (or none can).
    fn try_start(&self) -> bool {
        if self.state.compare_exchange(STOPPED, RUNNING, Ordering::AcqRel, Ordering::Relaxed).is_err() {
            return false;
        }
        self.used.0.store(true, Ordering::Relaxed);
        true
    }

    /// The starter's first value, before the thread runs (see [`start`]).
    fn first(&self, now_ms: i64) {
        self.published.0.store(now_ms, Ordering::Relaxed);
    }

    /// One tick: publishes `ms`; returns whether a read happened since the last tick.
    fn tick(&self, ms: i64) -> bool {
        self.published.0.store(ms, Ordering::Relaxed);
        self.used.0.swap(false, Ordering::Relaxed)
    }

    /// The ticker's exit: withdraw the value before letting a new ticker start, so a stale one
    /// is never read after the restart.
    fn stop(&self) {
        self.published.0.store(NONE, Ordering::Relaxed);
        self.state.store(STOPPED, Ordering::Release);
    }
}

/// The published millisecond, or `None` when no ticker is running.
#[inline]
pub(super) fn recent_ms() -> Option<i64> {
    #[cfg(not(loom))]
    return TICKER.read();
    #[cfg(loom)]
    None
}

/// Starts the ticker unless one runs (or none can). `now_ms` is the wall-clock millisecond the
/// caller read and is about to return: the starter publishes it before the thread exists, so the
/// thread's first tick (read later) cannot publish a millisecond older than one a reader was
/// already given. Without this, a read between the thread's wall read and its store could see
/// the clock step back by a millisecond.
#[cold]
pub(super) fn start(now_ms: i64) {
    #[cfg(loom)]
    let _ = now_ms;
    #[cfg(not(loom))]
    {
        if !TICKER.try_start() {
            return;
        }
        fork::register_child_handler();
        TICKER.first(now_ms);
        if std::thread::Builder::new().name("throttlekit-clk".into()).spawn(run).is_err() {
            // Never leave a value that no thread will advance.
            TICKER.published.0.store(NONE, Ordering::Relaxed);
            TICKER.state.store(UNAVAILABLE, Ordering::Release);
        }
    }
}

/// The ticker: publish the millisecond just after each boundary until nobody reads it.
#[cfg(not(loom))]
fn run() {
    minimize_timer_slack();
    let mut idle = 0;
    loop {
        let ns = super::wall_ns();
        if TICKER.tick(ns.div_euclid(1_000_000)) {
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
    TICKER.stop();
}

/// Asks Linux to wake this thread on time rather than batching its timer with others (the
/// default slack is 50 µs).
#[cfg(not(loom))]
fn minimize_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and affects only the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(all(unix, not(loom)))]
mod fork {
    use super::{NONE, RUNNING, STOPPED, TICKER};
    use std::sync::Once;
    use std::sync::atomic::Ordering;

    /// Runs in a forked child: the ticker did not come along, so withdraw its value (only
    /// atomics here: a fork handler may not lock or allocate).
    extern "C" fn in_child() {
        TICKER.published.0.store(NONE, Ordering::Relaxed);
        let _ = TICKER.state.compare_exchange(RUNNING, STOPPED, Ordering::AcqRel, Ordering::Relaxed);
    }

    pub(super) fn register_child_handler() {
        static ONCE: Once = Once::new();
        // SAFETY: `in_child` is an `extern "C" fn()` that touches only atomics.
        ONCE.call_once(|| unsafe {
            libc::pthread_atfork(None, None, Some(in_child));
        });
    }
}

#[cfg(all(not(unix), not(loom)))]
mod fork {
    pub(super) fn register_child_handler() {}
}

/// The loom model of the protocol: an exiting ticker, a reader that restarts it, and a reader
/// that only reads, in every interleaving. Checked: at most one ticker runs at a time; a reader
/// never sees time go backwards nor, once it restarted the ticker, the old one's value; and the
/// old ticker's withdrawal never lands after the new ticker's value (which would leave no
/// value published while a ticker runs).
#[cfg(all(test, loom))]
mod loom_model {
    use super::Protocol;
    use loom::sync::Arc;
    use loom::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_restarted_ticker_never_shows_the_old_ones_value() {
        loom::model(|| {
            let p = Arc::new(Protocol::new());
            let running = Arc::new(AtomicUsize::new(0));
            // Ticker 1 runs and has published 10.
            assert!(p.try_start());
            running.fetch_add(1, Ordering::SeqCst);
            p.tick(10);
            let exiting = {
                let (p, running) = (p.clone(), running.clone());
                loom::thread::spawn(move || {
                    // Ticker 1 exits (idle).
                    running.fetch_sub(1, Ordering::SeqCst);
                    p.stop();
                })
            };
            let restarting = {
                let (p, running) = (p.clone(), running.clone());
                loom::thread::spawn(move || {
                    let first = p.read();
                    if first.is_none() && p.try_start() {
                        assert_eq!(running.fetch_add(1, Ordering::SeqCst), 0, "two tickers at once");
                        p.first(15);
                        p.tick(20);
                        let after = p.read();
                        assert_ne!(after, Some(10), "the old ticker's value after a restart");
                        return true;
                    }
                    false
                })
            };
            // A plain reader: never backwards.
            let a = p.read();
            let b = p.read();
            if let (Some(a), Some(b)) = (a, b) {
                assert!(a <= b, "time went back: {a} then {b}");
            }
            exiting.join().unwrap();
            if restarting.join().unwrap() {
                assert_eq!(p.read(), Some(20), "the old ticker withdrew the new one's value");
            }
        });
    }
}
