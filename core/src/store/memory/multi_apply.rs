//! The memory store's multi-dimensional apply: every involved shard locked at once (in
//! ascending order), every dimension evaluated, then what the rule admits committed — a check
//! per dimension, or with the leased mode's leases a lease of each dimension's planned units.

use super::{Located, MemoryStore, Probe, ShardData};
use crate::decision::Decision;
use crate::error::Result;
use crate::multi;
use crate::state::State;
use crate::store::shard_lock::ShardGuard;
use crate::store::{DimensionCall, DimensionLease, MultiGrant, MultiReply, Rule, Transform};

impl MemoryStore {
    /// A multi apply under every involved shard's lock: every dimension evaluated at `now` (a
    /// check of its cost, or with `leases` a lease plan, see `crate::lease::grant::plan`), then
    /// the dimensions the rule admits committed (a check, or a lease of the planned units).
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
        let mut guards: Vec<ShardGuard<'_, ShardData>> = order.iter().map(|&s| self.shards[s].map.lock()).collect();
        let guard_of = |shard: usize| order.binary_search(&shard).unwrap_or_default();
        let decide = |i: usize, state: Option<&State>| -> (u64, Decision) {
            let d = &dims[i];
            match leases {
                Some(l) => crate::lease::grant::plan(d.strategy, state, now, d.cost, l[i].want.max(d.cost)),
                None => {
                    let decision = d.strategy.forecast(state, now, d.cost);
                    (if decision.allowed { d.cost } else { 0 }, decision)
                }
            }
        };

        let planned: Vec<(u64, Decision)> = located
            .iter()
            .enumerate()
            .map(|(i, at)| {
                let table = &mut guards[guard_of(at.shard)].table;
                match table.find_entry(at.hash, |e| e.matches(at.probe)) {
                    Ok(mut o) => {
                        // An expired key is gone for good, whether or not this dimension
                        // commits: a later backward clock jump must not bring it back (the Redis
                        // path deletes it too).
                        if now > o.get().deadline {
                            drop(o.remove());
                            return decide(i, None);
                        }
                        let entry = o.get_mut();
                        let state = entry.take_state();
                        let planned = decide(i, state.as_ref());
                        entry.put_state(state);
                        planned
                    }
                    Err(_) => decide(i, None),
                }
            })
            .collect();
        let decisions: Vec<Decision> = planned.iter().map(|p| p.1).collect();
        let (allowed, commit) = multi::commit_set(rule, &decisions);
        let mut grants = Vec::with_capacity(if leases.is_some() { dims.len() } else { 0 });
        for (i, ((d, at), &go)) in dims.iter().zip(&located).zip(&commit).enumerate() {
            let shard = &mut guards[guard_of(at.shard)];
            match leases {
                None if go => {
                    self.apply_locked(shard, at, now, &Transform::Check { strategy: d.strategy, cost: d.cost });
                }
                None => {}
                Some(l) if go => {
                    let units = planned[i].0;
                    let t = Transform::Lease {
                        strategy: d.strategy,
                        cost: units,
                        want: units,
                        lifetime_ms: l[i].lifetime_ms,
                    };
                    grants.push(self.apply_locked(shard, at, now, &t).grant().unwrap_or_default());
                }
                Some(_) => {
                    let d = planned[i].1;
                    let (limit, reset_at, retry_after_ms) = (d.limit, d.reset_at, d.retry_after_ms);
                    grants.push(crate::lease::Grant { granted: 0, limit, reset_at, retry_after_ms, expires_in_ms: 0 });
                }
            }
        }
        Ok(MultiGrant { reply: MultiReply { decisions, allowed }, grants })
    }
}
