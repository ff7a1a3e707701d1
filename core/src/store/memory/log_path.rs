//! The memory store's sliding-window-log fast path: a check runs on the key's boxed [`Log`] in
//! place.
//!
//! Why: the generic apply moves the key's state out of its entry ([`Entry::take_state`] swaps
//! the 112-byte log out of its box, leaving an empty one), wraps it in an `Option<State>`, runs
//! the transition through [`Strategy`](crate::Strategy)'s dispatch and [`Reply`](crate::store::Reply),
//! and moves it back: three copies of the log's 112 bytes and two of the reply per check, for a
//! transition that usually changes two words of the log (its total and a pending run). Here the
//! transition gets `&mut Log` pointing into the holder box, so nothing is moved.
//!
//! The decisions and the stored states are those of the generic path: an expired key, a key
//! of another shape and an absent key all read as an empty log; an allowed check writes the log
//! and the deadline `now + windowMs`; a denied check writes nothing, and drops an entry left
//! without state (as the generic path drops an entry whose state it did not put back).

use super::{Entry, Located, MemoryStore, Probe, ShardData, T_LOG, T_NONE};
use crate::algorithms::sliding_window_log::SlidingWindowLog;
use crate::decision::Decision;
use crate::error::Result;
use crate::state::{Log, State};

impl MemoryStore {
    /// [`MemoryStore::check_gcra_joined`] for a sliding-window log: the log edited in place
    /// (below), reached from the limiter with no `dyn Store` call, no
    /// [`Reply`](crate::store::Reply) and no joined key in between. A function of its own beside
    /// the GCRA one, called out of line (`Limiter::check_sync_other` says why).
    ///
    /// Inlined, with everything the check runs (the new key, the other shape, the long key, the
    /// log's viewed check): a decision that comes back from a call is kept in memory where the
    /// ways meet, written 8 bytes (and 1) at a time and copied on 16 at a time, and such a copy
    /// waits for the stores to reach the cache (no store forwarding). With the store's check
    /// and the log's called, such copies (and the limiter's, see
    /// `Limiter::check_sync_log_inlined`) were 12% of the Python log row's samples in `perf`
    /// (docs/performance.md).
    #[inline(always)]
    pub(crate) fn check_log_joined(
        &self,
        prefix: &str,
        key: &str,
        now: i64,
        swl: &SlidingWindowLog,
        cost: u64,
    ) -> Result<Decision> {
        let probe = if prefix.is_empty() {
            self.check_key_length(key.len())?;
            Probe::new(key.as_bytes())
        } else {
            self.check_key_length(prefix.len() + 1 + key.len())?;
            match Probe::joined(prefix.as_bytes(), key.as_bytes()) {
                Some(probe) => probe,
                None => return Ok(self.check_log_joined_long(prefix, key, now, swl, cost)),
            }
        };
        Ok(self.check_log(&self.locate(&probe), now, swl, cost))
    }

    /// [`MemoryStore::check_log_joined`] for a `prefix:key` too long to be probed without
    /// being joined: joined (without allocating), then probed. Inlined (see `check_log_joined`).
    #[inline(always)]
    fn check_log_joined_long(&self, prefix: &str, key: &str, now: i64, swl: &SlidingWindowLog, cost: u64) -> Decision {
        crate::key::with_joined(prefix, key, |full| {
            let probe = Probe::new(full.as_bytes());
            self.check_log(&self.locate(&probe), now, swl, cost)
        })
    }

    /// A sliding-window-log check of the located key at `now`: [`crate::store::Store::apply_sync`]
    /// with [`crate::store::Transform::Check`], on the log in place.
    #[inline(always)]
    pub(super) fn check_log(&self, at: &Located<'_>, now: i64, swl: &SlidingWindowLog, cost: u64) -> Decision {
        self.hints[at.shard].prefetch(at.hash);
        let mut guard = self.shards[at.shard].map.lock();
        self.check_log_locked(&mut guard, at, now, swl, cost)
    }

    /// [`MemoryStore::check_log`]'s work inside the locked shard.
    #[inline(always)]
    fn check_log_locked(
        &self,
        shard: &mut ShardData,
        at: &Located<'_>,
        now: i64,
        swl: &SlidingWindowLog,
        cost: u64,
    ) -> Decision {
        let Ok(mut occupied) = shard.table.find_entry(at.hash, |e| e.matches(at.probe)) else {
            return self.check_log_new(shard, at, now, swl, cost);
        };
        let entry = occupied.get_mut();
        let expired = now > entry.deadline;
        if entry.tag() != T_LOG {
            if expired {
                entry.clear_state();
            }
            return self.check_log_other(occupied, now, swl, cost);
        }
        // SAFETY: a `T_LOG` entry's `a` is its own `Box<Log>` holder (see `Entry::put_boxed`),
        // valid while the entry lives and reached only under the shard's lock, held here.
        let log = unsafe { &mut *(entry.a as usize as *mut Log) };
        if expired {
            // The old state is gone for good, whatever this check decides; the holder and the
            // runs' buffer are kept for the next runs.
            log.clear();
        }
        let step = swl.check_log(log, now, cost, true);
        match step.ttl_ms {
            Some(ttl) => entry.deadline = now.saturating_add(ttl),
            // A deny after expiry leaves the key without state: the generic path drops it.
            None if expired => {
                drop(occupied.remove());
                return step.reply;
            }
            None => {}
        }
        entry.touch();
        step.reply
    }

    /// The check of a key the shard does not hold: an empty log, stored only if the check is
    /// allowed. Inlined (see `check_log_joined`).
    #[inline(always)]
    fn check_log_new(
        &self,
        shard: &mut ShardData,
        at: &Located<'_>,
        now: i64,
        swl: &SlidingWindowLog,
        cost: u64,
    ) -> Decision {
        let mut log = Log::new();
        let step = swl.check_log(&mut log, now, cost, true);
        if let Some(ttl) = step.ttl_ms {
            self.insert(shard, at, Entry::new(at.probe, now.saturating_add(ttl), Some(State::Log(log))), now);
        }
        step.reply
    }

    /// The check of a key whose entry holds no log (no state, or another shape): it reads as a
    /// fresh key, and an allowed check replaces the state with a new log.
    #[inline(always)]
    fn check_log_other(
        &self,
        mut occupied: hashbrown::hash_table::OccupiedEntry<'_, Entry>,
        now: i64,
        swl: &SlidingWindowLog,
        cost: u64,
    ) -> Decision {
        let entry = occupied.get_mut();
        let mut log = Log::new();
        let step = swl.check_log(&mut log, now, cost, true);
        match step.ttl_ms {
            Some(ttl) => {
                entry.clear_state();
                entry.put_state(Some(State::Log(log)));
                entry.deadline = now.saturating_add(ttl);
                entry.touch();
            }
            None if entry.tag() == T_NONE => drop(occupied.remove()),
            None => entry.touch(),
        }
        step.reply
    }
}
