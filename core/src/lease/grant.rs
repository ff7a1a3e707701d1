//! The lease's store-side transitions, in Rust: what `core/lua/lease.lua` does on Redis, run by
//! the in-memory store (and by any store through [`crate::store::Transform::run`]).
//!
//! A lease is a check of several units, so every credit a node holds is already counted in the
//! strategy's own state; a give-back undoes such a check where the strategy can say exactly
//! which units were taken (a period counter of the same period, a GCRA TAT, a token bucket).

use crate::lease::Grant;
use crate::spec::{ResetCadence, StrategySpec};
use crate::state::{State, Step};
use crate::strategy::Strategy;

/// A lease of `want` units for a request of `cost` (`cost <= want`): the largest of `want`, the
/// units still admissible, and `cost` that the strategy admits, committed in one step. The
/// credits live `lifetime_ms`, or until the period's reset when it is 0 (coupled).
pub fn lease(
    strategy: &Strategy,
    slot: &mut Option<State>,
    now: i64,
    cost: u64,
    want: u64,
    lifetime_ms: i64,
) -> Step<Grant> {
    let mut granted = want;
    let mut step = strategy.check(slot, now, want, true);
    if !step.reply.allowed && want > cost {
        let avail = step.reply.remaining.max(0) as u64;
        if avail > cost && avail < want {
            granted = avail;
            step = strategy.check(slot, now, avail, true);
        }
        if !step.reply.allowed {
            granted = cost;
            step = strategy.check(slot, now, cost, true);
        }
    }
    let d = step.reply;
    if !d.allowed {
        let reply = Grant {
            granted: 0,
            limit: d.limit,
            reset_at: d.reset_at,
            retry_after_ms: d.retry_after_ms,
            expires_in_ms: 0,
        };
        return Step { reply, ttl_ms: None };
    }
    let expires_in_ms = if lifetime_ms == 0 { d.reset_at.saturating_sub(now) } else { lifetime_ms }.max(0);
    Step {
        reply: Grant { granted, limit: d.limit, reset_at: d.reset_at, retry_after_ms: 0, expires_in_ms },
        ttl_ms: step.ttl_ms,
    }
}

/// What [`lease`] would grant against `state` at `now`, without committing: the units (0 when
/// even `cost` is denied) and the decision at that size. A multi-dimensional lease plans every
/// dimension first and commits only what its rule admits (`core/lua/multi.lua`'s lease section).
pub fn plan(strategy: &Strategy, state: Option<&State>, now: i64, cost: u64, want: u64) -> (u64, crate::Decision) {
    let d = strategy.forecast(state, now, want);
    if d.allowed {
        return (want, d);
    }
    if want > cost {
        let avail = d.remaining.max(0) as u64;
        if avail > cost && avail < want {
            let d = strategy.forecast(state, now, avail);
            if d.allowed {
                return (avail, d);
            }
        }
        let d = strategy.forecast(state, now, cost);
        return (if d.allowed { cost } else { 0 }, d);
    }
    (0, d)
}

/// Gives back `units` unspent credits of a grant whose period resets at `reset_at`; the reply's
/// `granted` is the units taken back (0 where the strategy cannot take them back exactly).
pub fn give_back(strategy: &Strategy, slot: &mut Option<State>, now: i64, units: u64, reset_at: i64) -> Step<Grant> {
    let back = |ttl: i64| Step {
        reply: Grant { granted: units, limit: 0, reset_at: 0, retry_after_ms: 0, expires_in_ms: 0 },
        ttl_ms: Some(ttl.max(1)),
    };
    let none = Step { reply: Grant::default(), ttl_ms: None };
    let now_f = now as f64;
    match (strategy.spec(), slot.as_mut()) {
        (StrategySpec::Gcra(o), Some(State::Tat(tat))) if *tat > now_f => {
            let t = o.period_ms / o.limit;
            let mut new_tat = *tat - units as f64 * t;
            if new_tat < now_f {
                new_tat = now_f;
            }
            *tat = new_tat;
            back((new_tat - now_f).ceil() as i64)
        }
        (StrategySpec::TokenBucket(o), state) => {
            let refill_per_ms = o.refill_per_sec / 1000.0;
            let tokens = match state {
                Some(State::Bucket { tokens, last }) => {
                    o.capacity.min(*tokens + (now_f - *last as f64).max(0.0) * refill_per_ms)
                }
                _ => o.capacity,
            };
            let tokens = o.capacity.min(tokens + units as f64);
            *slot = Some(State::Bucket { tokens, last: now });
            back((o.capacity / refill_per_ms).ceil() as i64)
        }
        (StrategySpec::FixedWindow(_), Some(State::Counter { count, .. }))
        | (StrategySpec::Quota(_), Some(State::Counter { count, .. })) => {
            if !coupled_kind(strategy) || *count == 0 {
                return none;
            }
            let stored = *count;
            let peek = strategy.peek(slot.as_ref(), now);
            // The stored count is this period's (not a stale one) and the grant was this period's.
            if peek.reset_at != reset_at || (peek.limit - peek.remaining) as u64 != stored.min(peek.limit as u64) {
                return none;
            }
            if let Some(State::Counter { count, .. }) = slot.as_mut() {
                *count = count.saturating_sub(units);
            }
            back(reset_at - now)
        }
        _ => none,
    }
}

/// Whether `strategy` can take credits back exactly (else they age out in the store).
pub fn can_give_back(strategy: &Strategy) -> bool {
    matches!(strategy.spec(), StrategySpec::Gcra(_) | StrategySpec::TokenBucket(_)) || coupled_kind(strategy)
}

/// Whether `strategy` counts per period with a reset (fixed window, fixed and calendar quotas):
/// the kinds whose credits can be coupled to the period and given back within it.
pub fn coupled_kind(strategy: &Strategy) -> bool {
    match strategy.spec() {
        StrategySpec::FixedWindow(_) => true,
        StrategySpec::Quota(o) => o.reset_cadence != ResetCadence::Rolling,
        _ => false,
    }
}

/// How long an uncoupled lease's credits live: the strategy's own horizon (a window, a period,
/// a full refill of the bucket). Quotas with a reset are always coupled (0).
pub fn lifetime_ms(strategy: &Strategy, window_coupled: bool) -> i64 {
    let ms = |v: f64| (v.ceil() as i64).max(1);
    match strategy.spec() {
        _ if window_coupled => 0,
        StrategySpec::Gcra(o) => ms(o.period_ms),
        StrategySpec::TokenBucket(o) => ms(o.capacity * 1000.0 / o.refill_per_sec),
        StrategySpec::FixedWindow(o) | StrategySpec::SlidingWindowLog(o) => ms(o.window_ms),
        StrategySpec::SlidingWindow(o) => ms(o.window_ms),
        StrategySpec::Quota(o) if o.reset_cadence == ResetCadence::Rolling => ms(o.period_ms.unwrap_or(1.0)),
        StrategySpec::Quota(_) => 0,
    }
}
