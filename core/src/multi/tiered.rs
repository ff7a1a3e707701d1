//! A [`MultiLimiter`] in a two-tier mode: the calls between its tier (`crate::lease::multi`)
//! and its store — the fused lease of the dimensions short of credits, the strict path, the
//! fail policy, and the give-back of unspent credits.

use crate::error::{Error, Result};
use crate::lease::Mode;
use crate::lease::multi::{MultiLocal, MultiTier, Reserved};
use crate::multi::{MultiDecision, MultiLimiter};
use crate::store::{DimensionCall, DimensionLease, MultiGrant, MultiReply, Now};

/// A lease in flight: the request and what the tier reserved for it.
struct Leased<'a> {
    full: &'a [String],
    cost: u64,
    costs: &'a [u64],
    lacking: &'a [usize],
    reserved: &'a [Reserved],
}

impl MultiLimiter {
    /// Gives back the leased credits of dimension keys unused for `idle_ms` (every key:
    /// `None`) where the dimension's strategy can take them back; the units taken back.
    pub async fn release_leases(&self, idle_ms: Option<i64>) -> Result<u64> {
        let Some(tier) = &self.tier else { return Ok(0) };
        let mut back = 0;
        for (i, held) in self.held(tier, idle_ms) {
            let strategy = &self.dimensions[i].strategy;
            for h in held {
                let t = crate::store::Transform::GiveBack { strategy, units: h.units, reset_at: h.reset_at };
                back +=
                    self.store.apply(&h.key, Now::At(self.clock.now_ms()), t).await.and_then(|r| r.grant())?.granted;
            }
        }
        tier.count_returned(back);
        Ok(back)
    }

    /// [`MultiLimiter::release_leases`] on the sync path.
    pub fn release_leases_sync(&self, idle_ms: Option<i64>) -> Result<u64> {
        let Some(tier) = &self.tier else { return Ok(0) };
        let mut back = 0;
        for (i, held) in self.held(tier, idle_ms) {
            let strategy = &self.dimensions[i].strategy;
            for h in held {
                let t = crate::store::Transform::GiveBack { strategy, units: h.units, reset_at: h.reset_at };
                back += self.store.apply_sync(&h.key, Now::At(self.clock.now_ms()), t).and_then(|r| r.grant())?.granted;
            }
        }
        tier.count_returned(back);
        Ok(back)
    }

    /// Gives back unspent leased credits (best effort: a store that cannot be reached keeps
    /// them until they expire), then closes the store's connections.
    pub async fn close(&self) -> Result<()> {
        let _ = self.release_leases(None).await;
        self.store.close().await
    }

    /// Per dimension that can take credits back, the credits taken out of the tier.
    fn held(&self, tier: &MultiTier, idle_ms: Option<i64>) -> Vec<(usize, Vec<crate::lease::tier::Held>)> {
        let now = self.clock.now_ms();
        let idle_since = idle_ms.map_or(i64::MAX, |ms| now.saturating_sub(ms));
        (0..self.dimensions.len())
            .map(|i| (i, tier.take_all(i, now, idle_since)))
            .filter(|(i, _)| MultiTier::can_give_back(&self.dimensions[*i].strategy))
            .collect()
    }

    /// The lease call's halves: the dimensions short of credits and what to ask of each.
    fn lease_calls<'a>(
        &self,
        tier: &MultiTier,
        calls: &[DimensionCall<'a>],
        lacking: &[usize],
    ) -> (Vec<DimensionCall<'a>>, Vec<DimensionLease>) {
        let batch = match tier.mode() {
            Mode::Leased(o) => o.batch,
            _ => 1,
        };
        tier.count_lease();
        lacking
            .iter()
            .map(|&i| (calls[i], DimensionLease { want: batch.max(calls[i].cost), lifetime_ms: tier.lifetime_ms(i) }))
            .unzip()
    }

    /// A check through the tier on the sync path.
    pub(super) fn tiered_sync(
        &self,
        tier: &MultiTier,
        full: &[String],
        calls: &[DimensionCall<'_>],
        cost: u64,
        now: i64,
    ) -> Result<MultiDecision> {
        let costs: Vec<u64> = calls.iter().map(|c| c.cost).collect();
        match tier.local(full, cost, &costs, now) {
            MultiLocal::Answer(allowed, decisions) => Ok(self.finish_reply(MultiReply { decisions, allowed })),
            MultiLocal::Strict => {
                let timer = self.timer();
                let reply = self.store.apply_multi_sync(self.rule, calls, self.at(now));
                timer.stop();
                self.finish_strict(tier, full, cost, now, now, reply)
            }
            MultiLocal::Lease { lacking, reserved } => {
                let (sub, leases) = self.lease_calls(tier, calls, &lacking);
                let timer = self.timer();
                let reply = self.store.apply_multi_lease_sync(self.rule, &sub, &leases, self.at(now));
                timer.stop();
                let recv_at = self.clock.now_ms().max(now);
                let lease = Leased { full, cost, costs: &costs, lacking: &lacking, reserved: &reserved };
                self.finish_lease(tier, lease, now, recv_at, reply)
            }
        }
    }

    /// A check through the tier on the async path.
    pub(super) async fn tiered_async(
        &self,
        tier: &MultiTier,
        full: &[String],
        calls: &[DimensionCall<'_>],
        cost: u64,
        now: Now,
    ) -> Result<MultiDecision> {
        let sent_at = now.fallback_ms(&*self.clock);
        let costs: Vec<u64> = calls.iter().map(|c| c.cost).collect();
        match tier.local(full, cost, &costs, sent_at) {
            MultiLocal::Answer(allowed, decisions) => Ok(self.finish_reply(MultiReply { decisions, allowed })),
            MultiLocal::Strict => {
                let timer = self.timer();
                let reply = self.store.apply_multi(self.rule, calls, now).await;
                timer.stop();
                self.finish_strict(tier, full, cost, sent_at, sent_at, reply)
            }
            MultiLocal::Lease { lacking, reserved } => {
                let (sub, leases) = self.lease_calls(tier, calls, &lacking);
                let timer = self.timer();
                let reply = self.store.apply_multi_lease(self.rule, &sub, &leases, now).await;
                timer.stop();
                let recv_at = self.clock.now_ms().max(sent_at);
                let lease = Leased { full, cost, costs: &costs, lacking: &lacking, reserved: &reserved };
                self.finish_lease(tier, lease, sent_at, recv_at, reply)
            }
        }
    }

    fn finish_strict(
        &self,
        tier: &MultiTier,
        full: &[String],
        cost: u64,
        sent_at: i64,
        now: i64,
        reply: Result<MultiReply>,
    ) -> Result<MultiDecision> {
        match reply {
            Ok(r) => {
                if !r.allowed {
                    tier.remember(full, cost, sent_at, &r.decisions);
                }
                Ok(self.finish_reply(r))
            }
            Err(e) => self.fallback(e, now),
        }
    }

    /// The request's decision from its lease's reply; a failed store goes to the fail policy
    /// (the reserved credits are put back first).
    fn finish_lease(
        &self,
        tier: &MultiTier,
        l: Leased<'_>,
        sent_at: i64,
        recv_at: i64,
        reply: Result<MultiGrant>,
    ) -> Result<MultiDecision> {
        let (reply, err) = match reply {
            Ok(g) => (Some(g), None),
            Err(e) => (None, Some(e)),
        };
        match tier.absorb(l.full, l.cost, l.costs, l.lacking, l.reserved, sent_at, recv_at, reply) {
            Some((allowed, decisions)) => Ok(self.finish_reply(MultiReply { decisions, allowed })),
            None => self.fallback(err.unwrap_or_else(|| Error::store("no reply")), sent_at),
        }
    }
}
