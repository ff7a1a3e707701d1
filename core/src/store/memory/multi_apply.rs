//! The memory store's multi-dimensional apply: every involved shard locked at once (in
//! ascending order), then `store::multi_apply` plans every dimension and commits what the rule
//! admits, reaching each dimension's entry inside the locked shards.

use super::{Located, MemoryStore, Probe, ShardData};
use crate::decision::Decision;
use crate::error::Result;
use crate::state::State;
use crate::store::multi_apply::{self, DimensionSlots};
use crate::store::shard_lock::ShardGuard;
use crate::store::{DimensionCall, DimensionLease, MultiGrant, Reply, Rule, Transform};

/// The dimensions' entries inside their locked shards.
struct Locked<'s, 'a> {
    store: &'s MemoryStore,
    located: &'a [Located<'a>],
    /// The locked shards' indices, ascending (one guard each, in `guards`).
    order: Vec<usize>,
    guards: Vec<ShardGuard<'s, ShardData>>,
    now: i64,
}

impl Locked<'_, '_> {
    fn guard_of(&self, shard: usize) -> usize {
        self.order.binary_search(&shard).unwrap_or_default()
    }
}

impl DimensionSlots for Locked<'_, '_> {
    fn plan(&mut self, i: usize, decide: &dyn Fn(Option<&State>) -> (u64, Decision)) -> Result<(u64, Decision)> {
        let at = &self.located[i];
        let g = self.guard_of(at.shard);
        let table = &mut self.guards[g].table;
        Ok(match table.find_entry(at.hash, |e| e.matches(at.probe)) {
            Ok(mut o) => {
                if self.now > o.get().deadline {
                    drop(o.remove());
                    return Ok(decide(None));
                }
                let entry = o.get_mut();
                let state = entry.take_state();
                let planned = decide(state.as_ref());
                entry.put_state(state);
                planned
            }
            Err(_) => decide(None),
        })
    }

    fn commit(&mut self, i: usize, transform: &Transform<'_>) -> Result<Reply> {
        let at = &self.located[i];
        let g = self.guard_of(at.shard);
        Ok(self.store.apply_locked(&mut self.guards[g], at, self.now, transform))
    }
}

impl MemoryStore {
    /// A multi apply under every involved shard's lock (see `store::multi_apply`).
    pub(super) fn multi_locked(
        &self,
        rule: Rule,
        dims: &[DimensionCall<'_>],
        leases: Option<&[DimensionLease]>,
        now: i64,
    ) -> Result<MultiGrant> {
        for d in dims {
            self.check_key_length(d.key.len())?;
        }
        let probes: Vec<Probe<'_>> = dims.iter().map(|d| Probe::new(d.key.as_bytes())).collect();
        let located: Vec<Located<'_>> = probes.iter().map(|p| self.locate(p)).collect();
        // Lock every shard involved once, in ascending order, so two multi applies cannot deadlock.
        let mut order: Vec<usize> = located.iter().map(|l| l.shard).collect();
        order.sort_unstable();
        order.dedup();
        let guards: Vec<ShardGuard<'_, ShardData>> = order.iter().map(|&s| self.shards[s].map.lock()).collect();
        let mut locked = Locked { store: self, located: &located, order, guards, now };
        multi_apply::apply(&mut locked, rule, dims, leases, now)
    }
}
