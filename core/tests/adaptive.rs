//! The adaptive limiter's API: bad input, permits (double release, leaks, guards), waiting in
//! FIFO and LIFO order, partitions, and never more permits held than the limit under 8 threads.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use throttlekit::ErrorCode;
use throttlekit::concurrency::{
    AdaptiveConfig, AdaptiveLimiter, Admission, AlgorithmKind, Cancel, Outcome, PartitionConfig, QueueOrder,
    VirtualClock,
};

fn fixed(limit: i64) -> AdaptiveConfig {
    AdaptiveConfig { initial_limit: Some(limit), ..AdaptiveConfig::new(AlgorithmKind::Fixed) }
}

fn config_error(config: &str) -> String {
    let parsed = AdaptiveConfig::from_json(config).expect("parses");
    let e = AdaptiveLimiter::new(parsed).expect_err("invalid");
    assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{e}");
    e.message().to_string()
}

#[test]
fn bad_input_is_config_invalid_naming_the_field() {
    assert!(config_error(r#"{"initialLimit": 0}"#).starts_with("initialLimit"));
    assert!(config_error(r#"{"initialLimit": -3}"#).starts_with("initialLimit"));
    assert!(config_error(r#"{"minLimit": 0}"#).starts_with("minLimit"));
    assert!(config_error(r#"{"maxLimit": -1}"#).starts_with("maxLimit"));
    assert!(config_error(r#"{"minLimit": 50, "maxLimit": 10}"#).starts_with("minLimit"));
    assert!(config_error(r#"{"percentile": 0}"#).starts_with("percentile"));
    assert!(config_error(r#"{"minRttUs": -1}"#).starts_with("minRttUs"));
    assert!(config_error(r#"{"algorithm": "aimd", "backoff": 1.5}"#).starts_with("backoff"));
    assert!(config_error(r#"{"algorithm": "vegas", "alpha": 5, "beta": 2}"#).starts_with("beta"));
    assert!(config_error(r#"{"algorithm": "gradient2", "alpha": 5}"#).starts_with("alpha"));
    assert!(config_error(r#"{"algorithm": "fixed", "tolerance": 2}"#).starts_with("tolerance"));
    let over = r#"{"partitions": [{"name": "live", "percent": 90}, {"name": "batch", "percent": 20}]}"#;
    assert!(config_error(over).starts_with("partitions"));
    assert!(config_error(r#"{"partitions": [{"name": "a", "percent": -5}]}"#).starts_with("partitions[0].percent"));
    assert!(
        config_error(r#"{"partitions": [{"name": "a", "percent": 5}, {"name": "a", "percent": 5}]}"#)
            .starts_with("partitions[1].name")
    );
    // Unknown fields and unknown algorithms are rejected by the parser, with the same code.
    for bad in [r#"{"limit": 5}"#, r#"{"algorithm": "bbr"}"#] {
        assert_eq!(AdaptiveConfig::from_json(bad).expect_err("strict").code(), ErrorCode::ConfigInvalid);
    }

    let limiter = AdaptiveLimiter::new(AdaptiveConfig::default()).expect("valid");
    let e = limiter.try_acquire(Some("nope")).expect_err("unknown partition");
    assert_eq!(e.code(), ErrorCode::ConfigInvalid);
    assert!(e.message().starts_with("partition"));
    let mut permit = limiter.try_acquire(None).expect("ok").permit().expect("granted");
    let e = permit.release_with_rtt_ns(Outcome::Success, -1).expect_err("negative rtt");
    assert_eq!((e.code(), e.message().starts_with("rtt")), (ErrorCode::ConfigInvalid, true));
    assert!(!permit.is_released(), "a refused release leaves the permit held");
    assert_eq!(Outcome::parse("timeout").expect_err("unknown").code(), ErrorCode::ConfigInvalid);
}

#[test]
fn a_full_limit_rejects_with_the_limit_and_the_inflight_count() {
    let limiter = AdaptiveLimiter::new(fixed(2)).expect("valid");
    let a = limiter.try_acquire(None).expect("ok").permit().expect("granted");
    let _b = limiter.try_acquire(None).expect("ok").permit().expect("granted");
    match limiter.try_acquire(None).expect("ok") {
        Admission::Rejected(r) => {
            assert_eq!((r.limit, r.inflight), (2, 2));
            assert_eq!(r.retry_after_secs(), 1, "no window yet: a one-second hint");
        }
        Admission::Granted(_) => panic!("over the limit"),
    }
    drop(a);
    assert!(limiter.try_acquire(None).expect("ok").permit().is_some(), "the freed slot is available");
}

#[test]
fn releasing_twice_is_harmless_and_a_dropped_permit_counts_as_leaked() {
    let limiter = AdaptiveLimiter::new(fixed(5)).expect("valid");
    let mut p = limiter.try_acquire(None).expect("ok").permit().expect("granted");
    assert!(p.release(Outcome::Success));
    assert!(!p.release(Outcome::Dropped), "second release does nothing");
    assert_eq!(p.release_with_rtt_ns(Outcome::Success, 5), Ok(false));
    drop(p);
    let leaked = limiter.try_acquire(None).expect("ok").permit().expect("granted");
    drop(leaked);
    let guarded = limiter.try_acquire(None).expect("ok").permit().expect("granted").guard();
    drop(guarded);
    limiter.try_acquire(None).expect("ok").permit().expect("granted").guard().dropped();
    let m = limiter.metrics();
    assert_eq!((m.inflight, m.acquired, m.succeeded, m.dropped), (0, 4, 1, 1));
    assert_eq!((m.ignored, m.leaked), (2, 1), "the bare permit leaked; the guard's drop is an ignore");
}

#[test]
fn round_trips_are_measured_on_the_injected_clock_and_short_ones_are_ignored() {
    let clock = VirtualClock::new(0);
    let config = AdaptiveConfig {
        window_min_samples: Some(1),
        initial_limit: Some(1),
        max_limit: Some(1),
        ..AdaptiveConfig::new(AlgorithmKind::Gradient2)
    };
    let limiter = AdaptiveLimiter::with_clock(config, Arc::new(clock.clone())).expect("valid");
    for rtt_ms in [10, 10, 10] {
        let mut p = limiter.try_acquire(None).expect("ok").permit().expect("granted");
        clock.advance(rtt_ms * 1_000_000);
        p.release(Outcome::Success);
    }
    let mut p = limiter.try_acquire(None).expect("ok").permit().expect("granted");
    p.release_with_rtt_ns(Outcome::Success, 50_000).expect("valid"); // 50 µs < minRttUs 100
    let m = limiter.metrics();
    assert_eq!(m.short_rtts, 1);
    assert_eq!(m.windows, 3, "one-sample windows; the short sample made none");
    assert_eq!(m.baseline_rtt_us, 10_000, "the first window is skipped, the next ones are 10 ms");
}

#[test]
fn waiters_are_served_fifo_or_lifo() {
    for (order, expected) in [(QueueOrder::Fifo, [0, 1, 2]), (QueueOrder::Lifo, [2, 1, 0])] {
        let limiter = AdaptiveLimiter::new(AdaptiveConfig { order, ..fixed(1) }).expect("valid");
        let mut holder = limiter.try_acquire(None).expect("ok").permit().expect("granted");
        let served = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        for i in 0..3 {
            let (l, served) = (limiter.clone(), served.clone());
            threads.push(std::thread::spawn(move || {
                let mut p = l.acquire_blocking(None, Duration::from_secs(30)).expect("ok").permit().expect("granted");
                served.lock().unwrap().push(i);
                p.release(Outcome::Success);
            }));
            // Queue them in order: wait until this one is waiting.
            while limiter.metrics().waiting < i + 1 {
                std::thread::yield_now();
            }
        }
        holder.release(Outcome::Success);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*served.lock().unwrap(), expected, "{order:?}");
    }
}

#[tokio::test]
async fn an_async_wait_times_out_with_a_rejection_and_leaves_the_queue() {
    let limiter = AdaptiveLimiter::new(fixed(1)).expect("valid");
    let mut held = limiter.try_acquire(None).expect("ok").permit().expect("granted");
    match limiter.acquire(None, Duration::from_millis(20)).await.expect("ok") {
        Admission::Rejected(r) => assert_eq!((r.limit, r.inflight), (1, 1)),
        Admission::Granted(_) => panic!("the limit is full"),
    }
    assert_eq!(limiter.metrics().waiting, 0);
    let l = limiter.clone();
    let waiter = tokio::spawn(async move { l.acquire(None, Duration::from_secs(30)).await });
    while limiter.metrics().waiting == 0 {
        tokio::task::yield_now().await;
    }
    held.release(Outcome::Success);
    let mut p = waiter.await.unwrap().expect("ok").permit().expect("handed the freed permit");
    assert_eq!(limiter.inflight(), 1);
    p.release(Outcome::Success);
}

/// Polls `fut` once: it must be waiting.
async fn poll_once<F: std::future::Future>(fut: std::pin::Pin<&mut F>) {
    tokio::select! {
        biased;
        _ = fut => panic!("the limit is full: the acquire must wait"),
        () = std::future::ready(()) => {}
    }
}

#[tokio::test]
async fn an_async_wait_dropped_before_its_grant_leaves_the_queue_and_takes_no_permit() {
    let limiter = AdaptiveLimiter::new(fixed(1)).expect("valid");
    let mut held = limiter.try_acquire(None).expect("ok").permit().expect("granted");
    // Dropped while queued (a tower service future dropped with its request, a select! arm).
    let mut waiting = Box::pin(limiter.acquire(None, Duration::from_secs(60)));
    poll_once(waiting.as_mut()).await;
    assert_eq!(limiter.metrics().waiting, 1);
    drop(waiting);
    assert_eq!(limiter.metrics().waiting, 0, "the dropped wait left the queue");
    held.release(Outcome::Success);
    assert_eq!(limiter.inflight(), 0, "the freed permit went to no one");
    let m = limiter.metrics();
    assert_eq!((m.acquired, m.rejected, m.ignored, m.leaked), (1, 0, 0, 0), "{m:?}");

    // Dropped after its grant but before it was polled again: the permit is given back as
    // `ignore` (not `leaked`: nothing was forgotten by the caller).
    let mut held = limiter.try_acquire(None).expect("ok").permit().expect("granted");
    let mut granted = Box::pin(limiter.acquire(None, Duration::from_secs(60)));
    poll_once(granted.as_mut()).await;
    held.release(Outcome::Success);
    assert_eq!(limiter.inflight(), 1, "handed to the waiter");
    drop(granted);
    assert_eq!(limiter.inflight(), 0, "given back");
    let m = limiter.metrics();
    assert_eq!((m.acquired, m.ignored, m.leaked, m.waiting), (3, 1, 0, 0), "{m:?}");
}

#[test]
fn a_blocking_wait_cancelled_from_another_thread_returns_at_once_and_takes_no_permit() {
    let limiter = AdaptiveLimiter::new(fixed(1)).expect("valid");
    let mut held = limiter.try_acquire(None).expect("ok").permit().expect("granted");
    let cancel = Cancel::new();
    let (l, c) = (limiter.clone(), cancel.clone());
    let waiter = std::thread::spawn(move || l.acquire_blocking_cancellable(None, Duration::from_secs(600), &c));
    while limiter.metrics().waiting == 0 {
        std::thread::yield_now();
    }
    cancel.cancel();
    match waiter.join().unwrap().expect("ok") {
        Admission::Rejected(r) => assert_eq!((r.limit, r.inflight), (1, 1)),
        Admission::Granted(_) => panic!("the limit is full"),
    }
    assert!(cancel.is_cancelled());
    let m = limiter.metrics();
    assert_eq!((m.waiting, m.rejected), (0, 0), "left the queue; a cancel is not the limiter's refusal");
    held.release(Outcome::Success);
    assert_eq!(limiter.inflight(), 0, "the freed permit went to no one");

    // Cancelled before the call: no permit even with room, and no wait.
    let c = Cancel::new();
    c.cancel();
    assert!(limiter.acquire_blocking_cancellable(None, Duration::from_secs(600), &c).expect("ok").permit().is_none());
    assert_eq!(limiter.inflight(), 0);

    // Not cancelled: as `acquire_blocking`.
    let c = Cancel::new();
    let mut p =
        limiter.acquire_blocking_cancellable(None, Duration::from_secs(1), &c).expect("ok").permit().expect("room");
    let late = limiter.acquire_blocking_cancellable(None, Duration::from_millis(10), &c).expect("ok");
    assert!(late.permit().is_none(), "timed out");
    assert_eq!(limiter.metrics().rejected, 1, "a timeout is a rejection");
    p.release(Outcome::Success);
}

/// Cancelled waiters leave the queue from where they stand (its head, its middle): the others
/// keep their order, served as if the cancelled had never queued, whichever blocking acquire
/// they called; and a cancel counts no rejection.
#[test]
fn cancelled_waiters_leave_the_others_served_in_order() {
    for (order, expected) in [(QueueOrder::Fifo, [1, 3]), (QueueOrder::Lifo, [3, 1])] {
        let limiter = AdaptiveLimiter::new(AdaptiveConfig { order, ..fixed(1) }).expect("valid");
        let mut holder = limiter.try_acquire(None).expect("ok").permit().expect("granted");
        let served = Arc::new(std::sync::Mutex::new(Vec::new()));
        let cancels: Vec<Cancel> = (0..4).map(|_| Cancel::new()).collect();
        let mut threads = Vec::new();
        for (i, cancel) in cancels.iter().enumerate() {
            let (l, c, served) = (limiter.clone(), cancel.clone(), served.clone());
            threads.push(std::thread::spawn(move || {
                // The last waiter has no cancel: both blocking acquires share one queue.
                let timeout = Duration::from_secs(30);
                let admission = if i == 3 {
                    l.acquire_blocking(None, timeout)
                } else {
                    l.acquire_blocking_cancellable(None, timeout, &c)
                };
                let Some(mut p) = admission.expect("ok").permit() else { return false };
                served.lock().unwrap().push(i);
                p.release(Outcome::Success);
                true
            }));
            // Queue them in order: wait until this one is waiting.
            while limiter.metrics().waiting < i as u32 + 1 {
                std::thread::yield_now();
            }
        }
        // 0 is the head of a FIFO queue and its tail in LIFO; 2 stands inside it in both.
        cancels[0].cancel();
        cancels[2].cancel();
        let mut threads: Vec<_> = threads.into_iter().map(Some).collect();
        for i in [0, 2] {
            assert!(!threads[i].take().unwrap().join().unwrap(), "{order:?}: cancelled {i} took no permit");
        }
        let m = limiter.metrics();
        assert_eq!((m.waiting, m.rejected), (2, 0), "{order:?}: left the queue, and no refusal counted");
        holder.release(Outcome::Success);
        for t in threads.into_iter().flatten() {
            assert!(t.join().unwrap(), "{order:?}: a waiter behind the cancelled ones was served");
        }
        assert_eq!(*served.lock().unwrap(), expected, "{order:?}");
        let m = limiter.metrics();
        assert_eq!((m.acquired, m.rejected, m.waiting, m.inflight), (3, 0, 0, 0), "{order:?}: {m:?}");
    }
}

#[test]
fn partitions_keep_their_share_only_when_the_limit_is_full() {
    let parts = vec![
        PartitionConfig { name: "live".into(), percent: 80.0 },
        PartitionConfig { name: "batch".into(), percent: 20.0 },
    ];
    let limiter = AdaptiveLimiter::new(AdaptiveConfig { partitions: parts, ..fixed(10) }).expect("valid");
    // Only batch asks: it may use the whole limit.
    let mut batch: Vec<_> =
        (0..10).map(|_| limiter.try_acquire(Some("batch")).expect("ok").permit().expect("granted")).collect();
    assert!(limiter.try_acquire(Some("batch")).expect("ok").permit().is_none());
    // Live arrives (refused: the limit is full), then each slot batch frees goes to live.
    assert!(limiter.try_acquire(Some("live")).expect("ok").permit().is_none());
    let mut live = Vec::new();
    for _ in 0..8 {
        batch.pop().unwrap().release(Outcome::Success);
        assert!(limiter.try_acquire(Some("batch")).expect("ok").permit().is_none(), "batch is over its share");
        live.push(limiter.try_acquire(Some("live")).expect("ok").permit().expect("live is under its share"));
    }
    assert_eq!(limiter.metrics().partitions, vec![("live".to_string(), 8), ("batch".to_string(), 2)]);
}

/// 8 threads acquire and release as fast as they can (every 64th through the waiter path) and
/// count the permits they hold; returns the most they ever held at once and the limiter.
fn hammer(config: AdaptiveConfig) -> (u32, AdaptiveLimiter) {
    let limiter = AdaptiveLimiter::new(config).expect("valid");
    let held = Arc::new(AtomicU32::new(0));
    let most = Arc::new(AtomicU32::new(0));
    let threads: Vec<_> = (0..8u32)
        .map(|t| {
            let (limiter, held, most) = (limiter.clone(), held.clone(), most.clone());
            std::thread::spawn(move || {
                let mut rng = u64::from(t) + 1;
                for i in 0..20_000u32 {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let admission = if i % 64 == 0 {
                        limiter.acquire_blocking(None, Duration::from_millis(1)).expect("ok")
                    } else {
                        limiter.try_acquire(None).expect("ok")
                    };
                    if let Admission::Granted(mut p) = admission {
                        // Counted after the grant and uncounted before the release: never more
                        // than the limiter's own in-flight count.
                        most.fetch_max(held.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                        std::hint::spin_loop();
                        held.fetch_sub(1, Ordering::SeqCst);
                        let outcome = if rng % 10 == 0 { Outcome::Dropped } else { Outcome::Success };
                        p.release_with_rtt_ns(outcome, (rng % 5_000_000) as i64).expect("valid");
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(limiter.inflight(), 0, "every slot came back");
    (most.load(Ordering::SeqCst), limiter)
}

#[test]
fn inflight_never_exceeds_a_fixed_limit_under_8_threads() {
    // A limit of 3 under 8 threads: at no instant are more than 3 permits held.
    let (most, limiter) = hammer(fixed(3));
    assert!(most <= 3, "{most} permits held at once with a limit of 3");
    assert_eq!(limiter.metrics().limit, 3);
}

#[test]
fn inflight_never_exceeds_the_limit_under_8_threads() {
    // A limit that moves (gradient2 on one-sample windows, round trips of varying length) between
    // 1 and 4. A lowered limit may sit below what is already in flight (those permits were granted
    // under the old one; new grants wait until in-flight falls under it), so the bound every instant
    // must keep is the largest limit: 4 of 8 threads.
    let config = AdaptiveConfig {
        window_min_samples: Some(1),
        min_rtt_us: Some(0),
        initial_limit: Some(2),
        min_limit: Some(1),
        max_limit: Some(4),
        ..AdaptiveConfig::default()
    };
    let (most, limiter) = hammer(config);
    assert!(most <= 4, "{most} permits held at once with a limit of at most 4");
    let m = limiter.metrics();
    assert!(m.windows > 1000, "the limit moved while the threads ran ({} windows)", m.windows);
}
