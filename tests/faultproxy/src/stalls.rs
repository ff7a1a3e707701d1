//! This process's scheduling stalls, measured beside the calls a fault test makes (the Rust
//! proofs in `tests/redis_standalone.rs` and the Rust driver, `examples/driver.rs`; the other
//! languages' drivers and the orchestrator keep the same meter, `tests/faults/stalls.py`).
//!
//! A call's time bound is its timeout + a slack + the stalls that can have held it: on a loaded
//! machine (2 shared cores) that is the machine, not the client. Two measures: a thread that
//! sleeps 10 ms at a time records each wake-up that came late ([`Stall`] events; a call hit by
//! two stalls took both, so the test adds every event that overlaps the call, not the worst
//! single one), and [`runqueue`], how long the calling thread itself waited for a CPU, read
//! around one call (the few wake-ups of one call can each wait while the sleeper, on the other
//! core, does not).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One late wake-up of the sleeper: `late` of stall somewhere within [`from`, `to`].
#[derive(Clone, Copy, Debug)]
pub struct Stall {
    pub from: Instant,
    pub to: Instant,
    pub late: Duration,
}

struct Meter {
    events: Mutex<Vec<Stall>>,
    wakes: AtomicU64,
}

/// The meter, its sleeper started on first use.
fn meter() -> &'static Meter {
    static METER: OnceLock<Meter> = OnceLock::new();
    METER.get_or_init(|| {
        std::thread::spawn(|| {
            loop {
                let t = Instant::now();
                std::thread::sleep(Duration::from_millis(10));
                let woke = Instant::now();
                let late = woke.duration_since(t).saturating_sub(Duration::from_millis(10));
                let m = meter();
                if !late.is_zero() {
                    m.events.lock().unwrap().push(Stall { from: woke - late, to: woke, late });
                }
                m.wakes.fetch_add(1, Ordering::Relaxed);
            }
        });
        Meter { events: Mutex::new(Vec::new()), wakes: AtomicU64::new(0) }
    })
}

/// Starts the sleeper (once), so that it watches the calls that follow.
pub fn start() {
    meter();
}

/// Waits (at most 2 s) for two more wake-ups of the sleeper, so that a stall still going on
/// (the sleeper not yet awake to record it) is in its events.
fn settle(m: &Meter) {
    let wakes = m.wakes.load(Ordering::Relaxed);
    let deadline = Instant::now() + Duration::from_secs(2);
    while m.wakes.load(Ordering::Relaxed) < wakes + 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The stall events since the last take (or [`forget`]), settled first.
pub fn take() -> Vec<Stall> {
    let m = meter();
    settle(m);
    std::mem::take(&mut *m.events.lock().unwrap())
}

/// Drops the events so far (a new run begins).
pub fn forget() {
    meter().events.lock().unwrap().clear();
}

/// The total of the stall events that overlap [`from`, `to`], settled first.
pub fn within(from: Instant, to: Instant) -> Duration {
    let m = meter();
    settle(m);
    let events = m.events.lock().unwrap();
    events.iter().filter(|s| s.from <= to && s.to >= from).map(|s| s.late).sum()
}

/// How long the calling thread has waited, runnable, for a CPU so far (Linux schedstat's
/// run_delay; zero where it is missing). Read it before and after a call: the difference is
/// that call's own wait.
pub fn runqueue() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|n| n.parse::<u64>().ok()))
        .map_or(Duration::ZERO, Duration::from_nanos)
}
