//! [`ShardLock`]: the spin lock around one memory-store shard (and one adaptive limiter sample
//! shard, `crate::concurrency::shard`).
//!
//! It lives in its own module so that its `unsafe` can be model-checked: built with
//! `--cfg loom` (see `scripts/loom.sh`), its atomics, spin hint and yield come from `loom`, and
//! the tests at the bottom explore every interleaving of a few threads taking it.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};

#[cfg(loom)]
use loom::{hint::spin_loop, sync::atomic::AtomicBool, thread::yield_now};
#[cfg(not(loom))]
use std::{hint::spin_loop, sync::atomic::AtomicBool, thread::yield_now};

use std::sync::atomic::Ordering;

/// A spin lock around one shard's data.
///
/// Why not a parking mutex: a shard is held for one probe and a few flops, tens of
/// nanoseconds, so a waiter does better spinning than sleeping. A parking mutex puts a waiter
/// to sleep on a futex after a short spin, and the sleep and the wake-up cost microseconds:
/// with two threads on random keys they meet on a shard a few percent of the time, and those
/// meetings dominated the two-thread profile. Releasing is a plain release store (no locked
/// instruction on x86), one atomic fewer per apply than a mutex. A waiter that spins long
/// (the holder was preempted, or is growing its table) yields its time slice.
pub(crate) struct ShardLock<T> {
    locked: AtomicBool,
    data: UnsafeCell<T>,
}

// SAFETY: the data is only reached through a guard, and `locked` admits one guard at a time.
unsafe impl<T: Send> Sync for ShardLock<T> {}

/// Spins a waiter makes before it starts yielding its time slice.
const SPINS_BEFORE_YIELD: u32 = 100;

impl<T> ShardLock<T> {
    pub(crate) fn new(data: T) -> ShardLock<T> {
        ShardLock { locked: AtomicBool::new(false), data: UnsafeCell::new(data) }
    }

    #[inline]
    pub(crate) fn lock(&self) -> ShardGuard<'_, T> {
        if self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.lock_contended();
        }
        ShardGuard { lock: self }
    }

    /// Waits for the lock while reading it only (so the waiter does not steal the holder's cache
    /// line), then tries to take it.
    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        let mut spins = 0;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                // Under loom a spin must yield, or the model checker explores it forever.
                if spins < SPINS_BEFORE_YIELD && cfg!(not(loom)) {
                    spins += 1;
                    spin_loop();
                } else {
                    yield_now();
                }
            }
            if self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return;
            }
        }
    }
}

/// Access to a locked shard; dropping it unlocks.
pub(crate) struct ShardGuard<'a, T> {
    lock: &'a ShardLock<T>,
}

impl<T> Deref for ShardGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for ShardGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard holds the lock, and `&mut self` makes this the only reference.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for ShardGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

/// The loom model: every interleaving of threads taking the lock. The guarded data is a
/// `loom` cell, so two guards reaching it at once (a broken lock) fail the model, and a
/// read-modify-write that lost an update fails the final count.
#[cfg(all(test, loom))]
mod loom_model {
    use super::ShardLock;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    fn increment(lock: &ShardLock<UnsafeCell<u32>>) {
        let guard = lock.lock();
        // SAFETY: loom checks this access against every other one on the cell.
        guard.with_mut(|n| unsafe { *n += 1 });
    }

    #[test]
    fn two_threads_never_hold_a_shard_at_once() {
        loom::model(|| {
            let lock = Arc::new(ShardLock::new(UnsafeCell::new(0u32)));
            let other = {
                let lock = lock.clone();
                loom::thread::spawn(move || increment(&lock))
            };
            increment(&lock);
            other.join().unwrap();
            // SAFETY: both guards are gone; loom checks this read too.
            assert_eq!(lock.lock().with(|n| unsafe { *n }), 2);
        });
    }

    #[test]
    fn a_lock_taken_again_after_release_still_excludes() {
        let mut model = loom::model::Builder::new();
        // Bounded so `make lint` stays quick: every schedule with up to 2 preemptions. (Three
        // threads spinning on one lock exceed loom's branch budget: the waiters' loops.)
        model.preemption_bound = Some(2);
        model.check(|| {
            let lock = Arc::new(ShardLock::new(UnsafeCell::new(0u32)));
            let other = {
                let lock = lock.clone();
                loom::thread::spawn(move || {
                    increment(&lock);
                    increment(&lock);
                })
            };
            increment(&lock);
            increment(&lock);
            other.join().unwrap();
            // SAFETY: as above.
            assert_eq!(lock.lock().with(|n| unsafe { *n }), 4);
        });
    }
}
