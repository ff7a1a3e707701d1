//! Injected time. [`SystemClock`] is the only place throttlekit reads the wall clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// A source of epoch milliseconds. A limiter reads it once per call, also for batches.
pub trait Clock: Send + Sync + 'static {
    /// The current time in epoch milliseconds.
    fn now_ms(&self) -> i64;
}

/// The wall clock, in epoch milliseconds.
///
/// On x86-64 with an invariant TSC it is read from the CPU's time-stamp counter, anchored to
/// the real wall clock: a few nanoseconds instead of a `clock_gettime` call. The anchor is
/// renewed from the wall clock every 100 ms (so a step of the wall clock shows within 100 ms),
/// and the counter's rate is measured against the monotonic clock over at least 10 ms, so the
/// reading never strays by more than microseconds from `SystemTime::now()`. Elsewhere, and for
/// the first 10 ms of the process, it is `SystemTime::now()`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[inline]
    fn now_ms(&self) -> i64 {
        #[cfg(target_arch = "x86_64")]
        {
            tsc::now_ms()
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            wall_ns() / 1_000_000
        }
    }
}

/// `SystemTime::now()` in epoch nanoseconds (negative before 1970).
fn wall_ns() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i64,
        // A clock set before 1970 still yields a usable, ordered instant.
        Err(e) => -(e.duration().as_nanos() as i64),
    }
}

#[cfg(target_arch = "x86_64")]
mod tsc {
    //! The TSC-anchored wall clock behind [`super::SystemClock`]: a seqlock-published anchor
    //! (TSC, wall ns, monotonic ns, ns per tick in 32.32 fixed point).

    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicI64, AtomicU64, Ordering, fence};
    use std::time::Instant;

    /// How long an anchor is extrapolated before it is renewed.
    const RENEW_NS: u64 = 100_000_000;
    /// The shortest baseline a rate is measured over.
    const MIN_BASELINE_NS: i64 = 10_000_000;
    /// The longest baseline trusted (a longer gap re-measures from a fresh anchor).
    const MAX_BASELINE_NS: i64 = 3_600_000_000_000;

    static SEQ: AtomicU64 = AtomicU64::new(0);
    static BASE_TSC: AtomicU64 = AtomicU64::new(0);
    static BASE_WALL: AtomicI64 = AtomicI64::new(0);
    static BASE_MONO: AtomicI64 = AtomicI64::new(0);
    /// ns per tick, 32.32 fixed point; 0 until measured.
    static MULT: AtomicU64 = AtomicU64::new(0);

    fn invariant_tsc() -> bool {
        static OK: OnceLock<bool> = OnceLock::new();
        #[allow(unused_unsafe)]
        *OK.get_or_init(|| {
            use std::arch::x86_64::__cpuid;
            // SAFETY: cpuid is always available on x86-64 (and a safe fn on newer toolchains).
            let max_ext = unsafe { __cpuid(0x8000_0000) }.eax;
            max_ext >= 0x8000_0007 && unsafe { __cpuid(0x8000_0007) }.edx & (1 << 8) != 0
        })
    }

    #[inline]
    fn rdtsc() -> u64 {
        // SAFETY: rdtsc is always available on x86-64.
        unsafe { std::arch::x86_64::_rdtsc() }
    }

    fn mono_ns() -> i64 {
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as i64
    }

    #[inline]
    pub(super) fn now_ms() -> i64 {
        let seq = SEQ.load(Ordering::Acquire);
        let mult = MULT.load(Ordering::Relaxed);
        let base_tsc = BASE_TSC.load(Ordering::Relaxed);
        let base_wall = BASE_WALL.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if seq & 1 == 0 && mult != 0 && SEQ.load(Ordering::Relaxed) == seq {
            let ticks = rdtsc().wrapping_sub(base_tsc);
            let ns = ((ticks as u128 * mult as u128) >> 32) as u64;
            // A counter that went backwards (wrapped) or an anchor too old takes the slow path.
            if ticks < 1 << 62 && ns < RENEW_NS {
                return (base_wall + ns as i64) / 1_000_000;
            }
        }
        slow()
    }

    #[cold]
    fn slow() -> i64 {
        let wall = super::wall_ns();
        if !invariant_tsc() {
            return wall / 1_000_000;
        }
        let (tsc, mono) = (rdtsc(), mono_ns());
        let seq = SEQ.load(Ordering::Relaxed);
        if seq & 1 == 0 && SEQ.compare_exchange(seq, seq + 1, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            fence(Ordering::Release);
            let (base_tsc, base_mono) = (BASE_TSC.load(Ordering::Relaxed), BASE_MONO.load(Ordering::Relaxed));
            let (ticks, ns) = (tsc.wrapping_sub(base_tsc), mono - base_mono);
            if base_tsc == 0 || !(0..=MAX_BASELINE_NS).contains(&ns) || ticks == 0 || ticks >= 1 << 62 {
                // No usable previous anchor: start a baseline here; no extrapolation yet.
                MULT.store(0, Ordering::Relaxed);
                BASE_TSC.store(tsc, Ordering::Relaxed);
                BASE_MONO.store(mono, Ordering::Relaxed);
                BASE_WALL.store(wall, Ordering::Relaxed);
            } else if ns >= MIN_BASELINE_NS {
                let mult = ((ns as u128) << 32) / ticks as u128;
                MULT.store(u64::try_from(mult).unwrap_or(0), Ordering::Relaxed);
                BASE_TSC.store(tsc, Ordering::Relaxed);
                BASE_MONO.store(mono, Ordering::Relaxed);
                BASE_WALL.store(wall, Ordering::Relaxed);
            }
            // Else the baseline is still too short to measure a rate: keep it growing.
            SEQ.store(seq + 2, Ordering::Release);
        }
        wall / 1_000_000
    }
}

/// A clock that moves only when told to; clones share the same time.
///
/// `advance` only goes forward; `set` may go backwards, so tests can prove that every
/// algorithm survives a backward jump of the wall clock.
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    now: Arc<AtomicI64>,
}

impl ManualClock {
    /// A clock showing `now_ms`.
    pub fn new(now_ms: i64) -> ManualClock {
        ManualClock { now: Arc::new(AtomicI64::new(now_ms)) }
    }

    /// Moves time forward by `ms`; a negative step is `config_invalid`.
    pub fn advance(&self, ms: i64) -> Result<i64> {
        if ms < 0 {
            return Err(Error::config("advance", "must be a non-negative number of milliseconds"));
        }
        Ok(self.now.fetch_add(ms, Ordering::SeqCst).saturating_add(ms))
    }

    /// Sets the time, backwards included.
    pub fn set(&self, now_ms: i64) {
        self.now.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }
}
