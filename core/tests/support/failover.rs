//! Load through a failover, measured: `threads` threads check their own fixed-window keys
//! round-robin (a limit never reached, an hour long), timing every call, while the calling
//! thread runs `kill`. The load stops once calls have succeeded for 2 s after the last failure. Then
//! every key's count on the (new) master is compared with the admissions the client saw: an
//! admission acknowledged by the old master that asynchronous replication never gave the
//! promoted replica is missing from the new count, and is exactly one admission a client will
//! get over the limit later. The report says how long calls failed, the slowest call, and that
//! number.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use throttlekit::{Clock, FailPolicy, Limiter, ManualClock, Strategy, SystemClock};

/// What one failover run measured.
#[derive(Debug, Default)]
pub struct FailoverReport {
    /// Calls made in all.
    pub calls: u64,
    /// Calls answered by the fail policy (the store was unavailable).
    pub failed: u64,
    /// The slowest call, ms.
    pub max_call_ms: u128,
    /// From the kill until the end of the last failed call, ms: afterwards every call
    /// succeeded (0 if none failed).
    pub recovery_ms: u128,
    /// Admissions the client saw that the new master does not count (summed over the keys):
    /// admissions a client will get over the limit.
    pub lost_admissions: u64,
    /// Counts the new master has that the client never saw as admissions (calls that counted
    /// but whose reply was lost or came too late).
    pub unseen_counts: u64,
}

/// Runs the load on `store` from `threads` threads (each with its own `keys` keys), calls
/// `kill` after `kill_after`, and reports. Fails (panics) if the calls do not recover within
/// `give_up`.
pub fn run(
    store: Arc<dyn throttlekit::Store>,
    threads: usize,
    keys: usize,
    kill_after: Duration,
    give_up: Duration,
    kill: impl FnOnce(),
) -> FailoverReport {
    run_with(store.clone(), store, threads, keys, kill_after, Some(give_up), kill)
}

/// [`run`], reading the counts afterwards through `count_store`, and with `give_up: None`
/// stopping the load 5 s after the kill whether or not calls recovered (a durable store whose
/// new master has too few replicas fails every call on its slots, by design).
pub fn run_with(
    store: Arc<dyn throttlekit::Store>,
    count_store: Arc<dyn throttlekit::Store>,
    threads: usize,
    keys: usize,
    kill_after: Duration,
    give_up: Option<Duration>,
    kill: impl FnOnce(),
) -> FailoverReport {
    const LIMIT: u64 = 1 << 40;
    const HOUR: i64 = 3_600_000;
    // Time stands still at the start of the current hour: the counts are compared with one
    // window's admissions, and on the system clock an hour boundary during the run (tens of
    // seconds) would start them over. Redis expires the keys on its own clock at the window's
    // end: a whole hour away.
    let now = SystemClock.now_ms();
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(now - now % HOUR));
    let limiter = |policy, store: &Arc<dyn throttlekit::Store>| {
        Arc::new(
            Limiter::builder(Strategy::fixed_window(LIMIT, HOUR as u64).unwrap())
                .store(store.clone())
                .clock(clock.clone())
                .prefix("failover")
                .fail_policy(policy)
                .build(),
        )
    };
    let (l, counts) = (limiter(FailPolicy::FailOpen, &store), limiter(FailPolicy::Raise, &count_store));
    let started = Instant::now();
    // The end of the latest failed call, in ms since `started` (0: none yet).
    let last_failure = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (l, last_failure, stop) = (l.clone(), last_failure.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut report = FailoverReport::default();
                let mut admitted = vec![0u64; keys];
                while !stop.load(Ordering::Acquire) {
                    for (i, seen) in admitted.iter_mut().enumerate() {
                        let t0 = Instant::now();
                        let d = l.check_sync(&format!("t{t}k{i}"), 1).expect("fail_open answers every call");
                        let t1 = Instant::now();
                        report.calls += 1;
                        report.max_call_ms = report.max_call_ms.max((t1 - t0).as_millis());
                        if d.fallback {
                            report.failed += 1;
                            last_failure.fetch_max((t1 - started).as_millis() as u64, Ordering::AcqRel);
                        } else {
                            assert!(d.allowed, "the limit is never reached");
                            *seen += 1;
                        }
                    }
                }
                (report, admitted)
            })
        })
        .collect();
    std::thread::sleep(kill_after);
    let killed_at = started.elapsed().as_millis() as u64;
    kill();
    // Recovered: 2 s without a failure, at least 2 s after the kill.
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = started.elapsed().as_millis() as u64;
        let last = last_failure.load(Ordering::Acquire);
        let Some(give_up) = give_up else {
            if now > killed_at + 5000 {
                break;
            }
            continue;
        };
        if now > killed_at + 2000 && now > last + 2000 {
            break;
        }
        if started.elapsed() > give_up {
            stop.store(true, Ordering::Release);
            panic!("no recovery within {give_up:?} (last failure at {last} ms, kill at {killed_at} ms)");
        }
    }
    stop.store(true, Ordering::Release);
    let mut report = FailoverReport::default();
    let last = last_failure.load(Ordering::Acquire);
    report.recovery_ms = if last > killed_at { (last - killed_at) as u128 } else { 0 };
    for (t, w) in workers.into_iter().enumerate() {
        let (r, admitted) = w.join().expect("a load thread");
        report.calls += r.calls;
        report.failed += r.failed;
        report.max_call_ms = report.max_call_ms.max(r.max_call_ms);
        for (i, &seen) in admitted.iter().enumerate() {
            let d = counts.peek_sync(&format!("t{t}k{i}")).expect("the new master answers");
            let counted = (LIMIT as i64 - d.remaining) as u64;
            report.lost_admissions += seen.saturating_sub(counted);
            report.unseen_counts += counted.saturating_sub(seen);
        }
    }
    report
}
