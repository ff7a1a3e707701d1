//! Load through a failover, measured: the calling thread checks `keys` fixed-window keys
//! round-robin (a limit never reached, an hour long), timing every call, while another thread
//! runs `kill`. The load stops once calls have succeeded for 2 s after the last failure. Then
//! every key's count on the (new) master is compared with the admissions the client saw: an
//! admission acknowledged by the old master that asynchronous replication never gave the
//! promoted replica is missing from the new count, and is exactly one admission a client will
//! get over the limit later. The report says how long calls failed, the slowest call, and that
//! number.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use throttlekit::{FailPolicy, Limiter, Strategy};

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

/// Runs the load on `store`, calls `kill` after `kill_after`, and reports. Fails (panics) if
/// the calls do not recover within `give_up`.
pub fn run(
    store: Arc<dyn throttlekit::Store>,
    keys: usize,
    kill_after: Duration,
    give_up: Duration,
    kill: impl FnOnce() + Send + 'static,
) -> FailoverReport {
    const LIMIT: u64 = 1 << 40;
    let limiter = |policy| {
        Limiter::builder(Strategy::fixed_window(LIMIT, 3_600_000).unwrap())
            .store(store.clone())
            .prefix("failover")
            .fail_policy(policy)
            .build()
    };
    let (l, counts) = (limiter(FailPolicy::FailOpen), limiter(FailPolicy::Raise));
    let started = Instant::now();
    let killed_at = Arc::new(parking_lot::Mutex::new(None::<Instant>));
    let killer = {
        let killed_at = killed_at.clone();
        std::thread::spawn(move || {
            std::thread::sleep(kill_after);
            *killed_at.lock() = Some(Instant::now());
            kill();
        })
    };
    let mut report = FailoverReport::default();
    let mut admitted = vec![0u64; keys];
    let mut last_failure: Option<Instant> = None;
    loop {
        for (i, seen) in admitted.iter_mut().enumerate() {
            let t0 = Instant::now();
            let d = l.check_sync(&format!("k{i}"), 1).expect("fail_open answers every call");
            let t1 = Instant::now();
            report.calls += 1;
            report.max_call_ms = report.max_call_ms.max((t1 - t0).as_millis());
            if d.fallback {
                report.failed += 1;
                last_failure = Some(t1);
            } else {
                assert!(d.allowed, "the limit is never reached");
                *seen += 1;
            }
        }
        let killed = *killed_at.lock();
        if let Some(k) = killed
            && last_failure.is_none_or(|f| f.elapsed() > Duration::from_secs(2))
            && k.elapsed() > Duration::from_secs(2)
        {
            report.recovery_ms = last_failure.map_or(0, |f| f.saturating_duration_since(k).as_millis());
            break;
        }
        assert!(started.elapsed() < give_up, "no recovery within {give_up:?}: {report:?}");
    }
    killer.join().unwrap();
    for (i, &seen) in admitted.iter().enumerate() {
        let d = counts.peek_sync(&format!("k{i}")).expect("the new master answers");
        let counted = (LIMIT as i64 - d.remaining) as u64;
        report.lost_admissions += seen.saturating_sub(counted);
        report.unseen_counts += counted.saturating_sub(seen);
    }
    report
}
