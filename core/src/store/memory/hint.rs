//! [`Hint`]: where a shard's table lay at its last insert, so a check can prefetch its key's
//! slot before it takes the shard's lock.

use std::sync::atomic::{AtomicUsize, Ordering};

#[cfg(target_arch = "x86_64")]
use super::entry::Entry;

/// Entries [`Hint::prefetch`] fetches from the home bucket on: `pos` to `pos + 3`, 192 bytes,
/// within four cache lines (`4 * 48 + 63 < 4 * 64`).
#[cfg(any(target_arch = "x86_64", test))]
pub(super) const PREFETCH_ENTRIES: usize = 4;

/// Where a shard's table lay at its last insert, so a check can prefetch the key's home slot
/// before it takes the lock.
///
/// Why: with two threads, a shard's lock line is usually in the other core's cache, and
/// taking it costs a cross-core transfer; the key's entry, somewhere in several megabytes of
/// table, costs a cache miss. Locking first and probing after pays the two one after the other.
/// The table's position is hashbrown's business, so this is only a hint, written under the lock
/// after each insert (the only time the table moves) and read without it: a stale hint
/// prefetches a wrong address, which costs nothing (a prefetch never faults and is never
/// dereferenced), and the probe itself always runs under the lock.
#[derive(Default)]
pub(super) struct Hint {
    /// The end of the bucket array, where hashbrown's control bytes begin; 0 before any insert.
    pub(super) data_end: AtomicUsize,
    pub(super) bucket_mask: AtomicUsize,
}

impl Hint {
    pub(super) fn set(&self, data_end: usize, bucket_mask: usize) {
        if self.data_end.load(Ordering::Relaxed) != data_end {
            self.data_end.store(data_end, Ordering::Relaxed);
        }
        if self.bucket_mask.load(Ordering::Relaxed) != bucket_mask {
            self.bucket_mask.store(bucket_mask, Ordering::Relaxed);
        }
    }

    /// Prefetches what a probe for `hash` reads: the control group and the entries where its
    /// key most likely sits. hashbrown probes from bucket `pos = hash & bucket_mask`: it loads
    /// the 16 control bytes from `pos` (unaligned, so a quarter of the time they span two cache
    /// lines) and compares the entries whose tag matches; bucket `i`'s entry ends `i * 48`
    /// bytes below the control bytes, so buckets `pos + 1`, `pos + 2`, ... lie just below
    /// `pos`'s.
    ///
    /// Why four entries and both ends of the group: an insert takes the first free bucket from
    /// `pos` on, so at the load a shard settles at (up to 7/8 full) only about 62% of keys sit
    /// in their home bucket, 15% one further, 7% two, 4% three (100k keys over 128 shards,
    /// `most_keys_sit_within_the_prefetched_buckets`). Prefetching only the home entry and the group's
    /// first byte left the other ~40% of checks a second miss after the lock, one after the
    /// other: the probe read the control bytes (or their second line), found the key one bucket
    /// further, then waited again. These lines (two for the group, four for entries `pos` to
    /// `pos + 3`, 192 bytes) are requested together, so their misses overlap; measured on the
    /// 2-core EPYC VM, 100k keys, in interleaved slices: 1.2–1.8x fewer ns per check than the
    /// home entry alone (docs/performance.md).
    #[inline]
    pub(super) fn prefetch(&self, hash: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            let data_end = self.data_end.load(Ordering::Relaxed);
            if data_end == 0 {
                return;
            }
            let pos = hash as usize & self.bucket_mask.load(Ordering::Relaxed);
            let ctrl = data_end.wrapping_add(pos);
            // The lowest of the four entries (bucket `pos + 3`), rounded down to its cache line:
            // the 192 bytes up to the end of `pos`'s entry lie in this line and the three above.
            let lines = data_end.wrapping_sub((pos + PREFETCH_ENTRIES) * size_of::<Entry>()) & !63;
            // SAFETY: a prefetch reads nothing into the program and never faults, whatever the
            // address; these are plain integers turned into addresses only for the hint.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(ctrl as *const i8);
                _mm_prefetch::<_MM_HINT_T0>(ctrl.wrapping_add(15) as *const i8);
                // From the top down: the home entry, where 62% of keys sit, is requested first.
                for line in (0..4).rev() {
                    _mm_prefetch::<_MM_HINT_T0>(lines.wrapping_add(line * 64) as *const i8);
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = hash;
    }
}
