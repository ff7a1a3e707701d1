//! A multi-dimensional apply, written once for every store that runs core's transitions itself
//! (the memory store under its shard locks, the SQLite store inside one transaction): every
//! dimension planned at `now` against its current state, the rule's commit set computed, then
//! each admitted dimension committed as a check (or, with leases, a lease of its planned units).
//!
//! A store says only how to reach one dimension's state ([`DimensionSlots`]); the order of the
//! steps, what is planned and what is committed live here, so the stores cannot disagree.

use crate::decision::Decision;
use crate::error::Result;
use crate::lease::Grant;
use crate::multi;
use crate::state::State;
use crate::store::{DimensionCall, DimensionLease, MultiGrant, MultiReply, Reply, Rule, Transform};

/// One store's access to the dimensions of one multi apply, all held atomically (locked, or
/// inside a transaction) for the whole apply.
pub(crate) trait DimensionSlots {
    /// Runs `decide` on dimension `i`'s current state (`None` when absent or expired). An expired
    /// state is dropped for good here, whether or not the dimension commits: a later backward
    /// clock jump must not bring it back (the Redis scripts delete it too).
    fn plan(&mut self, i: usize, decide: &dyn Fn(Option<&State>) -> (u64, Decision)) -> Result<(u64, Decision)>;

    /// Applies `transform` to dimension `i` (a key may appear in several dimensions: each
    /// commit sees the ones before it).
    fn commit(&mut self, i: usize, transform: &Transform<'_>) -> Result<Reply>;
}

/// Plans every dimension at `now`, then commits what `rule` admits (see the module doc);
/// `config_invalid` unless there is one lease per dimension.
pub(crate) fn apply(
    slots: &mut dyn DimensionSlots,
    rule: Rule,
    dims: &[DimensionCall<'_>],
    leases: Option<&[DimensionLease]>,
    now: i64,
) -> Result<MultiGrant> {
    if leases.is_some_and(|l| l.len() != dims.len()) {
        return Err(crate::Error::config("leases", "must give one lease per dimension"));
    }
    let mut planned: Vec<(u64, Decision)> = Vec::with_capacity(dims.len());
    for (i, d) in dims.iter().enumerate() {
        let decide = |state: Option<&State>| -> (u64, Decision) {
            match leases {
                Some(l) => crate::lease::grant::plan(d.strategy, state, now, d.cost, l[i].want.max(d.cost)),
                None => {
                    let decision = d.strategy.forecast(state, now, d.cost);
                    (if decision.allowed { d.cost } else { 0 }, decision)
                }
            }
        };
        planned.push(slots.plan(i, &decide)?);
    }
    let decisions: Vec<Decision> = planned.iter().map(|p| p.1).collect();
    let (allowed, commit) = multi::commit_set(rule, &decisions);
    let mut grants = Vec::with_capacity(if leases.is_some() { dims.len() } else { 0 });
    for (i, (d, &go)) in dims.iter().zip(&commit).enumerate() {
        match leases {
            None if go => {
                slots.commit(i, &Transform::Check { strategy: d.strategy, cost: d.cost })?;
            }
            None => {}
            Some(l) if go => {
                let units = planned[i].0;
                let t =
                    Transform::Lease { strategy: d.strategy, cost: units, want: units, lifetime_ms: l[i].lifetime_ms };
                grants.push(slots.commit(i, &t)?.grant().unwrap_or_default());
            }
            Some(_) => {
                let d = planned[i].1;
                let (limit, reset_at, retry_after_ms) = (d.limit, d.reset_at, d.retry_after_ms);
                grants.push(Grant { granted: 0, limit, reset_at, retry_after_ms, expires_in_ms: 0 });
            }
        }
    }
    Ok(MultiGrant { reply: MultiReply { decisions, allowed }, grants })
}
