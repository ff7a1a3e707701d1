//! [`AdaptiveLimiter`]: admission against the limit, and the window that moves it.
//!
//! The hot path takes no shared lock. The limit and the in-flight count share one atomic word,
//! so an admission is one compare-and-swap of "in flight + 1, if below the limit" and a limit
//! the window lowers can never be passed by an admission that raced with it: "in flight never
//! exceeds the limit" holds at every instant (the loom model and the 8-thread stress test check
//! it). A release decrements the word and pushes its sample into its thread's shard
//! ([`super::shard`]); one shared counter says when the window is full. Only the window's close
//! (once per window of samples), waiting, and partitions (whose shares are read together with
//! the count) take the limiter's lock.

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
use super::shard::{self, SHARDS, Shard};
use super::sync::{AtomicI64, AtomicU32, AtomicU64, Mutex, MutexGuard, Ordering::SeqCst};
use super::waiter::{Cancel, Queued, Slot, Waiter};
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

/// The limit (high half) and the in-flight count (low half) of [`Inner::word`].
fn unpack(word: u64) -> (u32, u32) {
    ((word >> 32) as u32, word as u32)
}

fn pack(limit: u32, inflight: u32) -> u64 {
    (u64::from(limit) << 32) | u64::from(inflight)
}

pub(super) struct Inner {
    config: Resolved,
    clock: Arc<dyn Ticks>,
    /// The limit and the in-flight count, changed together by compare-and-swap ([`pack`]).
    word: AtomicU64,
    /// Samples of the open window, counted by the releases that pushed them and taken off by the
    /// close that consumed them (below 0 for a moment when a close drains a sample before its
    /// release counted it).
    pending: AtomicI64,
    /// The highest in-flight count since the window opened.
    peak: AtomicU32,
    /// Waiters queued (the queue is under the lock; a release reads this to know it must look).
    waiting: AtomicU64,
    /// The retry hint of a rejection: the latest latency (or the baseline), set at each close.
    retry_after_ms: AtomicU64,
    shards: Box<[Shard]>,
    state: Mutex<State>,
}

/// What only the window's close, waiting and partitions change: under the lock.
struct State {
    estimate: f64,
    partitions: Partitions,
    /// The samples drained from the shards, until the window closes.
    window: Window,
    baseline: Baseline,
    slow_start: bool,
    latency_ns: Option<f64>,
    waiters: VecDeque<Waiter>,
    windows: u64,
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
            partitions: Partitions::new(&config.partitions),
            window: Window::default(),
            baseline: Baseline::default(),
            slow_start: config.slow_start,
            latency_ns: None,
            waiters: VecDeque::new(),
            windows: 0,
        };
        let inner = Inner {
            config,
            clock,
            word: AtomicU64::new(pack(limit as u32, 0)),
            pending: AtomicI64::new(0),
            peak: AtomicU32::new(0),
            waiting: AtomicU64::new(0),
            retry_after_ms: AtomicU64::new(1000),
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            state: Mutex::new(state),
        };
        Ok(AdaptiveLimiter { inner: Arc::new(inner) })
    }

    /// A permit if the limit (and the partition's share, when it is full) has room, else a
    /// rejection. An unknown partition is `config_invalid`.
    pub fn try_acquire(&self, partition: Option<&str>) -> Result<Admission> {
        let p = self.inner.partition(partition)?;
        let now = self.inner.clock.now_ns();
        Ok(match self.inner.admit(p) {
            true => Admission::Granted(Permit::new(self.inner.clone(), p, now)),
            false => Admission::Rejected(self.inner.reject()),
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
        // Dropped while waiting (a `select!` arm, a service future dropped with its request),
        // the waiter leaves the queue, or gives back the permit it was granted meanwhile: else
        // the grant would hold a slot of the limit that no permit ever releases.
        let queued = Queued { limiter: self, partition: p, slot: Some(slot) };
        let granted = tokio::time::timeout(timeout, queued.slot().granted()).await.ok();
        let (p, slot) = queued.settled();
        Ok(self.settle(p, &slot, granted, false))
    }

    /// [`acquire`](Self::acquire) for a thread that may block (sync callers and bindings).
    pub fn acquire_blocking(&self, partition: Option<&str>, timeout: Duration) -> Result<Admission> {
        self.wait_blocking(partition, timeout, None)
    }

    /// [`acquire_blocking`](Self::acquire_blocking) that `cancel`, fired from another thread,
    /// ends at once: the waiter leaves the queue and the answer is a rejection that the metrics
    /// do not count (the caller gave up; the limiter refused nothing). Fired before the call, it
    /// takes no permit even with room. A grant that beat the cancel is the caller's permit (a
    /// binding gives it back as `ignore`).
    pub fn acquire_blocking_cancellable(
        &self,
        partition: Option<&str>,
        timeout: Duration,
        cancel: &Cancel,
    ) -> Result<Admission> {
        self.wait_blocking(partition, timeout, Some(cancel))
    }

    /// The one body of the blocking acquires: a wait without a `cancel` is one that never fires.
    fn wait_blocking(&self, partition: Option<&str>, timeout: Duration, cancel: Option<&Cancel>) -> Result<Admission> {
        let p = self.inner.partition(partition)?;
        if cancel.is_some_and(Cancel::is_cancelled) {
            return Ok(Admission::Rejected(self.inner.rejection()));
        }
        let deadline = Instant::now() + timeout;
        let slot = match self.enqueue(p) {
            Ok(admission) => return Ok(admission),
            Err(slot) => slot,
        };
        let granted = match cancel {
            Some(c) => c.wait(&slot, deadline),
            None => slot.wait_until(deadline),
        };
        Ok(self.settle(p, &slot, granted, cancel.is_some_and(Cancel::is_cancelled)))
    }

    /// Admits now, or queues a waiter (with zero timeout semantics left to the caller).
    fn enqueue(&self, p: Option<usize>) -> std::result::Result<Admission, Arc<Slot>> {
        let inner = &*self.inner;
        let now = inner.clock.now_ns();
        let mut s = inner.state();
        if s.admit(inner, p) {
            return Ok(Admission::Granted(Permit::new(self.inner.clone(), p, now)));
        }
        let slot = Arc::new(Slot::default());
        s.waiters.push_back(Waiter { slot: slot.clone(), partition: p });
        inner.waiting.store(s.waiters.len() as u64, SeqCst);
        // A release between the admission above and the store saw no waiter and handed its slot
        // to nobody: look again now that releases will see this one.
        s.dispatch(inner, now);
        Err(slot)
    }

    /// A wait that ended early: leaves the queue (`None`), or the permit it was granted
    /// meanwhile.
    pub(super) fn leave(&self, p: Option<usize>, slot: &Arc<Slot>) -> Option<Permit> {
        let mut s = self.inner.state();
        match s.waiters.iter().position(|w| Arc::ptr_eq(&w.slot, slot)) {
            Some(i) => {
                s.waiters.remove(i);
                self.inner.waiting.store(s.waiters.len() as u64, SeqCst);
                None
            }
            None => {
                drop(s);
                let at = slot.granted_at().expect("a waiter leaves the queue only when granted");
                Some(Permit::new(self.inner.clone(), p, at))
            }
        }
    }

    /// After a wait: a permit if the slot was granted (even just after the deadline or the
    /// cancel), else leaves the queue and returns a rejection, counted unless the wait was
    /// `cancelled` (the caller gave up; the limiter refused nothing).
    fn settle(&self, p: Option<usize>, slot: &Arc<Slot>, granted: Option<u64>, cancelled: bool) -> Admission {
        if let Some(at) = granted {
            return Admission::Granted(Permit::new(self.inner.clone(), p, at));
        }
        match self.leave(p, slot) {
            // Granted between the deadline (or the cancel) and the lock: the permit is ours.
            Some(permit) => Admission::Granted(permit),
            None if cancelled => Admission::Rejected(self.inner.rejection()),
            None => Admission::Rejected(self.inner.reject()),
        }
    }

    /// The current limit.
    pub fn limit(&self) -> u32 {
        unpack(self.inner.word.load(SeqCst)).0
    }

    /// Permits held now.
    pub fn inflight(&self) -> u32 {
        unpack(self.inner.word.load(SeqCst)).1
    }

    /// A snapshot of every counter (exact when no other thread is acquiring or releasing).
    pub fn metrics(&self) -> AdaptiveMetrics {
        let s = self.inner.state();
        let mut m = AdaptiveMetrics::default();
        for shard in self.inner.shards.iter() {
            m.rejected += shard.rejected();
            let d = shard.lock();
            m.succeeded += d.succeeded;
            m.dropped += d.dropped;
            m.ignored += d.ignored;
            m.leaked += d.leaked;
            m.short_rtts += d.short_rtts;
        }
        (m.limit, m.inflight) = unpack(self.inner.word.load(SeqCst));
        // Every grant is released once or still held: counted from those, not on the hot path.
        m.acquired = m.succeeded + m.dropped + m.ignored + u64::from(m.inflight);
        m.waiting = s.waiters.len() as u32;
        m.windows = s.windows;
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

    /// Takes a slot if one is free: without the lock unless partitions share the limit or
    /// requests are waiting (a newcomer does not pass them).
    fn admit(&self, p: Option<usize>) -> bool {
        if !self.config.partitions.is_empty() || self.waiting.load(SeqCst) > 0 {
            return self.state().admit(self, p);
        }
        let mut word = self.word.load(SeqCst);
        loop {
            let (limit, inflight) = unpack(word);
            if inflight >= limit {
                return false;
            }
            match self.word.compare_exchange_weak(word, word + 1, SeqCst, SeqCst) {
                Ok(_) => break self.took(inflight + 1),
                Err(now) => word = now,
            }
        }
        true
    }

    /// Notes a grant that left `inflight` in flight (the window's peak).
    fn took(&self, inflight: u32) {
        if inflight > self.peak.load(SeqCst) {
            self.peak.fetch_max(inflight, SeqCst);
        }
    }

    fn reject(&self) -> Rejection {
        self.shards[shard::index()].rejected.fetch_add(1, SeqCst);
        self.rejection()
    }

    /// The rejection's numbers now, not counted (a cancelled wait's answer).
    fn rejection(&self) -> Rejection {
        let (limit, inflight) = unpack(self.word.load(SeqCst));
        Rejection { limit, inflight, retry_after_ms: self.retry_after_ms.load(SeqCst) }
    }

    /// Ends a permit: one less in flight, a sample for the window, and the freed slot handed to
    /// a waiter. `rtt_ns` is the request's round trip.
    pub(super) fn release(&self, partition: Option<usize>, outcome: Outcome, rtt_ns: u64, leaked: bool) {
        // A partition's count is read with the word under the lock, so it changes under it too.
        let mut locked = partition.map(|_| self.state());
        if let Some(s) = locked.as_mut() {
            s.partitions.add(partition, -1);
        }
        self.word.fetch_sub(1, SeqCst);
        let sample = {
            let mut d = self.shards[shard::index()].lock();
            if leaked {
                d.leaked += 1;
            }
            match outcome {
                Outcome::Ignore => {
                    d.ignored += 1;
                    false
                }
                Outcome::Dropped => {
                    d.dropped += 1;
                    d.window.add_drop();
                    true
                }
                Outcome::Success if rtt_ns < self.config.min_rtt_ns => {
                    d.succeeded += 1;
                    d.short_rtts += 1;
                    false
                }
                Outcome::Success => {
                    d.succeeded += 1;
                    d.window.add_rtt(rtt_ns);
                    true
                }
            }
        };
        let due = sample && self.pending.fetch_add(1, SeqCst) + 1 >= self.window_size() as i64;
        // The clock is read only when a waiter can be handed the slot: most releases find no
        // waiter, and a clock read is a large share of an uncontended acquire + release.
        if due || self.waiting.load(SeqCst) > 0 {
            let mut s = locked.unwrap_or_else(|| self.state());
            if due {
                s.close_if_full(self);
            }
            if !s.waiters.is_empty() {
                s.dispatch(self, self.now_ns());
            }
        }
    }

    /// The samples that close a window: `max(window_min_samples, limit)`.
    fn window_size(&self) -> usize {
        self.config.window_min_samples.max(unpack(self.word.load(SeqCst)).0 as usize)
    }

    fn set_limit(&self, limit: u32) {
        let _ = self.word.fetch_update(SeqCst, SeqCst, |w| Some(pack(limit, unpack(w).1)));
    }
}

impl State {
    /// Takes a slot under the lock (partitions, waiters): the shares are read with the count,
    /// and the compare-and-swap still guards against a release or a lock-free grant in between.
    fn admit(&mut self, inner: &Inner, p: Option<usize>) -> bool {
        let window = self.windows;
        self.partitions.seen(p, window);
        loop {
            let word = inner.word.load(SeqCst);
            let (limit, inflight) = unpack(word);
            if !self.partitions.admits(p, limit, inflight, window) {
                return false;
            }
            if inner.word.compare_exchange(word, word + 1, SeqCst, SeqCst).is_ok() {
                self.partitions.add(p, 1);
                inner.took(inflight + 1);
                return true;
            }
        }
    }

    /// Hands free slots to waiters, in order, skipping those whose partition may not take one.
    fn dispatch(&mut self, inner: &Inner, now_ns: u64) {
        while !self.waiters.is_empty() {
            let word = inner.word.load(SeqCst);
            let (limit, inflight) = unpack(word);
            if inflight >= limit {
                break;
            }
            let window = self.windows;
            let n = self.waiters.len();
            let pick = (0..n)
                .map(|i| if inner.config.order == QueueOrder::Fifo { i } else { n - 1 - i })
                .find(|&i| self.partitions.admits(self.waiters[i].partition, limit, inflight, window));
            let Some(i) = pick else { break };
            if inner.word.compare_exchange(word, word + 1, SeqCst, SeqCst).is_err() {
                continue;
            }
            let w = self.waiters.remove(i).expect("index in range");
            self.partitions.add(w.partition, 1);
            inner.took(inflight + 1);
            w.slot.grant(now_ns);
        }
        inner.waiting.store(self.waiters.len() as u64, SeqCst);
    }

    /// Drains the shards into the window and closes it if it holds a window's samples (another
    /// release may have closed it first).
    fn close_if_full(&mut self, inner: &Inner) {
        for shard in inner.shards.iter() {
            self.window.absorb(&mut shard.lock().window);
        }
        let n = self.window.samples();
        if n < inner.window_size() {
            return;
        }
        inner.pending.fetch_sub(n as i64, SeqCst);
        self.close_window(inner);
    }

    /// The window is full: summarize it, let the algorithm move the limit, and apply the rules
    /// common to every algorithm (slow start, the in-flight peak cap, the bounds).
    fn close_window(&mut self, inner: &Inner) {
        let c = &inner.config;
        let inflight = unpack(inner.word.load(SeqCst)).1;
        self.window.peak = inner.peak.swap(inflight, SeqCst);
        let summary = self.window.close(c.percentile, inflight);
        self.windows += 1;
        self.latency_ns = summary.latency;
        if let Some(l) = summary.success_latency {
            self.baseline.observe(l, self.estimate <= c.min_limit);
        }
        let hint = self.latency_ns.or(self.baseline.get()).map_or(1000, |ns| (ns / 1e6).ceil() as u64);
        inner.retry_after_ms.store(hint.max(1), SeqCst);
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
        inner.set_limit(self.estimate as u32);
    }
}

impl std::fmt::Debug for AdaptiveLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdaptiveLimiter").field("limit", &self.limit()).field("inflight", &self.inflight()).finish()
    }
}

/// The loom model (`scripts/loom.sh`): every interleaving of two threads acquiring and releasing
/// while their releases close one-sample windows that move the limit (each thread pushing into
/// a shard of its own, either one draining both); no admission ever leaves more in flight than
/// the limit, every slot comes back, and every sample is counted once.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use crate::concurrency::PartitionConfig;

    fn worker(limiter: &AdaptiveLimiter, partition: Option<&str>, rtt_ns: i64) {
        for _ in 0..2 {
            if let Ok(Admission::Granted(mut p)) = limiter.try_acquire(partition) {
                let (limit, inflight) = unpack(limiter.inner.word.load(SeqCst));
                assert!(inflight <= limit, "{inflight} in flight, limit {limit}");
                p.release_with_rtt_ns(Outcome::Success, rtt_ns).expect("valid");
            }
        }
    }

    fn model(partitions: Vec<PartitionConfig>, mine: Option<&'static str>, theirs: Option<&'static str>) {
        loom::model(move || {
            let config = AdaptiveConfig {
                initial_limit: Some(1),
                max_limit: Some(3),
                window_min_samples: Some(1),
                min_rtt_us: Some(0),
                partitions: partitions.clone(),
                ..AdaptiveConfig::default()
            };
            let limiter = AdaptiveLimiter::new(config).expect("valid");
            let other = {
                let l = limiter.clone();
                loom::thread::spawn(move || worker(&l, theirs, 1_000_000))
            };
            worker(&limiter, mine, 9_000_000);
            other.join().unwrap();
            assert_eq!(limiter.inflight(), 0);
            let m = limiter.metrics();
            assert_eq!(m.acquired, m.succeeded, "every grant released once");
            // Every sample is in the open window or was consumed by a close, counted once.
            let mut s = limiter.inner.state();
            s.close_if_full(&limiter.inner);
            let left = limiter.inner.pending.load(SeqCst);
            assert_eq!(left, s.window.samples() as i64, "samples counted once");
            assert!(left < limiter.inner.window_size() as i64, "a full window was left open");
        });
    }

    #[test]
    fn inflight_never_exceeds_the_limit() {
        model(Vec::new(), None, None);
    }

    /// Partitions: admissions under the lock, a partition's release under it, and a release
    /// without a partition beside them without it.
    #[test]
    fn inflight_never_exceeds_the_limit_with_partitions() {
        let shares = vec![
            PartitionConfig { name: "live".into(), percent: 50.0 },
            PartitionConfig { name: "batch".into(), percent: 50.0 },
        ];
        model(shares, Some("live"), None);
    }
}
