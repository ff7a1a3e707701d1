//! [`MemoryStore`]: sharded, bounded, expiring on the limiter's clock.
//!
//! Keys are spread over `2^k` shards, each a spin lock around one flat open-addressing hash table
//! (hashbrown's SwissTable) of 48-byte entries. An entry holds the key inline when it is at most
//! 22 bytes long (longer keys live in one boxed slice), the expiry deadline, and the key's
//! state packed into two words (a GCRA TAT, a bucket, a counter; the sliding window's ring and
//! the log stay boxed, and a log check runs on its box in place, see `log_path`). So a lookup
//! of an existing short key touches the table's control bytes and one entry, nothing else, and
//! no pointer is chased.
//!
//! An apply locks one shard, so threads working on different keys rarely meet (and when they
//! do, the waiter spins for the few nanoseconds the holder needs; see `ShardLock`). Before it
//! locks, an apply prefetches the cache lines where its key most likely sits (see `Hint`), so
//! the lock's transfer and the entry's cache miss overlap. Expiry is judged
//! by each apply against its own `now` (the injected clock, so a `ManualClock` drives it): a
//! key is expired when `now > deadline`, Redis's rule, and an expired key starts fresh. Expired
//! keys that nobody touches again are swept lazily when new keys arrive (before a shard's table
//! would grow, at most once per quarter of its capacity in inserts, once they have been expired
//! for `SWEEP_GRACE_MS`), and a bound on the number of keys (on by
//! default, see [`MemoryLimits`]) evicts with the
//! CLOCK policy, an approximation of least-recently-used: every apply marks its entry
//! referenced, and the hand evicts the first entry that is expired or was not referenced since
//! the hand last passed it. Applying to an existing key allocates nothing.

use std::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::HashTable;

use crate::algorithms::gcra::Gcra;
use crate::decision::Decision;
use crate::error::Result;
use crate::metrics::LimiterMetrics;
use crate::state::{State, Step};
use crate::store::shard_lock::ShardLock;
mod entry;
mod hint;
mod log_path;
mod multi_apply;

use entry::*;
use hint::Hint;

use crate::store::{
    BoxFuture, DimensionCall, DimensionLease, MultiGrant, MultiReply, Now, Reply, Rule, Store, Transform,
};

// ---------------------------------------------------------------------------------------------
// Shards and the store.

/// How long past its deadline an expired entry survives the sweep before a table grows.
///
/// Why a grace: a key whose state lapses between its visits (a GCRA key back at full capacity,
/// a window that emptied) is expired, not gone: its next visit comes back. Swept at once, it
/// was removed and then inserted again on that visit, and with more such keys than a shard's
/// table held, the table never grew: every visit was an insert, every capacity's worth of them
/// a sweep of the whole table (`HashTable::retain`, `Entry::new` and `MemoryStore::insert` were
/// 8-15% of the JVM's and Go's 100k-keys rows at 10^9 a second, docs/performance.md). Kept, an
/// expired entry is rewritten in place on its next visit, which reads it as a fresh key (the
/// same decision as an absent key). Keys nobody touches again are still swept, one grace later,
/// and the key bound and its CLOCK eviction are unchanged (they judge expiry by the deadline
/// itself): the grace only decides whether a table grows or sweeps, so a flood of short-lived
/// keys holds at most about one grace's worth of keys more, within the bound.
const SWEEP_GRACE_MS: i64 = 1000;

struct ShardData {
    table: HashTable<Entry>,
    /// The CLOCK hand: the bucket the eviction looks at next.
    hand: usize,
    /// Inserts since the last sweep of expired keys.
    inserts_since_sweep: usize,
    /// Live (unexpired) keys the bound has evicted from this shard.
    evictions: u64,
}

#[repr(align(128))]
struct Shard {
    map: ShardLock<ShardData>,
}

/// An in-process store. Cheap to share: wrap it in an `Arc` and hand it to many limiters.
pub struct MemoryStore {
    shards: Box<[Shard]>,
    /// One per shard, outside the locks' cache lines (see [`Hint`]).
    hints: Box<[Hint]>,
    hasher: FixedState,
    shard_mask: usize,
    /// Maximum keys per shard (`usize::MAX` when unbounded).
    shard_capacity: usize,
    /// The bounds it was built with.
    limits: MemoryLimits,
}

/// The bounds of a [`MemoryStore`]. [`MemoryLimits::default`] is what [`MemoryStore::new`]
/// uses; `usize::MAX` lifts a bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryLimits {
    /// Keys held at most (about: the bound is split evenly over the shards); beyond it the
    /// shard being written evicts an approximately least recently used key (CLOCK).
    pub max_keys: usize,
    /// Longest full key (`prefix:key`) accepted, in bytes; longer is `config_invalid`.
    pub max_key_length: usize,
}

impl MemoryLimits {
    /// The default key bound: 917,504 keys (7 x 2^17), about 110 MB resident at the bound for
    /// keys of up to 22 bytes.
    ///
    /// Why this number: at the bound, every insert evicts, and hashbrown's deletions leave
    /// tombstones that use up the table's growth room; it then rehashes in place only while
    /// the table is at most half full (7/16 of its buckets), and otherwise doubles. So a
    /// shard's table settles at the smallest power of two whose 7/16 holds the shard's share,
    /// 49 bytes (a 48-byte entry and a control byte) a bucket: 112 bytes a key at best, and
    /// twice that just past such a step (measured with 10M distinct keys: a bound of 1,000,000
    /// settled at 207 MB, this one at 106 MB, 524,288 at 106 MB too). This bound sits exactly
    /// on a step for every power-of-two shard count up to 2^17: it is the largest bound of that
    /// table size. Keys longer than 22 bytes add their own heap copy.
    pub const DEFAULT_MAX_KEYS: usize = 917_504;

    /// The default longest key: 256 bytes, prefix included. Rate-limit keys are ids, addresses
    /// and routes; a longer one is most likely a caller passing a body or a URL with its query
    /// string. With the default bound it caps what keys can hold at about 250 MB more.
    pub const DEFAULT_MAX_KEY_LENGTH: usize = crate::key::DEFAULT_MAX_LENGTH;
}

impl Default for MemoryLimits {
    fn default() -> Self {
        MemoryLimits { max_keys: MemoryLimits::DEFAULT_MAX_KEYS, max_key_length: MemoryLimits::DEFAULT_MAX_KEY_LENGTH }
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").field("shards", &self.shards.len()).field("len", &self.len()).finish()
    }
}

/// Where a key lives: its hash, shard and comparison form.
///
/// It borrows the probe rather than holding it: a probe moved into a struct right after
/// `Probe::new` wrote it is copied with wider loads than its stores, which stalls on store
/// forwarding (measured: a quarter of a Python `check_sync`'s native time).
struct Located<'a> {
    hash: u64,
    shard: usize,
    probe: &'a Probe<'a>,
}

impl MemoryStore {
    /// A store with the default [`MemoryLimits`] and 16 shards per core (at least 128, a power
    /// of two).
    ///
    /// Why that many shards: a check writes its shard's lock, and two threads on random keys
    /// both wait for each other and pass the lock's cache line back and forth less often the
    /// more shards there are; past a few hundred, the locks and hints themselves stop fitting
    /// in the cache. Measured on 2 cores, 100k keys, two threads: 16 shards 56 ns a check
    /// (aggregate), 128 shards 42 ns, 1024 shards 43 ns with the one-thread figure 15% worse.
    pub fn new() -> MemoryStore {
        MemoryStore::build(MemoryLimits::default())
    }

    /// A store holding at most about `max_keys` keys (`usize::MAX`: no bound), with the
    /// default key length limit. `max_keys == 0` is `config_invalid`.
    pub fn with_max_keys(max_keys: usize) -> Result<MemoryStore> {
        MemoryStore::with_limits(MemoryLimits { max_keys, ..MemoryLimits::default() })
    }

    /// A store with these bounds; a bound of 0 is `config_invalid`.
    pub fn with_limits(limits: MemoryLimits) -> Result<MemoryStore> {
        if limits.max_keys == 0 {
            return Err(crate::Error::config("maxKeys", "must be >= 1"));
        }
        if limits.max_key_length == 0 {
            return Err(crate::Error::config("maxKeyLength", "must be >= 1"));
        }
        Ok(MemoryStore::build(limits))
    }

    /// The bounds this store was built with.
    pub fn limits(&self) -> MemoryLimits {
        self.limits
    }

    /// Live keys evicted to keep the store within its bound, since it was built. An operator
    /// watching this climb knows the bound is too small for the traffic (every eviction forgets
    /// a key's state, which lets that key start afresh).
    pub fn evictions(&self) -> u64 {
        self.shards.iter().map(|s| s.map.lock().evictions).sum()
    }

    /// `config_invalid` when a full key is longer than the store accepts. Checked before
    /// anything is locked or stored, so an oversized key costs nothing but the error.
    #[inline(always)]
    fn check_key_length(&self, key_len: usize) -> Result<()> {
        crate::key::check_length(key_len, self.limits.max_key_length)
    }

    fn build(limits: MemoryLimits) -> MemoryStore {
        let max = limits.max_keys;
        let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
        let mut shards = (cores * 16).max(128).next_power_of_two();
        // Small bounds get few shards, so the bound stays close to exact.
        while shards > 1 && max / shards < 64 {
            shards /= 2;
        }
        let hasher = FixedState::with_seed(0x7468_726f_7474_6c65);
        let shard_capacity = max.div_ceil(shards).max(1);
        MemoryStore {
            shards: (0..shards)
                .map(|_| Shard {
                    map: ShardLock::new(ShardData {
                        table: HashTable::new(),
                        hand: 0,
                        inserts_since_sweep: 0,
                        evictions: 0,
                    }),
                })
                .collect(),
            hints: (0..shards).map(|_| Hint::default()).collect(),
            hasher,
            shard_mask: shards - 1,
            shard_capacity,
            limits,
        }
    }

    /// The number of shards (what a limiter's metrics stripe their counters by).
    pub(crate) fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Number of keys held, expired ones not yet swept included.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.map.lock().table.len()).sum()
    }

    /// Whether the store holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every key whose deadline is before `now`; returns how many.
    pub fn purge_expired(&self, now: i64) -> usize {
        let mut removed = 0;
        for shard in self.shards.iter() {
            let mut shard = shard.map.lock();
            let before = shard.table.len();
            shard.table.retain(|e| now <= e.deadline);
            removed += before - shard.table.len();
        }
        removed
    }

    /// The hash of a probe. An inline key is hashed from the three words the probe already
    /// holds (two folded multiplies), so a short key is read once and never walked byte by
    /// byte; a long key goes through foldhash.
    #[inline(always)]
    fn hash(&self, probe: &Probe<'_>) -> u64 {
        match probe {
            Probe::Inline(w) => hash_words(w),
            Probe::Heap(k) => self.hasher.hash_one(k),
        }
    }

    /// The hash of a stored entry, equal to the hash of its key's probe (for table growth).
    #[inline]
    fn hash_entry(&self, e: &Entry) -> u64 {
        if e.is_heap() { self.hasher.hash_one(e.key()) } else { hash_words(&[e.key[0], e.key[1], e.key[2] & NO_META]) }
    }

    #[inline(always)]
    fn locate<'a>(&self, probe: &'a Probe<'a>) -> Located<'a> {
        let hash = self.hash(probe);
        Located { hash, shard: self.shard_of(hash), probe }
    }

    /// The shard of a hash. Neither the low bits (bucket index) nor the top 7 (hashbrown's tag
    /// byte) pick it, so every bit the table uses stays random within a shard.
    #[inline(always)]
    fn shard_of(&self, hash: u64) -> usize {
        (hash >> 40) as usize & self.shard_mask
    }

    /// Applies `transform` to the located key inside its already locked shard.
    #[inline]
    fn apply_locked(&self, shard: &mut ShardData, at: &Located<'_>, now: i64, transform: &Transform<'_>) -> Reply {
        match shard.table.find_entry(at.hash, |e| e.matches(at.probe)) {
            Ok(mut occupied) => {
                let entry = occupied.get_mut();
                if now > entry.deadline {
                    // Expired: the old state is gone for good, whatever this op decides.
                    entry.clear_state();
                }
                let mut state = entry.take_state();
                let step = run(transform, &mut state, now);
                match step.ttl_ms {
                    Some(ttl) => {
                        entry.put_state(state);
                        entry.deadline = now.saturating_add(ttl);
                        entry.touch();
                    }
                    None if state.is_none() => {
                        entry.put_state(None);
                        drop(occupied.remove());
                    }
                    None => {
                        entry.put_state(state);
                        entry.touch();
                    }
                }
                step.reply
            }
            Err(_) => {
                let mut state = None;
                let step = run(transform, &mut state, now);
                if let Some(ttl) = step.ttl_ms {
                    self.insert(shard, at, Entry::new(at.probe, now.saturating_add(ttl), state), now);
                }
                step.reply
            }
        }
    }

    /// A GCRA check of `key` at `now`: [`Store::apply_sync`] with [`Transform::Check`], for
    /// callers that know the strategy is GCRA.
    #[inline(always)]
    pub(crate) fn check_gcra_sync(
        &self,
        key: &str,
        now: i64,
        gcra: &Gcra,
        cost: u64,
        metrics: Option<&LimiterMetrics>,
    ) -> Decision {
        let probe = Probe::new(key.as_bytes());
        self.check_gcra(&self.locate(&probe), now, gcra, cost, metrics)
    }

    /// [`MemoryStore::check_gcra_sync`] of `prefix:key` (the `key::join` format; the bare key
    /// when `prefix` is empty), joining the two only when the result is too long to be inline.
    #[inline(always)]
    pub(crate) fn check_gcra_joined(
        &self,
        prefix: &str,
        key: &str,
        now: i64,
        gcra: &Gcra,
        cost: u64,
        metrics: Option<&LimiterMetrics>,
    ) -> Result<Decision> {
        if prefix.is_empty() {
            self.check_key_length(key.len())?;
            return Ok(self.check_gcra_sync(key, now, gcra, cost, metrics));
        }
        self.check_key_length(prefix.len() + 1 + key.len())?;
        Ok(match Probe::joined(prefix.as_bytes(), key.as_bytes()) {
            Some(probe) => self.check_gcra(&self.locate(&probe), now, gcra, cost, metrics),
            None => crate::key::with_joined(prefix, key, |full| self.check_gcra_sync(full, now, gcra, cost, metrics)),
        })
    }

    /// A GCRA check, the hot path: the same transition as [`MemoryStore::apply_locked`] with
    /// [`Transform::Check`], but the TAT is read from and written to the entry's word in place,
    /// with no [`State`] built, taken or put back.
    ///
    /// With `metrics`, the decision is counted while the shard is still locked, in the
    /// metrics' stripe for this shard (see [`LimiterMetrics::record_locked`]).
    #[inline(always)]
    fn check_gcra(
        &self,
        at: &Located<'_>,
        now: i64,
        gcra: &Gcra,
        cost: u64,
        metrics: Option<&LimiterMetrics>,
    ) -> Decision {
        self.hints[at.shard].prefetch(at.hash);
        let mut guard = self.shards[at.shard].map.lock();
        let decision = self.check_gcra_locked(&mut guard, at, now, gcra, cost);
        if let Some(m) = metrics {
            m.record_locked(at.shard, decision.allowed);
        }
        decision
    }

    /// [`MemoryStore::check_gcra`]'s work inside the locked shard.
    ///
    /// One call of [`Gcra::check_tat`] for both a found and a new key, inlined: with two call
    /// sites the compiler kept it out of line, and its 72-byte result went through the stack
    /// twice (about 40 of the check's 337 instructions, callgrind).
    #[inline(always)]
    fn check_gcra_locked(&self, shard: &mut ShardData, at: &Located<'_>, now: i64, gcra: &Gcra, cost: u64) -> Decision {
        let mut found = shard.table.find_entry(at.hash, |e| e.matches(at.probe));
        let (tag, stored) = match &mut found {
            Ok(occupied) => {
                let entry = occupied.get_mut();
                if now > entry.deadline {
                    // Expired: the old state is gone for good, whatever this op decides.
                    entry.clear_state();
                }
                let tag = entry.tag();
                // A state of another shape reads as a fresh key (and is replaced if this op
                // writes).
                (tag, if tag == T_TAT { Some(f64::from_bits(entry.a)) } else { None })
            }
            Err(_) => (T_NONE, None),
        };
        let (decision, write) = gcra.check_tat(stored, now, cost);
        match (found, write) {
            (Ok(mut occupied), Some(w)) => {
                let entry = occupied.get_mut();
                if tag != T_TAT {
                    entry.clear_state();
                }
                entry.a = w.tat.to_bits();
                entry.b = 0;
                entry.set_tag(T_TAT);
                entry.deadline = now.saturating_add(w.ttl_ms);
                entry.touch();
            }
            // A deny leaves a stateless entry nothing to keep.
            (Ok(occupied), None) if tag == T_NONE => drop(occupied.remove()),
            (Ok(mut occupied), None) => occupied.get_mut().touch(),
            (Err(_), Some(w)) => {
                let entry = Entry::new(at.probe, now.saturating_add(w.ttl_ms), Some(State::Tat(w.tat)));
                self.insert(shard, at, entry, now);
            }
            (Err(_), None) => {}
        }
        decision
    }

    /// Inserts a new key's entry into its locked shard, making room first, and refreshes the
    /// shard's [`Hint`] (an insert may have moved the table).
    fn insert(&self, shard: &mut ShardData, at: &Located<'_>, entry: Entry, now: i64) {
        self.make_room(shard, now);
        let occupied = shard.table.insert_unique(at.hash, entry, |e| self.hash_entry(e));
        let data_end = occupied.get() as *const Entry as usize + (occupied.bucket_index() + 1) * size_of::<Entry>();
        self.hints[at.shard].set(data_end, shard.table.num_buckets() - 1);
    }

    /// Before an insert: sweep expired keys when the table is about to grow, and enforce the
    /// bound.
    fn make_room(&self, shard: &mut ShardData, now: i64) {
        let table = &mut shard.table;
        if table.len() == table.capacity() && shard.inserts_since_sweep >= table.capacity() / 4 {
            // This insert would double the table: drop what expired more than
            // `SWEEP_GRACE_MS` ago first, so keys nobody touches again never make the table
            // grow. Sweeping at most once per capacity/4 inserts keeps the cost amortized O(1)
            // per insert.
            let horizon = now.saturating_sub(SWEEP_GRACE_MS);
            table.retain(|e| horizon <= e.deadline);
            shard.inserts_since_sweep = 0;
        }
        shard.inserts_since_sweep += 1;
        let buckets = table.num_buckets();
        let mask = buckets.wrapping_sub(1);
        // CLOCK: evict the first entry that is expired or unreferenced since the hand last
        // passed, clearing marks on the way. Terminates within two turns of the hand.
        while shard.table.len() >= self.shard_capacity {
            shard.hand = (shard.hand + 1) & mask;
            if let Ok(mut o) = shard.table.get_bucket_entry(shard.hand) {
                let e = o.get_mut();
                let expired = now > e.deadline;
                if expired || !e.untouch() {
                    shard.evictions += u64::from(!expired);
                    drop(o.remove());
                }
            }
        }
    }
}

/// [`Transform::run`], with the check (the hot path) inlined here.
#[inline(always)]
fn run(transform: &Transform<'_>, slot: &mut Option<State>, now: i64) -> Step<Reply> {
    match *transform {
        Transform::Check { strategy, cost } => {
            let step = strategy.check(slot, now, cost, true);
            Step { reply: Reply::Decision(step.reply), ttl_ms: step.ttl_ms }
        }
        _ => transform.run(slot, now),
    }
}

impl Store for MemoryStore {
    fn apply<'a>(&'a self, key: &'a str, now: Now, transform: Transform<'a>) -> BoxFuture<'a, Result<Reply>> {
        Box::pin(std::future::ready(self.apply_sync(key, now, transform)))
    }

    // Not `#[inline]` in the WebAssembly build: an inline method is instantiated again in every
    // crate that makes the `dyn Store` vtable (bindings-wasm does), with what it inlines
    // (`Strategy::check`, `Transform::run`): 8 KB of the module twice (docs/edge.md "Size").
    #[cfg_attr(not(target_arch = "wasm32"), inline)]
    fn apply_sync(&self, key: &str, now: Now, transform: Transform<'_>) -> Result<Reply> {
        let now = now.in_process_ms();
        self.check_key_length(key.len())?;
        let probe = Probe::new(key.as_bytes());
        let at = self.locate(&probe);
        if let Transform::Check { strategy, cost } = transform {
            if let Some(gcra) = strategy.as_gcra() {
                return Ok(Reply::Decision(self.check_gcra(&at, now, gcra, cost, None)));
            }
            if let Some(swl) = strategy.as_sliding_window_log() {
                return Ok(Reply::Decision(self.check_log(&at, now, swl, cost)));
            }
        }
        self.hints[at.shard].prefetch(at.hash);
        let mut shard = self.shards[at.shard].map.lock();
        Ok(self.apply_locked(&mut shard, &at, now, &transform))
    }

    fn apply_multi<'a>(
        &'a self,
        rule: Rule,
        dims: &'a [DimensionCall<'a>],
        now: Now,
    ) -> BoxFuture<'a, Result<MultiReply>> {
        Box::pin(std::future::ready(self.apply_multi_sync(rule, dims, now)))
    }

    fn apply_multi_sync(&self, rule: Rule, dims: &[DimensionCall<'_>], now: Now) -> Result<MultiReply> {
        let now = now.in_process_ms();
        self.multi_locked(rule, dims, None, now).map(|g| g.reply)
    }

    fn apply_multi_lease<'a>(
        &'a self,
        rule: Rule,
        dims: &'a [DimensionCall<'a>],
        leases: &'a [DimensionLease],
        now: Now,
    ) -> BoxFuture<'a, Result<MultiGrant>> {
        Box::pin(std::future::ready(self.apply_multi_lease_sync(rule, dims, leases, now)))
    }

    fn apply_multi_lease_sync(
        &self,
        rule: Rule,
        dims: &[DimensionCall<'_>],
        leases: &[DimensionLease],
        now: Now,
    ) -> Result<MultiGrant> {
        let now = now.in_process_ms();
        self.multi_locked(rule, dims, Some(leases), now)
    }

    fn reset<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(self.reset_sync(key)))
    }

    fn reset_sync(&self, key: &str) -> Result<()> {
        self.check_key_length(key.len())?;
        let probe = Probe::new(key.as_bytes());
        let at = self.locate(&probe);
        let mut shard = self.shards[at.shard].map.lock();
        if let Ok(o) = shard.table.find_entry(at.hash, |e| e.matches(at.probe)) {
            drop(o.remove());
        }
        Ok(())
    }

    fn is_sync(&self) -> bool {
        true
    }

    fn as_memory(&self) -> Option<&MemoryStore> {
        Some(self)
    }

    fn max_key_length(&self) -> usize {
        self.limits.max_key_length
    }
}

#[cfg(test)]
mod tests;
