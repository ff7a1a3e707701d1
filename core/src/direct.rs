//! [`DirectLimiter`]: one GCRA limit with no key, its whole state one atomic word.
//!
//! A [`Limiter`](crate::Limiter) finds each key's state in a store: it hashes the key, takes a
//! shard's lock and probes a table, which is most of a memory-store check. A limit that is not
//! per anything (an outbound API's quota, a worker pool's intake, a global ceiling in front of a
//! keyed one) needs none of that. Its GCRA state is one float, the theoretical arrival time
//! (TAT), which fits an `AtomicU64`: a check reads it, decides with the very arithmetic the
//! memory store and `gcra.lua` use ([`Gcra::check_tat`]) and publishes the new TAT with one
//! compare-and-swap, retried only when another thread published first. This is the shape of
//! governor's direct limiter, for callers who would otherwise pass one constant key.
//!
//! **Same decisions as a keyed limiter.** A check here returns what
//! `Limiter::check_sync_at(key, cost, now)` on a [`MemoryStore`](crate::MemoryStore) returns
//! for one key at the same times (`core/tests/direct.rs` replays random sequences on both,
//! with a clock that also steps back). The store's entry expires at `ceil(tat)` (its TTL is
//! `ceil(tat - now)` from the write) and any call that sees it expired clears it for good. A
//! check that admits overwrites the TAT anyway, and GCRA reads a TAT in the past as `now`; what
//! remains is that a refused check or a peek after the expiry leaves a fresh limit behind, so a
//! clock that then steps back finds no TAT. Both do that here too, off the admitting path.
//!
//! GCRA only: the other algorithms keep more than one number, which one word cannot hold
//! without a lock; use a `Limiter` with a key for them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::algorithms::gcra::Gcra;
use crate::clock::{Clock, SystemClock};
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::state::State;
use crate::strategy::Strategy;
use crate::validate;

/// The TAT of a limiter that has admitted nothing yet (or was reset): a NaN bit pattern, which
/// [`Gcra::check_tat`] never produces (every TAT it writes is a finite sum of finite values).
const FRESH: u64 = u64::MAX;

/// One GCRA limit with no key, checked lock-free (see the module docs).
///
/// ```
/// use throttlekit::{DirectLimiter, Strategy};
///
/// // 100 requests a second, bursts of 10, for the whole process.
/// let limiter = DirectLimiter::new(Strategy::gcra(100, 1000, Some(10))?)?;
/// let d = limiter.check(1)?;
/// assert!(d.allowed);
/// assert_eq!(d.limit, 10);
/// # Ok::<(), throttlekit::Error>(())
/// ```
pub struct DirectLimiter {
    gcra: Gcra,
    /// The TAT's bits, or [`FRESH`].
    tat: AtomicU64,
    clock: Arc<dyn Clock>,
    /// `clock.is_system_clock()`, asked once, so `check` reads it without a virtual call.
    system_clock: bool,
}

impl DirectLimiter {
    /// A limiter on the system clock. `strategy` must be GCRA (`config_invalid` otherwise).
    pub fn new(strategy: Strategy) -> Result<DirectLimiter> {
        DirectLimiter::with_clock(strategy, Arc::new(SystemClock))
    }

    /// A limiter reading `clock` (a [`ManualClock`](crate::ManualClock) in tests).
    pub fn with_clock(strategy: Strategy, clock: Arc<dyn Clock>) -> Result<DirectLimiter> {
        let Some(gcra) = strategy.as_gcra() else {
            return Err(Error::config(
                "strategy",
                "a DirectLimiter holds GCRA only (one float of state); use a Limiter with a key for other strategies",
            ));
        };
        Ok(DirectLimiter {
            gcra: gcra.clone(),
            tat: AtomicU64::new(FRESH),
            system_clock: clock.is_system_clock(),
            clock,
        })
    }

    /// Checks a request of `cost` now: admitted requests consume, refused ones do not.
    #[inline]
    pub fn check(&self, cost: u64) -> Result<Decision> {
        let now = if self.system_clock { SystemClock.now_ms() } else { self.clock.now_ms() };
        self.check_at(cost, now)
    }

    /// [`DirectLimiter::check`] at an explicit `now` (epoch ms).
    #[inline]
    pub fn check_at(&self, cost: u64, now: i64) -> Result<Decision> {
        if cost.wrapping_sub(1) >= validate::MAX_SAFE_INTEGER as u64
            || now.unsigned_abs() > validate::MAX_SAFE_INTEGER as u64
        {
            // Out of 1..=2^53 or ±2^53: the validators build the error, as `Limiter` does.
            validate::cost(cost)?;
            validate::now(now)?;
        }
        let mut bits = self.tat.load(Ordering::Acquire);
        loop {
            // The float path: with no cache miss to wait for, the integer path's range checks
            // cost more than its shorter chain saves (8.5 vs 7.3 ns, docs/performance.md).
            let (decision, write) = self.gcra.check_tat_float(stored(bits), now, cost);
            let Some(write) = write else {
                // Refused: nothing to publish, unless the TAT just read has expired.
                if expired(bits, now)
                    && let Err(current) = self.tat.compare_exchange(bits, FRESH, Ordering::AcqRel, Ordering::Acquire)
                {
                    bits = current;
                    continue;
                }
                return Ok(decision);
            };
            match self.tat.compare_exchange_weak(bits, write.tat.to_bits(), Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Ok(decision),
                // Another check published first (or a spurious failure): decide again on its TAT.
                Err(current) => bits = current,
            }
        }
    }

    /// What a request of cost 1 would get now, without consuming.
    pub fn peek(&self) -> Result<Decision> {
        self.peek_at(self.clock.now_ms())
    }

    /// [`DirectLimiter::peek`] at an explicit `now`.
    pub fn peek_at(&self, now: i64) -> Result<Decision> {
        validate::now(now)?;
        let mut bits = self.tat.load(Ordering::Acquire);
        while expired(bits, now) {
            // Forgotten as the store forgets an expired key, even by a read.
            match self.tat.compare_exchange(bits, FRESH, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => bits = FRESH,
                Err(current) => bits = current,
            }
        }
        Ok(self.gcra.peek(stored(bits).map(State::Tat).as_ref(), now))
    }

    /// Forgets every admitted request: the next check sees a fresh limit.
    pub fn reset(&self) {
        self.tat.store(FRESH, Ordering::Release);
    }

    /// The ceiling a decision reports (the burst).
    pub fn limit(&self) -> i64 {
        self.gcra.limit()
    }
}

impl std::fmt::Debug for DirectLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectLimiter")
            .field("gcra", &self.gcra)
            .field("tat", &stored(self.tat.load(Ordering::Relaxed)))
            .finish()
    }
}

/// The stored TAT, `None` when fresh.
#[inline(always)]
fn stored(bits: u64) -> Option<f64> {
    if bits == FRESH { None } else { Some(f64::from_bits(bits)) }
}

/// Whether the memory store would hold the TAT in `bits` as expired at `now`: `now > ceil(tat)`,
/// which for an integer `now` is `now - 1 >= tat`.
#[inline(always)]
fn expired(bits: u64, now: i64) -> bool {
    bits != FRESH && (now - 1) as f64 >= f64::from_bits(bits)
}
