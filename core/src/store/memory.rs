//! [`MemoryStore`]: sharded, bounded, expiring on the limiter's clock.
//!
//! Keys are spread over `2^k` shards, each a mutex around an insertion-ordered hash map kept in
//! least-recently-used order. An apply locks one shard, so threads working on different keys
//! rarely meet. Expiry is judged by each apply against its own `now` (the injected clock, so a
//! `ManualClock` drives it): a key is expired when `now > deadline`, Redis's rule. Expired keys
//! that nobody touches again are swept lazily when new keys arrive, and an optional bound on
//! the number of keys evicts the least recently used, so a flood of new keys cannot exhaust
//! memory. Applying to an existing key allocates nothing.

use std::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashlink::LinkedHashMap;
use hashlink::linked_hash_map::RawEntryMut;
use parking_lot::{Mutex, MutexGuard};

use crate::clock::{Clock, SystemClock};
use crate::error::Result;
use crate::multi;
use crate::state::State;
use crate::store::{BoxFuture, DimensionCall, MultiReply, Now, Reply, Rule, Store, Transform};

/// How many expired entries an insert sweeps from the least recently used end, at most.
const SWEEP_PER_INSERT: usize = 2;

struct Entry {
    state: Option<State>,
    /// Epoch ms after which the state is gone (`now > deadline`).
    deadline: i64,
}

type Map = LinkedHashMap<Box<str>, Entry, FixedState>;

#[repr(align(128))]
struct Shard {
    map: Mutex<Map>,
}

/// An in-process store. Cheap to share: wrap it in an `Arc` and hand it to many limiters.
pub struct MemoryStore {
    shards: Box<[Shard]>,
    hasher: FixedState,
    shard_bits: u32,
    /// Maximum keys per shard (`usize::MAX` when unbounded).
    shard_capacity: usize,
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

impl MemoryStore {
    /// An unbounded store with one shard per 1/4 core (at least 16, a power of two).
    pub fn new() -> MemoryStore {
        MemoryStore::build(None)
    }

    /// A store holding at most about `max_keys` keys; beyond that the least recently used key
    /// of the shard being written is evicted. `max_keys == 0` is `config_invalid`.
    pub fn with_max_keys(max_keys: usize) -> Result<MemoryStore> {
        if max_keys == 0 {
            return Err(crate::Error::config("maxKeys", "must be >= 1"));
        }
        Ok(MemoryStore::build(Some(max_keys)))
    }

    fn build(max_keys: Option<usize>) -> MemoryStore {
        let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
        let mut shards = (cores * 4).max(16).next_power_of_two();
        if let Some(max) = max_keys {
            // Small bounds get few shards, so the bound stays close to exact.
            while shards > 1 && max / shards < 64 {
                shards /= 2;
            }
        }
        let hasher = FixedState::with_seed(0x7468_726f_7474_6c65);
        let shard_capacity = max_keys.map_or(usize::MAX, |m| m.div_ceil(shards).max(1));
        MemoryStore {
            shards: (0..shards).map(|_| Shard { map: Mutex::new(LinkedHashMap::with_hasher(hasher)) }).collect(),
            hasher,
            shard_bits: shards.trailing_zeros(),
            shard_capacity,
        }
    }

    /// Number of keys held, expired ones not yet swept included.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.map.lock().len()).sum()
    }

    /// Whether the store holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every key whose deadline is before `now`; returns how many.
    pub fn purge_expired(&self, now: i64) -> usize {
        let mut removed = 0;
        for shard in self.shards.iter() {
            let mut map = shard.map.lock();
            let before = map.len();
            map.retain(|_, e| now <= e.deadline);
            removed += before - map.len();
        }
        removed
    }

    #[inline]
    fn locate(&self, key: &str) -> (u64, usize) {
        let hash = self.hasher.hash_one(key);
        // The top bits pick the shard; hashbrown uses the low bits for buckets.
        let shard = if self.shard_bits == 0 { 0 } else { (hash >> (64 - self.shard_bits)) as usize };
        (hash, shard)
    }

    /// Applies `transform` to `key` inside an already locked shard.
    #[inline]
    fn apply_locked(&self, map: &mut Map, hash: u64, key: &str, now: i64, transform: &Transform<'_>) -> Reply {
        match map.raw_entry_mut().from_key_hashed_nocheck(hash, key) {
            RawEntryMut::Occupied(mut occupied) => {
                let entry = occupied.get_mut();
                if now > entry.deadline {
                    // Expired: the old state is gone for good, whatever this op decides.
                    entry.state = None;
                }
                let step = transform.run(&mut entry.state, now);
                match step.ttl_ms {
                    Some(ttl) => {
                        entry.deadline = now.saturating_add(ttl);
                        occupied.to_back();
                    }
                    None if entry.state.is_none() => {
                        occupied.remove();
                    }
                    None => occupied.to_back(),
                }
                step.reply
            }
            RawEntryMut::Vacant(vacant) => {
                let mut slot = None;
                let step = transform.run(&mut slot, now);
                if let Some(ttl) = step.ttl_ms {
                    vacant.insert_hashed_nocheck(hash, key.into(), Entry { state: slot, deadline: now.saturating_add(ttl) });
                    self.make_room(map, now);
                }
                step.reply
            }
        }
    }

    /// After an insert: sweep a few expired keys and enforce the bound.
    fn make_room(&self, map: &mut Map, now: i64) {
        for _ in 0..SWEEP_PER_INSERT {
            match map.front() {
                Some((_, e)) if now > e.deadline && map.len() > 1 => {
                    map.pop_front();
                }
                _ => break,
            }
        }
        while map.len() > self.shard_capacity {
            map.pop_front();
        }
    }

    fn resolve(now: Now) -> i64 {
        match now {
            Now::At(t) => t,
            Now::Server => SystemClock.now_ms(),
        }
    }
}

impl Store for MemoryStore {
    fn apply<'a>(&'a self, key: &'a str, now: Now, transform: Transform<'a>) -> BoxFuture<'a, Result<Reply>> {
        Box::pin(std::future::ready(self.apply_sync(key, MemoryStore::resolve(now), transform)))
    }

    #[inline]
    fn apply_sync(&self, key: &str, now: i64, transform: Transform<'_>) -> Result<Reply> {
        let (hash, shard) = self.locate(key);
        let mut map = self.shards[shard].map.lock();
        Ok(self.apply_locked(&mut map, hash, key, now, &transform))
    }

    fn apply_multi<'a>(&'a self, rule: Rule, dims: &'a [DimensionCall<'a>], now: Now) -> BoxFuture<'a, Result<MultiReply>> {
        Box::pin(std::future::ready(self.apply_multi_sync(rule, dims, MemoryStore::resolve(now))))
    }

    fn apply_multi_sync(&self, rule: Rule, dims: &[DimensionCall<'_>], now: i64) -> Result<MultiReply> {
        let located: Vec<(u64, usize)> = dims.iter().map(|d| self.locate(d.key)).collect();
        // Lock every shard involved once, in ascending order, so two multi applies cannot deadlock.
        let mut order: Vec<usize> = located.iter().map(|l| l.1).collect();
        order.sort_unstable();
        order.dedup();
        let mut guards: Vec<MutexGuard<'_, Map>> = order.iter().map(|&s| self.shards[s].map.lock()).collect();
        let guard_of = |shard: usize| order.binary_search(&shard).unwrap_or_default();

        let decisions: Vec<_> = dims
            .iter()
            .zip(&located)
            .map(|(d, &(hash, shard))| {
                let map = &mut guards[guard_of(shard)];
                // An expired key is gone for good, whether or not this dimension commits: a later
                // backward clock jump must not bring it back (the Redis path deletes it too).
                if let RawEntryMut::Occupied(o) = map.raw_entry_mut().from_key_hashed_nocheck(hash, d.key)
                    && now > o.get().deadline
                {
                    o.remove();
                }
                let state = map.raw_entry().from_key_hashed_nocheck(hash, d.key).and_then(|(_, e)| e.state.as_ref());
                d.strategy.forecast(state, now, d.cost)
            })
            .collect();
        let (allowed, commit) = multi::commit_set(rule, &decisions);
        for ((d, &(hash, shard)), &go) in dims.iter().zip(&located).zip(&commit) {
            if go {
                let map = &mut guards[guard_of(shard)];
                self.apply_locked(map, hash, d.key, now, &Transform::Check { strategy: d.strategy, cost: d.cost });
            }
        }
        Ok(MultiReply { decisions, allowed })
    }

    fn reset<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(self.reset_sync(key)))
    }

    fn reset_sync(&self, key: &str) -> Result<()> {
        let (hash, shard) = self.locate(key);
        let mut map = self.shards[shard].map.lock();
        if let RawEntryMut::Occupied(o) = map.raw_entry_mut().from_key_hashed_nocheck(hash, key) {
            o.remove();
        }
        Ok(())
    }

    fn is_sync(&self) -> bool {
        true
    }
}
