//! The leaky-bucket shaper: paces at the drain rate, rejects past max_queue_ms, and schedule
//! waits the full delay.

use std::sync::Arc;
use std::time::Instant;

use throttlekit::{ErrorCode, LeakyBucketOptions, ManualClock, Shaper};

fn shaper(rate: f64, max_queue_ms: f64, clock: &ManualClock) -> Shaper {
    Shaper::new(&LeakyBucketOptions { rate_per_sec: rate, max_queue_ms }).unwrap().with_clock(Arc::new(clock.clone()))
}

#[test]
fn paces_at_the_drain_rate() {
    let clock = ManualClock::new(0);
    let s = shaper(4.0, 10_000.0, &clock);
    let delays: Vec<i64> = (0..5).map(|_| s.reserve_sync("k", 1).unwrap().delay_ms).collect();
    assert_eq!(delays, [0, 250, 500, 750, 1000]);
}

#[test]
fn rejects_past_max_queue_and_stores_nothing() {
    let clock = ManualClock::new(0);
    let s = shaper(10.0, 150.0, &clock);
    assert!(s.reserve_sync("k", 1).unwrap().accepted);
    assert!(s.reserve_sync("k", 1).unwrap().accepted);
    // The third would depart at 200: a 200 ms wait > 150 is rejected by 50 ms.
    let r = s.reserve_sync("k", 1).unwrap();
    assert!(!r.accepted);
    assert_eq!(r.delay_ms, 50);
    // A rejection stores nothing: asking again gives the same answer.
    assert_eq!(s.reserve_sync("k", 1).unwrap(), r);
    clock.set(50);
    assert_eq!(s.reserve_sync("k", 1).unwrap().delay_ms, 150);
}

#[test]
fn schedule_fails_with_queue_full_carrying_the_retry_hint() {
    let clock = ManualClock::new(0);
    let s = shaper(1.0, 0.0, &clock);
    s.schedule_blocking("k", 1).unwrap();
    let e = s.schedule_blocking("k", 1).unwrap_err();
    assert_eq!(e.code(), ErrorCode::QueueFull);
    assert_eq!(e.retry_after_ms(), Some(1000));
}

#[test]
fn schedule_waits_the_delay_and_does_not_resolve_early() {
    let clock = ManualClock::new(0);
    let s = shaper(20.0, 1000.0, &clock); // 50 ms apart
    s.reserve_sync("k", 1).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let started = Instant::now();
    let r = rt.block_on(s.schedule("k", 1)).unwrap();
    assert_eq!(r.delay_ms, 50);
    assert!(started.elapsed().as_millis() >= 50, "resolved after {:?}", started.elapsed());
}

#[test]
fn bad_options_are_config_invalid() {
    for (rate, queue) in [(0.0, 0.0), (-1.0, 0.0), (f64::NAN, 0.0), (1.0, -1.0), (1.0, f64::INFINITY)] {
        let e = Shaper::new(&LeakyBucketOptions { rate_per_sec: rate, max_queue_ms: queue }).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{rate} {queue}");
        assert!(e.message().contains("leakyBucket."), "{e}");
    }
}
