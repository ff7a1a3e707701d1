//! The two-tier modes of a [`crate::MultiLimiter`]: credits per dimension key, spent together.
//!
//! Each dimension has its own [`Tier`] (its credits live as long as its own strategy's lease),
//! keyed by the dimension's full key, so credits leased for one IP serve every request naming
//! that IP, whatever its other keys. A request is answered locally only when **every**
//! dimension holds credits for its cost; then each dimension spends its share. Otherwise the
//! dimensions short of credits are leased in one fused, atomic call (`core/lua/multi.lua`'s
//! lease section, [`crate::Store::apply_multi_lease`]) under the limiter's own rule, while the
//! credits of the others are *reserved* (taken out under the tier's lock): if the store admits,
//! the reservation is spent; if it denies, nothing was committed in the store and the
//! reservation is put back. So a multi decision admits only when every limit admits (`all`),
//! nothing is charged on a denial, and every credit is counted in its dimension's store state
//! when leased: per dimension key, the single limiter's bound holds (docs/leasing.md).
//!
//! Cached denials are kept per request (the tuple of keys): a denial of `all` holds until its
//! binding dimension's retry (the latest of the deniers), one of `any` until the earliest; both
//! are exact, they never admit more.
//!
//! The functions here are the multi counterparts of the model's actions (`model.rs`):
//! [`MultiTier::local`] is `Spend`/`CachedDeny`/`SendLease`, [`MultiTier::absorb`] is `Deliver`.

use std::sync::atomic::Ordering;

use crate::decision::Decision;
use crate::lease::tier::{Counters, Entry, Held, Tier};
use crate::lease::{Mode, grant};
use crate::store::{MultiGrant, Rule};
use crate::strategy::Strategy;

/// Credits taken out of one dimension's entry for a request in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reserved {
    dim: usize,
    units: u64,
    expires_at: i64,
    reset_at: i64,
    limit: i64,
}

/// What the tier says about a multi request.
#[derive(Debug, PartialEq)]
pub(crate) enum MultiLocal {
    /// Answered locally: the rule's verdict and every dimension's decision.
    Answer(bool, Vec<Decision>),
    /// Lease the dimensions `lacking` (indices, ascending); `reserved` is held for the others.
    Lease { lacking: Vec<usize>, reserved: Vec<Reserved> },
    /// Ask the store as strict mode does.
    Strict,
}

/// A request's cached denial.
struct Denied {
    sent_at: i64,
    until: i64,
    cost: u64,
    decisions: Vec<Decision>,
}

/// A multi limiter's local tier.
pub(crate) struct MultiTier {
    mode: Mode,
    rule: Rule,
    /// One tier per dimension, in declaration order (its entries are locked in that order).
    dims: Vec<Tier>,
    max_keys: usize,
    denials: crate::lock::Lock<super::KeyMap<Denied>>,
    counters: Counters,
}

/// The cache key of a request: every full key, length-prefixed (no two tuples collide).
fn tuple(keys: &[String]) -> String {
    let mut s = String::with_capacity(keys.iter().map(|k| k.len() + 8).sum());
    for k in keys {
        s.push_str(&k.len().to_string());
        s.push(':');
        s.push_str(k);
    }
    s
}

fn allowed_from(e: &Entry) -> Decision {
    Decision {
        allowed: true,
        limit: e.limit,
        remaining: (e.credits as i64).min(e.limit),
        reset_at: e.reset_at,
        retry_after_ms: 0,
        fallback: false,
    }
}

impl MultiTier {
    /// A tier for `mode` (validated, not strict) in front of `strategies`, one per dimension.
    pub fn new(mode: Mode, rule: Rule, strategies: &[&Strategy]) -> MultiTier {
        let max_keys = match mode {
            Mode::Leased(o) => o.max_keys,
            Mode::CachedDeny { max_keys } => max_keys,
            Mode::Strict => 1,
        };
        MultiTier {
            mode,
            rule,
            dims: strategies.iter().map(|s| Tier::new(mode, s)).collect(),
            max_keys: max_keys.max(1),
            denials: crate::lock::Lock::new(super::KeyMap::default()),
            counters: Counters::default(),
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn stats(&self) -> crate::lease::TierStats {
        self.counters.stats()
    }

    pub(crate) fn count_lease(&self) {
        self.counters.leases.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_returned(&self, units: u64) {
        self.counters.credits_returned.fetch_add(units, Ordering::Relaxed);
    }

    /// How long dimension `i`'s credits live (0: until its period's reset).
    pub fn lifetime_ms(&self, i: usize) -> i64 {
        self.dims[i].lifetime_ms
    }

    /// The request of `cost` (dimension costs `costs`) for full keys `keys` at local `now`.
    pub fn local(&self, keys: &[String], cost: u64, costs: &[u64], now: i64) -> MultiLocal {
        {
            let mut denials = self.denials.lock();
            let t = tuple(keys);
            if let Some(d) = denials.get(&t) {
                if now < d.until && cost >= d.cost {
                    self.counters.local_denials.fetch_add(1, Ordering::Relaxed);
                    let elapsed = now - d.sent_at;
                    let decisions = d
                        .decisions
                        .iter()
                        .map(|x| {
                            let mut x = *x;
                            if !x.allowed {
                                x.retry_after_ms = (x.retry_after_ms - elapsed).max(1);
                            }
                            x
                        })
                        .collect();
                    return MultiLocal::Answer(false, decisions);
                }
                if now >= d.until {
                    denials.remove(&t);
                }
            }
        }
        let Mode::Leased(o) = self.mode else { return MultiLocal::Strict };
        let mut maps: Vec<_> = self.dims.iter().map(|t| t.entries.lock()).collect();
        let mut credited = vec![false; keys.len()];
        for (i, key) in keys.iter().enumerate() {
            if let Some(e) = maps[i].get_mut(key.as_str()) {
                e.used_at = now;
                if e.credits > 0 && now >= e.expires_at {
                    e.credits = 0; // expired: counted in the store, never spent
                }
                credited[i] = e.credits >= costs[i];
            }
        }
        if credited.iter().all(|c| *c) {
            let decisions = keys
                .iter()
                .enumerate()
                .map(|(i, key)| {
                    let e = maps[i].get_mut(key.as_str()).expect("credited entry");
                    e.credits -= costs[i];
                    allowed_from(e)
                })
                .collect();
            self.counters.local_admits.fetch_add(1, Ordering::Relaxed);
            return MultiLocal::Answer(true, decisions);
        }
        let lacking: Vec<usize> = (0..keys.len()).filter(|&i| !credited[i]).collect();
        let busy = |i: usize| maps[i].get(keys[i].as_str()).is_some_and(|e| e.leasing);
        if lacking.iter().any(|&i| costs[i] > o.batch || busy(i)) {
            return MultiLocal::Strict;
        }
        let mut reserved = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            if credited[i] {
                let e = maps[i].get_mut(key.as_str()).expect("credited entry");
                e.credits -= costs[i];
                reserved.push(Reserved {
                    dim: i,
                    units: costs[i],
                    expires_at: e.expires_at,
                    reset_at: e.reset_at,
                    limit: e.limit,
                });
            } else {
                match maps[i].get_mut(key.as_str()) {
                    Some(e) => e.leasing = true,
                    None => {
                        self.dims[i].evict_if_full(&mut maps[i], now);
                        maps[i].insert(key.clone(), Entry { leasing: true, used_at: now, ..Entry::default() });
                    }
                }
            }
        }
        MultiLocal::Lease { lacking, reserved }
    }

    /// A multi lease's reply (`None`: the store failed) for the request `local` answered with
    /// [`MultiLocal::Lease`], sent at local `sent_at` and received at `recv_at`: the rule's
    /// verdict and every dimension's decision, or `None` for the fail policy. A denial is
    /// remembered for the tuple; reserved credits are spent on an admission, put back otherwise.
    #[allow(clippy::too_many_arguments)]
    pub fn absorb(
        &self,
        keys: &[String],
        cost: u64,
        costs: &[u64],
        lacking: &[usize],
        reserved: &[Reserved],
        sent_at: i64,
        recv_at: i64,
        reply: Option<MultiGrant>,
    ) -> Option<(bool, Vec<Decision>)> {
        let batch = match self.mode {
            Mode::Leased(o) => o.batch,
            _ => 1,
        };
        let mut maps: Vec<_> = self.dims.iter().map(|t| t.entries.lock()).collect();
        for &i in lacking {
            if let Some(e) = maps[i].get_mut(keys[i].as_str()) {
                e.leasing = false;
            }
        }
        let admitted = match (&reply, self.rule) {
            (None, _) => false,
            (Some(g), Rule::All) => g.reply.allowed,
            (Some(g), Rule::Any) => g.reply.allowed || !reserved.is_empty(),
        };
        if !admitted {
            // Nothing was committed for this request: the reservation goes back.
            for r in reserved {
                let key = &keys[r.dim];
                let cap = batch.saturating_sub(1);
                let e = maps[r.dim].entry(key.clone()).or_default();
                let live = e.credits > 0 && recv_at < e.expires_at;
                let back = r.units.min(cap.saturating_sub(if live { e.credits } else { 0 }));
                if back < r.units && recv_at < r.expires_at {
                    // More than one lease's worth would be held: give the rest back instead.
                    self.dims[r.dim].park(Held { key: key.clone(), units: r.units - back, reset_at: r.reset_at });
                }
                if back > 0 {
                    if live {
                        e.expires_at = e.expires_at.min(r.expires_at);
                    } else {
                        e.credits = 0;
                        e.expires_at = r.expires_at;
                        e.reset_at = r.reset_at;
                        e.limit = r.limit;
                    }
                    e.credits += back;
                }
            }
        }
        let g = reply?;
        let mut decisions = vec![Decision::default(); keys.len()];
        for (j, &i) in lacking.iter().enumerate() {
            let mut d = g.reply.decisions[j];
            let grant = g.grants[j];
            if grant.granted > 0 {
                let extra = grant.granted.saturating_sub(costs[i]);
                let expires_at = sent_at.saturating_add(grant.expires_in_ms);
                let key = keys[i].as_str();
                if extra > 0 && recv_at >= expires_at {
                    self.counters.late_credits_dropped.fetch_add(extra, Ordering::Relaxed);
                } else if extra > 0 {
                    match maps[i].get_mut(key) {
                        Some(e) => {
                            if e.credits > 0 && recv_at < e.expires_at {
                                e.expires_at = e.expires_at.min(expires_at);
                            } else {
                                e.credits = 0;
                                e.expires_at = expires_at;
                            }
                            e.credits += extra;
                            e.reset_at = grant.reset_at;
                            e.limit = grant.limit;
                        }
                        // Evicted while leasing: the extras are given back at the next release.
                        None => {
                            self.dims[i].park(Held { key: key.to_string(), units: extra, reset_at: grant.reset_at })
                        }
                    }
                }
                let credits = maps[i].get(key).map_or(0, |e| e.credits);
                d.remaining = (credits as i64).min(grant.limit);
            }
            decisions[i] = d;
        }
        for r in reserved {
            decisions[r.dim] = match maps[r.dim].get(keys[r.dim].as_str()) {
                Some(e) => allowed_from(e),
                _ => Decision {
                    allowed: true,
                    limit: r.limit,
                    remaining: 0,
                    reset_at: r.reset_at,
                    retry_after_ms: 0,
                    fallback: false,
                },
            };
        }
        drop(maps);
        if !admitted {
            self.remember(keys, cost, sent_at, &decisions);
        }
        Some((admitted, decisions))
    }

    /// Caches the denial of a request of `cost` sent at local `sent_at`, whose dimensions
    /// decided `decisions` (a strict multi check's or a lease's).
    pub fn remember(&self, keys: &[String], cost: u64, sent_at: i64, decisions: &[Decision]) {
        let reply = crate::store::MultiReply { decisions: decisions.to_vec(), allowed: false };
        let (_, d) = crate::multi::representative(self.rule, &reply);
        if d.fallback || d.retry_after_ms < 1 {
            return;
        }
        let mut denials = self.denials.lock();
        if denials.len() >= self.max_keys {
            denials.retain(|_, x| sent_at < x.until);
            if denials.len() >= self.max_keys
                && let Some(k) = denials.keys().next().cloned()
            {
                denials.remove(&k);
            }
        }
        let until = sent_at.saturating_add(d.retry_after_ms);
        denials.insert(tuple(keys), Denied { sent_at, until, cost, decisions: decisions.to_vec() });
    }

    /// Takes the credits of dimension `i`'s keys idle since `idle_since` (see [`Tier::take_all`]).
    pub fn take_all(&self, i: usize, now: i64, idle_since: i64) -> Vec<Held> {
        self.dims[i].take_all(now, idle_since)
    }

    /// Whether dimension `strategy` can take its credits back.
    pub fn can_give_back(strategy: &Strategy) -> bool {
        grant::can_give_back(strategy)
    }
}
