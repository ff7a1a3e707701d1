//! [`AdaptiveLimiter`]: admission against the limit, and the window that moves it.
//!
//! Everything that changes together lives under one lock: the in-flight counts, the open
//! window, the limit and the waiter queue. An admission is a compare and an increment, a release
//! a decrement and a push into the window; both hold the lock for tens of nanoseconds, and the
//! limit's update runs once a window under it too. One lock is what makes "in flight never
//! exceeds the limit" a plain invariant (the loom model and the 8-thread stress test check it),
//! also while a window lowers the limit and waiters are handed permits.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::algorithm::Input;
use super::clock::{MonotonicClock, Ticks};
use super::config::{AdaptiveConfig, QueueOrder, Resolved};
use super::metrics::AdaptiveMetrics;
use super::outcome::{Outcome, Rejection};
use super::partition::Partitions;
use super::permit::Permit;
use super::sync::{Mutex, MutexGuard};
use super::waiter::{Slot, Waiter};
use super::window::{Baseline, Window};
use crate::error::{Error, Result};

/// A concurrency limit that follows the service's latency; cheap to clone (clones share it).
///
/// ```
/// use throttlekit::concurrency::{AdaptiveConfig, AdaptiveLimiter, Admission, AlgorithmKind, Outcome};
///
/// let limiter = AdaptiveLimiter::new(AdaptiveConfig::new(AlgorithmKind::Gradient2))?;
/// match limiter.try_acquire(None)? {
///     Admission::Granted(permit) => {
///         // ... call the service; the guard releases as `ignore` if this scope unwinds ...
///         permit.guard().success();
///     }
///     Admission::Rejected(r) => println!("shed: {} in flight of {}", r.inflight, r.limit),
/// }
/// assert_eq!(limiter.inflight(), 0);
/// # Ok::<(), throttlekit::Error>(())
/// ```
#[derive(Clone)]
pub struct AdaptiveLimiter {
    pub(super) inner: Arc<Inner>,
}

/// The answer to an acquire: a permit, or a rejection.
#[must_use = "a granted permit must be released"]
#[derive(Debug)]
pub enum Admission {
    /// Admitted: release the permit when the request ends.
    Granted(Permit),
    /// Refused: the limit was full (or a wait timed out).
    Rejected(Rejection),
}

impl Admission {
    /// The permit, if granted.
    pub fn permit(self) -> Option<Permit> {
        match self {
            Admission::Granted(p) => Some(p),
            Admission::Rejected(_) => None,
        }
    }
}

pub(super) struct Inner {
    config: Resolved,
    clock: Arc<dyn Ticks>,
    state: Mutex<State>,
}

struct State {
    estimate: f64,
    limit: u32,
    inflight: u32,
    partitions: Partitions,
    window: Window,
    baseline: Baseline,
    slow_start: bool,
    latency_ns: Option<f64>,
    waiters: VecDeque<Waiter>,
    m: AdaptiveMetrics,
}

impl AdaptiveLimiter {
    /// A limiter on the process's monotonic clock; bad options are `config_invalid`.
    pub fn new(config: AdaptiveConfig) -> Result<AdaptiveLimiter> {
        AdaptiveLimiter::with_clock(config, Arc::new(MonotonicClock::default()))
    }

    /// A limiter on `clock` (a [`super::VirtualClock`] in tests and simulations).
    pub fn with_clock(config: AdaptiveConfig, clock: Arc<dyn Ticks>) -> Result<AdaptiveLimiter> {
        let config = config.validate()?;
        let limit = config.initial_limit;
        let state = State {
            estimate: limit,
            limit: limit as u32,
            inflight: 0,
            partitions: Partitions::new(&config.partitions),
            window: Window::default(),
            baseline: Baseline::default(),
            slow_start: config.slow_start,
            latency_ns: None,
            waiters: VecDeque::new(),
            m: AdaptiveMetrics::default(),
        };
        Ok(AdaptiveLimiter { inner: Arc::new(Inner { config, clock, state: Mutex::new(state) }) })
    }

    /// A permit if the limit (and the partition's share, when it is full) has room, else a
    /// rejection. An unknown partition is `config_invalid`.
    pub fn try_acquire(&self, partition: Option<&str>) -> Result<Admission> {
        let p = self.inner.partition(partition)?;
        let now = self.inner.clock.now_ns();
        let mut s = self.inner.state();
        Ok(match s.admit(p) {
            true => Admission::Granted(Permit::new(self.inner.clone(), p, now)),
            false => Admission::Rejected(s.reject()),
        })
    }

    /// Like [`try_acquire`](Self::try_acquire), but waits up to `timeout` for a permit, in the
    /// configured order (FIFO or LIFO), without blocking the thread.
    pub async fn acquire(&self, partition: Option<&str>, timeout: Duration) -> Result<Admission> {
        let p = self.inner.partition(partition)?;
        let slot = match self.enqueue(p) {
            Ok(admission) => return Ok(admission),
            Err(slot) => slot,
        };
        let granted = tokio::time::timeout(timeout, slot.granted()).await.ok();
        Ok(self.settle(p, &slot, granted))
    }

    /// [`acquire`](Self::acquire) for a thread that may block (sync callers and bindings).
    pub fn acquire_blocking(&self, partition: Option<&str>, timeout: Duration) -> Result<Admission> {
        let p = self.inner.partition(partition)?;
        let deadline = Instant::now() + timeout;
        let slot = match self.enqueue(p) {
            Ok(admission) => return Ok(admission),
            Err(slot) => slot,
        };
        let granted = slot.wait_until(deadline);
        Ok(self.settle(p, &slot, granted))
    }

    /// Admits now, or queues a waiter (with zero timeout semantics left to the caller).
    fn enqueue(&self, p: Option<usize>) -> std::result::Result<Admission, Arc<Slot>> {
        let now = self.inner.clock.now_ns();
        let mut s = self.inner.state();
        if s.admit(p) {
            return Ok(Admission::Granted(Permit::new(self.inner.clone(), p, now)));
        }
        let slot = Arc::new(Slot::default());
        s.waiters.push_back(Waiter { slot: slot.clone(), partition: p });
        Err(slot)
    }

    /// After a wait: a permit if the slot was granted (even just after the deadline), else
    /// leaves the queue and returns a rejection.
    fn settle(&self, p: Option<usize>, slot: &Arc<Slot>, granted: Option<u64>) -> Admission {
        if let Some(at) = granted {
            return Admission::Granted(Permit::new(self.inner.clone(), p, at));
        }
        let mut s = self.inner.state();
        match s.waiters.iter().position(|w| Arc::ptr_eq(&w.slot, slot)) {
            Some(i) => {
                s.waiters.remove(i);
                Admission::Rejected(s.reject())
            }
            // Granted between the deadline and the lock: the permit is ours.
            None => {
                let at = slot.granted_at().expect("a waiter leaves the queue only when granted");
                Admission::Granted(Permit::new(self.inner.clone(), p, at))
            }
        }
    }

    /// The current limit.
    pub fn limit(&self) -> u32 {
        self.inner.state().limit
    }

    /// Permits held now.
    pub fn inflight(&self) -> u32 {
        self.inner.state().inflight
    }

    /// A snapshot of every counter.
    pub fn metrics(&self) -> AdaptiveMetrics {
        let s = self.inner.state();
        let mut m = s.m.clone();
        m.limit = s.limit;
        m.inflight = s.inflight;
        m.waiting = s.waiters.len() as u32;
        m.baseline_rtt_us = s.baseline.get().map_or(0, |b| (b / 1000.0) as u64);
        m.latency_us = s.latency_ns.map_or(0, |l| (l / 1000.0) as u64);
        m.slow_start = s.slow_start;
        m.partitions =
            s.partitions.names().iter().zip(&s.partitions.states).map(|(n, st)| (n.clone(), st.inflight)).collect();
        m
    }
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn partition(&self, name: Option<&str>) -> Result<Option<usize>> {
        let Some(name) = name else { return Ok(None) };
        match self.config.partitions.iter().position(|p| p.name == name) {
            Some(i) => Ok(Some(i)),
            None => Err(Error::config("partition", &format!("{name:?} is not a configured partition"))),
        }
    }

    pub(super) fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }

    /// Ends a permit: one less in flight, a sample for the window, and the freed slot handed to
    /// a waiter. `rtt_ns` is the request's round trip.
    pub(super) fn release(&self, partition: Option<usize>, outcome: Outcome, rtt_ns: u64, leaked: bool) {
        let mut s = self.state();
        let s = &mut *s;
        s.inflight -= 1;
        s.partitions.add(partition, -1);
        if leaked {
            s.m.leaked += 1;
        }
        match outcome {
            Outcome::Ignore => s.m.ignored += 1,
            Outcome::Dropped => {
                s.m.dropped += 1;
                s.window.add_drop();
            }
            Outcome::Success => {
                s.m.succeeded += 1;
                if rtt_ns < self.config.min_rtt_ns {
                    s.m.short_rtts += 1;
                } else {
                    s.window.add_rtt(rtt_ns);
                }
            }
        }
        if s.window.samples() >= self.config.window_min_samples.max(s.limit as usize) {
            s.close_window(&self.config);
        }
        // The clock is read only when a waiter can be handed the slot: most releases find no
        // waiter, and a clock read is a large share of an uncontended acquire + release.
        if !s.waiters.is_empty() {
            s.dispatch(self.config.order, self.now_ns());
        }
    }
}

impl State {
    fn admit(&mut self, p: Option<usize>) -> bool {
        let window = self.m.windows;
        self.partitions.seen(p, window);
        if !self.partitions.admits(p, self.limit, self.inflight, window) {
            return false;
        }
        self.take(p);
        true
    }

    fn take(&mut self, p: Option<usize>) {
        self.inflight += 1;
        self.partitions.add(p, 1);
        self.window.peak = self.window.peak.max(self.inflight);
        self.m.acquired += 1;
    }

    fn reject(&mut self) -> Rejection {
        self.m.rejected += 1;
        let hint = self.latency_ns.or(self.baseline.get()).map_or(1000, |ns| (ns / 1e6).ceil() as u64);
        Rejection { limit: self.limit, inflight: self.inflight, retry_after_ms: hint.max(1) }
    }

    /// Hands free slots to waiters, in order, skipping those whose partition may not take one.
    fn dispatch(&mut self, order: QueueOrder, now_ns: u64) {
        while self.inflight < self.limit && !self.waiters.is_empty() {
            let window = self.m.windows;
            let n = self.waiters.len();
            let pick = (0..n)
                .map(|i| if order == QueueOrder::Fifo { i } else { n - 1 - i })
                .find(|&i| self.partitions.admits(self.waiters[i].partition, self.limit, self.inflight, window));
            let Some(i) = pick else { return };
            let w = self.waiters.remove(i).expect("index in range");
            self.take(w.partition);
            w.slot.grant(now_ns);
        }
    }

    /// The window is full: summarize it, let the algorithm move the limit, and apply the rules
    /// common to every algorithm (slow start, the in-flight peak cap, the bounds).
    fn close_window(&mut self, c: &Resolved) {
        let summary = self.window.close(c.percentile, self.inflight);
        self.m.windows += 1;
        self.latency_ns = summary.latency;
        if let Some(l) = summary.success_latency {
            self.baseline.observe(l, self.estimate <= c.min_limit);
        }
        if c.algorithm.is_fixed() {
            return;
        }
        // Without a baseline only a drop signal can be read (every rule handles it without one):
        // a service whose every request times out sheds from its first windows on.
        let baseline = match (self.baseline.get(), summary.latency) {
            (Some(b), _) => b,
            (None, None) => f64::INFINITY,
            (None, Some(_)) => return,
        };
        let input = Input { limit: self.estimate, window: summary, baseline };
        let update = c.algorithm.update(&input);
        let mut next = update.limit;
        if self.slow_start {
            if update.congested {
                self.slow_start = false;
            } else if input.utilized() {
                next = next.max(self.estimate * 2.0);
            }
        }
        // Growth is capped at a multiple of what was actually in flight: a limit that was not
        // used cannot be known to be safe (idle time must not inflate it).
        let cap = c.peak_multiple * f64::from(summary.peak.max(1));
        if next > self.estimate {
            next = next.min(cap.max(self.estimate));
        }
        self.estimate = next.clamp(c.min_limit, c.max_limit);
        self.limit = self.estimate as u32;
    }
}

impl std::fmt::Debug for AdaptiveLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.inner.state();
        f.debug_struct("AdaptiveLimiter").field("limit", &s.limit).field("inflight", &s.inflight).finish()
    }
}

/// The loom model (`scripts/loom.sh`): every interleaving of two threads acquiring and releasing
/// while their releases close one-sample windows that move the limit; no admission ever leaves
/// more in flight than the limit, and every slot comes back.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;

    fn worker(limiter: &AdaptiveLimiter, rtt_ns: i64) {
        for _ in 0..2 {
            if let Ok(Admission::Granted(mut p)) = limiter.try_acquire(None) {
                let s = limiter.inner.state();
                assert!(s.inflight <= s.limit, "{} in flight, limit {}", s.inflight, s.limit);
                drop(s);
                p.release_with_rtt_ns(Outcome::Success, rtt_ns).expect("valid");
            }
        }
    }

    #[test]
    fn inflight_never_exceeds_the_limit() {
        loom::model(|| {
            let config = AdaptiveConfig {
                initial_limit: Some(1),
                max_limit: Some(3),
                window_min_samples: Some(1),
                min_rtt_us: Some(0),
                ..AdaptiveConfig::default()
            };
            let limiter = AdaptiveLimiter::new(config).expect("valid");
            let other = {
                let l = limiter.clone();
                loom::thread::spawn(move || worker(&l, 1_000_000))
            };
            worker(&limiter, 9_000_000);
            other.join().unwrap();
            assert_eq!(limiter.inflight(), 0);
        });
    }
}
