//! Count replies: a fixed window on the caller's clock asks Redis for the count its window held
//! (one integer per dimension) instead of six integers of decision, and the Rust fixed window
//! derives each decision and TTL from that count, the memory store's decision on the same state.
//! [`WindowCount`] is one key's (`fixed_window.lua`'s `count` mode), [`WindowCounts`] a fused
//! multi check's (`multi.lua`'s `count` reply). `docs/redis.md`, "Fixed windows".

use super::call::Outcome;
use crate::algorithms::fixed_window::FixedWindow;
use crate::decision::Decision;
use crate::store::{DimensionCall, MultiReply, Now, Reply, Rule};

/// What turns multi.lua's `count` reply into the multi reply: the call's `now` and rule, and
/// per dimension its window and cost. Why: Redis then keeps and replies one integer per
/// dimension instead of six (docs/performance.md, "The Redis scripts"); the caller that knows
/// `now` derives them all from the counts, [`FixedWindow::check`] on each count being the memory store's decision on the same
/// state and [`crate::multi::commit_set`] its verdict. The script's own verdict must agree, or
/// the reply is the store's failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowCounts {
    /// The call's `now` (the caller's clock).
    pub now: i64,
    /// The rule.
    pub rule: Rule,
    /// How many dimensions (`dims[..n]`; a byte, as this shape rides in every call's future:
    /// `RedisStore::call`).
    pub n: u8,
    /// Per dimension: its window and its cost.
    pub dims: [(FixedWindow, u64); WindowCounts::MAX],
}

impl WindowCounts {
    /// The most dimensions sent this way (a `Copy` shape; more take the six-integer reply).
    pub const MAX: usize = 4;

    /// The call's shape for `dims` at `now` when every dimension is a fixed window.
    pub(super) fn of(rule: Rule, dims: &[DimensionCall<'_>], now: Now) -> Option<WindowCounts> {
        let Now::At(now) = now else { return None };
        if dims.len() > Self::MAX {
            return None;
        }
        let mut out = WindowCounts {
            now,
            rule,
            n: dims.len() as u8,
            dims: [(FixedWindow { limit: 1, window_ms: 1 }, 0); Self::MAX],
        };
        for (o, d) in out.dims.iter_mut().zip(dims) {
            *o = (*d.strategy.as_fixed_window()?, d.cost);
        }
        Some(out)
    }

    /// The multi reply and the TTL written per key, from the script's integers; `None` when they
    /// are not a count reply to this call.
    pub(super) fn decide(&self, f: &[i64]) -> Option<(MultiReply, Vec<Option<i64>>)> {
        let n = usize::from(self.n);
        if f.len() != n + 1 || !matches!(f[0], 0 | 1) {
            return None;
        }
        let mut decisions = Vec::with_capacity(n);
        let mut ttls = Vec::with_capacity(n);
        for (&(window, cost), &count) in self.dims[..n].iter().zip(&f[1..]) {
            let step = window.check_found(u64::try_from(count).ok()?, self.now, cost);
            decisions.push(step.reply);
            ttls.push(step.ttl_ms);
        }
        let (admitted, commits) = crate::multi::commit_set(self.rule, &decisions);
        if admitted != (f[0] == 1) {
            return None;
        }
        let ttls = ttls.into_iter().zip(commits).map(|(t, c)| if c { t } else { None }).collect();
        Some((MultiReply { allowed: admitted, decisions }, ttls))
    }
}

/// What turns a fixed-window `count` reply into the decision: the check's `now` and cost and
/// the window's options.
///
/// Why: inside Redis a six-integer reply costs a third of a fixed-window `FCALL`
/// (docs/performance.md, "The Redis scripts"), and the caller that knows `now` can derive every
/// field from the count: the script decides the write with the same comparison (`count + cost <= limit`),
/// and [`FixedWindow::check`] on a state holding that count in `now`'s window is, by
/// construction, the decision the memory store makes on the same state. On the server's clock
/// the caller does not know `now`, so that check keeps the 6-element reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowCount {
    /// The check's `now` (the caller's clock).
    pub now: i64,
    /// The check's cost.
    pub cost: u64,
    /// The window's limit and length.
    pub window: FixedWindow,
    /// Whether the call is a one-dimension multi check (the reply reads as a multi reply),
    /// else a single-key check (a decision).
    pub multi: bool,
}

impl WindowCount {
    /// The decision and the TTL the script wrote (when it allowed), from the count it found;
    /// `None` for a negative count (not what our script sends).
    pub(super) fn decide(&self, count: i64) -> Option<(Decision, Option<i64>)> {
        let count = u64::try_from(count).ok()?;
        let step = self.window.check_found(count, self.now, self.cost);
        Some((step.reply, step.ttl_ms))
    }

    pub(super) fn outcome(&self, d: Decision) -> Outcome {
        if self.multi {
            Outcome::Multi(MultiReply { allowed: d.allowed, decisions: vec![d] })
        } else {
            Outcome::Single(Reply::Decision(d))
        }
    }
}
