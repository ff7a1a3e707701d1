//! The node-local tier: credits and cached denials per key, and the calls that fill it.
//!
//! Every function here is one action of the model in `model.rs`: [`Tier::local`] (a request
//! answered from credits or a cached denial, or sent on), [`Tier::absorb`] (a lease's reply
//! arriving), [`Tier::remember`] (a strict denial cached), [`Tier::take_all`] (credits given
//! back). One lease per key is in flight per node at a time; a request that finds one in
//! flight takes the strict path, which never over-admits.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::decision::Decision;
use crate::error::Result;
use crate::lease::{Grant, Mode, grant};
use crate::limiter::Limiter;
use crate::store::{Reply, Transform};

/// Counters of a tier, for tests, benches and dashboards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierStats {
    /// Requests admitted from local credits.
    pub local_admits: u64,
    /// Requests denied from a cached denial.
    pub local_denials: u64,
    /// Leases sent to the store.
    pub leases: u64,
    /// Credits dropped because their grant arrived after its expiry.
    pub late_credits_dropped: u64,
    /// Credits given back to the store.
    pub credits_returned: u64,
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) local_admits: AtomicU64,
    pub(super) local_denials: AtomicU64,
    pub(super) leases: AtomicU64,
    pub(super) late_credits_dropped: AtomicU64,
    pub(super) credits_returned: AtomicU64,
}

impl Counters {
    pub(super) fn stats(&self) -> TierStats {
        TierStats {
            local_admits: self.local_admits.load(Ordering::Relaxed),
            local_denials: self.local_denials.load(Ordering::Relaxed),
            leases: self.leases.load(Ordering::Relaxed),
            late_credits_dropped: self.late_credits_dropped.load(Ordering::Relaxed),
            credits_returned: self.credits_returned.load(Ordering::Relaxed),
        }
    }
}

/// One key's local state.
#[derive(Clone, Copy, Default)]
pub(super) struct Entry {
    pub(super) credits: u64,
    /// Local clock (ms): the credits are void from this instant.
    pub(super) expires_at: i64,
    /// The grant's `reset_at` (store clock), reported on local decisions and sent back with a
    /// give-back.
    pub(super) reset_at: i64,
    pub(super) limit: i64,
    pub(super) leasing: bool,
    /// Local clock: the cached denial holds before this instant, for costs >= `denied_cost`.
    pub(super) denied_until: i64,
    pub(super) denied_cost: u64,
    pub(super) denied: Decision,
    pub(super) used_at: i64,
}

/// Credits taken out of the tier to be given back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    pub key: String,
    pub units: u64,
    pub reset_at: i64,
}

/// What the tier says about a request.
#[derive(Debug, PartialEq)]
pub(crate) enum Local {
    /// Answered locally.
    Answer(Decision),
    /// Answered locally; then top the credits up (the low-water mark was crossed).
    AnswerThenTopUp(Decision, u64),
    /// Lease `want` units for this request.
    Lease(u64),
    /// Ask the store as strict mode does.
    Strict,
}

/// A limiter's local tier.
pub(crate) struct Tier {
    mode: Mode,
    pub(super) lifetime_ms: i64,
    max_keys: usize,
    pub(super) entries: crate::lock::Lock<super::KeyMap<Entry>>,
    /// Credits of evicted keys, given back at the next release (at most `max_keys`).
    pending: crate::lock::Lock<Vec<Held>>,
    pub(super) counters: Counters,
}

impl Tier {
    /// A tier for `mode` in front of `strategy` (`mode` validated, not strict).
    pub fn new(mode: Mode, strategy: &crate::Strategy) -> Tier {
        let (max_keys, coupled) = match mode {
            Mode::Leased(o) => (o.max_keys, o.window_coupled),
            Mode::CachedDeny { max_keys } => (max_keys, false),
            Mode::Strict => (1, false),
        };
        Tier {
            mode,
            lifetime_ms: grant::lifetime_ms(strategy, coupled),
            max_keys: max_keys.max(1),
            entries: crate::lock::Lock::new(super::KeyMap::default()),
            pending: crate::lock::Lock::new(Vec::new()),
            counters: Counters::default(),
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn stats(&self) -> TierStats {
        self.counters.stats()
    }

    /// The request of `cost` for full key `key` at local time `now`: a spend of credits, a
    /// cached denial, or what to ask the store. (Model actions `Spend`, `CachedDeny`,
    /// `SendLease`.)
    pub fn local(&self, key: &str, cost: u64, now: i64) -> Local {
        let mut map = self.entries.lock();
        if let Some(e) = map.get_mut(key) {
            e.used_at = now;
            if now < e.denied_until && cost >= e.denied_cost {
                self.counters.local_denials.fetch_add(1, Ordering::Relaxed);
                let mut d = e.denied;
                d.retry_after_ms = e.denied_until - now;
                return Local::Answer(d);
            }
            if e.credits > 0 && now >= e.expires_at {
                e.credits = 0; // expired: counted in the store, never spent
            }
            if e.credits >= cost {
                e.credits -= cost;
                self.counters.local_admits.fetch_add(1, Ordering::Relaxed);
                let d = Decision {
                    allowed: true,
                    limit: e.limit,
                    remaining: (e.credits as i64).min(e.limit),
                    reset_at: e.reset_at,
                    retry_after_ms: 0,
                    fallback: false,
                };
                if let Mode::Leased(o) = self.mode
                    && o.low_water > 0
                    && e.credits <= o.low_water
                    && !e.leasing
                {
                    e.leasing = true;
                    return Local::AnswerThenTopUp(d, o.batch);
                }
                return Local::Answer(d);
            }
        }
        let Mode::Leased(o) = self.mode else { return Local::Strict };
        if cost > o.batch {
            return Local::Strict;
        }
        match map.get_mut(key) {
            Some(e) if e.leasing => return Local::Strict,
            Some(e) => e.leasing = true,
            None => {
                self.evict_if_full(&mut map, now);
                map.insert(key.to_string(), Entry { leasing: true, used_at: now, ..Entry::default() });
            }
        }
        Local::Lease(o.batch.max(cost))
    }

    /// A lease's reply for a request of `cost` (0 for a top-up), sent at local `sent_at` and
    /// received at `recv_at`: the request's decision, `None` when the store failed (the fail
    /// policy decides). Extra credits are kept only if they have not expired yet, and expire
    /// at `sent_at + expires_in_ms`: never after the store's own expiry. (Model action
    /// `Deliver`.)
    pub fn absorb(&self, key: &str, cost: u64, sent_at: i64, recv_at: i64, reply: Option<Grant>) -> Option<Decision> {
        let mut map = self.entries.lock();
        let entry = map.get_mut(key);
        let evicted = entry.is_none();
        let mut scratch = Entry::default();
        let e = match entry {
            Some(e) => e,
            None => &mut scratch, // evicted while leasing: extras go to `pending` below
        };
        e.leasing = false;
        let g = reply?;
        if g.granted == 0 && cost == 0 {
            // A denied top-up: the credits still held were counted and stay spendable; the
            // next request that finds none asks the store itself.
            return None;
        }
        if g.granted == 0 {
            let denied = Decision {
                allowed: false,
                limit: g.limit,
                remaining: 0,
                reset_at: g.reset_at,
                retry_after_ms: g.retry_after_ms.max(1),
                fallback: false,
            };
            e.denied_until = sent_at.saturating_add(denied.retry_after_ms);
            e.denied_cost = cost.max(1);
            e.denied = denied;
            return Some(denied);
        }
        let extra = g.granted.saturating_sub(cost);
        let expires_at = sent_at.saturating_add(g.expires_in_ms);
        if extra > 0 {
            if recv_at < expires_at {
                if e.credits > 0 && recv_at < e.expires_at {
                    e.expires_at = e.expires_at.min(expires_at);
                } else {
                    e.credits = 0;
                    e.expires_at = expires_at;
                }
                e.credits += extra;
                e.reset_at = g.reset_at;
                e.limit = g.limit;
            } else {
                self.counters.late_credits_dropped.fetch_add(extra, Ordering::Relaxed);
            }
        }
        let remaining = (e.credits as i64).min(g.limit);
        if evicted && e.credits > 0 {
            let held = Held { key: key.to_string(), units: e.credits, reset_at: e.reset_at };
            drop(map);
            self.park(held);
        }
        Some(Decision {
            allowed: true,
            limit: g.limit,
            remaining,
            reset_at: g.reset_at,
            retry_after_ms: 0,
            fallback: false,
        })
    }

    /// Caches a strict denial of `cost` sent at local `sent_at`. (Model action `CacheDenial`.)
    pub fn remember(&self, key: &str, cost: u64, sent_at: i64, d: &Decision) {
        if d.allowed || d.fallback || d.retry_after_ms < 1 {
            return;
        }
        let mut map = self.entries.lock();
        if !map.contains_key(key) {
            self.evict_if_full(&mut map, sent_at);
        }
        let e = map.entry(key.to_string()).or_default();
        e.used_at = sent_at;
        e.denied_until = sent_at.saturating_add(d.retry_after_ms);
        e.denied_cost = cost;
        e.denied = *d;
    }

    /// Takes the live credits of every key idle since `idle_since` (all keys: `i64::MAX`), and
    /// the evicted keys' credits. (Model action `GiveBack`.)
    pub fn take_all(&self, now: i64, idle_since: i64) -> Vec<Held> {
        let mut out = std::mem::take(&mut *self.pending.lock());
        let mut map = self.entries.lock();
        for (k, e) in map.iter_mut() {
            if e.credits > 0 && e.used_at <= idle_since && !e.leasing {
                if now < e.expires_at {
                    out.push(Held { key: k.clone(), units: e.credits, reset_at: e.reset_at });
                }
                e.credits = 0;
            }
        }
        map.retain(|_, e| e.credits > 0 || e.leasing || now < e.denied_until);
        out
    }

    pub(super) fn park(&self, held: Held) {
        let mut pending = self.pending.lock();
        if pending.len() < self.max_keys {
            pending.push(held);
        }
    }

    /// Makes room for one key: drops up to a few spent entries, else one entry with credits
    /// (parked to be given back).
    pub(super) fn evict_if_full(&self, map: &mut super::KeyMap<Entry>, now: i64) {
        if map.len() < self.max_keys {
            return;
        }
        let idle = map
            .iter()
            .take(32)
            .find(|(_, e)| !e.leasing && (e.credits == 0 || now >= e.expires_at) && now >= e.denied_until)
            .map(|(k, _)| k.clone());
        let victim = idle.or_else(|| map.iter().find(|(_, e)| !e.leasing).map(|(k, _)| k.clone()));
        if let Some(k) = victim
            && let Some(e) = map.remove(&k)
            && e.credits > 0
            && now < e.expires_at
        {
            self.park(Held { key: k, units: e.credits, reset_at: e.reset_at });
        }
    }
}

/// The clock reading after a call: never before the time the call was made at.
fn received(l: &Limiter, sent_at: i64) -> i64 {
    l.clock().now_ms().max(sent_at)
}

/// The lease transform for a request of `cost` asking `want` units.
fn lease_transform<'a>(l: &'a Limiter, tier: &Tier, cost: u64, want: u64) -> Transform<'a> {
    tier.counters.leases.fetch_add(1, Ordering::Relaxed);
    Transform::Lease { strategy: l.strategy(), cost, want, lifetime_ms: tier.lifetime_ms }
}

/// A sync check through the tier (the limiter validated `cost` and `now`'s range; the
/// strategy's own bound on `now`, a sliding window's tick, is checked here, before the tier).
pub(crate) fn check_sync(l: &Limiter, tier: &Tier, key: &str, cost: u64, now: i64) -> Result<Decision> {
    l.strategy().check_now(crate::store::Now::At(now))?;
    let full = l.full_key(key);
    match tier.local(&full, cost, now) {
        Local::Answer(d) => Ok(d),
        Local::AnswerThenTopUp(d, want) => {
            let reply = l.store().apply_sync(&full, l.at(now), lease_transform(l, tier, 1, want));
            // A top-up asks for credits only: its `cost` 1 is a credit too.
            tier.absorb(&full, 0, now, received(l, now), reply.and_then(Reply::grant).ok());
            Ok(d)
        }
        Local::Strict => {
            let d = l.strict_sync(key, cost, now)?;
            tier.remember(&full, cost, now, &d);
            Ok(d)
        }
        Local::Lease(want) => {
            let reply = l.store().apply_sync(&full, l.at(now), lease_transform(l, tier, cost, want));
            finish(l, tier, &full, cost, now, received(l, now), reply, now)
        }
    }
}

/// An async check through the tier.
pub(crate) async fn check_async(l: &Limiter, tier: &Tier, key: &str, cost: u64) -> Result<Decision> {
    let full = l.full_key(key);
    let sent_at = l.clock().now_ms();
    l.strategy().check_now(crate::store::Now::At(sent_at))?;
    match tier.local(&full, cost, sent_at) {
        Local::Answer(d) => Ok(d),
        Local::AnswerThenTopUp(d, want) => {
            let reply = l.store().apply(&full, l.now(), lease_transform(l, tier, 1, want)).await;
            tier.absorb(&full, 0, sent_at, received(l, sent_at), reply.and_then(Reply::grant).ok());
            Ok(d)
        }
        Local::Strict => {
            let d = l.strict_async(key, cost).await?;
            tier.remember(&full, cost, sent_at, &d);
            Ok(d)
        }
        Local::Lease(want) => {
            let reply = l.store().apply(&full, l.now(), lease_transform(l, tier, cost, want)).await;
            finish(l, tier, &full, cost, sent_at, received(l, sent_at), reply, sent_at)
        }
    }
}

/// The request's decision from its lease's reply; a failed store goes to the fail policy (whose
/// fail-open admissions carry `fallback: true` and are the only ones outside the bound).
#[allow(clippy::too_many_arguments)]
fn finish(
    l: &Limiter,
    tier: &Tier,
    full: &str,
    cost: u64,
    sent_at: i64,
    recv_at: i64,
    reply: Result<Reply>,
    now: i64,
) -> Result<Decision> {
    match reply.and_then(Reply::grant) {
        Ok(g) => Ok(tier.absorb(full, cost, sent_at, recv_at, Some(g)).unwrap_or_default()),
        Err(e) => {
            tier.absorb(full, cost, sent_at, recv_at, None);
            l.fail_policy().fallback(e, l.strategy().limit(), now)
        }
    }
}

/// Whether the strategy can take credits back (else they age out in the store).
fn can_give_back(l: &Limiter) -> bool {
    grant::can_give_back(l.strategy())
}

/// Gives back the credits of keys idle for `idle_ms` (all keys: `None`); the units taken back.
pub(crate) fn release_sync(l: &Limiter, tier: &Tier, idle_ms: Option<i64>) -> Result<u64> {
    let now = l.clock().now_ms();
    let held = tier.take_all(now, idle_ms.map_or(i64::MAX, |ms| now.saturating_sub(ms)));
    if !can_give_back(l) {
        return Ok(0);
    }
    let mut back = 0;
    for h in held {
        let t = Transform::GiveBack { strategy: l.strategy(), units: h.units, reset_at: h.reset_at };
        back += l.store().apply_sync(&h.key, l.at(now), t).and_then(Reply::grant)?.granted;
    }
    tier.counters.credits_returned.fetch_add(back, Ordering::Relaxed);
    Ok(back)
}

/// Async [`release_sync`].
pub(crate) async fn release(l: &Limiter, tier: &Tier, idle_ms: Option<i64>) -> Result<u64> {
    let now = l.clock().now_ms();
    let held = tier.take_all(now, idle_ms.map_or(i64::MAX, |ms| now.saturating_sub(ms)));
    if !can_give_back(l) {
        return Ok(0);
    }
    let mut back = 0;
    for h in held {
        let t = Transform::GiveBack { strategy: l.strategy(), units: h.units, reset_at: h.reset_at };
        back += l.store().apply(&h.key, l.now(), t).await.and_then(Reply::grant)?.granted;
    }
    tier.counters.credits_returned.fetch_add(back, Ordering::Relaxed);
    Ok(back)
}
